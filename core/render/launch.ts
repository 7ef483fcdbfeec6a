// launch.sh: the one entrypoint every provider runs. It sets the environment, prepares the checkout and data,
// starts a co-located sandbox and waits for its health check, then runs the stages in order. A stage that
// completed is skipped on a restart of the same run (a marker per $RLPIPE_RUN); verl stages resume from their
// newest checkpoint (trainer.resume_mode=auto). The first failing stage's exit code is the script's exit code.
// No secret is ever written here: required secrets are checked by name in the environment at run time.
import { sha256 } from "../recipe/load.js";
import type { Recipe } from "../recipe/schema.js";
import { type RenderContext, report } from "./context.js";
import type { EnvBlock } from "./env.js";
import { STAGING_SETTLE_S, SYNC_SIDECAR, type StoragePlan } from "./storage.js";
import { shellCommandBlock, shellDoubleQuote, shellQuote } from "./shell.js";
import type { StageCommand } from "./stage-command.js";

export interface SandboxLaunch {
  /** Started by launch.sh (colocated) or only health-checked (external). */
  readonly start?: {
    readonly dir: string;
    readonly condaActivate?: string;
    readonly condaEnv?: string;
    readonly env: readonly (readonly [string, string])[];
    readonly command: string;
    readonly log: string;
  };
  readonly health?: {
    readonly url: string;
    readonly body?: string;
    readonly expect: string;
    readonly timeoutS: number;
    readonly intervalS: number;
  };
  /**
   * rlpipe's own function started here: launch.sh exports RLPIPE_REWARD_URL for `rlpipe eval` stages. With
   * `portOverridable` (no verl stage has the port baked into a tool config), RLPIPE_SANDBOX_PORT moves it.
   */
  readonly rlpipeFunction?: { readonly port: number; readonly portOverridable: boolean; readonly tokenEnv?: string };
  /**
   * On a Ray job (the platform started Ray on every node; launch.sh is the driver): the sandbox runs on every node,
   * started by one actor per node (NODE_SANDBOX_HELPER with the spec in NODE_SANDBOX_SPEC), so a tool or reward
   * call to 127.0.0.1 from any Ray worker reaches the sandbox of its own node.
   */
  readonly perRayNode?: boolean;
}

/** The Ray driver that places one sandbox actor per node, and its spec, in the bundle (copied into workDir). */
export const NODE_SANDBOX_HELPER = ".rlpipe/rlpipe_node_sandbox.py";
export const NODE_SANDBOX_SPEC = ".rlpipe/node-sandbox.json";
export const NODE_SANDBOX_ASSET = "rlpipe_node_sandbox.py";

/** The bash script that starts the sandbox in its directory (launch.sh runs it under setsid; each node actor too). */
export function sandboxStartScript(s: NonNullable<SandboxLaunch["start"]>): string {
  return [
    `cd ${shellQuote(s.dir)}`,
    ...(s.condaEnv === undefined ? [] : condaLines(s.condaActivate, s.condaEnv)),
    ...s.env.map(([k, v]) => `export ${k}=${shellDoubleQuote(v)}`),
    `exec ${s.command}`,
  ].join("\n");
}

export interface LaunchInputs {
  readonly recipeHash: string;
  readonly stages: readonly (StageCommand & { readonly envSteps: EnvBlock })[];
  readonly runtimeEnv: EnvBlock;
  readonly sandbox?: SandboxLaunch;
  /** Files of the bundle that must be present in workDir (copied there when launch.sh runs elsewhere). */
  readonly overlay: readonly string[];
  readonly secrets: readonly { readonly name: string; readonly env: string; readonly required: boolean }[];
  readonly patches: readonly { readonly dir: string; readonly file: string; readonly apply: "git-apply" | "git-am" }[];
  readonly datasetBuilds: readonly { readonly command: string; readonly creates: readonly string[] }[];
  readonly storage?: StoragePlan;
  /** Verl stages whose sandbox health (rlpipe serve's /metrics per step) goes beside their metrics (HEALTH_POLLER). */
  readonly sandboxHealth?: readonly { readonly stage: string; readonly metrics: string }[];
}

/** Polls the job's rlpipe serve(s) and writes health lines per verl step beside the stage's metrics. */
export const HEALTH_POLLER = ".rlpipe/rlpipe_health.py";
export const HEALTH_ASSET = "rlpipe_health.py";

/** verl's metrics file metrics/rl.jsonl → the sandbox's health lines metrics/rl.sandbox.jsonl (a second stream). */
export function sandboxHealthFile(metrics: string): string {
  return `${metrics.replace(/\.jsonl?$/, "")}.sandbox.jsonl`;
}

const STAGES_ON_EVERY_NODE = new Set(["sft"]);

/** Provider ray and TI-ONE's Ray mode start Ray on every node themselves and run launch.sh once, as the driver. */
export function platformRunsRay(provider: string, recipe: Recipe): boolean {
  return provider === "ray" || (provider === "tione" && (recipe.targets?.tione?.mode ?? "ray") === "ray");
}

export function renderLaunchScript(ctx: RenderContext, inputs: LaunchInputs): string {
  const { recipe } = ctx;
  const rt = recipe.runtime;
  const L: string[] = [];
  const nodes = recipe.resources.nodes;
  // On a Ray job (provider ray, TI-ONE's Ray mode) the platform has already started Ray on every node and runs
  // launch.sh once, as the driver: no per-node roles, no Ray head or workers of our own.
  const platformRay = platformRunsRay(ctx.provider, recipe);
  const perNode = nodes > 1 && !platformRay;
  if (nodes > 1 && platformRay) {
    recipe.stages.forEach((st, i) => {
      if (st.type === "sft") {
        report(ctx, "error", ["stages", i], "multinode_sft_on_ray", `a ${nodes}-node SFT stage needs torchrun on every node, but provider ${ctx.provider} runs launch.sh once, as a Ray driver`,
          "run SFT on one node, or use provider slurm or modelarts (launch.sh on every node)");
      }
    });
  }

  L.push("#!/usr/bin/env bash");
  L.push(`# Generated by rlpipe from recipe ${recipe.metadata.name} (sha256 ${inputs.recipeHash.slice(0, 12)}) for provider ${ctx.provider}, verl profile ${ctx.profile.name}.`);
  L.push("# Do not edit: change the recipe and run `rlpipe plan` again.");
  if (inputs.secrets.length > 0) {
    L.push(`# Secrets are read from the environment at run time, never written here: ${inputs.secrets.map((s) => s.env).join(", ")}.`);
  }
  L.push("set -eo pipefail", "");
  L.push('RLPIPE_BUNDLE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"');
  L.push(`RLPIPE_WORKDIR="\${RLPIPE_WORKDIR:-${escapeDq(ctx.workDir)}}"`);
  L.push('RLPIPE_STATE_DIR="${RLPIPE_STATE_DIR:-$RLPIPE_WORKDIR/.rlpipe}"');
  L.push(`export RLPIPE_NNODES=${nodes}`);
  L.push('export RLPIPE_NODE_RANK="${RLPIPE_NODE_RANK:-0}"');
  L.push("RLPIPE_RAY_HEAD=");
  L.push("RLPIPE_SANDBOX_PID=");
  L.push("RLPIPE_SUPERVISOR_PID=");
  L.push("RLPIPE_NODE_SANDBOXES_PID=");
  L.push("RLPIPE_STAGE_PID=");
  // The supervisors tell this process (SIGUSR1, the reason in this file) when a sandbox is gone for good.
  L.push("export RLPIPE_LAUNCH_PID=$$");
  L.push('export RLPIPE_SANDBOX_LOST="$RLPIPE_STATE_DIR/sandbox-lost"');
  L.push("RLPIPE_SYNC_PIDS=()");
  L.push("RLPIPE_SYNC_FINAL=");
  L.push("");
  L.push(...HELPERS);

  if (inputs.secrets.some((s) => s.required)) {
    L.push("", "# ---- secrets (names only)");
    for (const s of inputs.secrets.filter((x) => x.required)) L.push(`rlpipe_require_secret ${s.env} ${shellQuote(s.name)}`);
  }

  L.push("", "# ---- bundle files into the working directory");
  L.push(`RLPIPE_FILES=(${inputs.overlay.map(shellQuote).join(" ")})`);
  L.push('mkdir -p "$RLPIPE_WORKDIR"');
  L.push('if [ "$RLPIPE_BUNDLE_DIR" != "$(cd "$RLPIPE_WORKDIR" && pwd -P)" ]; then');
  // Every node of a multi-node job copies into a shared workDir at once: copy beside, then rename (atomic), so
  // no node sees a half-written file and concurrent copies never collide.
  L.push('  for f in "${RLPIPE_FILES[@]}"; do mkdir -p "$RLPIPE_WORKDIR/$(dirname "$f")"; t="$RLPIPE_WORKDIR/$f.rlpipe-tmp.$RLPIPE_NODE_RANK.$$"; { cp "$RLPIPE_BUNDLE_DIR/$f" "$t" && mv -f "$t" "$RLPIPE_WORKDIR/$f"; } || rlpipe_die 1 "could not copy $f into $RLPIPE_WORKDIR"; done');
  L.push("fi");
  L.push('cd "$RLPIPE_WORKDIR"');
  // verl imports a tool's class by module name: rlpipe's own (rlpipe_tool.py) is in the working directory.
  if (inputs.overlay.includes("rlpipe_tool.py")) L.push('export PYTHONPATH="$RLPIPE_WORKDIR${PYTHONPATH:+:$PYTHONPATH}"');
  L.push('mkdir -p "$RLPIPE_STATE_DIR"');
  if (usesRlpipeCli(inputs)) {
    // Stages and helpers call `rlpipe`; RLPIPE_CLI (e.g. "node /opt/rlpipe/dist/bin/rlpipe.js") stands in where
    // rlpipe is not on PATH, through a shim so exec and sub-shells find it too.
    L.push('if [ -n "${RLPIPE_CLI:-}" ]; then');
    L.push('  mkdir -p "$RLPIPE_STATE_DIR/bin"');
    L.push(`  printf '#!/bin/sh\\nexec %s "$@"\\n' "$RLPIPE_CLI" > "$RLPIPE_STATE_DIR/bin/rlpipe.tmp.$$"`);
    L.push('  chmod +x "$RLPIPE_STATE_DIR/bin/rlpipe.tmp.$$" && mv -f "$RLPIPE_STATE_DIR/bin/rlpipe.tmp.$$" "$RLPIPE_STATE_DIR/bin/rlpipe"');
    L.push('  export PATH="$RLPIPE_STATE_DIR/bin:$PATH"');
    L.push("fi");
  }
  if (inputs.storage !== undefined || inputs.stages.some((st) => st.type === "score")) {
    L.push(`export RLPIPE_RUN="\${RLPIPE_RUN:-${inputs.storage?.runBase ?? `${recipe.metadata.name}-${inputs.recipeHash.slice(0, 8)}`}}"`);
  }

  const globalEnv = inputs.runtimeEnv;
  if (rt.conda !== undefined || globalEnv.steps.length > 0) {
    L.push("", "# ---- environment");
    if (rt.conda?.create !== undefined) L.push(...condaCreateLines(rt.conda.activate, rt.conda.env, rt.conda.create.python));
    if (rt.conda !== undefined) L.push(...condaLines(rt.conda.activate, rt.conda.env));
    L.push(...envLines(globalEnv, ""));
  }

  if (perNode) {
    L.push("", "# ---- multi-node: torchrun reads PET_*; Ray runs with its head on rank 0");
    L.push('[ -n "${RLPIPE_MASTER_ADDR:-}" ] || rlpipe_die 2 "RLPIPE_MASTER_ADDR must be set on every node of a multi-node run (the provider maps it)"');
    L.push('export PET_NNODES="$RLPIPE_NNODES" PET_NODE_RANK="$RLPIPE_NODE_RANK" PET_MASTER_ADDR="$RLPIPE_MASTER_ADDR" PET_MASTER_PORT="${RLPIPE_MASTER_PORT:-29500}"');
    L.push('RLPIPE_RAY_PORT="${RLPIPE_RAY_PORT:-6379}"');
  }

  const setup: string[] = [];
  for (const p of inputs.patches) setup.push(`rlpipe_apply_patch ${shellQuote(p.dir)} ${shellQuote(p.file)} ${p.apply}`);
  if (rt.pipUninstall !== undefined && rt.pipUninstall.length > 0) setup.push(`python3 -m pip uninstall -y ${rt.pipUninstall.map(shellQuote).join(" ")} || true`);
  if (rt.pip !== undefined && rt.pip.length > 0) setup.push(`python3 -m pip install ${rt.pip.map(shellQuote).join(" ")}`);
  if (setup.length > 0) L.push("", "# ---- setup (idempotent)", ...setup);

  if (inputs.datasetBuilds.length > 0) {
    L.push("", "# ---- datasets (built only when an output is missing)");
    for (const b of inputs.datasetBuilds) {
      const test = b.creates.map((c) => `[ -e ${shellQuote(c)} ]`).join(" && ");
      L.push(`if ! { ${test}; }; then`);
      L.push(`  rlpipe_log ${shellQuote(`building dataset: ${b.command}`)}`);
      L.push(`  ( ${b.command} ) || rlpipe_die $? ${shellQuote(`dataset build failed: ${b.command}`)}`);
      L.push("fi");
    }
  }

  const st = inputs.storage;
  // No sidecar without a checkpoint directory to watch (a score stage writes its results itself).
  if (st !== undefined && st.stages.length > 0) {
    L.push("", `# ---- checkpoint and metrics sync to ${st.uri} (${st.mechanism})`);
    L.push("mkdir -p .rlpipe");
    // One sidecar keeps the job's page in the store (the RL stage's: it has the metrics); not through the runs
    // function, which presigns only checkpoint and metrics keys. Every RLPIPE_PAGE_INTERVAL_S (default 60) at most.
    const pageStage = st.mechanism === "sidecar-function" ? undefined : ([...st.stages].reverse().find((s) => s.metrics !== undefined) ?? st.stages[0])?.stage;
    const commands = st.stages.map((s) => {
      const keep = [...(st.keep?.last === undefined ? [] : ["--keep-last", String(st.keep.last)]), ...(st.keep?.every === undefined ? [] : ["--keep-every", String(st.keep.every)])];
      const health = s.metrics !== undefined && inputs.sandboxHealth?.some((h) => h.stage === s.stage) === true;
      const metrics = s.metrics === undefined ? [] : ["--metrics", s.metrics, ...(health ? ["--metrics", sandboxHealthFile(s.metrics)] : [])];
      // rlpipe_sync.py's destination: the runs function, a directory an output channel uploads, or the store itself.
      const to = st.mechanism === "sidecar-function" ? ["--url", st.functionUrl ?? ""]
        : st.mechanism === "modelarts-output" ? ["--store", `file://${st.stagingDir ?? ""}`, "--settle-s", String(STAGING_SETTLE_S)]
          : ["--store", st.uri, ...(st.region === undefined ? [] : ["--region", st.region])];
      const direct = st.mechanism === "sidecar-direct";
      const page = s.stage !== pageStage ? [] : ["--page", "@RUN", direct ? "--page-interval-s" : "--page-interval", "@PAGE_INTERVAL", "--page-recipe", recipe.metadata.name, "--page-provider", ctx.provider];
      const words = direct
        ? ["rlpipe", "sync", `@RUN.${s.stage}`, "--watch", s.dir, ...metrics, "--store", st.uri, "--interval-s", String(st.intervalS), ...keep, "--recipe-hash", inputs.recipeHash, ...page]
        : ["python3", `.rlpipe/${SYNC_SIDECAR}`, ...to, "--run", `@RUN.${s.stage}`, "--dir", s.dir, ...metrics, "--interval", String(st.intervalS), ...keep, "--recipe-hash", inputs.recipeHash, ...page];
      const word = (w: string) => (w === "@RUN" ? '"$RLPIPE_RUN"' : w === "@PAGE_INTERVAL" ? '"${RLPIPE_PAGE_INTERVAL_S:-60}"' : w.startsWith("@RUN.") ? `"$RLPIPE_RUN.${w.slice(5)}"` : shellQuote(w));
      return { stage: s.stage, dir: s.dir, metrics: s.metrics, cmd: words.map(word).join(" ") };
    });
    // The final pass runs in the foreground when the job ends (success or failure), so the last checkpoint
    // and metrics are uploaded even when a sidecar was stopped before it could react.
    L.push("rlpipe_sync_final() {");
    L.push('  for p in "${RLPIPE_SYNC_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done');
    L.push('  for p in "${RLPIPE_SYNC_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done');
    L.push("  RLPIPE_SYNC_PIDS=()");
    L.push('  rlpipe_log "final checkpoint and metrics sync"');
    for (const c of commands) L.push(`  ${c.cmd} --once >> .rlpipe/sync-${c.stage}.log 2>&1 || rlpipe_log ${shellQuote(`final sync of ${c.stage} failed; see .rlpipe/sync-${c.stage}.log`)}`);
    L.push("}");
    L.push("RLPIPE_SYNC_FINAL=rlpipe_sync_final");
    L.push('if [ "$RLPIPE_NODE_RANK" = 0 ]; then');
    for (const c of commands) {
      if (c.metrics !== undefined) L.push(`  mkdir -p ${shellQuote(c.metrics.slice(0, c.metrics.lastIndexOf("/")))}`);
      // rlpipe sync --once (the final pass) refuses a missing --watch directory: a stage that never saved has an empty one.
      if (st.mechanism === "sidecar-direct") L.push(`  mkdir -p ${shellQuote(c.dir)}`);
      L.push(`  ${c.cmd} >> .rlpipe/sync-${c.stage}.log 2>&1 &`);
      L.push("  RLPIPE_SYNC_PIDS+=($!)");
    }
    L.push("fi");
  }

  const sb = inputs.sandbox;
  const fnPort = sb?.rlpipeFunction;
  if (sb !== undefined) {
    L.push("", "# ---- sandbox");
    if (fnPort !== undefined) {
      if (fnPort.portOverridable) L.push(`export RLPIPE_SANDBOX_PORT="\${RLPIPE_SANDBOX_PORT:-${fnPort.port}}"`);
      else L.push(`export RLPIPE_SANDBOX_PORT=${fnPort.port}`);
      L.push('export RLPIPE_REWARD_URL="http://127.0.0.1:$RLPIPE_SANDBOX_PORT"');
    }
    if (sb.start !== undefined && sb.perRayNode === true) {
      // One actor per Ray node starts, health-checks (nonce) and restarts the sandbox there; this driver keeps them
      // alive for the job and stops them at exit. It exits 3 (having said which node and why) when one cannot start.
      L.push('RLPIPE_NODE_SANDBOXES_READY="$RLPIPE_STATE_DIR/node-sandboxes.json"');
      L.push("rlpipe_start_node_sandboxes() {");
      L.push(`  rlpipe_log ${shellQuote(`starting the sandbox on every Ray node (one actor per node): ${sb.start.command}`)}`);
      L.push('  rm -f "$RLPIPE_NODE_SANDBOXES_READY"');
      L.push('  rm -f "$RLPIPE_SANDBOX_LOST"');
      L.push(`  python3 ${NODE_SANDBOX_HELPER} ${NODE_SANDBOX_SPEC} "$RLPIPE_NODE_SANDBOXES_READY" < /dev/null >&2 &`);
      L.push("  RLPIPE_NODE_SANDBOXES_PID=$!");
      L.push('  until [ -s "$RLPIPE_NODE_SANDBOXES_READY" ]; do');
      L.push('    if ! kill -0 "$RLPIPE_NODE_SANDBOXES_PID" 2>/dev/null; then');
      L.push('      local rc=0; wait "$RLPIPE_NODE_SANDBOXES_PID" || rc=$?; RLPIPE_NODE_SANDBOXES_PID=');
      L.push('      rlpipe_die 3 "the sandbox could not be started on every Ray node (exit $rc; the lines above say which node and why)"');
      L.push("    fi");
      L.push("    sleep 1");
      L.push("  done");
      L.push('  rlpipe_log "sandbox healthy on every Ray node (see $RLPIPE_NODE_SANDBOXES_READY)"');
      L.push("}");
      L.push("rlpipe_start_node_sandboxes");
    } else if (sb.start !== undefined) {
      const s = sb.start;
      const inner = [sandboxStartScript(s)];
      // Its pid goes to a file too: the supervisor (a subshell) restarts it, and the clean-up stops the current one.
      L.push('export RLPIPE_SANDBOX_PID_FILE="$RLPIPE_STATE_DIR/sandbox-node$RLPIPE_NODE_RANK.pid"');
      L.push("rlpipe_start_sandbox() {");
      L.push(`  rlpipe_log ${shellQuote(`starting sandbox in ${s.dir}: ${s.command} (log: ${s.log})`)}`);
      L.push(`  mkdir -p "$(dirname ${shellQuote(s.log)})"`);
      // rlpipe serve echoes a nonce on /v1/ping: the health check then knows it reached the server it started.
      if (fnPort !== undefined) L.push(`  export RLPIPE_SERVE_NONCE="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"`);
      L.push(`  setsid bash -c ${shellQuote(inner.join("\n"))} >> ${shellQuote(s.log)} 2>&1 < /dev/null &`);
      L.push("  RLPIPE_SANDBOX_PID=$!");
      L.push('  echo "$RLPIPE_SANDBOX_PID" > "$RLPIPE_SANDBOX_PID_FILE"');
      L.push("}");
      if (sb.health !== undefined) {
        // Something already answering on the port would pass the health check in our sandbox's place.
        const h = sb.health;
        const url = fnPort === undefined ? shellQuote(h.url) : `"$RLPIPE_REWARD_URL${escapeDq(new URL(h.url).pathname)}"`;
        const port = fnPort?.port ?? (Number(new URL(h.url).port) || 80);
        L.push("rlpipe_claim_sandbox_port() {");
        L.push(`  if rlpipe_port_busy ${url}; then`);
        if (fnPort?.portOverridable === true) {
          L.push('    local busy="$RLPIPE_SANDBOX_PORT"');
          L.push("    RLPIPE_SANDBOX_PORT=$(rlpipe_free_port)");
          L.push('    export RLPIPE_REWARD_URL="http://127.0.0.1:$RLPIPE_SANDBOX_PORT"');
          L.push('    rlpipe_log "port $busy is in use by another process; the sandbox takes the free port $RLPIPE_SANDBOX_PORT"');
        } else {
          L.push(`    rlpipe_die 3 ${shellQuote(`port ${port} is already in use by another process, so the sandbox this job starts cannot listen there (and a health check would reach that process instead): stop that process, or move the sandbox to another port in the recipe (${fnPort === undefined ? "sandbox.server.port and the URLs that name it" : "the port of sandbox.url"})`)}`);
        }
        L.push("  fi");
        L.push("}");
        L.push("rlpipe_claim_sandbox_port");
      }
      L.push("rlpipe_start_sandbox");
    }
    if (sb.health !== undefined && sb.perRayNode !== true) {
      const h = sb.health;
      const url = fnPort === undefined ? shellQuote(h.url) : `"$RLPIPE_REWARD_URL${escapeDq(new URL(h.url).pathname)}"`;
      const nonce = sb.start !== undefined && fnPort !== undefined ? ' "$RLPIPE_SERVE_NONCE"' : "";
      const wait = `rlpipe_wait_healthy ${url} ${shellQuote(h.body ?? "")} ${shellQuote(h.expect)} ${h.timeoutS} ${h.intervalS}${sb.start === undefined ? "" : ` ${shellQuote(sb.start.log)}`}${nonce}`;
      if (fnPort?.portOverridable === true && sb.start !== undefined) {
        // Another deploy may take the free port between the check and the bind: then the sandbox moves again.
        L.push("rlpipe_port_tries=0");
        L.push(`until RLPIPE_PORT_RACE_RETRY=1 ${wait}; do`);
        L.push("  rlpipe_port_tries=$((rlpipe_port_tries + 1))");
        L.push('  [ "$rlpipe_port_tries" -lt 5 ] || rlpipe_die 3 "port after port was taken by another process before the sandbox could listen (5 tries)"');
        L.push('  RLPIPE_SANDBOX_PORT=$(rlpipe_free_port); export RLPIPE_REWARD_URL="http://127.0.0.1:$RLPIPE_SANDBOX_PORT"');
        L.push('  rlpipe_log "another process took the port before the sandbox could listen there; the sandbox takes the free port $RLPIPE_SANDBOX_PORT"');
        L.push("  rlpipe_start_sandbox");
        L.push("done");
      } else {
        L.push(wait);
      }
      if (sb.start !== undefined) {
        // A sandbox that exits during the run is started again, a bounded number of times, with a line in the log.
        L.push("rlpipe_supervise_sandbox() {");
        L.push('  local restarts=0 max="${RLPIPE_SANDBOX_RESTARTS:-5}"');
        L.push("  while :; do");
        // (sleep holds none of launch.sh's output: one left behind when the supervisor is stopped keeps no pipe open)
        L.push('    while kill -0 "$RLPIPE_SANDBOX_PID" 2>/dev/null; do sleep "${RLPIPE_SANDBOX_CHECK_S:-5}" < /dev/null > /dev/null 2>&1; done');
        L.push("    restarts=$((restarts + 1))");
        L.push(`    if [ "$restarts" -gt "$max" ]; then rlpipe_sandbox_gone "the sandbox exited again after $max restarts (see its log ${escapeDq(sb.start.log)})"; return 1; fi`);
        L.push(`    rlpipe_log "the sandbox (pid $RLPIPE_SANDBOX_PID) exited during the run; restarting it ($restarts of $max)"`);
        L.push("    rlpipe_claim_sandbox_port");
        L.push("    rlpipe_start_sandbox");
        L.push(`    ${wait}`);
        L.push("  done");
        L.push("}");
        L.push("rlpipe_supervise_sandbox &");
        L.push("RLPIPE_SUPERVISOR_PID=$!");
      }
    }
  }

  if (inputs.sandboxHealth !== undefined && inputs.sandboxHealth.length > 0 && fnPort !== undefined) {
    // What the sandbox did during each verl step (requests, infra errors, overload, timeouts, latency), written
    // beside the stage's metrics and synced with them: stopped with the sync sidecars, after one last poll.
    L.push("", "# ---- sandbox health per step, beside the metrics");
    L.push('if [ "$RLPIPE_NODE_RANK" = 0 ]; then');
    const source = sb?.perRayNode === true ? ['--ray-nodes', '"$RLPIPE_NODE_SANDBOXES_READY"'] : ['--url', '"$RLPIPE_REWARD_URL"'];
    for (const h of inputs.sandboxHealth) {
      const words = ["python3", HEALTH_POLLER, "--metrics", shellQuote(h.metrics), "--out", shellQuote(sandboxHealthFile(h.metrics)), ...source,
        ...(fnPort.tokenEnv === undefined ? [] : ["--token-env", fnPort.tokenEnv])];
      L.push(`  ${words.join(" ")} >> ${shellQuote(`.rlpipe/health-${h.stage}.log`)} 2>&1 &`);
      L.push("  RLPIPE_SYNC_PIDS+=($!)");
    }
    L.push("fi");
  }

  L.push("", "# ---- stages");
  const hasRay = inputs.stages.some((s) => s.type === "rl" || s.type === "eval");
  let rayStarted = false;
  for (const st of inputs.stages) {
    const fn = `rlpipe_stage_${st.id.replace(/[^A-Za-z0-9_]/g, "_")}`;
    const env = st.envSteps;
    L.push(`${fn}() {`);
    L.push(...envLines(env, "  "));
    L.push(`  ${shellCommandBlock(st.argv, "    ", st.argv[0] === "torchrun" ? 1 : 3)}`);
    L.push("}");
    const marker = `${st.id}-${sha256(JSON.stringify([st.argv, env])).slice(0, 12)}`;
    // verl stages resume from the newest checkpoint in their output directory: named so that a new run finding
    // another run's finished checkpoints there says so instead of resuming them and doing nothing.
    const resumes = (st.type === "rl" || st.type === "sft") && st.output !== undefined;
    const log = `${st.logFile === undefined ? "''" : shellQuote(st.logFile)}${resumes ? ` ${shellQuote(st.output!)}` : ""}`;
    if (perNode && (st.type === "rl" || st.type === "eval") && !rayStarted) {
      rayStarted = true;
      L.push('if [ "$RLPIPE_NODE_RANK" = 0 ]; then rlpipe_ray_head; else rlpipe_ray_worker; exit 0; fi');
    }
    const everyNode = perNode && STAGES_ON_EVERY_NODE.has(st.type);
    if (perNode && !everyNode && !rayStarted) {
      L.push(`if [ "$RLPIPE_NODE_RANK" = 0 ]; then rlpipe_run_stage ${shellQuote(marker)} ${fn} ${log}; fi`);
    } else {
      L.push(`rlpipe_run_stage ${shellQuote(marker)} ${fn} ${log}`);
    }
  }
  if (perNode && !hasRay) L.push('rlpipe_log "all stages done on node $RLPIPE_NODE_RANK"');
  L.push('rlpipe_log "all stages complete"');
  L.push("");
  return L.join("\n");
}

function usesRlpipeCli(inputs: LaunchInputs): boolean {
  return inputs.stages.some((s) => s.argv[0] === "rlpipe") || inputs.sandbox?.start?.command.startsWith("rlpipe ") === true
    || (inputs.storage?.mechanism === "sidecar-direct" && inputs.storage.stages.length > 0);
}

function escapeDq(s: string): string {
  return s.replace(/["\\`$]/g, (c) => `\\${c}`);
}

function condaLines(activate: string | undefined, env: string): string[] {
  // Vendor activation scripts read unset variables; they run outside `set -u` (never enabled here).
  const script = activate ?? "$(conda info --base)/bin/activate";
  return [`source ${activate === undefined ? `"${script}"` : shellQuote(script)} ${shellQuote(env)}`];
}

function condaCreateLines(activate: string | undefined, env: string, python: string): string[] {
  const base = activate === undefined ? 'source "$(conda info --base)/bin/activate"' : `source ${shellQuote(activate)}`;
  return [
    `${base}`,
    `if ! conda env list | awk '{print $1}' | grep -qx ${shellQuote(env)}; then`,
    `  rlpipe_log ${shellQuote(`creating conda environment ${env} (python ${python})`)}`,
    `  conda create -y -n ${shellQuote(env)} ${shellQuote(`python=${python}`)}`,
    "fi",
  ];
}

function envLines(env: EnvBlock, indent: string): string[] {
  // Preset source paths are rlpipe's own text (they may use $(dirname …)); recipe values are double-quoted.
  return env.steps.map((s) => ("source" in s ? `${indent}source "${s.source}"` : `${indent}export ${s.export[0]}=${shellDoubleQuote(s.export[1])}`));
}

/** Shell helpers shared by every launch.sh. Kept small and POSIX-ish (bash for arrays and PIPESTATUS). */
const HELPERS: readonly string[] = String.raw`rlpipe_log() { printf '[rlpipe %s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
rlpipe_die() { local code="$1"; shift; rlpipe_log "error: $*"; exit "$code"; }
rlpipe_require_secret() {
  if [ -z "@{!1:-}" ]; then rlpipe_die 2 "environment variable $1 (secret '$2') is not set; export it before launching"; fi
}
rlpipe_cleanup() {
  local rc=$?
  if [ -n "$RLPIPE_RAY_HEAD" ]; then ray stop --force >/dev/null 2>&1 || true; fi
  if [ -n "$RLPIPE_SYNC_FINAL" ] && [ "$RLPIPE_NODE_RANK" = 0 ]; then "$RLPIPE_SYNC_FINAL"; fi
  if [ -n "$RLPIPE_NODE_SANDBOXES_PID" ]; then kill -TERM "$RLPIPE_NODE_SANDBOXES_PID" 2>/dev/null || true; wait "$RLPIPE_NODE_SANDBOXES_PID" 2>/dev/null || true; fi
  if [ -n "$RLPIPE_SUPERVISOR_PID" ]; then kill "$RLPIPE_SUPERVISOR_PID" 2>/dev/null || true; wait "$RLPIPE_SUPERVISOR_PID" 2>/dev/null || true; fi
  if [ -n "@{RLPIPE_SANDBOX_PID_FILE:-}" ] && [ -s "$RLPIPE_SANDBOX_PID_FILE" ]; then RLPIPE_SANDBOX_PID=$(cat "$RLPIPE_SANDBOX_PID_FILE"); rm -f "$RLPIPE_SANDBOX_PID_FILE"; fi
  if [ -n "$RLPIPE_SANDBOX_PID" ] && kill -0 "$RLPIPE_SANDBOX_PID" 2>/dev/null; then
    kill -TERM -- "-$RLPIPE_SANDBOX_PID" 2>/dev/null || kill -TERM "$RLPIPE_SANDBOX_PID" 2>/dev/null || true
  fi
  return $rc
}
trap rlpipe_cleanup EXIT
rlpipe_kill_tree() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do rlpipe_kill_tree "$c"; done
  kill -TERM "$1" 2>/dev/null || true
}
rlpipe_stop_stage() {
  if [ -n "$RLPIPE_STAGE_PID" ]; then rlpipe_kill_tree "$RLPIPE_STAGE_PID"; wait "$RLPIPE_STAGE_PID" 2>/dev/null || true; RLPIPE_STAGE_PID=; fi
}
# Called by a supervisor that gives a sandbox up: the reason to the file, a signal to the job.
rlpipe_sandbox_gone() {
  printf '%s\n' "$1" > "$RLPIPE_SANDBOX_LOST"
  rlpipe_log "error: $1"
  kill -USR1 "$RLPIPE_LAUNCH_PID" 2>/dev/null || true
}
rlpipe_sandbox_lost() {
  local why="a sandbox is gone for good"
  [ -s "$RLPIPE_SANDBOX_LOST" ] && why=$(cat "$RLPIPE_SANDBOX_LOST")
  rlpipe_stop_stage
  rlpipe_die 3 "$why: the job stops, since every tool call and reward there would fail (a node without its sandbox never goes on silently); restart the run to resume from its last checkpoint"
}
rlpipe_on_signal() {
  rlpipe_log "$1: stopping the stage, the sandboxes and the sidecars"
  rlpipe_stop_stage
  exit "$2"
}
trap rlpipe_sandbox_lost USR1
trap 'rlpipe_on_signal SIGTERM 143' TERM
trap 'rlpipe_on_signal SIGINT 130' INT
rlpipe_apply_patch() {
  local dir="$1" file="$2" mode="$3"
  case "$file" in /*) ;; *) file="$RLPIPE_WORKDIR/$file" ;; esac
  [ -f "$file" ] || rlpipe_die 2 "patch $file not found"
  if git -C "$dir" apply --reverse --check "$file" >/dev/null 2>&1; then rlpipe_log "patch already applied: $file"; return 0; fi
  rlpipe_log "applying patch $file to $dir ($mode)"
  if [ "$mode" = git-am ]; then git -C "$dir" am "$file"; else git -C "$dir" apply "$file"; fi
}
rlpipe_probe() {
  python3 - "$1" "$2" "$3" "@{4:-}" <<'PY'
import sys, urllib.request
url, body, expect, nonce = sys.argv[1:5]
try:
    req = urllib.request.Request(url, data=body.encode() if body else None, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        if nonce and r.headers.get("X-Rlpipe-Nonce") != nonce:
            sys.exit(2)  # a server answers, but not the one this job started
        sys.exit(0 if expect in r.read().decode("utf-8", "replace") else 1)
except Exception:
    sys.exit(1)
PY
}
rlpipe_port_busy() {
  python3 - "$1" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
try:
    socket.create_connection((u.hostname, u.port or (443 if u.scheme == "https" else 80)), timeout=2).close()
except OSError:
    sys.exit(1)
PY
}
rlpipe_free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rlpipe_wait_healthy() {
  local url="$1" body="$2" expect="$3" timeout="$4" interval="$5" log="@{6:-}" nonce="@{7:-}"
  local deadline=$((SECONDS + timeout))
  rlpipe_log "waiting for the sandbox at $url (up to $timeout s)"
  until rlpipe_probe "$url" "$body" "$expect" "$nonce"; do
    if [ -n "$RLPIPE_SANDBOX_PID" ] && ! kill -0 "$RLPIPE_SANDBOX_PID" 2>/dev/null; then
      # The port was taken between the check and the bind (another deploy): the caller moves the sandbox.
      if [ -n "@{RLPIPE_PORT_RACE_RETRY:-}" ] && [ -n "$log" ] && grep -qiE 'EADDRINUSE|address (is )?already in use' "$log" 2>/dev/null; then return 10; fi
      local where="" last=""
      if [ -n "$log" ]; then
        where=$(cd "$(dirname "$log")" 2>/dev/null && printf '%s/%s' "$(pwd -P)" "$(basename "$log")" || printf '%s' "$log")
        last=$(tail -n 5 "$log" 2>/dev/null | tr '
' ' ' | cut -c1-600)
      fi
      rlpipe_die 3 "the sandbox exited before it became healthy@{where:+; its log $where}@{last:+ ends: $last}"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then rlpipe_die 3 "the sandbox at $url was not healthy after $timeout s@{log:+; see $log}"; fi
    sleep "$interval"
  done
  rlpipe_log "sandbox healthy"
}
rlpipe_run_stage() {
  # A marker belongs to its run (RLPIPE_RUN): a restart of the run skips what it completed, a new run (deploy --new)
  # in the same workDir runs everything again.
  local run="@{RLPIPE_RUN:-unnamed}"
  local marker="$RLPIPE_STATE_DIR/stages/@{run//\//_}/$1.done" fn="$2" log="$3" ckpt="@{4:-}" rc other
  local id="@{1%-*}"
  if [ -e "$marker" ]; then rlpipe_log "stage $id: already complete, skipping (run $run)"; return 0; fi
  # A new run of the same stage (deploy --new) over the output another run completed would resume from its last
  # checkpoint and train nothing: refused, nothing touched. A restart of this run (it started the stage) resumes.
  case "$ckpt" in ""|/*) ;; *) ckpt="$RLPIPE_WORKDIR/$ckpt" ;; esac
  if [ -n "$ckpt" ] && [ ! -e "@{marker%.done}.started" ] && [ -e "$ckpt/latest_checkpointed_iteration.txt" ]; then
    for other in "$RLPIPE_STATE_DIR"/stages/*/"$1.done"; do
      [ -e "$other" ] || continue
      rlpipe_die 2 "stage $id: run $(basename "$(dirname "$other")") already completed this same stage into $ckpt; run $run would resume from its last checkpoint and train nothing. Give this run its own output directory (the stage's outputDir), or move $ckpt away, then deploy again"
    done
  fi
  mkdir -p "$(dirname "$marker")" && touch "@{marker%.done}.started"
  rlpipe_log "stage $id: starting"
  set +e
  # In the background, waited for: a signal (a sandbox gone for good, a SIGTERM to the job) interrupts the wait at
  # once, where a foreground stage would hold it until the stage ended.
  if [ -n "$log" ]; then mkdir -p "$(dirname "$log")"; ( ( "$fn" ) 2>&1 | tee -a "$log"; exit "@{PIPESTATUS[0]}" ) &
  else ( "$fn" ) & fi
  RLPIPE_STAGE_PID=$!
  wait "$RLPIPE_STAGE_PID"; rc=$?
  RLPIPE_STAGE_PID=
  set -e
  if [ "$rc" -ne 0 ]; then rlpipe_die "$rc" "stage $id failed with exit code $rc"; fi
  mkdir -p "$(dirname "$marker")" && touch "$marker"
  rlpipe_log "stage $id: complete"
}
rlpipe_ray_head() {
  ray start --head --port="$RLPIPE_RAY_PORT" --disable-usage-stats
  RLPIPE_RAY_HEAD=1  # stopped on exit, which also releases the workers
  local deadline=$((SECONDS + @{RLPIPE_RAY_WAIT_S:-900}))
  until [ "$(python3 -c 'import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(1 for n in ray.nodes() if n["Alive"]))' 2>/dev/null)" = "$RLPIPE_NNODES" ]; do
    [ "$SECONDS" -lt "$deadline" ] || rlpipe_die 4 "only part of the $RLPIPE_NNODES Ray nodes joined"
    sleep 10
  done
  rlpipe_log "Ray cluster up with $RLPIPE_NNODES nodes"
}
rlpipe_ray_worker() {
  local deadline=$((SECONDS + @{RLPIPE_RAY_WAIT_S:-900}))
  until ray start --address="$RLPIPE_MASTER_ADDR:$RLPIPE_RAY_PORT" --disable-usage-stats; do
    [ "$SECONDS" -lt "$deadline" ] || rlpipe_die 4 "could not join the Ray head at $RLPIPE_MASTER_ADDR:$RLPIPE_RAY_PORT"
    sleep 10
  done
  while ray status --address="$RLPIPE_MASTER_ADDR:$RLPIPE_RAY_PORT" >/dev/null 2>&1; do sleep 60; done
  rlpipe_log "Ray head gone; worker $RLPIPE_NODE_RANK exiting"
}`.replaceAll("@{", "${").split("\n");
