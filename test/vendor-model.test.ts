// The fakes' source of truth (issue 33): test/vendor-models/*.json are extracted from the vendors' SDK packages by
// scripts/vendor-models.py, each naming its package and version, and checkModel finds what a request breaks in them.
// Checked here against facts read in the SDKs themselves (so a wrong extract, or a checker that lets anything through,
// fails): FunctionGraph's ApigTriggerFuncInfo requires timeout and its trigger_status enum is ACTIVE/DISABLED; SCF's
// CreateTriggerRequest has no field "Foo"; TI-ONE's EnvVar has IsPrivate.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkModel, vendorModels } from "./fakes/vendor-model.js";

describe("vendor models (test/vendor-models, from the SDK packages)", () => {
  it("each extract names the SDK package and version it came from", () => {
    for (const [service, pkg] of [["functiongraph", "huaweicloudsdkfunctiongraph"], ["iam", "huaweicloudsdkiam"], ["modelarts", "huaweicloudsdkmodelarts"], ["scf", "tencentcloud-sdk-python-scf"], ["cam", "tencentcloud-sdk-python-cam"], ["tione", "tencentcloud-sdk-python-tione"]] as const) {
      const m = vendorModels(service);
      assert.equal(m.sdk.package, pkg);
      assert.match(m.sdk.version, /^\d+\.\d+\.\d+$/);
      assert.equal(m.sdk.source, "PyPI");
    }
  });

  it("FunctionGraph: a trigger body the SDK takes passes; an unknown field, a wrong type, a missing required field or an enum outside fail with the field's path", () => {
    const ok = { trigger_type_code: "APIG", trigger_status: "ACTIVE", event_data: { name: "rlpipe_reward", group_id: "g", env_id: "e", auth: "NONE", match_mode: "SWA", type: 1, func_info: { timeout: 60000 } } };
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", ok), undefined);
    assert.deepEqual(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", { ...ok, event_data: { ...ok.event_data, colour: "red" } })?.field, "event_data.colour");
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", { ...ok, event_data: { ...ok.event_data, type: "1" } })?.kind, "wrong_type");
    assert.deepEqual(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", { ...ok, event_data: { ...ok.event_data, func_info: {} } }), { kind: "missing_field", field: "event_data.func_info.timeout", message: "event_data.func_info.timeout is required (ApigTriggerFuncInfo)" });
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", { ...ok, trigger_status: "ON" })?.kind, "not_in_enum");
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", { ...ok, trigger_type_code: "DEDICATEDGATEWAY" })?.kind, "not_in_enum", "not in this SDK release's enum");
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", { ...ok, trigger_type_code: "DEDICATEDGATEWAY" }, { extraEnum: { trigger_type_code: ["DEDICATEDGATEWAY"] } }), undefined);
    const obs = { trigger_type_code: "OBS", event_data: { bucket: "b", events: ["s3:ObjectCreated:*"] } };
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", obs)?.kind, "not_in_enum");
    assert.equal(checkModel("functiongraph", "CreateFunctionTriggerRequestBody", obs, { extraEnum: { "event_data.events[]": ["s3:ObjectCreated:*"] } }), undefined);
  });

  it("SCF and TI-ONE: unknown fields and wrong types are found; TI-ONE's EnvVar carries IsPrivate", () => {
    assert.equal(checkModel("scf", "CreateTriggerRequest", { FunctionName: "f", TriggerName: "t", Type: "http", TriggerDesc: "{}" }), undefined);
    assert.deepEqual(checkModel("scf", "CreateTriggerRequest", { FunctionName: "f", Foo: 1 })?.field, "Foo");
    assert.equal(checkModel("scf", "ListTriggersRequest", { FunctionName: "f", Limit: "100" })?.kind, "wrong_type");
    assert.ok("IsPrivate" in vendorModels("tione").models["EnvVar"]!.fields);
  });
});
