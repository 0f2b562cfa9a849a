"""TODO: docstring."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from tests.helpers.app import compose_app
from tests.helpers.paths import REPO


def config(data, *overrides, hydra_config=False):
    return compose_app(["model=mlp", f"data.root={data}", "learner.progress_bar=false", *overrides],
                       hydra_config=hydra_config)


def write_table_data_app(path: Path, n: int = 80, seed: int = 0) -> Path:
    """y = 2 a - b + noise (regression) and its sign as a class name, a constant column c."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    y = 2 * a - b + 0.01 * rng.normal(size=n)
    lines = ["a,b,c,y,kind"] + [f"{x:.5f},{z:.5f},1,{t:.5f},{'up' if t > 0 else 'down'}" for x, z, t in zip(a, b, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


REGRESSION = ["model=tabular", "data=csv", "data.train=t.csv", "data.target=y", "data.features=[a,b,c]",
              "data.task=regression", "model.num_features=3", "learner.metrics=[Loss]",
              "optimized_metric=valid/Loss", "learner.progress_bar=false"]


# --- default device -----------------------------------------------------------------------------------
def compose_app_fast_path(overrides: list[str]):
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            return compose("config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


SMALL = ["model=mlp", "model.hidden_sizes=[8]", "learner.progress_bar=false", "learner.summary=false",
         "learner.checkpointing=false"]




SMALL_pinned_app = ["model=mlp", "model.hidden_sizes=[32]", "learner.progress_bar=false", "learner.summary=false",
         "learner.checkpointing=false"]
