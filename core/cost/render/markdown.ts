// The cost report as Markdown (GitHub-flavoured tables): the same content as the terminal table, for a pull
// request, an issue or a wiki page.
import { wallTime } from "./table.js";
import { HOW_TO_SUPPLY, type ReportView } from "./view.js";

/** A table cell: pipes escaped, line breaks flattened. */
function cell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

function table(head: readonly string[], rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string[] {
  return [
    `| ${head.map(cell).join(" | ")} |`,
    `|${head.map((_, i) => (right.has(i) ? "---:" : "---")).join("|")}|`,
    ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
  ];
}

/** Backticks around text that holds Markdown syntax characters, so it shows as written. */
function literal(s: string): string {
  return /[*_`[\]<>#]/.test(s) ? `\`${s.replace(/`/g, "'")}\`` : s;
}

export function renderMarkdown(v: ReportView): string {
  const L: string[] = [];
  L.push(`## ${cell(v.title)}`, "");
  L.push(`*${v.mode}*`, "");
  L.push(`- **Target:** ${literal(v.target)}`);
  if (v.budgetText !== undefined) L.push(`- **${v.budgetText.replace(/ {2,}/g, "; ")}**`);
  if (v.budget !== undefined && v.budget.status !== "within") L.push(`- **Budget:** ${v.budget.message}`);
  L.push(`- **Run:** ${v.run}${wallTime(v)}`);
  for (const f of v.runLength?.flags ?? []) L.push(`- **Flag:** ${f}`);
  L.push(`- **Exchange rate:** ${v.fx}`);
  for (const c of v.capacity) L.push(`- **Sandbox capacity:** ${c}`);
  for (const w of v.warnings) L.push(`- **Warning:** ${w}`);
  L.push("", `### Candidates considered (${v.candidates.length})`, "");
  L.push(...table(
    ["Provider", "Region", "Flavor/instance", "Accel", "Nodes", "Unit price", "Est. hours", "Est. cost (CNY)", "Est. cost (USD)", "Chosen"],
    v.candidates.map((c) => [c.provider, c.region, literal(c.flavor), literal(c.accelerators), c.nodes, c.unitPrice, c.hours, c.costCNY, c.costUSD, c.chosen ? "✔" : c.note === "" ? "" : `(${c.note})`]),
    new Set([4, 6]),
  ));
  L.push("", `### Cost breakdown (chosen: ${literal(v.target)})`, "");
  L.push(...table(
    ["Line", "Qty (low–high)", "Unit", "Unit price", "Cost (low – exp – high)", "Basis"],
    [
      ...v.breakdown.map((b) => [`${b.prefix.replace(/ /g, "\u00a0")}${b.label}`, b.quantity, b.unit, b.unitPrice, b.rateNeeded ? "**rate needed**" : b.cost, b.basis]),
      ["**TOTAL (CNY)**", "", "", "", `**${v.total.CNY}**`, ""],
      ["**TOTAL (USD)**", "", "", "", `**${v.total.USD}**`, ""],
    ],
    new Set([1]),
  ));
  L.push("", `*${v.total.note}*`);
  if (v.notes.length > 0) L.push("", "**Notes:**", "", ...v.notes.map((n) => `- ${n}`));
  if (v.ratesNeeded.length > 0) {
    L.push("", `### Rates needed (${v.ratesNeeded.length})`, "");
    L.push(...v.ratesNeeded.map((r) => `- ${r}`));
    L.push("", `To supply a rate: ${HOW_TO_SUPPLY}.`);
  }
  L.push("", "### Assumptions", "");
  L.push(...v.assumptions.map((a) => `- ${a}`));
  L.push("", `**Excluded:** ${v.exclusions.length === 0 ? "nothing listed" : v.exclusions.join("; ")}`);
  L.push("", "### Price sources", "");
  L.push(...table(["Id", "Price", "Region", "Confidence", "Read", "Source"], v.sources.map((s) => [`\`${s.id}\``, s.price, s.region, s.confidence, s.date, s.source])));
  L.push("", `<sub>Generated ${v.generatedAt} for ${literal(v.recipe.file ?? v.recipe.name)} (sha256 ${v.recipe.hash.slice(0, 12)}).</sub>`, "");
  return L.join("\n");
}
