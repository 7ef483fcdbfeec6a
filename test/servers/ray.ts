// A real single-node Ray cluster for tests: `ray start --head --block` from the project's test virtualenv, bound to
// loopback only, with token auth on, in its own temporary directory (session files, HOME, spill), on free ports.
// Stopped by process id: closing the watcher's stdin makes it SIGTERM `ray start --block`, which stops what it
// started; whatever of its process tree (plus anything naming our temp dir) is still alive after 20 s gets SIGKILL.
// If the test process dies, its end of the pipe closes and the same happens. Never a machine-wide `ray stop`.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { ROOT } from "../helpers.js";
import { tcpSocketsOf } from "../proc-sockets.js";
import { freePort } from "./moto.js";

export interface RayCluster {
  /** Dashboard URL, e.g. http://127.0.0.1:41234. */
  readonly address: string;
  /** The cluster's bearer token (RAY_AUTH_MODE=token). */
  readonly token: string;
  /** Root of the cluster's process tree (the watcher around `ray start`). */
  readonly pid: number;
  readonly tempDir: string;
  /** The ports chosen for it (Ray picks the others itself). */
  readonly ports: {
    readonly gcs: number; readonly dashboard: number; readonly client: number; readonly agent: number;
    readonly autoscalerMetrics: number; readonly dashboardMetrics: number;
  };
  /** Wall time from spawning `ray start` until the Jobs API answered an authenticated request. */
  readonly startupMs: number;
  /** Live processes of this cluster (the tree under `ray start` plus processes naming its temp dir). */
  pids(): number[];
  /** Memory of those processes in bytes: RSS (shared pages counted in each) and PSS (shared pages split). */
  memory(): { readonly rssBytes: number; readonly pssBytes: number };
  /** Every TCP socket those processes listen on, as "address:port". */
  listening(): string[];
  stop(): Promise<void>;
}

function children(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = byParent.get(ppid) ?? [];
      list.push(Number(d));
      byParent.set(ppid, list);
    } catch { /* gone */ }
  }
  return byParent;
}

function cmdlineMentions(pid: number, needle: string): boolean {
  try { return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(needle); } catch { return false; }
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch { return false; }
}

function clusterPids(root: number, tempDir: string): number[] {
  const tree = children();
  const out = new Set<number>();
  const stack = [root];
  while (stack.length > 0) {
    const p = stack.pop()!;
    if (out.has(p)) continue;
    out.add(p);
    stack.push(...(tree.get(p) ?? []));
  }
  // Processes reparented away from the tree (a daemonized helper) still name the session's temp dir.
  for (const d of readdirSync("/proc")) if (/^\d+$/.test(d) && cmdlineMentions(Number(d), tempDir)) out.add(Number(d));
  return [...out].filter(alive).sort((a, b) => a - b);
}

function hexAddress(hex: string, p: number): string {
  if (hex.length === 8) return `${[3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join(".")}:${p}`;
  // IPv6: four little-endian 32-bit words
  const words = [0, 1, 2, 3].map((w) => hex.slice(w * 8, w * 8 + 8).match(/../g)!.reverse().join(""));
  const groups = words.join("").match(/..../g)!.map((g) => g.replace(/^0+(?=.)/, ""));
  return `[${groups.join(":").toLowerCase()}]:${p}`;
}

function listeningOf(pids: readonly number[]): string[] {
  const listening = tcpSocketsOf(pids).filter((sock) => sock.state === "0A"); // 0A: LISTEN
  return [...new Set(listening.map((sock) => hexAddress(sock.localAddressHex, sock.localPort)))].sort();
}

function memoryOf(pids: readonly number[]): { rssBytes: number; pssBytes: number } {
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
      rss += Number(/^Rss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0);
    } catch { /* gone */ }
  }
  return { rssBytes: rss * 1024, pssBytes: pss * 1024 };
}

// Background jobs of a non-interactive bash read /dev/null unless told otherwise: fd 3 keeps the real stdin.
export const WATCHER = 'exec 3<&0; "$@" </dev/null & ray=$!; { cat <&3 >/dev/null; kill -TERM "$ray" 2>/dev/null; } & wait "$ray"';

export async function startRay(opts: { numCpus?: number; startTimeoutMs?: number } = {}): Promise<RayCluster> {
  // Short path: Ray's unix sockets live under it (sun_path is limited to 107 bytes).
  const tempDir = mkdtempSync("/tmp/rlpipe-ray-");
  const home = join(tempDir, "home");
  mkdirSync(home);
  const token = randomBytes(24).toString("hex");
  const [gcsPort, dashboardPort, clientPort, agentPort, autoscalerMetricsPort, dashboardMetricsPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    TMPDIR: tempDir,
    LANG: "C.UTF-8",
    RAY_AUTH_MODE: "token",
    RAY_AUTH_TOKEN: token,
    RAY_USAGE_STATS_ENABLED: "0",
    // Ray's single-machine mode: the node IP is 127.0.0.1, so Ray binds its gRPC servers (GCS, raylet, workers)
    // to loopback instead of 0.0.0.0, and the agents to 127.0.0.1.
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER: "0",
    // Fixed by default (44217, 44227): free ones, so this cluster never collides with another on the machine.
    AUTOSCALER_METRIC_PORT: String(autoscalerMetricsPort),
    DASHBOARD_METRIC_PORT: String(dashboardMetricsPort),
  };
  const args = [
    "start", "--head", "--block",
    "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1", "--include-dashboard=true",
    `--port=${gcsPort}`, `--dashboard-port=${dashboardPort}`, `--ray-client-server-port=${clientPort}`, `--dashboard-agent-listen-port=${agentPort}`,
    `--num-cpus=${opts.numCpus ?? 2}`, "--num-gpus=0", "--disable-usage-stats", `--temp-dir=${join(tempDir, "ray")}`,
  ];
  const t0 = Date.now();
  // `ray start --block` under a small watcher: when our end of its stdin closes — stop(), or this test process
  // dying without cleaning up — the watcher sends it SIGTERM, and it stops everything it started.
  const child: ChildProcess = spawn("bash", ["-c", WATCHER, "ray-watcher", join(ROOT, ".venv-test", "bin", "ray"), ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  const keep = (d: Buffer) => { output = (output + d.toString()).slice(-8000); };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const pid = child.pid!;
  const address = `http://127.0.0.1:${dashboardPort}`;

  const stop = async (): Promise<void> => {
    const pids = clusterPids(pid, tempDir);
    child.stdin?.end(); // the watcher stops `ray start`, which stops what it started
    const deadline = Date.now() + 20_000;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    for (const p of [...pids, ...clusterPids(pid, tempDir)].filter(alive)) {
      try { process.kill(p, "SIGKILL"); } catch { /* gone */ }
    }
    rmSync(tempDir, { recursive: true, force: true });
  };

  const deadline = t0 + (opts.startTimeoutMs ?? 120_000);
  for (;;) {
    if (child.exitCode !== null) { await stop(); throw new Error(`ray start exited with ${child.exitCode}: ${output}`); }
    try {
      // Ready when the Jobs API answers an authenticated list and the dashboard agent (which runs the job
      // supervisors) answers its health check.
      // (undici's request, not fetch: Ray refuses what looks like browser traffic, and fetch sends Sec-Fetch-Mode.)
      const get = async (url: string) => {
        const r = await request(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(2_000) });
        await r.body.dump();
        return r.statusCode;
      };
      if (await get(`${address}/api/jobs/`) === 200 && await get(`http://127.0.0.1:${agentPort}/api/local_raylet_healthz`) === 200) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) { await stop(); throw new Error(`Ray did not start within ${opts.startTimeoutMs ?? 120_000} ms: ${output}`); }
    await new Promise((r) => setTimeout(r, 250));
  }
  const startupMs = Date.now() - t0;
  return {
    address, token, pid, tempDir, startupMs,
    ports: { gcs: gcsPort, dashboard: dashboardPort, client: clientPort, agent: agentPort, autoscalerMetrics: autoscalerMetricsPort, dashboardMetrics: dashboardMetricsPort },
    pids: () => clusterPids(pid, tempDir),
    memory: () => memoryOf(clusterPids(pid, tempDir)),
    listening: () => listeningOf(clusterPids(pid, tempDir)),
    stop,
  };
}
