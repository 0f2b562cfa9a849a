"""TODO: docstring."""

import subprocess
import sys

import numpy as np
import pytest

from burnlike.data.dataset import (
    InMemDataset,
    ShuffledDataset,
)
from tests.data.dataset.helpers import burn_shuffle, items
from tests.helpers.paths import REPO


@pytest.mark.parametrize("seed", [0, 42, 2**40 + 7])
def test_shuffled_order_is_burns_shuffle_of_the_seeded_stream(seed):
    base = InMemDataset([f"item{i}" for i in range(57)])
    shuffled = ShuffledDataset(base, seed)
    order = burn_shuffle(range(57), np.random.default_rng(seed))
    assert shuffled.indices.tolist() == order
    assert items(shuffled) == [f"item{i}" for i in order]
    assert sorted(order) == list(range(57)) and order != list(range(57))
    assert items(ShuffledDataset(base, seed)) == items(shuffled)  # same seed, same order
    assert items(ShuffledDataset.with_seed(base, seed)) == items(shuffled)


def test_different_seeds_differ_and_a_generator_is_consumed():
    base = InMemDataset(range(30))
    assert items(ShuffledDataset(base, 1)) != items(ShuffledDataset(base, 2))
    rng = np.random.default_rng(5)
    first, second = ShuffledDataset(base, rng), ShuffledDataset(base, rng)
    fresh = np.random.default_rng(5)
    assert items(first) == burn_shuffle(range(30), fresh) and items(second) == burn_shuffle(range(30), fresh)
    with pytest.raises(ValueError, match="seed"):
        ShuffledDataset(base, -1)


def test_shuffled_order_is_the_same_in_a_fresh_process():
    code = ("from burnlike.data.dataset import InMemDataset, ShuffledDataset;"
            "print(ShuffledDataset(InMemDataset(range(40)), 42).indices.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PYTHONHASHSEED": "123"}, timeout=120)
    assert out.stdout.strip() == str(ShuffledDataset(InMemDataset(range(40)), 42).indices.tolist())
