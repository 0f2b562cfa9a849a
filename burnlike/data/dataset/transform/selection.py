"""Burn's `SelectionDataset`: a dataset seen through a list of indices (repeats allowed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from burnlike.checks import positive_int
from burnlike.data.dataset.base import Dataset, as_dataset, fetch_many
from burnlike.data.dataset.transform.options import RngSource, make_rng, shuffle

T = TypeVar("T")

__all__ = ["SelectionDataset", "iota", "shuffled_indices"]


def iota(size: int) -> np.ndarray:
    """`0..size` (Burn's `iota`).

    Args:
        size: The number of indices.
    """
    return np.arange(size, dtype=np.int64)


def shuffled_indices(size: int, rng: np.random.Generator) -> np.ndarray:
    """`iota(size)` shuffled by `rng` (Burn's `shuffled_indices`).

    Args:
        size: The number of indices.
        rng: The random stream.
    """
    indices = iota(size)
    shuffle(indices, rng)
    return indices


class SelectionDataset(Dataset[T]):
    """`get(i)` is `wrapped.get(indices[i])`; `len()` is `len(indices)`.

    `SelectionDataset(ds, indices)` is Burn's `from_indices_checked` (an index past the end raises
    `IndexError`); `from_indices_unchecked` skips the check, and such an index then gives `None`.

    Args:
        dataset: The source dataset.
        indices: The source's indices, in the order to read them.
        _checked: False skips the bounds check (what `from_indices_unchecked` passes).

    Attributes:
        wrapped: The source dataset.
        indices: The selected indices (int64).

    Raises:
        IndexError: An index out of the source's range (when checked).
    """

    def __init__(self, dataset: Any, indices: Sequence[int] | np.ndarray, *, _checked: bool = True) -> None:
        self.wrapped = as_dataset(dataset)
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        if _checked:
            size = self.wrapped.len()
            bad = self.indices[(self.indices < 0) | (self.indices >= size)]
            if bad.size:
                raise IndexError(f"Index out of bounds for wrapped dataset size: {int(bad[0])} >= {size}")

    @classmethod
    def from_indices_checked(cls, dataset: Any, indices: Sequence[int] | np.ndarray) -> SelectionDataset[Any]:
        """The selection, after checking every index is in range.

        Args:
            dataset: The source dataset.
            indices: The indices.
        """
        return cls(dataset, indices)

    @classmethod
    def from_indices_unchecked(cls, dataset: Any, indices: Sequence[int] | np.ndarray) -> SelectionDataset[Any]:
        """The selection without the check (an index out of range then reads as `None`).

        Args:
            dataset: The source dataset.
            indices: The indices.
        """
        return cls(dataset, indices, _checked=False)

    @classmethod
    def new_select_all(cls, dataset: Any) -> SelectionDataset[Any]:
        """Every index of `dataset`, in order.

        Args:
            dataset: The source dataset.
        """
        dataset = as_dataset(dataset)
        return cls(dataset, iota(dataset.len()), _checked=False)

    @classmethod
    def new_shuffled(cls, dataset: Any, rng_source: RngSource) -> SelectionDataset[Any]:
        """Every index of `dataset`, shuffled.

        Args:
            dataset: The source dataset.
            rng_source: A seed, a numpy generator, or None (OS entropy).
        """
        selection = cls.new_select_all(dataset)
        selection.shuffle(rng_source)
        return selection

    def shuffle(self, rng_source: RngSource) -> None:
        """Shuffle the indices in place (Burn's `SelectionDataset::shuffle`).

        Args:
            rng_source: A seed, a numpy generator, or None (OS entropy).
        """
        shuffle(self.indices, make_rng(rng_source))

    def slice(self, start: int, end: int) -> SelectionDataset[T]:
        """A new selection of `indices[start:end]`, independent of later shuffles of this one.

        Args:
            start: The first position.
            end: The position past the last.

        Raises:
            IndexError: Not `0 <= start <= end <= len`.
        """
        if not 0 <= start <= end <= len(self.indices):
            raise IndexError(f"slice {start}..{end} is out of range for {len(self.indices)} indices")
        return SelectionDataset(self.wrapped, self.indices[start:end].copy(), _checked=False)

    def split(self, num: int) -> list[SelectionDataset[T]]:
        """`num` slices of `len // num` indices; the last one takes the remainder.

        Args:
            num: The number of slices, >= 1.
        """
        positive_int(num, "num")
        n, step = len(self.indices), len(self.indices) // num
        return [self.slice(i * step, n if i == num - 1 else (i + 1) * step) for i in range(num)]

    def get(self, index: int) -> T | None:
        if not 0 <= index < len(self.indices):
            return None
        return self.wrapped.get(int(self.indices[index]))

    def len(self) -> int:
        return len(self.indices)

    def __getitems__(self, indices: Sequence[int]) -> Any:
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self.indices)):
            raise IndexError(f"index out of range for {type(self).__name__} of length {len(self.indices)}")
        return fetch_many(self.wrapped, self.indices[idx].tolist())
