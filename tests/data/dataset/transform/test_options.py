"""TODO: docstring."""

from __future__ import annotations

import numpy as np
import pytest

from burnlike.data.dataset.transform import (
    shuffled_indices,
)
from burnlike.data.dataset.transform.options import make_rng, resolve_size, shuffle


def test_shuffled_indices_is_rands_forward_fisher_yates_on_the_seeds_draws():
    order = shuffled_indices(10, np.random.default_rng(42))
    assert order.dtype == np.int64 and sorted(order.tolist()) == list(range(10))
    swaps = np.random.default_rng(42).integers(0, np.arange(1, 11))  # j_i uniform in 0..=i
    want = list(range(10))
    for i, j in enumerate(swaps):
        want[i], want[j] = want[j], want[i]
    assert order.tolist() == want
    assert shuffled_indices(10, np.random.default_rng(42)).tolist() == want  # the seed fixes the order
    assert shuffled_indices(10, np.random.default_rng(43)).tolist() != want
    rng = np.random.default_rng(1)
    assert shuffled_indices(1, rng).tolist() == [0] and shuffled_indices(0, rng).tolist() == []
    assert rng.integers(0, 1 << 30) == np.random.default_rng(1).integers(0, 1 << 30)  # nothing drawn


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
