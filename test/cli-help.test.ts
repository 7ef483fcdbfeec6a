// CLI conventions: per-command help that lists every option the command really accepts (read from its own
// parseArgs call, so help and parser cannot drift), --version/-V, did-you-mean, JSON errors with --json, the
// exit-code table, plan's default provider, endpoints without a scheme, and the one retry layer's budget.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ParseArgsConfig } from "node:util";
import { COMMANDS, COMMAND_NAMES, formatHelp } from "../bin/help.js";
import { main } from "../bin/rlpipe.js";
import { VERSION } from "../bin/version.js";
import { ProviderError, kindOfNetworkError, tlsFailure, withRetry } from "../adapters/providers/provider.js";
import { EXIT_CODE_MEANINGS } from "../core/errors.js";
import { parseEndpoint, withScheme } from "../core/util/endpoint.js";
import { ROOT, editYaml, recipePath } from "./helpers.js";
import { CLI, runCli } from "./cli-process.js";


const rlpipe = (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) => runCli(args, opts);

/** Runs main() in this process and records the options every parseArgs call was given. */
async function optionsParsedBy(argv: string[]): Promise<{ options: string[]; code: number; out: string; err: string }> {
  const require = createRequire(import.meta.url);
  const util = require("node:util") as { parseArgs: (c: ParseArgsConfig) => unknown };
  const original = util.parseArgs;
  const seen: string[] = [];
  util.parseArgs = (config: ParseArgsConfig) => { seen.push(...Object.keys(config.options ?? {})); return original(config); };
  syncBuiltinESMExports();
  const out: string[] = [];
  const err: string[] = [];
  try {
    const code = await main(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
    return { options: [...new Set(seen)].sort(), code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    util.parseArgs = original;
    syncBuiltinESMExports();
  }
}

describe("rlpipe help", () => {
  it("every command's --help prints its own text, naming every option its parser accepts", async () => {
    const texts = new Map<string, string>();
    for (const name of COMMAND_NAMES) {
      // An unknown option makes the command parse its arguments (and fail): that call shows what it accepts.
      const parsed = await optionsParsedBy([name, "--no-such-option-xyz"]);
      assert.equal(parsed.code, 2, `${name}: ${parsed.err}`);
      assert.match(parsed.err, /unknown option --no-such-option-xyz/);
      assert.deepEqual(parsed.options, Object.keys(COMMANDS[name].options).sort(), `${name}: the options in bin/help.ts are the ones its parser accepts`);
      const r = rlpipe([name, "--help"]);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out.trimEnd(), formatHelp(name), `${name} --help prints its own text`);
      for (const o of parsed.options) assert.match(r.out, new RegExp(`--${o}\\b.*\\S`), `${name} --help describes --${o}`);
      assert.equal(rlpipe(["help", name]).out, r.out, `rlpipe help ${name} is the same text`);
      assert.equal(rlpipe([name, "-h"]).out, r.out);
      texts.set(name, r.out);
    }
    assert.equal(new Set(texts.values()).size, COMMAND_NAMES.length, "no two commands share a help text");
    assert.match(texts.get("logs")!, /^usage: rlpipe logs <run>/);
    assert.match(texts.get("restore")!, /--step N/);
    assert.doesNotMatch(texts.get("checkpoints")!, /--step/);
  });

  it("rlpipe --help lists every command and the exit codes; no command is usage on stderr with exit 2", () => {
    const r = rlpipe(["--help"]);
    assert.equal(r.code, 0);
    for (const name of COMMAND_NAMES) assert.match(r.out, new RegExp(`\\n  ${name}\\s+\\S`), name);
    for (const [code, meaning] of EXIT_CODE_MEANINGS) assert.ok(r.out.includes(`  ${String(code).padEnd(4)} ${meaning}`), `exit code ${code}`);
    const none = rlpipe([]);
    assert.equal(none.code, 2);
    assert.equal(none.out, "");
    assert.match(none.err, /usage: rlpipe <command>/);
  });

  it("--version, -V and version print the version", () => {
    for (const v of ["--version", "-V", "version"]) {
      const r = rlpipe([v]);
      assert.equal(r.code, 0);
      assert.equal(r.out.trim(), VERSION);
    }
    assert.equal(VERSION, JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
  });

  it("a mistyped command gets a did-you-mean (exit 2), as JSON on stdout with --json", () => {
    const r = rlpipe(["stauts"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /unknown command "stauts"; did you mean "status"\?/);
    const j = rlpipe(["deplyo", "x.yaml", "--json"]);
    assert.equal(j.code, 2);
    assert.deepEqual(JSON.parse(j.out).error.code, "unknown_command");
    assert.match(JSON.parse(j.out).error.message, /did you mean "deploy"/);
    assert.match(rlpipe(["help", "chekpoints"]).err, /did you mean "checkpoints"/);
  });

  it("a mistyped option gets a did-you-mean from that command's own options, in every command (exit 2, JSON with --json)", async () => {
    for (const name of COMMAND_NAMES) {
      // Each long option with a letter dropped from its middle, as a hand slips (--provider → --provder).
      for (const option of Object.keys(COMMANDS[name].options).filter((o) => o.length >= 5)) {
        const typo = `--${option.slice(0, Math.floor(option.length / 2))}${option.slice(Math.floor(option.length / 2) + 1)}`;
        const r = await optionsParsedBy([name, typo, "--json"]);
        assert.equal(r.code, 2, `${name} ${typo}: ${r.err}`);
        assert.match(r.err, new RegExp(`^rlpipe: unknown option ${typo}; did you mean --${option}\\?\\n {2}hint: rlpipe ${name} takes --`), `${name} ${typo}`);
        const doc = JSON.parse(r.out) as { error: Record<string, unknown> };
        assert.deepEqual([doc.error["code"], doc.error["message"], doc.error["exitCode"]], ["unknown_option", `unknown option ${typo}; did you mean --${option}?`, 2]);
        assert.doesNotMatch(r.err, /Unknown option|'-- "/, "no parser text");
      }
    }
    // As a new user runs it: the issue's own example, a child process.
    const r = rlpipe(["deploy", recipePath("local-demo"), "--provder", "local"]);
    assert.equal(r.code, 2);
    assert.equal(r.err, "rlpipe: unknown option --provder; did you mean --provider?\n  hint: rlpipe deploy takes --provider, --dry-run, --yes, --wait, --new, --force, --json, --verl-profile, --help (rlpipe deploy --help)\n");
    assert.equal(r.out, "");
    // Nothing close: no guess, the options and Node's advice about arguments that start with '-'.
    assert.match(rlpipe(["stop", "x", "--force"]).err, /^rlpipe: unknown option --force\n {2}hint: rlpipe stop takes --json, --help \(rlpipe stop --help\); an argument starting with '-' goes after "--"\n$/);
    assert.match(rlpipe(["plan", "x", "-P"]).err, /unknown option -P; did you mean -p \(--provider\)\?/);
    // The other parser errors are said in words too.
    assert.match(rlpipe(["plan", "x", "--provider"]).err, /^rlpipe: option --provider needs a value \(NAME\)\n {2}hint: write --provider NAME/);
    assert.match(rlpipe(["plan", "x", "--json=1"]).err, /^rlpipe: option --json is a switch and takes no value/);
    assert.match(rlpipe(["schema", "extra"]).err, /^rlpipe: rlpipe schema takes no arguments, got "extra"/);
  });
});

describe("errors with --json", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-json-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a recipe error is JSON on stdout with file, line, col and every issue; the text stays on stderr", () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, readFileSync(recipePath("qwen3-1.7b-code-toolcall"), "utf8").replace("      n: 8\n", "      n: eight\n"));
    const r = rlpipe(["plan", bad, "--provider", "modelarts", "--out", join(dir, "never"), "--json"]);
    assert.equal(r.code, 2);
    const e = JSON.parse(r.out).error;
    assert.equal(e.exitCode, 2);
    assert.equal(e.file, bad);
    assert.equal(typeof e.line, "number");
    assert.equal(e.col, 10);
    assert.equal(e.path, "stages[2].rollout.n");
    assert.equal(e.issues[0].message, 'expected a positive integer, got "eight"');
    assert.equal(e.issues[0].hint, "write a whole number of 1 or more, such as 2 (no quotes)");
    assert.match(r.err, /bad\.yaml:\d+:10: stages\[2\]\.rollout\.n/);
  });

  it("usage errors, an unknown run and a bad flag are JSON too, with their codes and hints", () => {
    const unknownRun = rlpipe(["status", "no-such-run-12345678", "--json"], { cwd: dir });
    assert.equal(unknownRun.code, 2);
    assert.deepEqual(Object.keys(JSON.parse(unknownRun.out)), ["error"]);
    assert.equal(JSON.parse(unknownRun.out).error.code, "unknown_run");
    assert.match(JSON.parse(unknownRun.out).error.hint, /rlpipe list/);
    const flag = rlpipe(["logs", "x", "--follw", "--json"], { cwd: dir });
    assert.equal(flag.code, 2);
    assert.deepEqual(JSON.parse(flag.out).error, { code: "unknown_option", message: "unknown option --follw; did you mean --follow?", hint: "rlpipe logs takes --follow, --json, --help (rlpipe logs --help)", exitCode: 2 });
    const noJson = rlpipe(["logs", "x", "--follw"], { cwd: dir });
    assert.equal(noJson.out, "", "without --json nothing goes to stdout");
  });
});

describe("rlpipe serve", () => {
  it("a port already in use is a choice to change (exit 2 with a hint), not an internal error", async () => {
    const busy = createNetServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    try {
      const port = (busy.address() as { port: number }).port;
      const r = await new Promise<{ code: number | null; err: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--quiet"], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: ROOT } });
        let err = "";
        child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
        const t = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.on("close", (code) => { clearTimeout(t); resolve({ code, err }); });
      });
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use\\n {2}hint: choose another --port`));
    } finally {
      busy.close();
    }
  });
});

describe("rlpipe serve --isolation", () => {
  it("an unknown isolation path, or one for a sandbox that has none, is a usage error (exit 2) before anything starts", () => {
    const bad = rlpipe(["serve", "--isolation", "lukewarm"]);
    assert.equal(bad.code, 2, bad.err);
    assert.match(bad.err, /--isolation must be warm or per-program, got lukewarm/);
    const remote = rlpipe(["serve", "--sandbox", "scalebox", "--isolation", "per-program"]);
    assert.equal(remote.code, 2, remote.err);
    assert.match(remote.err, /--isolation applies to --sandbox local only/);
  });

  it("--python-env must be an environment the sandbox can use (exit 2, with how to make one) and applies to the local sandbox only", () => {
    const missing = rlpipe(["serve", "--python-env", "/nonexistent/env"]);
    assert.equal(missing.code, 2, missing.err);
    assert.match(missing.err, /--python-env \/nonexistent\/env: no such directory/);
    assert.match(missing.err, /hint: build one with: rlpipe sandbox setup --python-env \/nonexistent\/env/);
    const remote = rlpipe(["serve", "--sandbox", "scalebox", "--python-env", "/x"]);
    assert.equal(remote.code, 2, remote.err);
    assert.match(remote.err, /--python-env applies to --sandbox local only/);
    const dry = rlpipe(["sandbox", "setup", "--python-env", "/nonexistent/env", "--dry-run", "--json"]);
    assert.equal(dry.code, 0, dry.err);
    const doc = JSON.parse(dry.out) as { packages: string[]; pythonEnv: { dir: string; dryRun: boolean; packages: { name: string }[] } };
    assert.deepEqual(doc.packages, [], "--python-env alone installs no toolchain");
    assert.equal(doc.pythonEnv.dryRun, true);
    assert.ok(doc.pythonEnv.packages.some((p) => p.name === "sympy"));
  });

  it("--help names warm as the default and per-program as the other path", () => {
    const help = rlpipe(["serve", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.out, /--isolation MODE\s+--sandbox local: warm \(programs fork from long-lived sandboxes, cleaned after each program\) or per-program \(a fresh bubblewrap per program\) \(default warm\)/);
  });
});

describe("rlpipe sandbox setup", () => {
  it("skips installed toolchains without calling apt, refuses unknown languages (exit 2), and says what it would do", () => {
    const have = rlpipe(["sandbox", "setup", "--languages", "bash,perl", "--json"]);
    assert.equal(have.code, 0, have.err);
    assert.match(have.err, /the host packages of bash, perl are installed/);
    const doc = JSON.parse(have.out) as { packages: string[]; installed: string[]; languages: string[]; unavailable: string[] };
    // Perl's libraries for SandboxFusion's programs (Data::Compare, Test::Deep) are listed, and installed already.
    assert.deepEqual([doc.packages, doc.installed, doc.unavailable], [["libdata-compare-perl", "libtest-deep-perl"], [], []]);
    assert.ok(doc.languages[0] === "python" && doc.languages.includes("bash") && doc.languages.includes("perl"));
    const bad = rlpipe(["sandbox", "setup", "--languages", "bash,cobol"]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--languages: cobol is not a language rlpipe installs \(known: cpp, nodejs, go, java, rust, bash, perl, php, ruby, lua, R, D_ut, verilog, racket, scala, csharp, kotlin_script, swift, julia; Python needs nothing\)/);
    const sub = rlpipe(["sandbox", "install"]);
    assert.equal(sub.code, 2);
    assert.match(sub.err, /rlpipe sandbox takes one subcommand: setup \(got install\)/);
  });
});

describe("rlpipe plan without --provider", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-plan-target-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("uses the recipe's only target, asks when there are several, and says so when it falls back to local", () => {
    const only = rlpipe(["plan", recipePath("retool-qwen2.5-32b-h200"), "--out", join(dir, "ray")]);
    assert.equal(only.code, 0, only.err);
    assert.match(only.out, /rlpipe plan: retool-qwen2\.5-32b-h200 → ray /);
    const several = rlpipe(["plan", recipePath("qwen3-1.7b-code-toolcall"), "--out", join(dir, "never")]);
    assert.equal(several.code, 2);
    assert.match(several.err, /the recipe has 2 targets \(docker, modelarts\): say which one to plan for/);
    assert.match(several.err, /hint: pass --provider docker\|modelarts/);
    const none = rlpipe(["plan", recipePath("local-demo"), "--out", join(dir, "local")]);
    assert.equal(none.code, 0, none.err);
    assert.match(none.out, /→ local /);
    assert.match(none.err, /the recipe has no targets; planning for provider local/);
  });

  it("deploy uses the recipe's only target too (docker aside); several or none need --provider (exit 2, JSON with --json)", () => {
    const only = rlpipe(["deploy", recipePath("retool-qwen2.5-32b-h200"), "--dry-run", "--json"], { cwd: dir });
    assert.equal(only.code, 0, only.err);
    assert.equal((JSON.parse(only.out) as { plan: { provider: string } }).plan.provider, "ray");
    // docker + modelarts: docker has no deploy API, so modelarts is the one a deploy can mean.
    const withDocker = rlpipe(["deploy", recipePath("qwen3-1.7b-code-toolcall"), "--dry-run", "--json"], { cwd: dir });
    assert.equal(withDocker.code, 0, withDocker.err);
    assert.equal((JSON.parse(withDocker.out) as { plan: { provider: string } }).plan.provider, "modelarts");
    const two = join(dir, "two-targets.yaml");
    writeFileSync(two, editYaml(readFileSync(recipePath("retool-qwen2.5-32b-h200"), "utf8"), [[["targets", "slurm"], {}]]));
    const several = rlpipe(["deploy", two, "--dry-run", "--json"], { cwd: dir });
    assert.equal(several.code, 2);
    assert.match(several.err, /^rlpipe: the recipe has 2 targets \(ray, slurm\): say which one to deploy to\n {2}hint: pass --provider ray\|slurm\n$/);
    assert.equal((JSON.parse(several.out) as { error: { code: string } }).error.code, "provider_required");
    const none = rlpipe(["deploy", recipePath("local-demo"), "--dry-run"], { cwd: dir });
    assert.equal(none.code, 2);
    assert.match(none.err, /the recipe declares no targets: say where to deploy it\n {2}hint: pass --provider local\|ray\|slurm\|modelarts\|tione/);
    assert.match(rlpipe(["deploy", "--help"]).out, /--provider NAME +where to run it: .* \(default: the recipe's only target\)/);
  });
});

describe("endpoints and retries", () => {
  it("an endpoint without a scheme is https, or http on a loopback address; other mistakes are refused at once", () => {
    assert.equal(withScheme("modelarts.cn-north-4.myhuaweicloud.com"), "https://modelarts.cn-north-4.myhuaweicloud.com");
    assert.equal(withScheme("tione.internal.example:8443"), "https://tione.internal.example:8443");
    assert.equal(withScheme("10.0.0.5:8265"), "https://10.0.0.5:8265");
    assert.equal(withScheme("127.0.0.1:8265"), "http://127.0.0.1:8265");
    assert.equal(withScheme("localhost:9000"), "http://localhost:9000");
    assert.equal(withScheme("[::1]:9000"), "http://[::1]:9000");
    assert.equal(withScheme("https://x.example"), "https://x.example");
    const ok = parseEndpoint("localhost:9000");
    assert.ok("url" in ok && ok.url.origin === "http://localhost:9000");
    const plain = parseEndpoint("http://10.0.0.5:8265");
    assert.ok("problem" in plain && plain.problem.code === "insecure_endpoint");
    const scheme = parseEndpoint("ftp://x.example");
    assert.ok("problem" in scheme && scheme.problem.code === "bad_endpoint");
    const junk = parseEndpoint("not a url");
    assert.ok("problem" in junk && junk.problem.code === "bad_endpoint");
  });

  it("a failed TLS handshake is fatal and said in words; a refused connection is retryable", () => {
    const tls = Object.assign(new Error("write EPROTO 40E8:error:0A00010B:SSL routines:ssl3_get_record:wrong version number"), { code: "EPROTO" });
    assert.equal(kindOfNetworkError(tls), "fatal");
    assert.match(tlsFailure(tls)!, /does not speak https/);
    assert.doesNotMatch(tlsFailure(tls)!, /SSL routines/);
    const wrapped = Object.assign(new TypeError("fetch failed"), { cause: { code: "ERR_SSL_WRONG_VERSION_NUMBER" } });
    assert.equal(kindOfNetworkError(wrapped), "fatal");
    assert.equal(kindOfNetworkError(Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } })), "retryable");
    assert.equal(tlsFailure(Object.assign(new Error("x"), { code: "ECONNRESET" })), undefined);
  });

  it("withRetry: one line per retry, and a budget ends it with the last reason (exit 3), even when a call hangs", async () => {
    const notices: string[] = [];
    let calls = 0;
    const refused = () => { calls++; throw new ProviderError("modelarts", "retryable", "modelarts_network", "ModelArts show training job x: network error (ECONNREFUSED)"); };
    await assert.rejects(
      withRetry({ provider: "modelarts", op: "status" }, async () => refused(), { budgetMs: 400, baseDelayMs: 20, maxDelayMs: 40, attempts: 1000, onRetry: (n) => notices.push(`${n.what.provider} ${n.what.op} attempt ${n.nextAttempt}`) }),
      (e: unknown) => e instanceof ProviderError && e.exitCode === 3 && /ECONNREFUSED\); gave up after \d+ attempts in [\d.]+ s \(retry budget 0.4 s: RLPIPE_RETRY_BUDGET_MS\)/.test(e.message),
    );
    assert.ok(calls >= 2, `retried (${calls} calls)`);
    assert.deepEqual(notices[0], "modelarts status attempt 2");
    assert.equal(notices.length, calls - 1);
    // A call that never answers is cut at the budget through the signal it was given.
    const hanging = (signal: AbortSignal | undefined) => new Promise<never>((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)));
    const alive = setTimeout(() => undefined, 60_000); // a real call's socket keeps the process alive meanwhile
    try {
      await assert.rejects(withRetry({ provider: "ray", op: "status" }, hanging, { budgetMs: 200 }), (e: unknown) => e instanceof ProviderError && e.code === "provider_timeout" && e.exitCode === 3);
    } finally {
      clearTimeout(alive);
    }
    // What repeating cannot fix is thrown at once, unchanged.
    let fatalCalls = 0;
    const fatal = new ProviderError("tione", "fatal", "tione_auth_failed", "AuthFailure.SignatureFailure");
    await assert.rejects(withRetry({ provider: "tione", op: "status" }, async () => { fatalCalls++; throw fatal; }, { budgetMs: 5000 }), (e: unknown) => e === fatal);
    assert.equal(fatalCalls, 1);
  });
});
