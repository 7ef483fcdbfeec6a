// rlpipe serve under the load an RL run brings: many more concurrent requests than slots, whose clients give up.
// The excess is answered 429 with Retry-After at once, /v1/ping keeps answering, the programs of clients that
// disconnected are stopped (their slots free at once, not when the programs end), and a fresh request is served.
// The programs sleep far longer than any bound here: a server that kept working for clients that left would fail.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { reservedPlaces } from "../functions/admission.js";
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
      // One client: it gets all of --max-requests but the places kept for another client (admission.ts).
      const admitted = 8 - reservedPlaces(8);
      const clients = Array.from({ length: total }, () => new AbortController());
      const outcomes: Outcome[] = new Array(total);
      const settled = clients.map((c, i) => fetch(`${s.url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(SLEEPER), signal: c.signal })
        .then(async (res) => { outcomes[i] = { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() }; })
        .catch(() => { outcomes[i] = { aborted: true }; }));
      const refused = () => outcomes.filter((o) => o?.status === 429);
      await waitFor(`${admitted} requests admitted and the other ${total - admitted} refused`, async () => refused().length === total - admitted && (await s.stats()).server.admission.inProgress === admitted, 120_000);
      for (const o of refused()) {
        assert.ok(Number(o.retryAfter) >= 1, `Retry-After ${o.retryAfter}`);
        assert.equal(o.body.status, "SandboxError", "SandboxFusion's clients read status and message");
        assert.match(o.body.detail, new RegExp(`server busy for this client: it has ${admitted} requests in progress, and the last 1 of 8 places are kept for other clients`));
      }
      // All of that happened while the admitted programs still sleep (they would for 600 s): the refusals were at once.
      const ping = await fetch(`${s.url}/v1/ping`);
      assert.equal(await ping.json(), "pong");
      const busy = await s.stats();
      assert.equal(busy.server.admission.inProgress, admitted);
      assert.equal(busy.sandbox.slots.busy, 2, JSON.stringify(busy.sandbox.slots));
      assert.equal(busy.sandbox.slots.waiting, admitted - 2);

      for (const c of clients) c.abort();
      await Promise.all(settled);
      await waitFor("the server idle after its clients left", async () => {
        const st = await s.stats();
        return st.server.admission.inProgress === 0 && st.sandbox.slots.busy === 0 && st.sandbox.slots.waiting === 0;
      }, 60_000);
      const idle = await s.stats();
      assert.equal(idle.requests.cancelled.client_disconnected, admitted, JSON.stringify(idle.requests.cancelled));
      assert.equal(idle.requests.rejected["/run_code"], total - admitted);
      await waitFor("one log line per cancelled request", () => s.log.filter((l) => /^cancelled POST \/run_code: the client disconnected/.test(l)).length === admitted, 30_000);
      assert.ok(s.log.some((l) => /^overload: \d+ requests? answered 429/.test(l)), s.log.slice(0, 5).join("\n"));

      const fresh = await fetch(`${s.url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "print(1)" }) });
      const answer = await fresh.json() as { status: string; run_result: { stdout: string } };
      assert.equal(answer.status, "Success", JSON.stringify(answer));
      assert.equal(answer.run_result.stdout, "1\n");
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      assert.match(metrics, new RegExp(`^rlpipe_cancelled_total\\{route="/run_code",reason="client_disconnected"\\} ${admitted}$`, "m"));
      assert.match(metrics, new RegExp(`^rlpipe_rejected_total\\{route="/run_code"\\} ${total - admitted}$`, "m"));
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

describe("rlpipe serve shares its places between clients (issue 32, item 6)", { timeout: 600_000 }, () => {
  let s: ServeProcess;
  before(async () => { s = await startServe(["--sandbox", "local", "--concurrency", "2", "--max-requests", "16"]); });
  after(async () => { await s?.stop(); });

  /** A client that keeps `n` requests going (retrying at once when refused, ignoring Retry-After) until told to stop. */
  function flood(n: number, send: () => Promise<Response>) {
    const seen = { admitted: 0, refused: 0, details: new Set<string>() };
    let stop = false;
    const loops = Array.from({ length: n }, async () => {
      while (!stop) {
        const res = await send();
        const body = await res.json() as { detail?: string };
        if (res.status === 429) {
          seen.refused++;
          seen.details.add((body.detail ?? "").replace(/\d+/g, "N"));
          await new Promise((r) => setTimeout(r, 20));
        } else {
          assert.equal(res.status, 200, JSON.stringify(body));
          seen.admitted++;
        }
      }
    });
    return { seen, stop: async () => { stop = true; await Promise.all(loops); } };
  }

  const napping = (s: number) => `\`\`\`python\nimport time\ntime.sleep(${s})\nprint(1)\n\`\`\``;
  const reward = (url: string, viaFetch: (u: string, init: RequestInit) => Promise<Response> = fetch) => viaFetch(`${url}/v1/rewards`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ samples: [{ data_source: "x", solution_str: napping(0.3), ground_truth: { type: "stdin_stdout", input: [String(Math.random())], output: ["1"] } }] }),
  });

  it("a greedy reward client gets its share; the tool calls beside it, and a client on another address, are admitted", async () => {
    const greedy = flood(48, () => reward(s.url));
    await waitFor("the greedy client holding all but the reserved places", async () => (await s.stats()).server.admission.inProgress >= 14, 60_000);
    // The tool calls of the same job come from the same loopback address: another client all the same.
    const tools = flood(6, () => fetch(`${s.url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "import time\ntime.sleep(0.3)\nprint(1)" }) }));
    // Another reward client on another address (127.0.0.2 reaches the server on 127.0.0.1 over the loopback device).
    const undici = await import("undici");
    const elsewhere = new undici.Agent({ connect: { localAddress: "127.0.0.2" } });
    const other = flood(6, () => reward(s.url, (u, init) => undici.fetch(u, { ...(init as object), dispatcher: elsewhere }) as unknown as Promise<Response>));
    try {
      await waitFor("both other clients served 10 requests each while the greedy one floods", () => tools.seen.admitted >= 10 && other.seen.admitted >= 10, 240_000);
      const byClient = (await s.stats()).server.admission.byClient as Record<string, number>;
      assert.ok(Object.keys(byClient).some((k) => /^grading from 127\.0\.0\.1/.test(k)) || greedy.seen.admitted > 0, JSON.stringify(byClient));
    } finally {
      await Promise.all([greedy.stop(), tools.stop(), other.stop()]);
      await elsewhere.close();
    }
    assert.ok(greedy.seen.refused > 0 && [...greedy.seen.details].some((d) => /its share \(N of N\)|kept for other clients/.test(d)), [...greedy.seen.details].join("; "));
    assert.ok(greedy.seen.admitted > 0);
  });
});
