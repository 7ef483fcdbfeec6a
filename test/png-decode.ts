// A strict PNG reader for the plot tests (8-bit greyscale, RGB, grey+alpha or RGBA, not interlaced — what
// rsvg-convert, Chromium and rlpipe write): checks the signature and every chunk's CRC, inflates IDAT with
// node:zlib, undoes the five row filters, and returns RGB composited over white.
import { inflateSync } from "node:zlib";
import { PNG_SIGNATURE, crc32 } from "../core/plot/png.js";

export interface DecodedPng {
  readonly width: number;
  readonly height: number;
  /** RGB, 3 bytes per pixel, alpha composited over white. */
  readonly rgb: Uint8Array;
  readonly chunks: readonly string[];
}

export function decodePng(file: Uint8Array): DecodedPng {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (buf.length < 8 || !PNG_SIGNATURE.every((b, i) => buf[i] === b)) throw new Error("not a PNG: bad signature");
  let off = 8;
  let ihdr: Buffer | undefined;
  const idat: Buffer[] = [];
  const chunks: string[] = [];
  for (;;) {
    if (off + 12 > buf.length) throw new Error(`truncated PNG at byte ${off}`);
    const len = buf.readUInt32BE(off);
    const type = buf.toString("latin1", off + 4, off + 8);
    if (off + 12 + len > buf.length) throw new Error(`chunk ${type} runs past the end`);
    const data = buf.subarray(off + 8, off + 8 + len);
    const crc = buf.readUInt32BE(off + 8 + len);
    if (crc32(buf.subarray(off + 4, off + 8 + len)) !== crc) throw new Error(`chunk ${type}: CRC mismatch`);
    chunks.push(type);
    if (type === "IHDR") ihdr = Buffer.from(data);
    else if (type === "IDAT") idat.push(Buffer.from(data));
    off += 12 + len;
    if (type === "IEND") break;
  }
  if (ihdr === undefined || chunks[0] !== "IHDR") throw new Error("PNG without a leading IHDR");
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  const [depth, colorType, , , interlace] = [ihdr[8]!, ihdr[9]!, ihdr[10]!, ihdr[11]!, ihdr[12]!];
  const channels = ({ 0: 1, 2: 3, 4: 2, 6: 4 } as Record<number, number>)[colorType];
  if (depth !== 8 || channels === undefined || interlace !== 0) throw new Error(`unsupported PNG: depth ${depth}, colour type ${colorType}, interlace ${interlace}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) throw new Error(`IDAT holds ${raw.length} bytes, expected ${height * (stride + 1)}`);
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)]!;
    for (let i = 0; i < stride; i++) {
      const x = raw[y * (stride + 1) + 1 + i]!;
      const a = i >= channels ? px[y * stride + i - channels]! : 0;
      const b = y > 0 ? px[(y - 1) * stride + i]! : 0;
      const c = i >= channels && y > 0 ? px[(y - 1) * stride + i - channels]! : 0;
      let pred: number;
      switch (f) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) >> 1; break;
        case 4: { const p = a + b - c; const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c); pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c; break; }
        default: throw new Error(`row ${y}: unknown filter ${f}`);
      }
      px[y * stride + i] = (x + pred) & 0xff;
    }
  }
  const rgb = new Uint8Array(width * height * 3);
  for (let p = 0; p < width * height; p++) {
    const s = px.subarray(p * channels, (p + 1) * channels);
    const [r, g, b, al] = channels === 1 ? [s[0]!, s[0]!, s[0]!, 255] : channels === 2 ? [s[0]!, s[0]!, s[0]!, s[1]!] : channels === 3 ? [s[0]!, s[1]!, s[2]!, 255] : [s[0]!, s[1]!, s[2]!, s[3]!];
    const over = (v: number) => Math.round((v * al + 255 * (255 - al)) / 255);
    rgb[p * 3] = over(r); rgb[p * 3 + 1] = over(g); rgb[p * 3 + 2] = over(b);
  }
  return { width, height, rgb, chunks };
}
