// A strict loopback TI-ONE (tione 2021-11-11) for tests. Every request must carry a valid TC3-HMAC-SHA256
// signature, recomputed here from the public algorithm: host without the port, the service from the credential
// scope, X-TC-Action/Version/Region/Timestamp; a timestamp more than 300 s off is AuthFailure.SignatureExpire and
// a wrong signature AuthFailure.SignatureFailure. Answers are {"Response":{…,"RequestId"}}, errors
// {"Response":{"Error":{"Code","Message"},"RequestId"}} at HTTP 200, as the API does. Every request is checked
// against Tencent's own SDK model of its action (tione-model-check.ts: tencentcloud-sdk-python-tione 3.1.191, required
// fields from the Node SDK): UnknownParameter, MissingParameter, InvalidParameter (type), InvalidParameterValue(.*)
// as tione's errorcodes.py names them; and every reply against the reply model, so the fake answers only fields the
// service returns. By default task names are NOT unique here (no uniqueness rule is documented for Name), so a blind retry of a
// create makes a second task and the fault trials catch it; `refuseTakenNames` makes a create under a taken name
// fail with FailedOperation.DuplicateName (errorcodes.py) instead. Tasks live in a workspace (TiProjectId; "" is the
// default one) and are invisible to calls naming another. Secrets sent with IsPrivate are listed without their
// value. Tasks walk SUBMITTING → STARTING → RUNNING → SUCCEED (or FAILED / STOPPED) one step per
// DescribeTrainingTask, writing log lines as they go.
import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { JobRunner, RunningJob } from "./job-runner.js";
import { checkTioneReply, checkTioneRequest, tioneOperation } from "./tione-model-check.js";

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
  | "bad-gateway-after" // act, then HTTP 502
  | "refuse-echoing"; // InvalidParameterValue without acting, the message quoting the request's Envs (a service that echoes values)

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
  /** TiProjectId of the workspace the task lives in ("" for the default workspace). */
  readonly project: string;
  readonly region: string;
  readonly createdAtMs: number;
  /** DescribeTrainingTasks calls still to come that do not list the task yet (an eventually consistent listing). */
  unlistedFor: number;
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
/** Served actions; all but DescribeTrainingFrameworks (not in the extract) are checked against the SDK's models. */
const ACTIONS = new Set(["CreateTrainingTask", "DescribeTrainingTask", "DescribeTrainingTasks", "DescribeLogs", "StopTrainingTask", "DescribeTrainingFrameworks", "DescribeBillingSpecs", "DescribeBillingSpecsPrice"]);
/** Codes a create under a taken name may get (tione errorcodes.py). */
export type NameTakenCode = "FailedOperation.DuplicateName" | "FailedOperation.DuplicateNameTaskIsCreating";

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

// ------------------------------------------------------------------------------------------ request rules

/** What a validated CreateTrainingTask body holds that the fake reads (its shape is the SDK's model). */
interface CreateBody {
  readonly Name: string;
  readonly ChargeType: string;
  readonly ResourceConfigInfos: readonly { readonly Role: string; readonly Cpu?: number; readonly Memory?: number; readonly Gpu?: number; readonly GpuType?: string; readonly InstanceType?: string; readonly InstanceNum?: number }[];
  readonly ResourceGroupId?: string;
  readonly FrameworkName?: string;
  readonly FrameworkEnvironment?: string;
  readonly TrainingMode?: string;
  readonly ImageInfo?: { readonly ImageType: string; readonly ImageUrl: string };
  readonly StartCmdInfo?: { readonly StartCmd?: string };
  readonly EncodedStartCmdInfo?: { readonly StartCmdInfo?: string };
  readonly DataSource?: string;
  readonly DataConfigs?: readonly { readonly MappingPath?: string; readonly DataSourceType?: string; readonly COSSource?: { readonly Bucket: string; readonly Paths: readonly string[] }; readonly CFSSource?: unknown }[];
  readonly TuningParameters?: string;
  readonly Remark?: string;
  readonly LogEnable?: boolean;
  readonly LogConfig?: unknown;
  readonly Envs?: readonly { readonly Name?: string; readonly Value?: string; readonly IsPrivate?: boolean }[];
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** CreateTrainingTaskRequest.Name's docstring: "不超过60个字符，仅支持中英文、数字、下划线"_"、短横"-"，只能以中英文、数字开头". */
const TASK_NAME = /^[A-Za-z0-9\p{Script=Han}][A-Za-z0-9_\-\p{Script=Han}]*$/u;

/**
 * What the SDK's docstrings say beyond the model's types (each rule names its docstring); the codes are errorcodes.py's.
 * Rules the docstrings give only as examples ("eg：PS、WORKER…") are not enforced.
 */
function checkCreate(b: CreateBody): void {
  const bad = (field: string, why: string, code = "InvalidParameterValue") => new ApiError(code, `The value of parameter \`${field}\` is invalid: ${why}.`);
  const missing = (field: string) => new ApiError("MissingParameter", `The request is missing a required parameter \`${field}\`.`);
  if (!TASK_NAME.test(b.Name) || [...b.Name].length > 60) throw bad("Name", "at most 60 Chinese or English letters, digits, '_' or '-', starting with a letter or digit", "InvalidParameterValue.BadName");
  // ChargeType: "PREPAID 包年包月（资源组）; POSTPAID_BY_HOUR 按量计费".
  if (b.ChargeType !== "PREPAID" && b.ChargeType !== "POSTPAID_BY_HOUR") throw bad("ChargeType", "expected PREPAID or POSTPAID_BY_HOUR");
  if (b.ResourceConfigInfos.length === 0) throw missing("ResourceConfigInfos");
  // ResourceGroupId: "预付费专用资源组ID".
  if (b.ChargeType === "PREPAID" && b.ResourceGroupId === undefined) throw missing("ResourceGroupId");
  b.ResourceConfigInfos.forEach((r, i) => {
    const at = `ResourceConfigInfos[${i}]`;
    if ((r.InstanceNum ?? 1) < 1) throw bad(`${at}.InstanceNum`, "at least 1", "InvalidParameterValue.ResourceConfigIllegal");
    if (b.ChargeType === "PREPAID") {
      // Cpu, Memory, Gpu, GpuType: "使用资源组时需配置" (GpuType only where there are cards to type).
      if (r.Cpu === undefined) throw missing(`${at}.Cpu`);
      if (r.Memory === undefined) throw missing(`${at}.Memory`);
      if (r.Cpu <= 0 || r.Memory <= 0 || (r.Gpu ?? 0) < 0) throw bad(at, "resources must be positive", "InvalidParameterValue.ResourceConfigIllegal");
      if ((r.Gpu ?? 0) > 0 && r.GpuType === undefined) throw missing(`${at}.GpuType`);
    } else if (r.InstanceType === undefined) throw missing(`${at}.InstanceType`); // InstanceType: "算力规格ID … (for后付费)"
  });
  if (b.ImageInfo === undefined && b.FrameworkEnvironment === undefined) throw missing("ImageInfo");
  if (b.FrameworkEnvironment !== undefined) {
    const env = FAKE_FRAMEWORKS.flatMap((f) => f.VersionInfos.map((v) => ({ name: f.Name, ...v }))).find((v) => v.Environment === b.FrameworkEnvironment && v.name === b.FrameworkName);
    if (env === undefined) throw bad("FrameworkEnvironment", `no ${b.FrameworkName ?? "(no FrameworkName)"} environment ${b.FrameworkEnvironment}`, "InvalidParameterValue.FrameworkVersionNotSupport");
    if (b.TrainingMode !== undefined && !(env.TrainingModes as readonly string[]).includes(b.TrainingMode)) throw bad("TrainingMode", `${b.FrameworkEnvironment} supports ${env.TrainingModes.join(", ")}`);
  }
  // ImageType: "TCR…; CCR…，PreSet为平台预置镜像，CUSTOM…" (PRESET, as rlpipe's schema spells it, is accepted too).
  if (b.ImageInfo !== undefined && !["TCR", "CCR", "PreSet", "PRESET", "CUSTOM"].includes(b.ImageInfo.ImageType)) throw bad("ImageInfo.ImageType", "expected TCR, CCR, PreSet or CUSTOM");
  if (b.EncodedStartCmdInfo?.StartCmdInfo !== undefined) {
    // "以base64格式输入，注意转换时需要完整输入{"StartCmd":"","PsStartCmd":"","WorkerStartCmd":""}".
    let decoded: unknown;
    try { decoded = JSON.parse(Buffer.from(b.EncodedStartCmdInfo.StartCmdInfo, "base64").toString("utf8")); } catch { throw bad("EncodedStartCmdInfo.StartCmdInfo", "not base64 of a JSON object"); }
    const keys = decoded !== null && typeof decoded === "object" ? Object.keys(decoded).sort().join(",") : "";
    const strings = keys !== "" && Object.values(decoded as object).every((v) => typeof v === "string");
    if (keys !== "PsStartCmd,StartCmd,WorkerStartCmd" || !strings) throw bad("EncodedStartCmdInfo.StartCmdInfo", 'expected base64 of {"StartCmd":"","PsStartCmd":"","WorkerStartCmd":""}');
  } else if (b.StartCmdInfo === undefined) throw missing("StartCmdInfo");
  // DataConfigs: "数量不超过10个"; COSSource.Paths: "目前只支持单个".
  if ((b.DataConfigs?.length ?? 0) > 10) throw bad("DataConfigs", "at most 10", "InvalidParameterValue.DataConfigNumLimitExceeded");
  b.DataConfigs?.forEach((d, i) => {
    const at = `DataConfigs[${i}]`;
    const type = d.DataSourceType ?? b.DataSource;
    if (!["DATASET", "COS", "CFS", "CFSTurbo", "GooseFSx", "HDFS", "WEDATA_HDFS"].includes(type ?? "")) throw bad(`${at}.DataSourceType`, `unknown type ${type}`);
    if (type === "COS" && (d.COSSource === undefined || d.COSSource.Paths.length !== 1)) throw missing(`${at}.COSSource`);
    if (type === "CFS" && d.CFSSource === undefined) throw missing(`${at}.CFSSource`);
    if (d.MappingPath === undefined || !d.MappingPath.startsWith("/")) throw bad(`${at}.MappingPath`, "an absolute path");
  });
  // TuningParameters: "不超过2048个字符"; Remark: "不超过1024个字符".
  if ((b.TuningParameters?.length ?? 0) > 2048) throw bad("TuningParameters", "at most 2048 characters", "InvalidParameterValue.ParamLengthExceedLimit");
  if ((b.Remark?.length ?? 0) > 1024) throw bad("Remark", "at most 1024 characters", "InvalidParameterValue.ParamLengthExceedLimit");
  if (b.LogEnable === true && b.LogConfig === undefined) throw new ApiError("InvalidParameterValue.ClsConfigRequired", "LogEnable needs LogConfig (LogsetId, TopicId).");
}

interface DescribeTasksParams {
  readonly Filters?: readonly { readonly Name?: string; readonly Values?: readonly string[]; readonly Negative?: boolean; readonly Fuzzy?: boolean }[];
  readonly TagFilters?: readonly { readonly TagKey?: string; readonly TagValues?: readonly string[] }[];
  readonly Offset?: number;
  readonly Limit?: number;
  readonly Order?: string;
  readonly OrderField?: string;
}

interface DescribeLogsParams {
  readonly Service: string;
  readonly ServiceId?: string;
  readonly StartTime?: string;
  readonly EndTime?: string;
  readonly Limit?: number;
  readonly PodName?: string;
  readonly Order?: string;
  readonly OrderField?: string;
  readonly Context?: string;
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
  /** Replies this fake built that depart from the SDK's reply models (answered as InternalError): must stay empty. */
  readonly replyProblems: string[] = [];
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
  /** When set, a create under a name already taken in the workspace is refused with this code (nothing created). */
  refuseTakenNames: NameTakenCode | undefined = undefined;
  /** New tasks stay out of DescribeTrainingTasks for this many listing calls (the listing lags behind creates). */
  listingLag = 0;
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
    this.refuseTakenNames = undefined;
    this.listingLag = 0;
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

  /** A task as if created in the console (for `rlpipe tione inspect`), in the default workspace unless `project`. */
  seedTask(request: Record<string, unknown>, status = "RUNNING", project = ""): FakeTask {
    const t = this.newTask(request, project, "ap-shanghai");
    t.unlistedFor = 0;
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

  private newTask(request: Record<string, unknown>, project: string, region: string): FakeTask {
    const id = `train-${String(1_000_000_000_000_000_000n + BigInt(++this.seq)).slice(1)}`;
    const t: FakeTask = {
      id, request, project, region, createdAtMs: this.now(), unlistedFor: this.listingLag,
      status: "SUBMITTING", script: ["STARTING", "RUNNING", this.outcome], logs: [], ...(this.holdAtRunning ? { holdAt: "RUNNING" } : {}),
    };
    this.tasks.set(id, t);
    return t;
  }

  /** What TI-ONE does with a created task: the COS data configs into the container, then the start command. */
  private async launch(t: FakeTask, b: CreateBody, runner: JobRunner): Promise<void> {
    try {
      for (const d of b.DataConfigs ?? []) {
        const cos = d.COSSource;
        if ((d.DataSourceType ?? b.DataSource) !== "COS" || cos === undefined) continue;
        if (await runner.download(cos.Bucket, cos.Paths[0]!.replace(/^\/+|\/+$/g, ""), runner.mapPath(d.MappingPath!)) === 0) throw new Error(`COS ${cos.Bucket}${cos.Paths[0]} is empty`);
      }
      const enc = b.EncodedStartCmdInfo?.StartCmdInfo;
      const cmd = enc === undefined ? b.StartCmdInfo?.StartCmd ?? "" : (JSON.parse(Buffer.from(enc, "base64").toString("utf8")) as { StartCmd: string }).StartCmd;
      const env = Object.fromEntries((b.Envs ?? []).filter((e) => e.Name !== undefined).map((e) => [e.Name!, e.Value ?? ""]));
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
      Id: t.id, Name: r["Name"], Uin: "100000000001", SubUin: "100000000001", Region: t.region,
      FrameworkName: r["FrameworkName"] ?? null, FrameworkVersion: r["FrameworkVersion"] ?? null, FrameworkEnvironment: r["FrameworkEnvironment"] ?? null,
      ChargeType: r["ChargeType"], ResourceGroupId: r["ResourceGroupId"] ?? null, ResourceConfigInfos: r["ResourceConfigInfos"], Tags: r["Tags"] ?? [],
      TrainingMode: r["TrainingMode"] ?? null, StartCmdInfo: startCmd ?? null, DataSource: r["DataSource"] ?? null, DataConfigs: r["DataConfigs"] ?? null,
      TuningParameters: r["TuningParameters"] ?? null, Output: r["Output"] ?? null, LogEnable: r["LogEnable"] ?? false, LogConfig: r["LogConfig"] ?? null,
      VpcId: r["VpcId"] ?? null, SubnetId: r["SubnetId"] ?? null, ImageInfo: r["ImageInfo"] ?? null,
      RuntimeInSeconds: t.startMs === undefined ? 0 : Math.floor(((t.endMs ?? this.now()) - t.startMs) / 1000),
      CreateTime: rfc(t.createdAtMs), StartTime: t.startMs === undefined ? null : rfc(t.startMs), EndTime: t.endMs === undefined ? null : rfc(t.endMs),
      ChargeStatus: t.status === "RUNNING" ? "BILLING" : "NOT_BILLING", LatestInstanceId: t.instanceId ?? null,
      FailureReason: t.failureReason ?? null, UpdateTime: rfc(this.now()), Message: null, Status: t.status, CallbackUrl: r["CallbackUrl"] ?? null, Remark: r["Remark"] ?? null,
    };
  }

  private listItem(t: FakeTask): Record<string, unknown> {
    const d = this.detail(t);
    const keep = ["Id", "Name", "FrameworkName", "FrameworkVersion", "FrameworkEnvironment", "ChargeType", "ChargeStatus", "ResourceGroupId", "ResourceConfigInfos", "TrainingMode", "Status", "RuntimeInSeconds", "CreateTime", "StartTime", "EndTime", "Output", "FailureReason", "UpdateTime", "ImageInfo", "Message", "Tags", "CallbackUrl"];
    // A private variable's value is not shown (EnvVar.IsPrivate: "是否对外不可见"); Value may be null in replies.
    const envs = ((t.request["Envs"] ?? []) as { Name?: string; Value?: string; IsPrivate?: boolean }[])
      .map((e) => ({ Name: e.Name ?? null, Value: e.IsPrivate === true ? null : e.Value ?? null, ...(e.IsPrivate === undefined ? {} : { IsPrivate: e.IsPrivate }) }));
    return { ...Object.fromEntries(keep.map((k) => [k, d[k]])), Envs: envs };
  }

  // ---------------------------------------------------------------------------------------- actions

  /** The task `id` in the workspace a request names (another workspace's task does not exist for it). */
  private task(id: string, project: string): FakeTask {
    const t = this.tasks.get(id);
    if (t === undefined || t.project !== project) throw new ApiError("ResourceNotFound", `The training task ${id} does not exist.`);
    return t;
  }

  private act(action: string, params: Record<string, unknown>, region: string): Record<string, unknown> {
    if (tioneOperation(action) !== undefined) {
      const refused = checkTioneRequest(action, params);
      if (refused !== undefined) throw new ApiError(refused.code, refused.message);
    }
    const project = typeof params["TiProjectId"] === "string" ? params["TiProjectId"] : "";
    switch (action) {
      case "CreateTrainingTask": {
        const b = params as unknown as CreateBody;
        checkCreate(b);
        if (this.refuseTakenNames !== undefined && this.tasksNamed(b.Name).some((x) => x.project === project)) {
          throw new ApiError(this.refuseTakenNames, `The training task name ${b.Name} is already in use.`);
        }
        const { TiProjectId: _project, ...request } = params;
        const t = this.newTask(request, project, region);
        if (this.runner !== undefined) void this.launch(t, b, this.runner);
        return { Id: t.id };
      }
      case "DescribeTrainingTask": {
        const t = this.task(String(params["Id"]), project);
        this.advance(t);
        return { TrainingTaskDetail: showTags(this.detail(t), this.detailTags) };
      }
      case "DescribeTrainingTasks": return this.describeTasks(params as DescribeTasksParams, project);
      case "DescribeLogs": return this.describeLogs(params as unknown as DescribeLogsParams, project);
      case "StopTrainingTask": {
        const t = this.task(String(params["Id"]), project);
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
        const p = params as unknown as { ChargeType: string; TaskType?: string; ResourceType?: string };
        if (p.ChargeType !== "POSTPAID_BY_HOUR" && p.ChargeType !== "PREPAID") throw new ApiError("InvalidParameterValue", "The value of parameter `ChargeType` is invalid: POSTPAID_BY_HOUR or PREPAID.");
        if (p.TaskType !== undefined && !["", "TRAIN", "NOTEBOOK", "INFERENCE", "EMS"].includes(p.TaskType)) throw new ApiError("InvalidParameterValue", "The value of parameter `TaskType` is invalid.");
        if (p.ResourceType !== undefined && !["", "CALC", "CPU", "GPU", "GPU-SW"].includes(p.ResourceType)) throw new ApiError("InvalidParameterValue", "The value of parameter `ResourceType` is invalid.");
        const specs = this.billingSpecs.filter((x) => x.ChargeType === p.ChargeType && (p.TaskType === undefined || p.TaskType === "" || x.TaskType === p.TaskType) && (p.ResourceType === undefined || p.ResourceType === "" || x.ResourceType === p.ResourceType));
        return { Specs: specs.map((x) => ({ SpecId: `sv_${x.SpecName.toLowerCase()}`, SpecName: x.SpecName, SpecAlias: x.SpecAlias, Available: x.Available, AvailableRegion: [], SpecFeatures: null, SpecType: x.ResourceType, GpuType: x.GpuType ?? null, CategoryId: null })) };
      }
      case "DescribeBillingSpecsPrice": {
        const p = params as unknown as { SpecsParam: { SpecName: string; SpecCount: number }[] };
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

  private describeTasks(p: DescribeTasksParams, project: string): Record<string, unknown> {
    const limit = p.Limit ?? 10;
    // Limit: "默认为10，最大为50".
    if (limit < 1 || limit > 50) throw new ApiError("InvalidParameterValue.PageLimitExceeded", "The value of parameter `Limit` is invalid: 1 to 50.");
    if ((p.Offset ?? 0) < 0) throw new ApiError("InvalidParameterValue", "The value of parameter `Offset` is invalid.");
    // The listing lags behind creates: a new task shows up after `listingLag` listings.
    const all = [...this.tasks.values()].filter((t) => t.project === project);
    let tasks = all.filter((t) => t.unlistedFor === 0);
    for (const t of all) if (t.unlistedFor > 0) t.unlistedFor--;
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

  private describeLogs(p: DescribeLogsParams, project: string): Record<string, unknown> {
    // Service: "枚举值： - TRAIN - NOTEBOOK - INFER - BATCH"; Limit: "默认值100，最大值1000"; OrderField: "可选值为Timestamp".
    if (!["TRAIN", "NOTEBOOK", "INFER", "BATCH"].includes(p.Service)) throw new ApiError("InvalidParameterValue", "The value of parameter `Service` is invalid.");
    const limit = p.Limit ?? 100;
    if (limit < 1 || limit > 1000) throw new ApiError("InvalidParameterValue.PageLimitExceeded", "The value of parameter `Limit` is invalid: 1 to 1000.");
    for (const [k, v] of [["StartTime", p.StartTime], ["EndTime", p.EndTime]] as const) {
      if (v !== undefined && !RFC3339.test(v)) throw new ApiError("InvalidParameterValue", `The value of parameter \`${k}\` is invalid: RFC3339 expected.`);
    }
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
    const task = [...this.tasks.values()].find((t) => t.project === project && t.instanceId !== undefined && t.instanceId === window.sid);
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
      if (params === null || typeof params !== "object" || Array.isArray(params)) throw new ApiError("InvalidParameter", "The body is not a JSON object.");

      const fault = this.faults.get(action)?.shift();
      if (fault !== undefined) record(`fault:${fault}`);
      if (fault === "throttle") { reply({ Error: { Code: "RequestLimitExceeded", Message: "Your request frequency exceeds the limit." } }); return; }
      if (fault === "internal-before") { reply({ Error: { Code: "InternalError", Message: "An internal error occurred." } }); return; }
      if (fault === "reset-before") { req.socket.destroy(); return; }
      if (fault === "refuse-echoing") { reply({ Error: { Code: "InvalidParameterValue", Message: `The value of parameter \`Envs\` is invalid: ${JSON.stringify(params["Envs"] ?? null)}.` } }); return; }
      const result = this.act(action, params, region);
      // The reply is the SDK's reply model: a field the service does not return (an echoed request field) is a fake bug.
      const wrong = checkTioneReply(action, result);
      if (wrong !== undefined) {
        this.replyProblems.push(`${action}: ${wrong.message}`);
        throw new Error(`the fake's ${action} reply departs from the SDK's model: ${wrong.message}`);
      }
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
