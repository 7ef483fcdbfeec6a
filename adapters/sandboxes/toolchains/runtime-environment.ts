// What the runtime environment (python-env.ts, rlpipe serve --python-env) changes about the toolchains: where a
// sandbox sees it, and the toolchains that find its packages or exist only with it.
import type { PythonEnv } from "./python-env.js";
import {
  goTestToolchain, javaHome, javaToolchain, jestToolchain, junitToolchain, pytestToolchain, type Toolchain, typescriptToolchain, withGoCache,
} from "./toolchains.js";

/** Where a sandbox sees the Python environment (--python-env). */
export const SANDBOX_PYTHON_ENV = "/opt/python-env";

/**
 * The toolchains with a runtime environment: Node programs find its packages (NODE_PATH), Java programs its
 * libraries, Go builds start from its standard-library cache, and its pytest, tsx, Jest, Go module and JUnit console
 * add SandboxFusion's pytest, typescript, jest, go_test and junit languages.
 */
export function withEnvironment(toolchains: readonly Toolchain[], env: PythonEnv): Toolchain[] {
  const modules = `${SANDBOX_PYTHON_ENV}/node_modules`;
  const hasNode = env.nodePackages.length > 0;
  const jars = env.jars.map((f) => `${SANDBOX_PYTHON_ENV}/java/${f}`);
  const junitConsole = jars.find((j) => /\/junit-platform-console-standalone-[^/]*\.jar$/.test(j));
  const libraries = jars.filter((j) => j !== junitConsole);
  const out = toolchains.map((t) => {
    if (t.language === "nodejs" && hasNode) return { ...t, env: { ...t.env, NODE_PATH: modules } };
    if (t.language === "java" && libraries.length > 0) return javaToolchain(javaHome(t), libraries);
    if (t.language === "go" && env.goCache !== undefined) return withGoCache(t, `${SANDBOX_PYTHON_ENV}/go-cache`);
    return t;
  });
  const java = toolchains.find((t) => t.language === "java");
  if (java !== undefined && junitConsole !== undefined) out.push(junitToolchain(javaHome(java), junitConsole, libraries));
  const go = toolchains.find((t) => t.language === "go");
  if (go !== undefined && env.goCache !== undefined && env.goModules !== undefined) {
    out.push(withGoCache(goTestToolchain(go, `${SANDBOX_PYTHON_ENV}/go`, `${SANDBOX_PYTHON_ENV}/go-mod-cache`), `${SANDBOX_PYTHON_ENV}/go-cache`));
  }
  if (env.packages.some((p) => p.name.toLowerCase() === "pytest")) out.push(pytestToolchain(`${SANDBOX_PYTHON_ENV}/bin/python3`));
  const node = toolchains.find((t) => t.language === "nodejs");
  if (node !== undefined && env.nodePackages.some((p) => p.name === "tsx")) out.push(typescriptToolchain(node, `${modules}/tsx/dist/loader.mjs`, modules));
  if (node !== undefined && ["jest", "babel-jest", "@babel/preset-env", "@babel/preset-typescript"].every((n) => env.nodePackages.some((p) => p.name === n))) out.push(jestToolchain(node, modules));
  return out;
}

