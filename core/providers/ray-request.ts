// The Ray request: the exact body of `POST /api/jobs/` (Ray Jobs REST API). The launch bundle travels as a
// content-addressed Ray package (gcs://_ray_pkg_<hash>.zip, uploaded by the adapter before submitting) that Ray
// unpacks as the job's working_dir; the entrypoint runs launch.sh there. submission_id is the job name, so a
// repeated submit is refused by Ray and a retried deploy finds the job it already made. Pure.
import { z } from "zod";
import type { RecipeIssue, RecipePath } from "../errors.js";
import { canonicalJson, sha256 } from "../recipe/load.js";
import type { Targets } from "../recipe/schema.js";
import { parseEndpoint } from "../util/endpoint.js";
import type { ProviderRequest, RequestBuilder, RequestInput } from "./request.js";

export const RAY_SUBMIT_API = "POST /api/jobs/";

/** Bump when the zip layout changes, so a package name never stands for two different archives. */
const PACKAGE_FORMAT = "rlpipe-bundle-zip/1";

/** `_ray_pkg_<40 hex>.zip`: changes iff the bundle (paths, modes, contents) or the zip format changes. */
export function rayPackageName(bundleDigest: string): string {
  return `_ray_pkg_${sha256(`${PACKAGE_FORMAT}\n${bundleDigest}`).slice(0, 40)}.zip`;
}

export function rayPackageUri(bundleDigest: string): string {
  return `gcs://${rayPackageName(bundleDigest)}`;
}

/** Metadata keys rlpipe sets on every job (a recipe may not set them). */
export const RAY_METADATA_RUN = "rlpipe_run";
const RESERVED_METADATA = /^rlpipe_/;

/**
 * Set for the entrypoint (launch.sh and everything it starts):
 * - RAY_OVERRIDE_JOB_RUNTIME_ENV: verl calls ray.init(runtime_env=…) inside the job; without this Ray refuses to
 *   merge it with the job's runtime_env when both set the same field or variable.
 * - PYTHONUNBUFFERED: stage output reaches the driver log (and `rlpipe logs -f`) as it is printed.
 * RLPIPE_RUN (the job name) is added per job.
 */
const LAUNCH_ENV: Readonly<Record<string, string>> = { PYTHONUNBUFFERED: "1", RAY_OVERRIDE_JOB_RUNTIME_ENV: "1" };

/** What plan.request.body holds for provider ray (the adapter parses it back with this schema). */
export const RaySubmitBody = z.strictObject({
  entrypoint: z.string().min(1),
  submission_id: z.string().min(1),
  runtime_env: z.strictObject({
    working_dir: z.string().regex(/^gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip$/),
    env_vars: z.record(z.string(), z.string()),
    pip: z.array(z.string()).optional(),
  }),
  metadata: z.record(z.string(), z.string()),
  entrypoint_num_cpus: z.number().positive().optional(),
  entrypoint_num_gpus: z.number().positive().optional(),
  entrypoint_memory: z.number().int().positive().optional(),
  entrypoint_resources: z.record(z.string(), z.number().positive()).optional(),
});
export type RaySubmitBody = z.infer<typeof RaySubmitBody>;

const TARGET = ["targets", "ray"] as const;

const sortedRecord = <T>(entries: Iterable<readonly [string, T]>): Record<string, T> =>
  Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

export const buildRayRequest: RequestBuilder = (input: RequestInput, issues: RecipeIssue[]): ProviderRequest => {
  const t: NonNullable<Targets["ray"]> = input.recipe.targets?.ray ?? {};
  const push = (severity: "error" | "warning", path: RecipePath, code: string, message: string, hint?: string) =>
    issues.push({ severity, code, path, message, ...(hint === undefined ? {} : { hint }) });

  if (t.address !== undefined) {
    const parsed = parseEndpoint(t.address);
    if ("problem" in parsed) {
      push("error", [...TARGET, "address"], parsed.problem.code, `targets.ray.address: ${parsed.problem.message}`,
        parsed.problem.hint ?? "the Ray dashboard URL, e.g. http://127.0.0.1:8265 (not the GCS address host:6379 or a ray:// client address)");
    }
  }
  if (t.runtimeEnv?.workingDir !== undefined) {
    push("warning", [...TARGET, "runtimeEnv", "workingDir"], "ray_working_dir_ignored",
      "rlpipe ships the launch bundle as the Ray job's working_dir, so runtimeEnv.workingDir is not sent",
      "set targets.ray.workDir (or runtime.workDir): launch.sh copies its files there and runs the stages in it");
  }

  // Ray workers on an existing cluster inherit the cluster's environment plus env_vars, never launch.sh's
  // exports: plain runtime.env values go along; ones that reference other variables cannot be rebuilt here.
  const env = new Map<string, string>(Object.entries(LAUNCH_ENV));
  const secret = new Set(input.secretEnvs);
  const notCarried: string[] = [];
  for (const [k, v] of Object.entries(input.recipe.runtime.env ?? {})) {
    if (secret.has(k)) continue;
    if (v.includes("$")) notCarried.push(k);
    else env.set(k, v);
  }
  if (notCarried.length > 0 || (input.recipe.runtime.envPresets ?? []).length > 0) {
    const what = [...notCarried.sort(), ...(input.recipe.runtime.envPresets ?? []).map((p) => `preset ${p}`)].join(", ");
    push("warning", notCarried.length > 0 ? ["runtime", "env"] : ["runtime", "envPresets"], "ray_env_driver_only",
      `${what}: exported by launch.sh for the job's driver only; Ray workers on an existing cluster do not see them`,
      "set the values in targets.ray.runtimeEnv.envVars (Ray expands ${VAR}) or in the cluster's environment before ray start");
  }
  for (const [k, v] of Object.entries(t.runtimeEnv?.envVars ?? {})) {
    if (k === "RLPIPE_RUN") {
      push("error", [...TARGET, "runtimeEnv", "envVars", k], "reserved_env", "RLPIPE_RUN is set by rlpipe to the run's name (stages key their outputs by it)");
      continue;
    }
    if (secret.has(k)) {
      push("error", [...TARGET, "runtimeEnv", "envVars", k], "secret_in_recipe", `${k} is a secret's environment variable; its value must not be written in the recipe`,
        "export it in the Ray cluster's environment before ray start: Ray jobs inherit it, and rlpipe never sends it");
      continue;
    }
    env.set(k, v);
  }
  // Stages key their store outputs by the run's name (<run>.<stage>), as on every provider.
  env.set("RLPIPE_RUN", input.jobName);
  if (input.secretEnvs.length > 0) {
    push("warning", ["secrets"], "ray_secrets_from_cluster",
      `the Ray job reads ${[...input.secretEnvs].sort().join(", ")} from the cluster's environment: rlpipe never puts secrets in a Ray request (job details show runtime_env to anyone with dashboard access)`,
      "export them on every Ray node before ray start");
  }

  const metadata = new Map<string, string>();
  for (const [k, v] of Object.entries(t.metadata ?? {})) {
    if (RESERVED_METADATA.test(k)) push("error", [...TARGET, "metadata", k], "reserved_metadata_key", `metadata key ${k} is reserved for rlpipe`, "use a key that does not start with rlpipe_");
    else metadata.set(k, v);
  }
  metadata.set(RAY_METADATA_RUN, input.jobName);
  metadata.set("rlpipe_recipe", input.recipe.metadata.name);
  metadata.set("rlpipe_recipe_hash", sha256(canonicalJson(input.recipe)));
  metadata.set("rlpipe_bundle", input.bundleDigest);

  const workingDir = rayPackageUri(input.bundleDigest);
  const pip = t.runtimeEnv?.pip;
  const body: RaySubmitBody = {
    entrypoint: "bash launch.sh",
    submission_id: input.jobName,
    runtime_env: {
      working_dir: workingDir,
      env_vars: sortedRecord(env),
      ...(pip === undefined || pip.length === 0 ? {} : { pip: [...pip] }),
    },
    metadata: sortedRecord(metadata),
    ...(t.entrypointNumCpus === undefined ? {} : { entrypoint_num_cpus: t.entrypointNumCpus }),
    ...(t.entrypointNumGpus === undefined ? {} : { entrypoint_num_gpus: t.entrypointNumGpus }),
    ...(t.entrypointMemoryBytes === undefined ? {} : { entrypoint_memory: t.entrypointMemoryBytes }),
    ...(t.entrypointResources === undefined ? {} : { entrypoint_resources: sortedRecord(Object.entries(t.entrypointResources)) }),
  };
  return { provider: "ray", api: RAY_SUBMIT_API, body, bundle: { to: workingDir }, unverified: [] };
};
