"""The tabular batcher: feature rows into a standardised float batch, as Burn's regression example
does with its min-max `Normalizer` (here: any per-feature shift and scale, fitted on the train split)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from burnlike.data.batch import TensorBatch
from burnlike.data.dataset.table import TabularDataset, TabularItem, TabularItems

__all__ = ["TabularBatch", "TabularBatcher"]


@dataclasses.dataclass
class TabularBatch(TensorBatch):
    """A table's batch: the scaled features and the targets."""

    inputs: Tensor  # float32 [B, F]
    targets: Tensor  # int64 [B] (class ids) or float32 [B, T]


class TabularBatcher:
    """`(features - shift) / scale`; `fit(dataset)` takes the train split's mean and std (a constant
    feature keeps scale 1), `fit(dataset, "min_max")` its min and range (Burn's example).

    Args:
        shift: Subtracted from each feature (None: nothing).
        scale: Each feature divided by it, > 0 (None: nothing).

    Attributes:
        shift: float32 `[F]` (None: no shift).
        scale: float32 `[F]` (None: no scaling).

    Raises:
        ValueError: A scale value <= 0.
    """

    def __init__(self, shift: Sequence[float] | Tensor | None = None, scale: Sequence[float] | Tensor | None = None) -> None:
        self.shift = None if shift is None else torch.as_tensor(shift, dtype=torch.float32)
        self.scale = None if scale is None else torch.as_tensor(scale, dtype=torch.float32)
        if self.scale is not None and bool((self.scale <= 0).any()):
            raise ValueError("scale values must be > 0")

    @classmethod
    def fit(cls, data: TabularDataset | Tensor, how: str = "standard") -> TabularBatcher:
        """Per-feature constants from a dataset's (or a `[N, F]` tensor's) rows.

        Args:
            data: The train split (or its features).
            how: "standard" (mean and std) or "min_max" (min and range).

        Raises:
            ValueError: Another `how`.
        """
        x = data.features if isinstance(data, TabularDataset) else data.float()
        if how == "standard":
            shift, scale = x.mean(0), x.std(0, unbiased=False)
        elif how == "min_max":
            shift, scale = x.amin(0), x.amax(0) - x.amin(0)
        else:
            raise ValueError(f"how must be 'standard' or 'min_max', got {how!r}")
        return cls(shift, torch.where(scale > 0, scale, torch.ones_like(scale)))

    def batch(self, items: TabularItems | list[TabularItem], device: Any = None) -> TabularBatch:
        """The scaled features and the targets.

        Args:
            items: The rows, or the dataset's batched fetch.
            device: Where the batch goes (None: the CPU).
        """
        if isinstance(items, TabularItems):
            x, y = items.features, items.targets
        else:
            x, y = torch.stack([i.features for i in items]), torch.stack([i.target for i in items])
        if self.shift is not None:
            x = x - self.shift
        if self.scale is not None:
            x = x / self.scale
        batch = TabularBatch(x, y)
        return batch.to(device) if device is not None else batch
