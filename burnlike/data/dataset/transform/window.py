"""Burn's `Window`/`Windows` traits and `WindowsDataset`: overlapping windows of consecutive items."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from burnlike.data.dataset.base import Dataset, as_dataset

T = TypeVar("T")

__all__ = ["WindowsDataset", "window", "windows"]


def _check_size(size: int) -> int:
    if size < 1:
        raise ValueError(f"window size must be non-zero, got {size}")
    return size


def window(dataset: Any, current: int, size: int) -> list[Any] | None:
    """Items `current .. current + size`, or `None` if any of them is missing (Burn's `Window::window`).

    Args:
        dataset: The dataset.
        current: The window's first index.
        size: The window's length, >= 1.

    Raises:
        ValueError: `size` is 0.
    """
    dataset = as_dataset(dataset)
    items = []
    for index in range(current, current + _check_size(size)):
        item = dataset.get(index)
        if item is None:
            return None
        items.append(item)
    return items


def windows(dataset: Any, size: int) -> Iterator[list[Any]]:
    """Every window of `size`, in order; empty if the dataset is shorter (Burn's `Windows::windows`).

    Args:
        dataset: The dataset.
        size: The windows' length, >= 1.
    """
    dataset, size = as_dataset(dataset), _check_size(size)
    current = 0
    while (items := window(dataset, current, size)) is not None:
        yield items
        current += 1


class WindowsDataset(Dataset[list[T]]):
    """Window `i` is items `i .. i + size`; there are `max(len - size + 1, 0)` of them.

    Args:
        dataset: The source dataset.
        size: The windows' length, >= 1.

    Attributes:
        size: The windows' length.
        dataset: The source dataset.
    """

    def __init__(self, dataset: Any, size: int) -> None:
        self.size = _check_size(size)
        self.dataset = as_dataset(dataset)

    def get(self, index: int) -> list[T] | None:
        if index < 0:
            return None
        return window(self.dataset, index, self.size)

    def len(self) -> int:
        return max(self.dataset.len() - self.size + 1, 0)
