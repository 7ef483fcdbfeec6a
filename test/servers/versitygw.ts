// A second real S3 server for tests: the Versity S3 Gateway (Go; posix backend) on 127.0.0.1, built by
// scripts/setup.sh --test into .tools/bin. Unlike moto it verifies SigV4, Content-MD5 and x-amz-checksum-crc32
// itself, and requires the CRC32 of every part of an upload created with one — as S3 does.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers.js";
import { TEST_CREDENTIALS, freePort } from "./moto.js";
import { startServerProcess } from "./process.js";

export const VERSITYGW_BIN = join(ROOT, ".tools", "bin", "versitygw");

export interface Versitygw {
  readonly endpoint: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startVersitygw(): Promise<Versitygw> {
  if (!existsSync(VERSITYGW_BIN)) throw new Error(`${VERSITYGW_BIN} is missing: run bash scripts/setup.sh --test (it builds versitygw with go install)`);
  const root = mkdtempSync(join(tmpdir(), "rlpipe-versitygw-"));
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const server = await startServerProcess("versitygw", VERSITYGW_BIN, [
    "--port", `127.0.0.1:${port}`, "--access", TEST_CREDENTIALS.accessKeyId, "--secret", TEST_CREDENTIALS.secretAccessKey, "--quiet", "--keep-alive",
    "posix", root,
  ], async () => { await fetch(`${endpoint}/`); return true; }, // any HTTP answer (403 without a signature) means it is up
  { onStop: () => rmSync(root, { recursive: true, force: true }) });
  return { endpoint, ...server };
}
