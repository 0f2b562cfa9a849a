"""Burn's `Batcher` and `DataLoaderBuilder`, over `torch.utils.data.DataLoader`.

The result is a plain DataLoader with a standard sampler, so Lightning can swap in a
DistributedSampler under DDP. When the dataset has `__getitems__`, the DataLoader fetches each batch
in one call and the batcher gets that result directly (stacked tensors for MNIST, a `BatchedItems`
that is also the list of items for a batcher that iterates), instead of a list of per-sample objects.

Burn's `DataLoader` trait is there too: `loader.iter()` (with `progress()`), `num_items()`,
`slice(start, end)`, `to_device(device)`, and the builder's `set_device(device)`; a batcher gets the
device as Burn's `Batcher::batch(items, device)` does.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator, Sized
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler, Sampler

from burnlike.checks import positive_int
from burnlike.data.dataset.base import loader_dataset
from burnlike.data.tensor_tree import map_tensors, tensors

I = TypeVar("I")  # noqa: E741  (invariant: list[I] is invariant in I)
O = TypeVar("O", covariant=True)  # noqa: E741
T = TypeVar("T")

# Offset for the worker-seed generator, so it never shares a stream with the shuffle generator.
_WORKER_SEED_OFFSET = 0x9E3779B9


@runtime_checkable
class Batcher(Protocol[I, O]):
    """Burn's `Batcher::batch(items, device)`: turns the items of one batch into the model's input.

    `items` is a list of dataset items, or whatever the dataset's `__getitems__` returns (a batcher
    that knows its dataset can take that faster form too; burnlike's are also sequences of the items).
    A batcher written as Burn's, `batch(self, items, device)`, gets a device: the builder's
    `set_device(...)` one, else the CPU, where the DataLoader batches (often in workers; Lightning
    moves the batch afterwards). One with `device=None` gets it only when `set_device` names one; one
    without the parameter, never.
    """

    def batch(self, items: list[I], device: Any = None) -> O:
        """The batch of `items`.

        Args:
            items: The batch's items (or the dataset's `__getitems__` result).
            device: Where the batch should be (see above for when it is given).
        """
        ...


_CPU = torch.device("cpu")


class _Collate(Generic[T]):
    """A picklable collate_fn (a lambda would break workers and DDP spawn) that calls the batcher as
    its signature asks: `batch(items, device)` (Burn's), `batch(items, device=None)`, `batch(items)`;
    with a `device` (`set_device`, `to_device`), the batch's tensors end up there whatever the batcher did."""

    def __init__(self, batcher: Batcher[Any, T], device: torch.device | None = None) -> None:
        self.batcher = batcher
        self.device = device
        self.takes_device, self.needs_device = _device_parameter(batcher)

    def with_device(self, device: torch.device | None) -> _Collate[T]:
        return _Collate(self.batcher, device)

    def __call__(self, items: Any) -> T:
        device = self.device
        if device is None:
            return self.batcher.batch(items, _CPU) if self.needs_device else self.batcher.batch(items)
        batch = self.batcher.batch(items, device) if self.takes_device else self.batcher.batch(items)
        return map_tensors(lambda t: t.to(device), batch)  # a batcher that leaves them elsewhere too


def _device_parameter(batcher: Any) -> tuple[bool, bool]:
    """(whether `batcher.batch` takes a device after the items, whether it must be given one)."""
    try:
        params = list(inspect.signature(batcher.batch).parameters.values())
    except (TypeError, ValueError):  # no signature to read (a builtin): call it with the items alone
        return False, False
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True, False
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2:
        return False, False
    return True, positional[1].default is inspect.Parameter.empty


@dataclass(frozen=True)
class Progress:
    """Burn's `Progress { items_processed, items_total }` of a data loader's iterator."""

    items_processed: int
    items_total: int

    @classmethod
    def new(cls, items_processed: int, items_total: int) -> Progress:
        """Burn's `Progress::new(items_processed, items_total)` (e.g. the epochs: `Progress.new(epoch, num_epochs)`)."""
        return cls(items_processed, items_total)


class DataLoaderIterator(Iterator[T]):
    """Burn's `DataLoaderIterator`: the batches, and `progress()` in dataset items."""

    def __init__(self, batches: Iterator[T], batch_size: int, items_total: int, done: int = 0) -> None:
        self._batches = batches
        self._batch_size = batch_size
        self._total = items_total
        self._done = done

    def __next__(self) -> T:
        batch = next(self._batches)
        self._done += 1
        return batch

    def progress(self) -> Progress:
        return Progress(min(self._done * self._batch_size, self._total), self._total)


class DataLoaderBuilder(Generic[T]):
    """`DataLoaderBuilder(batcher).batch_size(64).shuffle(seed).num_workers(4).build(dataset)`.

    Each method returns the builder. Without `shuffle`, items come in dataset order.

    Args:
        batcher: Makes a batch of the items.

    Raises:
        TypeError: `batcher` has no `batch` method.
    """

    def __init__(self, batcher: Batcher[Any, T]) -> None:
        if not callable(getattr(batcher, "batch", None)):
            raise TypeError(
                f"DataLoaderBuilder needs a Batcher with a batch(items) method, got {type(batcher).__name__}"
            )
        self._batcher = batcher
        self._batch_size = 1
        self._seed: int | None = None
        self._num_workers = 0
        self._pin_memory = False
        self._drop_last = False
        self._persistent = True
        self._extra: dict[str, Any] = {}
        self._device: torch.device | None = None
        self._batch_device: torch.device | None = None

    def batch_size(self, batch_size: int) -> DataLoaderBuilder[T]:
        """Items per batch (1 unless set).

        Args:
            batch_size: The number of items, >= 1.
        """
        self._batch_size = positive_int(batch_size, "batch_size")
        return self

    def shuffle(self, seed: int) -> DataLoaderBuilder[T]:
        """Shuffle every epoch from `seed`: the same orders on every run, a new order each epoch (as Burn).

        Args:
            seed: The shuffle's seed.
        """
        self._seed = int(seed)
        return self

    def num_workers(self, num_workers: int) -> DataLoaderBuilder[T]:
        """Worker processes that load and batch (0, the default: in the training process).

        Args:
            num_workers: The number of workers, >= 0.
        """
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers must be an integer >= 0, got {num_workers!r}")
        self._num_workers = num_workers
        return self

    def pin_memory(self, enabled: bool = True) -> DataLoaderBuilder[T]:
        """Page-locked batches, for faster `non_blocking` copies to a GPU.

        Args:
            enabled: Whether to pin.
        """
        self._pin_memory = enabled
        return self

    def drop_last(self, enabled: bool = True) -> DataLoaderBuilder[T]:
        """Leave out a short last batch.

        Args:
            enabled: Whether to drop it.
        """
        self._drop_last = enabled
        return self

    def persistent_workers(self, enabled: bool = True) -> DataLoaderBuilder[T]:
        """Keep workers alive between epochs (on by default when there are workers: no restart cost).

        Args:
            enabled: Whether to keep them.
        """
        self._persistent = enabled
        return self

    def dataloader_kwargs(self, **kwargs: Any) -> DataLoaderBuilder[T]:
        """Any other `DataLoader` argument (`prefetch_factor`, `multiprocessing_context`, ...)."""
        self._extra.update(kwargs)
        return self

    def set_device(self, device: str | torch.device) -> DataLoaderBuilder[T]:
        """Burn's `set_device`: batches come out on `device`. A batcher that takes a device gets it
        (with workers and a non-CPU device, the batcher gets the CPU in the workers and the loader
        moves each batch to `device`).

        Args:
            device: The device.
        """
        self._batch_device = torch.device(device)
        return self

    def on_device(self, device: str | torch.device) -> DataLoaderBuilder[T]:
        """Keep the data on `device`: batch the whole dataset once, move it there, and serve each
        batch by indexing it there, in the order the host loader would give for the same seed.

        For a small model on a GPU, moving each batch from the host costs more than the step's GPU
        work. Needs a batcher that batches item by item (row k of `batch(items)` depends on
        `items[k]` only: stacking, normalising) and a dataset that fits in the device's memory.
        Workers, pinning and `dataloader_kwargs` don't apply, and as the result is not a
        `DataLoader`, Lightning can't shard it for DDP: a single-device option.

        Args:
            device: The device.

        Raises:
            ValueError: A CUDA device where torch sees none.
        """
        target = torch.device(device)
        if target.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"on_device({str(device)!r}): torch sees no CUDA device here; keep the data on the "
                             "host (leave on_device out) or use on_device('cpu')")
        self._device = target
        return self

    def build(self, dataset: Dataset[Any] | Any) -> ResumableDataLoader[T] | DeviceDataLoader[T]:
        """The loader over `dataset`: a torch dataset, a burnlike `Dataset`, or any object with Burn's
        `get(index)` and `len()` (or `__len__`), read through `get`; anything else is refused here,
        naming what it lacks.

        Args:
            dataset: The dataset.

        Raises:
            TypeError: `dataset` is none of those.
        """
        dataset = loader_dataset(dataset)
        sampler = None
        worker_seeds = None
        if self._seed is not None:
            # The shuffle has its own generator: the DataLoader also draws worker seeds from its
            # generator, at times that depend on num_workers/persistent_workers, which would make
            # the order of later epochs depend on them.
            sampler = SeededShuffle(dataset, self._seed)
            worker_seeds = torch.Generator().manual_seed(self._seed + _WORKER_SEED_OFFSET)
        if self._device is not None:
            return DeviceDataLoader(self._batcher, dataset, self._batch_size, sampler, self._drop_last, self._device,
                                    shuffle_seed=self._seed)
        kwargs: dict[str, Any] = {
            "batch_size": self._batch_size,
            "sampler": sampler,
            "generator": worker_seeds,
            "drop_last": self._drop_last,
            "num_workers": self._num_workers,
            "collate_fn": _Collate(self._batcher),
            "pin_memory": self._pin_memory,
            "persistent_workers": self._persistent and self._num_workers > 0,
        }
        kwargs.update(self._extra)
        return ResumableDataLoader(dataset, shuffle_seed=self._seed, device=self._batch_device, **kwargs)


class EpochStream(Generic[T]):
    """Epochs of `size` batches cut from one stream of passes (`epoch_batches`): epoch e is batches
    `e * size .. (e + 1) * size` of the passes one after another. The stream is kept between epochs,
    so an epoch that follows the last one continues it; any other start (a resume, an epoch cut
    short) starts the pass holding that batch, past the batches before it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._batches: Iterator[T] | None = None
        self._pass = 0
        self._position = -1  # the stream's next batch; -1: no stream yet

    def epoch(self, epoch: int, skip: int, pass_length: int,
              start_pass: Callable[[int, int], Iterator[T]]) -> Iterator[T]:
        """Epoch `epoch`'s batches past its first `skip`; `start_pass(n, k)` starts pass n past k
        batches. Lazy: nothing is drawn before the first batch is asked for (Lightning tells the
        sampler its epoch after `iter()`; the pass's own number must be the last word)."""
        if pass_length < 1:
            raise ValueError("epoch_batches: the data loader has no batches to make epochs of")
        target = epoch * self.size + skip
        for _ in range(self.size - skip):
            if self._batches is None or self._position != target:  # not where the stream is: start there
                self._pass, offset = divmod(target, pass_length)
                self._batches, self._position = start_pass(self._pass, offset), target
            batch = next(self._batches, _END)
            if batch is _END:  # the pass is over: the next one, in its own order
                self._pass += 1
                self._batches = start_pass(self._pass, 0)
                batch = next(self._batches)
            self._position = target = target + 1
            yield batch


_END: Any = object()


class StreamEpochs(Generic[T]):
    """What `set_epoch_batches` gives a loader: epochs of n batches of an `EpochStream` of its passes.
    The loader provides `_pass_length()` (the batches of a whole pass) and `_pass_at(number, skip)`
    (pass `number` past its first `skip` batches); `start_epoch`/`skip`/`_passes` are its resume state."""

    start_epoch: int
    """The epoch the next pass resumes at (0-based)."""
    skip: int
    """The batches the next pass skips."""
    _passes: int
    epoch_batches: int | None = None
    """Batches per epoch when epochs are cut from a stream (None: an epoch is a pass)."""
    _stream: EpochStream[T] | None = None

    def set_epoch_batches(self, batches: int | None) -> None:
        """Epochs of `batches` batches each, cut from one stream of passes over the data: an epoch
        continues where the last one stopped (a pass that ends mid-epoch is followed by the next
        pass, in its own order), so no batch is seen twice before a whole pass is done. None: an
        epoch is a pass (the default). `resume_at(epoch, skip)` then starts at batch
        `epoch * batches + skip` of the stream.

        Args:
            batches: The batches per epoch (None: an epoch is a pass).
        """
        self.epoch_batches = _epoch_batches(batches)
        self._stream = EpochStream(self.epoch_batches) if self.epoch_batches is not None else None

    def _stream_epoch(self) -> Iterator[T]:
        """The next epoch of the stream; counted when its first batch is asked for, not at `iter()`
        (Lightning calls `iter()` once to check a loader that is not a DataLoader)."""
        assert self._stream is not None
        first = self._passes == 0
        self._passes += 1
        yield from self._stream.epoch(self.start_epoch + self._passes - 1, self.skip if first else 0,
                                      self._pass_length(), self._pass_at)

    def _pass_length(self) -> int:
        raise NotImplementedError

    def _pass_at(self, number: int, skip: int) -> Iterator[T]:
        raise NotImplementedError


def _epoch_batches(batches: int | None) -> int | None:
    return None if batches is None else positive_int(batches, "epoch_batches (or None)")


class ResumableDataLoader(DataLoader[T], StreamEpochs[T]):
    """The DataLoader `DataLoaderBuilder.build` returns: a plain DataLoader that can also start at
    any epoch and batch (`resume_at`), so a run resumed from a checkpoint sees the orders and the
    batches the uninterrupted run saw, in one process or several.

    Its first pass after `resume_at(epoch, skip)` draws epoch `epoch`'s order (a seeded shuffle's
    generator replayed from its seed, or the DistributedSampler Lightning injects under DDP told its
    epoch, which Lightning itself does only after the first batch is fetched) and skips the first
    `skip` batches by their indices, without loading them. `start_epoch`/`skip`/`shuffle_seed` are
    constructor arguments kept as attributes of those names, so they survive Lightning re-creating
    the loader with a DistributedSampler."""

    def __init__(self, *args: Any, start_epoch: int = 0, skip: int = 0, shuffle_seed: int | None = None,
                 device: str | torch.device | None = None, epoch_batches: int | None = None, **kwargs: Any) -> None:
        self.device = torch.device(device) if device is not None else None
        self._move_to: torch.device | None = None
        collate = kwargs.get("collate_fn")
        if self.device is not None and isinstance(collate, _Collate):
            in_workers = kwargs.get("num_workers", 0) > 0 and self.device.type != "cpu"
            kwargs["collate_fn"] = collate.with_device(_CPU if in_workers else self.device)
            self._move_to = self.device if in_workers else None
        self._build = (args, dict(kwargs))
        super().__init__(*args, **kwargs)
        self.start_epoch, self.skip, self.shuffle_seed = start_epoch, skip, shuffle_seed
        self._passes = 0
        self._skip_now = 0
        self.set_epoch_batches(epoch_batches)

    def resume_at(self, epoch: int, skip: int = 0) -> None:
        """Start the next pass at epoch `epoch` (0-based), past its first `skip` batches."""
        self.start_epoch, self.skip, self._passes = epoch, skip, 0

    def __len__(self) -> int:
        return self.epoch_batches if self.epoch_batches is not None else self._pass_length()

    def __iter__(self) -> Iterator[T]:  # type: ignore[override]
        if self._stream is not None:
            return self._stream_epoch()
        first = self._passes == 0
        self._passes += 1
        if first and (self.start_epoch or self.skip):
            position_sampler(self.sampler, self.start_epoch)
        return self._pass(self.skip if first else 0)

    def _pass_length(self) -> int:
        return DataLoader.__len__(self)

    def _pass_at(self, number: int, skip: int) -> Iterator[T]:
        position_sampler(self.sampler, number)
        return self._pass(skip)

    def _pass(self, skip: int) -> Iterator[T]:
        """One pass in the sampler's order (its epoch as set), past its first `skip` batches."""
        self._skip_now = skip
        if self.generator is not None and self.shuffle_seed is not None:  # workers' seeds: the epoch's too
            epoch = getattr(self.sampler, "epoch", self.start_epoch + self._passes - 1)
            self.generator.manual_seed(epoch_seed(self.shuffle_seed + _WORKER_SEED_OFFSET, int(epoch)))
        if self._iterator is not None:  # persistent workers: their iterator re-reads what it kept at its start
            self._iterator._index_sampler = self._index_sampler
        batches = super().__iter__()
        if self._move_to is not None:
            return _moved(batches, self._move_to, bool(self.pin_memory))
        return batches

    # Burn's DataLoader trait ---------------------------------------------------------------------
    def iter(self) -> DataLoaderIterator[T]:
        """Burn's `iter()`: the next pass's batches, with `progress()` in dataset items."""
        return DataLoaderIterator(iter(self), self.batch_size or 1, self.num_items())

    def num_items(self) -> int:
        """Burn's `num_items()`: the dataset's items (not the batches: `len(loader)`)."""
        return len(self.dataset)  # type: ignore[arg-type]

    def to_device(self, device: str | torch.device) -> ResumableDataLoader[T]:
        """Burn's `to_device(device)`: the same loader (dataset, batcher, shuffle) with batches on `device`."""
        return self._rebuilt(self.dataset, device=device)

    def slice(self, start: int, end: int) -> ResumableDataLoader[T]:
        """Burn's `slice(start, end)`: the same loader over items `start..end` of the dataset
        (Burn's `PartialDataset`); a shuffle draws from the same seed over those items."""
        from burnlike.data.dataset.transform.partial import PartialDataset

        return self._rebuilt(PartialDataset(self.dataset, start, end), device=self.device)

    def _rebuilt(self, dataset: Any, device: str | torch.device | None) -> ResumableDataLoader[T]:
        args, kwargs = self._build
        kwargs = dict(kwargs)
        kwargs.pop("dataset", None)
        collate = kwargs.get("collate_fn")
        if isinstance(collate, _Collate):  # the builder's batcher, before any device was given to it
            kwargs["collate_fn"] = collate.with_device(None)
        if isinstance(kwargs.get("sampler"), SeededShuffle) and self.shuffle_seed is not None:
            kwargs["sampler"] = SeededShuffle(dataset, self.shuffle_seed)
        return type(self)(dataset, *args[1:], shuffle_seed=self.shuffle_seed, device=device,
                          epoch_batches=self.epoch_batches, **kwargs)

    @property
    def _index_sampler(self) -> Any:  # what DataLoader's iterators draw batch indices from
        base = super()._index_sampler
        if self._skip_now:
            return _Skipping(base, self._skip_now)
        return base


def _moved(batches: Iterator[T], device: torch.device, non_blocking: bool) -> Iterator[T]:
    for batch in batches:
        yield map_tensors(lambda t: t.to(device, non_blocking=non_blocking), batch)


class _Skipping:
    """A batch sampler's batches after its first `skip`: the skipped ones are never loaded."""

    def __init__(self, batches: Any, skip: int) -> None:
        self.batches, self.skip = batches, skip

    def __iter__(self) -> Iterator[Any]:
        return itertools.islice(iter(self.batches), self.skip, None)

    def __len__(self) -> int:
        return len(self.batches)  # Lightning counts an epoch's batches from the loader, skipped ones too


class EpochsOf(StreamEpochs[T]):
    """Any sized iterable of batches (a plain `DataLoader`) in epochs of `batches` batches of one
    stream of its passes, as `set_epoch_batches` makes them for `DataLoaderBuilder`'s loaders. Each
    pass is the loader's own (its order is its own); a start mid-pass skips by loading. One process
    only: Lightning can't shard what isn't a `DataLoader` for DDP."""

    def __init__(self, loader: Any, batches: int) -> None:
        if not hasattr(loader, "__len__"):
            raise TypeError(f"epochs of {batches} batches need a loader with a length (len(loader)); "
                            f"{type(loader).__name__} has none")
        self.loader = loader
        self.start_epoch = self.skip = self._passes = 0
        self.set_epoch_batches(batches)

    def resume_at(self, epoch: int, skip: int = 0) -> None:
        self.start_epoch, self.skip, self._passes = epoch, skip, 0

    def __len__(self) -> int:
        return self.epoch_batches if self.epoch_batches is not None else len(self.loader)

    def __iter__(self) -> Iterator[T]:
        if self._stream is not None:
            return self._stream_epoch()
        first = self._passes == 0
        self._passes += 1
        return itertools.islice(iter(self.loader), self.skip if first else 0, None)

    def _pass_length(self) -> int:
        return len(self.loader)

    def _pass_at(self, number: int, skip: int) -> Iterator[T]:
        return itertools.islice(iter(self.loader), skip, None)


def epochs_of(loader: Any, batches: int) -> Any:
    """`loader` with epochs of `batches` batches of one stream of its passes: a `DataLoaderBuilder`
    loader set so (`set_epoch_batches`), any other sized loader wrapped (`EpochsOf`)."""
    if callable(getattr(loader, "set_epoch_batches", None)):
        loader.set_epoch_batches(batches)
        return loader
    return EpochsOf(loader, batches)


def position_sampler(sampler: Any, epoch: int, seed: int | None = None) -> None:
    """Put `sampler` at epoch `epoch`'s order where it has one to set (`SeededShuffle`, the
    DistributedSampler Lightning injects under DDP)."""
    if callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)


class SeededShuffle(RandomSampler):
    """`shuffle(seed)`'s order: a permutation of the items drawn from (seed, epoch) alone, so epoch
    e's order is the same however the run got there (resumed, restarted, in another process).
    Lightning tells it the epoch (`set_epoch`); iterated by hand, each pass is the next epoch.
    A RandomSampler, so Lightning sees a shuffling loader, and under DDP puts its own seeded
    DistributedSampler in its place (the same property: an order per (seed, epoch))."""

    def __init__(self, dataset: Sized, seed: int) -> None:
        super().__init__(dataset)
        self.n, self.seed, self.epoch = len(dataset), seed, 0
        self._passes = 0
        self._told = False

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self._told = epoch, True

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        if self._passes and not self._told:
            self.epoch += 1
        self._passes += 1
        self._told = False
        generator = torch.Generator().manual_seed(epoch_seed(self.seed, self.epoch))
        return iter(torch.randperm(self.n, generator=generator).tolist())


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of epoch `epoch`'s draws: `seed` itself for the first, then a fixed mix of both."""
    return seed if epoch == 0 else (seed * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9) % (1 << 63)


class DeviceDataLoader(StreamEpochs[T]):
    """The whole dataset as one batch on a device, served in batches by indexing there.

    The order comes from the same `RandomSampler` (same generator, same draws each epoch) the host
    loader would use, so both give the same batches for a seed, epoch after epoch. Built by
    `DataLoaderBuilder(...).on_device(device).build(dataset)`.

    Args:
        batcher: Batches the whole dataset once.
        dataset: The dataset.
        batch_size: Items per batch.
        sampler: The order (None: dataset order).
        drop_last: Leave out a short last batch.
        device: Where the data is kept.
        shuffle_seed: The shuffle's seed, kept for `slice` (None: no shuffle).

    Attributes:
        data: The whole dataset as one batch, on `device`.
        device: Where the data is.
        items: The number of items.
        batch_size: Items per batch.
        sampler: The order (None: dataset order).
        drop_last: Whether a short last batch is left out.
        shuffle_seed: The shuffle's seed (None: no shuffle).
        start_epoch: The epoch the next pass resumes at.
        skip: The batches the next pass skips.

    Raises:
        TypeError: The batcher returns no tensors.
        ValueError: The batcher doesn't batch item by item.
    """

    batch_sampler: None = None
    """None, as a DataLoader whose order comes from `sampler` has: Lightning reads both to tell
    whether a valid loader shuffles."""

    def __init__(self, batcher: Batcher[Any, T], dataset: Dataset[Any], batch_size: int,
                 sampler: Sampler[int] | None, drop_last: bool, device: torch.device,
                 shuffle_seed: int | None = None) -> None:
        n = len(dataset)  # type: ignore[arg-type]
        getitems = getattr(dataset, "__getitems__", None)
        items = getitems(list(range(n))) if callable(getitems) else [dataset[i] for i in range(n)]
        whole = _Collate(batcher)(items)
        leaves = tensors(whole)
        if not leaves:
            raise TypeError(f"on_device: {type(batcher).__name__}.batch(...) returned no tensors "
                            f"({type(whole).__name__}); nothing to keep on the device")
        for t in leaves:
            if t.dim() == 0 or t.shape[0] != n:
                raise ValueError(
                    f"on_device needs a batcher that batches item by item: {type(batcher).__name__}.batch() of "
                    f"all {n} items gave a tensor of shape {tuple(t.shape)}, expected a first dimension of {n}")
        self.data: T = map_tensors(lambda t: t.to(device), whole)
        self.device = device
        self.items = n
        self.batch_size = batch_size
        self.sampler = sampler
        self.drop_last = drop_last
        self.shuffle_seed = shuffle_seed
        self.start_epoch = self.skip = self._passes = 0

    def resume_at(self, epoch: int, skip: int = 0) -> None:
        """As `ResumableDataLoader.resume_at`: the next pass is epoch `epoch`'s, past `skip` batches.

        Args:
            epoch: The epoch, from 0.
            skip: The batches to skip.
        """
        self.start_epoch, self.skip, self._passes = epoch, skip, 0

    # Burn's DataLoader trait ---------------------------------------------------------------------
    def iter(self) -> DataLoaderIterator[T]:
        """Burn's `iter()`: the next pass's batches, with `progress()` in dataset items."""
        return DataLoaderIterator(iter(self), self.batch_size, self.items)

    def num_items(self) -> int:
        """Burn's `num_items()`: the dataset's items (not the batches: `len(loader)`)."""
        return self.items

    def to_device(self, device: str | torch.device) -> DeviceDataLoader[T]:
        """Burn's `to_device(device)`: the same loader with its data moved to `device`.

        Args:
            device: The device.
        """
        target = torch.device(device)
        return self._with(map_tensors(lambda t: t.to(target), self.data), self.items, target)

    def slice(self, start: int, end: int) -> DeviceDataLoader[T]:
        """Burn's `slice(start, end)`: items `start..end` (rows of the data, which the batcher built item
        by item); a shuffle draws from the same seed over those items.

        Args:
            start: The first item.
            end: The item past the last (both clipped to the data).
        """
        start, end = max(0, min(start, self.items)), max(0, min(end, self.items))
        end = max(start, end)
        return self._with(map_tensors(lambda t: t[start:end], self.data), end - start, self.device)

    def _with(self, data: T, items: int, device: torch.device) -> DeviceDataLoader[T]:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.data, new.items, new.device = data, items, device
        if self.shuffle_seed is not None and isinstance(self.sampler, SeededShuffle):
            new.sampler = SeededShuffle(range(items), self.shuffle_seed)
        new.start_epoch = new.skip = new._passes = 0
        new.set_epoch_batches(self.epoch_batches)
        return new

    def __len__(self) -> int:
        return self.epoch_batches if self.epoch_batches is not None else self._pass_length()

    def _pass_length(self) -> int:
        full, rest = divmod(self.items, self.batch_size)
        return full if self.drop_last or not rest else full + 1

    def __iter__(self) -> Iterator[T]:
        if self._stream is not None:
            return self._stream_epoch()
        first = self._passes == 0
        self._passes += 1
        if first and (self.start_epoch or self.skip):
            position_sampler(self.sampler, self.start_epoch)
        return self._pass(self.skip if first else 0)

    def _pass_at(self, number: int, skip: int) -> Iterator[T]:
        position_sampler(self.sampler, number)
        return self._pass(skip)

    def _pass(self, skip: int) -> Iterator[T]:
        # The host loader's BatchSampler takes the sampler's indices as its batches need them, and
        # a sampler may draw again when asked past its last index (RandomSampler does). The host asks
        # there when it builds a short last batch (so does `islice` here), or when its consumer asks
        # past the last batch, which Lightning's fetcher never does: the next epoch draws the same.
        indices = iter(self.sampler if self.sampler is not None else ())
        order: torch.Tensor | None = None
        length = self._pass_length()
        if self.sampler is not None:
            order = torch.tensor(list(itertools.islice(indices, length * self.batch_size)), dtype=torch.long)
            order = order.to(self.device, non_blocking=True)
        for b in range(skip, length):
            rows = slice(b * self.batch_size, (b + 1) * self.batch_size)
            yield _rows(self.data, rows if order is None else order[rows])
        for _ in indices:  # asked past the last batch
            pass

    def __repr__(self) -> str:
        return (f"DeviceDataLoader({self.items} items on {self.device}, batch_size={self.batch_size}, "
                f"shuffle={self.sampler is not None}, batches={len(self)})")


def _rows(data: T, rows: slice | torch.Tensor) -> T:
    """Rows of every tensor of `data`: a view for a slice, a gather (on the device) for indices."""
    if isinstance(rows, slice):
        return map_tensors(lambda t: t[rows], data)
    return map_tensors(lambda t: t.index_select(0, rows), data)
