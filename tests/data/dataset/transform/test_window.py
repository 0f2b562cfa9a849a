"""TODO: docstring."""


import pytest

from burnlike.data import InMemDataset
from burnlike.data.dataset import MapperDataset, WindowsDataset
from burnlike.data.dataset.transform import windows
from tests.data.dataset.helpers import items
from tests.helpers.expect import raises_exactly


def test_windows_of_size_one_and_mapper_refuses_a_non_callable():
    from burnlike.data.dataset.transform import windows

    assert list(windows(InMemDataset("ab"), 1)) == [["a"], ["b"]]
    with raises_exactly(TypeError, "mapper must have a map(item) method or be callable, got int"):
        MapperDataset(InMemDataset("ab"), 3)


def test_windows_are_overlapping_runs():
    base = InMemDataset([1, 2, 3, 4])
    ds = WindowsDataset(base, 2)
    assert ds.len() == 3 and items(ds) == [[1, 2], [2, 3], [3, 4]] and ds.get(3) is None  # Burn's doc example
    assert list(windows(base, 3)) == [[1, 2, 3], [2, 3, 4]]
    assert WindowsDataset(base, 5).len() == 0 and items(WindowsDataset(base, 5)) == [] and list(windows(base, 9)) == []
    assert WindowsDataset(base, 4).get(0) == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="non-zero"):
        WindowsDataset(base, 0)
