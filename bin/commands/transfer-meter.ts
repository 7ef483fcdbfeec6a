// Progress of `rlpipe sync` and `rlpipe restore` on stderr: bytes, rate and ETA. On a terminal one line redrawn in
// place (other lines — logs, retry notices — are printed above it); elsewhere (CI, a job's log) a plain line every
// `plainIntervalMs`. Commands run with --json get none of it.
import type { Io } from "../io.js";

export interface StatusLineOptions {
  /** Where it goes: a terminal's live line through `status` when there is one, else plain lines through `err`. */
  readonly io: Pick<Io, "err" | "status">;
  readonly now?: () => number;
  /** A plain progress line at most this often when not on a terminal (default 10 s). */
  readonly plainIntervalMs?: number;
  /** The live line is redrawn at most this often on a terminal (default 200 ms). */
  readonly ttyIntervalMs?: number;
}

/** Progress lines at a readable pace: the live line of a terminal (bin/terminal-line.ts), or periodic plain lines. */
export class StatusLine {
  private lastDraw = -Infinity;
  private readonly now: () => number;

  constructor(private readonly opts: StatusLineOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** A line that stays (a log line, a retry notice). */
  line(text: string): void {
    this.opts.io.err(text);
  }

  /** The live line; `force` draws it now (else at most every interval). Returns whether it was drawn. */
  progress(text: string, force = false): boolean {
    const t = this.now();
    const status = this.opts.io.status;
    const interval = status !== undefined ? (this.opts.ttyIntervalMs ?? 200) : (this.opts.plainIntervalMs ?? 10_000);
    if (!force && t - this.lastDraw < interval) return false;
    this.lastDraw = t;
    if (status !== undefined) status(text);
    else this.opts.io.err(text);
    return true;
  }

  /** Remove the live line (a terminal). */
  clear(): void {
    this.opts.io.status?.("");
  }

  /** Start the plain-line interval anew (a new transfer's first line comes after one interval, not at once). */
  restartInterval(): void {
    this.lastDraw = this.now();
  }
}

/** One transfer (a step's upload or download): bytes done of a total, the rate over the last seconds, the ETA. */
export class TransferMeter {
  private done = 0;
  private readonly samples: { t: number; done: number }[] = [];
  private readonly now: () => number;

  constructor(private readonly label: string, private readonly totalBytes: number, private readonly status: StatusLine, now: () => number = Date.now) {
    this.now = now;
    this.samples.push({ t: this.now(), done: 0 });
    status.restartInterval();
  }

  add(bytes: number): void {
    this.done = Math.max(0, this.done + bytes);
    const t = this.now();
    this.samples.push({ t, done: this.done });
    // Rate over the last 5 s: responsive to a changing link, steady enough to read.
    while (this.samples.length > 2 && t - this.samples[0]!.t > 5000) this.samples.shift();
    this.status.progress(this.text());
  }

  finish(): void {
    this.status.clear();
  }

  /** `upload step 20: 36.0 MiB of 54.0 MiB (67%), 12.3 MiB/s, ETA 2 s` */
  text(): string {
    const first = this.samples[0]!;
    const last = this.samples[this.samples.length - 1]!;
    const seconds = (last.t - first.t) / 1000;
    const rate = seconds > 0 ? (last.done - first.done) / seconds : 0;
    const pct = this.totalBytes > 0 ? Math.floor((100 * this.done) / this.totalBytes) : 100;
    const left = Math.max(0, this.totalBytes - this.done);
    const eta = rate > 0 ? `ETA ${formatDuration(left / rate)}` : "ETA —";
    return `${this.label}: ${formatBytes(this.done)} of ${formatBytes(this.totalBytes)} (${pct}%), ${formatBytes(rate)}/s, ${eta}`;
  }
}

export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${u === 0 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}
