// rlpipe eval <data.jsonl>: score each row's response against its test cases through the reward function
// (rlpipe serve's /v1/rewards, or the local sandbox in-process). With reference solutions it is a preflight of a
// problem set: every row must pass, or a test case is wrong.
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { RUN_NAME } from "../../core/checkpoints.js";
import { RlpipeError } from "../../core/errors.js";
import { USAGE_RUN_HEADER } from "../../core/run-usage.js";
import { type Scored, type EvalRow, parseEvalRows, summarize } from "../../core/score.js";
import { backoffMs, sleep } from "../../core/util/retry.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import { MetricsSync } from "../../adapters/storage/metrics-sync.js";
import { openStore } from "../../adapters/storage/store.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";

interface Scorer {
  score(rows: readonly EvalRow[]): Promise<Scored[]>;
  close(): Promise<void>;
}

export async function runEval(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv], allowPositionals: true, strict: true,
    options: COMMANDS.eval.options,
  });
  if (values.help) { io.out(formatHelp("eval")); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe eval takes exactly one data file");
  const file = positionals[0]!;
  if (!/\.jsonl?$/i.test(file)) throw usage(`${file}: rlpipe eval reads JSON lines (.jsonl); convert parquet with pandas (df.to_json(path, orient="records", lines=True))`);
  const batch = Number(values.batch);
  if (!Number.isInteger(batch) || batch < 1 || batch > 4096) throw usage(`--batch must be an integer in 1..4096, got ${values.batch}`);
  const minPassRate = values["min-pass-rate"] === undefined ? undefined : Number(values["min-pass-rate"]);
  if (minPassRate !== undefined && !(minPassRate >= 0 && minPassRate <= 1)) throw usage(`--min-pass-rate must be between 0 and 1, got ${values["min-pass-rate"]}`);
  if (values.sandbox !== undefined && values.sandbox !== "local") throw usage(`--sandbox ${values.sandbox}: rlpipe eval runs only the local sandbox in-process; point --reward-url at rlpipe serve for the others`);
  const stage = values.stage ?? "eval";
  if (!/^[A-Za-z0-9_.-]+$/.test(stage)) throw usage(`invalid --stage ${JSON.stringify(stage)}`);
  const run = values.run ?? (process.env["RLPIPE_RUN"] === undefined ? undefined : `${process.env["RLPIPE_RUN"]}.${stage}`);
  if (values.store !== undefined && (run === undefined || !RUN_NAME.test(run))) {
    throw usage(run === undefined ? "--store needs --run NAME (or RLPIPE_RUN in the environment)" : `invalid run name ${JSON.stringify(run)}`);
  }

  let text: string;
  try { text = readFileSync(file, "utf8"); } catch (e) {
    throw new RlpipeError("data_unreadable", `${file}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`, { exitCode: 2 });
  }
  const rows = parseEvalRows(text, file, values["response-field"]);

  const url = values.sandbox === "local" ? undefined : values["reward-url"] ?? process.env["RLPIPE_REWARD_URL"];
  const token = values["token-env"] === undefined ? undefined : process.env[values["token-env"]];
  if (values["token-env"] !== undefined && (token === undefined || token === "")) throw usage(`--token-env ${values["token-env"]}: the variable is not set`);
  // The function counts the job's usage under its run (rlpipe cost --run): the job's name, as the reward shim sends it.
  const jobRun = process.env["RLPIPE_RUN"];
  const scorer = url === undefined ? await inProcessScorer() : httpScorer(url, token, jobRun !== undefined && RUN_NAME.test(jobRun) ? jobRun : undefined);
  const started = Date.now();
  const scored: Scored[] = [];
  try {
    for (let i = 0; i < rows.length; i += batch) {
      scored.push(...await scorer.score(rows.slice(i, i + batch)));
      if (!values.json && rows.length > batch) io.err(`[rlpipe eval] ${Math.min(rows.length, i + batch)}/${rows.length} rows`);
    }
  } finally {
    await scorer.close();
  }
  const summary = summarize(scored, { file, responseField: values["response-field"], scorer: url === undefined ? "local sandbox (in-process)" : url, wallMs: Date.now() - started });
  const result = { ...summary, rows: scored };
  const resultJson = `${JSON.stringify(result, null, 2)}\n`;
  if (values.out !== undefined) writeAtomic(values.out, resultJson);
  const metricsLine = `${JSON.stringify({ step: 0, data: summary.metrics })}\n`;
  if (values["metrics-file"] !== undefined) {
    mkdirSync(dirname(resolve(values["metrics-file"])), { recursive: true });
    appendFileSync(values["metrics-file"], metricsLine);
  }
  if (values.store !== undefined) {
    const store = await openStore(values.store.includes("://") ? values.store : resolve(values.store));
    try {
      await store.putBytes(`${run!}/artifacts/${stage}.json`, resultJson, { contentType: "application/json" });
      if (values["metrics-file"] !== undefined) await new MetricsSync(store, run!).syncFile(resolve(values["metrics-file"]));
    } finally {
      await store.close();
    }
  }

  if (values.json) io.out(JSON.stringify(summary));
  else {
    io.out(`rlpipe eval: ${summary.rows} rows from ${file}: ${summary.passed} passed (pass rate ${(summary.passRate * 100).toFixed(1)}%), mean score ${summary.meanScore.toFixed(3)}`);
    for (const [status, n] of Object.entries(summary.byStatus)) if (status !== "ok") io.out(`  ${status}: ${n}`);
    // "ok" is the sandbox's status (it ran), not a verdict: a row that ran and failed its cases says "failed".
    const verdict = (r: (typeof scored)[number]) => (r.status === "ok" ? (r.passed === r.total ? "passed" : "failed") : r.status);
    for (const r of scored.filter((x) => x.score < 1).slice(0, 10)) io.out(`  ${file}:${r.line} ${r.id ?? ""} ${verdict(r)} ${r.passed}/${r.total}${r.error === undefined ? "" : ` ${r.error}`}`);
    if (values.store !== undefined) io.out(`  stored under ${values.store.replace(/\/+$/, "")}/${run!}/ (artifacts/${stage}.json${values["metrics-file"] === undefined ? "" : ", metrics"})`);
  }
  if (summary.byStatus["infra_error"] !== undefined) {
    io.err(`rlpipe eval: ${summary.byStatus["infra_error"]} rows could not be evaluated (sandbox errors); they are not scored`);
    return 1;
  }
  if (minPassRate !== undefined && summary.passRate < minPassRate) {
    io.err(`rlpipe eval: pass rate ${summary.passRate.toFixed(3)} is below --min-pass-rate ${minPassRate}`);
    return 1;
  }
  return 0;
}

function writeAtomic(path: string, content: string): void {
  mkdirSync(dirname(resolve(path)), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, content);
  renameSync(tmp, path); // atomic within a directory: readers see the old file or the new one
}

async function inProcessScorer(): Promise<Scorer> {
  const { LocalSandbox } = await import("../../adapters/sandboxes/local/local-sandbox.js");
  const { ResultCache, handleRewards } = await import("../../functions/reward.js");
  const backend = await LocalSandbox.create({});
  const cache = new ResultCache();
  return {
    async score(rows) {
      const res = await handleRewards({ method: "POST", path: "/v1/rewards", headers: {}, body: { samples: rows.map(toSample) } }, { backend, cache });
      return fromResponse(rows, res.status, res.body);
    },
    close: () => backend.close(),
  };
}

function httpScorer(base: string, token: string | undefined, run: string | undefined): Scorer {
  const parsed = parseEndpoint(base);
  if ("problem" in parsed) throw new RlpipeError(parsed.problem.code, `--reward-url: ${parsed.problem.message}`, { exitCode: 2, ...(parsed.problem.hint === undefined ? {} : { hint: parsed.problem.hint }) });
  const url = `${base.replace(/\/+$/, "")}/v1/rewards`;
  return {
    async score(rows) {
      const body = JSON.stringify({ samples: rows.map(toSample) });
      for (let attempt = 0; ; attempt++) {
        let status: number;
        let payload: unknown;
        try {
          const r = await fetch(url, {
            method: "POST", body, signal: AbortSignal.timeout(600_000),
            headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(run === undefined ? {} : { [USAGE_RUN_HEADER]: run }) },
          });
          status = r.status;
          payload = await r.json().catch(() => undefined);
        } catch (e) {
          if (attempt < 3) { await sleep(backoffMs(attempt, { baseDelayMs: 500, maxDelayMs: 5000 })); continue; }
          throw new RlpipeError("reward_unreachable", `the reward function at ${base} did not answer: ${(e as Error).message}`, { hint: "is rlpipe serve running? (launch.sh starts it for sandbox.kind rlpipe)" });
        }
        if ((status === 429 || status >= 500) && attempt < 3) { await sleep(backoffMs(attempt, { baseDelayMs: 500, maxDelayMs: 5000 })); continue; }
        return fromResponse(rows, status, payload);
      }
    },
    close: async () => undefined,
  };
}

function toSample(r: EvalRow) {
  return { data_source: r.dataSource ?? null, solution_str: r.response, ground_truth: r.groundTruth, extra_info: r.extraInfo ?? null };
}

function fromResponse(rows: readonly EvalRow[], status: number, body: unknown): Scored[] {
  const results = (body as { results?: unknown[] } | undefined)?.results;
  if (status !== 200 || !Array.isArray(results) || results.length !== rows.length) {
    const detail = (body as { detail?: unknown } | undefined)?.detail;
    throw new RlpipeError("reward_failed", `the reward function answered HTTP ${status}${detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 300)}`}`, { hint: status === 401 ? "pass the function's token with --token-env NAME" : undefined });
  }
  return rows.map((row, i) => {
    const r = results[i] as { score?: number; status?: string; passed?: number; total?: number; error?: string; cases?: string[] };
    return {
      line: row.line, ...(row.id === undefined ? {} : { id: row.id }),
      score: typeof r.score === "number" ? r.score : 0, status: r.status ?? "unknown", passed: r.passed ?? 0, total: r.total ?? 0,
      ...(r.error === undefined ? {} : { error: r.error }), ...(r.cases === undefined ? {} : { cases: r.cases }),
    };
  });
}
