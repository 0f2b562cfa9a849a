"""burn::data API details pinned for mutation testing (issue 17): the loader builder's switches, the
device loader's description, wrapped datasets (Burn-style and torch-style), the tokenizers' edges and
the text batcher's duck-typed items."""

import dataclasses
from contextlib import contextmanager

import pytest
import torch

from burnlike.data import (
    ByteTokenizer,
    CharTokenizer,
    DataLoaderBuilder,
    InMemDataset,
    SeqLengthOption,
    TabularBatcher,
    TextClassificationBatcher,
)
from burnlike.data.dataset import as_dataset
from burnlike.data.dataset.table import TabularDataset, TabularItems


@contextmanager
def raises_exactly(kind: type[Exception], message: str):
    with pytest.raises(kind) as e:
        yield
    assert str(e.value) == message


class Stack:
    def batch(self, items, device=None):
        return torch.tensor(items)


# --- DataLoaderBuilder -------------------------------------------------------------------------------


def test_builder_switches_reach_the_dataloader():
    data = InMemDataset([1, 2, 3])
    default = DataLoaderBuilder(Stack()).num_workers(1).build(data)
    assert default.pin_memory is False and default.persistent_workers is True
    loader = DataLoaderBuilder(Stack()).pin_memory().persistent_workers(False).num_workers(1).build(data)
    assert loader.pin_memory is True and loader.persistent_workers is False
    loader = DataLoaderBuilder(Stack()).pin_memory(False).persistent_workers().num_workers(1).build(data)
    assert loader.pin_memory is False and loader.persistent_workers is True


def test_device_loader_describes_itself():
    data = InMemDataset([1, 2, 3, 4, 5])
    plain = DataLoaderBuilder(Stack()).batch_size(2).on_device("cpu").build(data)
    assert repr(plain) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=False, batches=3)"
    shuffled = DataLoaderBuilder(Stack()).batch_size(2).shuffle(0).drop_last().on_device("cpu").build(data)
    assert repr(shuffled) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=True, batches=2)"


# --- datasets ----------------------------------------------------------------------------------------


def test_is_empty():
    assert InMemDataset([]).is_empty() and not InMemDataset([7]).is_empty()


class TorchStyleWithGet:
    """A torch map-style dataset that also has a `get` (as a mapping does) but no Burn `len()`."""

    def __init__(self, values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)

    def get(self, key, default=None):
        return "not an item"


class BurnStyle:
    """Burn's `Dataset` trait only: `get(i)` (None past the end) and `len()` (here a numpy-like int)."""

    def get(self, i):
        return i * 10 if 0 <= i < 3 else None

    def len(self):
        return torch.tensor(3)


class Gathering(TorchStyleWithGet):
    def __getitems__(self, indices):
        return ("gathered", list(indices))


def test_wrapped_datasets_of_each_style():
    torch_style = as_dataset(TorchStyleWithGet(["a", "b"]))
    assert torch_style.len() == 2 and torch_style.get(1) == "b" and torch_style.get(2) is None
    assert torch_style.__getitems__([1, 0]) == ["b", "a"]  # no batched fetch: one item each
    burn_style = as_dataset(BurnStyle())
    assert burn_style.len() == 3 and type(burn_style.len()) is int and len(burn_style) == 3
    assert burn_style.__getitems__([2, 0]) == [20, 0] and list(burn_style.iter()) == [0, 10, 20]
    assert as_dataset(Gathering(["a", "b"])).__getitems__((1, 0)) == ("gathered", [1, 0])  # the inner batched fetch


def test_tabular_rows_and_bounds():
    data = TabularDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 0]), ["x", "y"], ["label"], ["a", "b"])
    assert data.get(3) is None and data.get(-1) is None and data.get(2).features.tolist() == [4.0, 5.0]
    items = data.__getitems__([2, 0])
    assert isinstance(items, TabularItems) and len(items) == 2
    assert TabularBatcher().batch(items).inputs.tolist() == [[4.0, 5.0], [0.0, 1.0]]


# --- tokenizers and the text batcher -------------------------------------------------------------------


def test_byte_tokenizer_decode_edges():
    tok = ByteTokenizer()
    assert tok.decode([3, 3 + ord("a")]) == "\x00a"  # token 3 is byte 0
    assert tok.decode([0, 1, 2, 259, 300, 3 + ord("b")]) == "b"  # special and out-of-range tokens are skipped
    assert tok.decode([3 + 0xFF, 3 + ord("c")]) == "\ufffdc"  # invalid UTF-8 is replaced, not an error
    assert tok.decode(tok.encode("héllo ✓")) == "héllo ✓"


def test_char_tokenizer_order_decode_and_refusal():
    tok = CharTokenizer.from_texts(["bbca"])  # b twice; c and a once each: ties in character order
    assert tok.alphabet == ["b", "a", "c"]
    assert tok.decode([3, 4, 5, 6, 0, 2]) == "bac"  # 6 is past the alphabet: skipped
    assert CharTokenizer.from_texts(["bbca", "a"], min_count=2).alphabet == ["a", "b"]
    with raises_exactly(ValueError, "the alphabet must be single characters"):
        CharTokenizer(["ab", "c"])


def test_seq_length_variants():
    assert SeqLengthOption.NoMax() == SeqLengthOption("no_max") == SeqLengthOption.of(None)
    assert SeqLengthOption.of(4) == SeqLengthOption("max", 4)
    assert SeqLengthOption.Fixed(4) == SeqLengthOption("fixed", 4)


@dataclasses.dataclass
class Review:
    text: str
    label: int


@dataclasses.dataclass
class Scored:
    text: bytes
    label: int


def test_text_batcher_takes_any_item_with_text_and_label():
    batch = TextClassificationBatcher(ByteTokenizer()).batch([Review("ab", 1), Review("c", 0)])
    assert batch.tokens.tolist() == [[1, 3 + ord("a"), 3 + ord("b")], [1, 3 + ord("c"), 0]]
    assert batch.labels.tolist() == [1, 0]
    with raises_exactly(TypeError, "expected items with .text and .label (or strings), got Scored"):
        TextClassificationBatcher(ByteTokenizer()).batch([Scored(b"ab", 1)])
