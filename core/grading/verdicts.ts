// How a case's verdict is reached, and the rule that no verdict comes from a process that ran the program's code
// (issue 32). Every case in every reply says which of these it was; `rlpipe serve --strict-verdicts` refuses a job
// with a case of the last kind. Pure.
import { type ParsedCases, programBeforeTail } from "./cases.js";
import { decomposedLanguage, planTail, TAIL_SHAPES, tailLanguage } from "./tail-asserts.js";
import type { Checker, TestCase } from "./types.js";

export const VERDICT_KINDS = ["compared_outside", "verifier_process", "program_exit_status"] as const;

/**
 * compared_outside: the program hands over data (stdout, a returned value as JSON) and the server compares it.
 * verifier_process: a process that never ran the program's code decides (the Python assert verifier, a special judge).
 * program_exit_status: the exit status of the process that ran the program's code and its tests: forgeable.
 */
export type VerdictBy = (typeof VERDICT_KINDS)[number];

/** What a sandbox backend can keep apart from the program (SandboxBackend.verdictAbilities). */
export interface VerdictAbilities {
  /** Python assert tests run in a verifier apart from the program (the local sandbox). */
  readonly pythonVerifier: boolean;
  /** Languages whose asserts taken apart (calls with source arguments) this backend runs. */
  readonly sourceCalls: (language: string) => boolean;
}

/** Remote backends run an assert test in the program's own process. */
export const NO_VERDICT_ABILITIES: VerdictAbilities = { pythonVerifier: false, sourceCalls: () => false };

export function verdictBy(language: string, test: TestCase, checker: Checker | undefined, abilities: VerdictAbilities): VerdictBy {
  switch (test.kind) {
    case "stdio": return checker?.kind === "special" ? "verifier_process" : "compared_outside";
    case "call": return "compared_outside";
    case "assert": return language === "python" && test.testCode !== "" && abilities.pythonVerifier ? "verifier_process" : "program_exit_status";
  }
}

/** A job's program and cases once its test shape is planned: a MultiPL-E tail taken apart where it can be. */
export interface PlannedProgram {
  readonly language: string;
  readonly code: string;
  readonly tests: readonly TestCase[];
  /** Why a tail runs whole (its verdict is the program's exit status). */
  readonly wholeReason?: string;
}

/** The program for extracted `code` and parsed test cases: tails planned (tail-asserts.ts), the rest as given. */
export function planProgram(language: string, code: string, parsed: ParsedCases, abilities: VerdictAbilities): PlannedProgram {
  if (parsed.tail === undefined) return { language, code, tests: parsed.tests };
  const lang = tailLanguage(language);
  const decompose = lang === "python" ? abilities.pythonVerifier : abilities.sourceCalls(decomposedLanguage(language));
  const plan = planTail(language, programBeforeTail(language, code, parsed.tail.stopTokens), parsed.tail.text, { decompose });
  return { language: plan.language, code: plan.code, tests: plan.tests, ...(plan.kind === "whole" ? { wholeReason: plan.reason } : {}) };
}

/**
 * Under --strict-verdicts: why this job may not be graded (its first case whose verdict would be the program's own
 * exit status), or undefined.
 */
export function strictRefusal(program: PlannedProgram, checker: Checker | undefined, abilities: VerdictAbilities): string | undefined {
  const at = program.tests.findIndex((t) => verdictBy(program.language, t, checker, abilities) === "program_exit_status");
  if (at < 0) return undefined;
  const why = program.wholeReason !== undefined
    ? `its ${program.language} assert tail could not be taken apart (${program.wholeReason})`
    : `it is a ${program.language} assert test this sandbox runs in the program's own process`;
  return `strict verdicts: test case ${at} would be decided by the exit status of the process that runs the program's code: ${why}. `
    + "Give the asserts in a shape rlpipe takes apart (docs/VERDICTS.md), use function_call or stdin_stdout test cases, or serve without --strict-verdicts";
}

/** One row of the verdict table (docs/VERDICTS.md): a language × test shape and how its verdict is reached. */
export interface VerdictRow {
  readonly shape: string;
  readonly language: string;
  readonly verdictBy: VerdictBy;
  readonly note: string;
}

/** The verdict table for the local sandbox, generated from the code's own lists of shapes and drivers. */
export function verdictTable(sourceCallLanguages: readonly string[], callLanguages: readonly string[]): VerdictRow[] {
  const rows: VerdictRow[] = [
    { shape: "stdin_stdout", language: "every language", verdictBy: "compared_outside", note: "stdout compared by the server (integers exactly, floats within 1e-5 where the expected token is a float)" },
    { shape: "stdin_stdout + special judge", language: "every language", verdictBy: "verifier_process", note: "the judge is a program of its own that never ran the answer's code" },
  ];
  rows.push({ shape: "function_call", language: [...callLanguages].sort().join(", "), verdictBy: "compared_outside", note: "the value comes back as JSON on descriptor 3 and is compared by the server (integers exactly, at any size)" });
  rows.push({ shape: "assert: test + entry_point (HumanEval), tests list (MBPP)", language: "python", verdictBy: "verifier_process", note: "asserts.py: the test runs apart from the program, which it calls over a socket" });
  for (const [lang, s] of Object.entries(TAIL_SHAPES).sort(([a], [b]) => a.localeCompare(b))) {
    const ok = lang === "python" || sourceCallLanguages.includes(decomposedLanguage(lang));
    rows.push({
      shape: `assert tail (MultiPL-E): ${s.shape}`, language: lang, verdictBy: lang === "python" ? "verifier_process" : ok ? "compared_outside" : "program_exit_status",
      note: lang === "python" ? "the tail runs in the verifier" : ok ? `each assert becomes a call, e.g. \`${s.example}\`; a tail with another statement runs whole (program_exit_status)` : "no source-call driver here",
    });
  }
  rows.push({ shape: "assert tail of any other shape or language", language: "any", verdictBy: "program_exit_status", note: "runs whole; --strict-verdicts refuses it" });
  return rows;
}

/** The verdict table as the Markdown of docs/VERDICTS.md (scripts/generate-verdicts.mjs writes it; a test compares). */
export function verdictTableMarkdown(rows: readonly VerdictRow[]): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|");
  return [
    "# How each verdict is reached",
    "",
    "Generated from the code (`core/grading/verdicts.ts` `verdictTable`, the tail shapes in `core/grading/tail-asserts.ts`,",
    "the drivers in `adapters/sandboxes/toolchains/toolchains.ts`) by `npm run verdicts`; a test fails when it is stale.",
    "",
    "Every case in every reply says how its verdict was reached: `rlpipe_verdict_by` in `/common_evaluate` and",
    "`/common_evaluate_batch`, `verdicts` in `/v1/rewards`.",
    "",
    "- `compared_outside`: the program hands over data (its stdout, or a returned value as JSON on descriptor 3) and the",
    "  server compares it with the expected value, which never enters the sandbox.",
    "- `verifier_process`: a process that never ran the program's code and never loaded anything the program named",
    "  decides (the Python assert verifier, a special judge).",
    "- `program_exit_status`: the exit status of the process that ran the program's code and its tests. A program can",
    "  forge it; `rlpipe serve --strict-verdicts` (how the shipped recipes serve) refuses such a test case, with the reason.",
    "",
    "The local sandbox (`rlpipe serve --sandbox local`), with the language's toolchain installed. ScaleBox and E2B",
    "backends run assert tests in the program's own process (`program_exit_status`); their stdio and function-call cases",
    "are compared outside.",
    "",
    "| test shape | language | verdict | how |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${cell(r.shape)} | ${cell(r.language)} | \`${r.verdictBy}\` | ${cell(r.note)} |`),
    "",
  ].join("\n");
}
