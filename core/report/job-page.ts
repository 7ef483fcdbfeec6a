// The run's page as the job's sync sidecar writes it into the run's store (issue 25 item 2). Inside the job there
// is no run record and no provider credential: the page holds what the sidecar has — the metrics and checkpoints it
// syncs, the run name, the recipe facts launch.sh was rendered with — and says plainly what it cannot know.
import type { Readout, RunPageData, RunPageOutputs } from "./run-page-data.js";

export interface JobPageFacts {
  /** The job's run name ($RLPIPE_RUN): its stages are the runs `<run>.<stage>` in the store. */
  readonly run: string;
  readonly provider: string;
  readonly recipe: { readonly name: string; readonly hash: string };
  readonly outputs: Readout<RunPageOutputs>;
  /** ISO 8601: when the sidecar gathered the page. */
  readonly generatedAt: string;
}

const NOT_IN_JOB = "not known inside the job";

export function jobPageData(f: JobPageFacts): RunPageData {
  const ask = `the job's sync sidecar wrote this page and holds no ${f.provider} credentials; rlpipe status ${f.run} (or rlpipe report ${f.run}) asks ${f.provider}`;
  return {
    schema: "rlpipe.run-page", version: 1, generatedAt: f.generatedAt,
    run: f.run, provider: f.provider, jobId: `ID ${NOT_IN_JOB}`,
    recipe: { name: f.recipe.name, file: "recipe file not known inside the job", hash: f.recipe.hash },
    submittedAt: NOT_IN_JOB,
    writtenBy: "job",
    status: { ok: false, why: `provider phase ${NOT_IN_JOB}: ${ask}` },
    outputs: f.outputs,
    cost: { ok: false, why: `${NOT_IN_JOB}: the job's bundle carries no estimate and the job cannot read its billing; rlpipe cost --run ${f.run} compares the cost so far with the estimate recorded at deploy` },
    logs: { ok: false, why: `${NOT_IN_JOB}: the provider keeps the job's log; rlpipe logs ${f.run} reads it` },
  };
}
