"""Burn's `Dataset` trait and `InMemDataset`, as torch map-style datasets (what DataLoader takes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from torch.utils.data import Dataset

T = TypeVar("T")

__all__ = ["Dataset", "InMemDataset"]


class InMemDataset(Dataset[T], Generic[T]):
    """Burn's `InMemDataset::new(items)`: a list of items held in memory."""

    def __init__(self, items: Iterable[T]) -> None:
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]

    def get(self, index: int) -> T | None:
        """Burn's `Dataset::get`: `None` past the end instead of an exception."""
        return self.items[index] if 0 <= index < len(self.items) else None
