#!/usr/bin/env node
// Writes docs/VERDICTS.md: how each test shape × language is decided, generated from the code (after npm run build).
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { verdictTable, verdictTableMarkdown } = await import(join(root, "dist", "core", "grading", "verdicts.js"));
const { CALL_DRIVER_LANGUAGES, SOURCE_CALL_LANGUAGES } = await import(join(root, "dist", "adapters", "sandboxes", "toolchains", "toolchains.js"));
writeFileSync(join(root, "docs", "VERDICTS.md"), verdictTableMarkdown(verdictTable(SOURCE_CALL_LANGUAGES, CALL_DRIVER_LANGUAGES)));
console.log("wrote docs/VERDICTS.md");
