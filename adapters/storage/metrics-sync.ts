// Metrics to object storage: the new complete lines of verl's JSON-lines log are uploaded as chunk objects
// named by byte range (S3 has no append), so a re-upload after a crash is idempotent. verl rewrites the file
// on restart; the SHA-256 of its first line names the generation, so an older run's chunks are not confused
// with the new file's.
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { GENERATION_HEX_CHARS, layout, parseChunkKey } from "../../core/checkpoints.js";
import type { MetricsChunk } from "../../core/metrics.js";
import type { ObjectStore } from "./object-store.js";

const MAX_CHUNK_BYTES = 4 * 1024 * 1024;

export class MetricsSync {
  /** Uploaded end offset per generation (known after the first listing). */
  private readonly offsets = new Map<string, number>();

  constructor(private readonly store: ObjectStore, private readonly run: string) {}

  /** Upload complete lines not yet uploaded; returns the number of bytes uploaded. */
  async syncFile(path: string, signal?: AbortSignal): Promise<number> {
    let fh;
    try {
      fh = await open(path, "r");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return 0;
      throw e;
    }
    try {
      const size = (await fh.stat()).size;
      if (size === 0) return 0;
      const head = Buffer.alloc(Math.min(size, 64 * 1024));
      await fh.read(head, 0, head.length, 0);
      const nl = head.indexOf(0x0a);
      if (nl < 0) return 0; // not even one complete line yet
      const generation = createHash("sha256").update(head.subarray(0, nl)).digest("hex").slice(0, GENERATION_HEX_CHARS);
      let offset = this.offsets.get(generation);
      if (offset === undefined) {
        const chunks = await this.store.list(`${layout.metricsPrefix(this.run)}${generation}/`, signal);
        offset = Math.max(0, ...chunks.map((c) => parseChunkKey(c.key)?.end ?? 0));
      }
      if (offset >= size) { this.offsets.set(generation, offset); return 0; }
      const rest = Buffer.alloc(size - offset);
      await fh.read(rest, 0, rest.length, offset);
      const last = rest.lastIndexOf(0x0a);
      if (last < 0) { this.offsets.set(generation, offset); return 0; }
      let uploaded = 0;
      let from = 0;
      while (from <= last) {
        // Cut at a line end so every chunk holds whole lines.
        let to = Math.min(last + 1, from + MAX_CHUNK_BYTES);
        if (to < last + 1) {
          const cut = rest.lastIndexOf(0x0a, to - 1);
          to = cut >= from ? cut + 1 : to;
        }
        const bytes = rest.subarray(from, to);
        await this.store.putBytes(layout.metricsChunk(this.run, generation, offset + from, offset + to), bytes, { contentType: "application/x-ndjson", ...(signal === undefined ? {} : { signal }) });
        uploaded += bytes.length;
        from = to;
      }
      this.offsets.set(generation, offset + last + 1);
      return uploaded;
    } finally {
      await fh.close();
    }
  }
}

/** All metric chunks of a run, with each generation ordered by when its first chunk was written. */
export async function readMetricChunks(store: ObjectStore, run: string, signal?: AbortSignal): Promise<MetricsChunk[]> {
  const objects = await store.list(layout.metricsPrefix(run), signal);
  const parsed = objects.map((o) => ({ o, k: parseChunkKey(o.key) })).filter((x): x is { o: typeof x.o; k: NonNullable<typeof x.k> } => x.k !== undefined);
  const firstWrite = new Map<string, number>();
  for (const { o, k } of parsed) {
    const t = o.lastModified?.getTime() ?? 0;
    if (k.start === 0) firstWrite.set(k.generation, Math.min(firstWrite.get(k.generation) ?? Infinity, t));
  }
  return Promise.all(parsed.map(async ({ o, k }) => ({
    generation: k.generation, start: k.start, end: k.end,
    text: (await store.get(o.key, undefined, signal)).toString("utf8"),
    generationOrder: firstWrite.get(k.generation) ?? o.lastModified?.getTime() ?? 0,
  })));
}
