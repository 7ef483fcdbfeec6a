// The languages the local sandbox runs besides Python (which the harness runs in its own interpreter): where each
// toolchain lives on a Debian host, how a program is built once (in /work/src) and run per test case. A language is
// offered when its toolchain is installed under a path every sandbox uid can read (/usr, or what `binds` adds).
// `rlpipe sandbox setup` installs the ones Debian packages (TOOLCHAIN_PACKAGES).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

export interface Toolchain {
  readonly language: string;
  /** The source file's name in /work/src (Java needs Main.java). */
  readonly file: string;
  /** Build step, run once per program in /work/src (absolute paths). */
  readonly compile?: readonly string[];
  /** Run step per test case, in the case's own directory; `{mem}` is the memory limit in MB. */
  readonly run: readonly string[];
  /** Variables added to the sandbox's few (PATH, HOME, TMPDIR, LANG). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The address-space limit instead of the memory limit, for runtimes that reserve far more than they use (V8, the
   * JVM, Go); their heap is bounded by their own flag (`{mem}`) instead.
   */
  readonly addressSpaceBytes?: number;
  /** The process limit for the compiler and the program (threads count: the JVM and Go start many). */
  readonly maxProcesses?: number;
  /** Host paths bound read-only into the sandbox, when they exist (configuration a toolchain reads outside /usr). */
  readonly binds?: readonly string[];
}

const SRC = "/work/src";
const BIG_ADDRESS_SPACE = 16 * 2 ** 30;

function first(...paths: string[]): string | undefined {
  return paths.find((p) => existsSync(p));
}

/** The JDK with javac, Debian's first (its /etc configuration is bound as well). */
function jdk(): string | undefined {
  const root = "/usr/lib/jvm";
  let names: string[] = [];
  try { names = readdirSync(root).sort(); } catch { return undefined; }
  const ordered = [...names.filter((n) => /^java-\d+-openjdk/.test(n)), ...names.filter((n) => !/^java-\d+-openjdk/.test(n))];
  return ordered.map((n) => join(root, n)).find((d) => existsSync(join(d, "bin", "javac")));
}

/** Every language whose toolchain is installed here, in a stable order. */
export function detectToolchains(): Toolchain[] {
  const out: Toolchain[] = [];
  const gxx = first("/usr/bin/g++");
  if (gxx !== undefined) out.push({ language: "cpp", file: "main.cpp", compile: [gxx, "-O2", "-std=c++17", "-pipe", "-o", `${SRC}/main`, `${SRC}/main.cpp`], run: [`${SRC}/main`] });
  const node = first("/usr/bin/node", "/usr/local/bin/node");
  if (node !== undefined && node.startsWith("/usr/")) out.push({ language: "nodejs", file: "main.js", run: [node, "--max-old-space-size={mem}", `${SRC}/main.js`], addressSpaceBytes: BIG_ADDRESS_SPACE });
  const go = first("/usr/local/go/bin/go", "/usr/lib/go/bin/go", "/usr/bin/go");
  if (go !== undefined) {
    out.push({
      language: "go", file: "main.go", compile: [go, "build", "-o", `${SRC}/main`, `${SRC}/main.go`], run: [`${SRC}/main`],
      // A private build cache per program (GOCACHE in /tmp, emptied after it); GOPATH and modules off the network.
      env: { GOCACHE: "/tmp/.go-cache", GOPATH: "/tmp/.go", GO111MODULE: "off", GOTOOLCHAIN: "local", CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false", GOMAXPROCS: "2" },
      addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256,
    });
  }
  const java = jdk();
  if (java !== undefined) {
    out.push({
      language: "java", file: "Main.java", compile: [join(java, "bin", "javac"), "-encoding", "UTF-8", "-d", SRC, `${SRC}/Main.java`],
      run: [join(java, "bin", "java"), "-Xmx{mem}m", "-Xss64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", SRC, "Main"],
      addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256, binds: ["/etc/java-17-openjdk", "/etc/java-21-openjdk"],
    });
  }
  const rustc = first("/usr/bin/rustc");
  if (rustc !== undefined) out.push({ language: "rust", file: "main.rs", compile: [rustc, "-O", "--edition", "2021", "-o", `${SRC}/main`, `${SRC}/main.rs`], run: [`${SRC}/main`], maxProcesses: 64 });
  const bash = first("/usr/bin/bash", "/bin/bash");
  if (bash !== undefined) out.push({ language: "bash", file: "main.sh", run: ["/usr/bin/bash", `${SRC}/main.sh`] });
  const perl = first("/usr/bin/perl");
  if (perl !== undefined) out.push({ language: "perl", file: "main.pl", run: [perl, `${SRC}/main.pl`] });
  const php = first("/usr/bin/php");
  if (php !== undefined) out.push({ language: "php", file: "main.php", run: [php, "-d", "memory_limit=-1", `${SRC}/main.php`], binds: ["/etc/php"] });
  const ruby = first("/usr/bin/ruby");
  if (ruby !== undefined) out.push({ language: "ruby", file: "main.rb", run: [ruby, `${SRC}/main.rb`] });
  const lua = first("/usr/bin/lua5.4", "/usr/bin/lua5.3", "/usr/bin/lua");
  if (lua !== undefined) out.push({ language: "lua", file: "main.lua", run: [lua, `${SRC}/main.lua`] });
  const rscript = first("/usr/bin/Rscript");
  if (rscript !== undefined) out.push({ language: "R", file: "main.R", run: [rscript, `${SRC}/main.R`], binds: ["/etc/R"], addressSpaceBytes: BIG_ADDRESS_SPACE });
  return out;
}

/** Debian packages per language, for `rlpipe sandbox setup --languages`. */
export const TOOLCHAIN_PACKAGES: Readonly<Record<string, readonly string[]>> = {
  cpp: ["g++"], nodejs: ["nodejs"], go: ["golang-go"], java: ["openjdk-17-jdk-headless"], rust: ["rustc"], bash: ["bash"],
  perl: ["perl"], php: ["php-cli"], ruby: ["ruby"], lua: ["lua5.4"], R: ["r-base-core"],
};
