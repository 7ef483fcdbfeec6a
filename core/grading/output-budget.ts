// How much program output one request keeps for its reply. Each case's stdout and stderr are already cut at
// maxOutputBytes as the reply counts bytes (inside a JSON string, escapes included); this bounds their sum over a
// request, so that a batch of cases that each print their fill never costs the server more than the budget. Cases are
// graded on their whole (capped) output as it arrives; only what the reply carries is kept, and once the budget is
// spent later cases keep none (their answer says so). A request that replies with no output (rewards) keeps none.

/** What a request keeps of its programs' output for its reply, unless its route says otherwise. */
export const DEFAULT_REPLY_OUTPUT_BYTES = 64 << 20;

/** Why a case's output is not in the reply. */
export const OUTPUT_OMITTED = "output omitted: this request's reply budget for program output is spent";

export class OutputBudget {
  private left: number;

  constructor(readonly totalBytes: number = DEFAULT_REPLY_OUTPUT_BYTES) {
    this.left = totalBytes;
  }

  /** A budget that keeps nothing: the route's reply carries no output. */
  static none(): OutputBudget {
    return new OutputBudget(0);
  }

  get leftBytes(): number {
    return this.left;
  }

  /** Takes the reply size of these strings from the budget when they fit in what is left; false (nothing taken) when not. */
  keep(...texts: readonly (string | undefined)[]): boolean {
    const bytes = texts.reduce((n, t) => n + (t === undefined || t === "" ? 0 : jsonStringBytes(t)), 0);
    if (bytes === 0) return true;
    if (bytes > this.left) return false;
    this.left -= bytes;
    return true;
  }
}

/** The bytes a string takes inside a JSON string (UTF-8, escapes included), as JSON.stringify writes it. */
export function jsonStringBytes(s: string): number {
  return Buffer.byteLength(JSON.stringify(s)) - 2;
}
