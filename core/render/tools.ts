// Tool config YAML in verl's format (tools: [{class_name, config{…, type}, tool_schema}]) for each sandbox kind.
import { posix } from "node:path";
import { stringify } from "yaml";
import type { RecipePath } from "../errors.js";
import type { JsonValue } from "../recipe/fields.js";
import { RETOOL_TOOL_CLASS, STOCK_SANDBOX_FUSION_TOOL } from "../recipe/profiles.js";
import type { EvalStage, RlStage, Tool } from "../recipe/schema.js";
import { didYouMean } from "../recipe/suggest.js";
import { type RenderContext, report } from "./context.js";

interface ToolSchemaOut {
  readonly description: string;
  readonly parameters: { readonly properties: Readonly<Record<string, { type: string; description?: string; enum?: readonly string[] }>>; readonly required: readonly string[] };
}

interface Preset {
  /** The class verl imports (by the recipe's verl where it differs). */
  readonly impl: string | ((ctx: RenderContext) => string);
  readonly config: (ctx: RenderContext) => Record<string, JsonValue>;
  readonly schema: ToolSchemaOut;
}

/** rlpipe's own verl tool, in the bundle's rlpipe_tool.py (launch.sh puts the working directory on PYTHONPATH). */
export const RLPIPE_TOOL_CLASS = "rlpipe_tool.RlpipeCodeTool";
/** The bundle files a tool config naming RLPIPE_TOOL_CLASS needs (the tool uses the reward shim's HTTP client). */
export const RLPIPE_TOOL_FILES = ["rlpipe_tool.py", "rlpipe_reward.py"] as const;

const CODE_ONLY: ToolSchemaOut = {
  description: "A tool for executing code.",
  parameters: { properties: { code: { type: "string", description: "The code to execute." } }, required: ["code"] },
};

/** SandboxFusionTool settings; the retool seeds raise workers and the cluster-wide rate limit to 128. */
const sandboxFusionConfig = (workers: number) => (): Record<string, JsonValue> => ({
  sandbox_fusion_url: "${sandbox.url}/run_code",
  num_workers: workers,
  enable_global_rate_limit: true,
  rate_limit: workers,
  default_timeout: 30,
  default_language: "python",
  memory_limit_mb: 1024,
});

const PRESETS: Record<NonNullable<Tool["preset"]>, Preset> = {
  // hicann/cann-recipes-train agent_rl/qwen3_code_toolcall/tool_config/scalebox_tool_config.yaml (class from patch 0002)
  scalebox: {
    impl: "verl.tools.scalebox_tool.ScaleBoxTool",
    config: () => ({ scalebox_url: "${sandbox.url}/run_code", default_timeout: 30, default_language: "python" }),
    schema: {
      description: "Execute code in the sandbox.",
      parameters: {
        properties: {
          code: { type: "string", description: "The code to execute." },
          language: { type: "string", description: "The programming language." },
          timeout: { type: "integer", description: "Execution timeout in seconds." },
        },
        required: ["code"],
      },
    },
  },
  // verl's stock tool (examples/sglang_multiturn/config/tool_config/sandbox_fusion_tool_config.yaml); where the
  // recipe's verl no longer has it (0.8.0 on), rlpipe's own tool, which reads the same settings.
  "sandbox-fusion": {
    impl: (ctx) => (ctx.profile.toolClasses.includes(STOCK_SANDBOX_FUSION_TOOL) ? STOCK_SANDBOX_FUSION_TOOL : RLPIPE_TOOL_CLASS),
    config: sandboxFusionConfig(10), schema: CODE_ONLY,
  },
  // verl recipe/retool/sandbox_fusion_tool_config.yaml (also in verl-project/verl-recipe)
  // Where recipe/retool has left the verl tree: rlpipe's own tool, doing to the code what retool's subclass does.
  "retool-sandbox-fusion": {
    impl: (ctx) => (ctx.profile.toolClasses.includes(RETOOL_TOOL_CLASS) ? RETOOL_TOOL_CLASS : RLPIPE_TOOL_CLASS),
    config: (ctx) => ({ ...sandboxFusionConfig(128)(), ...(ctx.profile.toolClasses.includes(RETOOL_TOOL_CLASS) ? {} : { retool_code: true }) }),
    schema: CODE_ONLY,
  },
  // TI-ONE × AGS (seed 004): the key is read from the environment by OmegaConf when verl loads the file.
  e2b: {
    impl: "verl.tools.e2b_code_tool.E2BCodeTool",
    config: (ctx) => {
      const managed = ctx.recipe.sandbox?.managed;
      const secret = managed === undefined ? undefined : ctx.recipe.secrets?.[managed.apiKey.secret];
      return {
        e2b_domain: managed?.domain ?? "e2b.app",
        e2b_api_key: `\${oc.env:${secret?.env ?? "E2B_API_KEY"}}`,
        e2b_template: managed?.template ?? "code-interpreter-v1",
        sandbox_timeout: managed?.sandboxTimeoutS ?? 300,
        default_timeout: 30,
        default_language: "python",
      };
    },
    schema: CODE_ONLY,
  },
  // rlpipe's own tool (recipes/python/rlpipe_tool.py, shipped in the bundle) on every verl: overload waited out,
  // infrastructure failures told to the model as such and counted, the run named; the token is read from the
  // environment variable named here, never written into the file.
  rlpipe: {
    impl: RLPIPE_TOOL_CLASS,
    config: (ctx) => {
      const auth = ctx.recipe.sandbox?.auth;
      const env = auth === undefined ? undefined : ctx.recipe.secrets?.[auth.secret]?.env;
      return {
        sandbox_url: "${sandbox.url}/run_code", default_timeout: 30, default_language: "python", memory_limit_mb: 1024, max_concurrency: 32,
        ...(env === undefined ? {} : { token_env: env }),
      };
    },
    schema: CODE_ONLY,
  },
};

export interface ToolConfigFile {
  /** The value for multi_turn.tool_config_path (absolute or relative to workDir, as the recipe wrote it). */
  readonly value: string;
  readonly file: { readonly path: string; readonly content: string };
}

/** The tools a stage uses: `agent.tools`, or every recipe tool when multi-turn is on and no list is given. */
export function stageTools(ctx: RenderContext, stage: RlStage | EvalStage, at: RecipePath, quiet = false): { tool: Tool; index: number }[] {
  const all = ctx.recipe.tools ?? [];
  const names = stage.agent?.tools;
  if (names === undefined) return stage.agent?.multiTurn === true ? all.map((tool, index) => ({ tool, index })) : [];
  const out: { tool: Tool; index: number }[] = [];
  names.forEach((name, i) => {
    const index = all.findIndex((t) => t.name === name);
    if (index < 0) {
      if (!quiet) report(ctx, "error", [...at, "agent", "tools", i], "unknown_tool", `tool ${JSON.stringify(name)} is not defined`,
        didYouMean(name, all.map((t) => t.name)) ?? (all.length > 0 ? `tools defined: ${all.map((t) => t.name).join(", ")}` : "define it under `tools:`"));
    } else {
      out.push({ tool: all[index]!, index });
    }
  });
  return out;
}

export function toolConfigFor(ctx: RenderContext, stage: RlStage | EvalStage, at: RecipePath): ToolConfigFile | undefined {
  const tools = stageTools(ctx, stage, at).filter(({ tool }) => tool.type !== "function");
  if (tools.length === 0) return undefined;
  const entries = tools.map(({ tool, index }) => renderTool(ctx, tool, ["tools", index]));
  const cfgPath: RecipePath = [...at, "agent", "toolConfig"];
  const value = ctx.interp.resolve(stage.agent?.toolConfig ?? `tool_config/${stage.id}_tools.yaml`, cfgPath);
  const rel = bundleRelative(ctx, value, cfgPath);
  const header = `# Generated by rlpipe from recipe ${ctx.recipe.metadata.name} (stage ${stage.id}); do not edit, re-run rlpipe plan.\n`;
  return { value, file: { path: rel, content: header + stringify({ tools: entries }, { lineWidth: 0 }) } };
}

/**
 * The stage's `type: function` tools as the file verl >= 0.8.0 loads from multi_turn.function_tool_path: it registers
 * each with verl's function-tool registry through rlpipe_tool.register_function_tool (the class's settings and schema,
 * written here as JSON string literals, which Python reads as they are).
 */
export function functionToolFileFor(ctx: RenderContext, stage: RlStage | EvalStage, at: RecipePath): ToolConfigFile | undefined {
  // (quiet: toolConfigFor has already reported a name that is not defined)
  const tools = stageTools(ctx, stage, at, true).filter(({ tool }) => tool.type === "function");
  if (tools.length === 0) return undefined;
  const lines: string[] = [];
  for (const { tool, index } of tools) {
    const where: RecipePath = ["tools", index];
    if (!ctx.profile.functionTools) {
      report(ctx, "error", [...where, "type"], "unsupported_for_version", `function tools (verl/tools/function_tool.py, multi_turn.function_tool_path) do not exist at verl ${ctx.profile.name}`,
        "use type: native (rlpipe's tool as a BaseTool class works on every verl), or verl 0.8.0 or newer");
      continue;
    }
    const entry = renderTool(ctx, { ...tool, type: "native" }, where);
    if (entry["class_name"] !== RLPIPE_TOOL_CLASS) {
      report(ctx, "error", [...where, "type"], "function_tool_not_rlpipe", `type: function registers rlpipe's own tool as a function, but tool ${JSON.stringify(tool.name)} renders to ${String(entry["class_name"])}`,
        "use preset: rlpipe with type: function, or type: native for a tool class");
      continue;
    }
    const { type: _type, ...config } = entry["config"] as Record<string, JsonValue>;
    lines.push(`register_function_tool(${JSON.stringify(tool.name)}, json.loads(${JSON.stringify(JSON.stringify(config))}), json.loads(${JSON.stringify(JSON.stringify(entry["tool_schema"]))}))`);
  }
  if (lines.length === 0) return undefined;
  const value = `tool_config/${stage.id}_function_tools.py`;
  const content = [
    `# Generated by rlpipe from recipe ${ctx.recipe.metadata.name} (stage ${stage.id}); do not edit, re-run rlpipe plan.`,
    "# verl's function-tool registry loads this file (multi_turn.function_tool_path); rlpipe_tool.py is in the bundle.",
    "import json",
    "",
    "from rlpipe_tool import register_function_tool",
    "",
    ...lines,
    "",
  ].join("\n");
  return { value, file: { path: value, content } };
}

/** A path the bundle writes: relative to workDir, or absolute inside it. */
export function bundleRelative(ctx: RenderContext, p: string, at: RecipePath): string {
  let rel = p;
  if (p.startsWith("/")) {
    const root = ctx.workDir.endsWith("/") ? ctx.workDir : `${ctx.workDir}/`;
    if (!p.startsWith(root)) {
      report(ctx, "error", at, "outside_workdir", `${p} is outside the working directory ${ctx.workDir}, so the bundle cannot place it`,
        "use a path relative to the working directory, or ${workDir}/…");
      return posix.basename(p);
    }
    rel = p.slice(root.length);
  }
  const norm = posix.normalize(rel);
  if (norm.startsWith("../") || norm === ".." || norm === ".") {
    report(ctx, "error", at, "outside_workdir", `${p} leaves the working directory`);
    return posix.basename(p);
  }
  return norm;
}

function renderTool(ctx: RenderContext, tool: Tool, at: RecipePath): Record<string, JsonValue> {
  const preset = tool.preset === undefined ? undefined : PRESETS[tool.preset];
  const impl = tool.impl ?? (typeof preset?.impl === "function" ? preset.impl(ctx) : preset?.impl);
  if (impl === undefined) {
    report(ctx, "error", [...at, "impl"], "missing_field", "missing required field \"impl\" (or a `preset`)",
      `presets: ${Object.keys(PRESETS).join(", ")}`);
  }
  if (impl !== undefined) checkToolClass(ctx, impl, [...at, tool.impl === undefined ? "preset" : "impl"]);
  const schema: ToolSchemaOut | undefined = tool.schema ?? preset?.schema;
  if (schema === undefined && tool.type === "native") {
    report(ctx, "error", [...at, "schema"], "missing_field", "missing required field \"schema\" (or a `preset`)",
      "verl validates tool_schema with pydantic: description, parameters.properties, required");
  }
  const config: Record<string, JsonValue> = { ...preset?.config(ctx), ...tool.config };
  for (const [k, v] of Object.entries(config)) config[k] = interpolateJson(ctx, v, [...at, "config", k]);
  config["type"] = tool.type;
  const out: Record<string, JsonValue> = { class_name: impl ?? "", config };
  if (schema !== undefined) {
    out["tool_schema"] = {
      type: "function",
      function: {
        name: tool.name,
        description: schema.description,
        parameters: {
          type: "object",
          properties: Object.fromEntries(Object.entries(schema.parameters.properties).map(([name, p]) => [name, {
            type: p.type,
            ...(p.description === undefined ? {} : { description: p.description }),
            ...(p.enum === undefined ? {} : { enum: [...p.enum] }),
          }])),
          required: [...schema.parameters.required],
        },
      },
    };
  }
  return out;
}

/** verl imports class_name when the job has its GPUs: a class neither the recipe's verl, nor the bundle, nor what the
 * recipe says its verl checkout adds (runtime.verl.provides) would only fail then. */
function checkToolClass(ctx: RenderContext, impl: string, at: RecipePath): void {
  if (impl === RLPIPE_TOOL_CLASS || ctx.profile.toolClasses.includes(impl) || (ctx.recipe.runtime.verl.provides ?? []).includes(impl)) return;
  report(ctx, "error", at, "unknown_tool_class",
    `${impl} is not a tool class of verl ${ctx.profile.name} (its tools: ${ctx.profile.toolClasses.length === 0 ? "none a config can name" : ctx.profile.toolClasses.join(", ")}) nor of the bundle`,
    `use preset: rlpipe (rlpipe's own tool, shipped in the bundle); or, when the recipe's verl checkout adds the class (a fork, a patch, the image), list it under runtime.verl.provides`);
}

function interpolateJson(ctx: RenderContext, v: JsonValue, at: RecipePath): JsonValue {
  if (typeof v === "string") return ctx.interp.resolve(v, at);
  if (Array.isArray(v)) return v.map((x, i) => interpolateJson(ctx, x, [...at, i]));
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolateJson(ctx, x, [...at, k])]));
  }
  return v;
}
