// What the ModelArts fake takes as the truth about a request, from huaweicloudsdkmodelarts 3.1.219 (issue 33): the
// SDK's models (test/vendor-models/modelarts.json, checked by vendor-model.ts) plus the rules its docstrings state
// in prose, which the generated code does not encode. Each rule quotes the docstring it comes from.
import { type ModelProblem, checkModel } from "./vendor-model.js";

export interface RuleProblem {
  /** The field's wire path: "algorithm.boot_file". */
  readonly field: string;
  readonly message: string;
}

/** The first way `value` departs from SDK model `name` (unknown field, missing required field, wrong type, enum). */
export function modelArtsModelProblem(name: string, value: unknown): ModelProblem | undefined {
  return checkModel("modelarts", name, value);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/**
 * JobAlgorithm.local_code_dir: "必须为/home下的目录。 - v1兼容模式下，当前字段不生效。 - 当code_dir以file://为前缀时，当前字段不生效。
 * - 不支持配置成/home/ma-user/modelarts，/home/ma-user/modelarts-dev，/home/ma-user/infer以及它们底下的目录，也不支持配置成/home/ma-user".
 */
export const RESERVED_LOCAL_CODE_DIRS = ["/home/ma-user/modelarts", "/home/ma-user/modelarts-dev", "/home/ma-user/infer"] as const;

export function localCodeDirProblem(dir: string): string | undefined {
  const d = dir.replace(/\/+$/, "");
  if (!d.startsWith("/home/") || d.split("/").includes("..")) return "must be a directory under /home";
  if (d === "/home/ma-user") return "may not be /home/ma-user";
  const reserved = RESERVED_LOCAL_CODE_DIRS.find((r) => d === r || d.startsWith(`${r}/`));
  return reserved === undefined ? undefined : `may not be ${reserved} or a directory under it`;
}

/**
 * The pairings JobAlgorithm and JobEngine document:
 * - code_dir "应与boot_file一同出现", boot_file "应与code_dir一同出现" (each unless the algorithm is an id or a subscription);
 * - boot_file "训练作业的代码启动文件，需要在代码目录下" (e.g. code_dir "/usr/app/", boot_file "/usr/app/boot.py");
 * - subscription_id "应与item_version_id一同出现" and the reverse;
 * - JobEngine.engine_id "engine_id，engine_name+engine_version和image_url方式三选一"; engine_name/engine_version "如果已填写
 *   engine_id，则此参数无需填写"; install_sys_packages "只有填写了engine_name，engine_version，image_url参数时支持该设置";
 * - local_code_dir as above (not in effect "当code_dir以file://为前缀时").
 * The body has passed the JobAlgorithm model check (types are right).
 */
export function algorithmRuleProblem(alg: Record<string, unknown>): RuleProblem | undefined {
  const at = (f: string) => `algorithm.${f}`;
  const byId = given(alg["id"]) || given(alg["subscription_id"]);
  if (given(alg["subscription_id"]) !== given(alg["item_version_id"])) {
    const missing = given(alg["subscription_id"]) ? "item_version_id" : "subscription_id";
    return { field: at(missing), message: `${at(missing)} must be given with ${at(missing === "item_version_id" ? "subscription_id" : "item_version_id")}` };
  }
  const codeDir = alg["code_dir"] as string | undefined;
  const bootFile = alg["boot_file"] as string | undefined;
  if (!byId && (codeDir === undefined) !== (bootFile === undefined)) {
    const missing = codeDir === undefined ? "code_dir" : "boot_file";
    return { field: at(missing), message: `${at(missing)} must be given with ${at(missing === "code_dir" ? "boot_file" : "code_dir")} (code_dir 应与boot_file一同出现)` };
  }
  if (codeDir !== undefined && bootFile !== undefined) {
    const dir = codeDir.endsWith("/") ? codeDir : `${codeDir}/`;
    if (!bootFile.startsWith(dir) || bootFile.endsWith("/") || bootFile.length === dir.length) {
      return { field: at("boot_file"), message: `${at("boot_file")} must be a file in code_dir ${codeDir} (需要在代码目录下), got ${bootFile}` };
    }
  }
  const engine = alg["engine"];
  if (isObj(engine)) {
    const ways = [given(engine["engine_id"]), given(engine["engine_name"]) || given(engine["engine_version"]), given(engine["image_url"])].filter(Boolean).length;
    if (ways > 1) return { field: at("engine"), message: `${at("engine")}: engine_id, engine_name+engine_version and image_url are three ways, one of which is chosen (三选一)` };
    if (given(engine["engine_name"]) !== given(engine["engine_version"])) return { field: at("engine.engine_version"), message: `${at("engine")}: engine_name and engine_version go together` };
    if (given(engine["install_sys_packages"]) && given(engine["engine_id"])) return { field: at("engine.install_sys_packages"), message: `${at("engine.install_sys_packages")} is supported only with engine_name, engine_version or image_url` };
  }
  const local = alg["local_code_dir"] as string | undefined;
  if (local !== undefined && !(codeDir ?? "").startsWith("file://")) {
    const why = localCodeDirProblem(local);
    if (why !== undefined) return { field: at("local_code_dir"), message: `${at("local_code_dir")} ${why}, got ${local}` };
  }
  return undefined;
}
