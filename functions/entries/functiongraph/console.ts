// functiongraph entry of the console function (handler setting index.handler); rlpipe package bundles this file.
import { consoleApp } from "../../apps/console.js";
import { functionGraphHandler } from "../../platforms/functiongraph.js";

export const handler = functionGraphHandler(consoleApp);
