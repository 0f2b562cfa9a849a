"""burnlike: Burn's training API for PyTorch, on PyTorch Lightning and Hydra.

Import the pieces from their Burn-named modules (`burnlike.train`, `burnlike.record`,
`burnlike.optim`, `burnlike.data`); this top level stays light so `train.py --help` starts fast.
"""

from __future__ import annotations

import os
import random

__version__ = "0.1.0"

__all__ = ["__version__", "seed"]


def seed(seed: int) -> None:
    """Seed every RNG a training run touches (Burn's `B::seed`): Python, NumPy, torch (all devices)."""
    import numpy as np
    import torch

    os.environ["PL_GLOBAL_SEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
