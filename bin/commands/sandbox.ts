// rlpipe sandbox setup [--languages a,b] [--python-env DIR] [--dry-run] [--json]: installs the Debian packages of the local
// sandbox's toolchains (adapters/sandboxes/toolchains/toolchains.ts) and its Python environment, then says which languages it offers.
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { RlpipeError } from "../../core/errors.js";
import { installPythonEnv, missingPackages, type PinnedPackage, pinnedNodePackages, pinnedPackages, placeError } from "../../adapters/sandboxes/toolchains/python-env.js";
import { detectToolchains, TOOLCHAIN_LIBRARIES, TOOLCHAIN_PACKAGES } from "../../adapters/sandboxes/toolchains/toolchains.js";
import { detectRoots, installDebianRoot, rootDir, rootSpecFor } from "../../adapters/sandboxes/toolchains/debian-root.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";

function installed(pkg: string): boolean {
  const r = spawnSync("dpkg-query", ["-W", "-f=${Status}", pkg], { encoding: "utf8" });
  return r.status === 0 && r.stdout.trim() === "install ok installed";
}

function apt(args: readonly string[]): { ok: boolean; output: string } {
  const root = process.getuid?.() === 0;
  const r = spawnSync(root ? "apt-get" : "sudo", [...(root ? [] : ["apt-get"]), ...args], {
    encoding: "utf8", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error === undefined ? "" : r.error.message}` };
}

/** What rlpipe serve --sandbox local offers here: Python, the host's toolchains, the roots' (debian-root.ts). */
function offeredLanguages(): string[] {
  return ["python", ...detectToolchains().map((t) => t.language), ...detectRoots().flatMap((r) => r.spec.toolchains.map((t) => t.language))];
}

export function runSandbox(argv: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({ args: [...argv], options: COMMANDS.sandbox.options, allowPositionals: true, strict: true });
  if (values.help) { io.out(formatHelp("sandbox")); return 0; }
  if (positionals[0] !== "setup" || positionals.length !== 1) throw usage(`rlpipe sandbox takes one subcommand: setup (got ${positionals.join(" ") || "none"})`);
  const known = Object.keys(TOOLCHAIN_PACKAGES);
  const envDir = values["python-env"];
  const languages = values.languages === undefined ? (envDir === undefined ? known : []) : values.languages.split(",").map((l) => l.trim()).filter((l) => l !== "");
  const unknown = languages.filter((l) => !known.includes(l));
  if (unknown.length > 0) throw usage(`--languages: ${unknown.join(", ")} ${unknown.length === 1 ? "is" : "are"} not a language rlpipe installs (known: ${known.join(", ")}; Python needs nothing)`);
  // A language whose toolchain is already there (Go from go.dev in /usr/local/go, say) needs no package.
  const before = new Set(offeredLanguages());
  const packages = [...new Set([...languages.filter((l) => !before.has(l)).flatMap((l) => TOOLCHAIN_PACKAGES[l]!), ...languages.flatMap((l) => TOOLCHAIN_LIBRARIES[l] ?? [])])].sort();
  const missing = packages.filter((p) => !installed(p));
  const command = ["install", "-y", "--no-install-recommends", ...missing];
  if (languages.length === 0) { /* only the Python environment */ }
  else if (missing.length === 0) io.err(`rlpipe sandbox setup: the host packages of ${languages.join(", ")} are installed`);
  else if (values["dry-run"]) io.err(`rlpipe sandbox setup: would run apt-get ${command.join(" ")}`);
  else {
    io.err(`rlpipe sandbox setup: apt-get ${command.join(" ")}`);
    let r = apt(command);
    if (!r.ok) {
      // A fresh machine's package lists may be stale or empty.
      const update = apt(["update"]);
      r = update.ok ? apt(command) : update;
    }
    if (!r.ok) {
      throw new RlpipeError("apt_failed", `apt-get could not install ${missing.join(", ")}: ${r.output.trim().split("\n").slice(-3).join(" | ")}`, {
        exitCode: 3, hint: "run as root or with sudo on a Debian/Ubuntu machine that reaches its package mirror",
      });
    }
  }
  // Languages only a newer Debian release packages: a root of their own, built with debootstrap (installed above).
  const specs = [...new Set(languages.filter((l) => !before.has(l)).map(rootSpecFor).filter((s) => s !== undefined))];
  for (const spec of specs) {
    const dir = rootDir(spec);
    if (values["dry-run"]) { io.err(`rlpipe sandbox setup: would build the Debian ${spec.suite} root at ${dir} (${spec.packages.join(", ")})`); continue; }
    io.err(`rlpipe sandbox setup: building the Debian ${spec.suite} root at ${dir} (${spec.packages.join(", ")}; a few minutes)`);
    try {
      installDebianRoot(spec, dir, (line) => io.err(`rlpipe sandbox setup: ${line}`));
    } catch (e) {
      const err = e as Error & { hint?: string };
      throw new RlpipeError("root_build_failed", err.message, { exitCode: 3, ...(err.hint === undefined ? {} : { hint: err.hint }) });
    }
  }
  const env = envDir === undefined ? undefined : pythonEnv(envDir, values["dry-run"] === true, io);
  const offered = offeredLanguages();
  const absent = languages.filter((l) => !offered.includes(l));
  if (values.json) io.out(JSON.stringify({ packages, installed: values["dry-run"] ? [] : missing, dryRun: values["dry-run"] === true, languages: offered, unavailable: absent, ...(env === undefined ? {} : { pythonEnv: env }) }));
  else {
    io.out(`languages: ${offered.join(", ")}`);
    if (absent.length > 0) io.out(`not available: ${absent.join(", ")}${values["dry-run"] ? " (dry run: nothing was installed)" : ""}`);
    if (env !== undefined) io.out(`python env: ${env.dir} (${env.packages.length} packages, Node ${env.nodePackages.map((p) => p.name).join(", ")}${env.built ? ", built now" : ""}${env.dryRun ? ", dry run: not built" : ""}); serve it with rlpipe serve --python-env ${env.dir}`);
  }
  return 0;
}

function pythonEnv(dir: string, dryRun: boolean, io: Io): { dir: string; built: boolean; dryRun: boolean; packages: PinnedPackage[]; nodePackages: PinnedPackage[] } {
  const wanted = pinnedPackages();
  const wantedNode = pinnedNodePackages();
  if (dryRun) {
    io.err(`rlpipe sandbox setup: would build the Python environment ${dir} with pip (${wanted.length} pinned packages) and npm (${wantedNode.map((p) => p.name).join(", ")})`);
    return { dir, built: false, dryRun: true, packages: wanted, nodePackages: wantedNode };
  }
  // Say so before minutes of building: sandboxes run as users of their own, who must reach it.
  const place = placeError(dir);
  if (place !== undefined) throw place;
  io.err(`rlpipe sandbox setup: Python environment ${dir} (${wanted.length} pinned packages; Node: ${wantedNode.map((p) => p.name).join(", ")})`);
  const { installed, env } = installPythonEnv(dir, { log: (l) => io.err(`rlpipe sandbox setup: ${l}`) });
  const lacking = missingPackages(env, wanted);
  if (lacking.length > 0) throw new RlpipeError("python_env_incomplete", `the Python environment ${dir} lacks ${lacking.join(", ")}`, { exitCode: 3, hint: `remove ${dir} and run rlpipe sandbox setup --python-env ${dir} again` });
  return { dir: env.dir, built: installed, dryRun: false, packages: wanted, nodePackages: wantedNode };
}
