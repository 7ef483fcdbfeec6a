// YAML syntax errors in the recipe author's terms: where the problem is (the parser often notices an unclosed
// bracket or quote lines later, at the next key or at the end of the file) and what to write instead.
import { type CST, type Document, type LineCounter, Parser, type YAMLError, isMap, isPair, isScalar, visit } from "yaml";
import type { LocatedIssue } from "../errors.js";

const GENERIC_HINT = "indent with spaces (keys of one mapping at the same column), put \": \" after every key, and quote values that contain \": \" or \" #\"";

/** One issue per distinct syntax problem: the first parser error (later ones usually cascade from it) and every duplicate key. */
export function yamlSyntaxIssues(text: string, doc: Document, errors: readonly YAMLError[], lines: LineCounter, file: string): LocatedIssue[] {
  const at = (offset: number) => lines.linePos(offset);
  const textLines = text.split("\n");
  const lineText = (line: number) => textLines[line - 1] ?? "";
  const issue = (offset: number, message: string, hint: string): LocatedIssue => {
    const p = at(offset);
    return { severity: "error", code: "yaml_syntax", path: [], message, hint, file, line: p.line, col: p.col };
  };

  const firstOther = errors.find((e) => e.code !== "DUPLICATE_KEY");
  const picked = [...errors.filter((e) => e.code === "DUPLICATE_KEY"), ...(firstOther === undefined ? [] : [firstOther])];
  const out = picked.map((e) => describe(e));
  return out.sort((a, b) => (a.line ?? 0) - (b.line ?? 0)).slice(0, 3);

  function describe(e: YAMLError): LocatedIssue {
    const offset = e.pos[0];
    const line = at(offset).line;
    const unclosed = unclosedOpener(text);
    switch (e.code) {
      case "DUPLICATE_KEY": {
        const dup = firstOccurrence(doc, offset);
        const key = dup?.key ?? lineText(line).trim().split(":")[0]!;
        const firstLine = dup === undefined ? undefined : at(dup.offset).line;
        return issue(offset, `key ${JSON.stringify(key)} appears twice in the same mapping${firstLine === undefined ? "" : ` (first on line ${firstLine})`}`,
          `keep one "${key}:" and delete or merge the other: a key can appear only once in a mapping`);
      }
      case "TAB_AS_INDENT":
        return issue(offset, "this line is indented with a tab", "indent with spaces only (YAML does not allow tabs), e.g. 2 per level");
      case "BAD_SCALAR_START": {
        const ch = text[offset] ?? "";
        return issue(offset, `a value cannot start with ${JSON.stringify(ch)} unless it is quoted`, `put the whole value in quotes, e.g. "${ch}…"`);
      }
      case "BLOCK_IN_FLOW":
        return issue(offset, "the entries inside { … } or [ … ] are not separated by commas", "separate them with \", \", e.g. { nodes: 1, devicesPerNode: 1 }");
      default:
        break;
    }
    // An unclosed bracket or quote makes the parser stumble somewhere after it; point at the opener.
    if (unclosed !== undefined && unclosed.offset <= offset) {
      if (unclosed.kind === "quote") {
        return issue(unclosed.offset, `the ${unclosed.char} that opens this string is never closed`, `end the value with a matching ${unclosed.char} on the same line`);
      }
      const close = unclosed.char === "{" ? "}" : "]";
      const form = unclosed.char === "{" ? "one \"key: value\" per indented line below it" : "one \"- item\" per indented line below it";
      return issue(unclosed.offset, `the "${unclosed.char}" opened here is never closed`, `close it with "${close}" at the end of the value (e.g. ${unclosed.char === "{" ? "{ a: 1, b: 2 }" : "[a, b]"}), or write ${form}`);
    }
    switch (e.code) {
      case "BLOCK_AS_IMPLICIT_KEY":
      case "MULTILINE_IMPLICIT_KEY": {
        const content = lineText(line);
        const afterKey = content.replace(/^\s*(-\s+)?[^:#]*:\s/, "");
        if (afterKey !== content && /:\s/.test(afterKey.replace(/\s#.*$/, ""))) {
          return issue(offset, "this value contains \": \", which YAML reads as another key", "quote the whole value, e.g. description: \"a: b\"");
        }
        if (!/:(\s|$)/.test(content.replace(/\s#.*$/, ""))) {
          const p = at(offset);
          return { ...issue(offset, "this line has no \":\" after its key", "write key: value (a colon, then a space)"), col: p.col };
        }
        const next = nextContentLine(textLines, line);
        if (next !== undefined && indentOf(lineText(next)) > indentOf(content)) {
          return issue(lineStart(line) + indentOf(content), `line ${next} is indented deeper than this line, so YAML reads it as part of this value`,
            `give the keys of one mapping the same indentation (line ${line} has ${indentOf(content)} spaces, line ${next} ${indentOf(lineText(next))}), or end this line with ":" to nest line ${next} under it`);
        }
        return issue(offset, "this line cannot be read as \"key: value\"", GENERIC_HINT);
      }
      case "BAD_INDENT":
      case "MISSING_CHAR": {
        const list = /sequence|indicator/i.test(e.message);
        const prev = list ? previousItemLine(textLines, line) : previousContentLine(textLines, line);
        if (prev !== undefined && indentOf(lineText(prev)) !== indentOf(lineText(line)) && /same column|without - indicator/.test(e.message)) {
          const [bad, other] = pickMisaligned(textLines, prev, line);
          return issue(lineStart(bad) + indentOf(lineText(bad)), `this line starts at column ${indentOf(lineText(bad)) + 1}, but line ${other} of the same ${list ? "list" : "mapping"} at column ${indentOf(lineText(other)) + 1}`,
            "start every key of one mapping (every \"- \" of one list) at the same column, indenting with spaces");
        }
        return issue(offset, "the indentation here does not fit the lines above", GENERIC_HINT);
      }
      default:
        return issue(offset, "this line is not valid YAML", GENERIC_HINT);
    }
  }

  function lineStart(line: number): number {
    let o = 0;
    for (let i = 0; i < line - 1; i++) o += textLines[i]!.length + 1;
    return o;
  }
}

const indentOf = (s: string) => s.length - s.trimStart().length;
const isContent = (s: string | undefined) => s !== undefined && s.trim() !== "" && !s.trim().startsWith("#");

function previousContentLine(lines: readonly string[], line: number): number | undefined {
  for (let l = line - 1; l >= 1; l--) if (isContent(lines[l - 1])) return l;
  return undefined;
}

/** The nearest line above that starts a list item ("- "). */
function previousItemLine(lines: readonly string[], line: number): number | undefined {
  for (let l = line - 1; l >= 1; l--) if (isContent(lines[l - 1]) && /^-(\s|$)/.test(lines[l - 1]!.trimStart())) return l;
  return undefined;
}

function nextContentLine(lines: readonly string[], line: number): number | undefined {
  for (let l = line + 1; l <= lines.length; l++) if (isContent(lines[l - 1])) return l;
  return undefined;
}

/**
 * Of two neighbouring lines at different columns, the one that is out of line: the earlier one when it is the
 * first entry under its parent and the lines after agree with the later one (one key indented too far), else the later.
 */
function pickMisaligned(lines: readonly string[], prev: number, line: number): [bad: number, other: number] {
  const ip = indentOf(lines[prev - 1]!);
  const il = indentOf(lines[line - 1]!);
  const beforePrev = previousContentLine(lines, prev);
  const next = nextContentLine(lines, line);
  const prevIsFirst = beforePrev === undefined || indentOf(lines[beforePrev - 1]!) < Math.min(ip, il);
  if (prevIsFirst && (next === undefined || indentOf(lines[next - 1]!) <= il)) return [prev, line];
  return [line, prev];
}

/** The first bracket or quote the text opens and never closes, from the concrete syntax tree. */
function unclosedOpener(text: string): { kind: "flow" | "quote"; char: string; offset: number } | undefined {
  let found: { kind: "flow" | "quote"; char: string; offset: number } | undefined;
  const consider = (c: { kind: "flow" | "quote"; char: string; offset: number }) => {
    if (found === undefined || c.offset < found.offset) found = c;
  };
  const walk = (t: CST.Token | null | undefined): void => {
    if (t === null || t === undefined) return;
    switch (t.type) {
      case "flow-collection": {
        const close = t.start.source === "{" ? "}" : "]";
        if (!t.end.some((e) => e.source === close)) consider({ kind: "flow", char: t.start.source, offset: t.start.offset });
        for (const it of t.items) { walk(it.key as CST.Token | null); walk(it.value); }
        return;
      }
      case "double-quoted-scalar":
      case "single-quoted-scalar": {
        const q = t.type === "double-quoted-scalar" ? "\"" : "'";
        if (t.source.length < 2 || !t.source.endsWith(q)) consider({ kind: "quote", char: q, offset: t.offset });
        return;
      }
      case "document": walk(t.value); return;
      case "block-map":
      case "block-seq":
        for (const it of t.items) { walk((it as { key?: CST.Token | null }).key); walk(it.value); }
        return;
      default: return;
    }
  };
  for (const tok of new Parser().parse(text)) walk(tok);
  return found;
}

/** The first pair of the mapping that holds the duplicate key at `offset` with the same key. */
function firstOccurrence(doc: Document, offset: number): { key: string; offset: number } | undefined {
  let result: { key: string; offset: number } | undefined;
  visit(doc, {
    Map(_, map) {
      if (!isMap(map) || result !== undefined) return;
      const dup = map.items.find((p) => isPair(p) && isScalar(p.key) && p.key.range?.[0] === offset);
      if (dup === undefined || !isScalar(dup.key)) return;
      const key = String(dup.key.value);
      const first = map.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
      if (first !== undefined && isScalar(first.key) && first.key.range !== undefined && first.key.range !== null) result = { key, offset: first.key.range[0] };
    },
  });
  return result;
}
