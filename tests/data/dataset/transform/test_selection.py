"""TODO: docstring."""

from __future__ import annotations

import numpy as np
import pytest

from burnlike.data import (
    InMemDataset,
)
from burnlike.data.dataset import SelectionDataset
from burnlike.data.dataset.transform.options import shuffle
from tests.data.dataset.helpers import burn_shuffle, items
from tests.helpers.expect import raises_exactly


def test_selection_split_slice_bounds_and_unchecked_indices():
    from burnlike.data.dataset import SelectionDataset

    data = InMemDataset("abcd")
    selection = SelectionDataset(data, [3, 1, 0])
    assert [list(s.iter()) for s in selection.split(1)] == [["d", "b", "a"]]
    with raises_exactly(ValueError, "num must be >= 1, got 0"):
        selection.split(0)
    assert selection.slice(1, 1).len() == 0  # an empty slice is allowed
    with raises_exactly(IndexError, "slice 2..1 is out of range for 3 indices"):
        selection.slice(2, 1)
    unchecked = SelectionDataset.from_indices_unchecked(data, [0, 9])  # Burn: no check of the indices
    assert unchecked.slice(0, 2).get(1) is None and unchecked.slice(0, 2).get(0) == "a"


def test_shuffled_indices_are_iota_shuffled_by_the_rng():
    import numpy as np

    from burnlike.data.dataset.transform.selection import iota, shuffled_indices

    got = shuffled_indices(10, np.random.default_rng(3))
    want = iota(10)
    shuffle(want, np.random.default_rng(3))
    assert got.tolist() == want.tolist() and sorted(got.tolist()) == list(range(10)) and got.dtype == np.int64


def test_selection_checked_unchecked_slice_split_and_shuffle():
    base = InMemDataset("abcde")
    sel = SelectionDataset(base, [4, 0, 0, 2])
    assert items(sel) == ["e", "a", "a", "c"] and sel.get(4) is None
    with pytest.raises(IndexError, match="5 >= 5"):
        SelectionDataset.from_indices_checked(base, [1, 5])
    loose = SelectionDataset.from_indices_unchecked(base, [1, 5])
    assert loose.get(0) == "b" and loose.get(1) is None and items(loose) == ["b"]
    everything = SelectionDataset.new_select_all(base)
    part = everything.slice(1, 3)
    everything.shuffle(3)  # a slice is independent of later shuffles of its parent
    assert items(part) == ["b", "c"] and everything.indices.tolist() == burn_shuffle(range(5), np.random.default_rng(3))
    assert [s.len() for s in SelectionDataset.new_select_all(InMemDataset(range(27))).split(4)] == [6, 6, 6, 9]
    with pytest.raises(IndexError):
        everything.slice(3, 9)
    shuffled = SelectionDataset.new_shuffled(base, 9)
    assert shuffled.indices.tolist() == burn_shuffle(range(5), np.random.default_rng(9))


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
