"""The Hydra app's importable pieces: structured configs, building a run from a config, running it.

`train.py` is a thin `@hydra.main` around `run(cfg)`; another repo can call the same `run` from its
own Hydra entry point with its own conf dir, or just `register_configs()` and compose burnlike's
groups for its own training code (see docs/hydra.md).
"""

from burnlike.app.run import AppConfigError, run
from burnlike.app.schema import register_configs

__all__ = ["AppConfigError", "register_configs", "run"]
