// Toolchains that the host's Debian release does not package — Swift (Debian 13's swiftlang, built against a newer
// C library than the host's) and Julia (last packaged in Debian 11) — each in a root file system of its own:
// `rlpipe sandbox setup --languages swift,julia` builds them with debootstrap and each release's own apt, and the
// local sandbox runs those languages in sandboxes whose /usr is the root's (local.ts: a LocalSandbox with `root`),
// under the same bubblewrap confinement, limits and harness — run by the root's own Python.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SandboxError } from "../sandbox.js";
import { COMPILE_FLOOR_MS, type Toolchain } from "./toolchains.js";
import { JULIA_CALL_DRIVER, swiftCallDriver } from "./call-drivers.js";

export interface DebianRootSpec {
  /** The Debian release (debootstrap's suite). */
  readonly suite: string;
  /** Packages installed into it besides the minimal base (python3 runs the sandbox harness). */
  readonly packages: readonly string[];
  /** The languages its toolchains add, and how each runs (paths inside the sandbox, whose /usr is the root's). */
  readonly toolchains: readonly Toolchain[];
}

const SRC = "/work/src";

/** Swift as SandboxFusion runs it: swiftc, then the binary (Foundation and Dispatch come with swiftlang). */
const SWIFT: Toolchain = {
  language: "swift", minCompileTimeoutMs: COMPILE_FLOOR_MS.slow, file: "main.swift", compile: ["/usr/bin/swiftc", `${SRC}/main.swift`, "-o", `${SRC}/main`], run: [`${SRC}/main`],
  // swift-frontend and clang reserve address space far beyond what they use; Dispatch starts threads.
  addressSpaceBytes: 16 * 2 ** 30, maxProcesses: 128, callDriver: swiftCallDriver,
  // A crash prints its message, not Swift 6's backtracer's registers and memory dump (and no ptrace attempt).
  env: { SWIFT_BACKTRACE: "enable=no" },
};

/** Julia as SandboxFusion runs it (`julia main.jl`): Debian 11's 1.5, the last Debian release that packages it. */
const JULIA: Toolchain = {
  language: "julia", file: "main.jl", run: ["/usr/bin/julia", `${SRC}/main.jl`],
  // Its runtime reserves address space for the GC and LLVM's JIT; it starts threads of its own.
  addressSpaceBytes: 16 * 2 ** 30, maxProcesses: 64, callDriver: () => ({ text: JULIA_CALL_DRIVER }),
};

export const DEBIAN_ROOTS: readonly DebianRootSpec[] = [
  { suite: "trixie", packages: ["libc6-dev", "python3", "swiftlang"], toolchains: [SWIFT] },
  { suite: "bullseye", packages: ["julia", "python3"], toolchains: [JULIA] },
];

/** The languages that come in a Debian root, and the root's spec. */
export function rootSpecFor(language: string): DebianRootSpec | undefined {
  return DEBIAN_ROOTS.find((r) => r.toolchains.some((t) => t.language === language));
}

/** Where roots live: root-owned and readable by every user (the sandboxes run as users of their own). */
export function rootsDir(): string {
  return process.env.RLPIPE_SANDBOX_ROOTS ?? "/var/lib/rlpipe/roots";
}

export function rootDir(spec: DebianRootSpec, base: string = rootsDir()): string {
  return join(base, `debian-${spec.suite}`);
}

/** Written last into a finished root: what it was built from. */
const MARKER = ".rlpipe-root";

function markerText(spec: DebianRootSpec): string {
  return `${spec.suite} ${[...spec.packages].sort().join(" ")}\n`;
}

/** The roots that are built here (marker present and current), with their toolchains. */
export function detectRoots(base: string = rootsDir()): { dir: string; spec: DebianRootSpec }[] {
  return DEBIAN_ROOTS.map((spec) => ({ dir: rootDir(spec, base), spec })).filter(({ dir, spec }) => {
    try {
      return readFileSync(join(dir, MARKER), "utf8") === markerText(spec) && existsSync(join(dir, "usr", "bin", "python3"));
    } catch {
      return false;
    }
  });
}

/** The host's Debian mirror (its apt sources), for the root's release; deb.debian.org when none is configured. */
export function debianMirror(): string {
  for (const f of ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]) {
    let text: string;
    try { text = readFileSync(f, "utf8"); } catch { continue; }
    const uri = /^URIs:\s*(\S+)/m.exec(text)?.[1] ?? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+/m.exec(text)?.[1];
    if (uri !== undefined && !uri.includes("security")) return uri;
  }
  return "http://deb.debian.org/debian";
}

function step(log: (line: string) => void, what: string, cmd: string, args: readonly string[]): void {
  log(`${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { encoding: "utf8", env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", DEBIAN_FRONTEND: "noninteractive", LANG: "C.UTF-8" }, maxBuffer: 1 << 28 });
  if (r.status !== 0) {
    const out = `${r.stdout ?? ""}${r.stderr ?? ""}${r.error?.message ?? ""}`.trim().split("\n").slice(-4).join(" | ");
    throw new SandboxError("root_build_failed", `could not ${what}: ${out}`, { hint: "run as root on a Debian machine that reaches its package mirror (debootstrap is installed with the language)" });
  }
}

/**
 * Builds the root for `spec` at `dir` (beside it first, renamed into place when complete; nothing to do when it was
 * built from the same spec). Needs root: debootstrap, then the release's own apt inside it.
 */
export function installDebianRoot(spec: DebianRootSpec, dir: string = rootDir(spec), log: (line: string) => void = () => {}): { built: boolean } {
  if (existsSync(join(dir, MARKER)) && readFileSync(join(dir, MARKER), "utf8") === markerText(spec)) return { built: false };
  if (process.getuid?.() !== 0) throw new SandboxError("root_build_failed", `building the Debian ${spec.suite} root for ${spec.toolchains.map((t) => t.language).join(", ")} needs root (debootstrap, chroot)`, { hint: "run rlpipe sandbox setup as root" });
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true, mode: 0o755 });
  try {
    step(log, `bootstrap Debian ${spec.suite}`, "debootstrap", ["--variant=minbase", spec.suite, partial, debianMirror()]);
    step(log, `install ${spec.packages.join(", ")} in the ${spec.suite} root`, "chroot", [partial, "apt-get", "install", "-y", "-q", "--no-install-recommends", ...spec.packages]);
    step(log, "drop the downloaded packages", "chroot", [partial, "apt-get", "clean"]);
    writeFileSync(join(partial, MARKER), markerText(spec));
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } catch (e) {
    rmSync(partial, { recursive: true, force: true });
    throw e;
  }
  if ((statSync(dir).mode & 0o005) !== 0o005) throw new SandboxError("root_build_failed", `${dir} is not readable by other users, as the sandboxes' users must`);
  return { built: true };
}
