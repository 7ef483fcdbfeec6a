// Which triggers `rlpipe functions deploy` gives each function, what its agency / role must be granted, and how a
// function's deployed triggers become the wanted ones: pure (no network I/O; the adapters shape the platform's
// bodies, bin/ runs the plan). Wanted: an HTTP trigger for the functions callers reach over HTTPS (reward, runs;
// console when RLPIPE_CONSOLE_TOKEN opens it to HTTP), and for the console an object-storage trigger on the
// recipe-upload bucket/prefix named by RLPIPE_CONSOLE_RECIPE_PREFIX (obs://… on FunctionGraph, cos://… on SCF).
import { z } from "zod";
import { RlpipeError } from "../errors.js";
import type { FunctionName } from "./targets.js";

export const WantedTrigger = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("http"), function: z.enum(["reward", "runs", "console"]), path: z.string() }).readonly(),
  z.object({ kind: z.literal("upload"), function: z.literal("console"), bucket: z.string(), prefix: z.string() }).readonly(),
]);
export type WantedTrigger = z.infer<typeof WantedTrigger>;

type Env = Readonly<Record<string, string | undefined>>;

const usage = (code: string, message: string, hint: string) => new RlpipeError(code, message, { exitCode: 2, hint });

/** `scheme://bucket/prefix` → bucket and prefix (no leading slash); undefined for a bare key prefix. */
export function bucketPrefix(uri: string): { readonly scheme: string; readonly bucket: string; readonly prefix: string } | undefined {
  const m = /^([a-z0-9]+):\/\/([^/]+)\/?(.*)$/.exec(uri.trim());
  if (m === null) return undefined;
  return { scheme: m[1]!, bucket: m[2]!, prefix: m[3]! };
}

/**
 * The triggers each deployed function should have. The upload trigger needs the bucket, so a recipe prefix given
 * as a bare key prefix gives none (a warning says so); a prefix in the other cloud's scheme is a configuration error.
 */
export function wantedTriggers(platform: "functiongraph" | "scf", functions: readonly FunctionName[], env: Env): { readonly triggers: readonly WantedTrigger[]; readonly warnings: readonly string[] } {
  const triggers: WantedTrigger[] = [];
  const warnings: string[] = [];
  const path = env["RLPIPE_BASE_PATH"]?.trim() || "/";
  for (const fn of functions) {
    if (fn !== "console" || (env["RLPIPE_CONSOLE_TOKEN"] ?? "") !== "") triggers.push({ kind: "http", function: fn, path });
    if (fn !== "console") continue;
    const raw = env["RLPIPE_CONSOLE_RECIPE_PREFIX"]?.trim();
    if (raw === undefined || raw === "") continue;
    const scheme = platform === "functiongraph" ? "obs" : "cos";
    const at = bucketPrefix(raw);
    if (at === undefined) {
      warnings.push(`rlpipe functions deploy: warning: no upload trigger for console: RLPIPE_CONSOLE_RECIPE_PREFIX=${raw} names no bucket (write it as ${scheme}://bucket/${raw.replace(/^\/+/, "")})`);
      continue;
    }
    if (at.scheme !== scheme) {
      throw usage("recipe_prefix_wrong_store", `RLPIPE_CONSOLE_RECIPE_PREFIX=${raw} is not in ${platform === "functiongraph" ? "OBS" : "COS"}: a ${platform} upload trigger watches ${scheme}:// buckets only`,
        `set RLPIPE_CONSOLE_RECIPE_PREFIX=${scheme}://<bucket>/<prefix>`);
    }
    triggers.push({ kind: "upload", function: "console", bucket: at.bucket, prefix: at.prefix });
  }
  return { triggers, warnings };
}

/** What the functions' agency (FunctionGraph) or execution role (SCF) needs, one line each, for a hint. */
export function grantsNeeded(platform: "functiongraph" | "scf", functions: readonly FunctionName[], env: Env): string[] {
  const store = platform === "functiongraph" ? "OBS" : "COS";
  const lines: string[] = [];
  const rw = (what: string, v: string | undefined) => { if (v !== undefined && v !== "") lines.push(`${store} read and write on ${v} (${what})`); };
  for (const fn of functions) {
    if (fn === "runs") rw("runs: checkpoint and metrics uploads", env["RLPIPE_RUNS_STORE"]);
    if (fn === "reward") rw("reward: usage records", env["RLPIPE_USAGE_STORE"]);
    if (fn !== "console") continue;
    const uploads = env["RLPIPE_CONSOLE_RECIPE_PREFIX"];
    if (uploads !== undefined && uploads !== "") lines.push(`${store} read on ${uploads} (console: recipe uploads)`);
    rw("console: run records", env["RLPIPE_STATE_STORE"]);
    lines.push(platform === "functiongraph"
      ? "ModelArts training-job create/read/stop (console deploys, unless HUAWEICLOUD_SDK_AK/SK are in its environment)"
      : "TI-ONE training-task create/read/stop (console deploys, unless TENCENTCLOUD_SECRET_ID/KEY are in its environment)");
  }
  return [...new Set(lines)];
}

/** A trigger as the platform wants it: `type` its type code, `key` what names it among the function's triggers. */
export interface TriggerSpec {
  readonly type: string;
  readonly key: string;
  /** The fields rlpipe sets; a deployed trigger with these values (and perhaps more fields) is the same trigger. */
  readonly config: Readonly<Record<string, unknown>>;
  /** For messages: "APIG ANY /rlpipe", "cos rlpipe-1250000000 recipes/". */
  readonly label: string;
}

export interface DeployedTrigger {
  readonly id: string;
  /** The type as rlpipe plans with it (the platform's listing may spell a type of rlpipe's another way: typeCode). */
  readonly type: string;
  /** The platform's own type code, where it differs from `type` (a delete names it). */
  readonly typeCode?: string;
  readonly key: string | undefined;
  readonly config: Readonly<Record<string, unknown>>;
}

export type TriggerAction =
  | { readonly kind: "unchanged"; readonly spec: TriggerSpec; readonly deployed: DeployedTrigger }
  | { readonly kind: "create"; readonly spec: TriggerSpec; readonly difference: string }
  | { readonly kind: "update"; readonly spec: TriggerSpec; readonly deployed: DeployedTrigger; readonly difference: string }
  | { readonly kind: "delete"; readonly spec: TriggerSpec; readonly deployed: DeployedTrigger; readonly difference: string };

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => v !== null && typeof v === "object" && !Array.isArray(v);

const canonical = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (isRecord(x)
  ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));

const shown = (v: unknown): string => (v === undefined ? "nothing" : canonical(v).slice(0, 120));

/**
 * Where a listed trigger's configuration differs from what rlpipe set, as "func_info.timeout: set 60000, listed
 * 30000"; undefined when it holds everything rlpipe set. Compared as the services list it: an object may hold more
 * fields than were set (ids, URLs, the function's URN), an array may come back in another order, a number may come
 * back as its decimal text. Nothing else is loosened: a changed path, bucket or event is a difference.
 */
export function configDifference(want: unknown, have: unknown, at = ""): string | undefined {
  const here = (what: string) => `${at === "" ? "(the configuration)" : at}: ${what}`;
  if (isRecord(want)) {
    if (!isRecord(have)) return here(`set an object, listed ${shown(have)}`);
    for (const k of Object.keys(want).sort()) {
      const d = configDifference(want[k], have[k], at === "" ? k : `${at}.${k}`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(have)) return here(`set ${shown(want)}, listed ${shown(have)}`);
    // As a multiset: each item set must be matched by its own listed item, in any order.
    const left = [...have];
    for (const w of want) {
      const i = left.findIndex((h) => configDifference(w, h) === undefined);
      if (i < 0) return here(`set ${shown(want)}, listed ${shown(have)}`);
      left.splice(i, 1);
    }
    return left.length === 0 ? undefined : here(`set ${shown(want)}, listed ${shown(have)}`);
  }
  if (typeof want === "number" && typeof have === "string" && have.trim() !== "" && Number(have) === want) return undefined;
  return want === have ? undefined : here(`set ${shown(want)}, listed ${shown(have)}`);
}

/** True when every field rlpipe sets has the same value in the deployed trigger (the platform may add fields). */
export function sameConfig(want: Readonly<Record<string, unknown>>, have: Readonly<Record<string, unknown>>): boolean {
  return configDifference(want, have) === undefined;
}

/**
 * The calls that make a function's triggers the wanted ones: a trigger with the same type and key and config is
 * kept, one that differs is updated (or, where the platform cannot update that type, deleted then created again),
 * and duplicates of a wanted trigger are deleted, so exactly one remains. Triggers rlpipe does not want (another key
 * or type) are left alone: they are someone else's. Each change says why (`difference`), for the error a deploy that
 * does not settle ends with.
 */
export function planTriggers(specs: readonly TriggerSpec[], deployed: readonly DeployedTrigger[], canUpdate: (type: string) => boolean): TriggerAction[] {
  const actions: TriggerAction[] = [];
  for (const spec of specs) {
    const mine = deployed.filter((d) => d.type === spec.type && d.key === spec.key);
    const same = mine.find((d) => sameConfig(spec.config, d.config));
    if (same !== undefined) {
      actions.push({ kind: "unchanged", spec, deployed: same });
      for (const d of mine) if (d !== same) actions.push({ kind: "delete", spec, deployed: d, difference: `a second ${spec.type} trigger ${d.id} for the same ${spec.key}` });
      continue;
    }
    const [first, ...rest] = mine;
    const difference = first === undefined ? "not listed" : configDifference(spec.config, first.config) ?? "differs";
    if (first !== undefined && canUpdate(spec.type)) {
      actions.push({ kind: "update", spec, deployed: first, difference });
      for (const d of rest) actions.push({ kind: "delete", spec, deployed: d, difference: `a second ${spec.type} trigger ${d.id} for the same ${spec.key}` });
      continue;
    }
    // Deletes first: the platform refuses a second trigger on the same route or bucket.
    for (const d of mine) actions.push({ kind: "delete", spec, deployed: d, difference });
    actions.push({ kind: "create", spec, difference });
  }
  return actions;
}
