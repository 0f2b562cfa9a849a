"""Burn's `ShuffledDataset`: every index of a dataset once, in an order drawn from a seed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from burnlike.data.dataset.base import Dataset
from burnlike.data.dataset.transform.options import RngSource
from burnlike.data.dataset.transform.selection import SelectionDataset

T = TypeVar("T")

__all__ = ["ShuffledDataset"]


class ShuffledDataset(Dataset[T]):
    """A thin wrapper over `SelectionDataset.new_shuffled`: the same seed gives the same order.

    Args:
        dataset: The source dataset.
        rng_source: A seed, a numpy generator, or None (a fresh order each time).

    Attributes:
        wrapped: The shuffled selection.
    """

    def __init__(self, dataset: Any, rng_source: RngSource) -> None:
        self.wrapped: SelectionDataset[T] = SelectionDataset.new_shuffled(dataset, rng_source)

    @classmethod
    def with_seed(cls, dataset: Any, seed: int) -> ShuffledDataset[Any]:
        """Burn's deprecated spelling of `ShuffledDataset(dataset, seed)`.

        Args:
            dataset: The source dataset.
            seed: The order's seed.
        """
        return cls(dataset, seed)

    @property
    def indices(self) -> np.ndarray:
        """Position `i` of this dataset is item `indices[i]` of the wrapped one."""
        return self.wrapped.indices

    def get(self, index: int) -> T | None:
        return self.wrapped.get(index)

    def len(self) -> int:
        return self.wrapped.len()

    def __getitems__(self, indices: Sequence[int]) -> Any:
        return self.wrapped.__getitems__(indices)
