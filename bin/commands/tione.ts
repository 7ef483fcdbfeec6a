// rlpipe tione inspect <task-id>: read back a task created once in the TI-ONE console (DescribeTrainingTask, its
// Envs from DescribeTrainingTasks, and DescribeTrainingFrameworks) and print the fields the public API does not
// document — TrainingMode, roles, Cpu/Memory/Gpu/GpuType, image or framework, TuningParameters, the start
// command, data configs — as a targets.tione snippet to paste into the recipe. Everything printed is redacted.
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { loadRecipeFile } from "../../core/recipe/load.js";
import { Redactor } from "../../core/redact.js";
import { type TaskDetail, TioneApi } from "../../adapters/providers/tione.js";
import { COMMANDS, formatHelp } from "../help.js";
import { type Io, reportError, wantsJson } from "../io.js";
import { usage } from "./plan.js";

const SECRET_NAME = /(^|_)(API_?KEY|SECRET(_ACCESS)?_KEY|SECRET|TOKEN|PASSWORD|PASSWD|SK|AK|SECRET_ID|CREDENTIALS?)$/i;

interface ResourceInfo { Role?: string; Cpu?: number | null; Memory?: number | null; Gpu?: number | null; GpuType?: string | null; InstanceType?: string | null; InstanceNum?: number | null; RDMAConfig?: { Enable?: boolean | null } | null }
interface DataConfigInfo { MappingPath?: string | null; DataSourceType?: string | null; CFSSource?: { Id?: string; Path?: string } | null; COSSource?: { Bucket?: string; Region?: string; Paths?: string[] } | null }
/** An Envs item of DescribeTrainingTasks (EnvVar): Name and Value may be null; a private one comes without its value. */
interface ListedEnv { Name?: string | null; Value?: string | null; IsPrivate?: boolean | null }
/** What the snippet shows for a private Env: never its value. */
export const PRIVATE_VALUE = "(private)";
interface FrameworkInfo { Name?: string; VersionInfos?: { Version?: string; TrainingModes?: string[]; Environment?: string }[] }

export interface InspectResult {
  /** The snippet's object: paste under targets.tione. */
  readonly tione: Record<string, unknown>;
  /** Lines printed as YAML comments (what has no recipe field, or needs a decision). */
  readonly notes: readonly string[];
}

const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== ""));

function nodesOf(r: ResourceInfo): Record<string, unknown> {
  return defined({
    role: r.Role, count: r.InstanceNum ?? 1, cpuMilli: r.Cpu ?? undefined, memoryMB: r.Memory ?? undefined,
    gpuCenti: r.Gpu ?? undefined, gpuType: r.GpuType ?? undefined, instanceType: r.InstanceType ?? undefined,
    rdma: r.RDMAConfig?.Enable ?? undefined,
  });
}

function cosUri(p: { Bucket?: string; Paths?: string[] } | null | undefined): string | undefined {
  if (p?.Bucket === undefined) return undefined;
  const path = (p.Paths?.[0] ?? "").replace(/^\/+|\/+$/g, "");
  return `cos://${p.Bucket}${path === "" ? "" : `/${path}`}`;
}

/** Pure: a task's details as the recipe's targets.tione fields. */
export function inspectSnippet(d: TaskDetail, frameworks: readonly FrameworkInfo[], envs: readonly ListedEnv[]): InspectResult {
  const notes: string[] = [];
  const mode = typeof d.TrainingMode === "string" && /ray/i.test(d.TrainingMode) ? "ray" : "custom";
  const infos = (d["ResourceConfigInfos"] as ResourceInfo[] | null | undefined) ?? [];
  // The GPU role is the worker; in Ray mode the other role is the head.
  const worker = infos.find((r) => (r.Gpu ?? 0) > 0) ?? infos.find((r) => r.Role === "WORKER") ?? infos[infos.length - 1];
  const head = mode === "ray" ? infos.find((r) => r !== worker) : undefined;
  for (const r of infos.filter((x) => x !== worker && x !== head)) notes.push(`another role has no recipe field: ${JSON.stringify(r)}`);
  const fwName = d["FrameworkName"] as string | null | undefined;
  const fwEnv = d["FrameworkEnvironment"] as string | null | undefined;
  const fwVersion = d["FrameworkVersion"] as string | null | undefined;
  const imageInfo = d["ImageInfo"] as { ImageType?: string; ImageUrl?: string; RegistryRegion?: string | null; RegistryId?: string | null } | null | undefined;
  const image = fwEnv
    ? defined({ builtin: fwEnv, framework: fwName ?? undefined, frameworkVersion: fwVersion ?? undefined })
    : imageInfo?.ImageUrl
      ? defined({ url: imageInfo.ImageUrl, imageType: imageInfo.ImageType, registryRegion: imageInfo.RegistryRegion ?? undefined, registryId: imageInfo.RegistryId ?? undefined })
      : undefined;
  const dataConfigs = (d["DataConfigs"] as DataConfigInfo[] | null | undefined) ?? [];
  const cfs = dataConfigs.find((c) => c.DataSourceType === "CFS" && c.CFSSource?.Id !== undefined);
  for (const c of dataConfigs.filter((x) => x !== cfs)) notes.push(`data config ${c.MappingPath ?? "?"}: ${JSON.stringify(defined({ DataSourceType: c.DataSourceType, COSSource: c.COSSource, CFSSource: c.CFSSource }))}`);
  const start = d["StartCmdInfo"] as { StartCmd?: string; PsStartCmd?: string; WorkerStartCmd?: string } | null | undefined;
  for (const [k, v] of Object.entries(start ?? {})) if (typeof v === "string" && v !== "") notes.push(`the console's ${k}: ${v} (rlpipe starts its launch bundle instead; set startCmd only to replace that)`);
  const log = d["LogConfig"] as { LogsetId?: string; TopicId?: string } | null | undefined;
  const envMap: Record<string, string> = {};
  for (const e of envs) {
    if (!e.Name) continue;
    // A private Env is listed with a null Value (EnvVar.IsPrivate: "是否对外不可见"): a secret, whatever its name or value.
    if (e.IsPrivate === true) {
      envMap[e.Name] = PRIVATE_VALUE;
      notes.push(`${e.Name} is private (IsPrivate): declare it under secrets: instead of envs: (rlpipe sends secrets as private Envs)`);
    } else if (SECRET_NAME.test(e.Name)) {
      envMap[e.Name] = "***";
      notes.push(`${e.Name} looks like a secret: declare it under secrets: instead of envs:`);
    } else envMap[e.Name] = e.Value ?? "";
  }
  const matching = frameworks.flatMap((f) => (f.VersionInfos ?? []).map((v) => ({ name: f.Name, ...v }))).filter((v) => fwEnv === undefined || fwEnv === null || v.Environment === fwEnv);
  for (const v of matching) notes.push(`DescribeTrainingFrameworks: ${v.name} ${v.Version ?? "?"} ${v.Environment ?? "?"} training modes: ${(v.TrainingModes ?? []).join(", ")}`);
  const tuning = d["TuningParameters"] as string | null | undefined;
  if (tuning) notes.push("TuningParameters may hold the console's RuntimeEnv: compare it with targets.tione.runtimeEnv");
  const tione = defined({
    mode,
    trainingMode: d.TrainingMode ?? undefined,
    chargeType: d["ChargeType"] ?? undefined,
    resourceGroupId: d["ResourceGroupId"] ?? undefined,
    image,
    head: head === undefined ? undefined : nodesOf(head),
    worker: worker === undefined ? undefined : nodesOf(worker),
    storage: cfs === undefined ? undefined : defined({ cfs: `${cfs.CFSSource!.Id}:${cfs.CFSSource!.Path ?? "/"}`, mountPath: cfs.MappingPath ?? undefined }),
    envs: Object.keys(envMap).length === 0 ? undefined : envMap,
    output: cosUri(d["Output"] as { Bucket?: string; Paths?: string[] } | null | undefined),
    logConfig: log?.LogsetId === undefined ? undefined : { logsetId: log.LogsetId, topicId: log.TopicId },
    tuningParameters: tuning ?? undefined,
    vpcId: d["VpcId"] ?? undefined,
    subnetId: d["SubnetId"] ?? undefined,
    region: d.Region ?? undefined,
  });
  return { tione, notes };
}

export async function runTione(args: readonly string[], io: Io, env: Readonly<Record<string, string | undefined>> = process.env): Promise<number> {
  const redactor = new Redactor(env, ["TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN"]);
  const out: Io = { out: (t) => io.out(redactor.redact(t)), err: (t) => io.err(redactor.redact(t)) };
  try {
    const { values, positionals } = parseArgs({
      args: [...args], allowPositionals: true, strict: true,
      options: COMMANDS.tione.options,
    });
    if (values.help) { out.out(formatHelp("tione")); return 0; }
    const [sub, id, ...extra] = positionals;
    if (sub !== "inspect") throw usage(sub === undefined ? "rlpipe tione needs a subcommand: inspect <task-id>" : `unknown tione subcommand ${JSON.stringify(sub)} (known: inspect)`);
    if (id === undefined || extra.length > 0) throw usage("rlpipe tione inspect takes exactly one task id (train-…)");
    const target = values.recipe === undefined ? undefined : loadRecipeFile(values.recipe).recipe.targets?.tione;
    const region = values.region ?? target?.region ?? (env["TENCENTCLOUD_REGION"] || undefined);
    if (region === undefined) throw usage("no region: pass --region (e.g. ap-shanghai), --recipe with targets.tione.region, or set TENCENTCLOUD_REGION");
    const endpoint = values.endpoint ?? target?.endpoint;
    // The recipe's workspace wins over TENCENTCLOUD_TIONE_PROJECT_ID (which TioneApi reads when none is given).
    const projectId = target?.tiProjectId;
    const api = new TioneApi({ env, region, ...(endpoint === undefined ? {} : { endpoint }), ...(projectId === undefined ? {} : { projectId }) });
    try {
      const { TrainingTaskDetail: d } = await api.call<{ TrainingTaskDetail?: TaskDetail }>("DescribeTrainingTask", { Id: id });
      if (d === undefined) throw usage(`TI-ONE returned no task ${id}`);
      const listed = await api.call<{ TrainingTaskSet?: { Id?: string; Envs?: ListedEnv[] | null }[] | null }>("DescribeTrainingTasks", { Filters: [{ Name: "Id", Values: [id] }], Limit: 1 });
      const envs = listed.TrainingTaskSet?.find((t) => t.Id === id)?.Envs ?? [];
      let frameworks: FrameworkInfo[] = [];
      let frameworkNote: string | undefined;
      try {
        frameworks = (await api.callCommon<{ FrameworkInfos?: FrameworkInfo[] | null }>("DescribeTrainingFrameworks", {})).FrameworkInfos ?? [];
      } catch (e) {
        frameworkNote = `DescribeTrainingFrameworks failed: ${e instanceof Error ? e.message : String(e)}`;
      }
      const r = inspectSnippet(d, frameworks, envs);
      const notes = frameworkNote === undefined ? r.notes : [...r.notes, frameworkNote];
      if (values.json) {
        out.out(JSON.stringify({ task: d, frameworks, targets: { tione: r.tione }, notes }, null, 2));
        return 0;
      }
      out.out(`# TI-ONE task ${id} (${d.Name ?? "?"}, ${d.Status ?? "?"}) in ${region}: paste under the recipe's targets.`);
      out.out(stringify({ targets: { tione: r.tione } }, { lineWidth: 0 }).trimEnd());
      for (const n of notes) out.out(`# ${n}`);
      return 0;
    } finally {
      api.close();
    }
  } catch (e) {
    return reportError(out, e, { json: wantsJson(args), command: "tione" });
  }
}
