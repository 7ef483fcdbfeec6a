// Test cases as datasets write them → rlpipe TestCases. Accepts ScaleBox's / SandboxFusion's
// provided_data.test_cases ({type, input[], output[], fn_name, json_input, test, entry_point}; MultiPL-E asserts
// {type: assert, tests: "<program tail>", stop_tokens}) and verl's built-in sandbox format ({inputs[], outputs[],
// fn_name}), as a JSON string or an object; and, for /common_evaluate, a list of one-case objects or
// provided_data.test ([{input: {stdin}, output: {stdout}}]).
import { parseJsonExact } from "./exact-json.js";
import type { Checker, TestCase } from "./types.js";

export class TestCaseError extends Error {
  readonly code = "invalid_test_cases";
}

export interface ParsedCases {
  readonly tests: TestCase[];
  readonly checker?: Checker;
  /**
   * MultiPL-E asserts: the program is the completion cut at the first stop token, then this tail (which closes
   * the function and holds the asserts); it passes when it exits 0. See programWithTail.
   */
  readonly tail?: { readonly text: string; readonly stopTokens: readonly string[] };
}

/** The code up to its first stop token (MultiPL-E's completion cut). */
export function cutAtStopTokens(code: string, stopTokens: readonly string[]): string {
  let end = code.length;
  for (const t of stopTokens) {
    const at = t === "" ? -1 : code.indexOf(t);
    if (at >= 0 && at < end) end = at;
  }
  return code.slice(0, end);
}

/**
 * Languages whose MultiPL-E completions ScaleBox does not cut at the stop tokens (multiple.py's _gen_sft_func_code:
 * the extracted code is taken whole, then the tests appended).
 */
const UNCUT_LANGUAGES = new Set(["typescript", "go", "go_test", "perl", "racket", "lua", "julia", "D_ut", "nodejs", "javascript", "php", "R", "ruby"]);

/** The completion as ScaleBox puts it before the tail: cut at the first stop token, except where it is not. */
export function programBeforeTail(language: string, code: string, stopTokens: readonly string[]): string {
  return UNCUT_LANGUAGES.has(language) ? code : cutAtStopTokens(code, stopTokens);
}

/** A MultiPL-E program: the code up to its first stop token, then the tests' tail. */
export function programWithTail(code: string, tail: NonNullable<ParsedCases["tail"]>): string {
  return `${cutAtStopTokens(code, tail.stopTokens)}\n${tail.text}`;
}

type Json = Record<string, unknown>;

function asObject(groundTruth: unknown): Json {
  let v = groundTruth;
  if (typeof v === "string") {
    try {
      v = parseJsonExact(v);
    } catch {
      throw new TestCaseError("ground_truth is a string but not JSON test cases");
    }
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new TestCaseError("test cases must be an object with input/output lists");
  return v as Json;
}

function list(o: Json, ...keys: string[]): unknown[] | undefined {
  for (const k of keys) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) throw new TestCaseError(`test_cases.${k} must be a list`);
    return v;
  }
  return undefined;
}

function text(v: unknown, what: string): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new TestCaseError(`${what} must be a string`);
}

/** Function-call arguments: a list of args, or (json_input) a string of one JSON value per line. */
function callArgs(input: unknown, jsonInput: boolean): unknown[] {
  if (typeof input === "string") {
    const lines = input.split("\n").filter((l) => l.trim() !== "");
    try {
      return jsonInput || lines.length > 0 ? lines.map((l) => parseJsonExact(l)) : [];
    } catch {
      throw new TestCaseError("function_call input must be JSON values, one per line");
    }
  }
  return Array.isArray(input) ? input : [input];
}

export function parseTestCases(groundTruth: unknown, extra: Json = {}): ParsedCases {
  const o = asObject(groundTruth);
  const fnName = typeof o["fn_name"] === "string" && o["fn_name"] !== "" ? o["fn_name"] : undefined;
  const type = typeof o["type"] === "string" ? o["type"] : fnName !== undefined ? "function_call" : "stdin_stdout";
  let tests: TestCase[];
  let tail: ParsedCases["tail"];
  if (type === "assert") {
    const entryPoint = typeof o["entry_point"] === "string" ? o["entry_point"] : undefined;
    if (typeof o["test"] === "string") tests = [{ kind: "assert", testCode: o["test"], ...(entryPoint === undefined ? {} : { entryPoint }) }];
    else if (typeof o["tests"] === "string") {
      const stops = o["stop_tokens"] ?? [];
      if (!Array.isArray(stops) || !stops.every((t) => typeof t === "string")) throw new TestCaseError("stop_tokens must be a list of strings");
      tail = { text: o["tests"], stopTokens: stops };
      tests = [{ kind: "assert", testCode: "" }];
    } else {
      const many = list(o, "tests", "test_list");
      if (many === undefined) throw new TestCaseError("assert test cases need `test` (a string) or `tests` (a list)");
      tests = many.map((t, i) => ({ kind: "assert" as const, testCode: text(t, `tests[${i}]`) }));
    }
  } else {
    const inputs = list(o, "input", "inputs") ?? [];
    const outputs = list(o, "output", "outputs") ?? [];
    if (inputs.length !== outputs.length) throw new TestCaseError(`test cases have ${inputs.length} inputs but ${outputs.length} outputs`);
    if (type === "function_call") {
      if (fnName === undefined) throw new TestCaseError("function_call test cases need fn_name");
      const jsonInput = o["json_input"] === true;
      // ScaleBox asserts `fn(*input) == output[0]`: outputs are one-element lists of the return value.
      tests = inputs.map((input, i) => {
        let out = outputs[i];
        // json_input: a string input is one JSON value per line, and the output is then JSON text too.
        if (jsonInput && typeof input === "string" && typeof out === "string") {
          try {
            out = [parseJsonExact(out)];
          } catch {
            throw new TestCaseError(`output[${i}] must be JSON text (json_input is true)`);
          }
        }
        return { kind: "call" as const, fnName, args: callArgs(input, jsonInput), expected: Array.isArray(out) && out.length === 1 ? out[0] : out };
      });
    } else if (type === "stdin_stdout") {
      tests = inputs.map((input, i) => ({ kind: "stdio" as const, stdin: text(input, `input[${i}]`), expectedStdout: text(outputs[i], `output[${i}]`) }));
    } else {
      throw new TestCaseError(`unknown test case type ${JSON.stringify(type)} (stdin_stdout, function_call or assert)`);
    }
  }
  const judge = typeof extra["special_judge_program"] === "string" ? extra["special_judge_program"] : typeof o["special_judge_program"] === "string" ? o["special_judge_program"] : undefined;
  const judgeLanguage = typeof extra["special_judge_language"] === "string" ? extra["special_judge_language"] : typeof o["special_judge_language"] === "string" ? o["special_judge_language"] : "python";
  return { tests, ...(judge === undefined ? {} : { checker: { kind: "special", program: judge, language: judgeLanguage } }), ...(tail === undefined ? {} : { tail }) };
}

/**
 * ScaleBox's /common_evaluate: provided_data.test_cases as a list of one-case objects ({type, input, output,
 * fn_name}; the first one's type, or fn_name, decides the kind), or provided_data.test as SandboxFusion's stdio
 * list ([{input: {stdin}, output: {stdout}}]).
 */
export function parseCaseList(providedData: Json, extra: Json = {}): ParsedCases {
  const list = providedData["test_cases"] ?? providedData["test"];
  if (!Array.isArray(list)) throw new TestCaseError("provided_data needs test_cases (a list of cases) or test (a list of {input: {stdin}, output: {stdout}})");
  if (list.length === 0) return parseTestCases({ type: "stdin_stdout", input: [], output: [] }, extra);
  const cases = list.map((c, i) => {
    if (c === null || typeof c !== "object" || Array.isArray(c)) throw new TestCaseError(`test case ${i} must be an object`);
    return c as Json;
  });
  const first = cases[0]!;
  const fnName = typeof first["fn_name"] === "string" && first["fn_name"] !== "" ? first["fn_name"] : undefined;
  const type = typeof first["type"] === "string" ? first["type"] : fnName !== undefined ? "function_call" : "stdin_stdout";
  const field = (c: Json, key: "input" | "output", stream: "stdin" | "stdout") => {
    const v = c[key];
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json)[stream] : v;
  };
  return parseTestCases({
    type, ...(fnName === undefined ? {} : { fn_name: fnName }), json_input: first["json_input"] === true,
    input: cases.map((c) => field(c, "input", "stdin")), output: cases.map((c) => field(c, "output", "stdout")),
  }, extra);
}
