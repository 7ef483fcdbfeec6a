// The Slurm request: a complete sbatch script that runs the launch bundle from a content-addressed directory on
// the cluster's shared filesystem, plus the facts the adapter needs (where the bundle and the output go). Pure.
import { z } from "zod";
import type { RecipeIssue, RecipePath } from "../errors.js";
import { shellQuote } from "../render/shell.js";
import type { Targets } from "../recipe/schema.js";
import type { ProviderRequest, RequestBuilder, RequestInput, UnverifiedField } from "./request.js";

/** What plan.request.body holds for provider slurm (the adapter parses it back with this schema). */
export const SlurmRequestBody = z.strictObject({
  jobName: z.string().min(1),
  /** The batch script, #SBATCH directives included. */
  script: z.string().min(1),
  /** The #SBATCH options of the script, in order. */
  options: z.array(z.string()),
  /** Absolute, content-addressed: <bundleDir parent>/<bundle digest 12>. */
  bundleDir: z.string().startsWith("/"),
  /** Where prepare() puts the script (in the bundle directory, named after the job). */
  scriptPath: z.string().startsWith("/"),
  /** The --output pattern; %j is the job id. */
  output: z.string().startsWith("/"),
});
export type SlurmRequestBody = z.infer<typeof SlurmRequestBody>;

/** The job's output file for a job id. */
export function slurmOutputFile(body: Pick<SlurmRequestBody, "output">, jobId: string): string {
  return body.output.replace("%j", jobId);
}

// Values land on #SBATCH lines, which sbatch splits itself (not a shell): keep them to one unquoted word.
const WORD = /^[A-Za-z0-9_.,:+=@\/-]+$/;
const NAME_LIST = /^[A-Za-z0-9_.,+-]+$/;
// sbatch time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or UNLIMITED/infinite.
const TIME = /^(\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|unlimited|infinite|INFINITE)$/;
// sbatch --output/--chdir paths: no whitespace, quotes, backslashes or % (a filename pattern character).
const PATH = /^\/[A-Za-z0-9_.,:+=@\/-]*$/;
const EXTRA = /^--?[A-Za-z][A-Za-z0-9-]*(=[^\s"'\\]+)?$/;
// Options rlpipe writes itself: changing them would break the name lookup, the output file or the node roles.
const OWN_OPTIONS: Readonly<Record<string, string>> = {
  "job-name": "--job-name", J: "--job-name", nodes: "--nodes", N: "--nodes", "ntasks-per-node": "--ntasks-per-node",
  output: "--output", o: "--output", error: "--error", e: "--error", chdir: "--chdir", D: "--chdir",
  "open-mode": "--open-mode", array: "--array", a: "--array", parsable: "--parsable",
};

const TARGET = ["targets", "slurm"] as const;

export const buildSlurmRequest: RequestBuilder = (input: RequestInput, issues: RecipeIssue[]): ProviderRequest => {
  const t: NonNullable<Targets["slurm"]> = input.recipe.targets?.slurm ?? {};
  const nodes = input.resources.nodes;
  const err = (path: RecipePath, code: string, message: string, hint?: string) =>
    issues.push({ severity: "error", code, path, message, ...(hint === undefined ? {} : { hint }) });
  const check = (value: string | undefined, re: RegExp, field: string, what: string): string | undefined => {
    if (value !== undefined && !re.test(value)) err([...TARGET, field], "invalid_sbatch_value", `${what} ${JSON.stringify(value)} cannot be written on an #SBATCH line`, "use one word without spaces, quotes or %");
    return value;
  };

  const parent = (t.bundleDir ?? `${input.workDir}/.rlpipe/bundles`).replace(/\/+$/, "");
  if (!PATH.test(parent)) {
    err(t.bundleDir === undefined ? ["targets", "slurm", "workDir"] : [...TARGET, "bundleDir"], "invalid_sbatch_path",
      `the bundle directory ${JSON.stringify(parent)} must be an absolute path without spaces, quotes or %`,
      "sbatch reads --output and --chdir from #SBATCH lines; set targets.slurm.bundleDir to a plain path");
  }
  if (t.login !== undefined && (t.login.startsWith("-") || /\s/.test(t.login))) {
    err([...TARGET, "login"], "invalid_login", `the ssh destination ${JSON.stringify(t.login)} must not start with '-' or contain spaces`, "write it as host, user@host or an ssh config alias");
  }
  const bundleDir = `${parent}/${input.bundleDigest.slice(0, 12)}`;
  const output = `${bundleDir}/slurm-%j.out`;

  const options = [
    `--job-name=${input.jobName}`,
    `--nodes=${nodes}`,
    "--ntasks-per-node=1",
    `--output=${output}`,
    // A requeued job appends to its output instead of truncating it, so a log cursor (a byte offset) stays valid.
    "--open-mode=append",
    `--chdir=${bundleDir}`,
  ];
  const partition = check(t.partition, NAME_LIST, "partition", "partition");
  if (partition !== undefined) options.push(`--partition=${partition}`);
  const account = check(t.account, NAME_LIST, "account", "account");
  if (account !== undefined) options.push(`--account=${account}`);
  const qos = check(t.qos, NAME_LIST, "qos", "QOS");
  if (qos !== undefined) options.push(`--qos=${qos}`);
  const time = check(t.timeLimit, TIME, "timeLimit", "time limit");
  if (time !== undefined) options.push(`--time=${time}`);
  if (t.cpusPerTask !== undefined) options.push(`--cpus-per-task=${t.cpusPerTask}`);
  const gres = check(t.gresPerNode, WORD, "gresPerNode", "GRES");
  if (gres !== undefined) options.push(`--gres=${gres}`);
  else if (input.resources.accelerator === "nvidia-gpu") options.push(`--gpus-per-node=${input.resources.devicesPerNode}`);
  else if (input.resources.accelerator === "ascend-npu") {
    issues.push({
      severity: "warning", code: "slurm_npu_gres", path: [...TARGET, "gresPerNode"],
      message: `the job requests no NPUs: Slurm sites name Ascend devices differently`,
      hint: `set targets.slurm.gresPerNode to your site's GRES, e.g. npu:${input.resources.devicesPerNode}`,
    });
  }
  // Each node runs one task, and Slurm gives a task one CPU unless told otherwise: too few for a trainer.
  const cpuOption = /^--(exclusive|cpus-per-gpu|mincpus|cpus-per-task)\b/;
  if (input.resources.accelerator !== "cpu" && t.cpusPerTask === undefined && !(t.extraSbatch ?? []).some((o) => cpuOption.test(o))) {
    issues.push({
      severity: "warning", code: "slurm_one_cpu", path: [...TARGET, "cpusPerTask"],
      message: "no CPU count is set: Slurm gives each node's one task a single CPU by default",
      hint: "set targets.slurm.cpusPerTask (e.g. the node's core count) or add --exclusive to targets.slurm.extraSbatch",
    });
  }
  (t.extraSbatch ?? []).forEach((opt, i) => {
    const path = [...TARGET, "extraSbatch", i];
    if (!EXTRA.test(opt)) { err(path, "invalid_sbatch_option", `${JSON.stringify(opt)} is not one sbatch option in --name=value form`, "write e.g. --mem=0 or --exclusive, one option per item"); return; }
    const name = opt.replace(/^--?/, "").split("=")[0]!;
    const own = OWN_OPTIONS[name];
    if (own !== undefined) { err(path, "sbatch_option_reserved", `rlpipe sets ${own} itself`, "remove it; use the recipe's resources and targets.slurm fields instead"); return; }
    options.push(opt);
  });
  const unverified: UnverifiedField[] = [];
  if (nodes > 1) {
    unverified.push({
      path: "script", value: "srun launch.sh on every node (rank = SLURM_NODEID, head = first host of the allocation)",
      why: "the multi-node start-up has run on a two-node test cluster whose nodes share one host (two slurmd), not yet across hosts (the head's address as other hosts see it, a shared workDir)",
    });
  }

  const script = renderScript(input, options, bundleDir);
  const body: SlurmRequestBody = { jobName: input.jobName, script, options, bundleDir, scriptPath: `${bundleDir}/${input.jobName}.sbatch`, output };
  return { provider: "slurm", api: "sbatch", body, bundle: { to: bundleDir, mountedAt: bundleDir }, unverified };
};

function renderScript(input: RequestInput, options: readonly string[], bundleDir: string): string {
  const nodes = input.resources.nodes;
  const L: string[] = ["#!/bin/bash", ...options.map((o) => `#SBATCH ${o}`)];
  L.push(`# Generated by rlpipe for recipe ${input.recipe.metadata.name}: runs the launch bundle in ${bundleDir}.`);
  if (input.secretEnvs.length > 0) {
    L.push(`# Secrets (${input.secretEnvs.join(", ")}) come from the submitting environment, which sbatch exports by default; never from this file.`);
  }
  // RLPIPE_RUN names the run's outputs in the store (launch.sh syncs stage S as $RLPIPE_RUN.S), as on every provider.
  L.push("set -eo pipefail", `RLPIPE_BUNDLE=${shellQuote(bundleDir)}`, `export RLPIPE_RUN=${shellQuote(input.jobName)}`, `export RLPIPE_NNODES=${nodes}`);
  if (nodes === 1) {
    L.push("export RLPIPE_NODE_RANK=0", 'exec bash "$RLPIPE_BUNDLE/launch.sh"', "");
    return L.join("\n");
  }
  L.push(
    "# Every node runs launch.sh, which already knows both roles: rank 0 starts the Ray head and waits for all",
    "# nodes, the others join as workers and leave when the head stops, and SFT stages run torchrun on every",
    "# node. Starting Ray here instead would make launch.sh's own `ray start --head` fail on a running head and",
    "# would leave multi-node SFT without its other ranks. Slurm only says who the head is.",
    'mapfile -t rlpipe_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
    'if [ "${#rlpipe_nodes[@]}" -ne "$RLPIPE_NNODES" ]; then',
    '  echo "rlpipe: expected $RLPIPE_NNODES nodes, the allocation has ${#rlpipe_nodes[@]}: ${rlpipe_nodes[*]}" >&2',
    "  exit 2",
    "fi",
    'rlpipe_head="${rlpipe_nodes[0]}"',
    "# The address the other nodes reach the head at: the first non-loopback IPv4 address of its name or its",
    "# interfaces, read on the head itself; its host name when it has none.",
    `rlpipe_head_ip="$(srun --nodes=1 --ntasks=1 -w "$rlpipe_head" bash -c ${shellQuote('for a in $(hostname --ip-address) $(hostname -I); do case "$a" in 127.*|*:*) ;; *) echo "$a"; exit 0 ;; esac; done')} || true)"`,
    'export RLPIPE_MASTER_ADDR="${rlpipe_head_ip:-$rlpipe_head}"',
    'echo "rlpipe: $RLPIPE_NNODES nodes (${rlpipe_nodes[*]}); head $rlpipe_head at $RLPIPE_MASTER_ADDR" >&2',
    "# One task per node. SLURM_NODEID follows the allocation's node list, so rank 0 runs on the head; when a",
    "# node fails, --kill-on-bad-exit ends the others and the job fails with it.",
    `exec srun --nodes="$RLPIPE_NNODES" --ntasks="$RLPIPE_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c ${shellQuote('export RLPIPE_NODE_RANK="$SLURM_NODEID"; exec bash "$1"')} rlpipe-node "$RLPIPE_BUNDLE/launch.sh"`,
    "",
  );
  return L.join("\n");
}
