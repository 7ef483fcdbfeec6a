// One transient line at the bottom of a terminal (a heartbeat, a transfer's progress): redrawn in place, taken away
// before any line that stays is printed and drawn again under it, so log lines scroll above it and it is never left
// behind as a line of its own.

export class TerminalLine {
  private live = "";

  /** `write`: raw text to the terminal's stderr; `columns`: its width (the line is cut to fit, never wraps). */
  constructor(private readonly write: (raw: string) => void, private readonly columns: () => number) {}

  /** Show `text` as the live line ("" takes it away). */
  show(text: string): void {
    if (text === "") { this.clear(); return; }
    this.live = text.slice(0, Math.max(20, this.columns() - 1));
    this.write(`\r\x1b[2K${this.live}`);
  }

  /** Print output that stays (through `print`, to stdout or stderr), with the live line drawn again under it. */
  above(print: () => void): void {
    if (this.live === "") { print(); return; }
    this.write("\r\x1b[2K");
    print();
    this.write(this.live);
  }

  clear(): void {
    if (this.live !== "") this.write("\r\x1b[2K");
    this.live = "";
  }
}
