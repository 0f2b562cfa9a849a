"""Overrides and data writers shared by the tests of `burnlike.app`: the overrides of a small quiet
run, and a CSV table with a regression target and the overrides that train on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def quiet_mlp(hidden_size: int) -> list[str]:
    """Overrides of a small quiet run: an MLP of one hidden layer, no progress bar, summary or checkpoints."""
    return ["model=mlp", f"model.hidden_sizes=[{hidden_size}]", "learner.progress_bar=false", "learner.summary=false",
            "learner.checkpointing=false"]


SMALL = quiet_mlp(8)
APP_HIDDEN_SIZE = 32  # the MLP the `app` fixture trains (tests/app/conftest.py)


def write_regression_table(path: Path, n: int = 80, seed: int = 0) -> Path:
    """y = 2 a - b + noise (regression) and its sign as a class name, a constant column c."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    y = 2 * a - b + 0.01 * rng.normal(size=n)
    lines = ["a,b,c,y,kind"] + [f"{x:.5f},{z:.5f},1,{t:.5f},{'up' if t > 0 else 'down'}" for x, z, t in zip(a, b, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


# a regression on `write_regression_table`'s t.csv (data.root: its folder)
REGRESSION = ["model=tabular", "data=csv", "data.train=t.csv", "data.target=y", "data.features=[a,b,c]",
              "data.task=regression", "model.num_features=3", "learner.metrics=[Loss]",
              "optimized_metric=valid/Loss", "learner.progress_bar=false"]
