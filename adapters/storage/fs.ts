// file:// store (the embedded default): objects are files under a root directory. Every write goes to a
// temporary file that is fsynced and renamed into place, so a reader never sees a partial object.
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { link, mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type ByteRange, type DownloadOptions, type ObjectInfo, type ObjectStore, type PutFileOptions, type PutFileResult, StorageError, type StoredCopy, fsError } from "./object-store.js";

const TMP_MARK = ".rlpipe-tmp-";

export class FsStore implements ObjectStore {
  readonly url: string;

  constructor(private readonly root: string) {
    this.url = `file://${root}`;
  }

  private path(key: string): string {
    if (key === "" || key.startsWith("/") || key.split("/").some((p) => p === ".." || p === "")) {
      throw new StorageError("bad_key", `invalid object key ${JSON.stringify(key)}`);
    }
    return join(this.root, ...key.split("/"));
  }

  /** Write through a temp file + fsync + rename; returns size and SHA-256 of what was written. */
  private async atomicWrite(key: string, source: Readable | Uint8Array, signal?: AbortSignal, onBytes?: (bytes: number) => void): Promise<{ size: number; sha256: string }> {
    const dest = this.path(key);
    await mkdir(dirname(dest), { recursive: true });
    const tmp = `${dest}${TMP_MARK}${randomBytes(6).toString("hex")}`;
    const hash = createHash("sha256");
    let size = 0;
    try {
      if (source instanceof Uint8Array) {
        const fh = await open(tmp, "w");
        try { await fh.writeFile(source); await fh.sync(); } finally { await fh.close(); }
        hash.update(source);
        size = source.length;
      } else {
        const out = createWriteStream(tmp);
        // Attached in the same tick as the pipeline: a listener added earlier would start the flow and lose data.
        source.on("data", (c: Buffer) => { hash.update(c); size += c.length; onBytes?.(c.length); });
        await pipeline(source, out, signal === undefined ? {} : { signal });
        const fh = await open(tmp, "r+");
        try { await fh.sync(); } finally { await fh.close(); }
      }
      await rename(tmp, dest);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    return { size, sha256: hash.digest("hex") };
  }

  private async putFileImpl(key: string, path: string, opts: PutFileOptions = {}): Promise<PutFileResult> {
    const { size, sha256 } = await this.atomicWrite(key, createReadStream(path), opts.signal, opts.onBytes);
    if (opts.sha256 !== undefined && opts.sha256 !== sha256) {
      await unlink(this.path(key)).catch(() => undefined);
      throw new StorageError("checksum_mismatch", `${path} changed while it was copied (sha256 ${sha256}, expected ${opts.sha256})`);
    }
    return { size, sha256, partsUploaded: 1, partsReused: 0, bytesReused: 0 };
  }

  private async putBytesImpl(key: string, data: Uint8Array | string, opts: { sha256?: string; signal?: AbortSignal } = {}): Promise<ObjectInfo> {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    const { size, sha256 } = await this.atomicWrite(key, bytes, opts.signal);
    if (opts.sha256 !== undefined && opts.sha256 !== sha256) throw new StorageError("checksum_mismatch", `bytes for ${key} do not match their sha256`);
    return { key, size };
  }

  /** Written whole beside the key, then hard-linked into place: link() fails when the key exists (atomically). */
  private async putBytesIfAbsentImpl(key: string, data: Uint8Array | string): Promise<"created" | "exists"> {
    const dest = this.path(key);
    await mkdir(dirname(dest), { recursive: true });
    const tmp = `${dest}${TMP_MARK}${randomBytes(6).toString("hex")}`;
    try {
      const fh = await open(tmp, "wx");
      try { await fh.writeFile(typeof data === "string" ? Buffer.from(data) : data); await fh.sync(); } finally { await fh.close(); }
      await link(tmp, dest);
      return "created";
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return "exists";
      throw e;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  private async putStreamImpl(key: string, body: Readable, opts: { signal?: AbortSignal } = {}): Promise<ObjectInfo> {
    const { size } = await this.atomicWrite(key, body, opts.signal);
    return { key, size };
  }

  private async getImpl(key: string, range?: ByteRange): Promise<Buffer> {
    const p = this.path(key);
    const fh = await open(p, "r").catch((e: NodeJS.ErrnoException) => {
      throw e.code === "ENOENT" ? new StorageError("not_found", `no object ${key} in ${this.url}`) : e;
    });
    try {
      const size = (await fh.stat()).size;
      const start = range?.start ?? 0;
      const end = Math.min(range?.end ?? size - 1, size - 1);
      const len = Math.max(0, end - start + 1);
      const buf = Buffer.alloc(len);
      if (len > 0) await fh.read(buf, 0, len, start);
      return buf;
    } finally {
      await fh.close();
    }
  }

  private async downloadImpl(key: string, path: string, opts: DownloadOptions = {}): Promise<{ size: number; sha256: string }> {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}${TMP_MARK}${randomBytes(6).toString("hex")}`;
    const hash = createHash("sha256");
    let size = 0;
    try {
      const src = createReadStream(this.path(key));
      src.on("data", (c: string | Buffer) => { hash.update(c); size += c.length; opts.onBytes?.(c.length); });
      await pipeline(src, createWriteStream(tmp), opts.signal === undefined ? {} : { signal: opts.signal });
      const sha256 = hash.digest("hex");
      if (opts.sha256 !== undefined && sha256 !== opts.sha256) {
        throw new StorageError("checksum_mismatch", `${key}: sha256 ${sha256} does not match the manifest's ${opts.sha256}`, {
          exitCode: 1, hint: "the stored object is not what was committed: restore another step (rlpipe checkpoints <run> lists them)",
        });
      }
      await rename(tmp, path);
      return { size, sha256 };
    } catch (e) {
      await rm(tmp, { force: true });
      if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new StorageError("not_found", `no object ${key} in ${this.url}`);
      throw e;
    }
  }

  private async headImpl(key: string): Promise<ObjectInfo | undefined> {
    try {
      const s = await stat(this.path(key));
      return s.isFile() ? { key, size: s.size, lastModified: s.mtime } : undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
  }

  private async listImpl(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
        throw e;
      }
      for (const e of entries) {
        const full = join(dir, e.name);
        if (e.isDirectory()) await walk(full);
        else if (e.isFile() && !e.name.includes(TMP_MARK)) {
          const key = relative(this.root, full).split(sep).join("/");
          if (key.startsWith(prefix)) {
            const s = await stat(full);
            out.push({ key, size: s.size, lastModified: s.mtime });
          }
        }
      }
    };
    // Walk only the directory the prefix names (or its parent when it ends mid-name).
    const base = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
    await walk(base === "" ? this.root : join(this.root, ...base.split("/")));
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private async deleteImpl(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const p = this.path(key);
      await unlink(p).catch((e: NodeJS.ErrnoException) => { if (e.code !== "ENOENT") throw e; });
      // Remove directories the deletion emptied (up to the root).
      let dir = dirname(p);
      while (dir.startsWith(this.root) && dir !== this.root) {
        try { await rmdir(dir); } catch { break; }
        dir = dirname(dir);
      }
    }
  }

  /** The stored file holds the local one when their sizes and SHA-256s match (both are read; they are local). */
  private async storedCopyImpl(key: string, path: string, opts: { listed?: ObjectInfo } = {}): Promise<StoredCopy | undefined> {
    const size = (await stat(path)).size;
    const info = opts.listed ?? await this.head(key);
    if (info === undefined || info.size !== size) return undefined;
    const [stored, local] = await Promise.all([sha256File(this.path(key)), sha256File(path)]);
    return stored === local ? { size, sha256: local } : undefined;
  }

  // Every call maps local file-system failures (permissions, a full disk) to StorageErrors with exit codes.
  putFile(key: string, path: string, opts?: PutFileOptions): Promise<PutFileResult> { return this.guard(() => this.putFileImpl(key, path, opts)); }
  putBytes(key: string, data: Uint8Array | string, opts?: { sha256?: string; signal?: AbortSignal }): Promise<ObjectInfo> { return this.guard(() => this.putBytesImpl(key, data, opts)); }
  putStream(key: string, body: Readable, opts?: { signal?: AbortSignal }): Promise<ObjectInfo> { return this.guard(() => this.putStreamImpl(key, body, opts)); }
  readonly conditionalCreate = "atomic" as const;
  putBytesIfAbsent(key: string, data: Uint8Array | string): Promise<"created" | "exists"> { return this.guard(() => this.putBytesIfAbsentImpl(key, data)); }
  get(key: string, range?: ByteRange): Promise<Buffer> { return this.guard(() => this.getImpl(key, range)); }
  download(key: string, path: string, opts?: DownloadOptions): Promise<{ size: number; sha256: string }> { return this.guard(() => this.downloadImpl(key, path, opts)); }
  head(key: string): Promise<ObjectInfo | undefined> { return this.guard(() => this.headImpl(key)); }
  list(prefix: string): Promise<ObjectInfo[]> { return this.guard(() => this.listImpl(prefix)); }
  delete(keys: readonly string[]): Promise<void> { return this.guard(() => this.deleteImpl(keys)); }
  storedCopy(key: string, path: string, opts?: { listed?: ObjectInfo }): Promise<StoredCopy | undefined> { return this.guard(() => this.storedCopyImpl(key, path, opts)); }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try { return await fn(); } catch (e) { throw fsError(e, this.root); }
  }

  async close(): Promise<void> {}
}

async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}
