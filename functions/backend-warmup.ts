// A cloud function's sandbox backend, prepared in the background so that the cold start answers without waiting
// for the network. The warm-up (E2B: load the SDK, create and check one sandbox, kept for the first job; ScaleBox:
// ping the endpoints) starts right after the cold start; requests that need the backend wait for it, the others
// (GET /v1/ping) do not. A failed warm-up is never kept for good: it is reported, with its stable code and hint,
// to the requests that waited for it and, for a short hold, to the ones that follow; after the hold the next
// request that needs the backend starts a new warm-up. Only requests start warm-ups (no timer retries) and only
// one runs at a time, so a bad key costs at most one attempt per hold, however many requests arrive.
import { RlpipeError } from "../core/errors.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";

/** Default time a failure is answered from memory before the next request may try again. */
export const WARMUP_RETRY_HOLD_MS = 1000;

export interface WarmupOptions {
  /** After a failure, requests within this time get it again without a new attempt. Default WARMUP_RETRY_HOLD_MS. */
  readonly retryHoldMs?: number;
  /** Clock for the hold (tests). Default Date.now. */
  readonly now?: () => number;
  /** Where a failed warm-up is logged (the platform's redacting log). */
  readonly log?: (line: string) => void;
  /** Redacts text taken from a failure before it goes into an answer. */
  readonly redact?: (text: string) => string;
}

/** The backend is not available: its warm-up failed. The router answers 503 with the code and hint. */
export class BackendUnavailable extends RlpipeError {
  constructor(readonly backendName: string, code: string, message: string, hint: string | undefined, readonly retryAfterMs: number, cause: unknown) {
    super(code, message, { ...(hint === undefined ? {} : { hint }), cause });
    this.name = "BackendUnavailable";
  }

  /** The answer's body: what failed, its stable code and what to do. Never the key (the adapters scrub it; redact() too). */
  body(): { detail: string; code: string; hint?: string } {
    return {
      detail: `the ${this.backendName} sandbox backend is not available (${this.code}): ${this.message}`,
      code: this.code, ...(this.hint === undefined ? {} : { hint: this.hint }),
    };
  }
}

export class BackendWarmup {
  private ready: SandboxBackend | undefined;
  private inFlight: Promise<SandboxBackend> | undefined;
  private failed: { readonly error: unknown; readonly atMs: number } | undefined;
  private readonly retryHoldMs: number;
  private readonly now: () => number;

  /** `open` creates and checks the backend; it must release what it made when it fails (createRemoteBackend does). */
  constructor(private readonly name: string, private readonly open: () => Promise<SandboxBackend>, private readonly opts: WarmupOptions = {}) {
    this.retryHoldMs = opts.retryHoldMs ?? WARMUP_RETRY_HOLD_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Starts the warm-up in the background, once the event loop has polled for I/O after the cold start: loading the
   * SDK blocks the loop (~60 ms), and the invocation being answered (the cold start's first) is still on its way out
   * — a runtime client that posts the answer on a fresh loopback connection writes it when that poll reports the
   * connection, so a warm-up begun on the very next turn (before that poll) held the answer back. Two check phases
   * bracket one poll phase. A client that needs more turns than that (undici's fetch) may still wait; a request
   * that needs the backend before then starts it at once.
   */
  start(): void {
    setImmediate(() => setImmediate(() => {
      if (this.ready === undefined && this.inFlight === undefined && this.failed === undefined) void this.attempt().catch(() => undefined);
    }));
  }

  /** The backend: at once when ready; else the warm-up in flight; else the last failure (within its hold) or a new warm-up. */
  get(): Promise<SandboxBackend> {
    if (this.ready !== undefined) return Promise.resolve(this.ready);
    if (this.inFlight !== undefined) return this.inFlight;
    if (this.failed !== undefined) {
      const leftMs = this.failed.atMs + this.retryHoldMs - this.now();
      if (leftMs > 0) return Promise.reject(this.unavailable(this.failed.error, leftMs));
    }
    return this.attempt();
  }

  private attempt(): Promise<SandboxBackend> {
    const p = this.open().then((backend) => {
      this.ready = backend;
      this.failed = undefined;
      this.inFlight = undefined;
      return backend;
    }, (e: unknown) => {
      this.failed = { error: e, atMs: this.now() };
      this.inFlight = undefined;
      this.opts.log?.(`sandbox warm-up failed: ${describe(e)}; the next request that needs the sandbox tries again (not before ${this.retryHoldMs} ms)`);
      throw this.unavailable(e, this.retryHoldMs);
    });
    // Nothing may await a warm-up started at cold start: its failure is remembered above, never an unhandled rejection.
    p.catch(() => undefined);
    this.inFlight = p;
    return p;
  }

  private unavailable(e: unknown, retryAfterMs: number): BackendUnavailable {
    const redact = this.opts.redact ?? ((t: string) => t);
    if (e instanceof RlpipeError) return new BackendUnavailable(this.name, e.code, redact(e.message), e.hint, retryAfterMs, e);
    // Not an adapter's error (a bug): its text stays in the log.
    return new BackendUnavailable(this.name, "sandbox_warmup_failed", "the warm-up failed unexpectedly; see the function log", undefined, retryAfterMs, e);
  }
}

function describe(e: unknown): string {
  if (e instanceof RlpipeError) return `${e.name} ${e.code}: ${e.message}${e.hint === undefined ? "" : ` (${e.hint})`}`;
  return e instanceof Error ? `${e.name}: ${e.message}` : `thrown ${typeof e}`;
}
