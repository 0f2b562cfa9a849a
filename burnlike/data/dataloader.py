"""Burn's `Batcher` and `DataLoaderBuilder`, over `torch.utils.data.DataLoader`.

A plain DataLoader (so Lightning can swap in a DistributedSampler under DDP); when the dataset has
`__getitems__`, each batch is fetched in one call, so the batcher gets whole stacked tensors
instead of a list of per-sample objects.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import torch
from torch.utils.data import DataLoader, Dataset

I = TypeVar("I", contravariant=True)  # noqa: E741
O = TypeVar("O", covariant=True)  # noqa: E741


@runtime_checkable
class Batcher(Protocol[I, O]):
    """Turns a list of items (or what `Dataset.__getitems__` returns) into one batch."""

    def batch(self, items: Any, device: Any = None) -> O: ...


class _Collate(Generic[O]):
    """A picklable collate_fn calling `batcher.batch` (workers and spawn need pickling)."""

    def __init__(self, batcher: Batcher[Any, O]) -> None:
        self.batcher = batcher

    def __call__(self, items: Any) -> O:
        return self.batcher.batch(items)


class DataLoaderBuilder(Generic[O]):
    """`DataLoaderBuilder(batcher).batch_size(64).shuffle(seed).num_workers(4).build(dataset)`."""

    def __init__(self, batcher: Batcher[Any, O]) -> None:
        if not callable(getattr(batcher, "batch", None)):
            raise TypeError(f"DataLoaderBuilder needs a Batcher with a batch(items) method, got {type(batcher).__name__}")
        self._batcher = batcher
        self._batch_size = 1
        self._seed: int | None = None
        self._num_workers = 0
        self._pin_memory = False
        self._drop_last = False
        self._persistent = True

    def batch_size(self, batch_size: int) -> DataLoaderBuilder[O]:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._batch_size = batch_size
        return self

    def shuffle(self, seed: int) -> DataLoaderBuilder[O]:
        """Shuffle each epoch, deterministically from `seed` (a new order every epoch, as in Burn)."""
        self._seed = int(seed)
        return self

    def num_workers(self, num_workers: int) -> DataLoaderBuilder[O]:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {num_workers!r}")
        self._num_workers = num_workers
        return self

    def pin_memory(self, enabled: bool = True) -> DataLoaderBuilder[O]:
        self._pin_memory = enabled
        return self

    def drop_last(self, enabled: bool = True) -> DataLoaderBuilder[O]:
        self._drop_last = enabled
        return self

    def persistent_workers(self, enabled: bool = True) -> DataLoaderBuilder[O]:
        self._persistent = enabled
        return self

    def build(self, dataset: Dataset[Any]) -> DataLoader[O]:
        generator = None
        if self._seed is not None:
            generator = torch.Generator()
            generator.manual_seed(self._seed)
        return DataLoader(
            dataset,
            batch_size=self._batch_size,
            shuffle=self._seed is not None,
            generator=generator,
            drop_last=self._drop_last,
            num_workers=self._num_workers,
            collate_fn=_Collate(self._batcher),
            pin_memory=self._pin_memory,
            persistent_workers=self._persistent and self._num_workers > 0,
        )
