// Estimate vs actual after a run (`rlpipe cost --run <name>`): each line of the estimate made at deploy time gets
// what the run really used, priced with the rate that line was estimated with (the prices recorded at deploy), so the
// difference is usage, not a price change. What is measured, per line component:
//   compute  — the provider's billable time of the job (ModelArts status.duration, TI-ONE RuntimeInSeconds, Ray
//              start/end, the local runner's wall time). One deploy is one job on the chosen candidate's nodes, so each
//              compute line scales with it: actual = estimated quantity × billable hours / the candidate's expected
//              hours (a line's node or device count is what its quantity per hour says).
//   sandbox  — the sandbox seconds rlpipe's function counted for the run (reward batches and tool calls that named it),
//              × the sandbox size (vCPUs, GiB) for vcpu-/gib- units, the programs run for per-request units.
//   functions — the requests the function counted, and GB-seconds (its busy time × memory).
//   storage, egress — not measured by rlpipe (billed by the store after the run): the line says so.
// Pure: the caller measures (adapters, the usage store) and passes the figures in.
import type { CostLine, CostReport, Currency, Rate } from "./types.js";
import type { RunUsage } from "../run-usage.js";
import { FUNCTION_MEMORY_MB } from "./quantities.js";
import { convertPrice, isPriceUnit } from "./units.js";

export interface ComputeMeasure {
  /** Billable hours of one node. */
  readonly hours: number;
  /** The job is still running: hours so far. */
  readonly running: boolean;
  readonly source: string;
}

export interface RunMeasurements {
  readonly run: string;
  readonly compute?: ComputeMeasure;
  /** Why compute was not measured (the provider could not be asked, the job never started). */
  readonly computeMissing?: string;
  readonly usage?: RunUsage;
  /** Where the usage was read ("file:///…/usage/, 2 instances"), or why there is none. */
  readonly usageSource: string;
  /** Sandbox size the run's programs got (for vcpu-/gib- units). */
  readonly sandbox?: { readonly vcpus: number; readonly memoryGiB: number; readonly source: string };
  /** Memory of the function, for GB-seconds when the usage records do not state it. */
  readonly functionMemoryMb?: number;
}

export type ActualLine = NonNullable<CostReport["actual"]>["lines"][number];

const round = (v: number, digits = 6) => Math.round(v * 10 ** digits) / 10 ** digits;

/** The quantity `baseQty` (in `base` units) expressed in `unit`, or undefined when they measure different things. */
function inUnit(baseQty: number, base: string, unit: string): number | undefined {
  const factor = convertPrice(1, normalUnit(unit), base);
  return factor === undefined ? undefined : baseQty * factor;
}

/** What one unit of `line.unit` costs at the line's rate (rate units may differ: per 1m-requests vs per request). */
function unitPrice(line: CostLine): { value: number; currency: Currency; rate: Rate } | undefined {
  const rate = line.rate;
  if (rate === undefined || line.rateNeeded !== undefined) return undefined;
  const v = normalUnit(rate.unit) === normalUnit(line.unit) ? rate.value : convertPrice(rate.value, normalUnit(rate.unit), normalUnit(line.unit));
  return v === undefined ? undefined : { value: v, currency: rate.currency, rate };
}

/** A unit as the catalog spells it ("1M requests" → 1m-requests, "GiB-second" → gib-second). */
export function normalUnit(unit: string): string {
  return unit.trim().toLowerCase().replace(/\s+/g, "-");
}

function unitKind(raw: string): string | undefined {
  const unit = normalUnit(raw);
  // The estimate counts colocated sandboxes in sandbox-seconds (no price of their own: part of the compute).
  if (unit === "sandbox-second" || unit === "sandbox-hour") return "sandbox";
  if (!isPriceUnit(unit)) return undefined;
  if (unit.startsWith("node-")) return "node";
  if (unit.startsWith("device-")) return "device";
  if (unit.startsWith("vcpu-")) return "vcpu";
  if (unit.startsWith("gib-")) return "gib";
  if (unit === "gb-second") return "gb-second";
  if (unit === "request" || unit.endsWith("-requests")) return "request";
  return unit;
}

interface Measured { readonly quantity: number; readonly source: string }

function measureLine(line: CostLine, m: RunMeasurements, estimatedHours: number | undefined): Measured | { readonly missing: string } {
  const kind = unitKind(line.unit);
  if (line.component === "compute") {
    if (m.compute === undefined) return { missing: m.computeMissing ?? "billable time not known" };
    if (kind !== "node" && kind !== "device") return { missing: `compute in ${line.unit} is not measured` };
    if (estimatedHours === undefined || estimatedHours <= 0) return { missing: "the estimate states no compute hours to scale by" };
    const q = line.quantity.expected * (m.compute.hours / estimatedHours);
    const share = round(line.quantity.expected / estimatedHours, 4);
    const what = normalUnit(line.unit).replace(/-(hour|second)$/, "");
    return { quantity: q, source: `${m.compute.source}: ${round(m.compute.hours, 4)} h billable${m.compute.running ? " so far" : ""} × ${share} ${share === 1 ? what : `${what}s`} (this line's share of the estimated hours)` };
  }
  if (line.component === "sandbox" || line.component === "functions") {
    const u = m.usage;
    if (u === undefined) return { missing: m.usageSource };
    const c = u.counters;
    if (line.component === "sandbox") {
      if (kind === "sandbox") {
        return { quantity: normalUnit(line.unit) === "sandbox-hour" ? c.sandboxSeconds / 3600 : c.sandboxSeconds, source: `${m.usageSource}: ${c.sandboxSeconds} sandbox-s of ${c.evaluated} programs` };
      }
      if (kind === "vcpu" || kind === "gib") {
        if (m.sandbox === undefined) return { missing: "sandbox size not known" };
        const per = kind === "vcpu" ? m.sandbox.vcpus : m.sandbox.memoryGiB;
        const q = inUnit(c.sandboxSeconds * per, kind === "vcpu" ? "vcpu-second" : "gib-second", line.unit);
        if (q === undefined) return { missing: `sandbox in ${line.unit} is not measured` };
        return { quantity: q, source: `${m.usageSource}: ${c.sandboxSeconds} sandbox-s × ${per} ${kind === "vcpu" ? "vCPU" : "GiB"} (${m.sandbox.source})` };
      }
      if (kind === "request") {
        const q = inUnit(c.evaluated, "request", line.unit);
        return q === undefined ? { missing: `sandbox in ${line.unit} is not measured` } : { quantity: q, source: `${m.usageSource}: ${c.evaluated} programs run` };
      }
      return { missing: `sandbox in ${line.unit} is not measured` };
    }
    if (kind === "request") {
      const q = inUnit(c.requests, "request", line.unit);
      return q === undefined ? { missing: `functions in ${line.unit} is not measured` } : { quantity: q, source: `${m.usageSource}: ${c.requests} requests` };
    }
    if (kind === "gb-second") {
      if (u.gbSeconds !== undefined) return { quantity: u.gbSeconds, source: `${m.usageSource}: ${c.functionSeconds} s busy, memory as each instance stated` };
      const memory = m.functionMemoryMb ?? FUNCTION_MEMORY_MB[line.provider as keyof typeof FUNCTION_MEMORY_MB];
      if (memory === undefined) return { missing: "function memory not known" };
      return { quantity: (c.functionSeconds * memory) / 1024, source: `${m.usageSource}: ${c.functionSeconds} s busy × ${memory} MB${m.functionMemoryMb === undefined ? ` (${line.provider}'s default)` : ""}` };
    }
    return { missing: `functions in ${line.unit} is not measured` };
  }
  return { missing: `${line.component} is not measured by rlpipe (billed by the provider after the run)` };
}

/** Every line, depth first, parents after their children (so a parent can sum them). */
function walk(lines: readonly CostLine[], visit: (l: CostLine) => void): void {
  for (const l of lines) {
    if (l.children !== undefined) walk(l.children, visit);
    visit(l);
  }
}

/** The report with `actual` filled: one entry per line (parents sum their children when all were measured). */
export function withActual(report: CostReport, m: RunMeasurements): CostReport {
  const chosen = report.candidates.find((c) => c.chosen);
  const estimatedHours = chosen?.hours.expected;
  const out = new Map<string, ActualLine>();
  walk(report.lines, (line) => {
    if (line.children !== undefined && line.children.length > 0) {
      // A parent: its own quantity where its unit is measured (or its children's sum in the same unit), its cost the
      // sum of its children's (their rates may differ).
      const kids = line.children.map((k) => out.get(k.id)!);
      const own = measureLine(line, m, estimatedHours);
      const sameUnit = line.children.every((k) => normalUnit(k.unit) === normalUnit(line.unit));
      const quantity = "quantity" in own ? own.quantity : sameUnit && kids.every((k) => k.quantity !== undefined) ? kids.reduce((t, k) => t + k.quantity!, 0) : undefined;
      const currencies = new Set(kids.map((k) => k.currency));
      const summed = kids.every((k) => k.cost !== undefined) && currencies.size === 1;
      out.set(line.id, {
        id: line.id, ...(quantity === undefined ? {} : { quantity: round(quantity) }),
        ...(summed ? { cost: round(kids.reduce((t, k) => t + k.cost!, 0)), currency: kids[0]!.currency! } : {}),
        source: summed ? "sum of its lines" : "quantity" in own ? `${own.source}; not every line under it was priced` : "not every line under it was measured and priced",
      });
      return;
    }
    const r = measureLine(line, m, estimatedHours);
    if ("missing" in r) { out.set(line.id, { id: line.id, source: `not measured: ${r.missing}` }); return; }
    const price = unitPrice(line);
    const quantity = round(r.quantity);
    out.set(line.id, {
      id: line.id, quantity,
      ...(price === undefined ? {} : { cost: round(quantity * price.value), currency: price.currency }),
      source: price !== undefined ? r.source : line.includedIn !== undefined ? `${r.source}; priced as part of ${line.includedIn}` : `${r.source}; no rate recorded at deploy`,
    });
  });
  const lines = report.lines.flatMap(function flat(l): CostLine[] { return [l, ...(l.children ?? []).flatMap(flat)]; }).map((l) => out.get(l.id)!);
  // Totals over the top-level lines that have an actual cost (a parent already holds its children).
  const priced = report.lines.map((l) => out.get(l.id)!).filter((a) => a.cost !== undefined);
  const cny = priced.reduce((t, a) => t + (a.currency === "CNY" ? a.cost! : a.cost! * report.fx.cnyPerUsd), 0);
  return {
    ...report,
    actual: {
      run: m.run, lines,
      ...(priced.length === 0 ? {} : { total: { CNY: round(cny), USD: round(cny / report.fx.cnyPerUsd) } }),
    },
  };
}
