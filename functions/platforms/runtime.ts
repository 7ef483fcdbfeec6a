// What every platform adapter shares around the app: the cold start (the app is built once per process, on the
// first invocation; concurrent first invocations wait for the same build; a failed build is not cached, so the
// next invocation tries again), the secret cache, and a log that never shows a secret.
import { RlpipeError } from "../../core/errors.js";
import { Redactor } from "../../core/redact.js";
import type { SecretSource } from "../app.js";

/** A log whose lines are redacted: environment secrets, credential-looking strings and every secret value read. */
export class RedactingLog {
  private readonly known = new Set<string>();
  private readonly redactor: Redactor;
  constructor(env: Readonly<Record<string, string | undefined>>, private readonly sink: (line: string) => void) {
    this.redactor = new Redactor(env, ["RLPIPE_SANDBOX_TOKEN", "RLPIPE_RUNS_SECRET", "E2B_API_KEY"]);
  }

  /** A value that must never be printed from now on (secrets as they are read). */
  remember(value: string): void {
    if (value.length >= 4) this.known.add(value);
  }

  redact(text: string): string {
    let out = text;
    for (const v of [...this.known].sort((a, b) => b.length - a.length)) out = out.split(v).join("***");
    return this.redactor.redact(out);
  }

  readonly line = (text: string): void => {
    this.sink(this.redact(text));
  };
}

/** A secret source reading each name once per process; every value read is registered with the log's redaction. */
export function cachedSecrets(read: (name: string) => Promise<string | undefined>, log: RedactingLog): SecretSource {
  const cache = new Map<string, Promise<string | undefined>>();
  return {
    get(name: string): Promise<string | undefined> {
      let p = cache.get(name);
      if (p === undefined) {
        p = read(name).then((v) => {
          if (v !== undefined) log.remember(v);
          return v;
        });
        // A failed read (a network error) is tried again on the next get, not remembered.
        p.catch(() => cache.delete(name));
        cache.set(name, p);
      }
      return p;
    },
  };
}

/** Something built once per process on first use (the app): concurrent callers share one build; a failed build is forgotten. */
export class Lazy<Ctx, T> {
  private building: Promise<T> | undefined;
  constructor(private readonly build: (ctx: Ctx) => Promise<T>) {}

  get(ctx: Ctx): Promise<T> {
    if (this.building === undefined) {
      const p = this.build(ctx);
      this.building = p;
      p.catch(() => { if (this.building === p) this.building = undefined; });
    }
    return this.building;
  }
}

/** A configuration error (exit code 2) is the operator's to fix and its message names variables, never values. */
export function isConfigError(e: unknown): e is RlpipeError {
  return e instanceof RlpipeError && e.exitCode === 2;
}

/** One log line for an error: its name, code and message (redacted by the log), never a stack. */
export function describeError(e: unknown): string {
  if (e instanceof RlpipeError) return `${e.name} ${e.code}: ${e.message}${e.hint === undefined ? "" : ` (${e.hint})`}`;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return `thrown ${typeof e}`;
}
