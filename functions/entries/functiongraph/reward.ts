// functiongraph entry of the reward function (handler setting index.handler); rlpipe package bundles this file.
import { rewardApp } from "../../apps/reward.js";
import { functionGraphHandler } from "../../platforms/functiongraph.js";

export const handler = functionGraphHandler(rewardApp);
