// The cache of live price answers (Huawei BSS, TI-ONE billing): one JSON file, every entry with the time it was
// fetched, reused while younger than its maximum age so `rlpipe cost --online` does not ask the price APIs on every
// run (the BSS price API allows 10 requests/s, and prices change rarely). Entries are keyed by the API, the account
// (a hash of the access key: an account's discounts change its prices), the region and the item, never by a secret.
//   file:    RLPIPE_PRICES_CACHE, else $XDG_CACHE_HOME/rlpipe/prices-cache.json, else ~/.cache/rlpipe/prices-cache.json
//   max age: RLPIPE_PRICES_MAX_AGE_HOURS (default 24; 0 = always ask)
// A damaged or foreign file is ignored (and replaced on the next write): a cache is never a reason to fail.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import { RlpipeError } from "../../core/errors.js";
import type { Rate } from "../../core/cost/types.js";

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_MAX_AGE_HOURS = 24;

const RateSchema = z.object({
  value: z.number(), currency: z.enum(["CNY", "USD"]), unit: z.string(), region: z.string().optional(), source: z.string(),
  dateRead: z.string(), confidence: z.enum(["user", "live", "official", "third-party", "doc-example", "anchor"]), id: z.string(),
});
const Entry = z.object({ fetchedAt: z.string(), rates: z.array(RateSchema) });
const CacheFile = z.object({ schema: z.literal("rlpipe.prices-cache"), version: z.literal(1), entries: z.record(z.string(), Entry) });
type CacheFile = z.infer<typeof CacheFile>;

export interface CachedRates {
  readonly rates: readonly Rate[];
  readonly fetchedAt: string;
}

export function pricesCachePath(env: Env): string {
  const own = env["RLPIPE_PRICES_CACHE"]?.trim();
  if (own) return own;
  const xdg = env["XDG_CACHE_HOME"]?.trim();
  return join(xdg || join(env["HOME"]?.trim() || homedir(), ".cache"), "rlpipe", "prices-cache.json");
}

export function maxAgeHours(env: Env): number {
  const raw = env["RLPIPE_PRICES_MAX_AGE_HOURS"]?.trim();
  if (raw === undefined || raw === "") return DEFAULT_MAX_AGE_HOURS;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new RlpipeError("config_invalid", `RLPIPE_PRICES_MAX_AGE_HOURS must be a number of hours ≥ 0, got ${JSON.stringify(raw)}`, { exitCode: 2 });
  return n;
}

/** A stable, non-reversible name for an account in cache keys (the key id, hashed: a key id is not a secret, but
 *  it is not printed either). */
export function accountTag(keyId: string): string {
  return createHash("sha256").update(`rlpipe-prices:${keyId}`).digest("hex").slice(0, 16);
}

export class PriceCache {
  private data: CacheFile | undefined;
  constructor(readonly path: string, readonly maxAgeMs: number, private readonly now: () => Date = () => new Date()) {}

  static fromEnv(env: Env, now?: () => Date): PriceCache {
    return new PriceCache(pricesCachePath(env), maxAgeHours(env) * 3_600_000, now);
  }

  private async load(): Promise<CacheFile> {
    if (this.data !== undefined) return this.data;
    let parsed: CacheFile | undefined;
    try {
      const r = CacheFile.safeParse(JSON.parse(await readFile(this.path, "utf8")));
      if (r.success) parsed = r.data;
    } catch { /* absent or unreadable: start empty */ }
    this.data = parsed ?? { schema: "rlpipe.prices-cache", version: 1, entries: {} };
    return this.data;
  }

  /** The entry under `key` when it is younger than the maximum age (a clock gone backwards counts as stale). */
  async get(key: string): Promise<CachedRates | undefined> {
    const e = (await this.load()).entries[key];
    if (e === undefined) return undefined;
    const age = this.now().getTime() - Date.parse(e.fetchedAt);
    if (!Number.isFinite(age) || age < 0 || age >= this.maxAgeMs) return undefined;
    return { rates: e.rates, fetchedAt: e.fetchedAt };
  }

  /** Remember `rates` under `key`, fetched now; written atomically (temp file, rename). */
  async put(key: string, rates: readonly Rate[]): Promise<void> {
    const data = await this.load();
    data.entries[key] = { fetchedAt: this.now().toISOString(), rates: rates.map((r) => ({ ...r })) };
    const sorted: CacheFile = { ...data, entries: Object.fromEntries(Object.entries(data.entries).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
    try {
      await writeFile(tmp, `${JSON.stringify(sorted, null, 2)}\n`, { mode: 0o600 });
      await rename(tmp, this.path);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }
}
