// Admission (functions/admission.ts) and the per-request output budget (core/grading/output-budget.ts), as pure code:
// the bound holds, places come back, Retry-After follows how long requests hold their place, deadlines come from the
// client's header within a ceiling, and the budget counts what JSON makes of a string.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Admission, CLIENT_ACTIVE_MS, deadlineMs, defaultCapacity, isRefusal, MIN_CAPACITY, type Ticket } from "../functions/admission.js";
import { jsonStringBytes, OutputBudget } from "../core/grading/output-budget.js";

describe("admission", () => {
  it("admits up to its capacity, refuses the rest at once, and takes a request again once a place is given back", () => {
    const a = new Admission(3, 1);
    const tickets = [a.enter(), a.enter(), a.enter()];
    assert.ok(tickets.every((t) => !isRefusal(t)));
    const refused = a.enter();
    assert.ok(isRefusal(refused));
    assert.match(refused.detail, /3 requests in progress \(at most 3\)/);
    assert.equal(a.active, 3);
    assert.equal(a.queued, 2, "beyond the one slot");
    (tickets[0] as Ticket).release();
    (tickets[0] as Ticket).release(); // twice is once
    assert.equal(a.active, 2);
    assert.ok(!isRefusal(a.enter()));
    assert.deepEqual(a.counts, { admitted: 4, rejected: 1 });
  });

  it("Retry-After follows how long requests hold their place, from 1 to 60 s", () => {
    let now = 0;
    const a = new Admission(1, 1, () => now);
    for (let i = 0; i < 30; i++) {
      const t = a.enter() as Ticket;
      now += 20_000; // each request holds its place 20 s
      t.release();
    }
    const t = a.enter() as Ticket;
    const r = a.enter();
    assert.ok(isRefusal(r));
    assert.ok(r.retryAfterS >= 15 && r.retryAfterS <= 20, String(r.retryAfterS));
    t.release();
    for (let i = 0; i < 60; i++) { const x = a.enter() as Ticket; now += 1; x.release(); }
    a.enter();
    const fast = a.enter();
    assert.ok(isRefusal(fast) && fast.retryAfterS === 1);
    const slow = new Admission(1, 1, () => now);
    const s = slow.enter() as Ticket;
    now += 3_600_000;
    s.release();
    slow.enter();
    const capped = slow.enter();
    assert.ok(isRefusal(capped) && capped.retryAfterS === 60);
  });

  it("shares the places between clients: a greedy one gets its share, a second one is admitted at once (issue 32, item 6)", () => {
    let now = 0;
    const a = new Admission(64, 2, () => now);
    assert.equal(a.reserve, 8);
    const greedy: Ticket[] = [];
    let refusedGreedy = 0;
    for (let i = 0; i < 200; i++) { const t = a.enter("greedy"); if (isRefusal(t)) refusedGreedy++; else greedy.push(t); }
    assert.equal(greedy.length, 56, "alone, it takes all but the reserved places");
    assert.equal(refusedGreedy, 144);
    const last = a.enter("greedy");
    assert.ok(isRefusal(last) && /the last 8 of 64 places are kept for other clients/.test(last.detail), isRefusal(last) ? last.detail : "");
    // A second client (the tool calls next to the rewards): its requests are admitted, the greedy one's refused.
    const second: Ticket[] = [];
    for (let i = 0; i < 8; i++) { const t = a.enter("second"); assert.ok(!isRefusal(t), `second client's request ${i}`); second.push(t); }
    assert.equal(a.active, 64);
    // As the greedy client's requests end, the places go to the second client (under its share), not back to it.
    for (let k = 0; k < 24; k++) {
      greedy.pop()!.release();
      const g = a.enter("greedy");
      assert.ok(isRefusal(g) && /its share \(32 of 64\)/.test(g.detail), `greedy over its share is refused (${k})`);
      const t = a.enter("second");
      assert.ok(!isRefusal(t), `second client under its share is admitted (${k})`);
      second.push(t);
    }
    assert.deepEqual(a.byClient(), { greedy: 32, second: 32 });
    // Under its share again, the greedy client is admitted.
    second.pop()!.release();
    second.pop()!.release();
    greedy.pop()!.release();
    assert.ok(!isRefusal(a.enter("greedy")));
    // A client idle for CLIENT_ACTIVE_MS no longer counts: the one left may borrow all but the reserve again.
    for (const t of second) t.release();
    now += CLIENT_ACTIVE_MS + 1;
    let more = 0;
    while (!isRefusal(a.enter("greedy"))) more++;
    assert.equal(a.byClient()["greedy"], 56);
    assert.equal(more, 56 - 32);
  });

  it("a client over its share may still borrow places while more than the reserve are free (nothing idles)", () => {
    const a = new Admission(16, 2);
    assert.equal(a.reserve, 2);
    for (let i = 0; i < 3; i++) assert.ok(!isRefusal(a.enter("quiet")));
    let busy = 0;
    while (!isRefusal(a.enter("busy"))) busy++;
    assert.equal(busy, 16 - 3 - 2, "the busy client borrows beyond its share of 8 until only the reserve is free");
    assert.ok(!isRefusal(a.enter("quiet")), "and the quiet one still gets in");
  });

  it("derives its default capacity from the slots, with a floor for small servers", () => {
    assert.equal(defaultCapacity(1), MIN_CAPACITY);
    assert.equal(defaultCapacity(16), 256);
    assert.throws(() => new Admission(0, 1), RangeError);
  });

  it("takes a deadline from the client's header within the ceiling, else the route's own", () => {
    assert.equal(deadlineMs(undefined, 30_000), 30_000);
    assert.equal(deadlineMs("2.5", 30_000), 2500);
    assert.equal(deadlineMs("nonsense", 30_000), 30_000);
    assert.equal(deadlineMs("-1", 30_000), 30_000);
    assert.equal(deadlineMs("999999", 30_000, 60_000), 60_000);
  });
});

describe("output budget", () => {
  it("counts a string's bytes as JSON writes them: escapes and UTF-8", () => {
    assert.equal(jsonStringBytes("abc"), 3);
    assert.equal(jsonStringBytes("\u0001"), 6);
    assert.equal(jsonStringBytes("a\n\"\\"), 7);
    assert.equal(jsonStringBytes("中"), 3);
  });

  it("keeps output while it fits, then none; a budget of none keeps nothing but empty output", () => {
    const b = new OutputBudget(10);
    assert.equal(b.keep("12345", "678"), true);
    assert.equal(b.leftBytes, 2);
    assert.equal(b.keep("\u0001"), false, "six bytes in JSON do not fit in two");
    assert.equal(b.leftBytes, 2);
    assert.equal(b.keep("12"), true);
    assert.equal(b.keep("", undefined), true);
    const none = OutputBudget.none();
    assert.equal(none.keep("x"), false);
    assert.equal(none.keep(""), true);
  });
});
