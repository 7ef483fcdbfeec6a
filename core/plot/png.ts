// PNG encoding of an RGB raster (8-bit truecolour, no interlace): per-row adaptive filtering, zlib deflate from
// node:zlib, and a table-driven CRC-32 of our own (zlib.crc32 is missing from older Node 20 releases).
import { deflateSync } from "node:zlib";
import type { Raster } from "./raster.js";

const CRC_TABLE: Uint32Array = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (ISO 3309 / ITU-T V.42, the one PNG and zlib use) of `bytes`, continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = (crc ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const PNG_SIGNATURE: readonly number[] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "latin1");
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/**
 * The filtered scanlines: each row with the filter (None, Sub, Up, Average, Paeth) whose output has the smallest
 * sum of absolute values — the usual heuristic; it makes a plot's flat areas and straight lines mostly zeros.
 */
function filterRows(r: Raster): Uint8Array {
  const bpp = 3;
  const stride = r.width * bpp;
  const out = new Uint8Array(r.height * (stride + 1));
  const candidate = new Uint8Array(stride);
  const best = new Uint8Array(stride);
  const zero = new Uint8Array(stride);
  for (let y = 0; y < r.height; y++) {
    const row = r.rgb.subarray(y * stride, (y + 1) * stride);
    const up = y === 0 ? zero : r.rgb.subarray((y - 1) * stride, y * stride);
    let bestType = 0;
    let bestScore = Infinity;
    for (let type = 0; type <= 4; type++) {
      let score = 0;
      for (let i = 0; i < stride; i++) {
        const a = i >= bpp ? row[i - bpp]! : 0;
        const b = up[i]!;
        const c = i >= bpp ? up[i - bpp]! : 0;
        const pred = type === 0 ? 0 : type === 1 ? a : type === 2 ? b : type === 3 ? (a + b) >> 1 : paeth(a, b, c);
        const v = (row[i]! - pred) & 0xff;
        candidate[i] = v;
        score += v < 128 ? v : 256 - v;
      }
      if (score < bestScore) { bestScore = score; bestType = type; best.set(candidate); }
    }
    out[y * (stride + 1)] = bestType;
    out.set(best, y * (stride + 1) + 1);
  }
  return out;
}

/** A complete PNG file of the raster. */
export function encodePng(r: Raster): Uint8Array {
  if (r.width < 1 || r.height < 1 || r.rgb.length !== r.width * r.height * 3) throw new RangeError(`bad raster ${r.width}×${r.height} (${r.rgb.length} bytes)`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(r.width, 0);
  ihdr.writeUInt32BE(r.height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method: adaptive
  ihdr[12] = 0; // no interlace
  const idat = deflateSync(filterRows(r), { level: 6 });
  return new Uint8Array(Buffer.concat([Buffer.from(PNG_SIGNATURE), chunk("IHDR", ihdr), chunk("IDAT", idat), chunk("IEND", new Uint8Array(0))]));
}
