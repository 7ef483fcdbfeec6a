// The reward function's background sandbox warm-up (functions/backend-warmup.ts) must not hold back the answer it
// runs beside. A runtime client like the platforms' — the invocation arrives over a loopback HTTP connection, the
// answer is posted back on a fresh one — is played here with node:http against a loopback "runtime API"; the order
// of what happens is asserted (the answer written to the socket before the warm-up begins), never a time.
import assert from "node:assert/strict";
import { type IncomingMessage, createServer, get, request } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { BackendWarmup } from "../functions/backend-warmup.js";

const drain = (res: IncomingMessage) => new Promise<void>((resolve) => { res.resume(); res.on("end", resolve); });

describe("the background warm-up and the first answer", () => {
  it("the answer posted on a fresh connection is written before the warm-up starts; the warm-up still starts by itself", async () => {
    const events: string[] = [];
    let opened!: () => void;
    const warmupBegan = new Promise<void>((resolve) => { opened = resolve; });
    const runtimeApi = createServer((req, res) => { req.resume(); req.on("end", () => res.end(req.url === "/next" ? "{}" : "")); });
    await new Promise<void>((resolve) => runtimeApi.listen(0, "127.0.0.1", resolve));
    const { port } = runtimeApi.address() as AddressInfo;
    try {
      // The invocation arrives (an I/O callback, as on a platform).
      await new Promise<void>((resolve) => get({ host: "127.0.0.1", port, path: "/next", agent: false }, (res) => { void drain(res).then(resolve); }));
      // The cold start schedules the warm-up, then the answer is posted back.
      const warmup = new BackendWarmup("e2b", async () => {
        events.push("warm-up began");
        opened();
        return {} as SandboxBackend;
      });
      warmup.start();
      const posted = new Promise<void>((resolve) => {
        const req = request({ host: "127.0.0.1", port, method: "POST", path: "/response", agent: false }, (res) => { void drain(res).then(resolve); });
        req.on("finish", () => events.push("answer written"));
        req.end("pong");
      });
      await Promise.all([posted, warmupBegan]);
      assert.deepEqual(events, ["answer written", "warm-up began"]);
      assert.ok(await warmup.get(), "the backend is ready without any request having asked for it");
    } finally {
      await new Promise<void>((resolve) => runtimeApi.close(() => resolve()));
    }
  });
});
