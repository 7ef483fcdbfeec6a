// A compact stroke font for the rasterizer (designed for rlpipe's plots): each glyph is a few polylines and
// elliptical arcs on a grid where the capitals run from y = 0 to the baseline at y = 10, lower case from the
// x-height at y = 3, descenders to y = 13. Drawn with round caps, so a zero-length stroke is a dot.
//
// Glyph syntax: strokes separated by "|"; a stroke is points "x,y" and arcs "Acx,cy,rx,ry,a0,a1" (angles in
// degrees, 0 = right, 90 = down, drawn from a0 to a1 either way round), each continuing the stroke.
import type { Point } from "./scene.js";

/** Advance width (grid units, before letter spacing) and strokes of each glyph. */
const GLYPHS: Record<string, readonly [number, string]> = {
  " ": [3, ""],
  // digits: all 6 wide, so columns of numbers line up
  "0": [6, "A3,5,3,5,0,360"],
  "1": [6, "1.2,2 3.4,0 3.4,10"],
  "2": [6, "A3,3,3,3,195,390 0,10 6,10"],
  "3": [6, "A3,2.5,2.7,2.5,205,450 A3,7.5,3,2.5,270,515"],
  "4": [6, "4.6,10 4.6,0 0,7 6,7"],
  "5": [6, "5.6,0 1,0 0.6,4.5 A3,6.9,3,3.1,235,520"],
  "6": [6, "A3,7,3,3,0,360 | 0,7 A5.2,6,5.2,6,180,255"],
  "7": [6, "0,0 6,0 2.2,10"],
  "8": [6, "A3,2.45,2.6,2.45,0,360 | A3,7.45,3,2.55,0,360"],
  "9": [6, "A3,3,3,3,0,360 | 6,3 A0.8,4,5.2,6,0,75"],
  // capitals
  A: [7, "0,10 3.5,0 7,10 | 1.25,6.5 5.75,6.5"],
  B: [6, "0,10 0,0 3.4,0 A3.4,2.5,2.5,2.5,270,450 0,5 | 0,5 3.6,5 A3.6,7.5,2.4,2.5,270,450 0,10"],
  C: [6.5, "A3.5,5,3.5,5,-40,-320"],
  D: [6.5, "0,0 0,10 2.5,10 A2.5,5,4,5,90,-90 0,0"],
  E: [5.5, "5.5,0 0,0 0,10 5.5,10 | 0,5 4.6,5"],
  F: [5.5, "5.5,0 0,0 0,10 | 0,5 4.6,5"],
  G: [7, "A3.5,5,3.5,5,-40,-360 4,5"],
  H: [6, "0,0 0,10 | 6,0 6,10 | 0,5 6,5"],
  I: [3, "0,0 3,0 | 1.5,0 1.5,10 | 0,10 3,10"],
  J: [5, "5,0 5,7.5 A2.5,7.5,2.5,2.5,0,165"],
  K: [6, "0,0 0,10 | 6,0 0,6.5 | 2.2,4.6 6,10"],
  L: [5, "0,0 0,10 5,10"],
  M: [7.5, "0,10 0,0 3.75,7 7.5,0 7.5,10"],
  N: [6, "0,10 0,0 6,10 6,0"],
  O: [7, "A3.5,5,3.5,5,0,360"],
  P: [6, "0,10 0,0 3.5,0 A3.5,2.75,2.5,2.75,270,450 0,5.5"],
  Q: [7, "A3.5,5,3.5,5,0,360 | 4.2,7.4 7,10.4"],
  R: [6, "0,10 0,0 3.5,0 A3.5,2.75,2.5,2.75,270,450 0,5.5 | 3,5.5 6,10"],
  S: [6, "A3,2.5,2.8,2.5,-25,-270 A3,7.5,3,2.5,270,515"],
  T: [6, "0,0 6,0 | 3,0 3,10"],
  U: [6, "0,0 0,7 A3,7,3,3,180,0 6,0"],
  V: [6.5, "0,0 3.25,10 6.5,0"],
  W: [8.5, "0,0 2.1,10 4.25,2.5 6.4,10 8.5,0"],
  X: [6, "0,0 6,10 | 6,0 0,10"],
  Y: [6, "0,0 3,5 6,0 | 3,5 3,10"],
  Z: [6, "0,0 6,0 0,10 6,10"],
  // lower case
  a: [5.3, "A2.6,6.5,2.6,3.5,0,360 | 5.3,3 5.3,10"],
  b: [5.6, "0,0 0,10 | A2.8,6.5,2.8,3.5,0,360"],
  c: [5, "A2.8,6.5,2.8,3.5,-40,-320"],
  d: [5.6, "5.6,0 5.6,10 | A2.8,6.5,2.8,3.5,0,360"],
  e: [5.6, "0,6.5 5.6,6.5 A2.8,6.5,2.8,3.5,0,-315"],
  f: [4, "1.6,10 1.6,2 A3.4,2,1.8,2,180,300 | 0,3.3 3.8,3.3"],
  g: [5.6, "A2.8,6.5,2.8,3.5,0,360 | 5.6,3 5.6,11 A2.8,11,2.8,2,0,160"],
  h: [5.4, "0,0 0,10 | A2.7,5.8,2.7,2.8,180,360 5.4,10"],
  i: [1, "0.5,3 0.5,10 | 0.5,1 0.5,1"],
  j: [3, "2.5,3 2.5,11 A1,11,1.5,2,0,150 | 2.5,1 2.5,1"],
  k: [5, "0,0 0,10 | 5,3 0,7.4 | 1.8,5.9 5,10"],
  l: [2.4, "0.7,0 0.7,8.6 A2.1,8.6,1.4,1.4,180,90"],
  m: [8, "0,3 0,10 | A2,5.4,2,2.4,180,360 4,10 | A6,5.4,2,2.4,180,360 8,10"],
  n: [5.4, "0,3 0,10 | A2.7,5.8,2.7,2.8,180,360 5.4,10"],
  o: [5.8, "A2.9,6.5,2.9,3.5,0,360"],
  p: [5.6, "0,3 0,13 | A2.8,6.5,2.8,3.5,0,360"],
  q: [5.6, "5.6,3 5.6,13 | A2.8,6.5,2.8,3.5,0,360"],
  r: [4.2, "0,3 0,10 | A3.3,6.4,3.3,3.4,180,295"],
  s: [5, "A2.5,4.75,2.3,1.75,-25,-270 A2.5,8.25,2.5,1.75,270,515"],
  t: [4, "1.4,0.8 1.4,8.6 A2.8,8.6,1.4,1.4,180,90 3.9,9.8 | 0,3.2 3.8,3.2"],
  u: [5.4, "0,3 0,7.2 A2.7,7.2,2.7,2.8,180,0 | 5.4,3 5.4,10"],
  v: [5.4, "0,3 2.7,10 5.4,3"],
  w: [7.6, "0,3 1.9,10 3.8,4.5 5.7,10 7.6,3"],
  x: [5.2, "0,3 5.2,10 | 5.2,3 0,10"],
  y: [5.4, "0,3 2.7,10 | 5.4,3 1.5,13"],
  z: [5, "0,3 5,3 0,10 5,10"],
  // punctuation
  ".": [1, "0.5,9.6 0.5,9.6"],
  ",": [1.5, "1,9.4 1,10 0,12"],
  ":": [1, "0.5,4 0.5,4 | 0.5,9.6 0.5,9.6"],
  ";": [1.5, "1,4 1,4 | 1,9.4 1,10 0,12"],
  "-": [4, "0,6 4,6"],
  "\u2212": [5, "0,5 5,5"], // minus sign
  "\u2013": [6, "0,6 6,6"], // en dash
  _: [6, "0,11.5 6,11.5"],
  "/": [4, "4,-0.5 0,10.5"],
  "\\": [4, "0,-0.5 4,10.5"],
  "(": [2.5, "A4,5,3.6,6.5,-125,-235"],
  ")": [2.5, "A-1.5,5,3.6,6.5,305,415"],
  "[": [2.5, "2.5,-0.5 0.3,-0.5 0.3,10.5 2.5,10.5"],
  "]": [2.5, "0,-0.5 2.2,-0.5 2.2,10.5 0,10.5"],
  "{": [3, "2.8,-0.5 2,-0.5 1.4,0.3 1.4,4.2 0,5 1.4,5.8 1.4,9.7 2,10.5 2.8,10.5"],
  "}": [3, "0.2,-0.5 1,-0.5 1.6,0.3 1.6,4.2 3,5 1.6,5.8 1.6,9.7 1,10.5 0.2,10.5"],
  "%": [7, "6.5,0 0.5,10 | A1.6,2,1.5,2,0,360 | A5.4,8,1.5,2,0,360"],
  "+": [5, "2.5,2.5 2.5,7.5 | 0,5 5,5"],
  "=": [5, "0,3.8 5,3.8 | 0,6.4 5,6.4"],
  "<": [5, "5,2.5 0,5.3 5,8.1"],
  ">": [5, "0,2.5 5,5.3 0,8.1"],
  "'": [1, "0.5,0 0.5,2.8"],
  '"': [2.5, "0.3,0 0.3,2.8 | 2.2,0 2.2,2.8"],
  "`": [1.5, "0,0 1.5,1.6"],
  "!": [1, "0.5,0 0.5,7 | 0.5,9.6 0.5,9.6"],
  "?": [5, "A2.5,2.6,2.5,2.6,190,400 2.5,5.6 2.5,7 | 2.5,9.6 2.5,9.6"],
  "#": [6, "2,0.5 1.2,9.5 | 4.8,0.5 4,9.5 | 0.3,3.2 6,3.2 | 0,6.8 5.7,6.8"],
  "@": [8, "A4,6,1.6,2,0,360 | 5.6,4 5.6,7.6 6.6,8.3 7.63,7.4 A4,5.5,4,4.5,25,-310"],
  "&": [6.5, "6.5,10 A2.1,2.4,1.8,2,60,-180 A2.6,7.6,2.6,2.4,210,60 6,5.6"],
  "*": [4.4, "2.2,1 2.2,6 | 0,2.3 4.4,4.7 | 0,4.7 4.4,2.3"],
  "|": [1, "0.5,-0.5 0.5,12"],
  "^": [5, "0,4 2.5,0 5,4"],
  "~": [5, "0,6 A1.25,6,1.25,0.9,180,360 A3.75,6,1.25,0.9,180,0"],
  $: [6, "A3,3.2,2.8,2,-25,-270 A3,6.8,3,2,270,515 | 3,-0.5 3,10.5"],
  "\u2192": [7, "0,5.5 7,5.5 | 4.5,3 7,5.5 4.5,8"], // →
  "\u00d7": [5, "0.5,3.5 4.5,7.5 | 4.5,3.5 0.5,7.5"], // ×
  "\u00b7": [1, "0.5,5.5 0.5,5.5"], // ·
  "\u2026": [6, "0.5,9.6 0.5,9.6 | 3,9.6 3,9.6 | 5.5,9.6 5.5,9.6"], // …
  "\u00b0": [3, "A1.5,1.5,1.5,1.5,0,360"], // °
};

/** Anything the font does not have: an outlined box, so a missing glyph is visible rather than silently dropped. */
const MISSING: readonly [number, string] = [5, "0,1 5,1 5,10 0,10 0,1"];

/** Letter spacing in grid units; a grid unit is SIZE_TO_UNIT × the font size. */
const SPACING = 1.9;
/** Capitals are 0.72 of the font size tall, like common sans-serif faces. */
const SIZE_TO_UNIT = 0.072;

interface Glyph { readonly advance: number; readonly strokes: readonly (readonly Point[])[] }

function parseGlyph([advance, src]: readonly [number, string]): Glyph {
  const strokes = src.split("|").map((s) => s.trim()).filter((s) => s !== "").map((stroke) => {
    const pts: Point[] = [];
    for (const tok of stroke.split(/\s+/)) {
      if (tok.startsWith("A")) {
        const [cx, cy, rx, ry, a0, a1] = tok.slice(1).split(",").map(Number) as [number, number, number, number, number, number];
        const n = Math.max(2, Math.ceil(Math.abs(a1 - a0) / 10));
        for (let i = 0; i <= n; i++) {
          const a = ((a0 + ((a1 - a0) * i) / n) * Math.PI) / 180;
          pts.push([cx + rx * Math.cos(a), cy + ry * Math.sin(a)]);
        }
      } else {
        const [x, y] = tok.split(",").map(Number) as [number, number];
        pts.push([x, y]);
      }
    }
    return pts;
  });
  return { advance, strokes };
}

const PARSED = new Map<string, Glyph>();
function glyph(ch: string): Glyph {
  let g = PARSED.get(ch);
  if (g === undefined) {
    g = parseGlyph(GLYPHS[ch] ?? MISSING);
    PARSED.set(ch, g);
  }
  return g;
}

/** Whether the font draws `ch` (rather than the missing-glyph box). */
export function hasGlyph(ch: string): boolean {
  return GLYPHS[ch] !== undefined;
}

/** Characters the font draws. */
export const GLYPH_CHARS: readonly string[] = Object.keys(GLYPHS).sort();

/** The stroke width text of this size is drawn with, in pixels. */
export function strokeWidthFor(size: number, bold = false): number {
  return size * (bold ? 0.125 : 0.085);
}

/** Width of `text` at `size` pixels (the same figure the layout uses for the SVG). */
export function measureText(text: string, size: number, bold = false): number {
  let units = 0;
  for (const ch of text) units += glyph(ch).advance + SPACING;
  return Math.max(0, units - SPACING) * size * SIZE_TO_UNIT + (bold ? strokeWidthFor(size, true) : 0);
}

/** The polylines drawing `text` with its baseline at y and the anchor at x, in pixels. */
export function textStrokes(text: string, x: number, y: number, size: number, anchor: "start" | "middle" | "end", bold = false): Point[][] {
  const u = size * SIZE_TO_UNIT;
  const width = measureText(text, size, bold);
  let pen = anchor === "start" ? x : anchor === "middle" ? x - width / 2 : x - width;
  const top = y - 10 * u;
  const out: Point[][] = [];
  for (const ch of text) {
    const g = glyph(ch);
    for (const s of g.strokes) out.push(s.map(([gx, gy]) => [pen + gx * u, top + gy * u] as const));
    pen += (g.advance + SPACING) * u;
  }
  return out;
}
