// functiongraph entry of the runs function (handler setting index.handler); rlpipe package bundles this file.
import { runsApp } from "../../apps/runs.js";
import { functionGraphHandler } from "../../platforms/functiongraph.js";

export const handler = functionGraphHandler(runsApp);
