// The two networked paths of `rlpipe cost` (bin/commands/cost.ts loads this module only for them):
//   --online: live prices from the providers' price APIs (adapters/providers/live-prices.ts) for the estimate;
//   --run NAME: estimate vs actual of a deployed run (functions/run-cost.ts), rendered in the chosen format.
import { join } from "node:path";
import { estimateCost } from "../../core/cost/estimate.js";
import { actualMarkdown, actualTable, actualTotals, withActualHtml } from "../../core/cost/render/actual.js";
import { costHtml } from "../../core/cost/render/html.js";
import { renderMarkdown } from "../../core/cost/render/markdown.js";
import { reportView } from "../../core/cost/render/view.js";
import type { CostReport, Rate } from "../../core/cost/types.js";
import type { Provider, Recipe } from "../../core/recipe/schema.js";
import { fetchLivePrices, livePriceProviders } from "../../adapters/providers/live-prices.js";
import { type RetryPolicy, formatRetryNotice } from "../../adapters/providers/provider.js";
import { checkRunName, dirRunRecords, runsDir } from "../../adapters/providers/run-records.js";
import { costOfRun } from "../../functions/run-cost.js";
import type { Io } from "../io.js";
import { loadAdapter } from "../providers.js";

/** The formats of rlpipe cost (bin/commands/cost.ts COST_FORMATS; this module is imported by it, never the other way). */
type CostFormat = "table" | "md" | "html" | "json";

function cliRetry(io: Io): RetryPolicy {
  const raw = process.env["RLPIPE_RETRY_BUDGET_MS"]?.trim();
  const budgetMs = raw !== undefined && /^\d{1,9}$/.test(raw) ? Number(raw) : 20_000;
  return { budgetMs, onRetry: (n) => io.err(formatRetryNotice(n)) };
}

/** Live rates for the estimate, and what to add to its assumptions (what was asked, reused, or not asked and why). */
export async function onlineRates(recipe: Recipe, provider: Provider | "all", io: Io): Promise<{ rates: Rate[]; assumptions: string[] }> {
  const providers = livePriceProviders(provider, recipe);
  if (providers.length === 0) {
    const why = `live prices: ${provider === "all" ? "the recipe targets neither ModelArts nor TI-ONE" : `${provider} has no price API`}; the catalog, the recipe's prices: and --rates price it`;
    io.err(`rlpipe cost: ${why}`);
    return { rates: [], assumptions: [why] };
  }
  const live = await fetchLivePrices({ env: process.env, recipe, providers, policy: cliRetry(io) });
  const assumptions = [
    ...live.fetches.map((f) => `live prices: ${f.api} for ${f.ids.join(", ")} ${f.cached ? `reused from the price cache (fetched ${f.fetchedAt}; refreshed after RLPIPE_PRICES_MAX_AGE_HOURS, default 24)` : `fetched ${f.fetchedAt}`}`),
    ...live.notes.map((n) => `live prices: ${n}`),
  ];
  for (const a of assumptions) io.err(`rlpipe cost: ${a}`);
  return { rates: [...live.rates], assumptions };
}

/** `rlpipe cost --run NAME`: the run's estimate (recorded at deploy) with its actual cost per line. */
export async function costOfRunCommand(run: string, format: CostFormat, out: string | undefined, io: Io, writeWhole: (file: string, text: string) => void): Promise<number> {
  const records = dirRunRecords(runsDir(process.cwd()));
  const record = await records.read(checkRunName(run));
  const result = await costOfRun({
    record, env: process.env, statusPolicy: cliRetry(io),
    load: (provider, recipe) => loadAdapter(provider, recipe, { log: (l) => io.err(l) }),
    estimate: (recipe, provider, user, now) => estimateCost(recipe, { provider, now, overrides: { user } }),
  });
  const report: CostReport = result.report;
  const from = result.estimateFrom === "recorded"
    ? `estimate recorded at deploy (${report.generatedAt.slice(0, 10)})`
    : `estimate made again from the recorded recipe and prices (the record, from ${record.createdAt.slice(0, 10)}, predates recorded estimates)`;
  const text = (() => {
    switch (format) {
      case "json": return `${JSON.stringify(report, null, 2)}\n`;
      case "md": return `${renderMarkdown(reportView(report))}\n${actualMarkdown(report)}`;
      case "html": return withActualHtml(costHtml(report), report);
      case "table": return `${record.name} (${record.provider}, ${record.lastStatus?.phase ?? "status not read"}): ${from}\n\n${actualTable(report)}\n`;
    }
  })();
  const target = out ?? (format === "html" ? join(".rlpipe", "cost", `${record.name}.html`) : undefined);
  if (target === undefined) {
    io.out(text.trimEnd());
    return 0;
  }
  writeWhole(target, text);
  // The same total the page shows: never ¥0 for lines without a rate.
  const t = actualTotals(report);
  io.err(`rlpipe cost: ${record.name}: ${from}; actual ${t.actual}${report.actual?.total === undefined ? "" : " of the measured lines"}${t.missing === 0 ? "" : "; the page says what to add under prices:"}`);
  io.out(target);
  return 0;
}
