// TI-ONE's request and reply models for the loopback fake (issue 33). Fields, types and enums are Tencent's own
// (test/vendor-models/tione.json, extracted from tencentcloud-sdk-python-tione 3.1.191, checked by checkModel); what
// that package does not encode, which fields are required, is listed here with its source. A problem becomes the
// error TI-ONE documents for it (tione errorcodes.py): UnknownParameter, MissingParameter, InvalidParameter (a wrong
// type), InvalidParameterValue (a value outside the documented ones).
import { type ModelProblem, checkModel, vendorModels } from "./vendor-model.js";

/**
 * Required fields per model. The Python package leaves required-ness out (tione.json: required null everywhere), so
 * these are the non-optional members (`Name: string`, not `Tags?: Array<Tag>`) of the same models in Tencent's Node
 * SDK, generated from the API reference's 是否必填 column: TencentCloud/tencentcloud-sdk-nodejs,
 * src/services/tione/v20211111/tione_models.ts at release 4.1.298 (2026-08-20; identical for these models at 4.1.191).
 * Models the fake serves and the models nested in them; a model not listed has no required field there.
 */
export const TIONE_REQUIRED: Readonly<Record<string, readonly string[]>> = {
  CreateTrainingTaskRequest: ["Name", "ChargeType", "ResourceConfigInfos"],
  ResourceConfigInfo: ["Role"],
  CosPathInfo: ["Bucket", "Region", "Paths"],
  CFSConfig: ["Id", "Path"],
  HDFSConfig: ["Id", "Path"],
  DataSetConfig: ["Id"],
  CBSConfig: ["VolumeSizeInGB"],
  LocalDisk: ["InstanceId"],
  CodeRepoConfig: ["Id", "TargetPath"],
  ImageInfo: ["ImageType", "ImageUrl"],
  LogConfig: ["LogsetId", "TopicId"],
  Tag: ["TagKey", "TagValue"],
  DescribeTrainingTaskRequest: ["Id"],
  StopTrainingTaskRequest: ["Id"],
  DeleteTrainingTaskRequest: ["Id"],
  DescribeLogsRequest: ["Service"],
  DescribeBillingSpecsRequest: ["ChargeType"],
  DescribeBillingSpecsPriceRequest: ["SpecsParam"],
  SpecUnit: ["SpecName", "SpecCount"],
};

/** An error TI-ONE answers: {"Response":{"Error":{"Code","Message"}}}. */
export interface TioneRefusal {
  readonly code: string;
  readonly message: string;
}

interface Operation { readonly request: string; readonly response: string }

/** The SDK's actions (tione.json operations): each action's request and reply model. */
export function tioneOperation(action: string): Operation | undefined {
  const ops = (vendorModels("tione") as unknown as { operations: Readonly<Record<string, Operation>> }).operations;
  return Object.hasOwn(ops, action) ? ops[action] : undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The first required field missing at any depth (after checkModel: the types are known to be right). */
function missingRequired(type: string, value: unknown, at: string): ModelProblem | undefined {
  const array = /^array<(.+)>$/.exec(type);
  if (array !== null) {
    if (!Array.isArray(value)) return undefined;
    for (let i = 0; i < value.length; i++) {
      const p = missingRequired(array[1]!, value[i], `${at}[${i}]`);
      if (p !== undefined) return p;
    }
    return undefined;
  }
  const model = vendorModels("tione").models[type];
  if (model === undefined || !isRecord(value)) return undefined;
  const path = (k: string) => (at === "" ? k : `${at}.${k}`);
  for (const k of TIONE_REQUIRED[type] ?? []) {
    if (value[k] === undefined || value[k] === null) return { kind: "missing_field", field: path(k), message: `${path(k)} is required (${type})` };
  }
  for (const [k, f] of Object.entries(model.fields)) {
    if (value[k] === undefined || value[k] === null) continue;
    const p = missingRequired(f.type, value[k], path(k));
    if (p !== undefined) return p;
  }
  return undefined;
}

/** A model problem as TI-ONE's error. */
export function refusalOf(p: ModelProblem): TioneRefusal {
  switch (p.kind) {
    case "unknown_field": return { code: "UnknownParameter", message: `The parameter \`${p.field}\` is not recognized.` };
    case "missing_field": return { code: "MissingParameter", message: `The request is missing a required parameter \`${p.field}\`.` };
    case "wrong_type": return { code: "InvalidParameter", message: `The parameter \`${p.field}\` has the wrong type: ${p.message}.` };
    case "not_in_enum": return { code: "InvalidParameterValue", message: `The value of parameter \`${p.field}\` is invalid: ${p.message}.` };
  }
}

/** Where `params` departs from the action's request model (fields, types, enums, required fields), as TI-ONE's error. */
export function checkTioneRequest(action: string, params: unknown): TioneRefusal | undefined {
  const op = tioneOperation(action);
  if (op === undefined) return { code: "InvalidAction", message: `The action ${action} does not exist.` };
  const p = checkModel("tione", op.request, params) ?? missingRequired(op.request, params, "");
  return p === undefined ? undefined : refusalOf(p);
}

/**
 * Where the fake's own reply departs from the action's reply model (a field the service never returns, such as a
 * request field echoed back, a wrong type, a status outside the documented ones): a bug in the fake.
 */
export function checkTioneReply(action: string, reply: Record<string, unknown>): ModelProblem | undefined {
  const op = tioneOperation(action);
  return op === undefined ? undefined : checkModel("tione", op.response, reply);
}
