"""`burnlike.data.dataset.transform.options`: where a transform's size and randomness come from.
`resolve_size` takes an int or a float ratio (truncated) and `make_rng` a seed, refusing bools,
negatives and other types; `shuffle` is rand's forward Fisher-Yates, which draws nothing for fewer
than two elements, so a seeded stream is left as it was."""

from __future__ import annotations

import numpy as np
import pytest

from burnlike.data.dataset.transform.options import make_rng, resolve_size, shuffle


# --- sizes and seeds ----------------------------------------------------------------------------------------
def test_resolve_size_and_make_rng_refuse_bad_sizes_and_seeds():
    assert resolve_size(0, 10) == 0 and resolve_size(0.0, 10) == 0 and resolve_size(0.55, 10) == 5
    with pytest.raises(ValueError, match=r"^size must be >= 0, got -1$"):
        resolve_size(-1, 10)
    for bad in (True, "3"):
        with pytest.raises(ValueError, match=r"^size must be None, an int or a float ratio, got "):
            resolve_size(bad, 10)
    for bad in (True, 1.5, -1):
        with pytest.raises(ValueError, match=r"^a seed must be an integer >= 0"):
            make_rng(bad)


# --- the shuffle --------------------------------------------------------------------------------------------
def test_shuffle_draws_nothing_for_one_element_and_swaps_two():
    rng = np.random.default_rng(0)
    one = np.array([5])
    shuffle(one, rng)
    assert one.tolist() == [5] and rng.integers(0, 1 << 30) == np.random.default_rng(0).integers(0, 1 << 30)
    orders = set()
    for seed in range(8):
        two = np.array([0, 1])
        shuffle(two, np.random.default_rng(seed))
        orders.add(tuple(two.tolist()))
    assert orders == {(0, 1), (1, 0)}
