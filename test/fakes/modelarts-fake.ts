// A strict loopback fake of the ModelArts training-job API (v2), on 127.0.0.1, port 0. Every request must carry a
// valid SDK-HMAC-SHA256 signature (host signed WITH the port, as Huawei's core SDK signs it; X-Sdk-Date within
// 15 minutes) and the right project id (path and X-Project-Id), or it gets API Gateway's APIGW.0301 and 401.
// Request bodies are checked against huaweicloudsdkmodelarts 3.1.219's own models (issue 33; create: Job, search:
// JobSearches, stop: JobActionType; test/fakes/modelarts-model-check.ts): an unknown field, a missing required one,
// a wrong type or a value outside a documented enum is 400 ModelArts.2788, as are the pairings the SDK's docstrings
// state (code_dir with boot_file, boot_file in code_dir, local_code_dir under /home but not in ModelArts' own
// directories, one way of naming the engine). Beyond that, the documented service errors: 2751 duplicate name, 2763
// unknown flavor, 2793 too many nodes, 2806 custom image without command, 2791 bad OBS path, 2787 bad JSON. Replies
// are the SDK's response models (JobResponse, ListTrainingJobsResponse, …) built from what the service keeps, with
// what it adds (id, create_time, user_name, status, flavor_name, the effective local_code_dir; environments as the
// list the reply model has), never the request echoed; each reply is checked against its model before it is sent.
// Jobs walk a phase sequence, one step per show; log previews grow on every call and hold only the newest
// `previewMaxBytes` bytes; search filters by name and phase; terminate moves a job to Terminating → Terminated.
// Faults can be injected into creates, searches and reads.
import { randomUUID } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { basename } from "node:path";
import { sdkHmacProblem } from "./huawei-verify.js";
import type { JobRunner, RunningJob } from "./job-runner.js";
import { algorithmRuleProblem, modelArtsModelProblem } from "./modelarts-model-check.js";

export type CreateFault = "timeout-after-create" | "5xx-before-create" | "5xx-after-create" | "429" | "reset-before-create" | "reset-after-create";
export const CREATE_FAULTS: readonly CreateFault[] = ["timeout-after-create", "5xx-before-create", "5xx-after-create", "429", "reset-before-create", "reset-after-create"];
/** Search faults: "hide" answers without the matching jobs once (a listing that lags behind creates). */
export type SearchFault = "5xx" | "429" | "reset" | "hide";

export interface FakeFlavor {
  readonly flavor_id: string;
  readonly max_num: number;
  readonly flavor_type?: "CPU" | "GPU" | "Ascend";
  /** What the flavor is billed as (BSS prices the code; one node is unit_num of it). */
  readonly billing?: { readonly code: string; readonly unit_num: number };
}

export interface FakeModelArtsOptions {
  readonly ak: string;
  readonly sk: string;
  /** When set, every request must carry this X-Security-Token (signed). */
  readonly securityToken?: string;
  readonly projectId: string;
  readonly flavors?: readonly FakeFlavor[];
  /** Log preview window (the real one is 5 MB). */
  readonly previewMaxBytes?: number;
  /** The fake's clock, for the 15-minute date check. */
  readonly nowMs?: () => number;
  /**
   * Run created jobs for real: download code_dir from the object store into local_code_dir/<last segment>, run
   * `command` in working_dir with `environments`, upload every output channel's local_dir to its obs_url every
   * period and after the command exits. The job is Running until then, Completed or Failed by the exit code.
   */
  readonly runner?: JobRunner;
}

export interface FakeJob {
  readonly id: string;
  readonly name: string;
  readonly body: Record<string, unknown>;
  readonly createTime: number;
  phases: string[];
  step: number;
  phase: string;
  log: Buffer;
  logCalls: number;
  /** Whether the client received the create reply. */
  acknowledged: boolean;
  exitCode?: number;
  /** The command, when the fake runs jobs (options.runner). */
  run?: RunningJob;
  /** Set when running it could not start (code download failed): the job fails. */
  runError?: string;
}

export interface FakeStats {
  requests: number;
  createAttempts: number;
  creates: number;
  authFailures: number;
  searches: number;
  terminates: number;
  flavorLists: number;
  rejected: { code: string; msg: string }[];
  unknown: string[];
}

// Billing codes as the reference documents their shape (price-modelarts-0005: a flavor maps to a code × unit_num).
const DEFAULT_FLAVORS: readonly FakeFlavor[] = [
  { flavor_id: "modelarts.bm.npu.arm.8snt9b2.d", max_num: 4, flavor_type: "Ascend", billing: { code: "modelarts.bm.npu.arm.8snt9b2.d", unit_num: 1 } },
  { flavor_id: "modelarts.kat1.8xlarge", max_num: 8, flavor_type: "Ascend", billing: { code: "modelarts.kat1.xlarge", unit_num: 8 } },
  { flavor_id: "modelarts.vm.cpu.8u", max_num: 1, flavor_type: "CPU", billing: { code: "modelarts.vm.cpu.8u", unit_num: 1 } },
];
export const SUCCESS_PHASES = ["Creating", "Pending", "Running", "Running", "Completed"];

class Reject extends Error {
  constructor(readonly status: number, readonly code: string, msg: string) { super(msg); }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** Where ModelArts puts code_dir's last segment when a job names no local_code_dir (${MA_JOB_DIR}). */
export const PLATFORM_CODE_DIR = "/home/ma-user/modelarts/user-job-dir";
const OBS_DIR = /^(\/|obs:\/\/)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\/([^\s]*\/)?$/;

export class FakeModelArts {
  readonly jobs = new Map<string, FakeJob>();
  stats: FakeStats = emptyStats();
  readonly createFaults: CreateFault[] = [];
  readonly searchFaults: SearchFault[] = [];
  /** HTTP statuses for the next GETs (show, log preview), e.g. 503. */
  readonly readFaults: number[] = [];
  /** Search answers without `count` and `total` (a listing that does not say how many there are). */
  searchOmitsCounts = false;
  /** Phase sequence of the next created jobs. */
  nextPhases: readonly string[] = SUCCESS_PHASES;
  /** Answer a log preview of a job not yet running with 204 (ModelArts.2776) or 400 ModelArts.2818. */
  logNotReady: "2776" | "2818" = "2776";
  /** Bytes appended to a running job's log per preview call. */
  logChunk: (job: FakeJob, call: number) => string = (job, call) => `[${job.name}] step ${call}: loss=${(1 / (call + 1)).toFixed(4)} 训练 ✓\n`;
  private server: Server | undefined;
  private readonly held = new Set<ServerResponse>();
  private seq = 0;
  private readonly flavors: ReadonlyMap<string, FakeFlavor>;

  constructor(readonly opts: FakeModelArtsOptions) {
    this.flavors = new Map((opts.flavors ?? DEFAULT_FLAVORS).map((f) => [f.flavor_id, f]));
  }

  get endpoint(): string {
    const a = this.server?.address() as AddressInfo | undefined;
    if (a === undefined) throw new Error("fake not started");
    return `http://127.0.0.1:${a.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => { void this.handle(req, res); });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return this;
  }

  async close(): Promise<void> {
    for (const r of this.held) r.destroy();
    this.held.clear();
    const s = this.server;
    if (s === undefined) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Forget jobs, faults and counters (between trials). */
  reset(): void {
    this.jobs.clear();
    this.createFaults.length = 0;
    this.searchFaults.length = 0;
    this.readFaults.length = 0;
    this.stats = emptyStats();
    this.nextPhases = SUCCESS_PHASES;
    this.searchOmitsCounts = false;
  }

  jobsNamed(name: string): FakeJob[] {
    return [...this.jobs.values()].filter((j) => j.name === name);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.stats.requests++;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    try {
      this.verify(req, body);
      await this.route(req, res, body);
    } catch (e) {
      if (e instanceof Reject) {
        this.stats.rejected.push({ code: e.code, msg: e.message });
        send(res, e.status, { error_code: e.code, error_msg: e.message });
        return;
      }
      send(res, 500, { error_code: "ModelArts.0010", error_msg: `Internal error. (${(e as Error).message})` });
    }
  }

  /** SDK-HMAC-SHA256 as API Gateway checks it (test/fakes/huawei-verify.ts). */
  private verify(req: IncomingMessage, body: Buffer): void {
    const why = sdkHmacProblem(req, body, { ak: this.opts.ak, sk: this.opts.sk, securityToken: this.opts.securityToken, nowMs: this.opts.nowMs?.() ?? Date.now() });
    if (why !== undefined) {
      this.stats.authFailures++;
      throw new Reject(401, "APIGW.0301", `Incorrect IAM authentication information: ${why}`);
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const path = (req.url ?? "/").split("?")[0]!;
    const parts = path.split("/").slice(1);
    if (parts[0] !== "v2" || parts.length < 3) return this.unknown(req, res);
    if (parts[1] !== this.opts.projectId) throw new Reject(401, "APIGW.0301", "Incorrect IAM authentication information: the project in the path is not the token's project");
    if (req.headers["x-project-id"] !== this.opts.projectId) throw new Reject(401, "APIGW.0301", "Incorrect IAM authentication information: X-Project-Id does not match the path");
    const rest = parts.slice(2).map((p) => decodeURIComponent(p));
    const m = req.method;
    if (m === "POST" && rest.length === 1 && rest[0] === "training-jobs") return this.create(req, res, body);
    if (m === "POST" && rest.length === 1 && rest[0] === "training-job-searches") return this.search(req, res, body);
    if (m === "GET" && rest.length === 2 && rest[0] === "training-jobs") return this.show(res, rest[1]!);
    if (m === "GET" && rest.length === 1 && rest[0] === "training-job-flavors") return this.flavorList(req, res);
    if (m === "GET" && rest.length === 6 && rest[0] === "training-jobs" && rest[2] === "tasks" && rest[4] === "logs" && rest[5] === "preview") return this.preview(res, rest[1]!, rest[3]!);
    if (m === "POST" && rest.length === 3 && rest[0] === "training-jobs" && rest[2] === "actions") return this.action(res, rest[1]!, body);
    return this.unknown(req, res);
  }

  private unknown(req: IncomingMessage, res: ServerResponse): void {
    this.stats.unknown.push(`${req.method} ${req.url}`);
    send(res, 404, { error_code: "APIGW.0101", error_msg: "The API does not exist or has not been published in the environment" });
  }

  private create(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
    this.stats.createAttempts++;
    const fault = this.createFaults.shift();
    if (fault === "429") { send(res, 429, { error_code: "APIGW.0308", error_msg: "The throttling threshold has been reached" }); return; }
    if (fault === "5xx-before-create") { res.writeHead(503, { "content-type": "text/html" }).end("<html>503 Service Temporarily Unavailable</html>"); return; }
    if (fault === "reset-before-create") { req.socket.destroy(); return; }
    const body = parseJson(raw);
    validateCreate(body, this.flavors);
    const name = (body["metadata"] as Record<string, unknown>)["name"] as string;
    if (this.jobsNamed(name).length > 0) throw new Reject(400, "ModelArts.2751", `Duplicate training job (name ${name}).`);
    const job: FakeJob = {
      id: randomUUID(), name, body, createTime: 1_790_000_000_000 + ++this.seq * 1000,
      phases: [...this.nextPhases], step: 0, phase: "Creating", log: Buffer.alloc(0), logCalls: 0, acknowledged: false,
    };
    this.jobs.set(job.id, job);
    this.stats.creates++;
    if (this.opts.runner !== undefined) void this.launch(job, this.opts.runner);
    if (fault === "timeout-after-create") {
      // Never answered: the client's timeout fires; closed when the client gives up (or at close()).
      this.held.add(res);
      res.on("close", () => this.held.delete(res));
      return;
    }
    if (fault === "reset-after-create") { req.socket.destroy(); return; }
    if (fault === "5xx-after-create") { send(res, 500, { error_code: "ModelArts.0010", error_msg: "Internal error." }); return; }
    res.on("finish", () => { job.acknowledged = true; });
    reply(res, 201, "JobResponse", this.view(job));
  }

  private search(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
    this.stats.searches++;
    const fault = this.searchFaults.shift();
    if (fault === "5xx") { send(res, 502, { error_code: "ModelArts.0010", error_msg: "Internal error." }); return; }
    if (fault === "429") { send(res, 429, { error_code: "ModelArts.2799", error_msg: "TooManyRequests" }); return; }
    if (fault === "reset") { req.socket.destroy(); return; }
    const body = parseJson(raw);
    modelCheck("JobSearches", body);
    // JobSearches.offset "最小为0"; limit "最小为1，最大为50".
    const offset = body["offset"] ?? 0;
    const limit = body["limit"] ?? 10;
    if (!Number.isInteger(offset) || (offset as number) < 0) throw new Reject(400, "ModelArts.2788", "Invalid parameter(offset).");
    if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > 50) throw new Reject(400, "ModelArts.2788", "Invalid parameter(limit).");
    const filters = (body["filters"] ?? []) as Record<string, unknown>[];
    let items = [...this.jobs.values()];
    for (const f of filters) {
      // The fake searches by the keys rlpipe uses; Filter.operator documents between, like, in and not.
      const { key, operator, value } = f as { key?: unknown; operator?: unknown; value?: unknown };
      if (!["name", "phase"].includes(key as string) || !["like", "in", "between", "not"].includes(operator as string) || !Array.isArray(value) || !value.every((v) => typeof v === "string")) {
        throw new Reject(400, "ModelArts.2788", "Invalid parameter(filters).");
      }
      const vals = value as string[];
      const field = (j: FakeJob) => (key === "name" ? j.name : j.phase);
      if (operator === "like") items = items.filter((j) => vals.some((v) => field(j).includes(v)));
      else if (operator === "in") items = items.filter((j) => vals.includes(field(j)));
      else if (operator === "not") items = items.filter((j) => !vals.includes(field(j)));
    }
    if (fault === "hide") items = [];
    items.sort((a, b) => (body["order"] === "asc" ? a.createTime - b.createTime : b.createTime - a.createTime));
    const page = items.slice((offset as number) * (limit as number), ((offset as number) + 1) * (limit as number));
    reply(res, 200, "ListTrainingJobsResponse", { ...(this.searchOmitsCounts ? {} : { total: this.jobs.size, count: items.length }), limit, offset, sort_by: "create_time", order: body["order"] ?? "desc", group_by: "", workspace_id: "0", ai_project: "default-ai-project", items: page.map((j) => this.view(j)) });
  }

  /** GET training-job-flavors[?flavor_type=CPU|GPU|Ascend]: the documented shape, billing included. */
  private flavorList(req: IncomingMessage, res: ServerResponse): void {
    if (this.readFault(res)) return;
    this.stats.flavorLists++;
    const q = new URL(req.url ?? "/", "http://x").searchParams;
    for (const k of q.keys()) if (k !== "flavor_type") throw new Reject(400, "ModelArts.2788", `Invalid parameter(${k}).`);
    const type = q.get("flavor_type");
    if (type !== null && !["CPU", "GPU", "Ascend"].includes(type)) throw new Reject(400, "ModelArts.2788", "Invalid parameter(flavor_type).");
    const flavors = [...this.flavors.values()].filter((f) => type === null || f.flavor_type === type).map((f) => ({
      flavor_id: f.flavor_id, flavor_name: f.flavor_id, flavor_type: f.flavor_type ?? "CPU", max_num: f.max_num,
      ...(f.billing === undefined ? {} : { billing: f.billing }),
      flavor_info: { cpu: { arch: "arm", core_num: 24 }, memory: { size: 192, unit: "GB" } },
    }));
    reply(res, 200, "ShowTrainingJobFlavorsResponse", { total_count: flavors.length, flavors });
  }

  private readFault(res: ServerResponse): boolean {
    const status = this.readFaults.shift();
    if (status === undefined) return false;
    send(res, status, status === 429 ? { error_code: "APIGW.0308", error_msg: "The throttling threshold has been reached" } : { error_code: "ModelArts.0010", error_msg: "Internal error." });
    return true;
  }

  private show(res: ServerResponse, id: string): void {
    if (this.readFault(res)) return;
    const job = this.jobOr2775(id);
    job.phase = job.phases[Math.min(job.step, job.phases.length - 1)]!;
    // A job that really runs is Running until its command has exited and its outputs are uploaded.
    if ((job.run !== undefined || job.runError !== undefined) && !["Creating", "Pending", "Terminating", "Terminated"].includes(job.phase)) {
      job.phase = job.runError !== undefined ? "Failed" : !job.run!.done ? "Running" : job.run!.exitCode === 0 ? "Completed" : "Failed";
      if (job.run?.done === true) job.exitCode = job.run.exitCode;
    }
    job.step++;
    reply(res, 200, "JobResponse", this.view(job));
  }

  /** What ModelArts does with a created job: code_dir into the container, the command, the output channels. */
  private async launch(job: FakeJob, runner: JobRunner): Promise<void> {
    const alg = job.body["algorithm"] as { code_dir: string; local_code_dir?: string; working_dir?: string; command: string; environments?: Record<string, string>; outputs?: { local_dir: string; remote: { obs: { obs_url: string } } }[] };
    const obs = (u: string) => { const m = /^(?:obs:\/\/|\/)([^/]+)\/?(.*?)\/?$/.exec(u)!; return { bucket: m[1]!, prefix: m[2]! }; };
    try {
      const code = obs(alg.code_dir);
      const into = `${(alg.local_code_dir ?? PLATFORM_CODE_DIR).replace(/\/+$/, "")}/${basename(code.prefix)}`;
      if (await runner.download(code.bucket, code.prefix, runner.mapPath(into)) === 0) throw new Error(`code_dir ${alg.code_dir} is empty`);
      const channels = (alg.outputs ?? []).map((o) => ({ localDir: o.local_dir, ...obs(o.remote.obs.obs_url) }));
      job.run = runner.start(alg.command, alg.working_dir ?? into, alg.environments ?? {}, channels);
    } catch (e) {
      job.runError = String(e);
    }
  }

  private preview(res: ServerResponse, id: string, task: string): void {
    if (this.readFault(res)) return;
    const job = this.jobOr2775(id);
    if (!this.tasksOf(job).includes(task)) throw new Reject(400, "ModelArts.2788", `Invalid parameter(task_id ${task}).`);
    if (job.phase === "Creating" || job.phase === "Pending") {
      if (this.logNotReady === "2776") { res.writeHead(204).end(); return; }
      throw new Reject(400, "ModelArts.2818", "the log file is not generated");
    }
    if (job.run !== undefined) job.log = Buffer.from(job.run.output, "utf8");
    else if (!isTerminalPhase(job.phase)) job.log = Buffer.concat([job.log, Buffer.from(this.logChunk(job, job.logCalls++), "utf8")]);
    const max = this.opts.previewMaxBytes ?? 5 * 1024 * 1024;
    let start = Math.max(0, job.log.length - max);
    while (start < job.log.length && (job.log[start]! & 0xc0) === 0x80) start++; // not inside a UTF-8 character
    const content = job.log.subarray(start);
    reply(res, 200, "ShowTrainingJobLogsPreviewResponse", { content: content.toString("utf8"), current_size: content.length, full_size: job.log.length });
  }

  private action(res: ServerResponse, id: string, raw: Buffer): void {
    const body = parseJson(raw);
    modelCheck("JobActionType", body);
    // JobActionType.action_type: "参数值设置为terminate时，表示终止训练作业操作" (the only action documented).
    if (body["action_type"] !== "terminate") throw invalid("action_type");
    const job = this.jobOr2775(id);
    this.stats.terminates++;
    if (!["Creating", "Pending", "Running"].includes(job.phase)) throw new Reject(409, "ModelArts.2796", "The job cannot be terminated.");
    job.phases = ["Terminating", "Terminated"];
    job.run?.kill();
    delete job.run;
    job.step = 0;
    job.phase = "Terminating";
    reply(res, 202, "JobResponse", this.view(job));
  }

  private jobOr2775(id: string): FakeJob {
    const job = this.jobs.get(id);
    if (job === undefined) throw new Reject(400, "ModelArts.2775", `Training job (ID: ${id}) not found.`);
    return job;
  }

  private tasksOf(job: FakeJob): string[] {
    const spec = job.body["spec"] as { resource: { node_count?: number } };
    return Array.from({ length: spec.resource.node_count ?? 1 }, (_, i) => `worker-${i}`);
  }

  /**
   * The job as ModelArts answers it (JobResponse): what the service keeps of the create, in the reply models' shapes,
   * with what it adds (JobMetadataResponse id, create_time and user_name "创建成功后由ModelArts生成返回"; Status).
   */
  private view(job: FakeJob): Record<string, unknown> {
    const started = job.phase !== "Creating" && job.phase !== "Pending";
    const failed = job.phase === "Failed" || job.phase === "Abnormal";
    const ended = isTerminalPhase(job.phase);
    const md = job.body["metadata"] as Record<string, unknown>;
    return {
      kind: job.body["kind"] ?? "job",
      metadata: {
        id: job.id, name: job.name, description: md["description"] ?? "", ...(isObj(md["annotations"]) ? { annotations: { ...md["annotations"] } } : {}),
        create_time: job.createTime, workspace_id: md["workspace_id"] ?? "0", user_name: "fake",
      },
      status: {
        phase: job.phase,
        // Status.secondary_phase documents Creating, Queuing, Running, Failed, Completed, Terminating, Terminated, …
        secondary_phase: job.phase === "Pending" ? "Queuing" : job.phase === "Abnormal" ? "Unknown" : job.phase,
        duration: started ? (ended ? 3_600_000 : 60_000) : 0,
        ...(started ? { start_time: job.createTime + 30_000 } : {}),
        tasks: started ? this.tasksOf(job) : [],
        task_statuses: ended ? this.tasksOf(job).map((task) => ({ task, exit_code: job.exitCode ?? (failed ? 137 : job.phase === "Terminated" ? 143 : 0), message: failed ? job.runError ?? (job.run === undefined ? "Process exited abnormally: NPU out of memory" : `Process exited with code ${job.exitCode}`) : "" })) : [],
      },
      algorithm: algorithmView(job.body["algorithm"] as Record<string, unknown>),
      spec: specView(job.body["spec"] as Record<string, unknown>, this.flavors),
    };
  }

}

function isTerminalPhase(phase: string): boolean {
  return ["Completed", "Failed", "Terminated", "Abnormal"].includes(phase);
}

function emptyStats(): FakeStats {
  return { requests: 0, createAttempts: 0, creates: 0, authFailures: 0, searches: 0, terminates: 0, flavorLists: 0, rejected: [], unknown: [] };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

function parseJson(raw: Buffer): Record<string, unknown> {
  let v: unknown;
  try { v = JSON.parse(raw.toString("utf8")); } catch { throw new Reject(400, "ModelArts.2787", "Invalid JSON request body."); }
  if (!isObj(v)) throw new Reject(400, "ModelArts.2787", "Invalid JSON request body.");
  return v;
}

/** Copy the named fields that are set: a reply is built field by field, never the request passed through. */
function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined && o[k] !== null).map((k) => [k, o[k]]));
}

/** JobAlgorithmResponse: environments as the reply model's list of maps, the local code dir in effect, channels re-made. */
function algorithmView(alg: Record<string, unknown>): Record<string, unknown> {
  const engine = alg["engine"];
  const envs = alg["environments"];
  const channel = (c: Record<string, unknown>) => {
    const obs = isObj(c["remote"]) && isObj(c["remote"]["obs"]) ? c["remote"]["obs"] : undefined;
    return { ...pick(c, ["name", "description", "local_dir", "access_method"]), remote: obs === undefined ? {} : { obs: { obs_url: obs["obs_url"] } } };
  };
  const list = (v: unknown) => (Array.isArray(v) ? v.filter(isObj).map(channel) : undefined);
  const inputs = list(alg["inputs"]);
  const outputs = list(alg["outputs"]);
  return {
    ...pick(alg, ["id", "name", "subscription_id", "item_version_id", "code_dir", "boot_file", "command", "working_dir", "autosearch_config_path", "autosearch_framework_path"]),
    // Where code_dir went: the request's local_code_dir, else the platform's directory.
    ...(alg["code_dir"] === undefined ? {} : { local_code_dir: alg["local_code_dir"] ?? PLATFORM_CODE_DIR }),
    ...(isObj(engine) ? { engine: pick(engine, ["engine_id", "engine_name", "engine_version", "image_url", "image_repo_id", "install_sys_packages"]) } : {}),
    ...(isObj(envs) ? { environments: Object.entries(envs).map(([k, v]) => ({ [k]: v })) } : {}),
    ...(inputs === undefined ? {} : { inputs }),
    ...(outputs === undefined ? {} : { outputs }),
  };
}

/** SpecResponse: the resource with the flavor's read-only name ModelArts returns; SpecResponse has no auto_stop. */
function specView(spec: Record<string, unknown>, flavors: ReadonlyMap<string, FakeFlavor>): Record<string, unknown> {
  const r = spec["resource"] as Record<string, unknown>;
  const lep = spec["log_export_path"];
  return {
    resource: { ...pick(r, ["flavor_id", "node_count", "pool_id"]), flavor_name: flavors.get(r["flavor_id"] as string)?.flavor_id ?? "", node_count: r["node_count"] ?? 1, policy: "regular" },
    ...(isObj(lep) ? { log_export_path: pick(lep, ["obs_url", "host_path"]) } : {}),
  };
}

/** Send a reply after checking it against its SDK response model: a fake that answers off-model is a bug (500). */
function reply(res: ServerResponse, status: number, model: string, body: Record<string, unknown>): void {
  const p = modelArtsModelProblem(model, body);
  if (p !== undefined) throw new Error(`the fake's reply is not a ${model}: ${p.message}`);
  send(res, status, body);
}

const invalid = (what: string, reason?: string) => new Reject(400, "ModelArts.2788", `Invalid parameter(${what})${reason === undefined ? "" : `, reason: ${reason}`}.`);

/** A body against its SDK request model: unknown field, missing required field, wrong type or enum → ModelArts.2788. */
function modelCheck(model: string, body: Record<string, unknown>): void {
  const p = modelArtsModelProblem(model, body);
  if (p !== undefined) throw invalid(p.field || "body", `${p.kind}: ${p.message}`);
}

function obsDir(v: unknown, what: string): void {
  if (typeof v !== "string" || !OBS_DIR.test(v)) throw new Reject(400, "ModelArts.2791", `Invalid obs path: ${String(v)}, reason: ${what} must be an OBS directory (/bucket/dir/ or obs://bucket/dir/).`);
}

function absolute(v: unknown, what: string): void {
  if (typeof v !== "string" || !v.startsWith("/")) throw invalid(what);
}

/** Input/Output channels (types already checked against Input/Output): unique names, absolute local dirs, OBS dirs. */
function channels(v: unknown, what: string): void {
  if (v === undefined || v === null) return;
  const names = new Set<string>();
  (v as Record<string, unknown>[]).forEach((c, i) => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(c["name"] as string) || names.has(c["name"] as string)) throw invalid(`${what}[${i}].name`);
    names.add(c["name"] as string);
    absolute(c["local_dir"], `${what}[${i}].local_dir`);
    const remote = c["remote"] as Record<string, unknown>;
    if (!isObj(remote["obs"])) throw invalid(`${what}[${i}].remote.obs`);
    obsDir(remote["obs"]["obs_url"], `${what}[${i}].remote.obs.obs_url`);
  });
}

/**
 * A CreateTrainingJob body: first the SDK's Job model and the pairings its docstrings state, then the service's own
 * documented rules this project relies on, with their documented error codes.
 */
function validateCreate(body: Record<string, unknown>, flavors: ReadonlyMap<string, FakeFlavor>): void {
  modelCheck("Job", body);
  // The fake runs plain training jobs (Job.kind "job"); the other kinds need what it does not model (pool groups, …).
  if (body["kind"] !== "job") throw invalid("kind", "this fake runs only kind job");
  const md = body["metadata"] as Record<string, unknown>;
  // JobMetadata.name: "限制为1-64位只含数字、字母、下划线和中划线的名称"; description: "字符串的长度限制为[0, 256]".
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(md["name"] as string)) throw invalid("metadata.name");
  if (typeof md["description"] === "string" && md["description"].length > 256) throw invalid("metadata.description");

  const alg = body["algorithm"];
  if (!isObj(alg)) throw invalid("algorithm", "a training job needs an algorithm");
  const rule = algorithmRuleProblem(alg);
  if (rule !== undefined) throw invalid(rule.field, rule.message);
  const engine = isObj(alg["engine"]) ? alg["engine"] : undefined;
  const image = engine?.["image_url"];
  const presetEngine = engine !== undefined && (engine["engine_name"] !== undefined || engine["engine_id"] !== undefined);
  // JobAlgorithm.command: "自定义镜像场景下，训练作业的自定义镜像的容器的启动命令".
  if ((image !== undefined && (image === "" || typeof alg["command"] !== "string" || alg["command"] === "")) || (alg["command"] !== undefined && image === undefined && !presetEngine)) {
    throw new Reject(400, "ModelArts.2806", "Custom image jobs command and engine.url cannot be empty.");
  }
  if (alg["id"] === undefined && alg["subscription_id"] === undefined && alg["boot_file"] === undefined && image === undefined) {
    throw invalid("algorithm", "one of id, subscription_id+item_version_id, code_dir+boot_file or engine.image_url+command");
  }
  if (alg["id"] !== undefined && alg["subscription_id"] !== undefined) throw invalid("algorithm.subscription_id", "an algorithm is an id or a subscription, not both");
  if (alg["code_dir"] !== undefined) obsDir(alg["code_dir"], "algorithm.code_dir");
  if (alg["working_dir"] !== undefined) absolute(alg["working_dir"], "algorithm.working_dir");
  const envs = alg["environments"] as Record<string, string> | undefined;
  if (envs !== undefined) {
    // environments: "key最大允许填写8192字符，value最大允许填写4096字符，最多允许100对环境变量 … 不支持使用符号 $ 引用变量".
    if (Object.keys(envs).length > 100) throw invalid("algorithm.environments");
    for (const [k, v] of Object.entries(envs)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) || k.length > 8192 || v.length > 4096 || v.includes("$")) throw invalid(`algorithm.environments.${k}`);
    }
  }
  channels(alg["inputs"], "algorithm.inputs");
  channels(alg["outputs"], "algorithm.outputs");

  const spec = body["spec"];
  if (!isObj(spec) || !isObj(spec["resource"])) throw invalid("spec.resource", "a training job needs resources");
  const r = spec["resource"];
  if (typeof r["flavor_id"] !== "string" || r["flavor_id"] === "") throw invalid("spec.resource.flavor_id");
  const flavor = flavors.get(r["flavor_id"]);
  if (flavor === undefined) throw new Reject(400, "ModelArts.2763", "The selected flavor is invalid.");
  const nodes = r["node_count"] as number;
  if (nodes < 1) throw invalid("spec.resource.node_count");
  if (nodes > flavor.max_num) throw new Reject(400, "ModelArts.2793", `The number of flavor instances (${String(nodes)}) exceeds the maximum (${flavor.max_num}).`);
  if (r["pool_id"] === "") throw invalid("spec.resource.pool_id");
  const lep = spec["log_export_path"];
  if (isObj(lep) && lep["obs_url"] !== undefined) obsDir(lep["obs_url"], "spec.log_export_path.obs_url");
  const as = spec["auto_stop"];
  // AutoStop.duration: "运行时长，最小值为1"; time_unit as the API page's example writes it.
  if (isObj(as) && (as["time_unit"] !== "HOURS" || (as["duration"] as number) < 1)) throw invalid("spec.auto_stop");
}
