"""Burn's `SamplerDataset`: a dataset as a distribution of a chosen size, with or without replacement."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from burnlike.data.dataset.base import Dataset, as_dataset, fetch_many
from burnlike.data.dataset.transform.options import RngSource, SizeConfig, make_rng, resolve_size, shuffle

T = TypeVar("T")

__all__ = ["SamplerDataset", "SamplerDatasetOptions"]


@dataclasses.dataclass(frozen=True)
class SamplerDatasetOptions:
    """Burn's options: with replacement, the source's size, OS entropy by default. Each `with_*`
    returns a new options value."""

    replace_samples: bool = True  # draw with replacement (else each index once per pass)
    size_config: SizeConfig = None  # None: the source's size; an int: that size; a float: a ratio of it
    rng_source: RngSource = None  # a seed, a numpy generator, or None (OS entropy)

    def with_replace_samples(self, replace_samples: bool) -> SamplerDatasetOptions:
        """These options, sampling with or without replacement.

        Args:
            replace_samples: Whether to sample with replacement.
        """
        return dataclasses.replace(self, replace_samples=replace_samples)

    def with_replacement(self) -> SamplerDatasetOptions:
        """These options, sampling with replacement."""
        return self.with_replace_samples(True)

    def without_replacement(self) -> SamplerDatasetOptions:
        """These options, sampling without replacement."""
        return self.with_replace_samples(False)

    def with_size(self, size: SizeConfig) -> SamplerDatasetOptions:
        """These options with another size.

        Args:
            size: None (the source's size), an int (that size) or a float (a ratio of the source's).
        """
        return dataclasses.replace(self, size_config=size)

    def with_source_size(self) -> SamplerDatasetOptions:
        """These options, as many samples as the source has items."""
        return self.with_size(None)

    def with_fixed_size(self, size: int) -> SamplerDatasetOptions:
        """These options, `size` samples.

        Args:
            size: The number of samples.
        """
        return self.with_size(int(size))

    def with_size_ratio(self, ratio: float) -> SamplerDatasetOptions:
        """These options, `ratio` times the source's size (truncated).

        Args:
            ratio: The ratio, >= 0.
        """
        return self.with_size(float(ratio))

    def with_rng(self, rng: RngSource) -> SamplerDatasetOptions:
        """These options with another random source.

        Args:
            rng: A seed, a numpy generator, or None (OS entropy).
        """
        return dataclasses.replace(self, rng_source=rng)

    def with_system_rng(self) -> SamplerDatasetOptions:
        """These options, drawing from OS entropy (a different stream each run)."""
        return self.with_rng(None)

    def with_seed(self, seed: int) -> SamplerDatasetOptions:
        """These options, drawing from a seeded stream (the same samples each run).

        Args:
            seed: The seed, >= 0.
        """
        return self.with_rng(seed)


class SamplerDataset(Dataset[T]):
    """Each `get(i)` (for `i < len()`) draws the next sample; the index itself only bounds the size.

    With replacement, a sample is a uniform draw over the source. Without replacement, the sampler
    fills a bag with `size // n` copies of every source index plus `size % n` distinct ones drawn
    without replacement, shuffles it, and pops samples from its end until it is empty, then refills.
    `SamplerDataset(ds, 100)` is Burn's `From<usize>`: 100 samples with replacement.

    In DataLoader workers each worker draws from its own stream (the parent's stream jumped by the
    worker's id), so workers don't repeat each other's samples.

    Args:
        dataset: The source dataset.
        options: The options, or a number of samples (with replacement); None: Burn's defaults.

    Attributes:
        dataset: The source dataset.
        size: The number of samples per pass.
        replace_samples: Whether samples are drawn with replacement.

    Raises:
        ValueError: A size > 0 over an empty dataset, or a bad size or seed.
    """

    def __init__(self, dataset: Any, options: SamplerDatasetOptions | int | None = None) -> None:
        if options is None:
            options = SamplerDatasetOptions()
        elif not isinstance(options, SamplerDatasetOptions):
            options = SamplerDatasetOptions().with_replacement().with_fixed_size(options)
        self.dataset = as_dataset(dataset)
        self.size = resolve_size(options.size_config, self.dataset.len())
        if self.size and self.dataset.len() == 0:
            raise ValueError(f"SamplerDataset of size {self.size} over an empty dataset: nothing to sample")
        self.replace_samples = options.replace_samples
        self._rng = make_rng(options.rng_source)
        self._bag: list[int] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @classmethod
    def with_replacement(cls, dataset: Any, size: int) -> SamplerDataset[Any]:
        """`size` samples with replacement.

        Args:
            dataset: The source dataset.
            size: The number of samples.
        """
        return cls(dataset, SamplerDatasetOptions().with_replacement().with_fixed_size(size))

    @classmethod
    def without_replacement(cls, dataset: Any, size: int) -> SamplerDataset[Any]:
        """`size` samples without replacement (each index once per pass over the source).

        Args:
            dataset: The source dataset.
            size: The number of samples.
        """
        return cls(dataset, SamplerDatasetOptions().without_replacement().with_fixed_size(size))

    def is_with_replacement(self) -> bool:
        """Whether samples are drawn with replacement."""
        return self.replace_samples

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _own_stream(self) -> None:
        """In a DataLoader worker (a new process), switch once to that worker's own stream."""
        self._pid = os.getpid()
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        if info is not None:
            self._rng = np.random.Generator(self._rng.bit_generator.jumped(info.id + 1))  # type: ignore[attr-defined]  # PCG64 has it

    def index(self) -> int:
        """The next source index (Burn's `SamplerDataset::index`)."""
        with self._lock:
            if self._pid != os.getpid():
                self._own_stream()
            n = self.dataset.len()
            if self.replace_samples:
                return int(self._rng.integers(0, n))
            if not self._bag:
                bag = np.tile(np.arange(n, dtype=np.int64), self.size // n)
                extra = self._rng.choice(n, self.size - bag.size, replace=False)
                bag = np.concatenate([bag, extra.astype(np.int64)])
                shuffle(bag, self._rng)
                self._bag = bag.tolist()
            return self._bag.pop()

    def get(self, index: int) -> T | None:
        if not 0 <= index < self.size:
            return None
        return self.dataset.get(self.index())

    def len(self) -> int:
        return self.size

    def __getitems__(self, indices: Sequence[int]) -> Any:
        for i in indices:
            if not 0 <= i < self.size:
                raise IndexError(f"index {i} is out of range for SamplerDataset of length {self.size}")
        return fetch_many(self.dataset, [self.index() for _ in indices])
