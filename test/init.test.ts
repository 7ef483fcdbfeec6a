// rlpipe init, as a new user runs it: a recipe to start from that validates where it is written, with an editor
// schema comment that resolves there, never over an existing file, never half-written (issue 23 item 11).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { after, describe, it } from "node:test";
import { formatHelp } from "../bin/help.js";
import { filesNextToRecipe, starterText } from "../core/recipe/starter.js";
import { parseRecipe } from "../core/recipe/load.js";
import { RECIPES, ROOT } from "./helpers.js";
import { runCli } from "./cli-process.js";

const SHIPPED = readdirSync(RECIPES).filter((f) => f.endsWith(".yaml")).map((f) => f.slice(0, -5)).sort();
const tmp = mkdtempSync(join(tmpdir(), "rlpipe-init-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const rlpipe = (args: string[], cwd: string) => runCli(args, { cwd });

function fresh(name: string): string {
  const d = join(tmp, name);
  mkdirSync(d, { recursive: true });
  return d;
}

/** The file the recipe's yaml-language-server comment names, resolved as the language server does. */
function schemaOf(file: string): string {
  const m = /^# yaml-language-server: \$schema=(.+)$/m.exec(readFileSync(file, "utf8"));
  assert.ok(m !== null, `${file} has a schema comment`);
  return isAbsolute(m[1]!) ? m[1]! : resolve(dirname(file), m[1]!);
}

describe("rlpipe init", () => {
  it("writes the local demo with its data file; it validates there and its schema comment resolves to rlpipe's schema", () => {
    const dir = fresh("default");
    const r = rlpipe(["init"], dir);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^wrote recipe\.yaml \(from local-demo\), with data\/demo-problems\.jsonl, recipe\.schema\.json next to it\n/);
    assert.deepEqual(readdirSync(dir).sort(), ["data", "recipe.schema.json", "recipe.yaml"], "no temporary files left");
    // The comment names the copy beside the recipe, never this machine's install: it works for whoever opens it.
    assert.match(readFileSync(join(dir, "recipe.yaml"), "utf8"), /^# yaml-language-server: \$schema=recipe\.schema\.json$/m);
    const schema = schemaOf(join(dir, "recipe.yaml"));
    assert.equal(readFileSync(schema, "utf8"), readFileSync(join(ROOT, "schema", "recipe.schema.json"), "utf8"));
    assert.doesNotMatch(readFileSync(join(dir, "recipe.yaml"), "utf8"), /recipes\/local-demo\.yaml|\.\.\/schema/, "no path that only works inside the package");
    const v = rlpipe(["validate", "recipe.yaml", "--provider", "local"], dir);
    assert.equal(v.code, 0, v.err + v.out);
    const p = rlpipe(["plan", "recipe.yaml", "--out", "bundle"], dir);
    assert.equal(p.code, 0, p.err);
    assert.match(p.out, /→ local/);
  });

  it("--from copies every shipped recipe into a new directory, and each validates there", () => {
    const dir = fresh("from");
    for (const name of SHIPPED) {
      const r = rlpipe(["init", `nested/${name}/recipe.yaml`, "--from", name], dir);
      assert.equal(r.code, 0, `${name}: ${r.err}`);
      assert.ok(existsSync(schemaOf(join(dir, "nested", name, "recipe.yaml"))), name);
    }
    const v = rlpipe(["validate", ...SHIPPED.map((n) => `nested/${n}/recipe.yaml`)], dir);
    assert.equal(v.code, 0, v.err + v.out);
    // A shipped file already there with the same content is no conflict: a second recipe beside the first.
    assert.equal(rlpipe(["init", "nested/local-demo/again.yaml", "--from", "local-demo.yaml"], dir).code, 0);
  });

  it("inside an rlpipe clone the schema comment is relative, like the shipped recipes'", () => {
    const dir = join(ROOT, ".rlpipe", `init-test-${process.pid}`);
    try {
      const r = rlpipe(["init", join(dir, "mine.yaml"), "--from", "qwen3-1.7b-code-toolcall"], ROOT);
      assert.equal(r.code, 0, r.err);
      assert.match(readFileSync(join(dir, "mine.yaml"), "utf8"), /^# yaml-language-server: \$schema=\.\.\/\.\.\/schema\/recipe\.schema\.json$/m);
      assert.equal(schemaOf(join(dir, "mine.yaml")), join(ROOT, "schema", "recipe.schema.json"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses to overwrite (exit 2, naming the file, JSON with --json) unless --force", () => {
    const dir = fresh("exists");
    writeFileSync(join(dir, "recipe.yaml"), "mine\n");
    const r = rlpipe(["init"], dir);
    assert.equal(r.code, 2);
    assert.equal(r.err, "rlpipe: recipe.yaml already exists; nothing was written\n  hint: pass --force to replace it, or name another file: rlpipe init other.yaml\n");
    assert.equal(readFileSync(join(dir, "recipe.yaml"), "utf8"), "mine\n");
    assert.ok(!existsSync(join(dir, "data")), "nothing else written either");
    const j = rlpipe(["init", "--json"], dir);
    assert.equal(j.code, 2);
    assert.deepEqual(JSON.parse(j.out).error, { code: "file_exists", message: "recipe.yaml already exists; nothing was written", hint: "pass --force to replace it, or name another file: rlpipe init other.yaml", exitCode: 2 });
    // A different file where the recipe ships one is a conflict too.
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", "demo-problems.jsonl"), "{}\n");
    assert.match(rlpipe(["init", "other.yaml"], dir).err, /data\/demo-problems\.jsonl already exists/);
    assert.ok(!existsSync(join(dir, "other.yaml")));
    const f = rlpipe(["init", "--force"], dir);
    assert.equal(f.code, 0, f.err);
    assert.match(readFileSync(join(dir, "recipe.yaml"), "utf8"), /^kind: Recipe$/m);
    assert.equal(rlpipe(["validate", "recipe.yaml"], dir).code, 0);
  });

  it("never leaves a half-written file: a write that fails leaves nothing behind (exit 2, the path named)", () => {
    const dir = fresh("fails");
    writeFileSync(join(dir, "data"), "a file where the data directory goes\n");
    const r = rlpipe(["init"], dir);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /^rlpipe: cannot write data\/demo-problems\.jsonl \(E[A-Z]+\)/);
    assert.deepEqual(readdirSync(dir), ["data"], "no recipe without its data, no temporary file");
  });

  it("an unknown --from gets a did-you-mean and the list of shipped recipes (exit 2)", () => {
    const r = rlpipe(["init", "--from", "retool-qwen3-4b-ascnd"], fresh("unknown"));
    assert.equal(r.code, 2);
    assert.equal(r.err, `rlpipe: no shipped recipe is called "retool-qwen3-4b-ascnd"; did you mean "retool-qwen3-4b-ascend"?\n  hint: shipped recipes: ${SHIPPED.join(", ")}\n`);
    assert.deepEqual(readdirSync(join(tmp, "unknown")), []);
  });

  it("rlpipe --help and rlpipe init --help name it and the shipped recipes; the README lists it", () => {
    const main = rlpipe(["--help"], tmp);
    assert.match(main.out, /\n {2}init\s+write a recipe to start from/);
    assert.match(formatHelp("init"), new RegExp(`Shipped recipes: ${SHIPPED.join(", ")}\\.`));
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    assert.match(readme, /^rlpipe init \[FILE\] \[--from NAME\] \[--force\]/m);
  });
});

describe("starterText", () => {
  it("points the schema comment at the given place and renames the recipe's mentions of its shipped path", () => {
    const text = starterText(readFileSync(join(RECIPES, "local-demo.yaml"), "utf8"), { name: "local-demo", schemaRef: "/opt/rlpipe/schema/recipe.schema.json", writtenAs: "my.yaml" });
    assert.match(text, /^# yaml-language-server: \$schema=\/opt\/rlpipe\/schema\/recipe\.schema\.json$/m);
    assert.equal(text.match(/yaml-language-server/g)?.length, 1);
    assert.match(text, /rlpipe deploy my\.yaml --provider local/);
    assert.deepEqual(filesNextToRecipe(parseRecipe(text, "my.yaml").recipe), ["data/demo-problems.jsonl"]);
    assert.match(starterText("kind: Recipe\n", { name: "x", schemaRef: "s.json", writtenAs: "x.yaml" }), /^# yaml-language-server: \$schema=s\.json\nkind: Recipe\n$/);
  });
});
