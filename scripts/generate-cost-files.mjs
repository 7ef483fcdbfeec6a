// Regenerates the files derived from sources: core/cost/catalog-data.ts from prices/*.yaml (validated), and
// schema/cost-report.schema.json from the report's zod schema. Run after `npm run build`: npm run cost-files.
// test/cost-catalog.test.ts fails when either is stale.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { parseCatalogFiles, catalogModuleText } = await import(join(root, "dist/core/cost/catalog-source.js"));
const files = readdirSync(join(root, "prices")).filter((f) => f.endsWith(".yaml")).sort()
  .map((name) => ({ name, text: readFileSync(join(root, "prices", name), "utf8") }));
const catalog = parseCatalogFiles(files);
writeFileSync(join(root, "core/cost/catalog-data.ts"), catalogModuleText(catalog));
console.log(`core/cost/catalog-data.ts: ${catalog.rows.length} rows from ${files.length} files`);
try {
  const { costReportJsonSchema } = await import(join(root, "dist/core/cost/report-schema.js"));
  writeFileSync(join(root, "schema/cost-report.schema.json"), `${JSON.stringify(costReportJsonSchema(), null, 2)}\n`);
  console.log("schema/cost-report.schema.json written");
} catch (e) {
  if (e.code !== "ERR_MODULE_NOT_FOUND") throw e;
}
