// lambda entry of the console function (handler setting index.handler); rlpipe package bundles this file.
import { consoleApp } from "../../apps/console.js";
import { lambdaHandler } from "../../platforms/lambda.js";

export const handler = lambdaHandler(consoleApp);
