"""Drives rlpipe_tool.RlpipeCodeTool with one verl release's own BaseTool, schemas and rollout_trace (from the test
virtualenv's tree of that release), the way verl's tool registry and agent loop do: built from a tool config entry
with verl's OpenAIFunctionToolSchema, then create -> execute -> release per call. verl's package __init__ files are
not run (they import torch, which the test virtualenv does not have): the packages are stood up empty and their
modules load from the release's own files.

    python verl_tool_driver.py VERL_TREE SCENARIOS_JSON   -> prints one JSON line with each scenario's result
"""
import asyncio
import json
import os
import sys

tree, scenarios = sys.argv[1], json.loads(sys.argv[2])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verl_tree  # noqa: E402
verl_tree.stand_up(tree)
sys.path.insert(0, os.path.join(ROOT, "recipes", "python"))

from verl.tools.schemas import OpenAIFunctionToolSchema  # noqa: E402
import verl.tools.base_tool as base_tool  # noqa: E402
import rlpipe_tool  # noqa: E402

SCHEMA = {"type": "function", "function": {"name": "code_interpreter", "description": "A tool for executing code.",
          "parameters": {"type": "object", "properties": {"code": {"type": "string", "description": "The code to execute."}}, "required": ["code"]}}}


async def main():
    out = {"release": os.path.basename(tree), "subclass": issubclass(rlpipe_tool.RlpipeCodeTool, base_tool.BaseTool), "results": []}
    for sc in scenarios:
        tool = rlpipe_tool.RlpipeCodeTool(config={"type": "native", **sc["config"]}, tool_schema=OpenAIFunctionToolSchema.model_validate(SCHEMA))
        created = await tool.create()
        instance_id = created[0] if isinstance(created, tuple) else created
        try:
            response, reward, metrics = await tool.execute(instance_id, sc["parameters"])
        finally:
            await tool.release(instance_id)
        text = response if isinstance(response, str) else response.text
        out["results"].append({"name": sc["name"], "text": text, "responseType": type(response).__name__,
                               "createType": type(created).__name__, "reward": reward, "metrics": metrics,
                               "infraErrors": rlpipe_tool.RlpipeCodeTool.infra_errors})
    print(json.dumps(out))


asyncio.run(main())
