// What a managed platform does with a job, for the ModelArts and TI-ONE fakes: fetch the code from object storage
// into the container, run the start command, and (ModelArts) upload output channels while it runs and once it has
// exited. Here the "container" is this machine: paths the platform owns (/home/ma-user/…, /opt/ml/…) live under a
// temporary root, every other path is used as is, and the object store is a real S3 server on 127.0.0.1.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { S3Store } from "../../adapters/storage/s3.js";

export interface JobRunnerOptions {
  /** The S3 server standing in for OBS or COS. */
  readonly storeEndpoint: string;
  readonly storeCredentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Where the platform's own directories (`platformPrefixes`) are put on this machine. */
  readonly root: string;
  /** Path prefixes that belong to the platform's container (mapped under root). */
  readonly platformPrefixes: readonly string[];
  /** Variables the container has besides the job's own (PATH, PYTHONPATH for a stubbed verl, the store endpoint). */
  readonly env: Readonly<Record<string, string>>;
  /** How often a running job's output channels are uploaded (ModelArts: every 30 s). */
  readonly uploadPeriodMs?: number;
}

export interface OutputChannel {
  readonly localDir: string;
  readonly bucket: string;
  readonly prefix: string;
}

export interface RunningJob {
  done: boolean;
  exitCode?: number;
  output: string;
  readonly finished: Promise<void>;
  kill(): void;
}

export class JobRunner {
  private readonly stores: S3Store[] = [];
  private readonly children = new Set<ChildProcess>();
  private readonly jobs = new Set<RunningJob>();

  constructor(readonly opts: JobRunnerOptions) {}

  /** A path as the container sees it → where it is on this machine. */
  mapPath(p: string): string {
    return this.opts.platformPrefixes.some((x) => p === x || p.startsWith(`${x}/`)) ? join(this.opts.root, p) : p;
  }

  /** Every platform path in a command, mapped. */
  mapCommand(cmd: string): string {
    let out = cmd;
    for (const x of this.opts.platformPrefixes) out = out.split(x).join(join(this.opts.root, x));
    return out;
  }

  store(bucket: string, region: string): S3Store {
    const s = new S3Store({ scheme: "s3", bucket, prefix: "", region, endpoint: this.opts.storeEndpoint, credentials: this.opts.storeCredentials });
    this.stores.push(s);
    return s;
  }

  /** Download every object under bucket/prefix into dir (what the platform does before the command runs). */
  async download(bucket: string, prefix: string, dir: string): Promise<number> {
    const s = this.store(bucket, "us-east-1");
    const p = prefix === "" ? "" : `${prefix.replace(/\/+$/, "")}/`;
    let n = 0;
    for (const o of await s.list(p)) {
      const target = join(dir, ...o.key.slice(p.length).split("/"));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, await s.get(o.key));
      n++;
    }
    return n;
  }

  /**
   * Run `command` with bash in `cwd` (both as the container sees them), the job's variables over the container's;
   * upload the output channels every period and once more after the command exits, then mark the job done.
   */
  start(command: string, cwd: string, jobEnv: Readonly<Record<string, string>>, channels: readonly OutputChannel[] = []): RunningJob {
    const dir = this.mapPath(cwd);
    mkdirSync(dir, { recursive: true });
    const child = spawn("bash", ["-c", this.mapCommand(command)], { cwd: dir, env: { ...this.opts.env, ...jobEnv }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    this.children.add(child);
    const job: RunningJob = {
      done: false, output: "",
      finished: undefined as unknown as Promise<void>,
      kill: () => { try { process.kill(-child.pid!, "SIGTERM"); } catch { /* gone */ } },
    };
    child.stdout!.on("data", (d: Buffer) => { job.output += d.toString(); });
    child.stderr!.on("data", (d: Buffer) => { job.output += d.toString(); });
    const uploaded = new Map<string, string>();
    let uploading = Promise.resolve();
    // A failed pass is the job's output (as the platform's log would say), never an unhandled rejection.
    const upload = () => (uploading = uploading.then(async () => {
      try { for (const c of channels) await this.uploadChannel(c, uploaded); } catch (e) { job.output += `output channel upload failed: ${(e as Error).message}\n`; }
    }));
    const timer = channels.length === 0 ? undefined : setInterval(() => { void upload(); }, this.opts.uploadPeriodMs ?? 30_000);
    (job as { finished: Promise<void> }).finished = new Promise<void>((resolve) => {
      child.on("close", (code, signal) => {
        this.children.delete(child);
        if (timer !== undefined) clearInterval(timer);
        void upload().then(() => {
          job.exitCode = code ?? (signal === null ? 1 : 128 + 15);
          job.done = true;
          resolve();
        });
      });
    });
    this.jobs.add(job);
    return job;
  }

  /** Files of the channel's directory that are new or changed since the last pass, uploaded in path order. */
  private async uploadChannel(c: OutputChannel, uploaded: Map<string, string>): Promise<void> {
    const dir = this.mapPath(c.localDir);
    const s = this.store(c.bucket, "us-east-1");
    for (const rel of walk(dir)) {
      const full = join(dir, ...rel.split("/"));
      let st;
      try { st = statSync(full); } catch { continue; } // renamed or removed meanwhile
      const mark = `${st.size}:${st.mtimeMs}`;
      if (uploaded.get(rel) === mark) continue;
      try {
        await s.putFile(`${c.prefix === "" ? "" : `${c.prefix}/`}${rel}`, full);
        uploaded.set(rel, mark);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
    }
  }

  async close(): Promise<void> {
    for (const c of this.children) { try { process.kill(-c.pid!, "SIGKILL"); } catch { /* gone */ } }
    // Each job's last upload pass runs when its command ends: wait for it while the store is still up.
    await Promise.all([...this.jobs].map((j) => j.finished));
    for (const s of this.stores) await s.close();
  }
}

function walk(dir: string): string[] {
  const out: string[] = [];
  const rec = (d: string) => {
    let entries;
    try { entries = readdirSync(d, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const full = join(d, e.name);
      if (e.isDirectory()) rec(full);
      else if (e.isFile()) out.push(relative(dir, full).split(sep).join("/"));
    }
  };
  rec(dir);
  return out.sort();
}

/** A job container's environment in a test: the machine's PATH, HOME at `<dir>/container` (the runner's root) and
 * python3 finding the verl stub that writeVerlStub put in `<dir>/stub`; `extra` adds to it. */
export function stubContainerEnv(dir: string, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: join(dir, "container"), PYTHONPATH: join(dir, "stub"), ...extra };
}

/**
 * verl stubbed for a job: `python3 -m verl.trainer.main_ppo <overrides>` (on PYTHONPATH=dir) writes what verl's
 * trainer writes — global_step_N/actor/… shards, data.pt and latest_checkpointed_iteration.txt under
 * trainer.default_local_dir (or checkpoints/<project>/<experiment>), every trainer.save_freq steps for
 * `steps` steps — and, with the file logger, one {"step", "data"} line per step to $VERL_FILE_LOGGER_PATH.
 * Shard contents are deterministic (a function of the step), so a test can compare a restore byte for byte.
 * With $VERL_STUB_GATE set, every step after the second waits for the file $VERL_STUB_GATE/step-N (a test opens
 * the gate when it has seen what it waits for: no timing); $VERL_STUB_EXTRA_METRIC adds a metric of that name.
 */
export function writeVerlStub(dir: string, steps = 4): void {
  mkdirSync(join(dir, "verl", "trainer"), { recursive: true });
  writeFileSync(join(dir, "verl", "__init__.py"), "");
  writeFileSync(join(dir, "verl", "trainer", "__init__.py"), "");
  writeFileSync(join(dir, "verl", "trainer", "main_ppo.py"), String.raw`import json, os, sys, time

ov = {}
for a in sys.argv[1:]:
    k, _, v = a.partition("=")
    ov[k.lstrip("+")] = v.strip('"')
out = ov.get("trainer.default_local_dir") or "checkpoints/%s/%s" % (ov["trainer.project_name"], ov["trainer.experiment_name"])
save = int(ov.get("trainer.save_freq", "2"))
loggers = ov.get("trainer.logger", "")
metrics = os.environ.get("VERL_FILE_LOGGER_PATH") if "file" in loggers else None
log = open(metrics, "a") if metrics else None
gate = os.environ.get("VERL_STUB_GATE")
extra = os.environ.get("VERL_STUB_EXTRA_METRIC")
for step in range(1, ${steps} + 1):
    if gate and step > 2:
        deadline = time.time() + 600
        while not os.path.exists(os.path.join(gate, "step-%d" % step)) and time.time() < deadline:
            time.sleep(0.05)
    if log:
        row = {"critic/score/mean": step / 10.0, "actor/pg_loss": 1.0 / step, "response_length/mean": 100.0 + step}
        if extra:
            row[extra] = float(step)
        log.write(json.dumps({"step": step, "data": row}) + "\n")
        log.flush()
    if step % save == 0:
        d = os.path.join(out, "global_step_%d" % step)
        os.makedirs(os.path.join(d, "actor", "huggingface"), exist_ok=True)
        with open(os.path.join(d, "actor", "model_world_size_1_rank_0.pt"), "wb") as f:
            f.write(bytes((step * 7 + i) % 251 for i in range(300000)))
        with open(os.path.join(d, "actor", "extra_state_world_size_1_rank_0.pt"), "wb") as f:
            f.write(b"extra-%d" % step)
        with open(os.path.join(d, "actor", "huggingface", "config.json"), "w") as f:
            json.dump({"step": step}, f)
        with open(os.path.join(d, "data.pt"), "wb") as f:
            f.write(b"dataloader-%d" % step)
        with open(os.path.join(out, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(str(step))
print("verl stub: %d steps, checkpoints in %s" % (${steps}, out))
`);
}
