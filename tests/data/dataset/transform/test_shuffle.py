"""`burnlike.data.dataset.transform.shuffle`: `ShuffledDataset`'s order is Burn's shuffle (rand's
forward Fisher-Yates) of the seed's stream: the same for the same seed, in this process or a fresh
one whatever its hash seed; a generator passed in is consumed, so two datasets from it differ."""

import subprocess
import sys

import numpy as np
import pytest

from burnlike.data.dataset import InMemDataset, ShuffledDataset
from tests.data.dataset.helpers import burn_shuffle, iter_items
from tests.helpers.paths import REPO


@pytest.mark.parametrize("seed", [0, 42, 2**40 + 7])
def test_shuffled_order_is_burns_shuffle_of_the_seeded_stream(seed):
    base = InMemDataset([f"item{i}" for i in range(57)])
    shuffled = ShuffledDataset(base, seed)
    order = burn_shuffle(range(57), np.random.default_rng(seed))
    assert shuffled.indices.tolist() == order
    assert iter_items(shuffled) == [f"item{i}" for i in order]
    assert sorted(order) == list(range(57)) and order != list(range(57))
    assert iter_items(ShuffledDataset(base, seed)) == iter_items(shuffled)  # same seed, same order
    assert iter_items(ShuffledDataset.with_seed(base, seed)) == iter_items(shuffled)


def test_different_seeds_differ_and_a_generator_is_consumed():
    base = InMemDataset(range(30))
    assert iter_items(ShuffledDataset(base, 1)) != iter_items(ShuffledDataset(base, 2))
    rng = np.random.default_rng(5)
    first, second = ShuffledDataset(base, rng), ShuffledDataset(base, rng)
    fresh = np.random.default_rng(5)
    assert iter_items(first) == burn_shuffle(range(30), fresh) and iter_items(second) == burn_shuffle(range(30), fresh)
    with pytest.raises(ValueError, match="seed"):
        ShuffledDataset(base, -1)


def test_shuffled_order_is_the_same_in_a_fresh_process():
    code = ("from burnlike.data.dataset import InMemDataset, ShuffledDataset;"
            "print(ShuffledDataset(InMemDataset(range(40)), 42).indices.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PYTHONHASHSEED": "123"}, timeout=120)
    assert out.stdout.strip() == str(ShuffledDataset(InMemDataset(range(40)), 42).indices.tolist())
