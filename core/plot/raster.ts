// A small anti-aliased rasterizer for plot scenes: rectangles with fractional edges, polylines of any width with
// round joins and caps (coverage from each pixel centre's distance to the nearest segment), text through the
// stroke font. Output is 8-bit RGB, deterministic for the same scene and scale.
import { strokeWidthFor, textStrokes } from "./font.js";
import { type Color, type Point, type Scene, parseColor } from "./scene.js";

export interface Raster {
  readonly width: number;
  readonly height: number;
  /** Row-major RGB, 3 bytes per pixel. */
  readonly rgb: Uint8Array;
}

type Rgb = readonly [number, number, number];

/** Blend colour `c` over pixel i with coverage a (0..1). */
function blend(r: Raster, i: number, c: Rgb, a: number): void {
  if (a <= 0) return;
  const k = i * 3;
  if (a >= 1) {
    r.rgb[k] = c[0]; r.rgb[k + 1] = c[1]; r.rgb[k + 2] = c[2];
    return;
  }
  r.rgb[k] = Math.round(r.rgb[k]! + (c[0] - r.rgb[k]!) * a);
  r.rgb[k + 1] = Math.round(r.rgb[k + 1]! + (c[1] - r.rgb[k + 1]!) * a);
  r.rgb[k + 2] = Math.round(r.rgb[k + 2]! + (c[2] - r.rgb[k + 2]!) * a);
}

/** How much of pixel [p, p+1) lies inside [lo, hi). */
function overlap(p: number, lo: number, hi: number): number {
  return Math.max(0, Math.min(p + 1, hi) - Math.max(p, lo));
}

export function fillRect(r: Raster, x0: number, y0: number, x1: number, y1: number, color: Color, alpha = 1): void {
  const c = parseColor(color);
  const [lx, hx] = [Math.min(x0, x1), Math.max(x0, x1)];
  const [ly, hy] = [Math.min(y0, y1), Math.max(y0, y1)];
  for (let py = Math.max(0, Math.floor(ly)); py < Math.min(r.height, Math.ceil(hy)); py++) {
    const cy = overlap(py, ly, hy);
    for (let px = Math.max(0, Math.floor(lx)); px < Math.min(r.width, Math.ceil(hx)); px++) blend(r, py * r.width + px, c, cy * overlap(px, lx, hx) * alpha);
  }
}

/**
 * Stroke polylines as one shape: a pixel's coverage is the largest over all segments (not their sum), so joins,
 * crossings and the strokes of a glyph never darken where they overlap, and a faint line stays evenly faint.
 */
export function strokePolylines(r: Raster, lines: readonly (readonly Point[])[], width: number, color: Color, alpha = 1): void {
  const c = parseColor(color);
  const hw = width / 2;
  const reach = hw + 1;
  let bx0 = Infinity, by0 = Infinity, bx1 = -Infinity, by1 = -Infinity;
  for (const l of lines) for (const [x, y] of l) { bx0 = Math.min(bx0, x); by0 = Math.min(by0, y); bx1 = Math.max(bx1, x); by1 = Math.max(by1, y); }
  if (!Number.isFinite(bx0)) return;
  const ox = Math.max(0, Math.floor(bx0 - reach));
  const oy = Math.max(0, Math.floor(by0 - reach));
  const ex = Math.min(r.width, Math.ceil(bx1 + reach));
  const ey = Math.min(r.height, Math.ceil(by1 + reach));
  if (ex <= ox || ey <= oy) return;
  const mw = ex - ox;
  const mask = new Float32Array(mw * (ey - oy));
  for (const l of lines) {
    for (let s = 0; s < Math.max(1, l.length - 1); s++) {
      const [ax, ay] = l[s]!;
      const [qx, qy] = l[Math.min(s + 1, l.length - 1)]!;
      const dx = qx - ax;
      const dy = qy - ay;
      const len2 = dx * dx + dy * dy;
      const x0 = Math.max(ox, Math.floor(Math.min(ax, qx) - reach));
      const x1 = Math.min(ex, Math.ceil(Math.max(ax, qx) + reach));
      const y0 = Math.max(oy, Math.floor(Math.min(ay, qy) - reach));
      const y1 = Math.min(ey, Math.ceil(Math.max(ay, qy) + reach));
      for (let py = y0; py < y1; py++) {
        const cy = py + 0.5;
        for (let px = x0; px < x1; px++) {
          const cx = px + 0.5;
          // Distance from the pixel centre to the segment.
          let t = len2 === 0 ? 0 : ((cx - ax) * dx + (cy - ay) * dy) / len2;
          t = t < 0 ? 0 : t > 1 ? 1 : t;
          const ddx = cx - (ax + t * dx);
          const ddy = cy - (ay + t * dy);
          const cov = hw + 0.5 - Math.sqrt(ddx * ddx + ddy * ddy);
          if (cov <= 0) continue;
          const m = (py - oy) * mw + (px - ox);
          const v = cov > 1 ? 1 : cov;
          if (v > mask[m]!) mask[m] = v;
        }
      }
    }
  }
  for (let py = oy; py < ey; py++) {
    for (let px = ox; px < ex; px++) {
      const v = mask[(py - oy) * mw + (px - ox)]!;
      if (v > 0) blend(r, py * r.width + px, c, v * alpha);
    }
  }
}

/** Sub-scanlines per pixel row when filling polygons (vertical anti-aliasing). */
const AREA_SUBROWS = 4;

/**
 * Fill a closed polygon by the even-odd rule: each pixel row is sampled on AREA_SUBROWS scanlines, and each span
 * between crossings adds its exact horizontal overlap with every pixel it touches, so edges are anti-aliased.
 */
export function fillPolygon(r: Raster, points: readonly Point[], color: Color, alpha = 1): void {
  if (points.length < 3) return;
  const c = parseColor(color);
  const ys = points.map(([, y]) => y);
  const y0 = Math.max(0, Math.floor(Math.min(...ys)));
  const y1 = Math.min(r.height, Math.ceil(Math.max(...ys)));
  const cover = new Float32Array(r.width);
  for (let py = y0; py < y1; py++) {
    cover.fill(0);
    let touched = false;
    for (let k = 0; k < AREA_SUBROWS; k++) {
      const sy = py + (k + 0.5) / AREA_SUBROWS;
      const xs: number[] = [];
      for (let i = 0; i < points.length; i++) {
        const [ax, ay] = points[i]!;
        const [bx, by] = points[(i + 1) % points.length]!;
        // Half-open in y, so a vertex shared by two edges is crossed once.
        if ((ay <= sy && sy < by) || (by <= sy && sy < ay)) xs.push(ax + ((sy - ay) / (by - ay)) * (bx - ax));
      }
      xs.sort((a, b) => a - b);
      for (let i = 0; i + 1 < xs.length; i += 2) {
        const lo = Math.max(0, xs[i]!);
        const hi = Math.min(r.width, xs[i + 1]!);
        for (let px = Math.floor(lo); px < Math.ceil(hi); px++) { cover[px]! += overlap(px, lo, hi) / AREA_SUBROWS; touched = true; }
      }
    }
    if (!touched) continue;
    for (let px = 0; px < r.width; px++) if (cover[px]! > 0) blend(r, py * r.width + px, c, Math.min(1, cover[px]!) * alpha);
  }
}

/** Draw a scene at `scale` device pixels per CSS pixel. */
export function rasterize(scene: Scene, scale = 1): Raster {
  const width = Math.round(scene.width * scale);
  const height = Math.round(scene.height * scale);
  const r: Raster = { width, height, rgb: new Uint8Array(width * height * 3) };
  fillRect(r, 0, 0, width, height, scene.background);
  const sc = (pts: readonly Point[]): Point[] => pts.map(([x, y]) => [x * scale, y * scale] as const);
  for (const s of scene.shapes) {
    switch (s.kind) {
      case "rect":
        if (s.fill !== undefined) fillRect(r, s.x * scale, s.y * scale, (s.x + s.w) * scale, (s.y + s.h) * scale, s.fill);
        if (s.stroke !== undefined) {
          strokePolylines(r, [sc([[s.x, s.y], [s.x + s.w, s.y], [s.x + s.w, s.y + s.h], [s.x, s.y + s.h], [s.x, s.y]])], (s.strokeWidth ?? 1) * scale, s.stroke);
        }
        break;
      case "line":
        strokePolylines(r, [sc(s.points)], s.width * scale, s.color, s.opacity ?? 1);
        break;
      case "area":
        fillPolygon(r, sc(s.points), s.fill, s.opacity ?? 1);
        break;
      case "text":
        strokePolylines(r, textStrokes(s.text, s.x * scale, s.y * scale, s.size * scale, s.anchor, s.bold), strokeWidthFor(s.size * scale, s.bold), s.color);
        break;
    }
  }
  return r;
}
