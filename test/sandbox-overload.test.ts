// rlpipe serve under the load an RL run brings: many more concurrent requests than slots, whose clients give up.
// The excess is answered 429 with Retry-After at once, /v1/ping keeps answering, the programs of clients that
// disconnected are stopped (their slots free at once, not when the programs end), and a fresh request is served.
// The programs sleep far longer than any bound here: a server that kept working for clients that left would fail.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type ServeProcess, startServe, waitFor } from "./serve-process.js";

const SLEEPER = { language: "python", code: "import time\ntime.sleep(600)\nprint('woke')", run_timeout: 900 };

interface Outcome { status?: number; retryAfter?: string | null; body?: any; aborted?: boolean }

for (const isolation of ["warm", "per-program"] as const) {
  describe(`rlpipe serve (${isolation}) flooded with sleeping programs whose clients give up`, { timeout: 600_000 }, () => {
    let s: ServeProcess;
    before(async () => { s = await startServe(["--sandbox", "local", "--isolation", isolation, "--concurrency", "2", "--max-requests", "8"]); });
    after(async () => { await s?.stop(); });

    it("answers the excess 429 at once, keeps /v1/ping answering, stops the abandoned programs, and serves a fresh request", async () => {
      const total = 120;
      const clients = Array.from({ length: total }, () => new AbortController());
      const outcomes: Outcome[] = new Array(total);
      const settled = clients.map((c, i) => fetch(`${s.url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(SLEEPER), signal: c.signal })
        .then(async (res) => { outcomes[i] = { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() }; })
        .catch(() => { outcomes[i] = { aborted: true }; }));
      const refused = () => outcomes.filter((o) => o?.status === 429);
      await waitFor("8 requests admitted and the other 112 refused", async () => refused().length === total - 8 && (await s.stats()).server.admission.inProgress === 8, 120_000);
      for (const o of refused()) {
        assert.ok(Number(o.retryAfter) >= 1, `Retry-After ${o.retryAfter}`);
        assert.equal(o.body.status, "SandboxError", "SandboxFusion's clients read status and message");
        assert.match(o.body.detail, /server busy: 8 requests in progress \(at most 8\)/);
      }
      // All of that happened while the admitted programs still sleep (they would for 600 s): the refusals were at once.
      const ping = await fetch(`${s.url}/v1/ping`);
      assert.equal(await ping.json(), "pong");
      const busy = await s.stats();
      assert.equal(busy.server.admission.inProgress, 8);
      assert.equal(busy.sandbox.slots.busy, 2, JSON.stringify(busy.sandbox.slots));
      assert.equal(busy.sandbox.slots.waiting, 6);

      for (const c of clients) c.abort();
      await Promise.all(settled);
      await waitFor("the server idle after its clients left", async () => {
        const st = await s.stats();
        return st.server.admission.inProgress === 0 && st.sandbox.slots.busy === 0 && st.sandbox.slots.waiting === 0;
      }, 60_000);
      const idle = await s.stats();
      assert.equal(idle.requests.cancelled.client_disconnected, 8, JSON.stringify(idle.requests.cancelled));
      assert.equal(idle.requests.rejected["/run_code"], total - 8);
      await waitFor("one log line per cancelled request", () => s.log.filter((l) => /^cancelled POST \/run_code: the client disconnected/.test(l)).length === 8, 30_000);
      assert.ok(s.log.some((l) => /^overload: \d+ requests? answered 429/.test(l)), s.log.slice(0, 5).join("\n"));

      const fresh = await fetch(`${s.url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "print(1)" }) });
      const answer = await fresh.json() as { status: string; run_result: { stdout: string } };
      assert.equal(answer.status, "Success", JSON.stringify(answer));
      assert.equal(answer.run_result.stdout, "1\n");
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      assert.match(metrics, /^rlpipe_cancelled_total\{route="\/run_code",reason="client_disconnected"\} 8$/m);
      assert.match(metrics, /^rlpipe_rejected_total\{route="\/run_code"\} 112$/m);
    });

    it("a request whose deadline passes has its programs stopped and is answered 504, which verl's client retries", async () => {
      const res = await fetch(`${s.url}/run_code`, {
        method: "POST", headers: { "content-type": "application/json", "x-rlpipe-deadline-s": "2" }, body: JSON.stringify(SLEEPER),
      });
      assert.equal(res.status, 504);
      const body = await res.json() as { status: string; message: string };
      assert.equal(body.status, "SandboxError");
      assert.match(body.message, /deadline passed/);
      await waitFor("the slot free again", async () => (await s.stats()).sandbox.slots.busy === 0, 60_000);
      assert.ok(s.log.some((l) => /^cancelled POST \/run_code: its deadline passed/.test(l)));
    });
  });
}
