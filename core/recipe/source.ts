// Maps recipe paths (["stages", 2, "rollout", "n"]) back to line and column in the YAML text.
import { type Document, isMap, isPair, isScalar, isSeq, type LineCounter, type Node } from "yaml";
import type { RecipePath } from "../errors.js";

export interface Position { readonly line: number; readonly col: number }

export interface SourceMap {
  /** Position of the value at `path`, or of the deepest existing ancestor. `at: "key"` points at a mapping key. */
  locate(path: RecipePath, at?: "key" | "value"): Position | undefined;
}

export function sourceMapOf(doc: Document, lines: LineCounter): SourceMap {
  const pos = (node: Node | null | undefined): Position | undefined => {
    const offset = node?.range?.[0];
    if (offset === undefined) return undefined;
    const p = lines.linePos(offset);
    return { line: p.line, col: p.col };
  };
  return {
    locate(path, at = "value") {
      let node: unknown = doc.contents;
      let best = pos(doc.contents as Node | null);
      for (let i = 0; i < path.length; i++) {
        const part = path[i];
        const last = i === path.length - 1;
        if (isMap(node)) {
          const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(part));
          if (pair === undefined) return best;
          const keyPos = pos(pair.key as Node);
          if (last && at === "key") return keyPos ?? best;
          const valuePos = pos(pair.value as Node | null);
          best = valuePos ?? keyPos ?? best;
          node = pair.value;
        } else if (isSeq(node) && typeof part === "number") {
          const item = node.items[part];
          if (item === undefined) return best;
          best = pos(item as Node) ?? best;
          node = item;
        } else {
          return best;
        }
      }
      return best;
    },
  };
}
