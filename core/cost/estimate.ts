// recipe → CostReport: what a whole run costs, per provider, as low/expected/high ranges, with the source and
// date of every price and every assumption listed. Pure: no I/O; the same recipe, options and `now` give the
// same report. docs/cost.md explains the model; the JSON shape is schema/cost-report.schema.json.
import { budgetStatus } from "./budget-check.js";
import { sandboxCapacity } from "../capacity.js";
import { RlpipeError } from "../errors.js";
import { canonicalJson, sha256 } from "../recipe/load.js";
import { PROVIDERS, type Provider, type Recipe } from "../recipe/schema.js";
import { parseNodeSpec } from "../providers/tione-request.js";
import { CATALOG, FX_ROW_ID, catalogFx } from "./catalog.js";
import { type PriceContext, type Priced, priceFor, recipeRates } from "./rates.js";
import { ZERO, add, exact, mul, roundRange } from "./range.js";
import { fmtRange } from "./recipe-facts.js";
import { type Usage, usageFigure, usageOf } from "./quantities.js";
import { formatQuantity } from "./render/format.js";
import { type StepsOverride, runLengthOf, stepsByStage } from "./run-length.js";
import { DEVICES } from "./step-time.js";
import type { Candidate, Catalog, Component, CostLine, CostReport, Currency, FxRate, Range, Rate, RateOverrides, StageSummary } from "./types.js";
import { type Workload, deviceOf, workloadOf } from "./workload.js";

export interface EstimateOptions {
  /** The provider to price (chosen); "all": every provider that can run the recipe as candidates. Default: the recipe's cloud target, else its first target, else local. */
  readonly provider?: Provider | "all";
  /** Live rates (rlpipe cost --online) and user rates (a --rates file; they win over the recipe's prices:). */
  readonly overrides?: RateOverrides;
  readonly now: Date;
  /** A measured step time for the RL stages (else the SFT stages) that set none in cost.stages. */
  readonly stepSeconds?: number;
  /** Steps to price (rlpipe cost --steps) instead of the recipe's: they win over cost.stages.<id>.steps and schedule.totalTrainingSteps. */
  readonly steps?: StepsOverride;
  readonly catalog?: Catalog;
  /** The recipe file, for the report header. */
  readonly file?: string;
}

export const EXCLUSIONS: readonly string[] = [
  "idle time before the first step: image pull, environment setup, model loading, inference engine start, sandbox health wait",
  "image builds and registry storage (SWR, TCR, ECR)",
  "taxes, discounts, coupons and free tiers (function, storage and egress free quotas are not deducted)",
  "prepaid resource groups and dedicated pools: sunk cost, shown as included",
  "retries, failed or repeated attempts, and stopped jobs",
  "file storage and disks mounted into the job (CFS, SFS, EVS, node-local disks)",
  "log and monitoring services (LTS, CLS, CloudWatch), networking inside the cloud (VPC, NAT)",
  "rlpipe's runs and console functions and the deploying machine (the controller, not the job)",
  "TI-ONE's software subscription fee where it is billed apart from the compute price",
];

const round = roundRange;

/** Providers a recipe can run on: a cloud or docker target needs its target block; Ray and Slurm need a cluster; local one node. */
export function candidateProviders(recipe: Recipe): Provider[] {
  return PROVIDERS.filter((p) => {
    if (p === "modelarts" || p === "tione" || p === "docker") return recipe.targets?.[p] !== undefined;
    if (p === "local") return recipe.resources.nodes === 1;
    return true;
  });
}

/** The provider a recipe is meant for: its cloud target, else its first target, else local. */
export function recipeProvider(recipe: Recipe): Provider {
  const targets = Object.keys(recipe.targets ?? {}) as Provider[];
  return targets.find((t) => t === "modelarts" || t === "tione") ?? targets[0] ?? "local";
}

// ---------------------------------------------------------------- compute items

interface ComputeItem {
  readonly id: string;
  readonly unit: "node-hour" | "device-hour";
  /** Nodes or devices billed per hour of the job. */
  readonly perHour: number;
  readonly label: string;
  readonly role?: string;
  readonly sunk?: string;
  readonly supply?: string;
}

const PLAIN_DEVICE = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function computeItems(recipe: Recipe, provider: Provider): ComputeItem[] {
  const { nodes, devicesPerNode, deviceType } = recipe.resources;
  if (provider === "modelarts") {
    const t = recipe.targets?.modelarts;
    if (t?.poolId !== undefined) return [{ id: `modelarts:pool:${t.poolId}`, unit: "node-hour", perHour: nodes, label: `${nodes} node${nodes === 1 ? "" : "s"} of dedicated pool ${t.poolId}`, sunk: "dedicated resource pool (prepaid: sunk cost)" }];
    if (t?.flavor !== undefined) return [{ id: `modelarts:${t.flavor}`, unit: "node-hour", perHour: nodes, label: `${nodes} × ${t.flavor}` }];
    return [{
      id: "modelarts:<flavor>", unit: "node-hour", perHour: nodes, label: `${nodes} node${nodes === 1 ? "" : "s"} (targets.modelarts.flavor not set)`,
      supply: "set targets.modelarts.flavor, then add { item: modelarts:<flavor>, value: <price>, currency: CNY or USD, unit: node-hour } under prices: in the recipe, or to a --rates file",
    }];
  }
  if (provider === "tione") {
    const t = recipe.targets?.tione;
    const prepaid = t?.chargeType === "PREPAID" || (t?.chargeType === undefined && t?.resourceGroupId !== undefined);
    const items: ComputeItem[] = [];
    for (const role of ["head", "worker"] as const) {
      const n = t?.[role];
      if (n === undefined) continue;
      const size = n.spec === undefined ? undefined : parseNodeSpec(n.spec);
      const gpuType = n.gpuType ?? size?.gpuType;
      const cards = (n.gpuCenti ?? size?.gpuCenti ?? 0) / 100;
      const group = t?.resourceGroupId === undefined ? "prepaid resource group" : `prepaid resource group ${t.resourceGroupId}`;
      const base = { role, ...(prepaid ? { sunk: `${group} (sunk cost)` } : {}) };
      if (n.instanceType !== undefined) items.push({ ...base, id: `tione:${n.instanceType}`, unit: "node-hour", perHour: n.count, label: `${n.count} × ${role} ${n.instanceType}` });
      else if (gpuType !== undefined && cards > 0) items.push({ ...base, id: `device:${gpuType}`, unit: "device-hour", perHour: n.count * cards, label: `${n.count} × ${role} with ${cards} × ${gpuType}` });
      else items.push({ ...base, id: n.spec === undefined ? "tione:node" : `tione:spec:${n.spec.replace(/\s+/g, "")}`, unit: "node-hour", perHour: n.count, label: `${n.count} × ${role} ${n.spec ?? "node"}` });
    }
    if (items.length > 0) return items;
  }
  if (recipe.runtime.accelerator !== "cpu" && deviceType !== undefined && PLAIN_DEVICE.test(deviceType)) {
    return [{ id: `device:${deviceType}`, unit: "device-hour", perHour: nodes * devicesPerNode, label: `${nodes} × ${devicesPerNode} × ${deviceType}` }];
  }
  return [{ id: "self-hosted:node-hour", unit: "node-hour", perHour: nodes, label: `${nodes} node${nodes === 1 ? "" : "s"} (${provider}${deviceType === undefined ? "" : `, ${deviceType}`})` }];
}

// ---------------------------------------------------------------- lines

interface LineSpec {
  readonly id: string;
  readonly component: Component;
  readonly label: string;
  readonly provider: string;
  readonly priceId: string;
  readonly unit: string;
  readonly quantity: Range;
  readonly note?: string;
  /** How to supply a missing rate, when the default (add the item under prices:) is not enough. */
  readonly supply?: string;
}

function pricedLine(ctx: PriceContext, s: LineSpec): CostLine {
  const p: Priced = priceFor(ctx, s.priceId, s.unit, s.supply);
  const note = [s.note, p.rate?.confidence === "anchor" ? "anchor price: comparable hardware elsewhere, not this provider's price" : undefined, p.row?.note !== undefined && p.rate !== undefined && p.basis === "catalog" ? p.row.note : undefined]
    .filter((x): x is string => x !== undefined).join("; ");
  // Cost from the quantity as shown, so that a reader's quantity × rate gives the printed cost.
  const quantity = round(s.quantity);
  return {
    id: s.id, component: s.component, label: s.label, provider: s.provider, resource: s.priceId, unit: s.unit, quantity,
    ...(p.rate === undefined ? {} : { rate: p.rate, cost: round(mul(quantity, p.rate.value)), currency: p.rate.currency }),
    basis: p.basis,
    ...(p.rateNeeded === undefined ? {} : { rateNeeded: p.rateNeeded }),
    ...(note === "" ? {} : { note }),
  };
}

function includedLine(s: Omit<LineSpec, "priceId"> & { resource: string; includedIn: string }): CostLine {
  return {
    id: s.id, component: s.component, label: s.label, provider: s.provider, resource: s.resource, unit: s.unit, quantity: round(s.quantity),
    basis: "usage-estimate", includedIn: s.includedIn, ...(s.note === undefined ? {} : { note: s.note }),
  };
}

/** A parent over children: its cost is theirs when all are priced in one currency. */
function parentLine(id: string, component: Component, label: string, provider: string, resource: string, unit: string, quantity: Range, children: readonly CostLine[]): CostLine {
  if (children.length === 1) return { ...children[0]!, id, label: `${label}: ${children[0]!.label}` };
  const priced = children.filter((c) => c.cost !== undefined);
  const currencies = new Set(priced.map((c) => c.currency));
  const basis = new Set(children.map((c) => c.basis)).size === 1 ? children[0]!.basis : "catalog";
  const allIncluded = children.every((c) => c.includedIn !== undefined);
  return {
    id, component, label, provider, resource, unit, quantity: round(quantity),
    ...(priced.length > 0 && currencies.size === 1 && priced.length + children.filter((c) => c.includedIn !== undefined).length === children.length
      ? { cost: round(add(...priced.map((c) => c.cost!))), currency: [...currencies][0]! } : {}),
    basis, ...(allIncluded ? { includedIn: children[0]!.includedIn! } : {}), children,
  };
}

export function leaves(lines: readonly CostLine[]): CostLine[] {
  return lines.flatMap((l) => (l.children === undefined ? [l] : leaves(l.children)));
}

function toCurrency(cost: Range, from: Currency, to: Currency, fx: FxRate): Range {
  if (from === to) return cost;
  return mul(cost, from === "USD" ? fx.cnyPerUsd : 1 / fx.cnyPerUsd);
}

function computeLines(ctx: PriceContext, recipe: Recipe, provider: Provider, work: Workload): CostLine[] {
  const items = computeItems(recipe, provider);
  const children: CostLine[] = [];
  for (const st of work.stages) {
    for (const item of items) {
      const spec = {
        id: items.length === 1 ? `compute.${st.id}` : `compute.${st.id}.${item.role ?? item.id}`,
        component: "compute" as const, label: `stage ${st.id}: ${item.label}`, provider, unit: item.unit, quantity: mul(st.hours, item.perHour),
      };
      children.push(item.sunk === undefined
        ? pricedLine(ctx, { ...spec, priceId: item.id, ...(item.supply === undefined ? {} : { supply: item.supply }) })
        : includedLine({ ...spec, resource: item.id, includedIn: item.sunk }));
    }
  }
  const units = new Set(children.map((c) => c.unit));
  const quantity = units.size === 1 ? add(...children.map((c) => c.quantity)) : work.hours;
  return [parentLine("compute", "compute", "Training compute", provider, items.map((i) => i.id).join(", "), units.size === 1 ? [...units][0]! : "hour", quantity, children)];
}

/** "306k–1.3M–5.45M": low–expected–high in the report's short quantity form. */
const triple = (r: Range) => [r.low, r.expected, r.high].map(formatQuantity).join("–");

function usageLines(ctx: PriceContext, provider: Provider, usage: Usage): CostLine[] {
  const lines: CostLine[] = [];
  const sb = usage.sandbox;
  if (sb?.billing === "compute") {
    lines.push(includedLine({ id: "sandbox", component: "sandbox", label: "Sandbox (co-located with training)", provider, resource: "sandbox:colocated", unit: "sandbox-second", quantity: usage.sandboxSeconds, includedIn: "compute", note: "runs on the training nodes: paid for by the compute line" }));
  } else if (sb?.billing === "managed") {
    const key = sb.provider === "tencent-ags" ? "sandbox:ags" : "sandbox:e2b";
    const children = [
      pricedLine(ctx, { id: "sandbox.vcpu", component: "sandbox", label: `vCPU time (${sb.vcpus} vCPU)`, provider: sb.provider ?? "e2b", priceId: key, unit: "vcpu-second", quantity: mul(usage.sandboxSeconds, sb.vcpus) }),
      pricedLine(ctx, { id: "sandbox.memory", component: "sandbox", label: `memory time (${sb.memoryGiB} GiB)`, provider: sb.provider ?? "e2b", priceId: `${key}:memory`, unit: "gib-second", quantity: mul(usage.sandboxSeconds, sb.memoryGiB) }),
    ];
    lines.push(parentLine("sandbox", "sandbox", `Reward and tool sandboxes (${sb.provider === "tencent-ags" ? "Tencent AGS" : "E2B"})`, sb.provider ?? "e2b", key, "sandbox-second", usage.sandboxSeconds, children));
  } else if (sb?.billing === "self-hosted") {
    lines.push(pricedLine(ctx, { id: "sandbox", component: "sandbox", label: `Sandbox server outside the training nodes (${sb.vcpus} vCPU per sandbox-second)`, provider, priceId: "sandbox:self-hosted", unit: "vcpu-second", quantity: mul(usage.sandboxSeconds, sb.vcpus) }));
  }
  const fn = usage.functions;
  if (fn !== undefined) {
    const durationId = fn.platform === "lambda" ? "lambda:arm64:gb-second" : `${fn.platform}:gb-second`;
    lines.push(parentLine("functions", "functions", `Reward and tool functions (${fn.platform})`, fn.platform, `${fn.platform}:requests`, "request", fn.requests, [
      pricedLine(ctx, { id: "functions.requests", component: "functions", label: "requests", provider: fn.platform, priceId: `${fn.platform}:requests`, unit: "request", quantity: fn.requests }),
      pricedLine(ctx, { id: "functions.duration", component: "functions", label: `duration at ${fn.memoryMB} MB`, provider: fn.platform, priceId: durationId, unit: "gb-second", quantity: fn.gbSeconds }),
    ]));
  }
  const st = usage.storage;
  if (st !== undefined) {
    const requestLines = st.service === "s3"
      ? [
        pricedLine(ctx, { id: "storage.put", component: "storage", label: "PUT and LIST requests", provider: st.service, priceId: "s3:put", unit: "request", quantity: st.putRequests }),
        pricedLine(ctx, { id: "storage.get", component: "storage", label: "GET requests", provider: st.service, priceId: "s3:get", unit: "request", quantity: st.getRequests }),
      ]
      : [pricedLine(ctx, { id: "storage.requests", component: "storage", label: "requests", provider: st.service, priceId: `${st.service}:requests`, unit: "request", quantity: add(st.putRequests, st.getRequests) })];
    lines.push(parentLine("storage", "storage", `Checkpoints and metrics (${st.service.toUpperCase()})`, st.service, `${st.service}:standard:storage`, "gb-month", st.gbMonths, [
      pricedLine(ctx, {
        id: "storage.capacity", component: "storage", label: `capacity (${fmtRange(round(st.storedGB, 3))} GB retained: ${fmtRange(st.checkpointsRetained)} of ${fmtRange(st.checkpointsSaved)} checkpoints, ${st.retention})`, provider: st.service, priceId: `${st.service}:standard:storage`, unit: "gb-month", quantity: st.gbMonths,
        // The one line billed partly after the run: say how much, as the cumulative chart splits it.
        note: `${st.retentionText}; ${triple(st.gbMonthsDuringRun)} GB-months while the run goes on (each checkpoint from its save until retired or the end), ${triple(st.gbMonthsAfterRun)} after it (kept ${fmtRange(st.retentionMonths)} months)`,
      }),
      ...requestLines,
    ]));
    lines.push(pricedLine(ctx, { id: "egress", component: "egress", label: "Egress (final model export)", provider: st.service, priceId: `${st.service}:egress`, unit: "gb", quantity: st.egressGB }));
  }
  return lines;
}

// ---------------------------------------------------------------- totals, cumulative, candidates

function totalsOf(lines: readonly CostLine[], fx: FxRate): CostReport["totals"] {
  let cny = ZERO;
  let usd = ZERO;
  let incomplete = false;
  for (const l of leaves(lines)) {
    if (l.rateNeeded !== undefined) incomplete = true;
    if (l.cost === undefined || l.currency === undefined) continue;
    if (l.currency === "CNY") cny = add(cny, l.cost); else usd = add(usd, l.cost);
  }
  return {
    CNY: round(add(cny, toCurrency(usd, "USD", "CNY", fx))),
    USD: round(add(usd, toCurrency(cny, "CNY", "USD", fx))),
    incomplete,
  };
}

const CUMULATIVE_POINTS_PER_STAGE = 20;

/** Each bound of `part` as a share of the same bound of `whole` (0 where the whole is 0). */
const shareOf = (part: Range, whole: Range): Range => ({
  low: whole.low > 0 ? part.low / whole.low : 0, expected: whole.expected > 0 ? part.expected / whole.expected : 0, high: whole.high > 0 ? part.high / whole.high : 0,
});
const times = (a: Range, b: Range): Range => ({ low: a.low * b.low, expected: a.expected * b.expected, high: a.high * b.high });

/**
 * Cost over the run in CNY, as it is incurred: compute with each stage's steps, sandbox and function use with its
 * responses, storage requests with the run's time, and storage capacity by the GB-months held so far — stored data
 * grows through the run, so at a share f of the run's time f² of the run's GB-months are used. What is billed after
 * the run (storage kept for the retention months, the final model's export) is one more point at the last step,
 * flagged afterRun, so the curve does not jump at the last step and the last point is still the whole total.
 */
function cumulativeOf(lines: readonly CostLine[], work: Workload, fx: FxRate, usage: Usage): CostReport["cumulative"] {
  const cny = (l: CostLine) => (l.cost === undefined || l.currency === undefined ? ZERO : toCurrency(l.cost, l.currency, "CNY", fx));
  const all = leaves(lines);
  const computeOf = (stage: string) => add(...all.filter((l) => l.component === "compute" && (l.id === `compute.${stage}` || l.id.startsWith(`compute.${stage}.`))).map(cny));
  const perResponse = add(...all.filter((l) => l.component === "sandbox" || l.component === "functions").map(cny));
  const capacity = add(...all.filter((l) => l.id === "storage.capacity").map(cny));
  const st = usage.storage;
  const capacityDuring = st === undefined ? ZERO : times(capacity, shareOf(st.gbMonthsDuringRun, st.gbMonths));
  const capacityAfter = add(capacity, mul(capacityDuring, -1));
  const storageRequests = add(...all.filter((l) => l.component === "storage" && l.id !== "storage.capacity").map(cny));
  const afterRun = add(capacityAfter, ...all.filter((l) => l.component === "egress").map(cny));
  const totalResponses = work.stages.reduce((s, x) => s + x.responses.expected, 0);
  const totalHours = work.stages.reduce((s, x) => s + x.hours.expected, 0);
  // Share of the run's time elapsed (expected hours), for what accrues with time rather than with steps.
  const timeShare = (hours: number) => (totalHours > 0 ? Math.min(1, hours / totalHours) : 1);
  const timed = (f: number) => add(mul(capacityDuring, f * f), mul(storageRequests, f));
  const points: { step: number; cost: Range; afterRun?: boolean }[] = [{ step: 0, cost: ZERO }];
  let before = ZERO;
  let hoursBefore = 0;
  let offset = 0;
  for (const stage of work.stages) {
    const stageCost = add(computeOf(stage.id), totalResponses === 0 ? ZERO : mul(perResponse, stage.responses.expected / totalResponses));
    const steps = stage.steps === undefined ? 0 : Math.round(stage.steps.expected);
    const k = Math.min(CUMULATIVE_POINTS_PER_STAGE, Math.max(1, steps));
    for (let i = 1; i <= k; i++) {
      const f = timeShare(hoursBefore + (stage.hours.expected * i) / k);
      points.push({ step: offset + Math.round((steps * i) / k), cost: round(add(before, mul(stageCost, i / k), timed(f))) });
    }
    before = add(before, stageCost);
    hoursBefore += stage.hours.expected;
    offset += steps;
  }
  // The run's end holds all of the run's storage (f = 1), also when rounding left the last share a hair under 1.
  const last = points[points.length - 1]!;
  points[points.length - 1] = { step: last.step, cost: round(add(before, timed(1))) };
  if (afterRun.high > 0) points.push({ step: last.step, cost: round(add(before, timed(1), afterRun)), afterRun: true });
  return points;
}

function candidateOf(ctx: PriceContext, recipe: Recipe, provider: Provider, chosen: boolean, work: Workload, fx: FxRate): Candidate {
  const lines = leaves(computeLines(ctx, recipe, provider, work));
  const t = recipe.targets;
  const region = provider === "modelarts" ? t?.modelarts?.region : provider === "tione" ? t?.tione?.region : undefined;
  const flavor = provider === "modelarts" ? t?.modelarts?.flavor ?? t?.modelarts?.poolId
    : provider === "tione" ? [t?.tione?.head?.spec ?? t?.tione?.head?.instanceType, t?.tione?.worker?.spec ?? t?.tione?.worker?.instanceType].filter((x) => x !== undefined).join(" + ") || undefined
      : undefined;
  const device = work.device ?? deviceOf(recipe, provider);
  const devices = recipe.resources.nodes * recipe.resources.devicesPerNode;
  const accelerators = recipe.runtime.accelerator === "cpu" ? "CPU" : `${devices} × ${device === undefined ? recipe.resources.deviceType ?? recipe.runtime.accelerator : DEVICES[device].name}`;
  const needed = lines.filter((l) => l.rateNeeded !== undefined).map((l) => l.resource);
  const sunk = lines.filter((l) => l.includedIn !== undefined);
  const priced = lines.filter((l) => l.cost !== undefined);
  const currencies = [...new Set(priced.map((l) => l.currency!))];
  let cost: Range | undefined;
  let currency: Currency | undefined;
  let note: string | undefined;
  let includedIn: string | undefined;
  if (needed.length > 0) note = `rate needed: ${[...new Set(needed)].join(", ")}`;
  else if (priced.length === 0 && sunk.length > 0) {
    // Paid for already: nothing more to pay for this run's compute (the group's fee is sunk), which is a figure, not a gap.
    includedIn = sunk[0]!.includedIn!;
    cost = ZERO;
    currency = "CNY";
    note = `prepaid (sunk): included in ${includedIn}; 0 marginal compute cost`;
  } else if (priced.length > 0) {
    currency = currencies.length === 1 ? currencies[0]! : "CNY";
    cost = round(add(...priced.map((l) => toCurrency(l.cost!, l.currency!, currency!, fx))));
    const anchors = priced.filter((l) => l.rate?.confidence === "anchor");
    note = [currencies.length > 1 ? `converted to CNY at ${fx.cnyPerUsd}` : undefined, sunk.length > 0 ? `plus ${sunk.map((l) => l.label).join(", ")}: ${sunk[0]!.includedIn}` : undefined, anchors.length > 0 ? "anchor price" : undefined]
      .filter((x): x is string => x !== undefined).join("; ") || undefined;
  }
  const unitPrice = lines.find((l) => l.rate !== undefined)?.rate;
  return {
    provider, ...(region === undefined ? {} : { region }), ...(flavor === undefined ? {} : { flavor }), accelerators,
    nodes: recipe.resources.nodes, ...(unitPrice === undefined ? {} : { unitPrice }), hours: round(work.hours),
    ...(cost === undefined ? {} : { cost, currency: currency! }), chosen, ...(note === undefined ? {} : { note }),
    ...(includedIn === undefined ? {} : { includedIn }),
  };
}

function budgetOf(recipe: Recipe, totals: CostReport["totals"]): CostReport["budget"] {
  const b = recipe.cost?.budget;
  if (b === undefined) return undefined;
  // One rule for the report and for deploy's refusal (budget-check.ts): over when the expected total is above the cap.
  return { cap: b.cap, currency: b.currency, status: budgetStatus(totals, b) };
}

// ---------------------------------------------------------------- the estimate

export function estimateCost(recipe: Recipe, opts: EstimateOptions): CostReport {
  const catalog = opts.catalog ?? CATALOG;
  const all = opts.provider === "all";
  const chosen: Provider = opts.provider === undefined || opts.provider === "all" ? recipeProvider(recipe) : opts.provider;
  const unknownStage = Object.keys(recipe.cost?.stages ?? {}).find((id) => !recipe.stages.some((s) => s.id === id));
  if (unknownStage !== undefined) {
    throw new RlpipeError("cost_unknown_stage", `cost.stages.${unknownStage}: no stage has id ${unknownStage}`, { exitCode: 2, hint: `stage ids: ${recipe.stages.map((s) => s.id).join(", ")}` });
  }
  const user = [...(opts.overrides?.user ?? []), ...recipeRates(recipe, opts.now)];
  const ctx: PriceContext = { catalog, overrides: { user, ...(opts.overrides?.live === undefined ? {} : { live: opts.overrides.live }) }, used: new Map() };
  const fxOverride = priceFor(ctx, FX_ROW_ID, "CNY/USD");
  const fx: FxRate = fxOverride.basis !== "catalog" && fxOverride.rate !== undefined
    ? { cnyPerUsd: fxOverride.rate.value, source: fxOverride.rate.source, dateRead: fxOverride.rate.dateRead }
    : catalogFx(catalog);

  const testCases = usageFigure(recipe, "testCasesPerReward").value;
  const caseSeconds = usageFigure(recipe, "testCaseSeconds").value;
  const steps = stepsByStage(recipe, opts.steps);
  const workFor = (p: Provider) => workloadOf(recipe, p, { ...(opts.stepSeconds === undefined ? {} : { stepSeconds: opts.stepSeconds }), testCasesPerReward: testCases, testCaseSeconds: caseSeconds, steps });
  const work = workFor(chosen);
  const usage = usageOf(recipe, chosen, work);
  const lines = [...computeLines(ctx, recipe, chosen, work), ...usageLines(ctx, chosen, usage)];

  const providers = all ? candidateProviders(recipe) : [...new Set<Provider>([...candidateProviders(recipe).filter((p) => recipe.targets?.[p] !== undefined), chosen])];
  const ordered = PROVIDERS.filter((p) => providers.includes(p));
  // Candidates' compute rates are shown too: their sources are listed with the breakdown's.
  const candidates = ordered.map((p) => candidateOf(ctx, recipe, p, p === chosen, p === chosen ? work : workFor(p), fx));

  const totals = totalsOf(lines, fx);
  const main = [...work.stages].filter((s) => s.steps !== undefined).sort((a, b) => b.hours.expected - a.hours.expected)[0];
  const assumptions = [
    `totals convert between currencies at ${fx.cnyPerUsd} CNY/USD (${fx.source}, ${fx.dateRead}); every line keeps its own currency`,
    ...work.assumptions,
    ...usage.assumptions,
  ];
  // The exchange rate is a price source like any other (the catalog row, or the user's that replaced it).
  const sources = [...ctx.used.values()]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.confidence < b.confidence ? -1 : a.confidence > b.confidence ? 1 : 0));
  const stages: StageSummary[] = work.stages.map((s) => ({
    id: s.id, type: s.type,
    ...(s.steps === undefined ? {} : { steps: round(s.steps) }), ...(s.secondsPerStep === undefined ? {} : { secondsPerStep: round(s.secondsPerStep) }),
    ...(s.stepBasis === undefined ? {} : { stepBasis: s.stepBasis }), ...(s.validations === undefined ? {} : { validations: round(s.validations) }),
    ...(s.responses.high === 0 ? {} : { responses: round(s.responses) }), hours: round(s.hours),
  }));
  const budget = budgetOf(recipe, totals);
  const sunk = leaves(lines).some((l) => l.component === "compute" && l.includedIn !== undefined);
  const capacity = sandboxCapacity(recipe, chosen, opts.stepSeconds === undefined ? {} : { stepSeconds: opts.stepSeconds });
  return {
    schema: "rlpipe.cost-report", version: 1, generatedAt: opts.now.toISOString(),
    recipe: { name: recipe.metadata.name, hash: sha256(canonicalJson(recipe)), ...(opts.file === undefined ? {} : { file: opts.file }) },
    mode: (opts.overrides?.live?.length ?? 0) > 0 ? "online" : "offline",
    chosen, candidates, lines, fx, totals, ...(budget === undefined ? {} : { budget }),
    steps: main?.steps === undefined ? exact(0) : round(main.steps), secondsPerStep: main?.secondsPerStep === undefined ? exact(0) : round(main.secondsPerStep),
    cumulative: cumulativeOf(lines, work, fx, usage),
    assumptions: dedupe(assumptions),
    exclusions: dedupe([...EXCLUSIONS.filter((e) => sunk || !e.startsWith("prepaid")), ...usage.exclusions]),
    priceSources: dedupeRates(sources), stages, ...(capacity === undefined ? {} : { capacity }),
    runLength: runLengthOf(recipe, work),
  };
}

const dedupe = (xs: readonly string[]) => [...new Set(xs)];

function dedupeRates(rates: readonly Rate[]): Rate[] {
  const seen = new Set<string>();
  return rates.filter((r) => { const k = `${r.id}|${r.confidence}|${r.value}|${r.unit}`; if (seen.has(k)) return false; seen.add(k); return true; });
}
