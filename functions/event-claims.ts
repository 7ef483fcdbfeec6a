// Exactly one deploy per uploaded object version, although platforms deliver storage notifications at least once
// (S3, OBS and COS all may repeat an event, and retry a failed invocation). Before deploying, the delivery creates
// a marker for (bucket, key, version) in the state store with a conditional create (S3 If-None-Match: *, COS
// x-cos-forbid-overwrite, an exclusive link for file://; OBS has no conditional PUT: a HEAD then a PUT). The marker
// ends as "deployed" with the run, or "failed" with an error that repeating cannot fix; a repeated delivery then
// answers from it without calling the provider. A delivery that finds a marker still "claimed" waits for it
// (another delivery is deploying right now) and takes over when the claim is older than the wait (that delivery
// died). The second guard is deploy() itself: the job name is a hash of the request, so two deliveries that both
// reach the provider find one job, never make two.
import { createHash, randomUUID } from "node:crypto";
import { z } from "zod";
import { ExitCode } from "../core/errors.js";
import { sleep as defaultSleep } from "../core/util/retry.js";
import type { ObjectStore } from "../adapters/storage/store.js";
import type { ObjectCreated } from "./console-events.js";

export const RunSummary = z.object({ name: z.string(), provider: z.string(), id: z.string(), outcome: z.enum(["created", "existing", "recovered"]) });
export type RunSummary = z.infer<typeof RunSummary>;

const FailureDoc = z.object({ code: z.string(), message: z.string(), exitCode: z.number() }).loose();

export const Marker = z.object({
  source: z.string(),
  version: z.string(),
  state: z.enum(["claimed", "deployed", "failed"]),
  /** Which delivery wrote it. */
  claim: z.string(),
  /** ISO 8601: when the claim was made (a claim older than the wait is taken over). */
  at: z.string(),
  run: RunSummary.optional(),
  error: FailureDoc.optional(),
});
export type Marker = z.infer<typeof Marker>;

export type ClaimStore = Pick<ObjectStore, "url" | "get" | "putBytes" | "putBytesIfAbsent" | "delete" | "conditionalCreate">;

export interface ClaimOptions {
  readonly store: ClaimStore;
  /** How long a delivery waits for another one's claim before taking it over (default 60 s). */
  readonly waitMs?: number;
  readonly pollMs?: number;
  readonly now?: () => Date;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly log?: (line: string) => void;
}

/** What happened to this delivery: the first to claim, a repeat answered from the marker, or a take-over. */
export type Delivery = "first" | "repeat" | "takeover";

export type ClaimedResult =
  | { readonly delivery: Delivery; readonly run: RunSummary; readonly marker: string }
  | { readonly delivery: "repeat"; readonly failed: z.infer<typeof FailureDoc>; readonly marker: string };

/** The marker's key: events/<sha256 of scheme://bucket/key and version>.json. */
export function markerKey(o: Pick<ObjectCreated, "scheme" | "bucket" | "key" | "version">): string {
  return `events/${createHash("sha256").update(`${o.scheme}://${o.bucket}/${o.key}\n${o.version}`).digest("hex")}.json`;
}

/** An error carrying the document to keep in the marker when repeating cannot help (exit 2: a bad recipe). */
export interface Failure { readonly exitCode: number; readonly code: string; readonly message: string }

/**
 * Run `deploy` at most once per object version (see the module comment). `describe` turns a failure into its
 * document; failures with exit code 2 are kept (a repeat answers them), others remove the claim so a retried
 * delivery tries again, and are rethrown.
 */
export async function oncePerVersion(o: ObjectCreated, opts: ClaimOptions, deploy: () => Promise<RunSummary>, describe: (e: unknown) => Failure): Promise<ClaimedResult> {
  const { store } = opts;
  const now = opts.now ?? (() => new Date());
  const wait = opts.sleep ?? ((ms: number) => defaultSleep(ms));
  const waitMs = opts.waitMs ?? 60_000;
  const pollMs = opts.pollMs ?? 1000;
  const key = markerKey(o);
  const source = `${o.scheme}://${o.bucket}/${o.key}`;
  const claim = randomUUID();
  const write = (m: Marker) => store.putBytes(key, `${JSON.stringify(m)}\n`, { contentType: "application/json" });
  const read = async (): Promise<Marker | undefined> => {
    let raw: Buffer;
    try { raw = await store.get(key); } catch (e) { if ((e as { code?: unknown }).code === "not_found") return undefined; throw e; }
    const parsed = Marker.safeParse((() => { try { return JSON.parse(raw.toString("utf8")) as unknown; } catch { return undefined; } })());
    // A marker this rlpipe cannot read is treated as a claim nobody finishes: it is taken over after the wait.
    return parsed.success ? parsed.data : { source, version: o.version, state: "claimed", claim: "unreadable", at: new Date(0).toISOString() };
  };
  const mine: Marker = { source, version: o.version, state: "claimed", claim, at: now().toISOString() };

  let delivery: Delivery = "first";
  if (await store.putBytesIfAbsent(key, `${JSON.stringify(mine)}\n`, { contentType: "application/json" }) === "exists") {
    const deadline = now().getTime() + waitMs;
    for (;;) {
      const m = await read();
      if (m === undefined) {
        // Removed after a failure that a retry may fix: claim it afresh.
        if (await store.putBytesIfAbsent(key, `${JSON.stringify(mine)}\n`, { contentType: "application/json" }) === "created") break;
        continue;
      }
      if (m.claim === claim) break; // our own create, whose reply was lost and retried
      if (m.state === "deployed" && m.run !== undefined) return { delivery: "repeat", run: m.run, marker: `${store.url}/${key}` };
      if (m.state === "failed" && m.error !== undefined) return { delivery: "repeat", failed: m.error, marker: `${store.url}/${key}` };
      const age = now().getTime() - Date.parse(m.at);
      if (age >= waitMs || now().getTime() >= deadline) {
        opts.log?.(`${source} (version ${o.version}): the delivery that claimed it at ${m.at} has not finished; taking over (deploy finds the job it may have made)`);
        delivery = "takeover";
        await write(mine);
        break;
      }
      await wait(pollMs);
    }
  }

  let run: RunSummary;
  try {
    run = await deploy();
  } catch (e) {
    const d = describe(e);
    if (d.exitCode === ExitCode.invalidInput) {
      await write({ ...mine, state: "failed", error: { code: d.code, message: d.message, exitCode: d.exitCode } });
    } else {
      // The world failed (store, provider): let the platform's retry of this delivery start over.
      await store.delete([key]).catch(() => undefined);
    }
    throw e;
  }
  await write({ ...mine, state: "deployed", run });
  return { delivery, run, marker: `${store.url}/${key}` };
}
