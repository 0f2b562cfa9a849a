"""Burn's `RngSource` and `SizeConfig`: where a transform's randomness and size come from.

Randomness is numpy's PCG64: a seed gives the same stream on every run and machine, so
`ShuffledDataset(ds, 42)` is one fixed order. It is not Rust's `StdRng` (ChaCha12), so the orders are
Burn's algorithms applied to a different random stream, not Burn's exact permutations.

A shuffle is rand's `SliceRandom::shuffle` (what Burn calls): for `i` in `0..n`, swap element `i`
with element `j_i`, `j_i` uniform in `0..=i`. Here the `j_i` are drawn in one call,
`rng.integers(0, [1, 2, ..., n])`, so an order can be recomputed from the seed alone.
"""

from __future__ import annotations

import numbers

import numpy as np

RngSource = int | np.random.Generator | None
"""A seed (Burn's `RngSource::Seed`), a generator used as is (`RngSource::Rng`), or `None` for fresh OS
entropy (`RngSource::Default`)."""

SizeConfig = int | float | None
"""`None`: the source's size (`SizeConfig::Default`); an int: that size (`Fixed`); a float: a ratio of
the source's size, truncated (`Ratio`)."""

__all__ = ["RngSource", "SizeConfig", "make_rng", "resolve_size", "shuffle"]


def make_rng(source: RngSource) -> np.random.Generator:
    """The generator `source` stands for.

    Args:
        source: A seed, a generator (returned as is) or None (fresh OS entropy).

    Raises:
        ValueError: A seed that is not an integer >= 0.
    """
    if source is None:
        return np.random.default_rng()
    if isinstance(source, np.random.Generator):
        return source
    if isinstance(source, bool) or not isinstance(source, numbers.Integral) or source < 0:
        raise ValueError(f"a seed must be an integer >= 0 (or a numpy Generator, or None), got {source!r}")
    return np.random.default_rng(int(source))


def resolve_size(config: SizeConfig, source_size: int) -> int:
    """The number of items `config` asks for.

    Args:
        config: None (the source's size), an int (that size) or a float (a ratio of the source's size).
        source_size: The source dataset's size.

    Raises:
        ValueError: A negative size or ratio, or another type.
    """
    if config is None:
        return source_size
    if isinstance(config, bool):
        raise ValueError(f"size must be None, an int or a float ratio, got {config!r}")
    if isinstance(config, numbers.Integral):
        if config < 0:
            raise ValueError(f"size must be >= 0, got {config}")
        return int(config)
    if isinstance(config, numbers.Real):
        if not config >= 0:
            raise ValueError(f"size ratio must be >= 0, got {config}")
        return int(source_size * float(config))
    raise ValueError(f"size must be None, an int or a float ratio, got {config!r}")


def shuffle(values: np.ndarray, rng: np.random.Generator) -> None:
    """Shuffle a 1-d array in place: rand's forward Fisher-Yates, with the draws described above.

    Args:
        values: The array.
        rng: The random stream.
    """
    n = len(values)
    if n <= 1:
        return  # rand returns before drawing anything
    swaps = rng.integers(0, np.arange(1, n + 1)).tolist()
    out = values.tolist()
    for i, j in enumerate(swaps):
        out[i], out[j] = out[j], out[i]
    values[:] = out
