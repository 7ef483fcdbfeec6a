// The sandbox security suite (test/sandbox-security.ts) against a real `rlpipe serve --sandbox local` child
// process holding canary secrets; and, for the remote backends, that nothing of the server's environment
// travels with a job: every byte the E2B SDK sends to (loopback fakes of) the control plane and envd, and
// every byte the ScaleBox adapter sends to its server, is checked for the canaries.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { E2BSandbox } from "../adapters/sandboxes/e2b.js";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { ScaleBoxSandbox } from "../adapters/sandboxes/scalebox.js";
import { sandboxFilter } from "../adapters/sandboxes/local/seccomp.js";
import type { EvalJob } from "../core/grading/types.js";
import { startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { makeCanaries, rlpipeServe, securitySuite } from "./sandbox-security.js";
import { startServe } from "./serve-process.js";

// Both isolation paths: the default (warm) and per-program. One slot: on the warm path every program runs in the
// zygote the previous one ran in unless it was replaced, the case where anything left behind would be seen.
securitySuite("rlpipe serve --sandbox local (warm, the default)", rlpipeServe(["--sandbox", "local", "--concurrency", "1"]));
securitySuite("rlpipe serve --sandbox local --isolation per-program", rlpipeServe(["--sandbox", "local", "--isolation", "per-program", "--concurrency", "1"]));

const JOB: EvalJob = {
  id: "sum", language: "python", code: "a, b = map(int, input().split())\nprint(a + b)",
  tests: [{ kind: "stdio", stdin: "1 2", expectedStdout: "3" }, { kind: "stdio", stdin: "2 5", expectedStdout: "7" }], limits: { runTimeoutMs: 5000 },
};

/** process.env with the canaries in it for the duration of `fn` (the backends must not read it into a job). */
async function withCanaryEnv<T>(env: Readonly<Record<string, string>>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

function assertNoCanary(what: string, data: string, needles: readonly string[]): void {
  for (const n of needles) assert.ok(!data.includes(n), `${what} carries the server's secret ${n.split("-canary-")[0]}`);
}

describe("sandbox security: remote backends never forward the server's environment", () => {
  it("E2B / AGS: sandbox creation, uploaded files and the runner's command carry no variable of the server", { timeout: 120_000 }, async () => {
    const canaries = makeCanaries();
    const apiKey = canaries.env["E2B_API_KEY"]!;
    const fake = await FakeE2B.start({ apiKey });
    try {
      await withCanaryEnv(canaries.env, async () => {
        // The key comes from the environment, as under `rlpipe serve --sandbox e2b`.
        const sb = await E2BSandbox.create({ apiUrl: fake.apiUrl, sandboxUrl: fake.sandboxUrl, domain: "localhost", poolSize: 1, maxCreatesPerSecond: 100, retryBaseDelayMs: 50 });
        try {
          const [r] = await sb.evaluate([JOB]);
          assert.equal(r!.passed, 2, JSON.stringify(r));
          // The program reads its own environment and those of the runner and of the command envd started.
          const code = "import os\npid = os.getpid()\nfor _ in range(3):\n    print(open('/proc/%d/environ' % pid, 'rb').read())\n    pid = int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])";
          const run = await sb.run({ language: "python", code, limits: { runTimeoutMs: 5000 } });
          assert.equal(run.status, "ok", run.stderr);
          assert.equal(run.stdout.split("\n").filter((l) => l.startsWith("b'")).length, 3, run.stdout);
          assertNoCanary("the environment of the program, its runner or the command", run.stdout, canaries.needles);
        } finally {
          await sb.close();
        }
      });
      const s = fake.stats;
      assert.ok(s.creates.length >= 1 && s.processes.length >= 2 && s.files.length >= 2, "the fake saw the jobs");
      assertNoCanary("a sandbox creation", JSON.stringify(s.creates.map((c) => c.body)), canaries.needles);
      assertNoCanary("a process start", JSON.stringify(s.processes), canaries.needles);
      for (const f of s.files) assertNoCanary(`the uploaded file ${f.path}`, f.data.toString("latin1"), canaries.needles);
      for (const p of s.processes as { envs?: Record<string, string> }[]) assert.deepEqual(p.envs ?? {}, {}, "no environment is sent with a command");
    } finally {
      await fake.close();
    }
  });

  it("ScaleBox / SandboxFusion: no request carries a variable of the server", { timeout: 120_000 }, async () => {
    const canaries = makeCanaries();
    const local = await LocalSandbox.create({ concurrency: 1 });
    const upstream = await startHttpServer({ backend: local, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
    const seen: string[] = [];
    // A recording proxy in front of rlpipe's own SandboxFusion-compatible function.
    const proxy = createServer(async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      seen.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)} ${body.toString("latin1")}`);
      const up = await fetch(`${upstream.url}${req.url}`, { method: req.method!, headers: { "content-type": "application/json" }, ...(req.method === "POST" ? { body } : {}) });
      res.writeHead(up.status, { "content-type": "application/json" });
      res.end(await up.text());
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    try {
      await withCanaryEnv(canaries.env, async () => {
        const sb = await ScaleBoxSandbox.create({ endpoints: [`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`] });
        try {
          const [r] = await sb.evaluate([JOB]);
          assert.equal(r!.passed, 2, JSON.stringify(r));
          assert.equal((await sb.run({ language: "python", code: "print(1)", limits: { runTimeoutMs: 5000 } })).stdout, "1\n");
        } finally {
          await sb.close();
        }
      });
      assert.ok(seen.some((s) => s.startsWith("POST")), "the proxy saw the jobs");
      for (const s of seen) assertNoCanary(`the request ${s.slice(0, 40)}`, s, canaries.needles);
    } finally {
      await new Promise<void>((r) => { proxy.close(() => r()); proxy.closeAllConnections(); });
      await upstream.close();
      await local.close();
    }
  });
});

describe("sandbox security: two servers on one host", { timeout: 300_000 }, () => {
  it("run their programs as uids of their own (leased host-wide), and give them back when they stop", async () => {
    const uidsOf = async (url: string) => {
      const seen = new Set<number>();
      for (let i = 0; i < 6; i++) {
        const res = await fetch(`${url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "import os\nprint(os.getuid())" }) });
        seen.add(Number(((await res.json()) as { run_result: { stdout: string } }).run_result.stdout));
      }
      return seen;
    };
    const a = await startServe(["--sandbox", "local", "--concurrency", "2", "--quiet"]);
    try {
      const b = await startServe(["--sandbox", "local", "--concurrency", "2", "--quiet"]);
      try {
        const [ua, ub] = [await uidsOf(a.url), await uidsOf(b.url)];
        assert.ok([...ua, ...ub].every((u) => u >= 64000 && u <= 65533), `${[...ua]} ${[...ub]}`);
        assert.deepEqual([...ua].filter((u) => ub.has(u)), [], `shared uids: ${[...ua]} / ${[...ub]}`);
      } finally {
        await b.stop();
      }
    } finally {
      await a.stop();
    }
  });
});

describe("sandbox security: the suite detects what it looks for", () => {
  // Guards against a suite that cannot fail: a program given a string it can see must report it.
  let sb: LocalSandbox;
  before(async () => { sb = await LocalSandbox.create({ concurrency: 1 }); });
  after(() => sb.close());

  it("a scanner finds a needle placed in a file it can read", async () => {
    const { pythonScanner } = await import("./sandbox-security.js");
    const needle = `visible-canary-${Date.now()}`;
    const r = await sb.run({
      language: "python", limits: { runTimeoutMs: 60_000, memoryMb: 1024 },
      code: `${pythonScanner([needle])}\nimport os\nopen("/tmp/planted", "w").write(bytes.fromhex("${Buffer.from(needle).toString("hex")}").decode())\nprint(json.dumps(rlpipe_scan()))`,
    });
    assert.equal(r.status, "ok", r.stderr);
    const report = JSON.parse(r.stdout) as { hits: [number, string][] };
    assert.deepEqual(report.hits.map(([, where]) => where), ["/tmp/planted"]);
  });
});

/** Runs a classic-BPF seccomp filter over one (arch, nr, args[0]) the way the kernel does; returns its verdict. */
function runFilter(prog: Buffer, arch: number, nr: number, arg0 = 0): number {
  for (let pc = 0, a = 0; pc * 8 < prog.length;) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) { a = k === 0 ? nr : k === 4 ? arch : k === 16 ? arg0 >>> 0 : NaN; pc++; }
    else if (code === 0x15) pc += 1 + (a === k ? jt : jf);
    else if (code === 0x45) pc += 1 + ((a & k) !== 0 ? jt : jf);
    else if (code === 0x06) return k;
    else throw new Error(`unexpected BPF instruction ${code.toString(16)} at ${pc}`);
  }
  throw new Error("the filter ran off its end");
}

describe("sandbox security: the seccomp filters (the program's, which each manager installs; bubblewrap's)", () => {
  const ALLOW = 0x7fff0000;
  const EPERM = 0x00050001;
  const ENOSYS = 0x00050026;
  const CLONE_NEWUSER = 0x10000000;
  const CLONE_NEWPID = 0x20000000;
  const CLONE_NEWNET = 0x40000000;
  const CLONE_NEWTIME = 0x80;
  /** A thread's clone flags (glibc's pthread_create) and a fork's (SIGCHLD as the exit signal). */
  const CLONE_THREAD_FLAGS = 0x3d0f00;
  const FORK_FLAGS = 0x01200011;
  type Abi = { arch: number; base?: number; keyring: number[]; clone: number; unshare: number; setns: number };
  const cases: Record<string, Abi[]> = {
    x64: [
      { arch: 0xc000003e, keyring: [248, 249, 250], clone: 56, unshare: 272, setns: 308 },
      { arch: 0xc000003e, keyring: [248, 249, 250], clone: 56, unshare: 272, setns: 308, base: 0x40000000 },
      { arch: 0x40000003, keyring: [286, 287, 288], clone: 120, unshare: 310, setns: 346 },
    ],
    arm64: [
      { arch: 0xc00000b7, keyring: [217, 218, 219], clone: 220, unshare: 97, setns: 268 },
      { arch: 0x40000028, keyring: [309, 310, 311], clone: 120, unshare: 337, setns: 375 },
    ],
  };
  for (const [nodeArch, abis] of Object.entries(cases)) {
    it(`${nodeArch}: refuses the keyring calls, setns and clone3, new namespaces through unshare and clone (every ABI), and allows every other call`, () => {
      const prog = sandboxFilter(nodeArch)!;
      assert.ok(prog.length % 8 === 0 && prog.length / 8 <= 255);
      for (const { arch, keyring, clone, unshare, setns, base = 0 } of abis) {
        for (let nr = 0; nr < 512; nr++) {
          const want = keyring.includes(nr) || nr === setns ? EPERM : nr === 435 ? ENOSYS : ALLOW;
          // clone and unshare with harmless flags are allowed (threads, forks, unshare of files)
          assert.equal(runFilter(prog, arch, base + nr, nr === clone ? FORK_FLAGS : 0x400), want, `arch ${arch.toString(16)} syscall ${base + nr}`);
        }
        assert.equal(runFilter(prog, arch, base + clone, CLONE_THREAD_FLAGS), ALLOW, "a thread");
        for (const flag of [CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x00020000]) {
          assert.equal(runFilter(prog, arch, base + clone, FORK_FLAGS | flag), EPERM, `clone with ${flag.toString(16)}`);
          assert.equal(runFilter(prog, arch, base + unshare, flag), EPERM, `unshare with ${flag.toString(16)}`);
        }
        assert.equal(runFilter(prog, arch, base + unshare, CLONE_NEWTIME), EPERM, "unshare(CLONE_NEWTIME)");
        assert.equal(runFilter(prog, arch, base + clone, 0x11), ALLOW, "clone's exit signal is not CLONE_NEWTIME");
      }
      assert.equal(runFilter(prog, 0xdeadbeef, 250), ALLOW, "an ABI without syscall numbers here is left alone");
    });
  }
  it("bubblewrap's own filter refuses only the keyring (the zygote and managers make the programs' namespaces)", () => {
    for (const [nodeArch, abis] of Object.entries(cases)) {
      const prog = sandboxFilter(nodeArch, { namespaces: false })!;
      for (const { arch, keyring, clone, unshare, base = 0 } of abis) {
        for (let nr = 0; nr < 512; nr++) assert.equal(runFilter(prog, arch, base + nr, nr === clone ? FORK_FLAGS | CLONE_NEWPID : CLONE_NEWUSER), keyring.includes(nr) ? EPERM : ALLOW, `${nodeArch} syscall ${nr}`);
        assert.equal(runFilter(prog, arch, base + unshare, CLONE_NEWUSER), ALLOW);
      }
    }
  });

  it("has no filter for an architecture without a syscall table", () => {
    assert.equal(sandboxFilter("riscv64"), undefined);
  });
});
