// rlpipe serve --sandbox local|scalebox|e2b [--host H] [--port P] [--token-env NAME] [--scalebox-url URL]...
// The reward/tool function as an HTTP server (SandboxFusion-compatible /run_code and /common_evaluate_batch,
// /v1/rewards, /v1/ping). Binding beyond loopback requires a token.
import { parseArgs } from "node:util";
import { RlpipeError } from "../../core/errors.js";
import { createBackend, LOCAL_CASE_LOOPS, LOCAL_ISOLATIONS, LOCAL_PROGRAM_NAMESPACES, type LocalCaseLoop, type LocalIsolation, type LocalProgramNamespaces } from "../../functions/backends.js";
import { isLoopback, startHttpServer } from "../../functions/platforms/http.js";
import { ResultCache } from "../../functions/reward.js";
import { UsageMeter } from "../../functions/usage-meter.js";
import type { RunsDeps } from "../../functions/runs.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";

/** The runs function: an S3-compatible store (presigned URLs) and the secret run tokens derive from. */
async function runsDeps(uri: string | undefined, secretEnv: string | undefined): Promise<RunsDeps | undefined> {
  if (uri === undefined) return undefined;
  if (secretEnv === undefined) throw usage("--runs-store needs --runs-secret-env NAME (the secret per-run tokens derive from)");
  const secret = process.env[secretEnv];
  if (secret === undefined || secret.length < 16) throw new RlpipeError("secret_missing", `environment variable ${secretEnv} must hold a secret of at least 16 characters`, { exitCode: 2 });
  const { parseStoreUri } = await import("../../adapters/storage/store.js");
  const parsed = parseStoreUri(uri);
  if (parsed.scheme === "file") throw usage("the runs function hands out presigned URLs, so --runs-store must be s3://, obs:// or cos://");
  const { S3Store } = await import("../../adapters/storage/s3.js");
  return { store: S3Store.fromUri(parsed, process.env), secret };
}

export async function runServe(argv: readonly string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: COMMANDS.serve.options,
    strict: true,
  });
  if (values.help) { io.out(formatHelp("serve")); return 0; }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw usage(`--port must be 0–65535, got ${values.port}`);
  let token: string | undefined;
  if (values["token-env"] !== undefined) {
    token = process.env[values["token-env"]];
    if (token === undefined || token.length < 16) {
      throw new RlpipeError("token_missing", `environment variable ${values["token-env"]} must hold a token of at least 16 characters`, { exitCode: 2 });
    }
  }
  // launch.sh starts rlpipe serve with a fresh nonce and checks /v1/ping echoes it (RLPIPE_SERVE_NONCE).
  const pingNonce = process.env["RLPIPE_SERVE_NONCE"] || undefined;
  if (!isLoopback(values.host) && token === undefined) {
    throw new RlpipeError("token_required", `serving on ${values.host} (beyond loopback) needs a token`, { exitCode: 2, hint: "export RLPIPE_TOKEN=$(openssl rand -hex 24) and pass --token-env RLPIPE_TOKEN" });
  }
  const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw usage("--concurrency must be a positive integer");
  const maxRequests = values["max-requests"] === undefined ? undefined : Number(values["max-requests"]);
  if (maxRequests !== undefined && (!Number.isInteger(maxRequests) || maxRequests < 1)) throw usage(`--max-requests must be a positive integer, got ${values["max-requests"]}`);
  const overloadStatus = Number(values["overload-status"]);
  if (overloadStatus !== 429 && overloadStatus !== 503 && overloadStatus !== 504) throw usage(`--overload-status must be 429, 503 or 504, got ${values["overload-status"]}`);
  /** A --sandbox local option with a fixed set of values (and a default, so given or not is read from argv). */
  const localChoice = <T extends string>(name: "isolation" | "case-loop" | "program-namespaces", allowed: readonly T[]): T => {
    const value = values[name] as T;
    if (!allowed.includes(value)) throw usage(`--${name} must be ${allowed.join(" or ")}, got ${value}`);
    if (argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`)) && values.sandbox !== "local") throw usage(`--${name} applies to --sandbox local only`);
    return value;
  };
  const isolation = localChoice<LocalIsolation>("isolation", LOCAL_ISOLATIONS);
  const caseLoop = localChoice<LocalCaseLoop>("case-loop", LOCAL_CASE_LOOPS);
  const programNamespaces = localChoice<LocalProgramNamespaces>("program-namespaces", LOCAL_PROGRAM_NAMESPACES);
  if (values["python-env"] !== undefined && values.sandbox !== "local") throw usage("--python-env applies to --sandbox local only");
  const scaleboxUrls = values["scalebox-url"] ?? (process.env["SCALEBOX_URL"]?.split(",").filter((u) => u !== "") ?? []);
  const runs = await runsDeps(values["runs-store"], values["runs-secret-env"]);
  const backend = values.sandbox === "none" ? undefined : await createBackend(values.sandbox, {
    scaleboxUrls, ...(concurrency === undefined ? {} : { concurrency }), ...(values["e2b-template"] === undefined ? {} : { template: values["e2b-template"] }),
  }, { isolation, caseLoop, programNamespaces, ...(values["python-env"] === undefined ? {} : { pythonEnv: values["python-env"] }), ...(values.quiet ? {} : { log: (l: string) => io.err(l) }) });
  if (backend === undefined && runs === undefined) throw usage("--sandbox none serves nothing without --runs-store");
  // Per-run usage (what `rlpipe cost --run` reads): counted always, written to --usage-store when given.
  const usageStore = values["usage-store"] === undefined ? undefined : await (await import("../../adapters/storage/store.js")).openStore(values["usage-store"]);
  const meter = new UsageMeter({ platform: "local", sandbox: values.sandbox, ...(usageStore === undefined ? {} : { sink: usageStore }), log: (l) => io.err(l) });
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer({ ...(backend === undefined ? {} : { backend }), ...(runs === undefined ? {} : { runs }), cache: new ResultCache(), usage: meter, strictVerdicts: values["strict-verdicts"], ...(token === undefined ? {} : { token }), ...(pingNonce === undefined ? {} : { pingNonce }) }, {
      host: values.host, port, overloadStatus, ...(maxRequests === undefined ? {} : { maxRequests }), ...(values.quiet ? {} : { log: (l: string) => io.err(l) }),
    });
  } catch (e) {
    await backend?.close();
    await runs?.store.close();
    await usageStore?.close();
    throw listenFailure(e, values.host, port);
  }
  const caps = await backend?.capabilities();
  const what = [
    caps === undefined ? undefined : `sandbox ${caps.backend}: ${caps.languages.join(", ")}; ${caps.isolation === undefined ? "" : `isolation ${caps.isolation}; `}${caps.memoryBound === undefined ? "" : `memory bound ${caps.memoryBound}; `}${caps.caseLoop === undefined ? "" : `case loop ${caps.caseLoop}; `}${caps.pythonEnv === undefined ? "" : `python env ${caps.pythonEnv.dir} (${caps.pythonEnv.packages} packages); `}concurrency ${caps.maxConcurrency}; admits ${server.capacity} requests${values["strict-verdicts"] ? "; strict verdicts" : ""}`,
    runs === undefined ? undefined : `runs → ${runs.store.url}`,
    usageStore === undefined ? undefined : `usage → ${values["usage-store"]}`,
  ].filter((x) => x !== undefined).join("; ");
  io.out(`rlpipe serve: ${server.url} (${what}; auth ${token === undefined ? "off (loopback)" : "bearer token"})`);
  if (caps?.caseLoop === "python" && caseLoop === "c") {
    io.err("rlpipe serve: the sandbox runs cases through its Python loop: there is no C compiler (cc or gcc) here to build the C one; apt-get install gcc and restart for about 30% less CPU per test case");
  }
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await server.close();
  await meter.flush();
  await backend?.close();
  await runs?.store.close();
  await usageStore?.close();
  io.err("rlpipe serve: stopped");
  return 0;
}

/** A port that cannot be listened on is a choice to change (exit 2), not a bug. */
function listenFailure(e: unknown, host: string, port: number): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  const why: Record<string, string> = { EADDRINUSE: "the address is already in use", EACCES: "permission denied (ports below 1024 need privileges)", EADDRNOTAVAIL: "no such local address" };
  if (code === undefined || why[code] === undefined) return e;
  return new RlpipeError("listen_failed", `cannot listen on ${host}:${port}: ${why[code]}`, { exitCode: 2, hint: "choose another --port (0 picks a free one) or --host", cause: e });
}
