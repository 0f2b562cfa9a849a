"""burnlike: Burn's training API for PyTorch, on PyTorch Lightning and Hydra.

Import the pieces from their Burn-named modules (`burnlike.train`, `burnlike.record`,
`burnlike.optim`, `burnlike.data`); this top level stays light so `train.py --help` starts fast.
"""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import torch

__version__ = "0.1.0"
"""The package's version (PEP 440); CHANGELOG.md says what each one changed."""

__all__ = ["__version__", "seed"]


@overload
def seed(device_or_seed: int, seed: None = None) -> None: ...
@overload
def seed(device_or_seed: str | int | torch.device, seed: int) -> None: ...
@overload
def seed(device_or_seed: None = None, *, seed: int) -> None: ...
def seed(device_or_seed: str | int | torch.device | None = None, seed: int | None = None) -> None:
    """Seed every RNG a training run touches: Python, NumPy, torch (all devices).

    Burn ≤ 0.20's `B::seed(seed)` is `seed(42)`; Burn 0.21's `B::seed(&device, seed)` is
    `seed(device, 42)` (`"cpu"`, `"cuda:0"`, a `torch.device` or a CUDA index), with the same effect:
    torch seeds every device at once.

    Args:
        device_or_seed: The seed, or (with `seed` given) the device Burn 0.21 names; the device is
            checked, then every device is seeded anyway.
        seed: The seed when the first argument is a device.

    Raises:
        TypeError: The seed is not an int, or the device not a device-like value.
        ValueError: The device string is not one torch knows (`"cuda:x"`).
    """
    if seed is None:
        device, value = None, device_or_seed
    else:
        device, value = device_or_seed, seed
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"seed expects an int seed: seed(42) or seed(device, 42), got {value!r}")
    if device is not None:
        import torch

        if isinstance(device, bool) or not isinstance(device, (str, int, torch.device)):
            raise TypeError(f"seed(device, seed): device must be 'cpu', 'cuda:N', a torch.device or an index, "
                            f"got {type(device).__name__}")
        try:
            torch.device(device)
        except RuntimeError as e:
            raise ValueError(f"seed(device, seed): {device!r} is not a device ({e})") from None
    _seed_all(value)


def _seed_all(value: int) -> None:
    import numpy as np
    import torch

    os.environ["PL_GLOBAL_SEED"] = str(value)
    random.seed(value)
    np.random.seed(value % 2**32)
    torch.manual_seed(value)
