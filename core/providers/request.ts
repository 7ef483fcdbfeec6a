// What a deploy sends, computed purely from the plan: the provider request (a JSON body or a script), where the
// launch bundle goes, and which fields rest on unverified facts. The job name is derived from the request itself,
// so a repeated or retried deploy of the same request finds the job it already made.
import type { RecipeIssue } from "../errors.js";
import { canonicalJson, sha256 } from "../recipe/load.js";
import type { Provider, Recipe } from "../recipe/schema.js";
import type { StoragePlan } from "../render/storage.js";

/** A request field whose value rests on an inference rather than a documented API (see the provider reference). */
export interface UnverifiedField {
  /** Path in the request body, e.g. "TrainingMode" or "ResourceConfigInfos[0].Role". */
  readonly path: string;
  readonly value: unknown;
  readonly why: string;
  /** Recipe field that overrides it, e.g. "targets.tione.trainingMode". */
  readonly override?: string;
}

/** Where the launch bundle is put before the job starts. */
export interface BundleUpload {
  /** Object-store URI (obs://, cos://, s3://), a Ray package URI (gcs://_ray_pkg_….zip), or a directory. */
  readonly to: string;
  /** The directory the job sees the bundle in. */
  readonly mountedAt?: string;
}

export interface ProviderRequest {
  readonly provider: Provider;
  /** The API call, e.g. "POST /v2/{project_id}/training-jobs", "tione:CreateTrainingTask", "POST /api/jobs/", "sbatch". */
  readonly api: string;
  /** The exact body sent (for script-based providers: the script and its options). */
  readonly body: unknown;
  readonly bundle?: BundleUpload;
  readonly unverified: readonly UnverifiedField[];
}

/** The parts of a plan a request builder reads (everything except the request and the name derived from it). */
export interface RequestInput {
  readonly recipe: Recipe;
  readonly provider: Provider;
  readonly jobName: string;
  /** sha256 over the bundle's files (paths, modes, contents): content-addressed upload locations. */
  readonly bundleDigest: string;
  readonly workDir: string;
  readonly resources: { readonly nodes: number; readonly devicesPerNode: number; readonly accelerator: string };
  /** Secrets' environment variable names: the job gets them from the platform, never from the request. */
  readonly secretEnvs: readonly string[];
  /** How checkpoints and metrics persist (ModelArts output channels, TI-ONE mount, sidecar), when configured. */
  readonly storage?: StoragePlan;
}

/** Builds one provider's request; reports problems (missing target fields…) as recipe issues with paths. */
export type RequestBuilder = (input: RequestInput, issues: RecipeIssue[]) => ProviderRequest;

/** Stands in for the job name while the name itself is derived from the request. */
export const JOB_NAME_PLACEHOLDER = "rlpipe-job-name-placeholder";

/** `<slug>-<hash8>`: at most 49 characters of [a-z0-9-], valid as a ModelArts, TI-ONE, Ray and Slurm job name. */
export function jobNameFor(recipeName: string, provider: Provider, draft: unknown): string {
  const slug = recipeName.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/-{2,}/g, "-").replace(/^-+|-+$/g, "").slice(0, 40).replace(/-+$/, "") || "rlpipe";
  return `${slug}-${sha256(canonicalJson({ provider, draft })).slice(0, 8)}`;
}

/** The name of run `attempt` of a job: the first keeps the base name, later ones (deploy --new) add -r<attempt>. */
export function attemptName(base: string, attempt = 1): string {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a positive integer, got ${attempt}`);
  return attempt === 1 ? base : `${base}-r${attempt}`;
}

/**
 * Build the request twice: once with a placeholder name to derive the name, once with the name (with the
 * attempt suffix for a re-run).
 */
export function buildNamedRequest(build: RequestBuilder, input: Omit<RequestInput, "jobName">, issues: RecipeIssue[], attempt = 1): { jobName: string; request: ProviderRequest } {
  const scratch: RecipeIssue[] = [];
  const draft = build({ ...input, jobName: JOB_NAME_PLACEHOLDER }, scratch);
  const jobName = attemptName(jobNameFor(input.recipe.metadata.name, input.provider, { request: draft, bundleDigest: input.bundleDigest }), attempt);
  const request = build({ ...input, jobName }, issues);
  return { jobName, request };
}
