// A heartbeat while the CLI waits on something long (a job followed to its end): on a terminal a status line
// refreshed every second, otherwise a plain line every `plainEveryMs`, so a log file or CI output shows the wait
// is alive without filling up. Nothing is printed when `quiet` (--json).
import type { Io } from "./io.js";

export interface Heartbeat {
  stop(): void;
}

/** 75 s → "1m 15s"; 3 h → "3h 00m". */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

export function startHeartbeat(io: Io, render: () => string, opts: { plainEveryMs: number; quiet?: boolean }): Heartbeat {
  if (opts.quiet === true) return { stop: () => undefined };
  const status = io.status;
  const timer = status === undefined
    ? setInterval(() => io.err(render()), opts.plainEveryMs)
    : setInterval(() => status(render()), 1000);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      status?.("");
    },
  };
}
