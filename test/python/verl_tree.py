"""A pinned verl release's tree (.venv-test/verl/<version>) importable in the test virtualenv, and a tool built from a
rendered tool config the way verl's registry builds it. verl's package __init__ files are not run (they import torch,
which the test virtualenv does not have): the packages are stood up empty and their modules load from the tree."""
import asyncio
import importlib
import os
import sys
import types


def stand_up(tree):
    """Makes `verl.tools.*` and `verl.utils.*` of `tree` importable."""
    for name in ("verl", "verl.utils", "verl.tools"):
        pkg = types.ModuleType(name)
        pkg.__path__ = [os.path.join(tree, *name.split("."))]
        sys.modules[name] = pkg
    if tree not in sys.path:
        sys.path.insert(0, tree)


def tool_from_config(path, index=0):
    """(tool, entry): tools[index] of a tool config as verl's registry builds it (OmegaConf, the class by module name,
    verl's OpenAIFunctionToolSchema). stand_up() first."""
    from omegaconf import OmegaConf
    from verl.tools.schemas import OpenAIFunctionToolSchema
    entry = OmegaConf.load(path).tools[index]
    module_name, class_name = entry.class_name.rsplit(".", 1)
    cls = getattr(importlib.import_module(module_name), class_name)
    schema = OpenAIFunctionToolSchema.model_validate(OmegaConf.to_container(entry.tool_schema, resolve=True))
    return cls(config=OmegaConf.to_container(entry.config, resolve=True), tool_schema=schema), entry


def call_once(tool, parameters):
    """(text, metrics) of one create -> execute -> release, as verl's agent loop drives a tool."""
    async def run():
        created = await tool.create()
        instance_id = created[0] if isinstance(created, tuple) else created
        try:
            resp, _, metrics = await tool.execute(instance_id, parameters)
        finally:
            await tool.release(instance_id)
        return (resp if isinstance(resp, str) else resp.text), metrics
    return asyncio.run(run())
