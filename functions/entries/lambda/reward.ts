// lambda entry of the reward function (handler setting index.handler); rlpipe package bundles this file.
import { rewardApp } from "../../apps/reward.js";
import { lambdaHandler } from "../../platforms/lambda.js";

export const handler = lambdaHandler(rewardApp);
