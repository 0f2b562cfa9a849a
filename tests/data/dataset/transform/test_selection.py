"""`burnlike.data.dataset.transform.selection`: `SelectionDataset`, a dataset seen through a list of
indices (checked or, as Burn's `from_indices_unchecked`, not), sliced, split and shuffled; slices
don't follow later shuffles of their parent, indices are kept flat as int64 and batched fetches are
bounds-checked. `shuffled_indices` is `iota` shuffled by rand's forward Fisher-Yates on the seed's
draws, so an order can be recomputed from the seed alone."""

from __future__ import annotations

import numpy as np
import pytest

from burnlike.data import InMemDataset
from burnlike.data.dataset import SelectionDataset
from burnlike.data.dataset.transform.selection import shuffled_indices
from tests.data.dataset.helpers import burn_shuffle, iter_items
from tests.helpers.expect import raises_exactly


# --- selections ---------------------------------------------------------------------------------------------
def test_selection_checked_unchecked_slice_split_and_shuffle():
    base = InMemDataset("abcde")
    sel = SelectionDataset(base, [4, 0, 0, 2])
    assert iter_items(sel) == ["e", "a", "a", "c"] and sel.get(4) is None
    with pytest.raises(IndexError, match="5 >= 5"):
        SelectionDataset.from_indices_checked(base, [1, 5])
    loose = SelectionDataset.from_indices_unchecked(base, [1, 5])
    assert loose.get(0) == "b" and loose.get(1) is None and iter_items(loose) == ["b"]
    everything = SelectionDataset.new_select_all(base)
    part = everything.slice(1, 3)
    everything.shuffle(3)  # a slice is independent of later shuffles of its parent
    assert iter_items(part) == ["b", "c"] and everything.indices.tolist() == burn_shuffle(range(5), np.random.default_rng(3))
    assert [s.len() for s in SelectionDataset.new_select_all(InMemDataset(range(27))).split(4)] == [6, 6, 6, 9]
    with pytest.raises(IndexError):
        everything.slice(3, 9)
    shuffled = SelectionDataset.new_shuffled(base, 9)
    assert shuffled.indices.tolist() == burn_shuffle(range(5), np.random.default_rng(9))


def test_selection_split_slice_bounds_and_unchecked_indices():
    data = InMemDataset("abcd")
    selection = SelectionDataset(data, [3, 1, 0])
    assert [list(s.iter()) for s in selection.split(1)] == [["d", "b", "a"]]
    with raises_exactly(ValueError, "num must be an integer >= 1, got 0"):
        selection.split(0)
    assert selection.slice(1, 1).len() == 0  # an empty slice is allowed
    with raises_exactly(IndexError, "slice 2..1 is out of range for 3 indices"):
        selection.slice(2, 1)
    unchecked = SelectionDataset.from_indices_unchecked(data, [0, 9])  # Burn: no check of the indices
    assert unchecked.slice(0, 2).get(1) is None and unchecked.slice(0, 2).get(0) == "a"


def test_selection_indices_are_flat_int64_and_batches_checked():
    ds = InMemDataset(["a", "b", "c", "d"])
    sel = SelectionDataset(ds, [[3, 2], [1, 0]])
    assert sel.indices.tolist() == [3, 2, 1, 0] and sel.len() == 4
    assert SelectionDataset(ds, []).indices.dtype == np.int64
    assert SelectionDataset(ds, np.array([1], dtype=np.uint8)).indices.dtype == np.int64
    assert sel.__getitems__([]) == [] and sel.__getitems__([0, 3]) == ["d", "a"]
    for bad in ([-1], [4]):
        with pytest.raises(IndexError, match=r"^index out of range for SelectionDataset of length 4$"):
            sel.__getitems__(bad)


# --- shuffled indices ---------------------------------------------------------------------------------------
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
