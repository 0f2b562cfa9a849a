"""`burnlike.data.dataset.transform.window`: `WindowsDataset` and `windows`, Burn's overlapping runs
of `size` consecutive items (none when the dataset is shorter; a size of 0 is refused)."""

import pytest

from burnlike.data import InMemDataset
from burnlike.data.dataset import WindowsDataset
from burnlike.data.dataset.transform import windows
from tests.data.dataset.helpers import iter_items


def test_windows_are_overlapping_runs():
    base = InMemDataset([1, 2, 3, 4])
    ds = WindowsDataset(base, 2)
    assert ds.len() == 3 and iter_items(ds) == [[1, 2], [2, 3], [3, 4]] and ds.get(3) is None  # Burn's doc example
    assert list(windows(base, 3)) == [[1, 2, 3], [2, 3, 4]]
    assert WindowsDataset(base, 5).len() == 0 and iter_items(WindowsDataset(base, 5)) == [] and list(windows(base, 9)) == []
    assert WindowsDataset(base, 4).get(0) == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="non-zero"):
        WindowsDataset(base, 0)


def test_windows_of_size_one_are_single_items():
    assert list(windows(InMemDataset("ab"), 1)) == [["a"], ["b"]]
