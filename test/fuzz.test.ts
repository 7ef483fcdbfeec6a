// Fuzz-style robustness: mutate the seed recipes (deleted keys, wrong types, out-of-range numbers, random
// strings, unknown and misspelled keys) and require each to give either a clean, located RecipeError or a
// valid plan — never a crash, a stack trace, or a message with "undefined" in it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Document, isMap, isScalar, isSeq, parseDocument } from "yaml";
import { RecipeError, RlpipeError, formatIssue } from "../core/errors.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { PROVIDERS } from "../core/recipe/schema.js";
import { SEED_RECIPES, recipeText, seededRandom as rng } from "./helpers.js";

type Path = (string | number)[];

function allPaths(doc: Document): Path[] {
  const out: Path[] = [];
  const walk = (node: unknown, path: Path) => {
    if (isMap(node)) for (const p of node.items) { if (isScalar(p.key)) { const k = [...path, String(p.key.value)]; out.push(k); walk(p.value, k); } }
    else if (isSeq(node)) node.items.forEach((x, i) => { const k = [...path, i]; out.push(k); walk(x, k); });
  };
  walk(doc.contents, []);
  return out;
}

const WEIRD_VALUES: unknown[] = [
  "eight", "", " ", -1, 0, 1e9, 2 ** 53, -0.5, 1.5, 0.0001, true, false, null, [], {}, [1, "a"], { a: 1 },
  "${stages.nope.output}", "${sandbox.url}", "$(rm -rf /)", "ark_0123456789abcdef0123", "💥".repeat(50), "x".repeat(3000),
  "../../etc/passwd", "/abs/path", "sync", "prime", "NaN", "1e-6", "True",
];

function mutateOnce(text: string, r: () => number): { text: string; what: string } {
  const doc = parseDocument(text);
  const paths = allPaths(doc);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const path = pick(paths);
  const kind = Math.floor(r() * 5);
  switch (kind) {
    case 0:
      doc.deleteIn(path);
      return { text: doc.toString(), what: `delete ${path.join(".")}` };
    case 1: {
      const v = pick(WEIRD_VALUES);
      doc.setIn(path, v);
      return { text: doc.toString(), what: `set ${path.join(".")} = ${JSON.stringify(v)?.slice(0, 40)}` };
    }
    case 2: {
      const parent = path.slice(0, -1);
      const node = parent.length === 0 ? doc.contents : doc.getIn(parent, true);
      if (isMap(node)) {
        const key = `${String(path[path.length - 1])}${pick(["x", "_", "s", ""])}z`;
        doc.setIn([...parent, key], pick(WEIRD_VALUES));
        return { text: doc.toString(), what: `add ${[...parent, key].join(".")}` };
      }
      doc.deleteIn(path);
      return { text: doc.toString(), what: `delete ${path.join(".")}` };
    }
    case 3: {
      // numeric drift: double, zero, negate, or make huge the numbers
      const cur = doc.getIn(path);
      const v = typeof cur === "number" ? pick([cur * 2, 0, -cur, cur + 1, cur * 1000, Math.floor(cur / 3)]) : pick(WEIRD_VALUES);
      doc.setIn(path, v);
      return { text: doc.toString(), what: `number ${path.join(".")} = ${String(v)}` };
    }
    default: {
      // a random string in place of any value, or raw text damage
      if (r() < 0.5) {
        const s = Array.from({ length: 1 + Math.floor(r() * 12) }, () => String.fromCharCode(32 + Math.floor(r() * 95))).join("");
        doc.setIn(path, s);
        return { text: doc.toString(), what: `string ${path.join(".")} = ${JSON.stringify(s)}` };
      }
      const lines = text.split("\n");
      const i = Math.floor(r() * lines.length);
      lines[i] = pick([lines[i]!.replace(/:/, ""), `  ${lines[i]}`, lines[i]!.slice(0, Math.floor(lines[i]!.length / 2)), "- ]", ""]);
      return { text: lines.join("\n"), what: `damage line ${i + 1}` };
    }
  }
}

describe("fuzz: mutated seed recipes give a clean error or a valid plan", () => {
  const TRIALS = 600;
  it(`${TRIALS} mutations (1–3 edits each) over the five seed recipes`, { timeout: 300_000 }, (t) => {
    const r = rng(20261122);
    let valid = 0;
    let invalid = 0;
    const codes = new Map<string, number>();
    for (let trial = 0; trial < TRIALS; trial++) {
      const name = SEED_RECIPES[trial % SEED_RECIPES.length]!;
      let text = recipeText(name);
      const what: string[] = [];
      const edits = 1 + Math.floor(r() * 3);
      for (let e = 0; e < edits; e++) {
        try {
          const m = mutateOnce(text, r);
          text = m.text;
          what.push(m.what);
        } catch {
          break; // the previous edit already broke the YAML beyond the AST; test what we have
        }
      }
      const provider = PROVIDERS[Math.floor(r() * PROVIDERS.length)]!;
      const label = `trial ${trial} (${name}, ${provider}): ${what.join("; ")}`;
      try {
        const loaded = parseRecipe(text, "fuzz.yaml");
        const p1 = plan(loaded, { provider, localWorkDir: "/tmp/fuzz", assets: bundledAssets() });
        const p2 = plan(parseRecipe(text, "fuzz.yaml"), { provider, localWorkDir: "/tmp/fuzz", assets: bundledAssets() });
        assert.deepEqual(p1.files, p2.files, `${label}: plan is not deterministic`);
        valid++;
      } catch (e) {
        if (e instanceof RecipeError) {
          assert.ok(e.issues.length > 0, `${label}: RecipeError without issues`);
          for (const issue of e.issues) {
            const text2 = formatIssue(issue);
            const own = issue.message.replace(/, got .*$/s, ""); // the echoed input may say anything
            assert.ok(own.length > 0 && !/undefined|\[object Object\]|NaN/.test(own), `${label}: bad message: ${text2}`);
            assert.ok(issue.file === "fuzz.yaml", `${label}: issue without file`);
            assert.ok(issue.line !== undefined || issue.code === "not_a_mapping", `${label}: issue without a line: ${text2}`);
            codes.set(issue.code, (codes.get(issue.code) ?? 0) + 1);
          }
          assert.equal(e.exitCode, 2);
          invalid++;
        } else if (e instanceof RlpipeError && e.exitCode === 2) {
          invalid++;
        } else {
          assert.fail(`${label}: unexpected ${e instanceof Error ? `${e.name}: ${e.message}\n${e.stack}` : String(e)}`);
        }
      }
    }
    t.diagnostic(`valid plans ${valid}, rejected ${invalid}; error codes: ${[...codes.entries()].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c}×${n}`).join(" ")}`);
    assert.equal(valid + invalid, TRIALS);
    // Both outcomes occur, and errors come from many different checks (the fuzzer reaches past the parser).
    assert.ok(valid > 20 && invalid > 200, `valid ${valid}, invalid ${invalid}`);
    assert.ok(codes.size >= 10, `only ${codes.size} distinct error codes: ${[...codes.keys()].join(", ")}`);
  });
});
