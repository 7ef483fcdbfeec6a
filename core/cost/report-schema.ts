// The JSON report's schema as zod, mirroring types.ts (a compile-time check below keeps the two equal), and its
// JSON Schema for schema/cost-report.schema.json (npm run cost-files; test/cost-estimate.test.ts checks it is
// current and validates real reports against it).
import { z } from "zod";
import type { CostLine, CostReport } from "./types.js";

const num = () => z.number().refine(Number.isFinite, { error: "expected a finite number" });
const RangeSchema = z.strictObject({ low: num(), expected: num(), high: num() }).describe("low ≤ expected ≤ high");
const Currency = z.enum(["CNY", "USD"]);
const date = () => z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

const RateSchema = z.strictObject({
  id: z.string().describe("Catalog row id, or the item a user or live rate prices"),
  value: num().describe("Price per `unit` in `currency`"),
  currency: Currency,
  unit: z.string(),
  region: z.string().optional(),
  source: z.string().describe("URL, API or document the figure comes from"),
  dateRead: date(),
  confidence: z.enum(["user", "live", "official", "third-party", "doc-example", "anchor"]),
});

const CostLineSchema: z.ZodType<CostLine> = z.lazy(() => z.strictObject({
  id: z.string().describe("Stable id: compute.<stage>[.<role>], sandbox.vcpu, functions.requests, storage.capacity, egress …"),
  component: z.enum(["compute", "sandbox", "functions", "storage", "egress"]),
  label: z.string(),
  provider: z.string(),
  resource: z.string().describe("The catalog row id the line is priced by"),
  unit: z.string(),
  quantity: RangeSchema,
  rate: RateSchema.optional().describe("The rate in the line's unit (converted from the source's unit)"),
  cost: RangeSchema.optional().describe("quantity × rate, in `currency`"),
  currency: Currency.optional(),
  basis: z.enum(["catalog", "live", "user", "usage-estimate"]),
  rateNeeded: z.strictObject({ item: z.string(), unit: z.string(), howToSupply: z.string() }).optional().describe("No usable price: no cost, and totals.incomplete"),
  children: z.array(CostLineSchema).optional().describe("Parts of this line; totals add leaves only"),
  includedIn: z.string().optional().describe("Paid for elsewhere (compute, a prepaid group): no cost, not missing"),
  note: z.string().optional(),
}));

export const CostReportSchema = z.strictObject({
  schema: z.literal("rlpipe.cost-report"),
  version: z.literal(1),
  generatedAt: z.string().describe("ISO time the estimate was made"),
  recipe: z.strictObject({ name: z.string(), hash: z.string().describe("sha256 of the recipe's canonical JSON"), file: z.string().optional() }),
  mode: z.enum(["offline", "online"]).describe("online: live prices were used"),
  chosen: z.string().describe("The provider the breakdown (lines) is for"),
  candidates: z.array(z.strictObject({
    provider: z.string(), region: z.string().optional(), flavor: z.string().optional(), accelerators: z.string().optional(),
    nodes: num(), unitPrice: RateSchema.optional(), hours: RangeSchema.describe("Wall-clock hours of the run"),
    cost: RangeSchema.optional().describe("Training compute only; 0 when its compute is sunk (includedIn)"), currency: Currency.optional(), chosen: z.boolean(), note: z.string().optional(),
    includedIn: z.string().optional().describe("Compute already paid for (a prepaid resource group or dedicated pool, sunk cost): cost 0 marginal, no unit price"),
  })),
  lines: z.array(CostLineSchema),
  fx: z.strictObject({ cnyPerUsd: num(), source: z.string(), dateRead: date() }),
  totals: z.strictObject({ CNY: RangeSchema, USD: RangeSchema, incomplete: z.boolean().describe("Some line needs a rate: the totals leave it out") }),
  budget: z.strictObject({ cap: num(), currency: Currency, status: z.enum(["within", "over", "unknown", "at-risk"]) }).optional(),
  steps: RangeSchema.describe("Steps of the longest training stage"),
  secondsPerStep: RangeSchema,
  cumulative: z.array(z.strictObject({
    step: num(), cost: RangeSchema.describe("CNY incurred by this step"),
    afterRun: z.boolean().optional().describe("The last point, after the run: adds storage kept for the retention months and the final export; its cost is the total"),
  })).describe("The run's cost in CNY as it is incurred, for the chart"),
  assumptions: z.array(z.string()),
  exclusions: z.array(z.string()),
  priceSources: z.array(RateSchema).describe("Every rate used, in its source's unit"),
  stages: z.array(z.strictObject({
    id: z.string(), type: z.enum(["sft", "merge", "rl", "eval", "score"]),
    steps: RangeSchema.optional(), secondsPerStep: RangeSchema.optional(), stepBasis: z.enum(["model", "measured"]).optional(),
    validations: RangeSchema.optional(), responses: RangeSchema.optional(), hours: RangeSchema,
  })).optional(),
  capacity: z.strictObject({
    shareLimit: num().describe("The share of a step above which rlpipe plan warns (sandbox_capacity)"),
    stages: z.array(z.strictObject({
      stage: z.string(),
      demand: z.strictObject({
        responsesPerStep: num(), toolCallsPerResponse: num(), toolCallsBasis: z.string(), toolCallsPerStep: num(),
        testCasesPerReward: num().describe("0 when the reward does not call the sandbox"), testCasesBasis: z.string().optional(), testCasesPerStep: num(),
      }),
      supply: z.strictObject({
        kind: z.enum(["self-hosted", "managed", "unknown"]), backend: z.string(),
        servers: num().optional(), coresPerNode: num().optional(), coresPerServer: num().optional(), coresBasis: z.string().optional(), workers: num().optional(),
        toolCallsPerS: num().optional(), testCasesPerS: num().optional(),
        maxSandboxes: num().optional(), createsPerS: num().optional(), accountBasis: z.string().optional(), createsPerToolCall: num().optional(),
        toolCallSeconds: num().optional(), testCaseSeconds: num().optional(),
        basis: z.array(z.string()),
      }),
      sandboxSecondsPerStep: num().optional().describe("Seconds of the step the sandbox needs at full parallelism; absent when its capacity is unknown"),
      limitedBy: z.enum(["throughput", "creates", "concurrency"]).optional(),
      stepSeconds: num(), stepBasis: z.enum(["model", "measured"]),
      share: num().optional(), shareLimit: num(), over: z.boolean(),
      line: z.string().describe("The line rlpipe plan and rlpipe cost print"),
      hint: z.string().optional().describe("What to change, when over"),
      inFlight: z.strictObject({
        perServer: num(), places: num(), placesBasis: z.string(), clientLimit: num().optional(), clientBasis: z.string().optional(), over: z.boolean(),
      }).optional().describe("Tool calls in flight per sandbox server against the places it admits"),
      fixes: z.array(z.strictObject({
        kind: z.enum(["turns", "cores", "workers", "tool-concurrency", "agent-workers", "tier", "quota"]), says: z.string(),
        set: z.array(z.strictObject({ path: z.array(z.union([z.string(), num()])), value: z.union([num(), z.string()]) })),
      })).optional().describe("Recipe edits that bring the stage within the limits, each checked by running the check on the edited recipe"),
    })),
  }).optional().describe("The sandbox's work per RL step against its capacity (docs/ARCHITECTURE.md, sandbox capacity)"),
  runLength: z.strictObject({
    hours: RangeSchema.describe("The whole run (every stage), wall-clock hours"),
    days: RangeSchema.describe("The same in days"),
    stages: z.array(z.strictObject({
      stage: z.string(), steps: RangeSchema,
      source: z.string().describe("Where the count comes from: trainer.total_training_steps in the recipe, ⌊rows / batch⌋ × epochs, --steps, cost.stages.<id>.steps"),
    })),
    flags: z.array(z.string()).describe("A run beyond maxDays, or a stage priced more than 3× its published length: each names the step count and what to set"),
    maxDays: num().describe("The bound (days, expected figure) a run is flagged beyond"),
  }).optional().describe("How long the run goes as verl will run it (issue 24)"),
  actual: z.strictObject({
    run: z.string(),
    lines: z.array(z.strictObject({ id: z.string(), quantity: num().optional(), cost: num().optional(), currency: Currency.optional(), source: z.string() })),
    total: z.strictObject({ CNY: num(), USD: num() }).optional(),
  }).optional(),
});

// Compile-time: the schema and the contract describe the same object.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type DeepMutable<T> = T extends readonly (infer E)[] ? DeepMutable<E>[] : T extends object ? { -readonly [K in keyof T]: DeepMutable<T[K]> } : T;
const sameShape: Same<DeepMutable<z.output<typeof CostReportSchema>>, DeepMutable<CostReport>> = true;
void sameShape;

export function costReportJsonSchema(): Record<string, unknown> {
  return {
    title: "rlpipe cost report",
    description: "rlpipe cost --format json: a whole run's estimated cost (version 1). docs/cost.md explains every field.",
    ...z.toJSONSchema(CostReportSchema, { unrepresentable: "any" }),
  };
}
