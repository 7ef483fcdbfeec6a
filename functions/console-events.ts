// What the console function accepts: a console JSON test event (deploy, status, score, cost) or an object-storage
// notification (Amazon S3 on Lambda, directly or through EventBridge; Huawei OBS on FunctionGraph; Tencent COS on
// SCF) of a recipe uploaded under the configured prefix. Validated with zod; anything else is a bad_event naming the field and what was expected.
import { z } from "zod";
import { ExitCode, RlpipeError } from "../core/errors.js";
import { PROVIDERS } from "../core/recipe/schema.js";
import { didYouMean } from "../core/recipe/suggest.js";

/** Where an inline recipe is said to be in error messages (file:line:col of its text). */
export const INLINE_RECIPE_FILE = "<event>.recipe";
/** A score batch by hand stays small: it checks the sandbox wiring, it is no training step. */
export const MAX_SCORE_SAMPLES = 64;
export const ACTIONS = ["deploy", "status", "score", "cost", "report"] as const;

const STORE_URI = /^(s3|obs|cos):\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\/.+$/;
const RecipeUri = z.string().regex(STORE_URI, { error: "expected s3://bucket/key, obs://bucket/key or cos://bucket-appid/key of a recipe object" });
const Provider = z.enum(PROVIDERS, { error: `expected one of ${PROVIDERS.join(", ")}` });
/** A recipe in the event: YAML text (line numbers count from its first line) or the recipe as a JSON object. */
const InlineRecipe = z.union([z.string().min(1), z.record(z.string(), z.unknown())], { error: "expected the recipe as YAML text or as an object" });

const RecipeSource = {
  recipe: InlineRecipe.optional(),
  recipeUri: RecipeUri.optional(),
};

const oneRecipe = (e: { recipe?: unknown; recipeUri?: unknown }, ctx: z.RefinementCtx) => {
  if ((e.recipe === undefined) === (e.recipeUri === undefined)) {
    ctx.addIssue({ code: "custom", path: e.recipe === undefined ? ["recipe"] : ["recipeUri"], message: e.recipe === undefined ? "give the recipe: \"recipe\" (YAML text or an object) or \"recipeUri\" (s3://, obs://, cos://)" : "give \"recipe\" or \"recipeUri\", not both" });
  }
};

export const DeployEvent = z.strictObject({
  action: z.literal("deploy"),
  ...RecipeSource,
  provider: Provider,
  dryRun: z.boolean().default(false),
  /** Start the next run of a recipe whose latest run exists (CLI --new): every delivery of such an event is a new run. */
  new: z.boolean().default(false),
  /** Create the job even though the cost estimate's expected total is above the recipe's cost.budget cap (CLI --force). */
  force: z.boolean().default(false),
}).superRefine(oneRecipe);

export const StatusEvent = z.strictObject({
  action: z.literal("status"),
  run: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { error: "expected a run name (<recipe>-<8 hex digits>, as deploy answered)" }),
});

/** The run's page as its job's sidecar keeps it in the run's store, or a presigned GET URL of it (`url: true`). */
export const ReportEvent = z.strictObject({
  action: z.literal("report"),
  run: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { error: "expected a run name (<recipe>-<8 hex digits>, as deploy answered)" }),
  url: z.boolean().default(false),
  expiresS: z.number().int().min(1).max(7 * 24 * 3600, { error: "at most 604800 s (7 days, the SigV4 limit)" }).default(3600),
});

export const ScoreEvent = z.strictObject({
  action: z.literal("score"),
  samples: z.array(z.unknown()).min(1, { error: "give at least one sample" }).max(MAX_SCORE_SAMPLES, { error: `at most ${MAX_SCORE_SAMPLES} samples by hand (a training job sends its batches to the reward function)` }),
  config: z.record(z.string(), z.unknown()).optional(),
});

export const CostEvent = z.strictObject({
  action: z.literal("cost"),
  ...RecipeSource,
  provider: Provider.optional(),
}).superRefine(oneRecipe);

export type DeployEvent = z.infer<typeof DeployEvent>;
export type StatusEvent = z.infer<typeof StatusEvent>;
export type ScoreEvent = z.infer<typeof ScoreEvent>;
export type CostEvent = z.infer<typeof CostEvent>;
export type ReportEvent = z.infer<typeof ReportEvent>;
export type ConsoleEvent = DeployEvent | StatusEvent | ScoreEvent | CostEvent | ReportEvent;

// ------------------------------------------------------------------------------------------ object notifications

/** One object-created notification, whatever platform sent it. */
export interface ObjectCreated {
  readonly scheme: "s3" | "obs" | "cos";
  /** The bucket as a store URI names it (COS: <name>-<appid>). */
  readonly bucket: string;
  /** The object key, decoded. */
  readonly key: string;
  /** What tells this upload from another of the same key: version id, else sequencer / request id, else ETag. */
  readonly version: string;
  readonly eventName: string;
  readonly created: boolean;
}

const S3Object = z.looseObject({
  key: z.string().min(1),
  versionId: z.string().nullable().optional(),
  eTag: z.string().optional(),
  sequencer: z.string().optional(),
});
const S3Entity = z.looseObject({ bucket: z.looseObject({ name: z.string().min(1) }), object: S3Object });
/** Amazon S3 (Lambda) and Huawei OBS (FunctionGraph: under "s3", or "obs" in newer events). */
const S3Record = z.looseObject({ eventName: z.string(), eventSource: z.string().optional(), s3: S3Entity });
const ObsRecord = z.looseObject({ eventName: z.string(), eventSource: z.string().optional(), obs: S3Entity });
/** Tencent COS (SCF): key is /<appid>/<bucket name>/<object key>. */
const CosRecord = z.looseObject({
  cos: z.looseObject({
    cosBucket: z.looseObject({ name: z.string().min(1), appid: z.union([z.string(), z.number()]).transform(String) }),
    cosObject: z.looseObject({
      key: z.string().min(1),
      url: z.string().optional(),
      vid: z.string().optional(),
      meta: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
  event: z.looseObject({ eventName: z.string(), reqid: z.union([z.string(), z.number()]).optional() }),
});

/** Whether `event` looks like a storage notification (has Records), before checking each record. */
export function isNotification(event: unknown): event is { Records: unknown[] } {
  return typeof event === "object" && event !== null && Array.isArray((event as { Records?: unknown }).Records);
}

/** Amazon S3 through EventBridge ("Object Created"): the key is not encoded there. */
const EventBridgeS3 = z.looseObject({
  source: z.literal("aws.s3"),
  "detail-type": z.string(),
  detail: z.looseObject({
    bucket: z.looseObject({ name: z.string().min(1) }),
    object: z.looseObject({ key: z.string().min(1), "version-id": z.string().optional(), sequencer: z.string().optional(), etag: z.string().optional() }),
    reason: z.string().optional(),
  }),
});

/** Whether `event` is an S3 event delivered by EventBridge (source aws.s3). */
export function isEventBridgeS3(event: unknown): boolean {
  return typeof event === "object" && event !== null && (event as { source?: unknown }).source === "aws.s3" && "detail" in event;
}

/** An EventBridge S3 event as the one object it is about, or a bad_event. */
export function parseEventBridgeS3(event: unknown): ObjectCreated[] {
  const e = EventBridgeS3.safeParse(event);
  if (!e.success) throw badEvent("detail", "an aws.s3 EventBridge event without detail.bucket.name and detail.object.key");
  const { bucket, object, reason } = e.data.detail;
  return [{
    scheme: "s3", bucket: bucket.name, key: object.key,
    version: firstOf(object["version-id"], object.sequencer, object.etag) ?? "unversioned",
    eventName: `${e.data["detail-type"]}${reason === undefined ? "" : ` (${reason})`}`, created: e.data["detail-type"] === "Object Created",
  }];
}

/** S3 and OBS encode keys as in a form (space → '+', others %XX). */
function formDecode(key: string): string {
  try { return decodeURIComponent(key.replace(/\+/g, " ")); } catch { return key; }
}

function firstOf(...values: (string | null | undefined)[]): string | undefined {
  return values.find((v): v is string => typeof v === "string" && v !== "" && v !== "null");
}

/** Every record of a notification, or a bad_event naming the record that fits no known shape. */
export function parseNotification(event: { Records: unknown[] }): ObjectCreated[] {
  if (event.Records.length === 0) throw badEvent("Records", "the notification holds no records");
  return event.Records.map((raw, i) => {
    const s3 = S3Record.safeParse(raw);
    const obs = s3.success ? undefined : ObsRecord.safeParse(raw);
    const entity = s3.success ? s3.data.s3 : obs?.success === true ? obs.data.obs : undefined;
    if (entity !== undefined) {
      const rec = (s3.success ? s3.data : obs!.data!) as { eventName: string; eventSource?: string };
      const o = entity.object;
      return {
        scheme: obs?.success === true || /obs/i.test(rec.eventSource ?? "") ? "obs" : "s3",
        bucket: entity.bucket.name, key: formDecode(o.key),
        version: firstOf(o.versionId, o.sequencer, o.eTag) ?? "unversioned",
        eventName: rec.eventName, created: /^(s3:)?ObjectCreated:/.test(rec.eventName),
      } satisfies ObjectCreated;
    }
    const cos = CosRecord.safeParse(raw);
    if (cos.success) {
      const { cosBucket, cosObject } = cos.data.cos;
      const appid = cosBucket.appid;
      const prefix = `/${appid}/${cosBucket.name}/`;
      const rawKey = cosObject.key.startsWith(prefix) ? cosObject.key.slice(prefix.length) : cosObject.key.replace(/^\/+/, "");
      const meta = cosObject.meta ?? {};
      const str = (v: unknown) => (typeof v === "string" ? v : undefined);
      return {
        scheme: "cos", bucket: `${cosBucket.name}-${appid}`,
        key: (() => { try { return decodeURIComponent(rawKey); } catch { return rawKey; } })(),
        version: firstOf(cosObject.vid, str(meta["x-cos-version-id"]), str(meta["x-cos-request-id"]), cos.data.event.reqid === undefined ? undefined : String(cos.data.event.reqid)) ?? "unversioned",
        eventName: cos.data.event.eventName, created: /^cos:ObjectCreated:/.test(cos.data.event.eventName),
      } satisfies ObjectCreated;
    }
    throw badEvent(`Records[${i}]`, "not an S3, OBS or COS object notification (expected Records[].s3, Records[].obs or Records[].cos with the bucket and the object key)");
  });
}

// ------------------------------------------------------------------------------------------ errors

export function badEvent(where: string, message: string, hint?: string): RlpipeError {
  return new RlpipeError("bad_event", `event.${where}: ${message}`, {
    exitCode: ExitCode.invalidInput,
    hint: hint ?? `a console event is {"action": "${ACTIONS.join("|")}", …}; see the README (console events)`,
  });
}

/** The first problem zod found, as a bad_event at its field. */
export function zodToBadEvent(error: z.ZodError, action: string): RlpipeError {
  const issue = error.issues[0]!;
  const where = issue.path.length === 0 ? action : issue.path.map((p) => (typeof p === "number" ? `[${p}]` : String(p))).join(".").replace(/\.\[/g, "[");
  if (issue.code === "unrecognized_keys") {
    const keys = (issue as { keys?: string[] }).keys ?? [];
    const known = Object.keys(EVENT_SCHEMAS[action as (typeof ACTIONS)[number]].shape);
    const guess = keys.length === 1 ? didYouMean(keys[0]!, known) : undefined;
    return badEvent(issue.path.length === 0 ? keys.join(", ") : where, `unknown field${keys.length === 1 ? "" : "s"} for action ${action}`, guess ?? `the fields of ${action} are: ${known.join(", ")}`);
  }
  return badEvent(where, issue.message);
}

export const EVENT_SCHEMAS = { deploy: DeployEvent, status: StatusEvent, score: ScoreEvent, cost: CostEvent, report: ReportEvent } as const;

/** A console event, validated; unknown actions and fields are named with a suggestion. */
export function parseConsoleEvent(event: unknown): ConsoleEvent {
  if (typeof event !== "object" || event === null || Array.isArray(event)) throw badEvent("(root)", "expected a JSON object", undefined);
  const action = (event as { action?: unknown }).action;
  if (action === undefined) throw badEvent("action", "missing");
  if (typeof action !== "string" || !(ACTIONS as readonly string[]).includes(action)) {
    const guess = typeof action === "string" ? didYouMean(action, ACTIONS) : undefined;
    throw badEvent("action", `unknown action ${JSON.stringify(action)}; expected one of ${ACTIONS.join(", ")}`, guess);
  }
  const schema = EVENT_SCHEMAS[action as (typeof ACTIONS)[number]];
  const parsed = schema.safeParse(event);
  if (!parsed.success) throw zodToBadEvent(parsed.error, action);
  return parsed.data as ConsoleEvent;
}
