// lambda entry of the runs function (handler setting index.handler); rlpipe package bundles this file.
import { runsApp } from "../../apps/runs.js";
import { lambdaHandler } from "../../platforms/lambda.js";

export const handler = lambdaHandler(runsApp);
