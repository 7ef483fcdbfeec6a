// A real multi-node Ray cluster on this machine: each node in a network namespace the test creates (its own address
// on a veth pair into a bridge that lives in a namespace of its own), so nothing listens on the host's addresses and
// a `localhost` mistake shows up as it would on a real cluster (a node's 127.0.0.1 is its own). Needs root.
// `ray start --block` per node under a watcher (closing its stdin stops it); stop() then kills, by process id, every
// process still inside the namespaces, and deletes them.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers.js";
import { WATCHER } from "./ray.js";

export interface NetnsNode {
  readonly ns: string;
  readonly ip: string;
}

export interface NetnsRayCluster {
  readonly nodes: readonly NetnsNode[];
  /** GCS address of the head (node 0), for RAY_ADDRESS. */
  readonly address: string;
  readonly tempDir: string;
  /** argv prefixed to run a command inside node i's namespace (optionally pinned to CPUs with taskset). */
  inNode(i: number, argv: readonly string[]): string[];
  /** Pids of every process inside the cluster's namespaces. */
  pids(): number[];
  stop(): Promise<void>;
}

const PYTHON = join(ROOT, ".venv-test", "bin", "python");
const RAY = join(ROOT, ".venv-test", "bin", "ray");

function ip(args: readonly string[]): void {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
}

function netnsInode(ns: string): number | undefined {
  try { return statSync(`/run/netns/${ns}`).ino; } catch { return undefined; }
}

function pidsInNamespaces(inodes: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^net:\[(\d+)\]$/.exec(readlinkSync(`/proc/${d}/ns/net`));
      if (m !== null && inodes.has(Number(m[1]))) out.push(Number(d));
    } catch { /* gone, or a kernel thread */ }
  }
  return out.sort((a, b) => a - b);
}

export async function startNetnsRay(opts: {
  nodes: number;
  /** Extra environment for every node's Ray (what a cluster exports before `ray start`). */
  env?: Readonly<Record<string, string>>;
  cpusPerNode?: number;
  /** Pin node i (and everything it starts) to CPU pinCpus[i]. */
  pinCpus?: readonly number[];
  startTimeoutMs?: number;
}): Promise<NetnsRayCluster> {
  const tag = `rlpr${randomBytes(3).toString("hex")}`;
  const bridgeNs = `${tag}-br`;
  const nodes: NetnsNode[] = Array.from({ length: opts.nodes }, (_, i) => ({ ns: `${tag}-n${i}`, ip: `10.213.0.${i + 1}` }));
  const tempDir = mkdtempSync("/tmp/rlpipe-rn-");
  const watchers: ChildProcess[] = [];
  const created: string[] = [];
  let inodes = new Set<number>();
  const inNode = (i: number, argv: readonly string[]): string[] => {
    const cpu = opts.pinCpus?.[i];
    return ["ip", "netns", "exec", nodes[i]!.ns, ...(cpu === undefined ? [] : ["taskset", "-c", String(cpu)]), ...argv];
  };
  const pids = () => pidsInNamespaces(inodes);
  const stop = async (): Promise<void> => {
    for (const w of watchers) w.stdin?.end();
    const deadline = Date.now() + 30_000;
    while (pids().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    for (const p of pids()) { try { process.kill(p, "SIGKILL"); } catch { /* gone */ } }
    const killDeadline = Date.now() + 10_000;
    while (pids().length > 0 && Date.now() < killDeadline) await new Promise((r) => setTimeout(r, 100));
    for (const ns of created.reverse()) spawnSync("ip", ["netns", "del", ns]);
    rmSync(tempDir, { recursive: true, force: true });
  };
  try {
    ip(["netns", "add", bridgeNs]);
    created.push(bridgeNs);
    ip(["-n", bridgeNs, "link", "add", "br0", "type", "bridge"]);
    ip(["-n", bridgeNs, "link", "set", "br0", "up"]);
    nodes.forEach((n, i) => {
      ip(["netns", "add", n.ns]);
      created.push(n.ns);
      ip(["link", "add", "eth0", "netns", n.ns, "type", "veth", "peer", "name", `p${i}`, "netns", bridgeNs]);
      ip(["-n", n.ns, "addr", "add", `${n.ip}/24`, "dev", "eth0"]);
      ip(["-n", n.ns, "link", "set", "eth0", "up"]);
      ip(["-n", n.ns, "link", "set", "lo", "up"]);
      ip(["-n", bridgeNs, "link", "set", `p${i}`, "master", "br0"]);
      ip(["-n", bridgeNs, "link", "set", `p${i}`, "up"]);
    });
    inodes = new Set(created.map(netnsInode).filter((x): x is number => x !== undefined));
    const address = `${nodes[0]!.ip}:6379`;
    nodes.forEach((n, i) => {
      const dir = join(tempDir, `n${i}`);
      mkdirSync(join(dir, "home"), { recursive: true });
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), TMPDIR: dir, LANG: "C.UTF-8",
        RAY_USAGE_STATS_ENABLED: "0", ...opts.env,
      };
      const common = [`--node-ip-address=${n.ip}`, `--num-cpus=${opts.cpusPerNode ?? 1}`, "--num-gpus=0", "--disable-usage-stats", `--temp-dir=${join(dir, "ray")}`];
      const args = i === 0
        ? ["start", "--head", "--block", "--port=6379", "--include-dashboard=false", ...common]
        : ["start", "--block", `--address=${address}`, ...common];
      const argv = inNode(i, ["bash", "-c", WATCHER, "ray-watcher", RAY, ...args]);
      const w = spawn(argv[0]!, argv.slice(1), { env, stdio: ["pipe", "ignore", "ignore"] });
      watchers.push(w);
    });
    // Up when the head sees every node alive.
    const deadline = Date.now() + (opts.startTimeoutMs ?? 240_000);
    const probe = `import ray,sys\nray.init(address="${address}", logging_level="ERROR")\nprint(sum(1 for n in ray.nodes() if n["Alive"]))`;
    for (;;) {
      const r = spawnSync(inNode(0, [PYTHON, "-c", probe])[0]!, inNode(0, [PYTHON, "-c", probe]).slice(1), { encoding: "utf8", timeout: 60_000, env: { ...process.env, RAY_USAGE_STATS_ENABLED: "0" } });
      if (r.status === 0 && Number(r.stdout.trim().split("\n").pop()) === opts.nodes) break;
      if (watchers.some((w) => w.exitCode !== null)) throw new Error("a Ray node exited during start-up");
      if (Date.now() > deadline) throw new Error(`the ${opts.nodes} Ray nodes did not all join: ${r.stdout}${r.stderr}`);
      await new Promise((res) => setTimeout(res, 1_000));
    }
    return { nodes, address, tempDir, inNode, pids, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
