"""Print the composed config as a rich tree (what lightning-hydra-template users expect)."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf


def print_config(cfg: DictConfig, order: tuple[str, ...] = ("model", "data", "optimizer", "trainer", "learner")) -> None:
    import rich
    import rich.syntax
    import rich.tree

    tree = rich.tree.Tree("config", style="dim", guide_style="dim")
    keys = [k for k in order if k in cfg] + [k for k in cfg if k not in order]
    for key in keys:
        branch = tree.add(str(key), style="bold")
        value: Any = cfg[key]
        text = OmegaConf.to_yaml(value, resolve=True) if OmegaConf.is_config(value) else str(value)
        branch.add(rich.syntax.Syntax(text, "yaml", theme="ansi_dark", background_color="default"))
    rich.print(tree)
