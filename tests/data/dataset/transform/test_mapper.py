"""`burnlike.data.dataset.transform.mapper`: `MapperDataset` maps each item when it is fetched (not
before), with a callable or an object with `map(item)`, keeps None past the end, and refuses
anything else naming its type."""

from __future__ import annotations

import pytest

from burnlike.data.dataset import InMemDataset, MapperDataset
from tests.data.dataset.helpers import iter_items
from tests.helpers.expect import raises_exactly


def test_mapper_maps_lazily_and_keeps_none():
    class Double:
        def map(self, item):
            return item * 2

    base = InMemDataset([1, 2, 3])
    assert iter_items(MapperDataset(base, Double())) == [2, 4, 6]
    calls = []
    lazy = MapperDataset(base, lambda x: calls.append(x) or str(x))
    assert calls == [] and lazy.get(1) == "2" and calls == [2] and lazy.get(3) is None and lazy.len() == 3
    with pytest.raises(TypeError):
        MapperDataset(base, 3)


def test_mapper_dataset_keeps_its_mapper():
    def upper(s: str) -> str:
        return s.upper()

    assert MapperDataset(InMemDataset(["a"]), upper).mapper is upper


def test_mapper_refuses_a_non_callable_naming_its_type():
    with raises_exactly(TypeError, "mapper must have a map(item) method or be callable, got int"):
        MapperDataset(InMemDataset("ab"), 3)
