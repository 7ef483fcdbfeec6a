// A server process for tests: started on 127.0.0.1, waited for until it answers, stopped by its process id.
import { type ChildProcess, spawn } from "node:child_process";

export interface ServerProcess {
  readonly pid: number;
  stop(): Promise<void>;
}

/** Spawn `cmd`, poll `ready()` until it is true (the process must not exit meanwhile), or fail with its stderr. */
export async function startServerProcess(name: string, cmd: string, args: readonly string[], ready: () => Promise<boolean>, opts: { timeoutMs?: number; onStop?: () => void } = {}): Promise<ServerProcess> {
  const child: ChildProcess = spawn(cmd, [...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => { if (stderr.length < 4000) stderr += d.toString(); });
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${stderr}`);
    if (await ready().catch(() => false)) break;
    if (Date.now() > deadline) { child.kill("SIGKILL"); throw new Error(`${name} did not start: ${stderr}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid!,
    stop: () => new Promise<void>((resolve) => {
      const done = () => { opts.onStop?.(); resolve(); };
      if (child.exitCode !== null) { done(); return; }
      child.once("exit", done);
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    }),
  };
}
