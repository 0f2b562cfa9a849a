"""Burn's `ComposedDataset`: several datasets one after another."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from burnlike.data.dataset.base import Dataset, as_dataset

T = TypeVar("T")

__all__ = ["ComposedDataset"]


class ComposedDataset(Dataset[T]):
    """Index `i` falls in the first dataset whose cumulative length exceeds it; `len()` is the sum.

    Args:
        datasets: The datasets, in order.

    Attributes:
        datasets: The datasets, in order.
    """

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = [as_dataset(d) for d in datasets]

    def get(self, index: int) -> T | None:
        if index < 0:
            return None
        offset = 0
        for dataset in self.datasets:
            size = dataset.len()
            if index < offset + size:
                return dataset.get(index - offset)
            offset += size
        return None

    def len(self) -> int:
        return sum(d.len() for d in self.datasets)
