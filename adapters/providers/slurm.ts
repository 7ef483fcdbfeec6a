// Self-hosted Slurm: the launch bundle goes to a content-addressed directory on the cluster's shared filesystem,
// the job is submitted with sbatch (on this machine, or over ssh on a login node), found again by its job name
// (squeue, then the accounting database or the job-completion log), followed through its output file, and
// cancelled with scancel. Every command has a timeout and an AbortSignal; failures carry stable codes.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { posix } from "node:path";
import type { Plan } from "../../core/plan.js";
import { isTerminal, normalizePhase } from "../../core/providers/phases.js";
import { SlurmRequestBody, slurmOutputFile } from "../../core/providers/slurm-request.js";
import { shellJoin, shellQuote } from "../../core/render/shell.js";
import {
  type AdapterContext, type AdapterFactory, type JobRef, type JobStatus, type LogPage, type ProviderAdapter, ProviderError,
} from "./provider.js";

// ------------------------------------------------------------------------------------------ running commands

export interface CommandResult {
  readonly code: number;
  readonly stdout: Buffer;
  readonly stderr: string;
}

export interface RunOptions {
  readonly stdin?: string;
  /** Variables for this command only (over ssh: set with `env` on the login node). */
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** Runs Slurm's commands where they are: on this machine, or on a login node over ssh. */
export interface CommandRunner {
  /** "this machine" or "<login> (ssh)": for messages. */
  readonly where: string;
  readonly ssh: boolean;
  run(argv: readonly string[], opts?: RunOptions): Promise<CommandResult>;
}

const MAX_STDOUT_BYTES = 32 * 1024 * 1024;
const MAX_STDERR_CHARS = 16 * 1024;

/** Spawn one process and collect its output; a timeout kills it and is an ambiguous failure (it may have acted). */
function spawnCollect(program: string, args: readonly string[], env: NodeJS.ProcessEnv, opts: RunOptions & { timeoutMs: number; what: string; where: string }): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted === true) { reject(opts.signal.reason); return; }
    const child = spawn(program, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = "";
    let timedOut = false;
    let settled = false;
    const finish = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      f();
    };
    const timer = setTimeout(() => { timedOut = true; child.kill("SIGKILL"); }, opts.timeoutMs);
    const onAbort = () => child.kill("SIGKILL");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (d: Buffer) => { if (outBytes < MAX_STDOUT_BYTES) { out.push(d); outBytes += d.length; } });
    child.stderr.on("data", (d: Buffer) => { if (err.length < MAX_STDERR_CHARS) err += d.toString("utf8"); });
    child.on("error", (e: NodeJS.ErrnoException) => finish(() => {
      // A missing program reads like a shell's "command not found" so callers handle both places alike.
      if (e.code === "ENOENT") resolve({ code: 127, stdout: Buffer.alloc(0), stderr: `${program}: command not found` });
      else reject(new ProviderError("slurm", "fatal", "slurm_spawn_failed", `could not run ${opts.what} on ${opts.where}: ${e.message}`, { cause: e }));
    }));
    child.on("close", (code, sig) => finish(() => {
      if (opts.signal?.aborted === true) reject(opts.signal.reason);
      else if (timedOut) reject(new ProviderError("slurm", "ambiguous", "slurm_timeout", `${opts.what} on ${opts.where} did not finish within ${opts.timeoutMs} ms`));
      else resolve({ code: code ?? (sig === null ? 1 : 128), stdout: Buffer.concat(out), stderr: err });
    }));
    child.stdin.on("error", () => undefined); // EPIPE when the command exits without reading its input
    child.stdin.end(opts.stdin ?? "");
  });
}

function cleanEnv(env: Readonly<Record<string, string | undefined>>): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

export function localRunner(env: Readonly<Record<string, string | undefined>>, defaultTimeoutMs: number): CommandRunner {
  const base = cleanEnv(env);
  return {
    where: "this machine",
    ssh: false,
    run: (argv, opts = {}) => spawnCollect(argv[0]!, argv.slice(1), { ...base, ...opts.env }, { ...opts, timeoutMs: opts.timeoutMs ?? defaultTimeoutMs, what: argv[0]!, where: "this machine" }),
  };
}

export interface SshOptions {
  /** The ssh program (default "ssh"). */
  readonly program?: string;
  readonly connectTimeoutS?: number;
}

/**
 * ssh's argv for one remote command. BatchMode never prompts (a missing key fails at once instead of hanging);
 * `--` keeps a destination or command word from being read as an option; ssh hands the command line to the
 * login shell, so every word is quoted.
 */
export function sshArgv(login: string, remote: readonly string[], opts: SshOptions = {}): string[] {
  return [
    opts.program ?? "ssh",
    "-o", "BatchMode=yes",
    "-o", `ConnectTimeout=${opts.connectTimeoutS ?? 15}`,
    "-o", "ServerAliveInterval=15",
    "-o", "ServerAliveCountMax=3",
    "-T",
    "--", login, shellJoin(remote),
  ];
}

export function sshRunner(login: string, env: Readonly<Record<string, string | undefined>>, defaultTimeoutMs: number, opts: SshOptions = {}): CommandRunner {
  const base = cleanEnv(env);
  const where = `${login} (ssh)`;
  return {
    where,
    ssh: true,
    run: (argv, o = {}) => {
      const vars = Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`);
      const [program, ...args] = sshArgv(login, vars.length > 0 ? ["env", ...vars, ...argv] : argv, opts);
      return spawnCollect(program!, args, base, { ...o, timeoutMs: o.timeoutMs ?? defaultTimeoutMs, what: argv[0]!, where });
    },
  };
}

// ------------------------------------------------------------------------------------------ failures

const firstLines = (s: string) => s.trim().split("\n").slice(0, 3).join("; ").slice(0, 400);

/** A failed command as a ProviderError: what failed, where, and whether repeating it can help. */
export function commandFailure(runner: Pick<CommandRunner, "where" | "ssh">, what: string, r: CommandResult): ProviderError {
  const err = r.stderr;
  const detail = firstLines(err) || `exit code ${r.code}`;
  if (r.code === 127 || /command not found/i.test(err)) {
    return new ProviderError("slurm", "fatal", "slurm_unavailable", `${what} is not available on ${runner.where}`, {
      hint: runner.ssh
        ? "the login node needs the Slurm client commands (sbatch, squeue, sacct, scontrol, scancel) on the PATH of a non-interactive ssh session"
        : "install the Slurm client commands (Debian: apt-get install slurm-client) or set targets.slurm.login to submit over ssh from a login node",
    });
  }
  if (runner.ssh && r.code === 255) {
    if (/Permission denied|Host key verification failed|Could not resolve hostname|Too many authentication failures|no such identity|bad configuration option/i.test(err)) {
      return new ProviderError("slurm", "fatal", "slurm_ssh_failed", `ssh to ${runner.where} failed: ${detail}`, { hint: "check that `ssh -o BatchMode=yes <login> true` works without a prompt (keys or an agent, a known host key)" });
    }
    if (/Connection refused|Connection timed out|No route to host|Network is unreachable|Operation timed out/i.test(err)) {
      return new ProviderError("slurm", "retryable", "slurm_ssh_unreachable", `could not connect to ${runner.where}: ${detail}`);
    }
    // The connection broke after it was made: the command may have run.
    return new ProviderError("slurm", "ambiguous", "slurm_ssh_failed", `ssh to ${runner.where} failed during ${what}: ${detail}`);
  }
  if (/Unable to contact slurm controller|temporarily unable to accept|Resource temporarily unavailable|try again later|Problem talking to the database|Connection refused/i.test(err)) {
    return new ProviderError("slurm", "retryable", "slurm_controller_unavailable", `${what} on ${runner.where}: ${detail}`);
  }
  if (/Socket timed out|Zero Bytes were transmitted|Connection reset|Broken pipe/i.test(err)) {
    return new ProviderError("slurm", "ambiguous", "slurm_controller_timeout", `${what} on ${runner.where}: ${detail}`);
  }
  return new ProviderError("slurm", "fatal", "slurm_command_failed", `${what} failed on ${runner.where}: ${detail}`);
}

// ------------------------------------------------------------------------------------------ parsing Slurm output

/** A job as squeue, scontrol or sacct report it. */
export interface SlurmJobRecord {
  readonly id: string;
  readonly name: string;
  readonly state: string;
  /** "exit:signal", e.g. "3:0". */
  readonly exitCode?: string;
  readonly start?: string;
  readonly end?: string;
  readonly reason?: string;
  readonly user?: string;
  readonly stdout?: string;
}

/** `sbatch --parsable` prints "<id>" or "<id>;<cluster>". */
export function parseSbatchId(stdout: string): string | undefined {
  const line = stdout.trim().split("\n").pop()?.trim() ?? "";
  return /^(\d+)(;\S+)?$/.exec(line)?.[1];
}

/** Lines of `|`-separated fields in the given order (squeue --format, sacct --parsable2); job steps are skipped. */
export function parseDelimited(text: string, fields: readonly (keyof SlurmJobRecord)[]): SlurmJobRecord[] {
  const out: SlurmJobRecord[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const parts = line.split("|");
    const rec: Record<string, string> = {};
    fields.forEach((f, i) => { const v = parts[i]?.trim(); if (v !== undefined && v !== "") rec[f] = v; });
    if (rec.id === undefined || !/^\d+$/.test(rec.id) || rec.name === undefined || rec.state === undefined) continue;
    out.push(rec as unknown as SlurmJobRecord);
  }
  return out;
}

/** `scontrol -o show job <id>`: one line of Key=Value pairs (values of the fields read here have no spaces). */
export function parseScontrolJob(line: string): SlurmJobRecord | undefined {
  const kv = new Map<string, string>();
  for (const part of line.trim().split(/ (?=[A-Za-z][A-Za-z0-9_:/]*=)/)) {
    const eq = part.indexOf("=");
    if (eq > 0) kv.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const id = kv.get("JobId");
  const name = kv.get("JobName");
  const state = kv.get("JobState");
  if (id === undefined || name === undefined || state === undefined) return undefined;
  const pick = (k: string) => { const v = kv.get(k); return v === undefined || v === "" || v === "(null)" ? {} : { [k]: v }; };
  const f = { ...pick("ExitCode"), ...pick("StartTime"), ...pick("EndTime"), ...pick("Reason"), ...pick("UserId"), ...pick("StdOut") } as Record<string, string>;
  return {
    id, name, state,
    ...(f.ExitCode === undefined ? {} : { exitCode: f.ExitCode }),
    ...(f.StartTime === undefined ? {} : { start: f.StartTime }),
    ...(f.EndTime === undefined ? {} : { end: f.EndTime }),
    ...(f.Reason === undefined ? {} : { reason: f.Reason }),
    ...(f.UserId === undefined ? {} : { user: f.UserId }),
    ...(f.StdOut === undefined ? {} : { stdout: f.StdOut }),
  };
}

/** Slurm times as ISO 8601: with an offset (SLURM_TIME_FORMAT below) in UTC; without one, as the cluster wrote it. */
export function slurmTime(s: string | undefined): string | undefined {
  if (s === undefined) return undefined;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:([+-]\d\d):?(\d\d)|Z)?$/.exec(s);
  if (m === null) return undefined; // Unknown, None, N/A
  if (m[2] === undefined) return s.endsWith("Z") ? new Date(s).toISOString() : m[1];
  return new Date(`${m[1]}${m[2]}:${m[3]}`).toISOString();
}

/** The normalized status of a job record (exit code: the process's, or 128 + the signal that ended it). */
export function statusOf(rec: SlurmJobRecord): JobStatus {
  const phase = normalizePhase("slurm", rec.state);
  const started = phase === "QUEUED" ? undefined : slurmTime(rec.start);
  const ended = isTerminal(phase) ? slurmTime(rec.end) : undefined;
  let exitCode: number | undefined;
  let signalNote: string | undefined;
  const ec = rec.exitCode === undefined ? null : /^(\d+):(\d+)$/.exec(rec.exitCode);
  if (isTerminal(phase) && ec !== null && ec !== undefined) {
    const sig = Number(ec[2]);
    exitCode = sig === 0 ? Number(ec[1]) : 128 + sig;
    if (sig !== 0) signalNote = `ended by signal ${sig}`;
  }
  const reason = rec.reason === undefined || rec.reason === "None" ? undefined : rec.reason;
  const message = [reason, signalNote].filter((x) => x !== undefined).join("; ");
  return {
    phase, rawPhase: rec.state,
    ...(message === "" ? {} : { message }),
    ...(started === undefined ? {} : { startedAt: started }),
    ...(ended === undefined ? {} : { endedAt: ended }),
    ...(exitCode === undefined ? {} : { exitCode }),
  };
}

/** The newest job (highest id) of a list. */
const newest = (jobs: readonly SlurmJobRecord[]): SlurmJobRecord | undefined =>
  jobs.reduce<SlurmJobRecord | undefined>((best, j) => (best === undefined || BigInt(j.id) > BigInt(best.id) ? j : best), undefined);

// ------------------------------------------------------------------------------------------ the bundle

export interface BundleEntry {
  /** Relative to the bundle directory. */
  readonly path: string;
  readonly content: string;
  readonly executable: boolean;
}

function checkRelative(path: string): void {
  const norm = posix.normalize(path);
  if (path === "" || posix.isAbsolute(path) || norm.startsWith("..") || norm !== path) {
    throw new ProviderError("slurm", "fatal", "slurm_bad_bundle_path", `bundle file ${JSON.stringify(path)} is not a plain relative path`);
  }
}

/** Write the files locally, each atomically (temp file, mode, rename), leaving identical files untouched. */
export async function writeBundleLocal(dir: string, files: readonly BundleEntry[]): Promise<void> {
  for (const f of files) {
    checkRelative(f.path);
    const target = posix.join(dir, f.path);
    const mode = f.executable ? 0o755 : 0o644;
    try {
      const [have, st] = await Promise.all([readFile(target, "utf8"), stat(target)]);
      if (have === f.content && (st.mode & 0o777) === mode) continue;
    } catch { /* absent: write it */ }
    const tmp = `${target}.tmp-${randomBytes(6).toString("hex")}`;
    try {
      await mkdir(posix.dirname(target), { recursive: true });
      await writeFile(tmp, f.content, { mode });
      await chmod(tmp, mode); // writeFile's mode passes through the umask
      // A rename replaces the file in one step: a job still reading the previous launch.sh keeps its copy.
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw new ProviderError("slurm", "fatal", "slurm_bundle_write_failed", `could not write ${target}: ${(e as Error).message}`, { cause: e });
    }
  }
}

/**
 * A POSIX sh script that writes the files into `dir` on a login node, read by `sh -s` from ssh's stdin (so no
 * size limit of a command line applies): each file as base64 (whose alphabet cannot contain the heredoc
 * delimiter), written to a temp file, given its mode and renamed into place.
 */
export function remoteInstallScript(dir: string, files: readonly BundleEntry[]): string {
  const L = [
    "set -eu",
    `d=${shellQuote(dir)}`,
    "rlpipe_put() {",
    '  p="$d/$1"; mkdir -p "$(dirname "$p")"',
    '  t="$(mktemp "$(dirname "$p")/.rlpipe-tmp.XXXXXX")"',
    '  if base64 -d > "$t" && chmod "$2" "$t" && mv -f "$t" "$p"; then :; else rm -f "$t"; echo "rlpipe: could not write $p" >&2; exit 1; fi',
    "}",
  ];
  for (const f of files) {
    checkRelative(f.path);
    const b64 = Buffer.from(f.content, "utf8").toString("base64").replace(/.{1,76}/g, "$&\n");
    L.push(`rlpipe_put ${shellQuote(f.path)} ${f.executable ? "755" : "644"} <<'RLPIPE_EOF'`, b64.trimEnd(), "RLPIPE_EOF");
  }
  L.push("");
  return L.join("\n");
}

// ------------------------------------------------------------------------------------------ log pages

/** The length of the longest prefix of `buf` that ends on a whole UTF-8 character. */
export function utf8CompleteLength(buf: Uint8Array): number {
  const n = buf.length;
  for (let back = 1; back <= Math.min(4, n); back++) {
    const b = buf[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

async function readLocalPage(file: string, offset: number, maxBytes: number): Promise<{ start: number; bytes: Buffer } | undefined> {
  let fh;
  try {
    fh = await open(file, "r");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new ProviderError("slurm", "fatal", "slurm_log_read_failed", `could not read ${file}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const size = (await fh.stat()).size;
    // A shorter file than the cursor was rewritten: start again from its beginning.
    const start = size < offset ? 0 : offset;
    const len = Math.min(maxBytes, size - start);
    const bytes = Buffer.alloc(len);
    const { bytesRead } = len === 0 ? { bytesRead: 0 } : await fh.read(bytes, 0, len, start);
    return { start, bytes: bytes.subarray(0, bytesRead) };
  } finally {
    await fh.close();
  }
}

/** Over ssh: prints the offset actually used on the first line, then up to maxBytes from it; exit 3 when absent. */
const REMOTE_PAGE = 'f="$1"; o="$2"; m="$3"; [ -f "$f" ] || exit 3; s=$(wc -c < "$f"); [ "$s" -ge "$o" ] || o=0; echo "$o"; tail -c +"$((o + 1))" "$f" | head -c "$m"';

// ------------------------------------------------------------------------------------------ the adapter

export interface SlurmAdapterOptions {
  /** The ssh program for targets.slurm.login (default "ssh"; the CLI takes RLPIPE_SSH). */
  readonly sshProgram?: string;
  readonly sshConnectTimeoutS?: number;
  /** Per command (default 60 s: Slurm's own client retries fit inside it). */
  readonly commandTimeoutMs?: number;
  /** How far back accounting is searched for a job by name (default 30 days). */
  readonly lookbackDays?: number;
  /** Largest log page (default 1 MiB). */
  readonly logPageBytes?: number;
}

// Times with their UTC offset, so status times are unambiguous ISO 8601 (squeue, scontrol and sacct honour it;
// the completion log keeps the local times it was written with).
const QUERY_ENV = { SLURM_TIME_FORMAT: "%Y-%m-%dT%H:%M:%S%z" } as const;

export function createSlurmAdapter(ctx: AdapterContext, opts: SlurmAdapterOptions = {}): ProviderAdapter {
  const timeoutMs = opts.commandTimeoutMs ?? 60_000;
  const lookbackDays = opts.lookbackDays ?? 30;
  const pageBytes = opts.logPageBytes ?? 1024 * 1024;
  const runners = new Map<string, CommandRunner>();
  const users = new Map<CommandRunner, Promise<string>>();

  const runnerFor = (login: string | undefined): CommandRunner => {
    const key = login ?? "";
    let r = runners.get(key);
    if (r === undefined) {
      r = login === undefined ? localRunner(ctx.env, timeoutMs) : sshRunner(login, ctx.env, timeoutMs, {
        ...(opts.sshProgram === undefined ? {} : { program: opts.sshProgram }),
        ...(opts.sshConnectTimeoutS === undefined ? {} : { connectTimeoutS: opts.sshConnectTimeoutS }),
      });
      runners.set(key, r);
    }
    return r;
  };
  const planLogin = (): string | undefined => ctx.recipe.targets?.slurm?.login;
  const refLogin = (ref: JobRef): string | undefined => ref.extra?.login;

  const bodyOf = (plan: Plan): SlurmRequestBody => {
    const parsed = SlurmRequestBody.safeParse(plan.request?.body);
    if (plan.provider !== "slurm" || !parsed.success) {
      throw new ProviderError("slurm", "fatal", "slurm_bad_plan", `plan ${plan.jobName} holds no sbatch request (planned for provider ${plan.provider})`, { hint: "plan the recipe with --provider slurm" });
    }
    return parsed.data;
  };
  const refOf = (body: SlurmRequestBody, id: string, login: string | undefined): JobRef => ({
    provider: "slurm", name: body.jobName, id,
    ...(login === undefined ? {} : { endpoint: `ssh://${login}` }),
    extra: { output: slurmOutputFile(body, id), bundleDir: body.bundleDir, ...(login === undefined ? {} : { login }) },
  });

  const run = async (runner: CommandRunner, argv: readonly string[], signal: AbortSignal | undefined, extra: Omit<RunOptions, "signal"> = {}) =>
    runner.run(argv, { ...extra, ...(signal === undefined ? {} : { signal }) });

  /** The user the commands run as: squeue and sacct are narrowed to it, so another user's same-named job never counts. */
  const userOf = (runner: CommandRunner, signal: AbortSignal | undefined): Promise<string> => {
    let p = users.get(runner);
    if (p === undefined) {
      p = run(runner, ["id", "-un"], signal).then((r) => {
        const name = r.stdout.toString("utf8").trim();
        if (r.code !== 0 || name === "") throw commandFailure(runner, "id -un", r);
        return name;
      });
      p.catch(() => users.delete(runner));
      users.set(runner, p);
    }
    return p;
  };

  /** Jobs slurmctld still holds (pending, running, and finished ones for MinJobAge), by name. */
  const squeueByName = async (runner: CommandRunner, name: string, signal: AbortSignal | undefined): Promise<SlurmJobRecord[]> => {
    const user = await userOf(runner, signal);
    const r = await run(runner, ["squeue", "--noheader", "--states=all", `--user=${user}`, `--name=${name}`, "--format=%i|%j|%T"], signal, { env: QUERY_ENV });
    if (r.code !== 0) throw commandFailure(runner, "squeue", r);
    return parseDelimited(r.stdout.toString("utf8"), ["id", "name", "state"]).filter((j) => j.name === name);
  };

  /** The job slurmctld holds under this id, when its name matches (ids restart when a cluster loses its state). */
  const scontrolJob = async (runner: CommandRunner, ref: JobRef, signal: AbortSignal | undefined): Promise<SlurmJobRecord | undefined> => {
    const r = await run(runner, ["scontrol", "--oneliner", "show", "job", ref.id], signal, { env: QUERY_ENV });
    if (r.code !== 0) {
      if (/Invalid job id/i.test(r.stderr)) return undefined;
      throw commandFailure(runner, "scontrol show job", r);
    }
    const rec = parseScontrolJob(r.stdout.toString("utf8").split("\n")[0] ?? "");
    return rec !== undefined && rec.id === ref.id && rec.name === ref.name ? rec : undefined;
  };

  /**
   * Finished jobs slurmctld has forgotten: the accounting database (sacct); on a cluster without one
   * ("accounting storage is disabled"), the job-completion log (sacct --completion, jobcomp/filetxt).
   * With neither, a finished job is known only for MinJobAge (300 s by default).
   */
  const finishedJobs = async (runner: CommandRunner, q: { name: string; id?: string }, signal: AbortSignal | undefined): Promise<SlurmJobRecord[]> => {
    const user = await userOf(runner, signal);
    const fields = ["id", "name", "state", "exitCode", "start", "end"] as const;
    const format = "--format=JobID,JobName,State,ExitCode,Start,End";
    const since = `--starttime=now-${lookbackDays}days`;
    const select = q.id !== undefined ? [`--jobs=${q.id}`] : [`--name=${q.name}`, since];
    const acct = await run(runner, ["sacct", "--noheader", "--parsable2", "--allocations", format, `--user=${user}`, ...select], signal, { env: QUERY_ENV });
    const match = (j: SlurmJobRecord) => j.name === q.name && (q.id === undefined || j.id === q.id);
    if (acct.code === 0) return parseDelimited(acct.stdout.toString("utf8"), fields).filter(match);
    if (!/accounting storage is disabled/i.test(acct.stderr)) throw commandFailure(runner, "sacct", acct);
    // The completion log ignores --name and --user: both are filtered here.
    const comp = await run(runner, ["sacct", "--completion", "--noheader", "--parsable2", `${format},User`, since, ...(q.id === undefined ? [] : [`--jobs=${q.id}`])], signal, { env: QUERY_ENV });
    if (comp.code !== 0) return [];
    return parseDelimited(comp.stdout.toString("utf8"), [...fields, "user"])
      .filter((j) => match(j) && (j.user === undefined || j.user === user || j.user.startsWith(`${user}(`)));
  };

  const jobRecord = async (runner: CommandRunner, ref: JobRef, signal: AbortSignal | undefined): Promise<SlurmJobRecord> => {
    const live = await scontrolJob(runner, ref, signal);
    if (live !== undefined) return live;
    const done = newest(await finishedJobs(runner, { name: ref.name, id: ref.id }, signal));
    if (done !== undefined) return done;
    throw new ProviderError("slurm", "not_found", "slurm_job_unknown", `job ${ref.id} (${ref.name}) is not known on ${runner.where}: slurmctld no longer holds it and no accounting or completion record has it`, {
      hint: "the cluster keeps finished jobs only for MinJobAge without accounting (slurmdbd) or a job-completion log (JobCompType=jobcomp/filetxt)",
    });
  };

  return {
    provider: "slurm",

    async prepare(plan, signal) {
      const body = bodyOf(plan);
      const files: BundleEntry[] = [
        ...plan.files.map((f) => ({ path: f.path, content: f.content, executable: f.executable })),
        { path: posix.basename(body.scriptPath), content: body.script, executable: false },
      ];
      const login = planLogin();
      if (login === undefined) { await writeBundleLocal(body.bundleDir, files); return; }
      const runner = runnerFor(login);
      const r = await run(runner, ["sh", "-s"], signal, { stdin: remoteInstallScript(body.bundleDir, files) });
      // The copy is content-addressed and atomic per file, so deploy() may repeat it after any non-fatal failure.
      if (r.code !== 0) throw commandFailure(runner, `copying the bundle to ${body.bundleDir}`, r);
      ctx.log?.(`slurm: bundle in ${body.bundleDir} on ${runner.where}`);
    },

    async findExisting(plan, signal) {
      const body = bodyOf(plan);
      const login = planLogin();
      const runner = runnerFor(login);
      const live = newest(await squeueByName(runner, body.jobName, signal));
      const found = live ?? newest(await finishedJobs(runner, { name: body.jobName }, signal));
      return found === undefined ? undefined : refOf(body, found.id, login);
    },

    async submit(plan, signal) {
      const body = bodyOf(plan);
      const login = planLogin();
      const runner = runnerFor(login);
      const r = await run(runner, ["sbatch", "--parsable", body.scriptPath], signal);
      if (r.code !== 0) throw commandFailure(runner, `sbatch of ${body.jobName}`, r);
      const id = parseSbatchId(r.stdout.toString("utf8"));
      // sbatch succeeded but said something else: the job may exist, so deploy() looks it up.
      if (id === undefined) throw new ProviderError("slurm", "ambiguous", "slurm_bad_reply", `sbatch on ${runner.where} printed no job id: ${firstLines(r.stdout.toString("utf8"))}`);
      ctx.log?.(`slurm: submitted job ${id} (${body.jobName}) on ${runner.where}`);
      return refOf(body, id, login);
    },

    async status(ref, signal) {
      // One attempt per call: the caller (the CLI, deploy()) is the one retry layer.
      return statusOf(await jobRecord(runnerFor(refLogin(ref)), ref, signal));
    },

    async logs(ref, cursor, signal): Promise<LogPage> {
      const offset = cursor === undefined ? 0 : Number(cursor);
      if (!Number.isSafeInteger(offset) || offset < 0) throw new ProviderError("slurm", "fatal", "slurm_bad_cursor", `log cursor ${JSON.stringify(cursor)} is not a byte offset`);
      const runner = runnerFor(refLogin(ref));
      const file = ref.extra?.output ?? (await jobRecord(runner, ref, signal)).stdout;
      if (file === undefined) throw new ProviderError("slurm", "not_found", "slurm_log_unknown", `job ${ref.id} (${ref.name}) has no known output file`);
      let page: { start: number; bytes: Buffer } | undefined;
      if (!runner.ssh) page = await readLocalPage(file, offset, pageBytes);
      else {
        const r = await run(runner, ["sh", "-c", REMOTE_PAGE, "sh", file, String(offset), String(pageBytes)], signal);
        if (r.code !== 0 && r.code !== 3) throw commandFailure(runner, `reading ${file}`, r);
        const nl = r.stdout.indexOf(0x0a);
        page = r.code === 3 || nl < 0 ? undefined : { start: Number(r.stdout.subarray(0, nl).toString("latin1")), bytes: r.stdout.subarray(nl + 1) };
      }
      // Not written yet (the job has not started): nothing new, same cursor.
      if (page === undefined) return { text: "", cursor: String(offset) };
      const whole = utf8CompleteLength(page.bytes);
      return { text: page.bytes.subarray(0, whole).toString("utf8"), cursor: String(page.start + whole) };
    },

    async stop(ref, signal) {
      const runner = runnerFor(refLogin(ref));
      // --name guards the id: scancel then touches only this run's job, never one that reused the id.
      const r = await run(runner, ["scancel", `--name=${ref.name}`, ref.id], signal);
      if (r.code === 0 || /Invalid job id|already completing or completed|Job has already finished/i.test(r.stderr)) return;
      throw commandFailure(runner, `scancel of job ${ref.id}`, r);
    },
  };
}

export const createAdapter: AdapterFactory = (ctx) =>
  createSlurmAdapter(ctx, ctx.env.RLPIPE_SSH === undefined || ctx.env.RLPIPE_SSH === "" ? {} : { sshProgram: ctx.env.RLPIPE_SSH });
