// A real Slurm cluster for tests (Debian slurm-wlm 22.05 + munge, run as root): munged as user munge on a
// private socket, slurmctld -D and one slurmd -D per node on free loopback ports, with a config in a temp
// directory. Debian's slurmd is built with multiple-slurmd support (-N), so two "nodes" n1 and n2 run on this
// one host and multi-node jobs really run. SLURM_CONF goes only into the environment handed to child commands
// (never into /etc or this process). Everything is stopped by the process ids started here, after the
// cluster's jobs are cancelled.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./moto.js";

export interface SlurmCluster {
  readonly dir: string;
  readonly conf: string;
  /** process.env plus SLURM_CONF: the environment for Slurm commands and the adapter's context. */
  readonly env: Readonly<Record<string, string>>;
  /** Wall-clock milliseconds from the first daemon start until the node was idle. */
  readonly startMs: number;
  readonly nodes: readonly string[];
  /** Process ids started here (munged, slurmctld, the slurmds). */
  pids(): readonly number[];
  /** Restart slurmctld; clearState forgets every job and restarts job ids at 1 (a controller that lost its state). */
  restartController(opts: { clearState: boolean }): Promise<void>;
  stop(): Promise<void>;
}

const MUNGE_KEY = "/etc/munge/munge.key";
const BINARIES = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/munge"];

/** Why a cluster cannot start here (undefined when it can): tests skip with this reason. */
export function slurmUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "the Slurm test cluster needs root (munged runs as user munge, SlurmUser=root)";
  const missing = BINARIES.filter((b) => !existsSync(b));
  if (missing.length > 0) return `Slurm or munge is not installed (missing ${missing.join(", ")}; apt-get install slurm-wlm munge)`;
  if (!existsSync(MUNGE_KEY)) return `${MUNGE_KEY} is missing`;
  if (userIds("munge") === undefined) return "there is no munge user";
  return undefined;
}

function userIds(name: string): { uid: number; gid: number } | undefined {
  for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
    const f = line.split(":");
    if (f[0] === name && f.length >= 4) return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

function exec(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 10_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: timeoutMs, encoding: "utf8" }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, alive: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = alive();
    if (dead !== undefined) throw new Error(`${what}: ${dead}`);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
    child.once("exit", () => resolve());
  });
}

async function terminate(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await done;
  clearTimeout(t);
}

/** The cluster's directories and slurm.conf in `dir` (ports chosen free now). */
async function layout(dir: string, nodes: readonly string[], munge: { uid: number; gid: number }, minJobAgeS: number): Promise<{ conf: string; socket: string }> {
  chmodSync(dir, 0o755); // munged (user munge) must reach its socket directory
  const mungeDir = join(dir, "munge");
  for (const d of ["state", "log", "munge", ...nodes.map((n) => join("spool", n))]) mkdirSync(join(dir, d), { recursive: true });
  chownSync(mungeDir, munge.uid, munge.gid);
  const socket = join(mungeDir, "munge.socket");
  const ctlPort = await freePort();
  const nodePorts: number[] = [];
  for (const _ of nodes) nodePorts.push(await freePort());
  const host = hostname().split(".")[0]!;
  const conf = join(dir, "slurm.conf");
  writeFileSync(conf, [
    "ClusterName=rlpipetest",
    `SlurmctldHost=${host}(127.0.0.1)`,
    `SlurmctldPort=${ctlPort}`,
    "SlurmUser=root",
    "AuthType=auth/munge",
    `AuthInfo=socket=${socket}`,
    "CredType=cred/munge",
    "MpiDefault=none",
    `StateSaveLocation=${join(dir, "state")}`,
    `SlurmdSpoolDir=${join(dir, "spool", "%n")}`,
    `SlurmctldPidFile=${join(dir, "slurmctld.pid")}`,
    `SlurmdPidFile=${join(dir, "slurmd-%n.pid")}`,
    `SlurmctldLogFile=${join(dir, "log", "slurmctld.log")}`,
    `SlurmdLogFile=${join(dir, "log", "slurmd-%n.log")}`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    // No accounting database: finished jobs come from the completion log once slurmctld forgets them.
    "AccountingStorageType=accounting_storage/none",
    "JobCompType=jobcomp/filetxt",
    `JobCompLoc=${join(dir, "log", "jobcomp.txt")}`,
    `MinJobAge=${minJobAgeS}`,
    "KillWait=5",
    "SchedulerType=sched/backfill",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    "ReturnToService=2",
    ...nodes.map((n, i) => `NodeName=${n} NodeHostname=${host} NodeAddr=127.0.0.1 Port=${nodePorts[i]} CPUs=${cpus().length} RealMemory=1000 State=UNKNOWN`),
    "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    "",
  ].join("\n"));
  return { conf, socket };
}

export async function startSlurm(opts: { nodes?: number; minJobAgeS?: number } = {}): Promise<SlurmCluster> {
  const why = slurmUnavailable();
  if (why !== undefined) throw new Error(why);
  const munge = userIds("munge")!;
  const nodes = Array.from({ length: opts.nodes ?? 2 }, (_, i) => `n${i + 1}`);
  const dir = mkdtempSync(join(tmpdir(), "rlpipe-slurm-"));
  let conf: string;
  let socket: string;
  try {
    ({ conf, socket } = await layout(dir, nodes, munge, opts.minJobAgeS ?? 300));
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const mungeDir = join(dir, "munge");
  const env: Record<string, string> = { ...(process.env as Record<string, string>), SLURM_CONF: conf };

  const logFd = (name: string) => openSync(join(dir, "log", name), "a");
  const children: { munged?: ChildProcess; ctl?: ChildProcess; slurmds: ChildProcess[] } = { slurmds: [] };
  const launch = (name: string, cmd: string, args: string[], extra: { uid?: number; gid?: number } = {}) => {
    const fd = logFd(`${name}.out`);
    const child = spawn(cmd, args, { env, stdio: ["ignore", fd, fd], ...extra });
    closeSync(fd);
    return child;
  };
  const tail = (name: string) => { try { return readFileSync(join(dir, "log", name), "utf8").slice(-2000); } catch { return ""; } };
  const deadOf = (name: string, c: ChildProcess | undefined) => (c !== undefined && (c.exitCode !== null || c.signalCode !== null) ? `${name} exited: ${tail(`${name}.out`)}` : undefined);
  const anyDead = () => deadOf("munged", children.munged) ?? deadOf("slurmctld", children.ctl) ?? children.slurmds.map((c, i) => deadOf(`slurmd-${nodes[i]}`, c)).find((d) => d !== undefined);

  const pids = () => [children.munged?.pid, children.ctl?.pid, ...children.slurmds.map((c) => c.pid)].filter((p): p is number => p !== undefined);
  // A crashed test process must not leave daemons behind.
  const killAll = () => { for (const p of pids()) { try { process.kill(p, "SIGKILL"); } catch { /* gone */ } } };
  process.once("exit", killAll);

  const startCtl = (clear: boolean) => { children.ctl = launch("slurmctld", "/usr/sbin/slurmctld", ["-D", ...(clear ? ["-c"] : []), "-f", conf]); };
  const idle = () => waitFor("slurm nodes idle", async () => {
    const states = (await exec("sinfo", ["--noheader", "--Node", "--format=%N %T"], env)).stdout.trim().split("\n");
    return states.length === nodes.length && states.every((l) => / idle$/.test(l.trim()));
  }, 30_000, anyDead);

  const t0 = performance.now();
  try {
    // node:child_process drops supplementary groups when it switches uid/gid, so munged runs as munge alone.
    children.munged = launch("munged", "/usr/sbin/munged", [
      "--foreground", `--socket=${socket}`, `--key-file=${MUNGE_KEY}`, `--log-file=${join(mungeDir, "munged.log")}`,
      `--pid-file=${join(mungeDir, "munged.pid")}`, `--seed-file=${join(mungeDir, "munged.seed")}`,
    ], munge);
    await waitFor("munged", async () => (await exec("munge", ["--no-input", `--socket=${socket}`], env)).code === 0, 10_000, anyDead);
    startCtl(false);
    for (const n of nodes) children.slurmds.push(launch(`slurmd-${n}`, "/usr/sbin/slurmd", ["-D", "-N", n, "-f", conf]));
    await idle();
  } catch (e) {
    await Promise.all([...children.slurmds.map(terminate), terminate(children.ctl)]);
    await terminate(children.munged);
    process.removeListener("exit", killAll);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const startMs = performance.now() - t0;

  return {
    dir, conf, env, startMs, nodes, pids,
    async restartController({ clearState }) {
      await terminate(children.ctl);
      if (clearState) {
        // -c alone forgets the jobs but keeps numbering after them; without its state directory the
        // controller also numbers jobs from 1 again, as a rebuilt controller would.
        rmSync(join(dir, "state"), { recursive: true, force: true });
        mkdirSync(join(dir, "state"));
      }
      startCtl(clearState);
      await idle();
    },
    async stop() {
      // Jobs first: their processes belong to slurmstepd, which outlives slurmd.
      const ids = (await exec("squeue", ["--noheader", "--format=%i"], env)).stdout.split("\n").map((s) => s.trim()).filter((s) => s !== "");
      if (ids.length > 0) {
        await exec("scancel", ids, env);
        await waitFor("jobs cancelled", async () => (await exec("squeue", ["--noheader", "--format=%i"], env)).stdout.trim() === "", 30_000, () => undefined).catch(() => undefined);
      }
      await Promise.all([...children.slurmds.map(terminate), terminate(children.ctl)]);
      await terminate(children.munged);
      process.removeListener("exit", killAll);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
