// No import circles anywhere in the project. A circle of run-time imports evaluates one module before the other is
// initialised (a `const` read too early is a TDZ error at load time, a class `undefined`); any circle, also through
// `import type`, ties modules that should depend one way only (dependencies point inward). Every import counts:
// static and type-only imports, re-exports, and dynamic imports of a string literal.
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

/**
 * Circles tolerated for now, each as the sorted modules it passes through (none: the last one, render ↔ providers,
 * was untied). An entry that no longer matches a circle fails the test too, so the list cannot go stale.
 */
const KNOWN_CYCLES_TO_REMOVE: readonly (readonly string[])[] = [];

const SOURCE_DIRS = ["bin", "core", "adapters", "functions", "cdk", "test", "bench"];

function sources(): string[] {
  const out: string[] = [];
  for (const dir of SOURCE_DIRS) {
    const abs = join(ROOT, dir);
    if (!existsSync(abs)) continue;
    for (const f of readdirSync(abs, { recursive: true }) as string[]) {
      if (f.endsWith(".ts") && !f.endsWith(".d.ts") && !f.split("/").includes("node_modules")) out.push(join(abs, f));
    }
  }
  return out.sort();
}

/** Relative module specifiers a file imports (at run time or for types). */
export function moduleImports(text: string): string[] {
  // Comments can mention imports; drop them (a `//` inside a string is rare enough in import-bearing lines).
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const out: string[] = [];
  const statement = /(?:^|[;\n])\s*(?:import|export)\s+(?:[^;"'`]*?\sfrom\s*)?["']([^"']+)["']/g;
  for (const m of code.matchAll(statement)) out.push(m[1]!);
  for (const m of code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) out.push(m[1]!);
  return out.filter((s) => s.startsWith("."));
}

function graph(): Map<string, string[]> {
  const files = new Set(sources().map((f) => relative(ROOT, f)));
  const g = new Map<string, string[]>();
  for (const f of files) {
    const targets = moduleImports(readFileSync(join(ROOT, f), "utf8"))
      .map((spec) => relative(ROOT, resolve(dirname(join(ROOT, f)), spec)).replace(/\.js$/, ".ts"))
      .filter((t) => files.has(t));
    g.set(f, [...new Set(targets)].sort());
  }
  return g;
}

/** Strongly connected components with more than one module (or a module importing itself), Tarjan's algorithm. */
function circles(g: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      for (;;) { const w = stack.pop()!; onStack.delete(w); scc.push(w); if (w === v) break; }
      if (scc.length > 1 || (g.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of [...g.keys()].sort()) if (!idx.has(v)) visit(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** One concrete circle through a component, for the failure message: a → b → … → a. */
function pathThrough(g: ReadonlyMap<string, readonly string[]>, scc: readonly string[]): string {
  const inScc = new Set(scc);
  const start = scc[0]!;
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of g.get(v) ?? []) {
      if (!inScc.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let x = v; x !== start; x = prev.get(x)!) path.splice(1, 0, x);
        return [...path, start].join(" → ");
      }
      if (!prev.has(w)) { prev.set(w, v); queue.push(w); }
    }
  }
  return scc.join(", ");
}

describe("import cycles", () => {
  it("finds every import: static, type-only, re-exports, literal dynamic imports; not those in comments", () => {
    const text = [
      `import { a } from "./a.js";`, `import type { B } from "./b.js";`, `import { type C } from "./c.js";`,
      `export { d } from "./d.js";`, `export type { E } from "./e.js";`, `import "./f.js";`,
      `const g = await import("./g.js");`, `// import { h } from "./h.js";`, `import { x } from "node:fs";`,
      `import {\n  y,\n  z,\n} from "./yz.js";`,
    ].join("\n");
    assert.deepEqual(moduleImports(text).sort(), ["./a.js", "./b.js", "./c.js", "./d.js", "./e.js", "./f.js", "./g.js", "./yz.js"]);
  });

  it("finds a circle and names it", () => {
    const g = new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts", "d.ts"]], ["d.ts", []]]);
    const found = circles(g);
    assert.deepEqual(found, [["a.ts", "b.ts", "c.ts"]]);
    assert.equal(pathThrough(g, found[0]!), "a.ts → b.ts → c.ts → a.ts");
  });

  it("the project has no import circle (besides the known ones listed above, being untied)", () => {
    const g = graph();
    assert.ok(g.size > 50, "the walk found the sources");
    const found = circles(g);
    const key = (c: readonly string[]) => c.join(" | ");
    const known = new Set(KNOWN_CYCLES_TO_REMOVE.map(key));
    const unexpected = found.filter((c) => !known.has(key(c))).map((c) => pathThrough(g, c));
    assert.deepEqual(unexpected, [], `import circles:\n  ${unexpected.join("\n  ")}`);
    const gone = KNOWN_CYCLES_TO_REMOVE.filter((c) => !found.some((f) => key(f) === key(c))).map(key);
    assert.deepEqual(gone, [], "these circles are untied now: remove them from KNOWN_CYCLES_TO_REMOVE");
  });
});
