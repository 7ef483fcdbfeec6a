// SHA-256 of a file being downloaded, computed on a worker thread: the downloader says which byte ranges have
// landed, in file order, and the worker reads them back (from the page cache) and hashes them. The main thread,
// which parses every HTTP response, never touches those bytes a second time.
import { readSync } from "node:fs";
import { open } from "node:fs/promises";
import { Worker } from "node:worker_threads";

type Request =
  | { readonly op: "start"; readonly id: number; readonly path: string }
  | { readonly op: "range"; readonly id: number; readonly start: number; readonly end: number }
  | { readonly op: "finish"; readonly id: number };
type Reply = { readonly id: number; readonly sha256?: string; readonly error?: string };

/** One worker per owner (an S3 store), created on first use; it never keeps the process alive. */
export class FileHasher {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (sha: string) => void; reject: (e: Error) => void }>();

  /** A hash of the file at `path`: feed it ranges in file order with add(), then finish(). */
  begin(path: string): { add(start: number, end: number): void; finish(): Promise<string>; abandon(): void } {
    const w = this.ensure();
    const id = this.nextId++;
    w.postMessage({ op: "start", id, path } satisfies Request);
    let done = false;
    return {
      add: (start, end) => { if (!done) w.postMessage({ op: "range", id, start, end } satisfies Request); },
      finish: () => {
        done = true;
        return new Promise<string>((resolve, reject) => {
          // A worker that was closed or died never answers: fail now instead of waiting forever.
          if (this.worker !== w) { reject(new Error("the hashing worker was closed before the file was hashed")); return; }
          this.waiting.set(id, { resolve, reject });
          w.postMessage({ op: "finish", id } satisfies Request);
        });
      },
      abandon: () => {
        if (done) return;
        done = true;
        // The worker drops the state; its reply, if any, finds nobody waiting.
        w.postMessage({ op: "finish", id } satisfies Request);
      },
    };
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w === undefined) return;
    await w.terminate();
    // Hashes still waiting would wait forever (the exit handler below may have run before they asked).
    for (const [, waiter] of this.waiting) waiter.reject(new Error("the hashing worker was closed"));
    this.waiting.clear();
  }

  private ensure(): Worker {
    if (this.worker !== undefined) return this.worker;
    const w = new Worker(new URL(import.meta.url), { workerData: { fileHasher: true } });
    w.unref();
    w.on("message", (m: Reply) => {
      const waiter = this.waiting.get(m.id);
      if (waiter === undefined) return;
      this.waiting.delete(m.id);
      if (m.error !== undefined) waiter.reject(new Error(m.error));
      else waiter.resolve(m.sha256!);
    });
    const failAll = (e: Error) => {
      for (const [, w8] of this.waiting) w8.reject(e);
      this.waiting.clear();
      this.worker = undefined;
    };
    w.on("error", failAll);
    w.on("exit", (code) => { if (this.worker === w) this.worker = undefined; if (this.waiting.size > 0) failAll(new Error(`the hashing worker exited (code ${code})`)); });
    this.worker = w;
    return w;
  }
}

// ---- the worker side (this same module, loaded with workerData.fileHasher)
async function serve(): Promise<void> {
  const { parentPort, workerData } = await import("node:worker_threads");
  if (parentPort === null || (workerData as { fileHasher?: boolean } | undefined)?.fileHasher !== true) return;
  const { createHash } = await import("node:crypto");
  const jobs = new Map<number, { fd: number; close: () => Promise<void>; sha: ReturnType<typeof createHash>; error?: string }>();
  const buf = Buffer.allocUnsafe(4 * 1024 * 1024);
  // Messages are handled strictly in arrival order (one chain), so ranges are hashed in the order they were sent.
  let chain: Promise<void> = Promise.resolve();
  parentPort.on("message", (m: Request) => {
    chain = chain.then(async () => {
      if (m.op === "start") {
        try {
          const fh = await open(m.path, "r");
          jobs.set(m.id, { fd: fh.fd, close: () => fh.close(), sha: createHash("sha256") });
        } catch (e) {
          jobs.set(m.id, { fd: -1, close: async () => undefined, sha: createHash("sha256"), error: (e as Error).message });
        }
        return;
      }
      const job = jobs.get(m.id);
      if (job === undefined) return;
      if (m.op === "range") {
        if (job.error !== undefined) return;
        try {
          for (let pos = m.start; pos <= m.end;) {
            const n = readSync(job.fd, buf, 0, Math.min(buf.length, m.end + 1 - pos), pos);
            if (n === 0) throw new Error(`file ends at ${pos}, before ${m.end + 1}`);
            job.sha.update(buf.subarray(0, n));
            pos += n;
          }
        } catch (e) {
          job.error = (e as Error).message;
        }
        return;
      }
      jobs.delete(m.id);
      await job.close();
      parentPort.postMessage(job.error === undefined ? { id: m.id, sha256: job.sha.digest("hex") } : { id: m.id, error: job.error } satisfies Reply);
    });
  });
}
void serve();
