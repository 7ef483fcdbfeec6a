// The trigger reconcile of `rlpipe functions deploy` settles against listings shaped the way the services shape them
// (issue 33 item 2): fields the service adds at any depth (SCF's NetConfig.ExtranetUrl and bucketUrl, FunctionGraph's
// func_info.function_urn and api_name), arrays in another order, numbers as their decimal text, triggers the service
// names itself. A property test over seeded random listings: at most one change per trigger on a first deploy and
// none on a second. Next to it, the controls that could prove the comparison too loose or the loop unbounded: a real
// change (another path, another event) is still a change, and a service that keeps a field in a form rlpipe cannot
// match, or never lists what was created, ends the deploy after one change with an error naming the trigger and field.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { configDifference, type DeployedTrigger, planTriggers, type TriggerSpec } from "../core/packaging/triggers.js";
import { RlpipeError } from "../core/errors.js";
import type { DeployedFunction, FunctionsApi, TriggersApi } from "../adapters/providers/functions-api.js";
import { reconcileTriggers } from "../bin/commands/functions-triggers.js";
import type { Io } from "../bin/io.js";

/** mulberry32: the same listings on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const FN: DeployedFunction = { name: "rlpipe-reward", id: "urn:fss:cn-north-4:0a1b:function:default:rlpipe-reward:latest" };

/** What rlpipe sets, per platform (the shapes of functiongraph-triggers.ts and scf-triggers.ts). */
function specs(pathSuffix: string): TriggerSpec[] {
  return [
    { type: "APIG", key: "rlpipe_reward", label: "APIG ANY /rlpipe", config: { name: "rlpipe_reward", group_id: "g1", env_id: "DEFAULT_ENVIRONMENT_RELEASE_ID", env_name: "RELEASE", auth: "NONE", protocol: "HTTPS", req_method: "ANY", path: `/rlpipe${pathSuffix}`, match_mode: "SWA", type: 1, backend_type: "FUNCTION", func_info: { timeout: 60000 } } },
    { type: "OBS", key: "recipes-bucket", label: "OBS recipes", config: { name: "rlpipe-console-recipes", bucket: "recipes-bucket", events: ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"], prefix: "recipes/" } },
    { type: "http", key: "function URL", label: "function URL", config: { AuthType: "NONE", NetConfig: { EnableIntranet: false, EnableExtranet: true } } },
    { type: "cos", key: "b-1250000000.cos.ap-guangzhou.myqcloud.com", label: "cos recipes", config: { event: "cos:ObjectCreated:*", filter: { Prefix: "recipes/", Suffix: "" } } },
  ];
}

type Shape = (config: Readonly<Record<string, unknown>>, rnd: () => number, depth?: number) => Record<string, unknown>;

/** A configuration as a service might list it: extra fields at every depth, arrays reordered, numbers as text. */
const served: Shape = (config, rnd, depth = 0) => {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(config);
  if (rnd() < 0.5) keys.reverse();
  for (const k of keys) {
    const v = config[k];
    if (Array.isArray(v)) out[k] = rnd() < 0.5 ? [...v].reverse() : [...v];
    else if (v !== null && typeof v === "object") out[k] = served(v as Record<string, unknown>, rnd, depth + 1);
    else if (typeof v === "number" && rnd() < 0.3) out[k] = String(v);
    else out[k] = v;
  }
  const added = Math.floor(rnd() * 3);
  for (let i = 0; i < added; i++) out[`service_added_${depth}_${i}`] = rnd() < 0.5 ? `urn:made:${Math.floor(rnd() * 1e6)}` : { nested: Math.floor(rnd() * 100) };
  return out;
};

interface Service extends TriggersApi { readonly writes: string[]; readonly listings: number }

/** An in-memory platform whose listings are what `shape` makes of each stored trigger; ids (and SCF URL names) are its own. */
function service(rnd: () => number, shape: Shape, opts: { canUpdate?: boolean; listsCreated?: boolean; initial?: DeployedTrigger[] } = {}): Service {
  const stored = new Map<string, { type: string; key: string; config: Record<string, unknown> }>();
  for (const d of opts.initial ?? []) stored.set(d.id, { type: d.type, key: d.key ?? "", config: { ...d.config } });
  let n = 0;
  const writes: string[] = [];
  let listings = 0;
  return {
    writes,
    get listings() { return listings; },
    spec: () => { throw new Error("not used"); },
    async list() {
      listings++;
      return [...stored].map(([id, t]) => ({ id, type: t.type, key: t.key, config: shape(t.config, rnd) }));
    },
    async create(_fn, spec) {
      writes.push(`create ${spec.label}`);
      if (opts.listsCreated !== false) stored.set(`svc-${++n}-${Math.floor(rnd() * 1e9)}`, { type: spec.type, key: spec.key, config: { ...spec.config } });
    },
    canUpdate: (type) => opts.canUpdate ?? (type === "http"),
    async update(_fn, deployed, spec) {
      writes.push(`update ${spec.label}`);
      stored.set(deployed.id, { type: spec.type, key: spec.key, config: { ...spec.config } });
    },
    async delete(_fn, deployed) {
      writes.push(`delete ${deployed.type} ${deployed.id}`);
      stored.delete(deployed.id);
    },
    checkRole: async () => ({ exists: true }),
  };
}

const api = (triggers: TriggersApi): FunctionsApi => ({ platform: "functiongraph", endpoint: "loopback", triggers } as unknown as FunctionsApi);
const quietIo = (): Io & { readonly lines: string[] } => {
  const lines: string[] = [];
  return { lines, err: (s: string) => { lines.push(s); }, out: (s: string) => { lines.push(s); } } as unknown as Io & { readonly lines: string[] };
};

describe("trigger reconcile against service-shaped listings (issue 33)", () => {
  it("configDifference: what the services add or reorder is no difference; a changed value is, named by its field", () => {
    const want = { AuthType: "NONE", NetConfig: { EnableIntranet: false, EnableExtranet: true } };
    assert.equal(configDifference(want, { NetConfig: { EnableExtranet: true, EnableIntranet: false, ExtranetUrl: "https://x.tencentscf.com", IntranetUrl: "" }, AuthType: "NONE" }), undefined);
    assert.equal(configDifference({ events: ["a", "b"], n: 60000 }, { events: ["b", "a"], n: "60000", bucketUrl: "u" }), undefined);
    assert.match(configDifference(want, { AuthType: "NONE", NetConfig: { EnableIntranet: false, EnableExtranet: false } }) ?? "", /^NetConfig\.EnableExtranet: set true, listed false$/);
    assert.match(configDifference({ path: "/rlpipe" }, { path: "/rlpipe2" }) ?? "", /^path: set "\/rlpipe", listed "\/rlpipe2"$/);
    assert.match(configDifference({ events: ["a", "b"] }, { events: ["a"] }) ?? "", /^events:/);
    assert.match(configDifference({ events: ["a"] }, { events: ["a", "a"] }) ?? "", /^events:/, "an extra item in an array rlpipe set is a difference");
    assert.match(configDifference({ func_info: { timeout: 60000 } }, { func_info: { timeout: 30000, function_urn: "urn" } }) ?? "", /^func_info\.timeout: set 60000, listed 30000$/);
    assert.match(configDifference({ type: 1 }, { type: "1.5" }) ?? "", /^type:/);
    assert.match(configDifference({ name: "x" }, {}) ?? "", /^name: set "x", listed nothing$/);
  });

  it("property: over 200 seeded listings, a first deploy makes at most one change per trigger and a second deploy none", async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rnd = prng(seed);
      const svc = service(rnd, served);
      const first = await reconcileTriggers(quietIo(), api(svc), FN, specs(""));
      const perTrigger = new Map<string, number>();
      for (const w of svc.writes) perTrigger.set(w, (perTrigger.get(w) ?? 0) + 1);
      assert.deepEqual(svc.writes.sort(), specs("").map((s) => `create ${s.label}`).sort(), `seed ${seed}: one create per trigger`);
      assert.ok(svc.listings <= 2, `seed ${seed}: ${svc.listings} listings`);
      assert.deepEqual(first.map((r) => r.action), ["created", "created", "created", "created"]);
      const before = svc.writes.length;
      const second = await reconcileTriggers(quietIo(), api(svc), FN, specs(""));
      assert.deepEqual(svc.writes.slice(before), [], `seed ${seed}: a second deploy writes nothing`);
      assert.deepEqual(second.map((r) => r.action), ["unchanged", "unchanged", "unchanged", "unchanged"]);
      // A real change of what rlpipe sets is still seen, and made once.
      const at = svc.writes.length;
      const third = await reconcileTriggers(quietIo(), api(svc), FN, specs("-v2"));
      assert.deepEqual(third.map((r) => r.action), ["replaced", "unchanged", "unchanged", "unchanged"], `seed ${seed}`);
      assert.equal(svc.writes.slice(at).filter((w) => w.startsWith("create")).length, 1, `seed ${seed}: ${svc.writes.slice(at).join(", ")}`);
    }
  });

  it("a function URL the service (or the console) named is found by its type and updated in place, not created again", async () => {
    const spec = specs("")[2]!;
    const plan = planTriggers([spec], [{ id: "console-made-url", type: "http", key: "function URL", config: { AuthType: "CAM", NetConfig: { EnableIntranet: false, EnableExtranet: true, ExtranetUrl: "https://u" } } }], (t) => t === "http");
    assert.deepEqual(plan.map((a) => a.kind), ["update"]);
    assert.equal(plan[0]!.kind === "update" ? plan[0]!.difference : "", `AuthType: set "NONE", listed "CAM"`);
  });

  it("a service that keeps a field in a form rlpipe cannot match: one change, then an error naming the trigger and the field (no loop)", async () => {
    const lower: Shape = (config) => ({ ...config, ...(typeof config["path"] === "string" ? { path: config["path"].toUpperCase() } : {}) });
    const svc = service(prng(7), lower, { canUpdate: true });
    const err = await reconcileTriggers(quietIo(), api(svc), FN, specs("")).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof RlpipeError, String(err));
    assert.equal(err.code, "trigger_not_settled");
    assert.match(err.message, /APIG ANY \/rlpipe of rlpipe-reward does not settle.*path: set "\/rlpipe", listed "\/RLPIPE"/);
    assert.equal(svc.writes.filter((w) => w.includes("APIG")).length, 1, svc.writes.join(", "));
    assert.ok(svc.listings <= 3);
  });

  it("a service that never lists what was created: bounded passes and a clear error, never a stream of creates", async () => {
    const svc = service(prng(9), served, { listsCreated: false });
    const err = await reconcileTriggers(quietIo(), api(svc), FN, specs("")).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof RlpipeError && err.code === "trigger_not_settled", String(err));
    assert.match(err.message, /not listed/);
    assert.equal(svc.writes.length, 4, svc.writes.join(", "));
  });
});
