// Every command's options, described once: a command passes `COMMANDS.<name>.options` to node:util parseArgs
// (extra fields are ignored there), and `rlpipe <command> --help` prints formatHelp() of the same object, so the
// help cannot miss an option the command accepts. Commands whose files do not import their spec yet are checked
// against it by test/cli-help.test.ts.
import { TOOLCHAIN_LIBRARIES, TOOLCHAIN_PACKAGES } from "../adapters/sandboxes/toolchains/toolchains.js";
import { EXIT_CODE_MEANINGS } from "../core/errors.js";
import { FUNCTION_NAMES, FUNCTION_PLATFORMS } from "../core/packaging/targets.js";
import { PROVIDERS } from "../core/recipe/schema.js";
import { shippedRecipeNames } from "./shipped-recipes.js";
import { VERSION } from "./version.js";

export interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly short?: string;
  readonly multiple?: boolean;
  readonly default?: string | boolean;
  /** The value's placeholder in the help ("URI", "N"); string options only. */
  readonly value?: string;
  readonly description: string;
}

export interface CommandSpec {
  /** As typed after `rlpipe` ("tione inspect" for a subcommand). */
  readonly usage: string;
  /** One line for `rlpipe --help`. */
  readonly summary: string;
  /** What the command does, how it behaves, its exit codes when they say more than the table. */
  readonly description: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
}

const help = { type: "boolean", short: "h", default: false, description: "show this help" } as const;
const json = { type: "boolean", default: false, description: "machine-readable output on stdout (errors too, as {\"error\": …})" } as const;
const store = { type: "string", value: "URI", description: "the object store: s3://bucket/prefix, obs://…, cos://…, file:///dir or /dir (default $RLPIPE_STORE, else the store in the run record of a run deployed from here: <job>.<stage>)" } as const;
const deployable = PROVIDERS.filter((p) => p !== "docker").join("|");

export const COMMANDS = {
  init: {
    usage: "init [FILE] [--from NAME] [--force] [--json]",
    summary: "write a recipe to start from (the local demo, or a copy of a shipped recipe) that validates as written",
    description: `Writes FILE (default recipe.yaml; in a directory, DIR/recipe.yaml) from a shipped recipe: by default the
local demo, which plans for provider local and runs on this machine (rlpipe deploy FILE --provider local --yes
--wait), with the data file it ships next to it. Its "# yaml-language-server: $schema=…" comment points at the
installed package's schema/recipe.schema.json (by absolute path; relative inside an rlpipe clone), so editors
complete and check it where it is. An existing file is left alone (exit 2) unless --force; each file is written
beside and renamed into place, so none is ever half-written.
Shipped recipes: ${shippedRecipeNames().join(", ")}.`,
    options: {
      from: { type: "string", value: "NAME", description: "the shipped recipe to copy (default local-demo; rlpipe init --help lists them)" },
      force: { type: "boolean", default: false, description: "replace FILE (and the files it ships) when they exist" },
      json,
      help,
    },
  },
  plan: {
    usage: `plan <recipe.yaml> [--provider ${PROVIDERS.join("|")}] [--out DIR] [--json] [--verl-profile NAME]`,
    summary: "validate a recipe and write its launch bundle (no network, no credentials)",
    description: `Validates the recipe and writes the launch bundle (launch.sh, tool configs, provider files, rlpipe-plan.json)
into DIR (default .rlpipe/bundles/<job name>). Without --provider it plans for the recipe's only target; a recipe
with several targets needs --provider, one without targets plans for local. Warnings (e.g. placeholder values)
are printed; errors exit 2 with file:line:col, the field and a hint. The summary shows the cost estimate's
range for that provider (offline catalog prices; rlpipe cost has the breakdown).`,
    options: {
      provider: { type: "string", short: "p", value: "NAME", description: `where the bundle will run: ${PROVIDERS.join(", ")} (default: the recipe's only target)` },
      out: { type: "string", short: "o", value: "DIR", description: "bundle directory (default .rlpipe/bundles/<job name>); an existing directory must be an rlpipe bundle" },
      json,
      "verl-profile": { type: "string", value: "NAME", description: "plan against another verl version profile (e.g. to check a recipe against a newer verl)" },
      help,
    },
  },
  deploy: {
    usage: `deploy <recipe.yaml> [--provider ${deployable}] [--dry-run] [--yes] [--wait] [--new] [--force] [--json]`,
    summary: "create the job (exactly one per deploy; --new starts another run of the same recipe)",
    description: `Plans the recipe, shows what will be created (the provider request, where the bundle goes, unverified
fields, prices) and asks before creating anything (--yes to skip; required when stdin is not a terminal).
Without --provider it deploys to the recipe's only target (docker aside: it has no deploy API); a recipe with
several targets, or none, needs --provider (exit 2).
A deploy makes exactly one job: deploying the same recipe again finds the job it made, even when a create's
reply was lost, and says so — with the job's phase when it has ended. --new starts a new run of the same
recipe: the next attempt, named <job>-r2, <job>-r3…; the number is recorded before the create, so repeating a
--new deploy whose reply was lost finds that attempt instead of making a third job.
--wait follows the job to its end with its log, a heartbeat on stderr, and the final phase (exit 0 when it
SUCCEEDED, 1 when it FAILED or was STOPPED). Ctrl-C stops following, not the job (exit 130). The run record
goes to .rlpipe/runs/<name>.json.
A recipe with template placeholders is refused (exit 2; --dry-run shows the request and the refusal, exit 2 too).
The summary shows the cost estimate's range (rlpipe cost has the breakdown). With a budget cap in the recipe
(cost.budget) the deploy refuses (exit 2) when the estimate's expected total is above the cap, unless --force;
when only the high end is above it, or a rate is missing so the cap cannot be checked, it warns and goes on.`,
    options: {
      provider: { type: "string", short: "p", value: "NAME", description: `where to run it: ${deployable.split("|").join(", ")} (default: the recipe's only target)` },
      "dry-run": { type: "boolean", default: false, description: "show the request and create nothing; exit 2 with the reason when the deploy would refuse (placeholders, budget cap)" },
      yes: { type: "boolean", short: "y", default: false, description: "do not ask for confirmation" },
      wait: { type: "boolean", default: false, description: "follow the job to its end (logs, heartbeat, final phase); the exit code follows the job" },
      new: { type: "boolean", default: false, description: "start a new run of this recipe even though an earlier one exists (next attempt: <job>-rN)" },
      force: { type: "boolean", default: false, description: "submit even though the cost estimate's expected total is above the recipe's budget cap" },
      json,
      "verl-profile": { type: "string", value: "NAME", description: "plan against another verl version profile" },
      help,
    },
  },
  cost: {
    usage: `cost <recipe.yaml> [--provider all|${PROVIDERS.join("|")}] [--format table|md|html|json] [--out FILE] [--rates FILE] [--online] [--step-seconds S] [--steps N|STAGE=N ...]  |  cost --run NAME [--format FORMAT] [--out FILE]  |  cost HEAD.yaml --diff BASE.yaml (or cost diff BASE.yaml HEAD.yaml) [--format table|md|json] [--fail-over N|N%]`,
    summary: "estimate what a whole run costs, per provider, as ranges with every price's source (no network by default)",
    description: `Estimates the whole run from the recipe: training compute (steps × seconds per step × nodes), reward
sandboxes, functions, checkpoint storage and egress, each low / expected / high, priced from rlpipe's catalog
(each price with its source and the date it was read), the recipe's prices: and --rates FILE, which win over
the catalog. Prints the candidates across providers with the chosen one marked, the chosen one's breakdown as a
tree, the totals in CNY and USD with the exchange rate, what needs a rate and how to supply it, assumptions,
exclusions and price sources. A line without a public price says "rate needed"; nothing is invented. The
recipe's cost.budget cap is checked (rlpipe deploy refuses above it unless --force).
--online asks the providers' price APIs with your credentials (missing credentials: exit 2; a refusing API: exit 3
naming it and its error code — never a silent fallback) and caches the answers in ~/.cache/rlpipe/prices-cache.json
(RLPIPE_PRICES_CACHE). --run NAME shows, per line, the estimate recorded at that run's deploy next to what the run
used at the same rates: the provider's billable time, and the sandbox seconds and requests rlpipe's function counted
for the run (written to <store>/<run>/usage/ by rlpipe serve --usage-store).
--format html writes one self-contained page with charts (no script, nothing fetched) to --out (default
.rlpipe/cost/<recipe>.html) and prints its path; --format json is the versioned report (schema
rlpipe.cost-report, version 1). Uses no credentials and no network unless --online.
HEAD.yaml --diff BASE.yaml (or diff BASE.yaml HEAD.yaml) prices both recipes with the same options and prints what
changed: per line (added, removed, changed; a side without a rate says "rate needed", never ¥0), the chosen
candidate, steps and hours when they changed, and the total low / expected / high in CNY and USD — as a table,
Markdown for a pull-request comment (md) or JSON (schema rlpipe.cost-diff, version 1). Exit 0 when the diff was
made; with --fail-over, 1 when the expected total rose by more than the limit.`,
    options: {
      provider: { type: "string", short: "p", default: "all", value: "NAME", description: `price this provider only, or all of them side by side: all, ${PROVIDERS.join(", ")}` },
      format: { type: "string", short: "f", default: "table", value: "FORMAT", description: "table (terminal), md (Markdown), html (one self-contained page with charts) or json (the report as data)" },
      out: { type: "string", short: "o", value: "FILE", description: "write the report to FILE and print its path (html default: .rlpipe/cost/<recipe>.html)" },
      rates: { type: "string", value: "FILE", description: "YAML rates that override the catalog: a list of {item, value, currency, unit, source, region, dateRead} (as under prices: in a recipe), or prices: with that list" },
      online: { type: "boolean", default: false, description: "read current prices from the providers' price APIs with the credentials in the environment (ModelArts: Huawei BSS; TI-ONE: DescribeBillingSpecsPrice), cached RLPIPE_PRICES_MAX_AGE_HOURS (default 24)" },
      run: { type: "string", value: "NAME", description: "compare the estimate recorded at a deployed run's deploy with what it used (billable time, counted sandbox and function usage); no recipe file" },
      "step-seconds": { type: "string", value: "S", description: "seconds per training step you measured; replaces the step-time model" },
      steps: { type: "string", multiple: true, value: "N|STAGE=N", description: "price N training steps instead of the recipe's length (schedule.totalTrainingSteps, else epochs × rows ÷ batch): N for the RL stage, STAGE=N for a named stage (repeatable)" },
      diff: { type: "string", value: "BASE.yaml", description: "compare the recipe (the head) with BASE.yaml, both priced with the same options: per line and in total (table, md or json)" },
      "fail-over": { type: "string", value: "N|N%", description: "with --diff: exit 1 when the expected total rose by more than N (CNY; or 700USD) or N% of the base's" },
      json: { ...json, description: "the report as JSON on stdout (same as --format json); errors too, as {\"error\": …}" },
      help,
    },
  },
  status: {
    usage: "status [run] [--json]",
    summary: "normalized phase of a run (or of every run deployed from here)",
    description: `Asks the provider for the run's phase (QUEUED, STARTING, RUNNING, STOPPING, SUCCEEDED, FAILED, STOPPED,
UNKNOWN) beside its own, and records it. Without a run, every run deployed from this directory: a run whose
lookup failed is shown with the reason, and the command exits 3 when any lookup failed. Unreachable providers
are retried for at most RLPIPE_RETRY_BUDGET_MS (default 20000), with a line on stderr per retry. The endpoint
in MODELARTS_ENDPOINT, TIONE_ENDPOINT or RAY_ADDRESS, when set, wins over the one in the run record.`,
    options: { json, help },
  },
  logs: {
    usage: "logs <run> [-f] [--json]",
    summary: "a run's log, or follow it to the end",
    description: `Prints the run's log. With -f it follows the log until the job ends, with a heartbeat (phase and elapsed
time) on stderr and the final phase after the last lines; the exit code then follows the job (0 SUCCEEDED, 1
FAILED or STOPPED). Ctrl-C stops following, not the job (exit 130).`,
    options: {
      follow: { type: "boolean", short: "f", default: false, description: "follow the log until the job ends" },
      json: { ...json, description: "each log line as {\"log\": …} on stdout; with -f a last {\"name\", \"phase\"…} line" },
      help,
    },
  },
  stop: {
    usage: "stop <run> [--json]",
    summary: "stop a run (idempotent)",
    description: "Asks the provider for the run's phase; a run that has ended is left alone (\"has already ended: SUCCEEDED …;\nnothing to stop\"), any other is asked to stop, and the phase it is in then is printed. Exit 0 either way\n(--json: stopRequested true or false).",
    options: { json, help },
  },
  list: {
    usage: "list [--json]",
    summary: "runs deployed from this directory",
    description: "Lists the run records in .rlpipe/runs/ (newest first), under column headers, with the last phase rlpipe saw\nand when it looked (SEEN AT; list asks no provider: rlpipe status looks again). A damaged record is reported and\nthe command exits 2.",
    options: { json, help },
  },
  report: {
    usage: "report <run> [--out FILE] [--store URI] [--log-lines N] [--json] | report <run> --url [--expires-s S]",
    summary: "one self-contained HTML page of a run: phase, curves, sandbox health, cost so far, checkpoints, log",
    description: `Writes one HTML page of a deployed run to --out (default ./<run>.html, replaced whole) and prints its path:
the recipe and provider; the phase and when the job was queued, started and ended; the training curves rlpipe
plots (reward, response length, clip ratio, tool calls, step time, validation) of the job and its stages
(<run>.<stage>) in its store; the sandbox's health per step (requests, infrastructure errors, overload answers,
timeouts, latency); the cost so far against the estimate recorded at deploy, per line with its range; the
committed checkpoints; the last log lines (secrets redacted); and the commands to follow, stop or restore it.
Inline CSS and SVG only: no script, nothing fetched, so it opens from a file or from object storage.
The provider, the store and the cost are each read on their own: what could not be read is said on the page
("status unavailable: …", "no metrics yet", "no rates: cost unknown") and on stderr, and the page is still
written (exit 0). An unknown run is exit 2.
The job's sync sidecar keeps the page in the run's store (<store>/<run>/report.html, rewritten at most every 60 s
and at the end); --url prints a presigned GET URL of it (a bearer link: share it like a password).`,
    options: {
      out: { type: "string", short: "o", value: "FILE", description: "where to write the page (default ./<run>.html)" },
      url: { type: "boolean", default: false, description: "print a presigned GET URL of the page the job keeps in the run's store (S3, OBS, COS)" },
      "expires-s": { type: "string", value: "S", description: "with --url: how long the URL is valid (default 3600, at most 604800)" },
      store,
      "log-lines": { type: "string", value: "N", description: "how many of the log's last lines the page shows (default 50, 0 for none)" },
      json: { ...json, description: "print the gathered data (rlpipe.run-page, version 1) as JSON instead of writing the page" },
      help,
    },
  },
  dashboard: {
    usage: "dashboard [--host 127.0.0.1] [--port 8765] [--store URI ...] [--refresh-s 10] [--allow-remote]",
    summary: "a local web app: every run's phase, progress, reward, sandbox errors and cost; each run's page",
    description: `Serves a table of every run deployed from this directory (.rlpipe/runs) and of the runs a console function
keeps in each --store (its RLPIPE_STATE_STORE: <URI>/runs/), across providers: phase, progress (the latest step of
the steps the estimate counts), latest reward, the sandbox's infrastructure errors per request over the last 10
steps, cost so far and the estimate. Each row opens the run's page at /runs/<run>, the page rlpipe report writes.
Pages of live runs reload every --refresh-s seconds (a meta refresh: no script); a run's data is read at most once
per interval whoever asks. It reads with the credentials the CLI uses and shows no secret (every page is
redacted); a provider or store that cannot be read makes its row say so ("status unavailable"). Runs until
SIGINT or SIGTERM (exit 0). Bound to loopback: another --host is refused (exit 2) unless --allow-remote.`,
    options: {
      host: { type: "string", default: "127.0.0.1", value: "HOST", description: "address to listen on: loopback (127.0.0.1, ::1, localhost) unless --allow-remote" },
      port: { type: "string", default: "8765", value: "PORT", description: "port to listen on (0: any free port; the URL is printed)" },
      store: { type: "string", multiple: true, value: "URI", description: "also show the runs whose records a console function keeps in this state store (s3://, obs://, cos://, file://; repeatable)" },
      "refresh-s": { type: "string", default: "10", value: "S", description: "seconds between reloads of live runs' pages, and how long a run's data is kept before it is read again (1–3600)" },
      "allow-remote": { type: "boolean", default: false, description: "allow a --host beyond loopback: the dashboard has no login, so everyone who can reach it sees your runs (a warning is printed)" },
      help,
    },
  },
  validate: {
    usage: "validate <recipe.yaml>... [--provider P] [--strict] [--json]",
    summary: "check recipes (for CI)",
    description: "Plans every recipe given for each target it declares (local when none; nothing is written), warning about\nplaceholders a deploy would refuse. Exit 0 when all plan cleanly, 2 when one does not. With --strict a\nplaceholder is an error (exit 2), as deploy treats it: CI fails on a recipe deploy would refuse.",
    options: {
      provider: { type: "string", short: "p", value: "NAME", description: `check for this provider only: ${PROVIDERS.join(", ")}` },
      strict: { type: "boolean", default: false, description: "placeholder values (rsg-xxxxxxxx, <bucket>, CHANGE_ME…) are errors, as deploy treats them, and so are the sandbox capacity warnings (sandbox_capacity, sandbox_concurrency; other warnings stay warnings)" },
      json: { ...json, description: "one {file, ok, errors, warnings, issues} object per recipe on stdout (issues: code, path, line, col)" },
      help,
    },
  },
  schema: {
    usage: "schema [--out FILE]",
    summary: "print the recipe JSON Schema (editor completion)",
    description: "Prints the JSON Schema of the recipe format (for yaml-language-server), or writes it to FILE.",
    options: {
      out: { type: "string", short: "o", value: "FILE", description: "write the schema to FILE instead of stdout" },
      help,
    },
  },
  serve: {
    usage: "serve --sandbox local|scalebox|e2b|none [--host 127.0.0.1] [--port 8080] [--token-env NAME] [options]",
    summary: "the reward/tool function as an HTTP server (local, ScaleBox or E2B sandbox)",
    description: `Serves POST /run_code, POST /common_evaluate(_batch), POST /run_jupyter (SandboxFusion/ScaleBox API),
POST /v1/rewards, GET /v1/ping, GET /v1/stats and GET /metrics (Prometheus) until SIGINT or SIGTERM. Clients send
the token in the Authorization header (bearer scheme) or as a /t/<token>/ path prefix. --sandbox e2b reads
E2B_API_KEY and E2B_DOMAIN (Tencent AGS: E2B_DOMAIN=<region>.tencentags.com).
Under load: at most --max-requests requests that run programs are in progress at once (default 16 per slot, at
least 64); the rest are answered at once with 429 and Retry-After. A request's programs are stopped when its
client disconnects or its deadline passes (X-Rlpipe-Deadline-S, else its own limits plus 120 s; 504 then).`,
    options: {
      sandbox: { type: "string", default: "local", value: "KIND", description: "where programs run: local (bubblewrap), scalebox, e2b, or none (only the runs function)" },
      host: { type: "string", default: "127.0.0.1", value: "HOST", description: "address to listen on; beyond loopback a token is required" },
      port: { type: "string", default: "8080", value: "PORT", description: "port to listen on (0: any free port)" },
      "token-env": { type: "string", value: "NAME", description: "environment variable holding the bearer token (at least 16 characters)" },
      "scalebox-url": { type: "string", multiple: true, value: "URL", description: "a ScaleBox/SandboxFusion endpoint (default $SCALEBOX_URL, comma-separated)" },
      "e2b-template": { type: "string", value: "NAME", description: "the E2B/AGS sandbox template" },
      "runs-store": { type: "string", value: "URI", description: "serve the runs function: presigned uploads into this s3://, obs:// or cos:// store" },
      "runs-secret-env": { type: "string", value: "NAME", description: "environment variable holding the secret per-run tokens derive from (with --runs-store)" },
      "usage-store": { type: "string", value: "URI", description: "write each run's usage (requests, sandbox seconds; rlpipe cost --run reads it) to <run>/usage/ in this store (file://, s3://, obs://, cos://)" },
      concurrency: { type: "string", value: "N", description: "programs run at once (for e2b: the sandbox pool size)" },
      "max-requests": { type: "string", value: "N", description: "requests that run programs admitted at once, running or waiting for a slot (default 16 per slot, at least 64); beyond it: 429 with Retry-After" },
      "overload-status": { type: "string", default: "429", value: "CODE", description: "the status an overloaded server answers: 429, or 503 or 504 for clients that retry only those (verl's sandbox_fusion client retries only 504)" },
      isolation: { type: "string", default: "warm", value: "MODE", description: "--sandbox local: warm (programs fork from long-lived sandboxes, cleaned after each program) or per-program (a fresh bubblewrap per program)" },
      "case-loop": { type: "string", default: "c", value: "LOOP", description: "--sandbox local: where a sandbox runs a program's cases: c (a small C loop built with the host's C compiler: about 30% less CPU per test case; python when there is no compiler) or python" },
      "program-namespaces": { type: "string", default: "own", value: "MODE", description: "--sandbox local: own (each program in mount, PID and IPC namespaces and scratch file systems of its own, where the kernel allows, else shared; a program that used the network gets its sandbox replaced) or shared (programs share the sandbox's namespaces and are cleaned up after: for comparison)" },
      "python-env": { type: "string", value: "DIR", description: "--sandbox local: programs get this runtime environment (numpy, sympy, pandas, …; lodash, jest, tsx; Go's prebuilt library), made by rlpipe sandbox setup --python-env DIR; mounted read-only" },
      "strict-verdicts": { type: "boolean", default: false, description: "refuse a job with a test case whose verdict would be the exit status of the process running the program's code (an assert tail rlpipe cannot take apart, an assert test on a remote sandbox): /v1/rewards scores it invalid_test_cases, /common_evaluate answers 400; each reply's cases say how their verdicts were reached (docs/VERDICTS.md)" },
      quiet: { type: "boolean", default: false, description: "do not log requests on stderr" },
      help,
    },
  },
  eval: {
    usage: "eval <data.jsonl> [--reward-url URL | --sandbox local] [--min-pass-rate X] [--out FILE] [--store URI --run NAME] [options]",
    summary: "score responses against their test cases (reference solutions: a preflight)",
    description: `Each line is a JSON object with ground_truth (test cases: {inputs, outputs[, fn_name]} or SandboxFusion's
test_cases) and the response in --response-field. Responses are scored by the rlpipe function at --reward-url
(default $RLPIPE_REWARD_URL), else by the local sandbox in this process. Exit 1 when a sandbox failed or the
pass rate is below --min-pass-rate; 3 when the reward function cannot be reached.`,
    options: {
      "response-field": { type: "string", default: "solution", value: "FIELD", description: "the field holding the response to score" },
      "reward-url": { type: "string", value: "URL", description: "the rlpipe function (rlpipe serve) to score with (default $RLPIPE_REWARD_URL)" },
      sandbox: { type: "string", value: "local", description: "score in this process with the local sandbox instead of a reward URL" },
      "token-env": { type: "string", value: "NAME", description: "environment variable holding the reward function's bearer token" },
      batch: { type: "string", default: "64", value: "N", description: "rows per request (1–4096)" },
      "min-pass-rate": { type: "string", value: "X", description: "exit 1 when the pass rate is below X (0–1)" },
      out: { type: "string", value: "FILE", description: "write per-row results (JSON) to FILE" },
      "metrics-file": { type: "string", value: "FILE", description: "append one verl-style metrics line to FILE" },
      store,
      run: { type: "string", value: "NAME", description: "run to store results under (default $RLPIPE_RUN.<stage>)" },
      stage: { type: "string", value: "ID", description: "stage name for the stored result (default eval)" },
      json: { ...json, description: "the summary as JSON on stdout" },
      help,
    },
  },
  sync: {
    usage: "sync <run> --watch DIR [--metrics FILE ...] [--store URI] [--interval-s 30] [--once] [--keep-last K] [--keep-every M]",
    summary: "upload finished checkpoints (durable commits) and metrics to object storage",
    description: `Uploads every finished verl checkpoint step under DIR (global_step_N) with a manifest, and commits it only
when every file is stored; repeats every --interval-s until SIGINT/SIGTERM (then one last pass). Credentials come
from the environment (AWS_*, HUAWEICLOUD_SDK_AK/SK or OBS_*, TENCENTCLOUD_SECRET_ID/KEY or COS_*), never flags.`,
    options: {
      store,
      json: { ...json, description: "one JSON line per pass on stdout" },
      help,
      watch: { type: "string", value: "DIR", description: "the checkpoint directory verl writes (trainer.default_local_dir); with --once it must exist\n(exit 2), else sync waits for verl's first save to make it" },
      metrics: { type: "string", value: "FILE", description: "also upload this metrics JSONL file" },
      "interval-s": { type: "string", default: "30", value: "S", description: "seconds between passes" },
      once: { type: "boolean", default: false, description: "one pass, then exit" },
      "keep-last": { type: "string", value: "K", description: "keep only the newest K committed steps in the store" },
      "keep-every": { type: "string", value: "M", description: "also keep every step divisible by M" },
      "recipe-hash": { type: "string", value: "H", description: "record the recipe hash in each manifest" },
      page: { type: "string", value: "JOB", description: "also keep JOB's page (rlpipe report) at <store>/JOB/report.html, one PUT per rewrite" },
      "page-interval-s": { type: "string", default: "60", value: "S", description: "with --page: rewrite the page at most every S seconds (and on the last pass)" },
      "page-recipe": { type: "string", value: "NAME", description: "with --page: the recipe name the page shows" },
      "page-provider": { type: "string", value: "P", description: "with --page: the provider the page names" },
    },
  },
  checkpoints: {
    usage: "checkpoints <run> [--store URI] [--json]",
    summary: "list a run's committed checkpoint steps",
    description: "Lists the committed steps of a run in the store, with file counts, sizes and commit times.",
    options: { store, json, help },
  },
  restore: {
    usage: "restore <run> DIR [--step N] [--store URI] [--force] [--json]",
    summary: "download and verify a step into the layout verl resumes from",
    description: "Downloads a committed step (the newest, or --step N) into DIR/global_step_N, checking every file's SHA-256\nagainst the manifest, and writes latest_checkpointed_iteration.txt. Nothing lands in DIR until the whole step\nis verified; exit 1 when a file does not verify (DIR is left as it was). DIR must be empty or new unless --force.\nShows bytes, rate and ETA on stderr (a line every RLPIPE_PROGRESS_S seconds when stderr is not a terminal).",
    options: {
      store,
      force: { type: "boolean", default: false, description: "restore into a directory that is not empty: replace global_step_N there as a whole and point\nlatest_checkpointed_iteration.txt at it (said when that moves it back)" },
      json: { ...json, description: "the restored step as JSON on stdout" },
      help,
      step: { type: "string", value: "N", description: "the step to restore (default the newest committed)" },
    },
  },
  metrics: {
    usage: "metrics <run> [<run> ...] [--store URI] [--plot FILE.png|FILE.svg] [--smooth W] [--series a,b,...] [--json]",
    summary: "latest values of the main training series, and a plot",
    description: "Prints the latest value of the main training series of each run from the store; --plot draws one panel per\nseries on a shared step axis (several runs overlaid, with a legend), as PNG or SVG by the file's extension.\nThe store keeps each stage of a deployed job as the run <job>.<stage>; a job's name (as rlpipe list shows it)\nstands for all its stages' runs.",
    options: {
      store,
      json: { ...json, description: "the latest values as JSON on stdout" },
      help,
      plot: { type: "string", value: "FILE", description: "write a plot of the series to FILE" },
      series: { type: "string", value: "a,b,...", description: "the series to plot (default the main ones)" },
      smooth: { type: "string", value: "W", description: "TensorBoard-style EMA weight in [0, 1) drawn over the faint raw values" },
    },
  },
  "run-token": {
    usage: "run-token <run> --secret-env NAME --out FILE",
    summary: "write the per-run token a job presents to the runs function",
    description: "Derives the run's token from the secret in --secret-env and writes it to FILE (mode 600); it is a\ncredential, so it is never printed.",
    options: {
      "secret-env": { type: "string", value: "NAME", description: "environment variable holding the runs function's secret (≥ 16 characters)" },
      out: { type: "string", value: "FILE", description: "where to write the token" },
      help,
    },
  },
  sandbox: {
    usage: "sandbox setup [--languages a,b,...] [--python-env DIR] [--dry-run] [--json]",
    summary: "install the local sandbox's language toolchains (Debian packages) and its Python environment; list the languages it offers",
    description: `Installs the Debian packages of the local sandbox's toolchains with apt-get (as root, or with sudo):
${Object.entries(TOOLCHAIN_PACKAGES).map(([l, p]) => `${l} (${[...p, ...(TOOLCHAIN_LIBRARIES[l] ?? [])].join(" ")})`).join(", ")}.
Python needs nothing (the sandbox's own interpreter); a language whose toolchain is already installed is skipped. Swift
(Debian 13's swiftlang, newer than this host's C library) and Julia (last packaged in Debian 11) get a Debian root of their
own, built with debootstrap under $RLPIPE_SANDBOX_ROOTS (default /var/lib/rlpipe/roots; ~3 GB and ~0.7 GB, a minute or two
each), which their sandboxes see as /usr. Then prints the
languages rlpipe serve --sandbox local offers on this machine. With --python-env DIR (and no --languages) it builds only the
runtime environment programs use: a virtualenv of /usr/bin/python3 with the pinned packages of
adapters/sandboxes/toolchains/python-env/requirements.txt (numpy, scipy, sympy, pandas, networkx, matplotlib, scikit-learn, …), the
Node packages of its package.json (lodash, jest with babel, tsx, …), and where Go and Java are installed Go's prebuilt
standard library, a testify module and SandboxFusion's Java jars, for rlpipe serve --python-env DIR (which then also offers
typescript, jest, pytest, go_test and junit). DIR must be where every user can reach it (sandboxes run as users of their own). Nothing to do when DIR
was built from the same lists. Exit 3 when apt-get, pip, npm, go or the download of a jar fails.`,
    options: {
      languages: { type: "string", value: "LIST", description: "comma-separated languages to install (default: all of them, unless --python-env is given)" },
      "python-env": { type: "string", value: "DIR", description: "build the runtime environment for programs at DIR (pip, npm, go, Maven Central)" },
      "dry-run": { type: "boolean", default: false, description: "say what would be installed, install nothing" },
      json: { ...json, description: "packages, what was installed and the languages offered, as JSON" },
      help,
    },
  },
  tione: {
    usage: "tione inspect <task-id> [--region REGION] [--endpoint URL] [--recipe FILE] [--json]",
    summary: "read a TI-ONE task (e.g. a console-made Ray task) as a targets.tione snippet",
    description: `Reads a TI-ONE training task (for example one created once in the console in Ray mode) and prints the exact
fields to paste under targets.tione of a recipe. Credentials: TENCENTCLOUD_SECRET_ID / TENCENTCLOUD_SECRET_KEY
(+ TENCENTCLOUD_SESSION_TOKEN) or ~/.tencentcloud/credentials. A task in a non-default workspace needs its
TiProjectId: the recipe's targets.tione.tiProjectId (with --recipe), else TENCENTCLOUD_TIONE_PROJECT_ID; deploy
uses the same two, and a run's later calls use the workspace recorded at its create.`,
    options: {
      region: { type: "string", value: "REGION", description: "the task's region (default the recipe's targets.tione.region, else $TENCENTCLOUD_REGION)" },
      endpoint: { type: "string", value: "URL", description: "API endpoint (TIONE_ENDPOINT wins; default tione.tencentcloudapi.com)" },
      recipe: { type: "string", value: "FILE", description: "read region, endpoint and tiProjectId from this recipe's targets.tione" },
      json: { ...json, description: "the task, frameworks and snippet as JSON" },
      help,
    },
  },
  package: {
    usage: `package --platform ${FUNCTION_PLATFORMS.join("|")} [--function ${FUNCTION_NAMES.join("|")}]... [--out DIR] [--json]`,
    summary: "bundle the cloud functions (reward, runs, console) into one zip each for Lambda, FunctionGraph or SCF",
    description: `Bundles each function's compiled entry (dist/functions/entries/<platform>/<function>.js) with esbuild for the
platform's Node runtime (lambda: nodejs22.x, ES module index.mjs; functiongraph: Node.js20.15, CommonJS index.js;
scf: Nodejs18.15, CommonJS index.js), minified, with everything it imports, and writes
rlpipe-<function>-<platform>.zip (the handler file at the zip root: handler index.handler, on SCF
index.main_handler) plus rlpipe-functions.json into DIR. Prints the size report: raw and zipped bytes, the cloud
SDKs each bundle holds and its largest inputs. The same build gives the same zip, byte for byte.`,
    options: {
      platform: { type: "string", value: "NAME", description: `the platform to bundle for: ${FUNCTION_PLATFORMS.join(", ")}` },
      function: { type: "string", multiple: true, value: "NAME", description: `a function to bundle: ${FUNCTION_NAMES.join(", ")} (default all three; comma-separated works too)` },
      out: { type: "string", short: "o", value: "DIR", description: "where the zips go (default .rlpipe/functions/<platform>)" },
      json: { ...json, description: "the size report as JSON on stdout" },
      help,
    },
  },
  functions: {
    usage: "functions deploy --platform functiongraph|scf [--function NAME]... [--region R] [--name-prefix P] [--zip DIR] [--dry-run] [--json]",
    summary: "create or update the packaged functions on FunctionGraph or SCF (idempotent)",
    description: `Deploys the zips \`rlpipe package\` wrote: finds each function by name (<prefix><function>), creates it when
it is missing, otherwise uploads the code only when the zip changed and writes the configuration only when the
zip or a setting changed, so running it again with the same zip and flags changes nothing ("unchanged"). Environment variables for the functions
come from --env and --vars-file; a variable whose name looks like a secret (…_KEY, …_SECRET, …_TOKEN) and every
--secret NAME (its value read from this shell) goes to FunctionGraph's encrypted_user_data, or to SCF's
environment, and is never printed. Credentials: functiongraph HUAWEICLOUD_SDK_AK/SK (+ SECURITY_TOKEN) and
HUAWEICLOUD_SDK_PROJECT_ID, or ~/.huaweicloud/credentials; scf TENCENTCLOUD_SECRET_ID/KEY or
~/.tencentcloud/credentials. FUNCTIONGRAPH_ENDPOINT / SCF_ENDPOINT override the endpoints.
Triggers are created and kept as wanted, idempotently: an HTTP trigger for reward and runs (SCF: a function URL;
FunctionGraph: an APIG route at RLPIPE_BASE_PATH in --apig-group on the dedicated gateway --apig-instance), and for console an OBS / COS upload trigger on
RLPIPE_CONSOLE_RECIPE_PREFIX (obs://bucket/prefix, cos://bucket-appid/prefix).`,
    options: {
      platform: { type: "string", value: "NAME", description: "functiongraph or scf (Lambda is deployed by the CDK app in cdk/)" },
      function: { type: "string", multiple: true, value: "NAME", description: `a function to deploy: ${FUNCTION_NAMES.join(", ")} (default: those packaged in --zip; comma-separated works too)` },
      region: { type: "string", value: "REGION", description: "the region (default $HUAWEICLOUD_REGION or $TENCENTCLOUD_REGION)" },
      "name-prefix": { type: "string", default: "rlpipe-", value: "P", description: "function names are <P><function>" },
      zip: { type: "string", value: "DIR", description: "where `rlpipe package` wrote the zips (default .rlpipe/functions/<platform>)" },
      env: { type: "string", multiple: true, value: "KEY=VALUE", description: "an environment variable for every deployed function" },
      "vars-file": { type: "string", value: "FILE", description: "environment variables for the functions, one KEY=VALUE a line (# comments); not --env-file, which Node reads itself" },
      secret: { type: "string", multiple: true, value: "NAME", description: "pass this shell's $NAME to the functions as a secret (encrypted on FunctionGraph)" },
      runtime: { type: "string", value: "NAME", description: "the platform's runtime name (default functiongraph Node.js20.15, scf Nodejs18.15)" },
      "memory-mb": { type: "string", value: "MB", description: "memory per function (default 512)" },
      "timeout-s": { type: "string", value: "S", description: "execution timeout in seconds (default reward 300, runs 30, console 120)" },
      namespace: { type: "string", value: "NAME", description: "SCF namespace (default default)" },
      app: { type: "string", value: "NAME", description: "FunctionGraph application (package) the functions belong to (default default)" },
      role: { type: "string", value: "NAME", description: "the FunctionGraph agency (xrole) or SCF execution role the functions run as; checked to exist first" },
      "apig-group": { type: "string", value: "ID", description: "FunctionGraph: the API Gateway group for the HTTP triggers (SCF makes a function URL)" },
      "apig-instance": { type: "string", value: "ID", description: "FunctionGraph: the dedicated API gateway (instance id) of --apig-group: DEDICATEDGATEWAY triggers (default $RLPIPE_APIG_INSTANCE_ID)" },
      "apig-shared": { type: "boolean", default: false, description: "FunctionGraph: routes on the shared API gateway (type APIG, no instance; being discontinued, new accounts have none)" },
      "dry-run": { type: "boolean", default: false, description: "show the create and update requests (code and secrets masked); send nothing, need no credentials" },
      json: { ...json, description: "one result per function as JSON on stdout" },
      help,
    },
  },
} as const satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

export function isCommand(name: string): name is CommandName {
  return Object.prototype.hasOwnProperty.call(COMMANDS, name);
}

/** `  -p, --provider NAME   description` lines, aligned. */
function optionLines(options: Readonly<Record<string, OptionSpec>>): string[] {
  const heads = Object.entries(options).map(([name, o]) => {
    const value = o.type === "string" ? ` ${o.value ?? "VALUE"}` : "";
    return [`${o.short === undefined ? "    " : `-${o.short}, `}--${name}${value}`, o] as const;
  });
  const width = Math.min(28, Math.max(...heads.map(([h]) => h.length)));
  return heads.map(([h, o]) => {
    const dflt = o.default === undefined || o.default === false || o.type === "boolean" ? "" : ` (default ${String(o.default)})`;
    const more = o.multiple === true ? " (repeatable)" : "";
    const pad = h.length > width ? `\n  ${" ".repeat(width)}  ` : " ".repeat(width - h.length + 2);
    return `  ${h}${pad}${o.description}${dflt}${more}`;
  });
}

export function formatHelp(name: CommandName): string {
  const spec: CommandSpec = COMMANDS[name];
  return [
    `usage: rlpipe ${spec.usage}`,
    "",
    spec.description,
    "",
    "options:",
    ...optionLines(spec.options),
    "",
    "exit codes: 0 ok, 1 failed, 2 invalid input, 3 provider/network/auth, 4 internal, 130 cancelled (rlpipe --help)",
  ].join("\n");
}

export function exitCodeTable(): string {
  return EXIT_CODE_MEANINGS.map(([code, meaning]) => `  ${String(code).padEnd(4)} ${meaning}`).join("\n");
}

export function formatMainHelp(): string {
  const width = Math.max(...COMMAND_NAMES.map((n) => n.length));
  return `rlpipe ${VERSION}: one verl recipe → jobs on ModelArts, TI-ONE, Ray, Slurm or a local machine

usage: rlpipe <command> [options]

commands:
${COMMAND_NAMES.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n].summary}`).join("\n")}

  rlpipe <command> --help (or rlpipe help <command>) describes a command and every option.
  rlpipe --version (-V) prints the version.

exit codes:
${exitCodeTable()}

With --json, an error is also printed on stdout as {"error": {"code", "message", "hint", "exitCode", ...}}.`;
}
