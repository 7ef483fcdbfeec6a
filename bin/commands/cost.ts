// rlpipe cost <recipe> [--provider all|P] [--format table|md|html|json] [--out FILE] [--rates FILE] [--online]
// [--step-seconds S] [--steps N|STAGE=N]: the whole run's estimate (core/cost/estimate.ts), rendered. Offline by
// default: the catalog built into rlpipe, the recipe's prices: and --rates; nothing is read from the network, no credential is used.
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { estimateCost } from "../../core/cost/estimate.js";
import type { StepsOverride } from "../../core/cost/run-length.js";
import { costDiffCommand, DIFF_FORMATS, type DiffFormat, diffFiles, parseIncreaseLimit } from "./cost-diff.js";
import { CATALOG } from "../../core/cost/catalog.js";
import { unusedRates } from "../../core/cost/rates.js";
import { parseRatesFile, userRates } from "../../core/cost/rates-file.js";
import { costHtml } from "../../core/cost/render/html.js";
import { renderMarkdown } from "../../core/cost/render/markdown.js";
import { formatCostSummary } from "../../core/cost/render/summary-line.js";
import { costTable } from "../../core/cost/render/table.js";
import { reportView } from "../../core/cost/render/view.js";
import type { CostReport, Rate } from "../../core/cost/types.js";
import { ExitCode, RlpipeError } from "../../core/errors.js";
import { loadRecipeFile } from "../../core/recipe/load.js";
import { PROVIDERS, type Provider } from "../../core/recipe/schema.js";
import { didYouMean } from "../../core/recipe/suggest.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";

export const COST_FORMATS = ["table", "md", "html", "json"] as const;
export type CostFormat = (typeof COST_FORMATS)[number];
const EXTENSION: Readonly<Record<CostFormat, string>> = { table: "txt", md: "md", html: "html", json: "json" };

function oneOf<T extends string>(flag: string, v: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(v)) return v as T;
  const guess = didYouMean(v, allowed);
  throw usage(`--${flag} ${JSON.stringify(v)}: expected one of ${allowed.join(", ")}${guess === undefined ? "" : ` (${guess})`}`);
}

function positiveSeconds(v: string): number {
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n <= 0) throw usage(`--step-seconds ${JSON.stringify(v)}: expected a positive number of seconds per training step`);
  return n;
}

/** --steps N (the RL stages, else the SFT stages) and --steps STAGE=N (that stage), repeatable. */
export function parseStepsFlags(values: readonly string[] | undefined): StepsOverride | undefined {
  if (values === undefined || values.length === 0) return undefined;
  let training: number | undefined;
  const stages: Record<string, number> = {};
  for (const v of values) {
    const m = /^(?:([A-Za-z][A-Za-z0-9_-]*)=)?(\d+)$/.exec(v.trim());
    if (m === null || Number(m[2]) < 1) throw usage(`--steps ${JSON.stringify(v)}: expected a positive whole number of steps (N, for the RL stage) or STAGE=N`);
    if (m[1] === undefined) training = Number(m[2]); else stages[m[1]] = Number(m[2]);
  }
  return { ...(training === undefined ? {} : { training }), ...(Object.keys(stages).length === 0 ? {} : { stages }) };
}

/** The --rates file as user rates (file:line:col errors like a recipe's). */
export function readRates(file: string, today: string): Rate[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new RlpipeError("rates_unreadable", `${file}: cannot read the rates file (${code ?? String(e)})`, { exitCode: ExitCode.invalidInput, hint: "--rates names a YAML file of {item, value, currency, unit, source} entries" });
  }
  return userRates(parseRatesFile(text, file), file, today);
}

/** Write `content` to `file` whole or not at all (a temporary file renamed over it). */
export function writeWhole(file: string, content: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new RlpipeError("write_failed", `cannot write ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, { exitCode: ExitCode.invalidInput, hint: "choose another --out" });
  }
}

function isDirectory(path: string): boolean {
  try { return statSync(path).isDirectory(); } catch { return false; }
}

/** The report in one format (a trailing newline, so files end like text files do). */
export function renderCost(report: CostReport, format: CostFormat, budget?: { cap: number; currency: "CNY" | "USD" }): string {
  const opts = budget === undefined ? {} : { budget };
  switch (format) {
    case "table": return `${costTable(report, opts)}\n`;
    case "md": return renderMarkdown(reportView(report, opts));
    case "html": return costHtml(report, opts);
    case "json": return `${JSON.stringify(report, null, 2)}\n`;
  }
}

export async function runCost(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.cost.options });
  if (values.help) { io.out(formatHelp("cost")); return 0; }
  // Flags first: a bad flag is reported before the recipe is read.
  if (values.json && values.format !== "table" && values.format !== "json") throw usage(`--json is --format json; it cannot be combined with --format ${values.format}`);
  const format: CostFormat = values.json ? "json" : oneOf("format", values.format, COST_FORMATS);
  const provider: Provider | "all" = oneOf("provider", values.provider, ["all", ...PROVIDERS] as const);
  const stepSeconds = values["step-seconds"] === undefined ? undefined : positiveSeconds(values["step-seconds"]);
  const steps = parseStepsFlags(values.steps);
  // ---- cost diff (bin/commands/cost-diff.ts): HEAD --diff BASE, or diff BASE HEAD, both at the options above
  const diff = diffFiles(values.diff, positionals);
  if (diff === undefined && values["fail-over"] !== undefined) throw usage("--fail-over applies to a cost diff: rlpipe cost HEAD.yaml --diff BASE.yaml --fail-over 10%");
  if (diff !== undefined) {
    if (values.run !== undefined || values.online) throw usage("a cost diff prices two recipes at the same offline prices: --run and --online do not apply");
    if (format === "html") throw usage(`a cost diff is written as ${DIFF_FORMATS.join(", ")}: --format html does not apply`);
    const now = new Date();
    const user = values.rates === undefined ? [] : readRates(values.rates, now.toISOString().slice(0, 10));
    const options = { provider, now, ...(stepSeconds === undefined ? {} : { stepSeconds }), ...(steps === undefined ? {} : { steps }), ...(user.length === 0 ? {} : { overrides: { user } }) };
    return costDiffCommand({
      files: diff, format: format as DiffFormat, estimate: (recipe) => estimateCost(recipe, options),
      ...(values.out === undefined ? {} : { out: values.out }),
      ...(values["fail-over"] === undefined ? {} : { failOver: parseIncreaseLimit(values["fail-over"]) }),
    }, io, writeWhole);
  }
  if (values.run !== undefined) {
    // ---- estimate vs actual of a deployed run (LIVE: bin/commands/cost-run.ts)
    if (positionals.length !== 0) throw usage("rlpipe cost --run NAME reads the recipe from the run's record: give no recipe file");
    if (values.online || values.rates !== undefined || stepSeconds !== undefined || steps !== undefined || values.provider !== "all") {
      throw usage("rlpipe cost --run compares a run with the estimate made at its deploy, at the rates recorded then: --online, --rates, --step-seconds, --steps and --provider do not apply");
    }
    const { costOfRunCommand } = await import("./cost-run.js");
    return costOfRunCommand(values.run, format, values.out, io, writeWhole);
  }
  if (positionals.length !== 1) throw usage("rlpipe cost takes exactly one recipe file");

  const file = positionals[0]!;
  const loaded = loadRecipeFile(file);
  const now = new Date();
  const user = values.rates === undefined ? [] : readRates(values.rates, now.toISOString().slice(0, 10));
  // ---- live prices (LIVE: bin/commands/cost-run.ts): asked only with --online; their notes join the assumptions
  const live = values.online ? await (await import("./cost-run.js")).onlineRates(loaded.recipe, provider, io) : undefined;
  const estimate = estimateCost(loaded.recipe, {
    provider, now, ...(stepSeconds === undefined ? {} : { stepSeconds }), ...(steps === undefined ? {} : { steps }),
    ...(user.length === 0 && live === undefined ? {} : { overrides: { ...(user.length === 0 ? {} : { user }), ...(live === undefined ? {} : { live: live.rates }) } }),
  });
  const report: CostReport = live === undefined
    ? { ...estimate, recipe: { ...estimate.recipe, file } }
    : { ...estimate, recipe: { ...estimate.recipe, file }, mode: "online", assumptions: [...estimate.assumptions, ...live.assumptions] };
  // A rate that priced nothing is almost always a mistyped id: say so instead of silently pricing without it.
  for (const u of unusedRates(report, user, CATALOG.rows.map((r) => r.id))) {
    io.err(`rlpipe cost: warning: ${values.rates}: rate ${JSON.stringify(u.id)} priced nothing in this estimate${u.closest === undefined ? "" : `; did you mean ${JSON.stringify(u.closest)}?`}`);
  }
  const budget = loaded.recipe.cost?.budget;
  const text = renderCost(report, format, budget);

  const out = values.out ?? (format === "html" ? join(".rlpipe", "cost", `${loaded.recipe.metadata.name}.html`) : undefined);
  if (out === undefined) {
    io.out(text.trimEnd());
    return 0;
  }
  const target = isDirectory(out) ? join(out, `${loaded.recipe.metadata.name}.${EXTENSION[format]}`) : out;
  writeWhole(target, text);
  io.err(`rlpipe cost: ${report.recipe.name} ${formatCostSummary(report, { ...(budget === undefined ? {} : { budget }), command: false })}`);
  io.out(target);
  return 0;
}
