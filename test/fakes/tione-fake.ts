// A strict loopback TI-ONE (tione 2021-11-11) for tests. Every request must carry a valid TC3-HMAC-SHA256
// signature, recomputed here from the public algorithm: host without the port, the service from the credential
// scope, X-TC-Action/Version/Region/Timestamp; a timestamp more than 300 s off is AuthFailure.SignatureExpire and
// a wrong signature AuthFailure.SignatureFailure. Answers are {"Response":{…,"RequestId"}}, errors
// {"Response":{"Error":{"Code","Message"},"RequestId"}} at HTTP 200, as the API does. CreateTrainingTask is
// validated against the documented field types (UnknownParameter, MissingParameter, InvalidParameter,
// InvalidParameterValue). Task names are NOT unique here (the API documents no uniqueness), so a blind retry of a
// create makes a second task and the fault trials catch it. Tasks walk SUBMITTING → STARTING → RUNNING → SUCCEED
// (or FAILED / STOPPED) one step per DescribeTrainingTask, writing log lines as they go.
import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { z } from "zod";
import type { JobRunner, RunningJob } from "./job-runner.js";

export interface FakeCredential {
  readonly secretId: string;
  readonly secretKey: string;
  readonly token?: string;
}

/** What an injected fault does to the next call of an action. */
export type Fault =
  | "timeout-after-create" // act, then never answer (the client gives up)
  | "internal-before" // InternalError without acting
  | "internal-after" // act, then InternalError
  | "throttle" // RequestLimitExceeded without acting
  | "reset-before" // drop the connection without acting
  | "reset-after" // act, then drop the connection
  | "bad-gateway-after"; // act, then HTTP 502

export type TagsShown = "present" | "omitted" | "null";

export interface LogLine {
  readonly Id: string;
  readonly Timestamp: string;
  readonly PodName: string;
  readonly Message: string;
  readonly PkgId: string;
  readonly PkgLogId: string;
  readonly seq: number;
}

export interface FakeTask {
  readonly id: string;
  readonly request: Record<string, unknown>;
  readonly createdAtMs: number;
  status: string;
  /** Statuses still to come, one per DescribeTrainingTask. */
  script: string[];
  /** Stay at this status until released (a long-running task). */
  holdAt?: string;
  instanceId?: string;
  startMs?: number;
  endMs?: number;
  failureReason?: string;
  readonly logs: LogLine[];
  /** The start command, when the fake runs tasks (a runner is attached). */
  run?: RunningJob;
  runError?: string;
}

export interface CallRecord {
  readonly action: string;
  /** Error code answered, "fault:<kind>" for an injected fault, undefined for success. */
  readonly outcome?: string;
  /** The request parameters (when the body was JSON). */
  readonly params?: Record<string, unknown>;
}

const REGIONS = new Set(["ap-shanghai", "ap-guangzhou", "ap-beijing", "ap-nanjing", "ap-chongqing", "ap-singapore", "ap-shanghai-adc"]);
const ACTIONS = new Set(["CreateTrainingTask", "DescribeTrainingTask", "DescribeTrainingTasks", "DescribeLogs", "StopTrainingTask", "DescribeTrainingFrameworks", "DescribeBillingSpecs", "DescribeBillingSpecsPrice"]);

/** A billing spec (DescribeBillingSpecs) with its hourly list price in fen (DescribeBillingSpecsPrice's unit). */
export interface FakeBillingSpec {
  readonly SpecName: string;
  readonly SpecAlias: string;
  readonly ChargeType: "POSTPAID_BY_HOUR" | "PREPAID";
  readonly TaskType: "TRAIN" | "NOTEBOOK" | "INFERENCE";
  readonly ResourceType: "CPU" | "GPU";
  readonly GpuType?: string;
  readonly Available: boolean;
  readonly fenPerHour: number;
}

/** TI.S.MEDIUM.POST at 70 fen/h is the API doc's example (cloud.tencent.com/document/api/851/75067); the rest are test figures. */
export const FAKE_BILLING_SPECS: readonly FakeBillingSpec[] = [
  { SpecName: "TI.S.MEDIUM.POST", SpecAlias: "2C4G", ChargeType: "POSTPAID_BY_HOUR", TaskType: "TRAIN", ResourceType: "CPU", Available: true, fenPerHour: 70 },
  { SpecName: "TI.GN7.8XLARGE128.POST", SpecAlias: "32C128G T4*1", ChargeType: "POSTPAID_BY_HOUR", TaskType: "TRAIN", ResourceType: "GPU", GpuType: "T4", Available: true, fenPerHour: 1234 },
  { SpecName: "TI.GN7.20XLARGE320.POST", SpecAlias: "80C320G T4*4", ChargeType: "POSTPAID_BY_HOUR", TaskType: "TRAIN", ResourceType: "GPU", GpuType: "T4", Available: false, fenPerHour: 4567 },
];
const MAX_SKEW_S = 300;

export const FAKE_FRAMEWORKS = [
  {
    Name: "PYTORCH",
    VersionInfos: [
      { Version: "1.9", TrainingModes: ["DDP", "MPI", "HOROVOD"], Environment: "torch1.9-py3.8-cuda11.1-gpu" },
      { Version: "2.8.0", TrainingModes: ["DDP", "MPI", "RAY"], Environment: "verl0.6.1-vllm0.11.0-torch2.8-py312-cuda12.8-gpu" },
    ],
  },
] as const;

class ApiError extends Error {
  constructor(readonly code: string, message: string) { super(message); }
}

// ------------------------------------------------------------------------------------------ TC3 verification

const sha256hex = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(",") : v;
}

/** Throws the API error a real endpoint would answer for a bad signature; `service` is the API's (tione, scf…). */
export function verifyTc3(req: IncomingMessage, body: Buffer, creds: readonly FakeCredential[], nowMs: number, service = "tione"): FakeCredential {
  const auth = header(req, "authorization") ?? "";
  const m = /^TC3-HMAC-SHA256 Credential=([^/\s]+)\/(\d{4}-\d{2}-\d{2})\/([a-z0-9-]+)\/tc3_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (m === null) throw new ApiError("AuthFailure.InvalidAuthorization", "Authorization header is malformed or not TC3-HMAC-SHA256.");
  const [, secretId, date, scope, signedHeaders, signature] = m as unknown as [string, string, string, string, string, string];
  const tsText = header(req, "x-tc-timestamp") ?? "";
  if (!/^\d+$/.test(tsText)) throw new ApiError("MissingParameter", "The request is missing a valid X-TC-Timestamp.");
  const ts = Number(tsText);
  if (Math.abs(nowMs / 1000 - ts) > MAX_SKEW_S) throw new ApiError("AuthFailure.SignatureExpire", "Signature expired: the timestamp is more than 300 s from the server time.");
  if (new Date(ts * 1000).toISOString().slice(0, 10) !== date) throw new ApiError("AuthFailure.SignatureFailure", "The credential scope date does not match X-TC-Timestamp.");
  const cred = creds.find((c) => c.secretId === secretId);
  if (cred === undefined) throw new ApiError("AuthFailure.SecretIdNotFound", "The SecretId is not found.");
  if (scope !== service) throw new ApiError("AuthFailure.InvalidAuthorization", `The credential scope names service ${scope}, not ${service}.`);
  const names = signedHeaders.split(";");
  if (!names.includes("content-type") || !names.includes("host")) throw new ApiError("AuthFailure.InvalidAuthorization", "SignedHeaders must include content-type and host.");
  const canonicalHeaders = names.map((n) => {
    let v = (header(req, n) ?? "").trim().toLowerCase();
    if (n === "host") v = v.replace(/:\d+$/, ""); // the signature covers the host without the port
    return `${n}:${v}\n`;
  }).join("");
  const canonical = ["POST", "/", "", canonicalHeaders, signedHeaders, sha256hex(body)].join("\n");
  const stringToSign = ["TC3-HMAC-SHA256", tsText, `${date}/${service}/tc3_request`, sha256hex(canonical)].join("\n");
  const kSigning = hmac(hmac(hmac(`TC3${cred.secretKey}`, date), service), "tc3_request");
  const expected = hmac(kSigning, stringToSign).toString("hex");
  if (!timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) throw new ApiError("AuthFailure.SignatureFailure", "The provided credentials could not be validated: the signature does not match.");
  const token = header(req, "x-tc-token");
  if (cred.token !== undefined && token !== cred.token) throw new ApiError("AuthFailure.TokenFailure", "The token is invalid or missing.");
  if (cred.token === undefined && token !== undefined) throw new ApiError("AuthFailure.TokenFailure", "A token was sent for a permanent key.");
  return cred;
}

// ------------------------------------------------------------------------------------------ request schemas

const str = () => z.string();
const int = () => z.number().int();
const CosPath = z.strictObject({ Bucket: str(), Region: str(), Paths: z.array(str()) });
const ResourceConfigInfo = z.strictObject({
  Role: str(), Cpu: int().optional(), Memory: int().optional(), GpuType: str().optional(), Gpu: int().optional(),
  InstanceType: str().optional(), InstanceNum: int().optional(), InstanceTypeAlias: str().optional(),
  RDMAConfig: z.strictObject({ Enable: z.boolean().optional() }).optional(),
});
const DataConfig = z.strictObject({
  MappingPath: str().optional(), DataSourceUsage: str().optional(), DataSourceType: str().optional(),
  DataSetSource: z.strictObject({ Id: str() }).optional(), COSSource: CosPath.optional(),
  CFSSource: z.strictObject({ Id: str(), Path: str(), MountType: str().optional(), Protocol: str().optional(), IsPresetStorage: z.boolean().optional() }).optional(),
  HDFSSource: z.strictObject({ Id: str(), Path: str() }).optional(), ReadOnly: z.boolean().optional(),
});

export const CreateTrainingTaskSchema = z.strictObject({
  Name: str(), ChargeType: str(), ResourceConfigInfos: z.array(ResourceConfigInfo),
  TiProjectId: str().optional(), FrameworkName: str().optional(), FrameworkVersion: str().optional(), FrameworkEnvironment: str().optional(),
  ResourceGroupId: str().optional(), Tags: z.array(z.strictObject({ TagKey: str(), TagValue: str() })).optional(),
  ImageInfo: z.strictObject({ ImageType: str(), ImageUrl: str(), RegistryRegion: str().optional(), RegistryId: str().optional() }).optional(),
  CodePackagePath: CosPath.optional(),
  StartCmdInfo: z.strictObject({ StartCmd: str().optional(), PsStartCmd: str().optional(), WorkerStartCmd: str().optional() }).optional(),
  TrainingMode: str().optional(), DataConfigs: z.array(DataConfig).optional(), VpcId: str().optional(), SubnetId: str().optional(),
  Output: CosPath.optional(), LogConfig: z.strictObject({ LogsetId: str(), TopicId: str() }).optional(), TuningParameters: str().optional(),
  LogEnable: z.boolean().optional(), Remark: str().optional(), DataSource: str().optional(), CallbackUrl: str().optional(),
  EncodedStartCmdInfo: z.strictObject({ StartCmdInfo: str().optional() }).optional(),
  Envs: z.array(z.strictObject({ Name: str().optional(), Value: str().optional() })).optional(),
  Queues: z.array(str()).optional(),
});

const FilterSchema = z.strictObject({ Name: str().optional(), Values: z.array(str()).optional(), Negative: z.boolean().optional(), Fuzzy: z.boolean().optional() });
const DescribeTasksSchema = z.strictObject({
  TiProjectId: str().optional(), Filters: z.array(FilterSchema).optional(),
  TagFilters: z.array(z.strictObject({ TagKey: str().optional(), TagValues: z.array(str()).optional() })).optional(),
  Offset: int().optional(), Limit: int().optional(), Order: str().optional(), OrderField: str().optional(),
});
const DescribeTaskSchema = z.strictObject({ Id: str(), TiProjectId: str().optional(), InstanceId: str().optional() });
const StopSchema = z.strictObject({ Id: str(), TiProjectId: str().optional() });
const BillingSpecsSchema = z.strictObject({ ChargeType: str(), TaskType: str().optional(), ResourceType: str().optional(), TiProjectId: str().optional() });
const BillingSpecsPriceSchema = z.strictObject({ SpecsParam: z.array(z.strictObject({ SpecName: str(), SpecCount: int() })) });
const DescribeLogsSchema = z.strictObject({
  Service: str(), TiProjectId: str().optional(), StartTime: str().optional(), EndTime: str().optional(), Limit: int().optional(),
  ServiceId: str().optional(), PodName: str().optional(), Order: str().optional(), OrderField: str().optional(), Context: str().optional(),
  Filters: z.array(FilterSchema).optional(), Offset: int().optional(), LogStream: str().optional(),
});

/** Map the first schema problem to the API's error code. */
function parseParams<T>(schema: z.ZodType<T>, params: unknown): T {
  const r = schema.safeParse(params);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const where = issue.path.join(".");
  if (issue.code === "unrecognized_keys") throw new ApiError("UnknownParameter", `The parameter \`${[where, issue.keys[0]].filter((x) => x !== "").join(".")}\` is not recognized.`);
  const given = issue.path.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k as PropertyKey] : undefined), params);
  if (issue.code === "invalid_type" && given === undefined) throw new ApiError("MissingParameter", `The request is missing a required parameter \`${where}\`.`);
  if (issue.code === "invalid_type") throw new ApiError("InvalidParameter", `The parameter \`${where}\` has the wrong type: ${issue.message}.`);
  throw new ApiError("InvalidParameterValue", `The value of parameter \`${where}\` is invalid: ${issue.message}.`);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function checkCreate(b: z.infer<typeof CreateTrainingTaskSchema>): void {
  const bad = (field: string, why: string) => new ApiError("InvalidParameterValue", `The value of parameter \`${field}\` is invalid: ${why}.`);
  const missing = (field: string) => new ApiError("MissingParameter", `The request is missing a required parameter \`${field}\`.`);
  if (!/^[\p{L}\p{N}][\p{L}\p{N}_-]*$/u.test(b.Name) || [...b.Name].length > 60) throw bad("Name", "at most 60 letters, digits, '_' or '-', starting with a letter or digit");
  if (b.ChargeType !== "PREPAID" && b.ChargeType !== "POSTPAID_BY_HOUR") throw bad("ChargeType", "expected PREPAID or POSTPAID_BY_HOUR");
  if (b.ResourceConfigInfos.length === 0) throw missing("ResourceConfigInfos");
  if (b.ChargeType === "PREPAID" && b.ResourceGroupId === undefined) throw missing("ResourceGroupId");
  b.ResourceConfigInfos.forEach((r, i) => {
    const at = `ResourceConfigInfos.${i}`;
    if (!["PS", "WORKER", "DRIVER", "EXECUTOR", "HEAD"].includes(r.Role)) throw bad(`${at}.Role`, `unknown role ${r.Role}`);
    if ((r.InstanceNum ?? 1) < 1) throw bad(`${at}.InstanceNum`, "at least 1");
    if (b.ChargeType === "PREPAID") {
      if (r.Cpu === undefined) throw missing(`${at}.Cpu`);
      if (r.Memory === undefined) throw missing(`${at}.Memory`);
      if (r.Cpu <= 0 || r.Memory <= 0 || (r.Gpu ?? 0) < 0) throw bad(at, "resources must be positive");
      if ((r.Gpu ?? 0) > 0 && r.GpuType === undefined) throw missing(`${at}.GpuType`);
    } else if (r.InstanceType === undefined) throw missing(`${at}.InstanceType`);
  });
  if (b.ImageInfo === undefined && b.FrameworkEnvironment === undefined) throw missing("ImageInfo");
  if (b.FrameworkEnvironment !== undefined) {
    const env = FAKE_FRAMEWORKS.flatMap((f) => f.VersionInfos.map((v) => ({ name: f.Name, ...v }))).find((v) => v.Environment === b.FrameworkEnvironment && v.name === b.FrameworkName);
    if (env === undefined) throw bad("FrameworkEnvironment", `no ${b.FrameworkName ?? "(no FrameworkName)"} environment ${b.FrameworkEnvironment}`);
    if (b.TrainingMode !== undefined && !(env.TrainingModes as readonly string[]).includes(b.TrainingMode)) throw bad("TrainingMode", `${b.FrameworkEnvironment} supports ${env.TrainingModes.join(", ")}`);
  }
  if (b.ImageInfo !== undefined && !["TCR", "CCR", "PRESET", "CUSTOM"].includes(b.ImageInfo.ImageType)) throw bad("ImageInfo.ImageType", "expected TCR, CCR, PRESET or CUSTOM");
  if (b.EncodedStartCmdInfo?.StartCmdInfo !== undefined) {
    let decoded: unknown;
    try { decoded = JSON.parse(Buffer.from(b.EncodedStartCmdInfo.StartCmdInfo, "base64").toString("utf8")); } catch { throw bad("EncodedStartCmdInfo.StartCmdInfo", "not base64 of a JSON object"); }
    const ok = z.strictObject({ StartCmd: z.string(), PsStartCmd: z.string(), WorkerStartCmd: z.string() }).safeParse(decoded).success;
    if (!ok) throw bad("EncodedStartCmdInfo.StartCmdInfo", 'expected base64 of {"StartCmd":"","PsStartCmd":"","WorkerStartCmd":""}');
  } else if (b.StartCmdInfo === undefined) throw missing("StartCmdInfo");
  if ((b.DataConfigs?.length ?? 0) > 10) throw bad("DataConfigs", "at most 10");
  b.DataConfigs?.forEach((d, i) => {
    const at = `DataConfigs.${i}`;
    const type = d.DataSourceType ?? b.DataSource;
    if (!["DATASET", "COS", "CFS", "CFSTurbo", "GooseFSx", "HDFS", "WEDATA_HDFS"].includes(type ?? "")) throw bad(`${at}.DataSourceType`, `unknown type ${type}`);
    if (type === "COS" && (d.COSSource === undefined || d.COSSource.Paths.length !== 1)) throw missing(`${at}.COSSource`);
    if (type === "CFS" && d.CFSSource === undefined) throw missing(`${at}.CFSSource`);
    if (d.MappingPath === undefined || !d.MappingPath.startsWith("/")) throw bad(`${at}.MappingPath`, "an absolute path");
  });
  if ((b.TuningParameters?.length ?? 0) > 2048) throw bad("TuningParameters", "at most 2048 characters");
  b.Envs?.forEach((e, i) => { if (!e.Name) throw missing(`Envs.${i}.Name`); });
  b.Tags?.forEach((t, i) => { if (t.TagKey === "") throw bad(`Tags.${i}.TagKey`, "empty"); });
  if (b.LogEnable === true && b.LogConfig === undefined) throw missing("LogConfig");
}

// ------------------------------------------------------------------------------------------ the server

function showTags(item: Record<string, unknown>, how: TagsShown): Record<string, unknown> {
  if (how === "present") return item;
  const { Tags: _tags, ...rest } = item;
  return how === "null" ? { ...rest, Tags: null } : rest;
}

const rfc = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export class TioneFake {
  readonly tasks = new Map<string, FakeTask>();
  readonly calls: CallRecord[] = [];
  /** Added to the server's clock (a skewed server for SignatureExpire). */
  clockOffsetMs = 0;
  /** Final status new tasks walk to. */
  outcome: "SUCCEED" | "FAILED" = "SUCCEED";
  /** New tasks stop at RUNNING until released. */
  holdAtRunning = false;
  /**
   * How Tags appear in DescribeTrainingTasks items and in DescribeTrainingTask's detail: as sent, left out, or null
   * (the SDK model says the field "may return null"). TagFilters still filter on the tags the task has.
   */
  listTags: TagsShown = "present";
  detailTags: TagsShown = "present";
  /** The account's billing specs and their prices. */
  billingSpecs: readonly FakeBillingSpec[] = FAKE_BILLING_SPECS;
  /** The account's discount on list prices (0.2 = 20 % off): RealTotalCost below TotalCost. */
  discount = 0;
  private readonly faults = new Map<string, Fault[]>();
  private readonly sockets = new Set<Socket>();
  private seq = 0;
  private logSeq = 0;

  private constructor(private readonly server: Server, readonly endpoint: string, private readonly creds: readonly FakeCredential[]) {}

  /**
   * Run created tasks for real (optional): COS data configs are downloaded to their MappingPath, the start command
   * runs with the task's Envs; the task stays RUNNING until it exits, then SUCCEED or FAILED by its exit code.
   */
  runner: JobRunner | undefined;

  static async start(creds: readonly FakeCredential[], runner?: JobRunner): Promise<TioneFake> {
    let fake: TioneFake | undefined;
    const server = createServer((req, res) => { void fake!.handle(req, res); });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    fake = new TioneFake(server, `http://127.0.0.1:${port}`, creds);
    fake.runner = runner;
    server.on("connection", (s) => { fake!.sockets.add(s); s.on("close", () => fake!.sockets.delete(s)); });
    return fake;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Forget every task, call and fault. */
  reset(): void {
    this.tasks.clear();
    this.calls.length = 0;
    this.faults.clear();
    this.outcome = "SUCCEED";
    this.holdAtRunning = false;
    this.listTags = "present";
    this.detailTags = "present";
    this.billingSpecs = FAKE_BILLING_SPECS;
    this.discount = 0;
  }

  inject(action: string, ...faults: Fault[]): void {
    this.faults.set(action, [...(this.faults.get(action) ?? []), ...faults]);
  }

  tasksNamed(name: string): FakeTask[] {
    return [...this.tasks.values()].filter((t) => t.request["Name"] === name);
  }

  callsOf(action: string): CallRecord[] {
    return this.calls.filter((c) => c.action === action);
  }

  /** A task as if created in the console (for `rlpipe tione inspect`). */
  seedTask(request: Record<string, unknown>, status = "RUNNING"): FakeTask {
    const t = this.newTask(request);
    t.status = status;
    t.script = [];
    t.instanceId = `${t.id}-1`;
    t.startMs = t.createdAtMs;
    return t;
  }

  /** Let a held task go on to its outcome. */
  release(id: string): void {
    const t = this.tasks.get(id);
    if (t !== undefined) delete t.holdAt;
  }

  appendLogs(t: FakeTask, pod: string, messages: readonly string[]): void {
    const ts = rfc(this.now());
    for (const m of messages) {
      const seq = ++this.logSeq;
      t.logs.push({ Id: `log-${seq}`, Timestamp: ts, PodName: pod, Message: m, PkgId: `pkg-${Math.floor(seq / 8)}`, PkgLogId: String(seq % 8), seq });
    }
  }

  private now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  private newTask(request: Record<string, unknown>): FakeTask {
    const id = `train-${String(1_000_000_000_000_000_000n + BigInt(++this.seq)).slice(1)}`;
    const t: FakeTask = { id, request, createdAtMs: this.now(), status: "SUBMITTING", script: ["STARTING", "RUNNING", this.outcome], logs: [], ...(this.holdAtRunning ? { holdAt: "RUNNING" } : {}) };
    this.tasks.set(id, t);
    return t;
  }

  /** What TI-ONE does with a created task: the COS data configs into the container, then the start command. */
  private async launch(t: FakeTask, b: z.infer<typeof CreateTrainingTaskSchema>, runner: JobRunner): Promise<void> {
    try {
      for (const d of b.DataConfigs ?? []) {
        const cos = d.COSSource;
        if ((d.DataSourceType ?? b.DataSource) !== "COS" || cos === undefined) continue;
        if (await runner.download(cos.Bucket, cos.Paths[0]!.replace(/^\/+|\/+$/g, ""), runner.mapPath(d.MappingPath!)) === 0) throw new Error(`COS ${cos.Bucket}${cos.Paths[0]} is empty`);
      }
      const enc = b.EncodedStartCmdInfo?.StartCmdInfo;
      const cmd = enc === undefined ? b.StartCmdInfo?.StartCmd ?? "" : (JSON.parse(Buffer.from(enc, "base64").toString("utf8")) as { StartCmd: string }).StartCmd;
      const env = Object.fromEntries((b.Envs ?? []).map((e) => [e.Name!, e.Value ?? ""]));
      t.run = runner.start(cmd, "/", env);
    } catch (e) {
      t.runError = String(e);
    }
  }

  /** One step of the task's life, with the log lines each step writes. */
  private advance(t: FakeTask): void {
    if (t.holdAt === t.status || t.script.length === 0) return;
    let next = t.script[0]!;
    if ((t.run !== undefined || t.runError !== undefined) && ["SUCCEED", "FAILED"].includes(next)) {
      // A task that really runs ends when its command does.
      if (t.runError === undefined && !t.run!.done) return;
      next = t.runError === undefined && t.run!.exitCode === 0 ? "SUCCEED" : "FAILED";
      if (next === "FAILED") t.failureReason = t.runError ?? `the start command exited with code ${t.run!.exitCode}`;
    }
    t.script.shift();
    t.status = next;
    if (next === "STARTING") {
      t.instanceId = `${t.id}-1`;
      this.appendLogs(t, `${t.id}-head-0`, ["pulling image", "starting Ray head"]);
    } else if (next === "RUNNING") {
      t.startMs = this.now();
      this.appendLogs(t, `${t.id}-head-0`, ["[rlpipe] stage rl: starting", "ray init kwargs: {...}", "step 1"]);
      this.appendLogs(t, `${t.id}-worker-0`, ["worker joined", "vllm ready"]);
    } else if (next === "SUCCEED" || next === "FAILED" || next === "STOPPED") {
      t.endMs = this.now();
      if (next === "FAILED") t.failureReason ??= "launch.sh exited with code 1";
      this.appendLogs(t, `${t.id}-head-0`, next === "SUCCEED" ? ["step 2", "[rlpipe] all stages complete"] : next === "FAILED" ? ["Traceback: boom"] : ["received SIGTERM"]);
    }
  }

  private detail(t: FakeTask): Record<string, unknown> {
    const r = t.request;
    let startCmd: unknown = r["StartCmdInfo"];
    const enc = (r["EncodedStartCmdInfo"] as { StartCmdInfo?: string } | undefined)?.StartCmdInfo;
    if (enc !== undefined) startCmd = JSON.parse(Buffer.from(enc, "base64").toString("utf8"));
    return {
      Id: t.id, Name: r["Name"], Uin: "100000000001", SubUin: "100000000001", Region: "ap-shanghai",
      FrameworkName: r["FrameworkName"] ?? null, FrameworkVersion: r["FrameworkVersion"] ?? null, FrameworkEnvironment: r["FrameworkEnvironment"] ?? null,
      ChargeType: r["ChargeType"], ResourceGroupId: r["ResourceGroupId"] ?? null, ResourceConfigInfos: r["ResourceConfigInfos"], Tags: r["Tags"] ?? [],
      TrainingMode: r["TrainingMode"] ?? null, StartCmdInfo: startCmd ?? null, DataSource: r["DataSource"] ?? null, DataConfigs: r["DataConfigs"] ?? null,
      TuningParameters: r["TuningParameters"] ?? null, Output: r["Output"] ?? null, LogEnable: r["LogEnable"] ?? false, LogConfig: r["LogConfig"] ?? null,
      VpcId: r["VpcId"] ?? null, SubnetId: r["SubnetId"] ?? null, ImageInfo: r["ImageInfo"] ?? null,
      RuntimeInSeconds: t.startMs === undefined ? 0 : Math.floor(((t.endMs ?? this.now()) - t.startMs) / 1000),
      CreateTime: rfc(t.createdAtMs), StartTime: t.startMs === undefined ? null : rfc(t.startMs), EndTime: t.endMs === undefined ? null : rfc(t.endMs),
      ChargeStatus: t.status === "RUNNING" ? "BILLING" : "NOT_BILLING", LatestInstanceId: t.instanceId ?? null,
      FailureReason: t.failureReason ?? null, UpdateTime: rfc(this.now()), Message: null, Status: t.status, CallbackUrl: null,
    };
  }

  private listItem(t: FakeTask): Record<string, unknown> {
    const d = this.detail(t);
    const keep = ["Id", "Name", "FrameworkName", "FrameworkVersion", "FrameworkEnvironment", "ChargeType", "ChargeStatus", "ResourceGroupId", "ResourceConfigInfos", "TrainingMode", "Status", "RuntimeInSeconds", "CreateTime", "StartTime", "EndTime", "Output", "FailureReason", "UpdateTime", "ImageInfo", "Message", "Tags", "CallbackUrl"];
    return { ...Object.fromEntries(keep.map((k) => [k, d[k]])), Envs: t.request["Envs"] ?? [] };
  }

  // ---------------------------------------------------------------------------------------- actions

  private act(action: string, params: unknown): Record<string, unknown> {
    switch (action) {
      case "CreateTrainingTask": {
        const b = parseParams(CreateTrainingTaskSchema, params);
        checkCreate(b);
        const t = this.newTask(params as Record<string, unknown>);
        if (this.runner !== undefined) void this.launch(t, b, this.runner);
        return { Id: t.id };
      }
      case "DescribeTrainingTask": {
        const p = parseParams(DescribeTaskSchema, params);
        const t = this.tasks.get(p.Id);
        if (t === undefined) throw new ApiError("ResourceNotFound", `The training task ${p.Id} does not exist.`);
        this.advance(t);
        return { TrainingTaskDetail: showTags(this.detail(t), this.detailTags) };
      }
      case "DescribeTrainingTasks": return this.describeTasks(parseParams(DescribeTasksSchema, params));
      case "DescribeLogs": return this.describeLogs(parseParams(DescribeLogsSchema, params));
      case "StopTrainingTask": {
        const p = parseParams(StopSchema, params);
        const t = this.tasks.get(p.Id);
        if (t === undefined) throw new ApiError("ResourceNotFound", `The training task ${p.Id} does not exist.`);
        if (!["SUBMITTING", "PENDING", "STARTING", "RUNNING"].includes(t.status)) throw new ApiError("FailedOperation", `The task is ${t.status} and cannot be stopped.`);
        t.status = "STOPPING";
        t.run?.kill();
        delete t.run;
        delete t.holdAt;
        t.script = ["STOPPED"];
        return {};
      }
      case "DescribeTrainingFrameworks": {
        if (params !== null && typeof params === "object" && Object.keys(params).length > 0) throw new ApiError("UnknownParameter", `The parameter \`${Object.keys(params)[0]}\` is not recognized.`);
        return { FrameworkInfos: FAKE_FRAMEWORKS };
      }
      case "DescribeBillingSpecs": {
        const p = parseParams(BillingSpecsSchema, params);
        if (p.ChargeType !== "POSTPAID_BY_HOUR" && p.ChargeType !== "PREPAID") throw new ApiError("InvalidParameterValue", "The value of parameter `ChargeType` is invalid: POSTPAID_BY_HOUR or PREPAID.");
        if (p.TaskType !== undefined && !["", "TRAIN", "NOTEBOOK", "INFERENCE", "EMS"].includes(p.TaskType)) throw new ApiError("InvalidParameterValue", "The value of parameter `TaskType` is invalid.");
        if (p.ResourceType !== undefined && !["", "CALC", "CPU", "GPU", "GPU-SW"].includes(p.ResourceType)) throw new ApiError("InvalidParameterValue", "The value of parameter `ResourceType` is invalid.");
        const specs = this.billingSpecs.filter((x) => x.ChargeType === p.ChargeType && (p.TaskType === undefined || p.TaskType === "" || x.TaskType === p.TaskType) && (p.ResourceType === undefined || p.ResourceType === "" || x.ResourceType === p.ResourceType));
        return { Specs: specs.map((x) => ({ SpecId: `sv_${x.SpecName.toLowerCase()}`, SpecName: x.SpecName, SpecAlias: x.SpecAlias, Available: x.Available, AvailableRegion: [], SpecFeatures: null, SpecType: x.ResourceType, GpuType: x.GpuType ?? null, CategoryId: null })) };
      }
      case "DescribeBillingSpecsPrice": {
        const p = parseParams(BillingSpecsPriceSchema, params);
        if (p.SpecsParam.length === 0) throw new ApiError("MissingParameter", "The request is missing a required parameter `SpecsParam`.");
        return {
          SpecsPrice: p.SpecsParam.map((u, i) => {
            const spec = this.billingSpecs.find((x) => x.SpecName === u.SpecName);
            if (spec === undefined) throw new ApiError("InvalidParameterValue", `The value of parameter \`SpecsParam.${i}.SpecName\` is invalid: no spec ${u.SpecName}.`);
            if (u.SpecCount < 1 || u.SpecCount > 1_000_000) throw new ApiError("InvalidParameterValue", `The value of parameter \`SpecsParam.${i}.SpecCount\` is invalid.`);
            const total = spec.fenPerHour * u.SpecCount;
            return { SpecName: u.SpecName, TotalCost: total, RealTotalCost: Math.round(total * (1 - this.discount)), SpecCount: u.SpecCount };
          }),
        };
      }
      default: throw new ApiError("InvalidAction", `The action ${action} does not exist.`);
    }
  }

  private describeTasks(p: z.infer<typeof DescribeTasksSchema>): Record<string, unknown> {
    const limit = p.Limit ?? 10;
    if (limit < 1 || limit > 50) throw new ApiError("InvalidParameterValue", "The value of parameter `Limit` is invalid: 1 to 50.");
    if ((p.Offset ?? 0) < 0) throw new ApiError("InvalidParameterValue", "The value of parameter `Offset` is invalid.");
    if (p.Order !== undefined && p.Order !== "ASC" && p.Order !== "DESC") throw new ApiError("InvalidParameterValue", "The value of parameter `Order` is invalid: ASC or DESC.");
    if (p.OrderField !== undefined && !["CreateTime", "UpdateTime", "StartTime"].includes(p.OrderField)) throw new ApiError("InvalidParameterValue", "The value of parameter `OrderField` is invalid.");
    let tasks = [...this.tasks.values()];
    for (const f of p.Filters ?? []) {
      const values = f.Values ?? [];
      const field = (t: FakeTask): string => {
        switch (f.Name) {
          case "Name": return String(t.request["Name"]);
          case "Id": return t.id;
          case "Status": return t.status;
          case "ResourceGroupId": return String(t.request["ResourceGroupId"] ?? "");
          case "ChargeType": return String(t.request["ChargeType"]);
          default: throw new ApiError("InvalidParameterValue", `The value of parameter \`Filters.Name\` is invalid: ${f.Name}.`);
        }
      };
      tasks = tasks.filter((t) => {
        const v = field(t);
        const hit = values.some((x) => (f.Fuzzy === true ? v.includes(x) : v === x));
        return f.Negative === true ? !hit : hit;
      });
    }
    for (const tf of p.TagFilters ?? []) {
      tasks = tasks.filter((t) => ((t.request["Tags"] as { TagKey: string; TagValue: string }[] | undefined) ?? []).some((g) => g.TagKey === tf.TagKey && (tf.TagValues ?? []).includes(g.TagValue)));
    }
    const asc = p.Order === "ASC";
    tasks.sort((a, b) => (asc ? 1 : -1) * (a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id)));
    const offset = p.Offset ?? 0;
    return { TrainingTaskSet: tasks.slice(offset, offset + limit).map((t) => showTags(this.listItem(t), this.listTags)), TotalCount: tasks.length };
  }

  private describeLogs(p: z.infer<typeof DescribeLogsSchema>): Record<string, unknown> {
    if (!["TRAIN", "NOTEBOOK", "INFER", "BATCH"].includes(p.Service)) throw new ApiError("InvalidParameterValue", "The value of parameter `Service` is invalid.");
    const limit = p.Limit ?? 100;
    if (limit < 1 || limit > 1000) throw new ApiError("InvalidParameterValue", "The value of parameter `Limit` is invalid: 1 to 1000.");
    for (const [k, v] of [["StartTime", p.StartTime], ["EndTime", p.EndTime]] as const) {
      if (v !== undefined && !RFC3339.test(v)) throw new ApiError("InvalidParameterValue", `The value of parameter \`${k}\` is invalid: RFC3339 expected.`);
    }
    if (p.Order !== undefined && p.Order !== "ASC" && p.Order !== "DESC") throw new ApiError("InvalidParameterValue", "The value of parameter `Order` is invalid.");
    if (p.OrderField !== undefined && p.OrderField !== "Timestamp") throw new ApiError("InvalidParameterValue", "The value of parameter `OrderField` is invalid.");
    // A Context fixes the query window it was issued for; a fresh query defaults to the last hour up to now.
    let window: { start: number; end: number; pod?: string; order: string; sid: string };
    let offset = 0;
    if (p.Context !== undefined && p.Context !== "") {
      let c: { w: typeof window; o: number };
      try { c = JSON.parse(Buffer.from(p.Context, "base64url").toString("utf8")) as { w: typeof window; o: number }; } catch { throw new ApiError("InvalidParameterValue", "The value of parameter `Context` is invalid."); }
      if (c.w.sid !== (p.ServiceId ?? "") || c.w.order !== (p.Order ?? "DESC")) throw new ApiError("InvalidParameterValue", "The Context belongs to another query.");
      window = c.w;
      offset = c.o;
    } else {
      const end = p.EndTime === undefined ? this.now() : Date.parse(p.EndTime);
      const start = p.StartTime === undefined ? end - 3_600_000 : Date.parse(p.StartTime);
      window = { start, end, order: p.Order ?? "DESC", sid: p.ServiceId ?? "", ...(p.PodName === undefined ? {} : { pod: p.PodName }) };
    }
    const task = [...this.tasks.values()].find((t) => t.instanceId !== undefined && t.instanceId === window.sid);
    const podMatch = (pod: string) => window.pod === undefined || (window.pod.endsWith("*") ? pod.startsWith(window.pod.slice(0, -1)) : pod === window.pod);
    const lines = (task?.logs ?? []).filter((l) => { const ms = Date.parse(l.Timestamp); return ms >= window.start && ms <= window.end && podMatch(l.PodName); });
    lines.sort((a, b) => (window.order === "ASC" ? 1 : -1) * (Date.parse(a.Timestamp) - Date.parse(b.Timestamp) || a.seq - b.seq));
    const page = lines.slice(offset, offset + limit);
    const context = Buffer.from(JSON.stringify({ w: window, o: offset + page.length }), "utf8").toString("base64url");
    return { Context: context, Content: page.map(({ seq: _seq, ...l }) => l) };
  }

  // ---------------------------------------------------------------------------------------- HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const requestId = randomUUID();
    const action = header(req, "x-tc-action") ?? "";
    const reply = (payload: Record<string, unknown>, status = 200) => {
      const text = JSON.stringify({ Response: { ...payload, RequestId: requestId } });
      res.writeHead(status, { "Content-Type": "application/json", "X-TC-TraceId": randomUUID() }).end(text);
    };
    let params: Record<string, unknown> | undefined;
    const record = (outcome?: string) => this.calls.push({ action, ...(outcome === undefined ? {} : { outcome }), ...(params === undefined ? {} : { params }) });
    const fail = (e: ApiError) => { record(e.code); reply({ Error: { Code: e.code, Message: e.message } }); };
    try {
      if (req.method !== "POST" || (req.url ?? "/") !== "/") throw new ApiError("InvalidParameter", "Only POST / is supported.");
      if ((header(req, "content-type") ?? "") !== "application/json") throw new ApiError("InvalidParameter", "Content-Type must be application/json.");
      verifyTc3(req, body, this.creds, this.now());
      if (header(req, "x-tc-version") !== "2021-11-11") throw new ApiError("NoSuchVersion", "The API version does not exist.");
      if (!ACTIONS.has(action)) throw new ApiError("InvalidAction", `The action ${action} does not exist.`);
      const region = header(req, "x-tc-region");
      if (region === undefined) throw new ApiError("MissingParameter", "The request is missing X-TC-Region.");
      if (!REGIONS.has(region)) throw new ApiError("UnsupportedRegion", `The region ${region} is not supported.`);
      try { params = body.length === 0 ? {} : JSON.parse(body.toString("utf8")) as Record<string, unknown>; } catch { throw new ApiError("InvalidParameter", "The body is not JSON."); }

      const fault = this.faults.get(action)?.shift();
      if (fault !== undefined) record(`fault:${fault}`);
      if (fault === "throttle") { reply({ Error: { Code: "RequestLimitExceeded", Message: "Your request frequency exceeds the limit." } }); return; }
      if (fault === "internal-before") { reply({ Error: { Code: "InternalError", Message: "An internal error occurred." } }); return; }
      if (fault === "reset-before") { req.socket.destroy(); return; }
      const result = this.act(action, params);
      if (fault === undefined) record();
      if (fault === "internal-after") { reply({ Error: { Code: "InternalError", Message: "An internal error occurred." } }); return; }
      if (fault === "reset-after") { req.socket.destroy(); return; }
      if (fault === "bad-gateway-after") { res.writeHead(502, { "Content-Type": "text/plain" }).end("Bad Gateway"); return; }
      if (fault === "timeout-after-create") return; // never answered: the client times out and closes the socket
      reply(result);
    } catch (e) {
      if (e instanceof ApiError) fail(e);
      else { record("InternalError"); reply({ Error: { Code: "InternalError", Message: String(e) } }); }
    }
  }
}
