// CPU time of processes from /proc, for the benchmarks: a process's own ticks and a whole process tree's.
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";

export const clkTck = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** Parsed /proc/<pid>/stat: ppid, its own ticks and ticks with waited-for children. undefined when the process is gone. */
export function procStat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" "); // fields from #3 (state) on; comm may hold spaces
    const own = Number(f[11]) + Number(f[12]);
    return { ppid: Number(f[1]), own, ticks: own + Number(f[13]) + Number(f[14]) };
  } catch { return undefined; }
}

/** CPU seconds of a process tree: each live member's own and reaped children's time (a dead member's time is in its parent's). */
export function treeCpuS(rootPid) {
  const parent = new Map();
  const ticks = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(d);
    if (st !== undefined) { parent.set(Number(d), st.ppid); ticks.set(Number(d), st.ticks); }
  }
  let sum = 0;
  for (const [pid, t] of ticks) {
    for (let p = pid, hops = 0; p > 0 && hops < 64; p = parent.get(p) ?? 0, hops++) if (p === rootPid) { sum += t; break; }
  }
  return sum / clkTck;
}

/** Machine-wide CPU jiffies from /proc/stat: busy (everything but idle and iowait) and total, over all cores. */
export function machineTicks() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal (guest is inside user)
  return { busy: total - f[3] - f[4], total };
}
