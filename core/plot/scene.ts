// A drawing as data: the chart layout produces it once, and the SVG writer and the rasterizer both draw it, so
// an .svg and a .png of the same metrics show the same thing. Coordinates are CSS pixels, y down.

/** "#rrggbb". */
export type Color = string;

export type Point = readonly [number, number];

export interface RectShape {
  readonly kind: "rect";
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
  readonly fill?: Color;
  readonly stroke?: Color;
  readonly strokeWidth?: number;
}

/** An open polyline with round joins and caps; one point draws a dot of the line's width. */
export interface LineShape {
  readonly kind: "line";
  readonly points: readonly Point[];
  readonly color: Color;
  readonly width: number;
  /** 0..1; a faint line is drawn once as a whole, so its own crossings do not darken. */
  readonly opacity?: number;
  /** Grid and axis lines (thin, drawn under the data); series lines are "series". */
  readonly role: "grid" | "axis" | "series" | "legend";
}

export interface TextShape {
  readonly kind: "text";
  readonly x: number;
  /** The baseline. */
  readonly y: number;
  readonly text: string;
  readonly size: number;
  readonly color: Color;
  readonly anchor: "start" | "middle" | "end";
  readonly bold?: boolean;
}

/** A closed polygon filled with one colour (even-odd rule), e.g. the band between a low and a high curve. */
export interface AreaShape {
  readonly kind: "area";
  readonly points: readonly Point[];
  readonly fill: Color;
  /** 0..1 */
  readonly opacity?: number;
}

export type Shape = RectShape | LineShape | TextShape | AreaShape;

export interface Scene {
  readonly width: number;
  readonly height: number;
  readonly background: Color;
  readonly shapes: readonly Shape[];
}

export function parseColor(c: Color): [number, number, number] {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(c);
  if (m === null) throw new RangeError(`not a #rrggbb colour: ${c}`);
  return [parseInt(m[1]!, 16), parseInt(m[2]!, 16), parseInt(m[3]!, 16)];
}
