"""`burnlike.data.dataset.base`: Burn's `Dataset` trait as a torch map-style dataset. A subclass
writes either pair (`get`/`len` or `__getitem__`/`__len__`) and gets the other, `iter()` stops at the
first `None` as Burn's iterator does, and a class with neither pair is refused when defined.
`as_dataset` wraps torch and duck-typed Burn datasets (a `get` without Burn's `len`, as a mapping
has, does not make a dataset Burn-style) and fetches many items through the inner batched fetch
when there is one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from burnlike.data import InMemDataset
from burnlike.data.dataset import Dataset, MapperDataset, PartialDataset, ShuffledDataset, as_dataset
from tests.data.dataset.helpers import AskedSquares, Squares, burn_shuffle, iter_items


class TorchStyleWithMappingGet:
    """A torch map-style dataset that also has a `get` (as a mapping does) but no Burn `len()`."""

    def __init__(self, values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)

    def get(self, key, default=None):
        return "not an item"


class DuckBurnWithTensorLen:
    """Burn's `Dataset` trait only: `get(i)` (None past the end) and `len()` (here a numpy-like int)."""

    def get(self, i):
        return i * 10 if 0 <= i < 3 else None

    def len(self):
        return torch.tensor(3)


class TorchStyleWithBatchedFetch(TorchStyleWithMappingGet):
    """Its batched fetch marks what it returns, to tell it from item-by-item fetching."""

    def __getitems__(self, indices):
        return ("gathered", list(indices))


class DuckBurnStrings:
    """A duck-typed Burn dataset (`get`/`len`) of strings."""

    def get(self, i):
        return f"item {i}" if 0 <= i < 3 else None

    def len(self):
        return 3


class Letters(Dataset[str]):
    """A subclass that writes torch's pair only."""

    def __getitem__(self, index):
        return "abc"[index]

    def __len__(self):
        return 3


# --- Dataset subclasses -------------------------------------------------------------------------------------
def test_either_pair_of_methods_gives_the_other():
    sq, ts = Squares(), Letters()
    assert (len(sq), sq[4], sq.get(5), iter_items(sq)) == (5, 16, None, [0, 1, 4, 9, 16])
    assert (ts.len(), ts.get(2), ts.get(3), ts.get(-1), iter_items(ts)) == (3, "c", None, None, ["a", "b", "c"])
    with pytest.raises(IndexError, match="index 5 is out of range for Squares of length 5"):
        sq[5]
    assert isinstance(sq, torch.utils.data.Dataset) and not Squares().is_empty()
    loader = torch.utils.data.DataLoader(sq, batch_size=2)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9], [16]]
    with pytest.raises(TypeError, match="must define get"):
        type("Nothing", (Dataset,), {"len": lambda self: 0})


def test_dataset_subclasses_may_write_either_pair():
    class TorchStyle(Dataset[int]):
        def __getitem__(self, index: int) -> int:
            return index * 2

        def __len__(self) -> int:
            return 3

    class BurnStyle(Dataset[int]):
        def get(self, index: int) -> int | None:
            return index if 0 <= index < 2 else None

        def len(self) -> int:
            return 2

    assert list(TorchStyle()) == [0, 2, 4] and list(BurnStyle()) == [0, 1]
    with pytest.raises(TypeError, match=r"must define get\(\) or __getitem__\(\), and len\(\) or __len__\(\)"):
        class OnlyItems(Dataset[int]):
            def __getitem__(self, index: int) -> int:
                return index


def test_iteration_stops_at_the_first_none():
    class Gappy(Dataset[int]):
        def get(self, index):
            return None if index == 2 else index

        def len(self):
            return 4

    assert iter_items(Gappy()) == [0, 1]  # Burn's DatasetIterator stops there, whatever len() says


def test_is_empty_only_without_items():
    assert InMemDataset([]).is_empty() and not InMemDataset([7]).is_empty()


# --- as_dataset: wrapping torch and duck-typed datasets -----------------------------------------------------
def test_torch_and_duck_typed_datasets_are_wrapped():
    tensors = torch.utils.data.TensorDataset(torch.arange(4))
    wrapped = as_dataset(tensors)
    assert wrapped.len() == 4 and wrapped.get(3)[0].item() == 3 and wrapped.get(4) is None

    class Duck:
        def get(self, index):
            return index + 10 if index < 2 else None

        def len(self):
            return 2

    assert iter_items(as_dataset(Duck())) == [10, 11] and as_dataset(wrapped) is wrapped
    with pytest.raises(TypeError, match="got int"):
        as_dataset(3)


def test_as_dataset_wraps_torch_style_and_burn_style_datasets():
    torch_style = as_dataset(TorchStyleWithMappingGet(["a", "b"]))
    assert torch_style.len() == 2 and torch_style.get(1) == "b" and torch_style.get(2) is None
    assert torch_style.__getitems__([1, 0]) == ["b", "a"]  # no batched fetch: one item each
    burn_style = as_dataset(DuckBurnWithTensorLen())
    assert burn_style.len() == 3 and type(burn_style.len()) is int and len(burn_style) == 3
    assert burn_style.__getitems__([2, 0]) == [20, 0] and list(burn_style.iter()) == [0, 10, 20]
    assert as_dataset(TorchStyleWithBatchedFetch(["a", "b"])).__getitems__((1, 0)) == ("gathered", [1, 0])  # the inner batched fetch


def test_as_dataset_needs_both_methods_of_a_pair():
    class OnlyGet:
        def get(self, index: int) -> int:
            return index

    class OnlyGetItem:
        def __getitem__(self, index: int) -> int:
            return index

    for obj in (OnlyGet(), OnlyGetItem()):
        with pytest.raises(TypeError, match=r"^expected a dataset with get\(\)/len\(\) \(Burn\)"):
            as_dataset(obj)


def test_wrapped_dataset_fetches_many_through_the_inner_batched_fetch():
    inner = AskedSquares(5)
    wrapped = as_dataset(inner)
    assert torch.equal(wrapped.__getitems__([4, 1, 1]), torch.tensor([16, 1, 1]))
    assert inner.asked == [[4, 1, 1]]  # one call, not one per index
    plain = as_dataset(TensorDataset(torch.arange(4)))
    assert [t[0].item() for t in plain.__getitems__([3, 0])] == [3, 0]
    assert as_dataset(DuckBurnStrings()).__getitems__([2, 0]) == ["item 2", "item 0"]
    # a DataLoader uses the batched fetch
    batches = list(DataLoader(wrapped, batch_size=2, collate_fn=lambda x: x))
    assert [b.tolist() for b in batches] == [[0, 1], [4, 9], [16]]


def test_transforms_compose_over_torch_datasets():
    tensors = torch.utils.data.TensorDataset(torch.arange(20))
    view = MapperDataset(PartialDataset(ShuffledDataset(tensors, 4), 5, 15), lambda t: int(t[0]))
    order = burn_shuffle(range(20), np.random.default_rng(4))
    assert iter_items(view) == order[5:15]
