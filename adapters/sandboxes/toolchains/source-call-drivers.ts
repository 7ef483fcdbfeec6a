// Source-call drivers: the program's side of an assert taken apart (core/grading/tail-asserts.ts). The test's call
// `f(ARGS)` is compiled into the program as the test wrote it; per case the driver reads which call to make from
// `.rlpipe-call.json` ({source: k}), makes it and writes the value as JSON on descriptor 3, where the harness collects
// it and the server compares it with the expected value, which never enters the sandbox. The writers are the
// function-call drivers' (toolchains.ts); what a program writes to descriptor 3 itself can only be a guess.
import { goPackage, JAVA_DRIVER_SLOT } from "../../../core/grading/tail-asserts.js";
import type { CallDriver } from "./call-drivers.js";

/** One call of the program's own function, its arguments as the test's source text. */
export interface SourceCallSpec {
  readonly callee: string;
  readonly argsSource: string;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function checked(calls: readonly SourceCallSpec[]): readonly SourceCallSpec[] {
  for (const c of calls) if (!IDENT.test(c.callee)) throw new Error(`not a function name: ${c.callee}`);
  return calls;
}

/** C++: the function-call driver's JSON writer, its main dispatching on the call's index. */
export function cppSourceDriver(base: string): (calls: readonly SourceCallSpec[]) => CallDriver {
  return (calls) => {
    const dispatch = checked(calls).map((c, k) => `  ${k === 0 ? "if" : "else if"} (source == ${k}) out = rlpipe_call::to(${c.callee}(${c.argsSource}));`).join("\n");
    return { text: base.replace("__DISPATCH__", dispatch === "" ? "  if (false) {}" : dispatch) };
  };
}

/** Rust: the function-call driver's ToJson, its main matching the call's index. */
export function rustSourceDriver(base: string): (calls: readonly SourceCallSpec[]) => CallDriver {
  return (calls) => {
    const arms = checked(calls).map((c, k) => `${k} => rlpipe_call::ToJson::to_json(&(${c.callee}(${c.argsSource}))), `).join("");
    return { text: base.replace("__DISPATCH__", `match source { ${arms}_ => panic!("rlpipe: no call {}", source) }`) };
  };
}

/** JavaScript: the calls as closures in the module's scope, after the program. */
export function jsSourceDriver(calls: readonly SourceCallSpec[]): CallDriver {
  const table = checked(calls).map((c) => `    () => ${c.callee}(${c.argsSource}),`).join("\n");
  return {
    text: `
;(function rlpipeSourceCall() {
  const fs = require("fs");
  let call;
  try { call = JSON.parse(fs.readFileSync(".rlpipe-call.json", "utf8")); } catch (e) { return; }
  const calls = [
${table}
  ];
  const write = (v) => fs.writeSync(3, JSON.stringify(v === undefined ? null : v));
  const out = calls[call.source]();
  if (out !== null && typeof out === "object" && typeof out.then === "function") out.then(write); else write(out);
})();
`,
  };
}

/**
 * Java: a main method in the program's class, where the tail's was (JAVA_DRIVER_SLOT), and the function-call driver's
 * class after it for its JSON writer.
 */
export function javaSourceDriver(base: string): (calls: readonly SourceCallSpec[], code: string) => CallDriver {
  return (calls, code) => {
    const cases = checked(calls).map((c, k) => `            case ${k}: rlpipeValue = ${c.callee}(${c.argsSource}); break;`).join("\n");
    const main = `    public static void main(String[] rlpipeArgv) throws Throwable {
        String rlpipeText = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(".rlpipe-call.json")), java.nio.charset.StandardCharsets.UTF_8);
        java.util.regex.Matcher rlpipeM = java.util.regex.Pattern.compile("\\"source\\"\\\\s*:\\\\s*(\\\\d+)").matcher(rlpipeText);
        int rlpipeSource = rlpipeM.find() ? Integer.parseInt(rlpipeM.group(1)) : -1;
        Object rlpipeValue;
        switch (rlpipeSource) {
${cases}
            default: throw new IllegalStateException("rlpipe: no call " + rlpipeSource);
        }
        try (java.io.FileOutputStream rlpipeOut = new java.io.FileOutputStream("/dev/fd/3")) {
            rlpipeOut.write(RlpipeCall.json(rlpipeValue).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
    }`;
    const at = code.lastIndexOf(JAVA_DRIVER_SLOT);
    const program = at < 0 ? code : code.slice(0, at) + main + code.slice(at + JAVA_DRIVER_SLOT.length);
    return { text: base, program };
  };
}

/**
 * Go (go_test: MultiPL-E's Go programs are test files, with a main or tests of their own at times): a test of its own
 * in the program's package, the only one the run step runs, switching on the call's index.
 */
export function goTestSourceDriver(testBinary: string): (calls: readonly SourceCallSpec[], code: string) => CallDriver {
  return (calls, code) => {
    const cases = checked(calls).map((c, k) => `\tcase ${k}:\n\t\tvalue = ${c.callee}(${c.argsSource})`).join("\n");
    return {
      file: "rlpipe_call_test.go",
      run: [testBinary, "-test.run", "^TestRlpipeSourceCall$", "-test.count", "1"],
      text: `package ${goPackage(code) ?? "main"}

import (
\trlpipeJSON "encoding/json"
\trlpipeFmt "fmt"
\trlpipeOS "os"
\trlpipeReflect "reflect"
\trlpipeTesting "testing"
)

func TestRlpipeSourceCall(rlpipeT *rlpipeTesting.T) {
\tdata, err := rlpipeOS.ReadFile(".rlpipe-call.json")
\tif err != nil {
\t\trlpipeT.Fatal(err)
\t}
\tvar call struct {
\t\tSource int \`json:"source"\`
\t}
\tif err := rlpipeJSON.Unmarshal(data, &call); err != nil {
\t\trlpipeT.Fatal(err)
\t}
\tvar value interface{}
\tswitch call.Source {
${cases}
\tdefault:
\t\trlpipeT.Fatalf("rlpipe: no call %d", call.Source)
\t}
\ttext, err := rlpipeJSON.Marshal(rlpipeNormal(rlpipeReflect.ValueOf(value)))
\tif err != nil {
\t\trlpipeT.Fatal(err)
\t}
\trlpipeOS.NewFile(3, "value").Write(text)
}

// rlpipeNormal: nil slices and maps as empty ones, as the test's %v prints them ([] and map[]), not JSON's null.
func rlpipeNormal(v rlpipeReflect.Value) interface{} {
\tif !v.IsValid() {
\t\treturn nil
\t}
\tswitch v.Kind() {
\tcase rlpipeReflect.Interface, rlpipeReflect.Ptr:
\t\tif v.IsNil() {
\t\t\treturn nil
\t\t}
\t\treturn rlpipeNormal(v.Elem())
\tcase rlpipeReflect.Slice, rlpipeReflect.Array:
\t\tif v.Kind() == rlpipeReflect.Slice && v.Type().Elem().Kind() == rlpipeReflect.Uint8 && !v.IsNil() {
\t\t\treturn v.Interface()
\t\t}
\t\tout := make([]interface{}, v.Len())
\t\tfor i := range out {
\t\t\tout[i] = rlpipeNormal(v.Index(i))
\t\t}
\t\treturn out
\tcase rlpipeReflect.Map:
\t\tout := make(map[string]interface{}, v.Len())
\t\tfor _, k := range v.MapKeys() {
\t\t\tout[rlpipeFmt.Sprint(k.Interface())] = rlpipeNormal(v.MapIndex(k))
\t\t}
\t\treturn out
\t}
\treturn v.Interface()
}
`,
    };
  };
}
