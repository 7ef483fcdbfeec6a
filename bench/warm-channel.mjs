#!/usr/bin/env node
// What one program can still tell the next through the kernel (issue 32, item 5): every program of a warm sandbox
// starts in namespaces and file systems of its own (harness/reset.py), but some counters are the machine's, not a
// namespace's. The one measured here: the inode numbers of pipes, sockets and other pseudo files (the kernel's
// get_next_ino), which every process on the machine advances. A sender program moves it to a value it chooses modulo M
// (by making pipes); the next program, in the same sandbox, reads a fresh pipe's inode number. The spread of what it
// reads against what was sent bounds the bits per program pair: log2(M / spread). The control is a sender that sends
// nothing (the receiver's reading then spreads over all M values: no bits).
//
//   node bench/warm-channel.mjs [--rounds 40] [--modulus 4096] [--isolation warm|per-program]
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { LocalSandbox } from "../dist/adapters/sandboxes/local/local-sandbox.js";

const { values: opt } = parseArgs({ options: { rounds: { type: "string", default: "40" }, modulus: { type: "string", default: "4096" }, isolation: { type: "string", default: "warm" } } });
const rounds = Number(opt.rounds);
const M = Number(opt.modulus);

const PIPE_INO = "import os\ndef ino():\n    r, w = os.pipe()\n    x = os.fstat(r).st_ino\n    os.close(r); os.close(w)\n    return x\n";
const sender = (v) => `${PIPE_INO}x = ino()\nwhile x % ${M} != ${v}:\n    x = ino()\nprint(x)`;
const receiver = `${PIPE_INO}print(ino())`;

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${Math.round(totalmem() / 2 ** 30)} GiB; isolation ${opt.isolation}; ${rounds} rounds, modulus ${M}`);
const sb = await LocalSandbox.create({ concurrency: 1, isolation: opt.isolation });
try {
  const run = async (code) => {
    const r = await sb.run({ language: "python", code, limits: { runTimeoutMs: 60_000 } });
    if (r.status !== "ok") throw new Error(`${r.status}: ${r.stderr}`);
    return Number(r.stdout.trim());
  };
  const measure = async (send) => {
    const offsets = [];
    for (let i = 0; i < rounds; i++) {
      const v = Math.floor(Math.random() * M);
      if (send) await run(sender(v)); else await run("print(0)");
      const y = await run(receiver);
      offsets.push((((y - v) % M) + M) % M);
    }
    // The offsets' spread on the circle of M values: the shortest arc holding all of them, and 90% of them.
    const arc = (share) => {
      const sorted = [...offsets].sort((a, b) => a - b);
      const ext = [...sorted, ...sorted.map((x) => x + M)]; // the circle unrolled once
      const keep = Math.max(1, Math.ceil(sorted.length * share));
      let best = M;
      for (let i = 0; i < sorted.length; i++) best = Math.min(best, ext[i + keep - 1] - ext[i] + 1);
      return best;
    };
    const spread = arc(1);
    const spread90 = arc(0.9);
    return { spread, spread90, bits: Math.max(0, Math.log2(M / spread)), bits90: Math.max(0, Math.log2(M / spread90)) };
  };
  const signal = await measure(true);
  const control = await measure(false);
  console.log(`sender moves the machine's pseudo-inode counter: the receiver's reading spreads over ${signal.spread} of ${M} values (90% of rounds within ${signal.spread90}) → ${signal.bits.toFixed(1)} bits per program pair (${signal.bits90.toFixed(1)} for 90% of pairs)`);
  console.log(`control (a sender that sends nothing): spread ${control.spread} of ${M} (90% within ${control.spread90}) → ${control.bits.toFixed(1)} bits (${control.bits90.toFixed(1)})`);
} finally {
  await sb.close();
}
