// A small, pure zip writer for launch bundles (Ray working_dir packages). Deterministic: the same entries give
// the same bytes — entries sorted by their UTF-8 path, fixed timestamps (1980-01-01 00:00), unix modes in the
// external attributes (so launch.sh stays executable when Python's zipfile unpacks it), no extra fields.
// Deflate comes from node:zlib (pure computation, no I/O); its output is stable for a given zlib build.
import { deflateRawSync } from "node:zlib";
import { RlpipeError } from "../errors.js";

export interface ZipEntry {
  /** Relative path with '/' separators, e.g. "launch.sh" or "configs/tool.yaml". */
  readonly path: string;
  readonly data: Uint8Array | string;
  /** Unix permission bits (default 0o644). */
  readonly mode?: number;
}

export interface ZipOptions {
  /** "deflate" (default) stores an entry deflated only when that makes it smaller; "store" never compresses. */
  readonly method?: "store" | "deflate";
}

/** A zip that cannot be written (bad path, duplicate, too large for a non-zip64 archive). */
export class ZipError extends RlpipeError {
  constructor(code: string, message: string) {
    super(code, message, { exitCode: 1 });
    this.name = "ZipError";
  }
}

const MAX_ENTRIES = 0xffff;
const MAX_SIZE = 0xfffffffe;
const DOS_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1;
const UTF8_NAMES = 0x0800;
const UNIX_HOST = 3;
const ZIP_VERSION = 20;
const S_IFREG = 0o100000;

let crcTable: Uint32Array | undefined;

export function crc32(data: Uint8Array): number {
  if (crcTable === undefined) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = crcTable[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function checkPath(path: string): void {
  const bad = (why: string) => new ZipError("zip_bad_path", `cannot put ${JSON.stringify(path)} into a zip: ${why}`);
  if (path === "") throw bad("empty path");
  if (path.startsWith("/")) throw bad("absolute path");
  if (path.includes("\\")) throw bad("backslash in path (use '/')");
  if (path.includes("\0")) throw bad("NUL in path");
  for (const seg of path.split("/")) {
    if (seg === "" || seg === "." || seg === "..") throw bad("empty, '.' or '..' path segment");
  }
}

interface Prepared {
  readonly name: Buffer;
  readonly method: 0 | 8;
  readonly crc: number;
  readonly size: number;
  readonly payload: Uint8Array;
  readonly mode: number;
}

/** The zip archive of `entries` (order of the input does not matter). */
export function zipFiles(entries: readonly ZipEntry[], opts: ZipOptions = {}): Uint8Array {
  if (entries.length > MAX_ENTRIES) throw new ZipError("zip_too_many_entries", `a zip holds at most ${MAX_ENTRIES} entries, got ${entries.length}`);
  const prepared: Prepared[] = entries.map((e) => {
    checkPath(e.path);
    const mode = e.mode ?? 0o644;
    if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw new ZipError("zip_bad_mode", `bad unix mode ${String(e.mode)} for ${e.path}`);
    const raw = typeof e.data === "string" ? Buffer.from(e.data, "utf8") : e.data;
    if (raw.length > MAX_SIZE) throw new ZipError("zip_entry_too_large", `${e.path} is ${raw.length} bytes; zip64 is not supported`);
    const deflated = opts.method === "store" ? undefined : deflateRawSync(raw, { level: 9 });
    const useDeflate = deflated !== undefined && deflated.length < raw.length;
    return { name: Buffer.from(e.path, "utf8"), method: useDeflate ? 8 : 0, crc: crc32(raw), size: raw.length, payload: useDeflate ? deflated : raw, mode };
  });
  prepared.sort((a, b) => Buffer.compare(a.name, b.name));
  for (let i = 1; i < prepared.length; i++) {
    if (Buffer.compare(prepared[i - 1]!.name, prepared[i]!.name) === 0) throw new ZipError("zip_duplicate_path", `${prepared[i]!.name.toString("utf8")} appears twice`);
  }

  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const p of prepared) {
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(ZIP_VERSION, 4);
    writeEntryFields(local, 6, p);
    local.writeUInt16LE(0, 28);
    locals.push(local, p.name, Buffer.from(p.payload.buffer, p.payload.byteOffset, p.payload.byteLength));

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((UNIX_HOST << 8) | ZIP_VERSION, 4);
    central.writeUInt16LE(ZIP_VERSION, 6);
    writeEntryFields(central, 8, p);
    // extra length, comment length, disk number start, internal attributes: all zero
    central.writeUInt32LE(((S_IFREG | p.mode) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, p.name);

    offset += 30 + p.name.length + p.payload.length;
    if (offset > MAX_SIZE) throw new ZipError("zip_too_large", "the archive exceeds 4 GiB; zip64 is not supported");
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(prepared.length, 8);
  end.writeUInt16LE(prepared.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, ...centrals, end]));
}

/**
 * The fields local and central headers share, in the same order (flags, method, time, date, CRC-32, sizes, name
 * length): 22 bytes from `at`.
 */
function writeEntryFields(b: Buffer, at: number, p: { readonly method: number; readonly crc: number; readonly payload: Uint8Array; readonly size: number; readonly name: Buffer }): void {
  b.writeUInt16LE(UTF8_NAMES, at);
  b.writeUInt16LE(p.method, at + 2);
  b.writeUInt16LE(0, at + 4);
  b.writeUInt16LE(DOS_DATE_1980_01_01, at + 6);
  b.writeUInt32LE(p.crc, at + 8);
  b.writeUInt32LE(p.payload.length, at + 12);
  b.writeUInt32LE(p.size, at + 16);
  b.writeUInt16LE(p.name.length, at + 20);
}
