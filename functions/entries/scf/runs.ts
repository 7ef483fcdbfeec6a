// scf entry of the runs function (handler setting index.main_handler); rlpipe package bundles this file.
import { runsApp } from "../../apps/runs.js";
import { scfHandler } from "../../platforms/scf.js";

export const main_handler = scfHandler(runsApp);
