// The warm pool's lifecycle (adapters/sandboxes/local/warm-pool.ts): zygotes are replaced after N programs, when idle past
// their age, and when a program stops its manager (the zygote is ended at the job's budget); replacements start
// at once, so after a pause the next program finds one ready; a zygote that cannot start gives programs an infra
// error instead of a hang, and is retried slowly, not in a loop.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { WarmPool } from "../adapters/sandboxes/local/warm-pool.js";
import { Zygote } from "../adapters/sandboxes/local/zygote.js";
import { DEFAULT_LIMITS } from "../core/grading/types.js";
import { SANDBOX_IDENTITY_PY } from "./sandbox-identity.js";

const WHERE = SANDBOX_IDENTITY_PY;

async function sandboxOf(sb: LocalSandbox): Promise<string> {
  const r = await sb.run({ language: "python", code: WHERE, limits: { runTimeoutMs: 10_000 } });
  assert.equal(r.status, "ok", r.stderr);
  return r.stdout.trim();
}

describe("warm pool: replacing zygotes", { timeout: 120_000 }, () => {
  const opened: LocalSandbox[] = [];
  after(async () => { for (const sb of opened) await sb.close(); });
  const create = async (opts: Parameters<typeof LocalSandbox.create>[0]) => {
    const sb = await LocalSandbox.create({ isolation: "warm", concurrency: 1, ...opts });
    opened.push(sb);
    return sb;
  };

  it("serves at most N programs per zygote, and the replacement is ready by the next program", async () => {
    const sb = await create({ warmMaxPrograms: 2 });
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) {
      seen.push(await sandboxOf(sb));
      await sleep(400); // a pause: the replacement of a retired zygote starts at once, not when it is needed
    }
    const uses = new Map<string, number>();
    for (const s of seen) uses.set(s, (uses.get(s) ?? 0) + 1);
    assert.ok([...uses.values()].every((n) => n <= 2), `a zygote served more than 2 programs: ${JSON.stringify([...uses])}`);
    assert.ok(uses.size >= 3, `programs ran in ${uses.size} zygotes`);
    const counts = sb.stats().counts!;
    assert.ok(counts["zygotesRetired"]! >= 2, JSON.stringify(counts));
    assert.equal(counts["coldWaits"], 0, "no program waited for a zygote to start");
  });

  it("replaces a zygote that is idle past its age", async () => {
    const sb = await create({ warmMaxAgeMs: 1000 });
    const first = await sandboxOf(sb);
    assert.equal(await sandboxOf(sb), first, "a young zygote serves the next program");
    // The pool retires one idle zygote past its age per tick, keeping one ready: once both zygotes it started with
    // are retired (the next one only when its replacement is ready, which a loaded machine delays), the first is gone.
    for (let waitedMs = 0; sb.stats().counts!["zygotesRetired"]! < 2 && waitedMs < 30_000; waitedMs += 250) await sleep(250);
    assert.ok(sb.stats().counts!["zygotesRetired"]! >= 2, JSON.stringify(sb.stats().counts));
    assert.notEqual(await sandboxOf(sb), first);
  });

  it("a program cannot stop its manager (pid 1 of its namespaces drops the signal): the next program runs in the same zygote", async () => {
    const sb = await create({});
    const before = await sandboxOf(sb);
    const [r] = await sb.evaluate([{
      id: "stop", language: "python", code: "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nprint(1)",
      tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 1000, totalTimeoutMs: 1500 },
    }]);
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed"], JSON.stringify(r));
    assert.equal(await sandboxOf(sb), before);
  });

  it("where programs share the sandbox's namespaces, ends a zygote whose manager a program stopped, at the job's budget, and the next program runs in a fresh one", async () => {
    const sb = await create({ programNamespaces: false });
    const before = await sandboxOf(sb);
    const [r] = await sb.evaluate([{
      id: "stop", language: "python", code: "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nprint(1)",
      tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 1000, totalTimeoutMs: 1500 },
    }]);
    assert.equal(r!.status, "ok", JSON.stringify(r));
    assert.deepEqual(r!.cases.map((c) => [c.status, c.detail]), [["skipped", "Total Timeout"]]);
    const next = await sandboxOf(sb);
    assert.notEqual(next, before);
  });
});

describe("warm pool: a zygote that cannot start", { timeout: 60_000 }, () => {
  it("gives programs an infra error instead of waiting forever, and retries slowly", async () => {
    const pool = new WarmPool({
      size: 1, spares: 1, maxPrograms: 10, maxAgeMs: 60_000, uids: [64990, 64991, 64992, 64993],
      spawn: (uid) => Zygote.spawn({ bwrap: "/bin/sh", args: ["-c", "echo 'bwrap: no permission to create namespaces' >&2; exit 1"], seccompFile: undefined, uid, dataFiles: [] }),
    });
    try {
      const started = Date.now();
      const out = await pool.run({ language: "python", code: "print(1)", cases: [{ kind: "stdio", stdin: "" }], limits: DEFAULT_LIMITS, startIndex: 0 }, 10_000);
      assert.match(out.infraError ?? "", /^sandbox failed to start: bwrap: no permission to create namespaces/);
      assert.ok(Date.now() - started < 10_000, "the program did not wait for its budget");
      await sleep(1500);
      assert.ok(pool.counts.zygotesStarted <= 6, `restarted ${pool.counts.zygotesStarted} times in a few seconds: it must back off`);
    } finally {
      pool.close();
    }
  });
});
