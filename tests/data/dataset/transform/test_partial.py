"""`burnlike.data.dataset.transform.partial`: `PartialDataset`, the range `start..end` of a dataset.
Index `i` is `start + i`; the length is Burn's `min(end - start, len)`, so a range past the end
yields None for the missing tail; `split` and `split_chunks` give Burn's part sizes (empty parts
left out); the batched fetch reaches through to the source's (MNIST's one gather) and refuses
indices past the range."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from burnlike.data import DataLoaderBuilder, InMemDataset, MnistBatcher, MnistDataset
from burnlike.data.dataset import PartialDataset, ShuffledDataset
from tests.data.dataset.helpers import burn_shuffle, iter_items
from tests.helpers.expect import raises_exactly
from tests.helpers.idx import write_mnist_idx


# --- ranges -------------------------------------------------------------------------------------------------
def test_partial_maps_start_plus_index():
    base = InMemDataset(range(100, 127))
    part = PartialDataset(base, 10, 20)
    assert part.len() == 10 and iter_items(part) == list(range(110, 120))
    assert part.get(10) is None and part.get(-1) is None
    assert PartialDataset(base, 0, 10).get(0) == 100


def test_partial_length_is_burns_min():
    """len() = min(end - start, len(dataset)): a range running past the end keeps that length and
    yields None for the missing tail, as Burn's does."""
    part = PartialDataset(InMemDataset(range(15)), 10, 20)
    assert part.len() == 10 and part.get(4) == 14 and part.get(5) is None and iter_items(part) == [10, 11, 12, 13, 14]
    with pytest.raises(ValueError):
        PartialDataset(InMemDataset(range(5)), 3, 2)


def test_partial_empty_range_bad_range_and_fetch_past_the_source_end():
    ds = InMemDataset(["a", "b", "c"])
    assert PartialDataset(ds, 2, 2).len() == 0
    with pytest.raises(ValueError, match=r"^PartialDataset needs 0 <= start_index <= end_index, got 2\.\.1$"):
        PartialDataset(ds, 2, 1)
    past = PartialDataset(ds, 1, 10)
    with pytest.raises(IndexError, match=r"^index 2 is out of range for PartialDataset of length 3$"):
        past.__getitems__([2])


# --- split and split_chunks ---------------------------------------------------------------------------------
def test_partial_split_sizes_match_burns_tests():
    base = InMemDataset(range(27))
    parts = PartialDataset.split(base, 4)
    assert [p.len() for p in parts] == [6, 6, 6, 9]  # Burn: test_split_contains_all_items_without_duplicates
    assert sum((iter_items(p) for p in parts), []) == list(range(27))
    chunks = PartialDataset.split_chunks(base, 4, 5)
    assert [c.len() for c in chunks] == [10, 10, 5, 2]  # Burn: test_split_chunks_contains_all_items...
    assert sum((iter_items(c) for c in chunks), []) == list(range(27))
    assert [c.len() for c in PartialDataset.split_chunks(InMemDataset(range(3)), 4, 5)] == [3]  # empty parts left out


def test_partial_split_and_split_chunks_parts_and_refusals():
    data = InMemDataset(range(4))
    assert [list(p.iter()) for p in PartialDataset.split(data, 1)] == [[0, 1, 2, 3]]
    with raises_exactly(ValueError, "num must be an integer >= 1, got 0"):
        PartialDataset.split(data, 0)
    assert [list(p.iter()) for p in PartialDataset.split_chunks(data, 1, 1)] == [[0, 1, 2, 3]]
    # 2 batches of 2 over 3 parts: the third would start at the end, so it is left out
    assert [list(p.iter()) for p in PartialDataset.split_chunks(data, 3, 2)] == [[0, 1], [2, 3]]
    for num, size, message in ((0, 2, "num must be an integer >= 1, got 0"),
                               (2, 0, "batch_size must be an integer >= 1, got 0")):
        with raises_exactly(ValueError, message):
            PartialDataset.split_chunks(data, num, size)


# --- the batched fetch --------------------------------------------------------------------------------------
def test_batched_fetch_reaches_through_shuffled_and_partial(tmp_path):
    """MNIST's one-gather __getitems__ reaches through Shuffled + Partial: a loader over the view gives
    the same batches as batching the mapped items one by one."""
    write_mnist_idx(tmp_path, n_train=64, n_test=8)
    mnist = MnistDataset.train(tmp_path)
    view = PartialDataset(ShuffledDataset(mnist, 1), 8, 40)
    fetched = view.__getitems__([0, 5, 31])
    order = burn_shuffle(range(64), np.random.default_rng(1))
    assert torch.equal(fetched.labels, mnist.labels[[order[8], order[13], order[39]]])
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).build(view)
    targets = torch.cat([b.targets for b in loader])
    assert targets.tolist() == [mnist.labels[order[i]].item() for i in range(8, 40)]
    with pytest.raises(IndexError):
        view.__getitems__([32])
