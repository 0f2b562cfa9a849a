"""`burnlike.data.dataset.transform.composed`: `ComposedDataset` concatenates datasets in order,
empty ones included, with Burn's `get` (None out of range)."""

from burnlike.data.dataset import ComposedDataset, InMemDataset
from tests.data.dataset.helpers import iter_items


def test_composed_concatenates_datasets_in_order():
    ds = ComposedDataset([InMemDataset("ab"), InMemDataset(""), InMemDataset("cde")])
    assert ds.len() == 5 and iter_items(ds) == list("abcde") and ds.get(2) == "c" and ds.get(5) is None
    assert ds.get(-1) is None
