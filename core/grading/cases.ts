// Test cases as datasets write them → rlpipe TestCases. Accepts ScaleBox's / SandboxFusion's
// provided_data.test_cases ({type, input[], output[], fn_name, json_input, test, entry_point}) and verl's
// built-in sandbox format ({inputs[], outputs[], fn_name}), as a JSON string or an object.
import type { Checker, TestCase } from "./types.js";

export class TestCaseError extends Error {
  readonly code = "invalid_test_cases";
}

export interface ParsedCases {
  readonly tests: TestCase[];
  readonly checker?: Checker;
}

type Json = Record<string, unknown>;

function asObject(groundTruth: unknown): Json {
  let v = groundTruth;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
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
      return jsonInput || lines.length > 0 ? lines.map((l) => JSON.parse(l)) : [];
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
  if (type === "assert") {
    const entryPoint = typeof o["entry_point"] === "string" ? o["entry_point"] : undefined;
    if (typeof o["test"] === "string") tests = [{ kind: "assert", testCode: o["test"], ...(entryPoint === undefined ? {} : { entryPoint }) }];
    else {
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
        const out = outputs[i];
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
  return { tests, ...(judge === undefined ? {} : { checker: { kind: "special", program: judge, language: judgeLanguage } }) };
}
