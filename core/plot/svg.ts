// A scene as a standalone SVG document. Text stays text (selectable, searchable) in a common sans-serif face;
// series are <path> elements, grid and axes <line>, dots <circle>. Deterministic: fixed number formatting.
import type { LineShape, Scene, Shape } from "./scene.js";

function esc(s: string): string {
  return s.replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c]!);
}

/** Two decimals at most, no trailing zeros, no -0. */
function n(v: number): string {
  const r = Number(v.toFixed(2));
  return (r === 0 ? 0 : r).toString();
}

function line(s: LineShape): string {
  const opacity = s.opacity === undefined || s.opacity >= 1 ? "" : ` stroke-opacity="${n(s.opacity)}"`;
  if (s.points.length === 1) {
    const [x, y] = s.points[0]!;
    return `<circle cx="${n(x)}" cy="${n(y)}" r="${n(s.width / 2)}" fill="${s.color}"${s.opacity === undefined || s.opacity >= 1 ? "" : ` fill-opacity="${n(s.opacity)}"`}/>`;
  }
  if (s.role !== "series") {
    if (s.points.length === 2) {
      const [[x1, y1], [x2, y2]] = s.points as [readonly [number, number], readonly [number, number]];
      return `<line x1="${n(x1)}" y1="${n(y1)}" x2="${n(x2)}" y2="${n(y2)}" stroke="${s.color}" stroke-width="${n(s.width)}"${opacity}${s.role === "legend" ? ' stroke-linecap="round"' : ""}/>`;
    }
    return `<polyline points="${s.points.map(([x, y]) => `${n(x)},${n(y)}`).join(" ")}" fill="none" stroke="${s.color}" stroke-width="${n(s.width)}"${opacity}/>`;
  }
  const d = s.points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${n(x)},${n(y)}`).join(" ");
  return `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="${n(s.width)}"${opacity} stroke-linejoin="round" stroke-linecap="round"/>`;
}

function shape(s: Shape): string {
  switch (s.kind) {
    case "rect":
      return `<rect x="${n(s.x)}" y="${n(s.y)}" width="${n(s.w)}" height="${n(s.h)}" fill="${s.fill ?? "none"}"${s.stroke === undefined ? "" : ` stroke="${s.stroke}" stroke-width="${n(s.strokeWidth ?? 1)}"`}/>`;
    case "line":
      return line(s);
    case "area":
      return `<polygon points="${s.points.map(([x, y]) => `${n(x)},${n(y)}`).join(" ")}" fill="${s.fill}" fill-rule="evenodd"${s.opacity === undefined || s.opacity >= 1 ? "" : ` fill-opacity="${n(s.opacity)}"`}/>`;
    case "text":
      return `<text x="${n(s.x)}" y="${n(s.y)}" font-size="${n(s.size)}" fill="${s.color}"${s.anchor === "start" ? "" : ` text-anchor="${s.anchor}"`}${s.bold === true ? ' font-weight="bold"' : ""}>${esc(s.text)}</text>`;
  }
}

export function sceneToSvg(scene: Scene): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${n(scene.width)}" height="${n(scene.height)}" viewBox="0 0 ${n(scene.width)} ${n(scene.height)}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="${scene.background}"/>`,
    ...scene.shapes.map(shape),
    "</svg>",
    "",
  ].join("\n");
}
