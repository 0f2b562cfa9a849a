"""TODO: docstring."""

from __future__ import annotations

import pytest

from burnlike.data.dataset import (
    InMemDataset,
    MapperDataset,
)
from tests.data.dataset.helpers import items


def test_mapper_maps_lazily_and_keeps_none():
    class Double:
        def map(self, item):
            return item * 2

    base = InMemDataset([1, 2, 3])
    assert items(MapperDataset(base, Double())) == [2, 4, 6]
    calls = []
    lazy = MapperDataset(base, lambda x: calls.append(x) or str(x))
    assert calls == [] and lazy.get(1) == "2" and calls == [2] and lazy.get(3) is None and lazy.len() == 3
    with pytest.raises(TypeError):
        MapperDataset(base, 3)


def test_mapper_dataset_keeps_its_mapper():
    from burnlike.data.dataset.transform import MapperDataset

    def upper(s: str) -> str:
        return s.upper()

    assert MapperDataset(InMemDataset(["a"]), upper).mapper is upper
