"""Compose rendered overrides with verl's own Hydra config (no verl or torch import).

stdin: {"jobs": [{"id", "configDir", "configName", "overrides": [...]}]}
stdout: {"results": [{"id", "ok", "error", "rejected": [{"override", "error"}], "values": {key: value}}]}
"""
import json
import sys

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, ListConfig, OmegaConf


def _compose(config_dir, name, overrides):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name=name, overrides=overrides)


def _plain(node):
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    return node


def run(job):
    result = {"id": job["id"], "ok": True, "error": None, "rejected": [], "values": {}}
    try:
        cfg = _compose(job["configDir"], job["configName"], job["overrides"])
        OmegaConf.to_container(cfg, resolve=True)  # every interpolation must resolve
    except Exception as e:  # noqa: BLE001 - report any rejection with the override that causes it
        result["ok"] = False
        result["error"] = f"{type(e).__name__}: {e}"
        for o in job["overrides"]:
            try:
                _compose(job["configDir"], job["configName"], [o])
            except Exception as e1:  # noqa: BLE001
                result["rejected"].append({"override": o, "error": f"{type(e1).__name__}: {e1}".splitlines()[0]})
        return result
    for o in job["overrides"]:
        key = o.split("=", 1)[0].lstrip("+~")
        result["values"][key] = _plain(OmegaConf.select(cfg, key, throw_on_missing=False))
    return result


def main():
    jobs = json.load(sys.stdin)["jobs"]
    json.dump({"results": [run(j) for j in jobs]}, sys.stdout)


if __name__ == "__main__":
    main()
