// Where the local sandbox's time goes, summed since it started: waiting for a slot and for a ready zygote, and
// per program what the harness measured inside the sandbox (build, fork, the program itself, collecting its
// output, clean-up after it), the rest of the round trip (manager fork, event stream, Node's event loop) and
// grading. `rlpipe serve` reports it at GET /v1/stats; bench/sandbox-peer.mjs prints it per test case.
import type { ProgramTiming } from "./harness-events.js";
import type { SandboxStats } from "../sandbox.js";

const PHASES = ["queueMs", "zygoteWaitMs", "buildMs", "forkMs", "programMs", "collectMs", "cleanupMs", "roundTripMs", "gradeMs"] as const;
export type TimingPhase = (typeof PHASES)[number];
export type SandboxTimingsSnapshot = SandboxStats;

export class SandboxTimings {
  private programs = 0;
  private cases = 0;
  private readonly ms = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<TimingPhase, number>;

  add(phase: TimingPhase, ms: number): void {
    if (Number.isFinite(ms) && ms > 0) this.ms[phase] += ms;
  }

  /** One program's in-sandbox timing; whatever its wall time does not explain is the round trip. */
  addProgram(t: ProgramTiming, cases: number): void {
    this.programs++;
    this.cases += cases;
    this.add("buildMs", t.buildMs);
    this.add("forkMs", t.forkMs);
    this.add("programMs", t.programMs);
    this.add("collectMs", t.collectMs);
    this.add("cleanupMs", t.cleanupMs);
    this.add("roundTripMs", t.wallMs - t.buildMs - t.forkMs - t.programMs - t.collectMs - t.cleanupMs);
  }

  snapshot(): SandboxStats {
    return { programs: this.programs, cases: this.cases, ms: Object.fromEntries(PHASES.map((p) => [p, Math.round(this.ms[p] * 1000) / 1000])) };
  }
}
