"""Burn's `MapperDataset`: each item mapped lazily, when it is read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from burnlike.data.dataset.base import Dataset, as_dataset

I = TypeVar("I", contravariant=True)  # noqa: E741
O = TypeVar("O", covariant=True)  # noqa: E741
T = TypeVar("T")

__all__ = ["Mapper", "MapperDataset"]


@runtime_checkable
class Mapper(Protocol[I, O]):
    """Burn's `Mapper<I, O>` trait: `map(item) -> mapped`."""

    def map(self, item: I) -> O:
        """The mapped item.

        Args:
            item: The dataset's item.
        """
        ...


class MapperDataset(Dataset[T], Generic[T]):
    """`get(i)` is `mapper.map(dataset.get(i))` (`None` stays `None`); `mapper` may also be a plain callable.

    Args:
        dataset: The source dataset.
        mapper: A `Mapper`, or a callable `item -> mapped`.

    Attributes:
        dataset: The source dataset.
        mapper: The mapper as given.

    Raises:
        TypeError: `mapper` has no `map` and is not callable.
    """

    def __init__(self, dataset: Any, mapper: Mapper[Any, T] | Callable[[Any], T]) -> None:
        self.dataset = as_dataset(dataset)
        self._map: Callable[[Any], T]
        if isinstance(mapper, Mapper):
            self._map = mapper.map
        elif callable(mapper):
            self._map = mapper
        else:
            raise TypeError(f"mapper must have a map(item) method or be callable, got {type(mapper).__name__}")
        self.mapper = mapper

    def get(self, index: int) -> T | None:
        item = self.dataset.get(index)
        return None if item is None else self._map(item)

    def len(self) -> int:
        return self.dataset.len()
