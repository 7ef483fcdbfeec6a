// The TCP sockets a set of processes hold (Linux): their socket inodes under /proc/<pid>/fd looked up in
// /proc/net/tcp and tcp6 (this process's network namespace). Shared by the test servers that need to know which
// ports a process listens on, or which end of a connection is this process's own.
import { readFileSync, readdirSync, readlinkSync } from "node:fs";

export interface ProcTcpSocket {
  /** Hex, as the kernel prints it ("0100007F" for 127.0.0.1; 32 digits for IPv6). */
  readonly localAddressHex: string;
  readonly localPort: number;
  /** The kernel's state code: "0A" is LISTEN, "01" ESTABLISHED. */
  readonly state: string;
}

export function tcpSocketsOf(pids: readonly (number | "self")[]): ProcTcpSocket[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[] = [];
    try { fds = readdirSync(`/proc/${pid}/fd`); } catch { continue; }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m !== null) inodes.add(m[1]!);
      } catch { /* closed meanwhile */ }
    }
  }
  const out: ProcTcpSocket[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try { text = readFileSync(file, "utf8"); } catch { continue; }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const [addr, port] = f[1]!.split(":");
      out.push({ localAddressHex: addr!, localPort: parseInt(port!, 16), state: f[3]! });
    }
  }
  return out;
}
