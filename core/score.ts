// Scoring a problem set (rlpipe eval): reading rows with their line numbers, and the summary and metrics of
// the scores. Pure: the CLI does the reading and the calls.
import { RlpipeError } from "./errors.js";

export interface EvalRow {
  /** 1-based line in the data file. */
  readonly line: number;
  readonly id?: string;
  readonly dataSource?: string;
  readonly response: string;
  readonly groundTruth: unknown;
  readonly extraInfo?: Readonly<Record<string, unknown>>;
}

export interface Scored {
  readonly line: number;
  readonly id?: string;
  readonly score: number;
  readonly status: string;
  readonly passed: number;
  readonly total: number;
  readonly error?: string;
  readonly cases?: readonly string[];
}

export class DataError extends RlpipeError {}

/** Rows of a JSON-lines file; a bad line fails with `file:line: …` (nothing is scored from a half-read set). */
export function parseEvalRows(text: string, file: string, responseField: string): EvalRow[] {
  const rows: EvalRow[] = [];
  const problems: string[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === "") return;
    let v: unknown;
    try { v = JSON.parse(raw); } catch (e) { problems.push(`${file}:${line}: not JSON (${(e as Error).message})`); return; }
    if (v === null || typeof v !== "object" || Array.isArray(v)) { problems.push(`${file}:${line}: expected a JSON object`); return; }
    const o = v as Record<string, unknown>;
    const response = o[responseField];
    if (typeof response !== "string") { problems.push(`${file}:${line}: ${responseField}: expected a string response, got ${response === undefined ? "nothing" : typeof response}`); return; }
    if (o["ground_truth"] === undefined || o["ground_truth"] === null) { problems.push(`${file}:${line}: ground_truth: missing (the test cases)`); return; }
    const extra = o["extra_info"];
    rows.push({
      line, response, groundTruth: o["ground_truth"],
      ...(typeof o["id"] === "string" || typeof o["id"] === "number" ? { id: String(o["id"]) } : {}),
      ...(typeof o["data_source"] === "string" ? { dataSource: o["data_source"] } : {}),
      ...(extra !== null && typeof extra === "object" && !Array.isArray(extra) ? { extraInfo: extra as Record<string, unknown> } : {}),
    });
  });
  if (problems.length > 0) {
    throw new DataError("bad_data", `${problems.length} bad line${problems.length === 1 ? "" : "s"}:\n${problems.slice(0, 20).join("\n")}${problems.length > 20 ? `\n… and ${problems.length - 20} more` : ""}`, { exitCode: 2 });
  }
  if (rows.length === 0) throw new DataError("empty_data", `${file}: no rows`, { exitCode: 2 });
  return rows;
}

export interface EvalSummary {
  readonly file: string;
  readonly responseField: string;
  readonly scorer: string;
  readonly rows: number;
  /** Rows with every test case passed. */
  readonly passed: number;
  readonly passRate: number;
  readonly meanScore: number;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly wallMs: number;
  /** One verl-style metrics row (eval/* keys), what `rlpipe metrics` reads. */
  readonly metrics: Readonly<Record<string, number>>;
}

export function summarize(scored: readonly Scored[], meta: { file: string; responseField: string; scorer: string; wallMs: number }): EvalSummary {
  const byStatus: Record<string, number> = {};
  for (const s of scored) byStatus[s.status] = (byStatus[s.status] ?? 0) + 1;
  // Rows the sandbox could not evaluate are not scored (never counted as failures).
  const graded = scored.filter((s) => s.status !== "infra_error");
  const passed = graded.filter((s) => s.status === "ok" && s.score >= 1).length;
  const passRate = graded.length === 0 ? 0 : passed / graded.length;
  const meanScore = graded.length === 0 ? 0 : graded.reduce((a, s) => a + s.score, 0) / graded.length;
  const sorted = Object.fromEntries(Object.entries(byStatus).sort(([a], [b]) => a.localeCompare(b)));
  return {
    ...meta, rows: scored.length, passed, passRate, meanScore, byStatus: sorted,
    metrics: { "eval/pass_rate": passRate, "eval/score/mean": meanScore, "eval/rows": scored.length, "eval/infra_errors": byStatus["infra_error"] ?? 0 },
  };
}
