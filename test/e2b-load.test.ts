// The cloud reward function under RL load, through the real function app (Lambda adapter) and the real e2b SDK,
// against the loopback E2B fake with the account's limits ENFORCED (test/fakes/e2b-fake.ts): the fake counts every
// create attempt by arrival and the sandboxes alive at once, so limits are asserted where E2B counts them. No
// assertion is about time: the tests wait for conditions (with generous bounds) and count.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { E2BSandbox } from "../adapters/sandboxes/e2b.js";
import { BoxPool, CreatePacer, type PoolClock } from "../adapters/sandboxes/e2b-pool.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { instanceShare, AccountQuota } from "../core/sandbox-quota.js";
import { makeRewardApp } from "../functions/apps/reward.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { lambdaEvent, parseResult } from "./fakes/platform-events.js";

const T = { timeout: 180_000 };
const E2B_KEY = `ark_${randomBytes(16).toString("hex")}`;
const TOKEN = randomBytes(24).toString("hex");
const GT = JSON.stringify({ input: ["1 2"], output: ["3"], fn_name: null, type: "stdin_stdout" });
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

/** The most of `times` (ms) inside any window [t, t + windowMs). */
function maxInWindow(times: readonly number[], windowMs = 1000): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i]! - t[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

async function waitFor(what: string, cond: () => boolean, boundMs = 60_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A unique a+b program (the result cache must not answer it), optionally doing `extra` first. */
function program(tag: string, extra = ""): string {
  return `\`\`\`python\n# ${tag}\n${extra}a, b = map(int, input().split())\nprint(a + b)\n\`\`\``;
}

describe("the reward function under RL load (E2B fake enforcing the account's limits)", () => {
  let fake: FakeE2B;
  let dir: string;

  before(async () => {
    fake = await FakeE2B.start({ apiKey: E2B_KEY });
    dir = mkdtempSync(join(tmpdir(), "rlpipe-e2b-load-"));
  });
  beforeEach(() => {
    for (const id of fake.liveIds()) fake.kill(id); // every test starts from an empty account
    fake.reset();
    fake.setLimits({});
  });
  after(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One function instance: its own cold start, pool and share. */
  function instance(env: Record<string, string>) {
    let backend: SandboxBackend | undefined;
    const logs: string[] = [];
    const handler = lambdaHandler(makeRewardApp({ onBackend: (b) => { backend = b; } }), {
      env: {
        RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost",
        RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY, ...env,
      },
      log: (l) => logs.push(l),
    });
    const ctx = { awsRequestId: "req", functionName: "rlpipe-reward" };
    return {
      logs,
      pool: () => (backend as E2BSandbox | undefined)?.poolStats(),
      close: () => backend?.close(),
      reward: async (samples: { code: string }[], opts: { headers?: Record<string, string>; config?: Record<string, unknown> } = {}) => parseResult(await handler(lambdaEvent({
        method: "POST", path: "/v1/rewards", headers: { ...auth, ...opts.headers },
        body: { samples: samples.map((s) => ({ data_source: "code", solution_str: s.code, ground_truth: GT })), ...(opts.config === undefined ? {} : { config: opts.config }) },
      }), ctx)),
    };
  }

  it("many concurrent requests: the account never sees more sandboxes or creates per second than its limits", T, async () => {
    fake.setLimits({ maxSandboxes: 3, createsPerS: 2 });
    const fn = instance({ RLPIPE_E2B_MAX_SANDBOXES: "3", RLPIPE_E2B_CREATES_PER_S: "2", RLPIPE_FUNCTION_INSTANCES: "1", RLPIPE_SANDBOX_QUEUE: "100" });
    try {
      fake.killDuringNextStarts(5, 30); // five sandboxes die under a job: each is replaced, so creates keep coming
      const out = await Promise.all(Array.from({ length: 30 }, (_, i) => fn.reward([{ code: program(`load-${i}`) }])));
      assert.deepEqual(out.map((r) => r.status), Array(30).fill(200));
      assert.deepEqual(out.map((r) => r.body.results[0].status), Array(30).fill("ok"), "every sample scored (killed sandboxes retried)");
      assert.ok(out.every((r) => r.body.results[0].score === 1));
      const attempts = fake.stats.createAttempts.map((a) => a.atMs);
      assert.ok(attempts.length >= 6, `creates: ${attempts.length}`);
      assert.deepEqual(fake.stats.limitRejections, [], "the instance never asked for more than the account allows");
      assert.ok(fake.stats.peakAlive <= 3, `peak alive ${fake.stats.peakAlive} > 3`);
      assert.ok(maxInWindow(attempts) <= 2, `${maxInWindow(attempts)} creates in one second > 2`);
      assert.ok(fn.pool()!.peakLive <= 3);
      console.log(`# load: ${attempts.length} creates, peak ${fake.stats.peakAlive}/3 alive, at most ${maxInWindow(attempts)}/2 creates in any 1 s`);
    } finally {
      await fn.close();
    }
  });

  it("a full queue: 429 with Retry-After from the function, before any program runs; the queued requests succeed", T, async () => {
    const go = join(dir, `go-${randomBytes(4).toString("hex")}`);
    const fn = instance({ RLPIPE_E2B_MAX_SANDBOXES: "1", RLPIPE_SANDBOX_QUEUE: "2" });
    try {
      assert.equal((await fn.reward([{ code: program("warm") }])).status, 200);
      const startsBefore = fake.stats.starts;
      // One job holds the only sandbox until the test lets it go; two more wait in the queue.
      const blocker = fn.reward([{ code: program("blocker", `import os, time\nwhile not os.path.exists(${JSON.stringify(go)}): time.sleep(0.02)\n`) }], { config: { run_timeout_s: 120 } });
      await waitFor("the blocker to run", () => fake.stats.starts === startsBefore + 1);
      const queued = [fn.reward([{ code: program("q1") }]), fn.reward([{ code: program("q2") }])];
      await waitFor("two jobs queued", () => fn.pool()!.admittedJobs === 3);
      const refused = await fn.reward([{ code: program("refused") }]);
      assert.equal(refused.status, 429);
      const retryAfter = Number(refused.headers["retry-after"] ?? refused.headers["Retry-After"]);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(refused.body.status, "SandboxError");
      assert.match(refused.body.detail, /saturated/);
      // A batch is refused whole too (never half run).
      assert.equal((await fn.reward([{ code: program("b1") }, { code: program("b2") }])).status, 429);
      assert.equal(fake.stats.starts, startsBefore + 1, "nothing refused reached a sandbox");
      writeFileSync(go, "");
      const done = await Promise.all([blocker, ...queued]);
      assert.deepEqual(done.map((r) => [r.status, r.body.results[0].status]), [[200, "ok"], [200, "ok"], [200, "ok"]]);
      assert.equal(fn.pool()!.admittedJobs, 0);
    } finally {
      writeFileSync(go, "");
      await fn.close();
    }
  });

  it("E2B's 429 on create is retried (Retry-After honoured) and the request succeeds", T, async () => {
    // This instance believes the account allows 10 creates/s; the account allows 1 and says so with 429 + Retry-After.
    fake.setLimits({ createsPerS: 1, rateRetryAfterS: 1 });
    const fn = instance({ RLPIPE_E2B_MAX_SANDBOXES: "4", RLPIPE_E2B_CREATES_PER_S: "10", RLPIPE_E2B_TIER: "pro" });
    try {
      const out = await Promise.all(Array.from({ length: 4 }, (_, i) => fn.reward([{ code: program(`rl-${i}`, "import time\ntime.sleep(0.3)\n") }])));
      assert.deepEqual(out.map((r) => [r.status, r.body.results[0].status]), Array(4).fill([200, "ok"]));
      assert.ok(fake.stats.limitRejections.length >= 1, "the account refused some creates");
      assert.ok(maxInWindow(fake.stats.creates.map((c) => c.atMs)) <= 1, "the account's own window held");
      // Plain 429s without Retry-After (E2B's concurrency answer) are retried with backoff too.
      fake.setLimits({});
      const fresh = instance({ RLPIPE_E2B_MAX_SANDBOXES: "1" });
      try {
        fake.failNextCreates(3, 429);
        const r = await fresh.reward([{ code: program("after-429") }]);
        assert.deepEqual([r.status, r.body.results[0].status], [200, "ok"]);
        assert.equal(fake.stats.rejectedCreates.length, 3);
      } finally {
        await fresh.close();
      }
    } finally {
      await fn.close();
    }
  });

  it("two instances sharing the account: each stays within its share, together within the account", T, async () => {
    fake.setLimits({ maxSandboxes: 4, createsPerS: 2 });
    const env = { RLPIPE_E2B_MAX_SANDBOXES: "4", RLPIPE_E2B_CREATES_PER_S: "2", RLPIPE_FUNCTION_INSTANCES: "2", RLPIPE_SANDBOX_QUEUE: "100" };
    const a = instance(env);
    const b = instance(env);
    try {
      fake.killDuringNextStarts(6, 30);
      const out = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? a : b).reward([{ code: program(`two-${i}`) }])));
      assert.deepEqual(out.map((r) => [r.status, r.body.results[0].status]), Array(24).fill([200, "ok"]));
      assert.deepEqual(fake.stats.limitRejections, []);
      assert.ok(fake.stats.peakAlive <= 4, `peak alive ${fake.stats.peakAlive} > 4`);
      const ids = Object.keys(fake.stats.peakAliveByInstance);
      assert.equal(ids.length, 2, "two instances, told apart by their sandboxes' metadata");
      for (const id of ids) {
        const creates = fake.stats.createAttempts.filter((c) => c.instance === id).map((c) => c.atMs);
        assert.ok(fake.stats.peakAliveByInstance[id]! <= 2, `instance ${id}: peak ${fake.stats.peakAliveByInstance[id]} > its share 2`);
        assert.ok(maxInWindow(creates) <= 1, `instance ${id}: ${maxInWindow(creates)} creates in one second > its share 1`);
        console.log(`# instance ${id}: ${creates.length} creates, peak ${fake.stats.peakAliveByInstance[id]}/2 alive, at most ${maxInWindow(creates)}/1 creates in any 1 s`);
      }
      assert.ok(maxInWindow(fake.stats.createAttempts.map((c) => c.atMs)) <= 2);
      assert.match(a.logs.join("\n"), /over 2 instances: this one 2 sandboxes \(share 2\), 1 creates\/s/);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("an exhausted create retry budget is an infra error in the reply, not a score", T, async () => {
    const fn = instance({ RLPIPE_E2B_MAX_SANDBOXES: "1", RLPIPE_E2B_CREATE_RETRY_S: "0.5" });
    try {
      assert.equal((await fn.reward([{ code: program("warm-2") }])).status, 200);
      for (const id of fake.liveIds()) fake.kill(id); // the pooled sandbox is gone …
      fake.failNextCreates(10_000, 429); // … and E2B refuses every create
      const r = await fn.reward([{ code: program("doomed") }]);
      assert.equal(r.status, 200);
      assert.equal(r.body.results[0].status, "infra_error");
      assert.match(r.body.results[0].error, /^e2b_rate_limited: /);
      assert.equal(r.body.stats.infraErrors, 1);
      assert.ok(fake.stats.rejectedCreates.length >= 2, "retried before giving up");
      assert.equal(fn.pool()!.live, 0, "a failed create holds no place");
    } finally {
      await fn.close();
    }
  });

  it("a program that holds its sandbox (sleeps past its deadline, forks) holds no place after the deadline", T, async () => {
    fake.setLimits({ maxSandboxes: 1 });
    const fn = instance({ RLPIPE_E2B_MAX_SANDBOXES: "1" });
    try {
      assert.equal((await fn.reward([{ code: program("warm-3") }])).status, 200);
      const hog = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(15)\n    os._exit(0)\ntime.sleep(15)\n";
      const r = await fn.reward([{ code: program("hog", hog) }], { headers: { "x-rlpipe-deadline-s": "2" }, config: { run_timeout_s: 60 } });
      assert.equal(r.status, 504, "stopped at its deadline");
      const hogBox = fake.stats.creates[0]!.id;
      await waitFor("the hog's sandbox to be killed", () => fake.stats.kills.includes(hogBox));
      await waitFor("its place to be free", () => fn.pool()!.live === 0);
      // The account allows one sandbox: the next request gets a new one without E2B refusing anything.
      const next = await fn.reward([{ code: program("after-hog") }]);
      assert.deepEqual([next.status, next.body.results[0].status], [200, "ok"]);
      assert.deepEqual(fake.stats.limitRejections, []);
      assert.ok(fake.stats.peakAlive <= 1);
    } finally {
      await fn.close();
    }
  });
});

describe("E2B pool parts (injected clock)", () => {
  /** A clock that moves only when a sleeper is due: time never depends on the machine. */
  function virtualClock(): PoolClock & { sleeps: number[] } {
    let now = 0;
    const sleeps: number[] = [];
    return {
      sleeps, now: () => now, random: () => 0.5,
      sleep: async (ms: number) => { sleeps.push(ms); now += ms; },
    };
  }

  it("instance shares: floor of the sandboxes (at least 1), the creates rate divided", () => {
    const hobby20 = instanceShare(AccountQuota.parse({ instances: 20 }));
    assert.deepEqual([hobby20.maxSandboxes, hobby20.createsPerS, hobby20.oversubscribed], [1, 0.05, false]);
    const pro3 = instanceShare(AccountQuota.parse({ tier: "pro", instances: 3 }));
    assert.deepEqual([pro3.maxSandboxes, pro3.createsPerS], [33, 5 / 3]);
    const over = instanceShare(AccountQuota.parse({ maxSandboxes: 2, instances: 5 }));
    assert.deepEqual([over.maxSandboxes, over.oversubscribed], [1, true]);
  });

  it("the pacer waits for a create's answer a window before the create a window later", async () => {
    const clock = virtualClock();
    const pacer = new CreatePacer(2, clock);
    const first = await pacer.turn();
    await pacer.turn(); // 500 ms later (the interval)
    assert.equal(clock.now(), 500);
    let third = false;
    const p = pacer.turn().then((done) => { third = true; return done; });
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false, "the first create is unanswered: the third may not go");
    first();
    (await p)();
    assert.equal(clock.now(), 1500, "a window (1 s) after the first answer, at 500 ms");
  });

  it("a batch that does not fit is refused whole with a Retry-After from the drain rate", async () => {
    const clock = virtualClock();
    const pool = new BoxPool<number>({
      maxLive: 2, createsPerS: 100, maxQueuedJobs: 2, clock, create: async () => 1, destroy: async () => undefined,
      createRetry: { attempts: 1, budgetMs: 0, baseDelayMs: 1, maxDelayMs: 1, retryable: () => false },
    });
    const places = pool.admit(3);
    assert.ok(Array.isArray(places));
    const refused = pool.admit(2);
    assert.ok(!Array.isArray(refused));
    assert.equal(refused.retryAfterS, 1);
    places.forEach((p) => p.leave());
    assert.ok(Array.isArray(pool.admit(10)), "an empty pool takes a batch larger than itself");
  });
});
