"""Print the composed config as a rich tree (what lightning-hydra-template users expect)."""

from __future__ import annotations

import sys
from typing import Any

from omegaconf import DictConfig, OmegaConf

ORDER = ("model", "data", "optimizer", "trainer", "learner")


def print_config(cfg: DictConfig, order: tuple[str, ...] = ORDER) -> None:
    """A tree in a terminal; one line per group elsewhere (a redirected log stays short, and the
    full config is in the run dir's config.json and .hydra/config.yaml)."""
    keys = [k for k in order if k in cfg] + [k for k in cfg if k not in order]
    if not sys.stdout.isatty():
        for key in keys:
            print("config " + str(key) + ": " + _flat(cfg[key]) + _resolved(key, cfg[key]))
        sys.stdout.flush()
        return
    import rich
    import rich.syntax
    import rich.tree

    tree = rich.tree.Tree("config", style="dim", guide_style="dim")
    for key in keys:
        branch = tree.add(str(key), style="bold")
        value: Any = cfg[key]
        text = OmegaConf.to_yaml(value, resolve=True) if OmegaConf.is_config(value) else str(value)
        branch.add(rich.syntax.Syntax(text, "yaml", theme="ansi_dark"))  # 16 colours: the terminal's own palette
    rich.print(tree)


def _resolved(key: Any, value: Any) -> str:
    """What a null data root stands for: MnistDataset's rule ($BURNLIKE_DATA, else ./data)."""
    if key != "data" or not OmegaConf.is_config(value) or "root" not in value or value.root is not None:
        return ""
    from burnlike.data.dataset.in_memory import data_root

    return f" (root: {data_root()})"


def _flat(value: Any) -> str:
    """`a=1 b.c=2` for a group, the value itself for a scalar."""
    if not OmegaConf.is_config(value):
        return str(value)
    data = OmegaConf.to_container(value, resolve=True)
    if not isinstance(data, dict):
        return str(data)
    # a string with a newline or tab (data.sample_prompt) as its repr: one line per group
    return " ".join(f"{k}={v!r}" if isinstance(v, str) and not v.isprintable() else f"{k}={v}"
                    for k, v in _items(data, ""))


def _items(data: dict[Any, Any], prefix: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in data.items():
        if isinstance(v, dict) and v:
            out += _items(v, prefix + str(k) + ".")
        else:
            out.append((prefix + str(k), v))
    return out
