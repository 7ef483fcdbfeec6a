// Provider local: the launch bundle runs on this machine as its own process group, detached from the CLI, with
// its output in a log file. State lives in .rlpipe/local/<job name>/: the bundle, a runner script, the log, the
// runner's pid (with its start time, so a reused pid is never mistaken for the job) and, when it ends, its exit code.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync } from "node:fs";
import { mkdir, open, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import type { Plan } from "../../core/plan.js";
import { normalizePhase } from "../../core/providers/phases.js";
import { sleep } from "../../core/util/retry.js";
import { type AdapterFactory, type JobRef, type JobStatus, type LogPage, type ProviderAdapter, ProviderError } from "./provider.js";

const State = z.object({ pid: z.number().int().positive(), procStart: z.string(), startedAt: z.string() });
type State = z.infer<typeof State>;

const RUNNER = `#!/usr/bin/env bash
# rlpipe local runner: runs the bundle, then records its exit code (atomically) for rlpipe status.
cd "$(dirname "$0")"
bash bundle/launch.sh
rc=$?
printf '%s\\n' "$rc" > exit_code.tmp && mv exit_code.tmp exit_code
exit "$rc"
`;

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or undefined when the process is gone. */
async function procStart(pid: number): Promise<string | undefined> {
  try {
    const s = await readFile(`/proc/${pid}/stat`, "utf8");
    const fields = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return fields[2] === "Z" ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/** Processes of process group `pgid` that have not exited (zombies excluded), read from /proc. */
async function liveGroupMembers(pgid: number): Promise<number[]> {
  const members: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = await readFile(`/proc/${name}/stat`, "utf8");
      const fields = s.slice(s.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z" && Number(fields[2]) === pgid) members.push(Number(name));
    } catch { /* exited while listed */ }
  }
  return members;
}

/** The variable every process of a local run inherits (its run directory): how stop() finds what left the group. */
const JOB_MARK = "RLPIPE_LOCAL_JOB";

/**
 * Live processes that carry `mark` in their environment, whatever their process group or session: the sandbox
 * launch.sh starts in a session of its own (setsid) is one. A process that cleared its environment (a sandboxed
 * program under bubblewrap --clearenv) dies with its parent (--die-with-parent), which does carry it.
 */
async function markedProcesses(mark: string): Promise<number[]> {
  const needle = Buffer.from(`${JOB_MARK}=${mark}\0`);
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const env = await readFile(`/proc/${name}/environ`);
      if (env.includes(needle)) {
        const s = await readFile(`/proc/${name}/stat`, "utf8");
        if (s.slice(s.lastIndexOf(")") + 2).split(" ")[0] !== "Z") found.push(Number(name));
      }
    } catch { /* exited while listed, or not ours */ }
  }
  return found;
}

async function readText(path: string): Promise<string | undefined> {
  try { return await readFile(path, "utf8"); } catch (e) { if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined; throw e; }
}

async function writeAtomic(path: string, content: string, mode = 0o644): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, path);
}

export interface LocalAdapterOptions {
  /** Project directory; state goes to <cwd>/.rlpipe/local/. */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** How long stop() waits after SIGTERM before SIGKILL (default 15 s): launch.sh's cleanup stops the sandbox. */
  readonly stopGraceMs?: number;
}

export class LocalAdapter implements ProviderAdapter {
  readonly provider = "local" as const;
  constructor(private readonly opts: LocalAdapterOptions) {}

  private dir(name: string): string {
    return join(this.opts.cwd, ".rlpipe", "local", name);
  }

  async prepare(plan: Plan): Promise<void> {
    const dir = this.dir(plan.jobName);
    const bundle = join(dir, "bundle");
    if ((await readText(join(bundle, ".digest")))?.trim() === plan.bundleDigest) return;
    // Written beside, then renamed into place: a crash never leaves a half-written bundle, and of two
    // deploys preparing the same bundle at once, one rename wins and the other finds its digest.
    const tmp = `${bundle}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
    for (const f of plan.files) {
      const p = join(tmp, f.path);
      await mkdir(dirname(p), { recursive: true });
      await writeFile(p, f.content, { mode: f.executable ? 0o755 : 0o644 });
    }
    await writeFile(join(tmp, ".digest"), `${plan.bundleDigest}\n`);
    try {
      await rename(tmp, bundle);
    } catch (e) {
      if (!["ENOTEMPTY", "EEXIST"].includes((e as NodeJS.ErrnoException).code ?? "")) throw e;
      if ((await readText(join(bundle, ".digest")))?.trim() !== plan.bundleDigest) {
        await rm(bundle, { recursive: true, force: true });
        await rename(tmp, bundle);
        return;
      }
      await rm(tmp, { recursive: true, force: true });
    }
  }

  async findExisting(plan: Plan): Promise<JobRef | undefined> {
    const state = await this.readState(plan.jobName);
    return state === undefined ? undefined : this.ref(plan.jobName, state);
  }

  async submit(plan: Plan): Promise<JobRef> {
    const dir = this.dir(plan.jobName);
    const lock = join(dir, "submitted");
    // The lock file is created exclusively: two deploys racing on one machine make one job.
    try {
      await (await open(lock, "wx")).close();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") throw new ProviderError("local", "exists", "job_exists", `job ${plan.jobName} was already submitted on this machine`);
      throw e;
    }
    await writeAtomic(join(dir, "run.sh"), RUNNER, 0o755);
    const log = openSync(join(dir, "job.log"), "a");
    let pid: number | undefined;
    try {
      const child = spawn("bash", [join(dir, "run.sh")], {
        cwd: dir,
        detached: true, // its own process group: stop() signals the whole job, and it outlives the CLI
        stdio: ["ignore", log, log],
        env: { ...this.opts.env, RLPIPE_RUN: plan.jobName, [JOB_MARK]: dir } as NodeJS.ProcessEnv,
      });
      pid = child.pid;
      child.unref();
    } finally {
      closeSync(log);
    }
    if (pid === undefined) {
      await rm(lock, { force: true });
      throw new ProviderError("local", "fatal", "spawn_failed", `could not start bash for ${plan.jobName}`);
    }
    const state: State = { pid, procStart: (await procStart(pid)) ?? "", startedAt: new Date().toISOString() };
    await writeAtomic(join(dir, "state.json"), `${JSON.stringify(state)}\n`);
    return this.ref(plan.jobName, state);
  }

  async status(ref: JobRef): Promise<JobStatus> {
    const dir = this.dir(ref.name);
    const state = await this.readState(ref.name);
    if (state === undefined) throw new ProviderError("local", "not_found", "job_not_found", `no local job ${ref.name} in ${dirname(dir)}`);
    // Liveness first, then the exit code: the runner writes exit_code before it exits, so a job seen gone has its
    // code visible by now (read the other way round, a job ending in between looked LOST).
    const alive = await this.alive(state);
    const code = (await readText(join(dir, "exit_code")))?.trim();
    const stopRequested = (await readText(join(dir, "stop_requested"))) !== undefined;
    const times = { startedAt: state.startedAt };
    if (code !== undefined) {
      const exitCode = Number(code);
      const endedAt = (await stat(join(dir, "exit_code"))).mtime.toISOString();
      const raw = exitCode === 0 ? "SUCCEEDED" : stopRequested ? "STOPPED" : "FAILED";
      return { phase: normalizePhase("local", raw), rawPhase: raw, exitCode, ...times, endedAt, ...(exitCode === 0 ? {} : { message: `launch.sh exited with code ${exitCode}; see rlpipe logs ${ref.name}` }) };
    }
    if (alive) {
      const raw = stopRequested ? "STOPPING" : "RUNNING";
      return { phase: normalizePhase("local", raw), rawPhase: raw, ...times };
    }
    // Gone without an exit code: killed with SIGKILL (a stop past its grace time) or the machine restarted.
    return stopRequested
      ? { phase: "STOPPED", rawPhase: "STOPPED", ...times, message: "stopped (killed)" }
      : { phase: "FAILED", rawPhase: "LOST", ...times, message: "the job's processes are gone without an exit code (killed, or the machine restarted)" };
  }

  async logs(ref: JobRef, cursor: string | undefined): Promise<LogPage> {
    const offset = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(offset) || offset < 0) throw new ProviderError("local", "fatal", "bad_cursor", `bad log cursor ${JSON.stringify(cursor)}`);
    let fh;
    try { fh = await open(join(this.dir(ref.name), "job.log"), "r"); } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new ProviderError("local", "not_found", "job_not_found", `no local job ${ref.name}`);
      throw e;
    }
    try {
      const size = (await fh.stat()).size;
      if (size <= offset) return { text: "", cursor: String(offset) };
      // Whole UTF-8 characters only: stop before a partial sequence at the end, the next page starts there.
      const buf = Buffer.alloc(size - offset);
      await fh.read(buf, 0, buf.length, offset);
      let end = buf.length;
      for (let back = 1; back <= 3 && end - back >= 0; back++) {
        const b = buf[end - back]!;
        if ((b & 0xc0) === 0x80) continue; // continuation byte
        const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
        if (need > back) end -= back;
        break;
      }
      return { text: buf.subarray(0, end).toString("utf8"), cursor: String(offset + end) };
    } finally {
      await fh.close();
    }
  }

  async stop(ref: JobRef): Promise<void> {
    const dir = this.dir(ref.name);
    const state = await this.readState(ref.name);
    if (state === undefined) throw new ProviderError("local", "not_found", "job_not_found", `no local job ${ref.name}`);
    if (!(await this.alive(state)) || (await readText(join(dir, "exit_code"))) !== undefined) {
      await this.endLeftovers(dir); // over, but something of it may have outlived it
      return;
    }
    await writeAtomic(join(dir, "stop_requested"), `${new Date().toISOString()}\n`);
    const signal = (sig: NodeJS.Signals) => { try { process.kill(-state.pid, sig); } catch { /* already gone */ } };
    // Stopped means the whole group is gone, not only its leader: a child that got the same signal may still be
    // exiting when the runner has already ended.
    const gone = async () => !(await this.alive(state)) && (await liveGroupMembers(state.pid)).length === 0;
    signal("SIGTERM");
    const deadline = Date.now() + (this.opts.stopGraceMs ?? 15_000);
    let graceful = false;
    while (Date.now() < deadline) {
      if (await gone()) { graceful = true; break; }
      await sleep(100);
    }
    if (!graceful) {
      signal("SIGKILL");
      for (let i = 0; i < 50 && !(await gone()); i++) await sleep(20); // SIGKILL is delivered, not waited for
    }
    // Whatever the grace did (launch.sh's clean-up may not have run: a SIGKILL past the grace), nothing of the run
    // outlives it: what left the group (the sandbox's own session) is found by its mark and ended too.
    await this.endLeftovers(dir);
  }

  private async endLeftovers(dir: string): Promise<void> {
    const kill = (pid: number, sig: NodeJS.Signals) => {
      try { process.kill(-pid, sig); } catch { /* not a group leader */ }
      try { process.kill(pid, sig); } catch { /* already gone */ }
    };
    let left = await markedProcesses(dir);
    if (left.length === 0) return;
    for (const pid of left) kill(pid, "SIGTERM");
    for (let i = 0; i < 100 && left.length > 0; i++) { await sleep(50); left = await markedProcesses(dir); }
    for (const pid of left) kill(pid, "SIGKILL");
    for (let i = 0; i < 100 && (await markedProcesses(dir)).length > 0; i++) await sleep(20);
  }

  private async alive(state: State): Promise<boolean> {
    const now = await procStart(state.pid);
    return now !== undefined && (state.procStart === "" || now === state.procStart);
  }

  private async readState(name: string): Promise<State | undefined> {
    const raw = await readText(join(this.dir(name), "state.json"));
    if (raw === undefined) return undefined;
    const parsed = State.safeParse(JSON.parse(raw));
    if (!parsed.success) throw new ProviderError("local", "fatal", "bad_state", `${join(this.dir(name), "state.json")} is damaged; remove the directory to forget the job`, { exitCode: 2 });
    return parsed.data;
  }

  private ref(name: string, state: State): JobRef {
    return { provider: "local", name, id: String(state.pid), extra: { dir: this.dir(name) } };
  }
}

export const createAdapter: AdapterFactory = (ctx) => new LocalAdapter({ cwd: ctx.cwd, env: ctx.env });
