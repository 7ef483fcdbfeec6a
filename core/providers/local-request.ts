// Provider local: the request is the command the local adapter runs (launch.sh as its own process group).
import type { RequestBuilder } from "./request.js";

export const buildLocalRequest: RequestBuilder = (input) => ({
  provider: "local",
  api: "bash launch.sh (a detached process group on this machine)",
  body: {
    command: ["bash", "bundle/launch.sh"],
    env: { RLPIPE_RUN: input.jobName },
    workDir: input.workDir,
  },
  bundle: { to: `.rlpipe/local/${input.jobName}/bundle` },
  unverified: [],
});
