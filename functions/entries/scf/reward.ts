// scf entry of the reward function (handler setting index.main_handler); rlpipe package bundles this file.
import { rewardApp } from "../../apps/reward.js";
import { scfHandler } from "../../platforms/scf.js";

export const main_handler = scfHandler(rewardApp);
