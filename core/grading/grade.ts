// Grading in one place: a backend reports what happened to each case (CaseExecution); this decides the
// case status. Shared by the local, ScaleBox and E2B backends, so all three grade identically.
import { compareStdout, valuesEqual } from "./compare.js";
import { parseJsonExact } from "./exact-json.js";
import type { CaseExecution, CaseResult, CaseStatus, Checker, EvalResult, TestCase } from "./types.js";

export interface Grade {
  readonly status: CaseStatus;
  readonly detail?: string;
  /** A special judge must decide (the output is not equal to the expected one). */
  readonly needsJudge?: boolean;
}

function lastLine(s: string): string | undefined {
  const l = s.trimEnd().split("\n").pop()?.trim();
  return l === undefined || l === "" ? undefined : l.length > 200 ? `${l.slice(0, 197)}...` : l;
}

export function gradeCase(test: TestCase, exec: CaseExecution, checker: Checker = { kind: "lines" }): Grade {
  if (exec.infraError !== undefined) return { status: "infra_error", detail: exec.infraError };
  if (exec.skipped !== undefined) return { status: "skipped", detail: exec.skipped };
  if (exec.timedOut === true) return { status: "timeout" };
  if (exec.outputExceeded === true) return { status: "output_limit" };
  const failed = exec.exitCode !== 0;
  if (failed && exec.memoryExceeded === true) return { status: "memory_limit" };
  switch (test.kind) {
    case "stdio": {
      if (failed) return { status: "runtime_error", detail: lastLine(exec.stderr) ?? `exit code ${exec.exitCode ?? "none (killed)"}` };
      const cmp = compareStdout(test.expectedStdout, exec.stdout, checker.kind === "special" ? { kind: "lines" } : checker);
      if (cmp.ok) return { status: "passed" };
      if (checker.kind === "special") return { status: "wrong_answer", detail: cmp.detail, needsJudge: true };
      return { status: "wrong_answer", ...(cmp.detail === undefined ? {} : { detail: cmp.detail }) };
    }
    case "call": {
      if (failed) return { status: "runtime_error", detail: lastLine(exec.stderr) ?? `exit code ${exec.exitCode ?? "none (killed)"}` };
      if (exec.valueJson === undefined) return { status: "runtime_error", detail: "the function returned no value" };
      let value: unknown;
      try {
        value = parseJsonExact(exec.valueJson, { allowNonFinite: true });
      } catch {
        return { status: "wrong_answer", detail: "the return value is not JSON-serializable" };
      }
      return valuesEqual(value, test.expected) ? { status: "passed" } : { status: "wrong_answer", detail: "returned value differs" };
    }
    case "assert": {
      if (!failed) return { status: "passed" };
      // Python's AssertionError; C/C++'s assert(3) ("Assertion `…' failed.").
      const assertion = /AssertionError|Assertion [`'].*' failed/.test(exec.stderr);
      return { status: assertion ? "wrong_answer" : "runtime_error", ...(lastLine(exec.stderr) === undefined ? {} : { detail: lastLine(exec.stderr)! }) };
    }
  }
}

/** A special judge's verdict: exit 0 accepts; a judge that cannot run is an infra error, not a model failure. */
export function gradeJudge(judge: CaseExecution): Grade {
  if (judge.infraError !== undefined) return { status: "infra_error", detail: `special judge: ${judge.infraError}` };
  if (judge.timedOut === true) return { status: "infra_error", detail: "special judge timed out" };
  return judge.exitCode === 0 ? { status: "passed" } : { status: "wrong_answer", detail: "rejected by the special judge" };
}

/** Compile failure: every case failed the same way. */
export function compileFailed(total: number, stderr: string): CaseResult[] {
  const detail = lastLine(stderr);
  return Array.from({ length: total }, (_, index) => ({ index, status: "compile_error" as const, ...(detail === undefined ? {} : { detail }), stderr }));
}

export function summarize(id: string, backend: string, cases: readonly CaseResult[], wallMs: number, sandboxSeconds?: number): EvalResult {
  const infra = cases.find((c) => c.status === "infra_error");
  return {
    id, backend, cases,
    status: infra === undefined ? "ok" : "infra_error",
    ...(infra === undefined ? {} : { error: infra.detail ?? "sandbox error" }),
    passed: cases.filter((c) => c.status === "passed").length,
    total: cases.length,
    usage: { wallMs, ...(sandboxSeconds === undefined ? {} : { sandboxSeconds }) },
  };
}

/** Partial credit: 1.0 when every case passed, else passed/total (scalebox.py's rule). */
export function scoreOf(r: EvalResult): number {
  if (r.total === 0) return 0;
  return r.passed === r.total ? 1 : r.passed / r.total;
}
