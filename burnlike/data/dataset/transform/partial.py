"""Burn's `PartialDataset`: the index range `[start, end)` of a dataset, lazily."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from burnlike.checks import positive_int
from burnlike.data.dataset.base import Dataset, as_dataset, fetch_many

T = TypeVar("T")

__all__ = ["PartialDataset"]


class PartialDataset(Dataset[T]):
    """`get(i)` is the wrapped dataset's `get(start + i)` while `start + i < end`, else `None`.

    As in Burn, `len()` is `min(end - start, len(dataset))`, so a range past the end of the dataset
    reports a length whose last indices give `None`.

    Args:
        dataset: The source dataset.
        start_index: The range's first index.
        end_index: The index past its last.

    Attributes:
        dataset: The source dataset.
        start_index: The range's first index.
        end_index: The index past its last.

    Raises:
        ValueError: Not `0 <= start_index <= end_index`.
    """

    def __init__(self, dataset: Any, start_index: int, end_index: int) -> None:
        if not 0 <= start_index <= end_index:
            raise ValueError(f"PartialDataset needs 0 <= start_index <= end_index, got {start_index}..{end_index}")
        self.dataset = as_dataset(dataset)
        self.start_index = start_index
        self.end_index = end_index

    def get(self, index: int) -> T | None:
        index = index + self.start_index
        if index < self.start_index or index >= self.end_index:
            return None
        return self.dataset.get(index)

    def len(self) -> int:
        return min(self.end_index - self.start_index, self.dataset.len())

    def __getitems__(self, indices: Sequence[int]) -> Any:
        mapped = [i + self.start_index for i in indices]
        for i, j in zip(indices, mapped):
            if not self.start_index <= j < self.end_index or j >= self.dataset.len():
                raise IndexError(f"index {i} is out of range for PartialDataset of length {self.len()}")
        return fetch_many(self.dataset, mapped)

    @classmethod
    def split(cls, dataset: Any, num: int) -> list[PartialDataset[Any]]:
        """`num` consecutive parts of `len // num` items; the last one takes the remainder.

        Args:
            dataset: The dataset to split.
            num: The number of parts, >= 1.
        """
        positive_int(num, "num")
        dataset = as_dataset(dataset)
        size, step = dataset.len(), dataset.len() // num
        return [cls(dataset, i * step, size if i == num - 1 else (i + 1) * step) for i in range(num)]

    @classmethod
    def split_chunks(cls, dataset: Any, num: int, batch_size: int) -> list[PartialDataset[Any]]:
        """Whole batches of `batch_size` spread over `num` parts, the extra ones to the first parts;
        parts that would start past the end are left out (so there can be fewer than `num`).

        Args:
            dataset: The dataset to split.
            num: The number of parts, >= 1.
            batch_size: The batch size the parts are whole multiples of (but the last), >= 1.
        """
        positive_int(num, "num")
        positive_int(batch_size, "batch_size")
        dataset = as_dataset(dataset)
        total = dataset.len()
        batches = -(-total // batch_size)
        per_split, extra = divmod(batches, num)
        parts, current = [], 0
        for i in range(num):
            end_batch = current + per_split + (1 if i < extra else 0)
            start, end = current * batch_size, min(end_batch * batch_size, total)
            if start < total:
                parts.append(cls(dataset, start, end))
            current = end_batch
        return parts
