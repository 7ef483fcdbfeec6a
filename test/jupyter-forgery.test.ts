// /run_jupyter against cells that try to change what is reported for earlier cells (a policy rewarded for cheating
// writes them): through the interpreter's objects, a forged result line on stdout, a rewritten seekable stdout and a
// daemon that outlives its cell, fake records on the driver's channel, and by killing the driver. Each attack sits
// next to its control: the same cells without the attack report the expected values. Both isolation paths of the
// local sandbox run every case.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { handleRunJupyter, type RunJupyterResponseSF } from "../functions/jupyter.js";

interface Cell { stdout: string; stderr: string; display: Record<string, string>[]; error: { ename: string; evalue: string; traceback: string[] }[] }

async function runCells(backend: LocalSandbox, cells: string[], extra: Record<string, unknown> = {}): Promise<RunJupyterResponseSF & { cells: Cell[] }> {
  const res = await handleRunJupyter({ method: "POST", path: "/run_jupyter", headers: {}, query: {}, body: { cells, total_timeout: 60, ...extra } }, { backend });
  assert.equal(res.status, 200);
  return res.body as RunJupyterResponseSF & { cells: Cell[] };
}

/** The earlier cells every attack goes after: one prints, one fails. */
const EARLY = ["print('true output')", "raise ValueError('true error')"];
const LATE = "print('after')";

function assertEarlyIntact(cells: Cell[], what: string): void {
  assert.deepEqual(cells[0], { stdout: "true output\n", stderr: "", display: [], error: [] }, `${what}: cell 1`);
  assert.equal(cells[1]!.stdout, "", `${what}: cell 2`);
  assert.deepEqual(cells[1]!.display, [], `${what}: cell 2`);
  assert.equal(cells[1]!.error.length, 1, `${what}: cell 2 keeps its error`);
  assert.equal(cells[1]!.error[0]!.ename, "ValueError");
  assert.equal(cells[1]!.error[0]!.evalue, "true error");
  assert.match(cells[1]!.error[0]!.traceback.join(""), /File "<cell 2>", line 1/);
}

function assertNothingForged(body: { cells: Cell[] }, what: string): void {
  assert.doesNotMatch(JSON.stringify(body.cells), /forged/, `${what}: no forged content in the cells`);
}

/** A result line as the driver writes it, claiming that every cell printed "forged" and none failed. */
const FORGED_LINE = `
import json as _j
FORGED = b"\\0rlpipe-jupyter-cells " + _j.dumps([{"stdout": "forged", "stderr": "", "display": [{"text/plain": "'forged'"}], "error": []}] * 4).encode() + b"\\n"
`;

/** Attack 1: walk the interpreter (every object the collector tracks, every frame up the stack and its globals) and
 * rewrite every dict that looks like a cell's result; the count of rewrites goes to a file (the cell's own output may
 * be rewritten too). */
const WALK_AND_REWRITE = `
import gc, sys
seen = 0
def forge(d):
    global seen
    if isinstance(d, dict) and "stdout" in d and "error" in d:
        d["stdout"] = "forged"
        d["stderr"] = ""
        d["display"] = [{"text/plain": "'forged'"}]
        if isinstance(d["error"], list):
            del d["error"][:]
        else:
            d["error"] = []
        seen += 1
def visit(v, depth=0):
    forge(v)
    if depth < 2 and isinstance(v, (list, tuple)):
        for x in v:
            visit(x, depth + 1)
    elif depth < 2 and isinstance(v, dict):
        for x in list(v.values()):
            visit(x, depth + 1)
for o in gc.get_objects():
    visit(o)
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()) + list(f.f_globals.values()):
        visit(v)
    f = f.f_back
open("rewrites.txt", "w").write(str(seen))
`;

/** Attack 2: a forged result line straight to fd 1, then the process ends at once, "successfully". */
const FORGE_LINE_AND_EXIT = `${FORGED_LINE}
import os
os.write(1, FORGED)
os._exit(0)
`;

/** Attack 3: stdout is a seekable memfd here: empty it and put a forged line at its start, leave the offset at 0 (so a
 * naive writer's line would land over the start of it, leaving the forged one after), and fork a daemon that keeps
 * rewriting it for seconds, after the driver would have finished. */
const REWRITE_STDOUT_WITH_DAEMON = `${FORGED_LINE}
import os, time
pad = b" " * 100000 + FORGED
def rewrite():
    os.ftruncate(1, 0)
    os.pwrite(1, pad, 0)
    os.lseek(1, 0, os.SEEK_SET)
rewrite()
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open("daemon.txt", "w").write("started")
        os.write(ready_w, b"1")  # the cell goes on only once the daemon runs (no race with the driver's end)
        for _ in range(300):
            time.sleep(0.02)
            try:
                rewrite()
            except OSError:
                pass
        open("daemon.txt", "w").write("survived")
    os._exit(0)
os.wait()
os.read(ready_r, 1)
print("c")
`;

/** Attack 4: fake framed records (8-byte length + JSON) into every socket the process holds — the driver's channel —
 * claiming an earlier cell's index and then the index expected next; also tries to reopen each descriptor for reading
 * through /proc/self/fd (a pipe's write end reopens as a read end, and the reader drains what was not read yet). */
const FAKE_RECORDS = `
import json, os, stat
fake = {"stdout": "forged", "stderr": "", "display": [], "error": []}
def frame(i):
    data = json.dumps({"i": i, "r": fake}).encode()
    return len(data).to_bytes(8, "big") + data
log = os.open("attack.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # unbuffered: the kernel may be stopped at once
def report(line):
    os.write(log, (line + "\\n").encode())
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        continue
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        continue
    try:
        r = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY | os.O_NONBLOCK)
        try:
            report("drained %d bytes from fd %d" % (len(os.read(r, 1 << 20)), fd))
        except OSError:
            pass
        os.close(r)
    except OSError:
        pass
    if stat.S_ISSOCK(mode):
        report("writing to socket fd %d" % fd)
        os.write(fd, frame(0) + frame(2))
`;

for (const isolation of ["warm", "per-program"] as const) {
  describe(`/run_jupyter: a later cell cannot change what earlier cells report (${isolation} isolation)`, () => {
    let backend: LocalSandbox;
    before(async () => { backend = await LocalSandbox.create({ isolation, concurrency: 1 }); });
    after(async () => { await backend.close(); });

    it("walking gc.get_objects() and the frames to rewrite result dicts changes no earlier cell", async () => {
      const control = await runCells(backend, [...EARLY, "x = 1", LATE]);
      assert.equal(control.status, "Success", JSON.stringify(control.driver));
      assertEarlyIntact(control.cells, "control");
      assert.deepEqual(control.cells[3], { stdout: "after\n", stderr: "", display: [], error: [] });

      const attack = await runCells(backend, [...EARLY, WALK_AND_REWRITE, LATE], { fetch_files: ["rewrites.txt"] });
      assert.equal(attack.status, "Success", JSON.stringify(attack.driver));
      assert.equal(attack.cells.length, 4);
      assertEarlyIntact(attack.cells, "attack");
      assert.ok(Number(Buffer.from(attack.files["rewrites.txt"] ?? "", "base64").toString()) >= 1, "the walk found result dicts to rewrite (its own cell's at least)");
      assert.deepEqual(attack.cells[3], { stdout: "after\n", stderr: "", display: [], error: [] }, "the next cell is its own too");
    });

    it("a forged result line on fd 1 and os._exit(0): earlier cells as they were, the forging cell and the rest fail", async () => {
      const control = await runCells(backend, [...EARLY, "print('c')", LATE]);
      assert.equal(control.status, "Success");
      assertEarlyIntact(control.cells, "control");
      assert.equal(control.cells[2]!.stdout, "c\n");
      assert.equal(control.cells[3]!.stdout, "after\n");
      assert.equal(control.driver!.stdout, "", "nothing of the driver's own besides the result line");

      const attack = await runCells(backend, [...EARLY, FORGE_LINE_AND_EXIT, LATE]);
      assert.equal(attack.status, "Success", JSON.stringify(attack.driver));
      assert.equal(attack.cells.length, 4);
      assertEarlyIntact(attack.cells, "attack");
      assert.equal(attack.cells[2]!.error[0]!.ename, "DeadKernelError");
      assert.match(attack.cells[2]!.error[0]!.evalue, /kernel exited while this cell ran \(exit code 0\)/);
      assert.equal(attack.cells[3]!.error[0]!.ename, "DeadKernelError");
      assert.match(attack.cells[3]!.error[0]!.evalue, /not run: the kernel exited during cell 3/);
      assertNothingForged(attack, "attack");
      assert.match(attack.driver!.stdout ?? "", /forged/, "the forged line is only the driver's stdout, before the true result line");
    });

    it("a rewritten seekable stdout and a daemon that rewrites it after the cells ended: the response carries the true results", async () => {
      const control = await runCells(backend, [...EARLY, "print('c')", LATE]);
      assertEarlyIntact(control.cells, "control");
      assert.deepEqual(control.cells.slice(2).map((c) => c.stdout), ["c\n", "after\n"]);

      const attack = await runCells(backend, [...EARLY, REWRITE_STDOUT_WITH_DAEMON, LATE], { fetch_files: ["daemon.txt"] });
      assert.equal(attack.status, "Success", JSON.stringify(attack.driver));
      assert.equal(attack.cells.length, 4);
      assertEarlyIntact(attack.cells, "attack");
      assert.deepEqual(attack.cells[2], { stdout: "c\n", stderr: "", display: [], error: [] }, "the attacking cell itself ran to its end");
      assert.deepEqual(attack.cells[3], { stdout: "after\n", stderr: "", display: [], error: [] });
      assertNothingForged(attack, "attack");
      assert.equal(Buffer.from(attack.files["daemon.txt"] ?? "", "base64").toString(), "started", "the daemon ran, and was killed before it finished");
    });

    it("fake framed records on the driver's channel (an earlier index, then the expected one): earlier cells unchanged, tampering reported", async () => {
      const control = await runCells(backend, [...EARLY, "print('c')", LATE]);
      assertEarlyIntact(control.cells, "control");
      assert.deepEqual(control.cells.slice(2).map((c) => c.stdout), ["c\n", "after\n"]);

      const attack = await runCells(backend, [...EARLY, FAKE_RECORDS, LATE], { fetch_files: ["attack.txt"] });
      assert.equal(attack.status, "Success", JSON.stringify(attack.driver));
      assert.equal(attack.cells.length, 4);
      const report = Buffer.from(attack.files["attack.txt"] ?? "", "base64").toString();
      assert.match(report, /writing to socket fd \d+/, "the attack found the channel");
      assert.doesNotMatch(report, /drained [1-9]/, "nothing the kernel sent could be read back");
      assertEarlyIntact(attack.cells, "attack");
      assert.equal(attack.cells[2]!.error[0]!.ename, "RuntimeError");
      assert.match(attack.cells[2]!.error[0]!.evalue, /tampered with the driver's channel/);
      assert.equal(attack.cells[3]!.error[0]!.ename, "RuntimeError");
      assert.match(attack.cells[3]!.error[0]!.evalue, /not run: cell 3 tampered with the driver's channel/);
      assertNothingForged(attack, "attack");
    });

    it("a cell that kills or stops the driver makes the run fail: no cells, never forged ones", async () => {
      const control = await runCells(backend, [...EARLY, "import os\nos.getppid() > 0", LATE]);
      assert.equal(control.status, "Success");
      assertEarlyIntact(control.cells, "control");
      assert.deepEqual(control.cells[2]!.display, [{ "text/plain": "True" }]);

      for (const kill of ["os.kill(os.getppid(), 9)", "os.kill(-1, 9)"]) {
        const attack = await runCells(backend, [...EARLY, `${FORGED_LINE}\nimport os\nos.write(1, FORGED)\n${kill}\nimport time\ntime.sleep(30)`, LATE]);
        assert.equal(attack.status, "Failed", `${kill}: ${JSON.stringify(attack)}`);
        assert.deepEqual(attack.cells, [], kill);
      }
      const stopped = await runCells(backend, [...EARLY, `${FORGED_LINE}\nimport os\nos.write(1, FORGED)\nos.kill(os.getppid(), 19)\nos._exit(0)`, LATE], { total_timeout: 2 });
      assert.equal(stopped.status, "Failed", JSON.stringify(stopped));
      assert.equal(stopped.driver!.status, "TimeLimitExceeded");
      assert.deepEqual(stopped.cells, []);
    });

    it("a kernel that dies on its own: the cells that ran keep their results, the rest say the kernel exited", async () => {
      const r = await runCells(backend, [...EARLY, "import os, signal\nprint('lost')\nos.kill(os.getpid(), signal.SIGKILL)", LATE]);
      assert.equal(r.status, "Success", JSON.stringify(r.driver));
      assertEarlyIntact(r.cells, "dead kernel");
      assert.deepEqual(r.cells.slice(2).map((c) => [c.error[0]!.ename, c.error[0]!.evalue]), [
        ["DeadKernelError", "the kernel exited while this cell ran (killed by signal 9)"],
        ["DeadKernelError", "not run: the kernel exited during cell 3"],
      ]);
    });
  });
}
