// Dependency rules of DESIGN.md, checked on the sources: bin → adapters/functions → core; core imports no
// SDK and does no network or process I/O; `rlpipe plan` loads no cloud SDK (it must run in well under 0.5 s).
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

function sources(dir: string): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  return (readdirSync(abs, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => join(abs, f));
}

function imports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g)) out.push((m[1] ?? m[2])!);
  return out;
}

function resolveTs(from: string, spec: string): string {
  return resolve(dirname(from), spec).replace(/\.js$/, ".ts");
}

describe("architecture", () => {
  it("core imports only node built-ins without network or process I/O, zod and yaml, and nothing outside core", () => {
    const allowedPackages = new Set(["zod", "yaml"]);
    const forbiddenBuiltins = /^node:(http|https|http2|net|dgram|tls|dns|child_process|cluster|worker_threads)$/;
    const problems: string[] = [];
    for (const f of sources("core")) {
      for (const spec of imports(f)) {
        const where = relative(ROOT, f);
        if (spec.startsWith(".")) {
          if (!resolveTs(f, spec).startsWith(join(ROOT, "core"))) problems.push(`${where} imports ${spec} from outside core`);
        } else if (spec.startsWith("node:")) {
          if (forbiddenBuiltins.test(spec)) problems.push(`${where} imports ${spec}`);
        } else if (!allowedPackages.has(spec)) {
          problems.push(`${where} imports package ${spec}`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  it("an adapter never imports another adapter", () => {
    const problems: string[] = [];
    for (const f of sources("adapters")) {
      const family = relative(join(ROOT, "adapters"), f).split("/")[0];
      for (const spec of imports(f).filter((s) => s.startsWith("."))) {
        const target = relative(join(ROOT, "adapters"), resolveTs(f, spec));
        if (!target.startsWith("..") && target.split("/")[0] !== family && !target.endsWith("/index.ts")) problems.push(`${relative(ROOT, f)} → ${spec}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("cdk/ builds on aws-cdk-lib and constructs: it bundles the functions by path, importing no adapter and no function code but the list of shipped Python files; cdk-nag only in the app", () => {
    const problems: string[] = [];
    for (const f of sources("cdk")) {
      const where = relative(ROOT, f);
      for (const spec of imports(f)) {
        if (spec.startsWith(".")) {
          const target = relative(ROOT, resolveTs(f, spec));
          if (!/^(cdk|core)\//.test(target) && target !== "functions/python-assets.ts") problems.push(`${where} imports ${target}`);
        } else if (!spec.startsWith("node:") && !/^(aws-cdk-lib(\/.*)?|constructs)$/.test(spec) && !(spec === "cdk-nag" && where === "cdk/lib/app.ts")) {
          problems.push(`${where} imports package ${spec}`);
        }
      }
    }
    assert.ok(sources("cdk").length > 5, "the walk found cdk/");
    assert.deepEqual(problems, []);
  });

  it("`rlpipe plan` reaches no package but zod and yaml (no cloud SDK on the plan path)", () => {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const spec of imports(file)) {
        if (spec.startsWith(".")) visit(resolveTs(file, spec));
        else if (!spec.startsWith("node:")) packages.add(spec);
      }
    };
    visit(join(ROOT, "bin", "commands", "plan.ts"));
    assert.deepEqual([...packages].sort(), ["yaml", "zod"]);
  });
});
