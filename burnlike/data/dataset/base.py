"""Burn's `Dataset` trait (`get(index) -> Option<I>`, `len()`, `iter()`) as a torch map-style dataset.

A subclass writes either Burn's pair (`get`, `len`) or torch's pair (`__getitem__`, `__len__`); the
base class derives the other, so the same object goes to Burn's transforms and to a `DataLoader`.
`as_dataset` wraps what isn't a subclass: any torch map-style dataset, or a duck-typed Burn one.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from torch.utils.data import Dataset as TorchDataset
from torch.utils.data import IterableDataset

T = TypeVar("T")

__all__ = ["BatchedItems", "Dataset", "WrappedDataset", "as_dataset", "fetch_many", "loader_dataset"]


class Dataset(TorchDataset[T], Generic[T]):
    """Burn's `Dataset<I>`: `get(i)` is `None` past the end; `ds[i]` raises `IndexError` there."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

        def overrides(*names: str) -> bool:
            return any(getattr(cls, name) is not getattr(Dataset, name) for name in names)

        if not (overrides("get", "__getitem__") and overrides("len", "__len__")):
            raise TypeError(f"{cls.__name__} must define get() or __getitem__(), and len() or __len__()")

    def get(self, index: int) -> T | None:
        """The item at `index`, None past the end (Burn's `Option<I>`).

        Args:
            index: The item's position, from 0.
        """
        index = operator.index(index)
        return self.__getitem__(index) if 0 <= index < self.__len__() else None

    def len(self) -> int:
        """The number of items."""
        return self.__len__()

    def __len__(self) -> int:
        return self.len()

    def __getitem__(self, index: int) -> T:
        item = self.get(index)
        if item is None:
            raise IndexError(f"index {index} is out of range for {type(self).__name__} of length {self.len()}")
        return item

    def is_empty(self) -> bool:
        """Whether the dataset has no item."""
        return self.len() == 0

    def iter(self) -> Iterator[T]:
        """Burn's `DatasetIterator`: `get(0)`, `get(1)`, ... until the first `None`."""
        index = 0
        while (item := self.get(index)) is not None:
            yield item
            index += 1

    def __iter__(self) -> Iterator[T]:
        return self.iter()


class BatchedItems(Sequence[T]):
    """What a batched fetch (`__getitems__`) returns — stacked tensors, for the batchers that know the
    dataset — that is also the list of items Burn's `Batcher::batch(items: Vec<I>)` gets: `len`,
    indexing and iteration give the dataset's items, so a batcher that iterates never sees the
    difference. Subclasses implement `__len__` and `item(i)`."""

    def item(self, index: int) -> T:
        """The batch's `index`-th item, as the dataset's `get` gives it.

        Args:
            index: From 0 to `len(self) - 1`.
        """
        raise NotImplementedError

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self.item(i) for i in range(*index.indices(len(self)))]
        i = operator.index(index)
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {index} is out of range for a batch of {n} items")
        return self.item(i % n)

    def __iter__(self) -> Iterator[T]:
        return (self.item(i) for i in range(len(self)))


class WrappedDataset(Dataset[T]):
    """A torch map-style dataset (`__getitem__`/`__len__`) or a duck-typed Burn one (`get` with `len`
    or `__len__`).

    Args:
        inner: The dataset to wrap.

    Attributes:
        inner: The wrapped dataset.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._burn_style = _burn_style(inner)

    def get(self, index: int) -> T | None:
        if self._burn_style:
            item: T | None = self.inner.get(index)
            return item
        index = operator.index(index)
        return self.inner[index] if 0 <= index < len(self.inner) else None

    def len(self) -> int:
        length = getattr(self.inner, "len", None)
        return int(length()) if self._burn_style and callable(length) else len(self.inner)

    def __getitems__(self, indices: Sequence[int]) -> Any:
        if self._burn_style:
            return [self[i] for i in indices]
        return fetch_many(self.inner, indices)


def _burn_style(obj: Any) -> bool:
    """Burn's `Dataset` shape: `get(index)`, and its length as `len()`, or as `__len__` where there is
    no `__getitem__` (an object with both of torch's is read as torch's: its `get` may be a mapping's)."""
    if not callable(getattr(obj, "get", None)):
        return False
    return callable(getattr(obj, "len", None)) or (hasattr(obj, "__len__") and not hasattr(obj, "__getitem__"))


def _torch_style(obj: Any) -> bool:
    return hasattr(obj, "__getitem__") and hasattr(obj, "__len__")


def as_dataset(obj: Any) -> Dataset[Any]:
    """`obj` itself if it is a `Dataset`, else wrapped.

    Args:
        obj: A burnlike `Dataset`, a torch map-style dataset, or a duck-typed Burn one.

    Raises:
        TypeError: `obj` is none of them.
    """
    if isinstance(obj, Dataset):
        return obj
    if _burn_style(obj) or _torch_style(obj):
        return WrappedDataset(obj)
    raise TypeError(f"expected a dataset with get()/len() (Burn) or __getitem__/__len__ (torch), "
                    f"got {type(obj).__name__}")


def loader_dataset(obj: Any) -> Any:
    """What a DataLoader can read for `obj`: a torch map-style or iterable dataset as it is, a
    Burn-style one (`get(index)` with `len()` or `__len__`) wrapped; a `TypeError` naming what is
    missing for anything else.

    Args:
        obj: The dataset.

    Raises:
        TypeError: `obj` has neither Burn's methods nor torch's, naming what it has.
    """
    if isinstance(obj, IterableDataset) or _torch_style(obj):
        return obj
    if _burn_style(obj):
        return WrappedDataset(obj)
    has = [name for name in ("get", "len", "__getitem__", "__len__") if hasattr(obj, name)]
    raise TypeError(f"a data loader needs a dataset with Burn's get(index) and len() (or __len__), or torch's "
                    f"__getitem__ and __len__; {type(obj).__name__} has "
                    f"{', '.join(has) if has else 'none of them'}")


def fetch_many(dataset: Any, indices: Sequence[int]) -> Any:
    """One batched fetch (`__getitems__`, e.g. stacked images) where the dataset has one, else a list.

    Args:
        dataset: A torch map-style dataset.
        indices: The items' positions.
    """
    getitems = getattr(dataset, "__getitems__", None)
    if getitems is not None:
        return getitems(list(indices))
    return [dataset[i] for i in indices]
