#!/usr/bin/env node
// The installed `rlpipe` command (package.json "bin"). npm starts it through a symlink (node_modules/.bin/rlpipe,
// npx, npm i -g, npm link), so it must not ask whether it is the main module: loading this file runs the CLI.
import { endOnClosedPipe } from "./io.js";
import { main } from "./rlpipe.js";

endOnClosedPipe();
process.exitCode = await main(process.argv.slice(2));
