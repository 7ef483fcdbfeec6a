// Headless Chromium for the page tests (cost report, run page, the job's stored page), with nothing leaving the
// machine: no proxy, no name resolves, no background fetches. scripts/setup.sh --test installs Debian's chromium.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

/** Runs `chromium --headless … args` with a profile and HOME under `home`; stdout and stderr as buffers. */
export function chromium(args: string[], home: string) {
  return spawnSync("chromium", [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND",
    `--user-data-dir=${join(home, "profile")}`, "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-default-apps", "--disable-extensions", "--hide-scrollbars", ...args,
  ], { encoding: "buffer", timeout: 90_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home } });
}
