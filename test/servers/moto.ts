// A real S3-compatible server for tests: moto's server (from the project's test virtualenv) on 127.0.0.1,
// started on a free port and stopped by its process id.
import { createServer } from "node:net";
import { join } from "node:path";
import { ROOT } from "../helpers.js";
import { startServerProcess } from "./process.js";

export interface Moto {
  readonly endpoint: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a !== null ? a.port : 0));
    });
  });
}

export async function startMoto(): Promise<Moto> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const server = await startServerProcess("moto_server", join(ROOT, ".venv-test", "bin", "moto_server"), ["-H", "127.0.0.1", "-p", String(port)],
    async () => (await fetch(`${endpoint}/moto-api/`)).ok);
  return { endpoint, ...server };
}

/** Credentials moto accepts; tests point every client at the loopback endpoint. */
export const TEST_CREDENTIALS = { accessKeyId: "rlpipe-test-akid", secretAccessKey: "rlpipe-test-secret" };
