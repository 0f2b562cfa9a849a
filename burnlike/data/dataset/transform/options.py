"""Burn's `RngSource` and `SizeConfig`: where a transform's randomness and size come from.

Randomness is numpy's PCG64: a seed gives the same stream on every run and machine (for a given
numpy), so `ShuffledDataset(ds, 42)` is one fixed order. It is not Rust's `StdRng` (ChaCha12), so the
orders are Burn's algorithms applied to a different random stream, not Burn's exact permutations.
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

__all__ = ["RngSource", "SizeConfig", "make_rng", "resolve_size"]


def make_rng(source: RngSource) -> np.random.Generator:
    if source is None:
        return np.random.default_rng()
    if isinstance(source, np.random.Generator):
        return source
    if isinstance(source, bool) or not isinstance(source, numbers.Integral) or source < 0:
        raise ValueError(f"a seed must be an integer >= 0 (or a numpy Generator, or None), got {source!r}")
    return np.random.default_rng(int(source))


def resolve_size(config: SizeConfig, source_size: int) -> int:
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
