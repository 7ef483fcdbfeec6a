// rlpipe cost HEAD.yaml --diff BASE.yaml (or rlpipe cost diff BASE.yaml HEAD.yaml): both recipes estimated with the
// same options (provider, --rates, --step-seconds, the catalog's exchange rate, the same clock), then what changed
// per line and in total (core/cost/diff.ts), as a table, a Markdown pull-request comment or JSON. Exit 0 when the
// diff was produced; with --fail-over, 1 when the expected total rose by more than the limit.
import { diffReports, exceedsIncrease, type IncreaseLimit } from "../../core/cost/diff.js";
import { diffHeadline, diffJson, diffMarkdown, diffTable } from "../../core/cost/render/diff.js";
import type { CostReport } from "../../core/cost/types.js";
import { ExitCode } from "../../core/errors.js";
import type { Recipe } from "../../core/recipe/schema.js";
import { loadRecipeFile } from "../../core/recipe/load.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";

export const DIFF_FORMATS = ["table", "md", "json"] as const;
export type DiffFormat = (typeof DIFF_FORMATS)[number];

export interface DiffFiles { readonly base: string; readonly head: string }

/**
 * The two recipes of a diff, or undefined when the command is not one: `--diff BASE` with the head as the one
 * recipe, or the subcommand form `diff BASE HEAD`.
 */
export function diffFiles(diffFlag: string | undefined, positionals: readonly string[]): DiffFiles | undefined {
  if (diffFlag !== undefined) {
    if (positionals[0] === "diff") throw usage("rlpipe cost diff BASE.yaml HEAD.yaml takes no --diff (or write rlpipe cost HEAD.yaml --diff BASE.yaml)");
    if (positionals.length !== 1) throw usage("rlpipe cost HEAD.yaml --diff BASE.yaml takes exactly one recipe file besides --diff (the head)");
    return { base: diffFlag, head: positionals[0]! };
  }
  if (positionals[0] !== "diff") return undefined;
  if (positionals.length !== 3) throw usage(`rlpipe cost diff takes two recipe files, BASE.yaml and HEAD.yaml (got ${positionals.length - 1})`);
  return { base: positionals[1]!, head: positionals[2]! };
}

/** --fail-over: "10%" of the base's total, or an amount, "5000" (CNY), "5000CNY", "700USD". */
export function parseIncreaseLimit(v: string): IncreaseLimit {
  const t = v.trim();
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(t);
  if (percent !== null) return { kind: "ratio", value: Number(percent[1]) / 100 };
  const amount = /^(\d+(?:\.\d+)?)\s*(CNY|USD)?$/i.exec(t);
  if (amount !== null) return { kind: "amount", value: Number(amount[1]), currency: (amount[2]?.toUpperCase() ?? "CNY") as "CNY" | "USD" };
  throw usage(`--fail-over ${JSON.stringify(v)}: expected a percent of the base's total (10%) or an amount (5000, 5000CNY, 700USD)`);
}

export interface DiffRun {
  readonly files: DiffFiles;
  readonly format: DiffFormat;
  readonly out?: string;
  readonly failOver?: IncreaseLimit;
  /** Prices one recipe; the caller builds it once, so both sides get the same options and the same clock. */
  readonly estimate: (recipe: Recipe) => CostReport;
}

function render(format: DiffFormat, diff: ReturnType<typeof diffReports>): string {
  switch (format) {
    case "table": return `${diffTable(diff)}\n`;
    case "md": return diffMarkdown(diff);
    case "json": return diffJson(diff);
  }
}

export function costDiffCommand(run: DiffRun, io: Io, writeWhole: (file: string, content: string) => void): number {
  // Both files are read before anything is priced: a bad path fails naming its file, before any output.
  const base = loadRecipeFile(run.files.base);
  const head = loadRecipeFile(run.files.head);
  const priced = (loaded: typeof base, file: string): CostReport => {
    const r = run.estimate(loaded.recipe);
    return { ...r, recipe: { ...r.recipe, file } };
  };
  const diff = diffReports(priced(base, run.files.base), priced(head, run.files.head));
  const text = render(run.format, diff);
  if (run.out === undefined) io.out(text.trimEnd());
  else {
    writeWhole(run.out, text);
    io.err(`rlpipe cost: ${diffHeadline(diff)}`);
    io.out(run.out);
  }
  if (run.failOver === undefined) return ExitCode.ok;
  const over = exceedsIncrease(diff, run.failOver);
  if (over === undefined) {
    io.err("rlpipe cost: warning: --fail-over not checked: the totals cannot be compared (a side with no priced line, or a base total of 0)");
    return ExitCode.ok;
  }
  if (!over) return ExitCode.ok;
  io.err(`rlpipe cost: the expected total rose by more than --fail-over: ${diffHeadline(diff)}`);
  return ExitCode.failed;
}
