// scf entry of the console function (handler setting index.main_handler); rlpipe package bundles this file.
import { consoleApp } from "../../apps/console.js";
import { scfHandler } from "../../platforms/scf.js";

export const main_handler = scfHandler(consoleApp);
