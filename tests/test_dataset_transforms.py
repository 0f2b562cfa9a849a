"""Burn's dataset protocol and transforms: index mapping and seeded orders, as Burn defines them.

Expected orders are recomputed here from Burn's algorithms (rand's forward Fisher-Yates, the
sampler's bag) driven by the documented random stream (`default_rng(seed)`, the swap draws taken
as `integers(0, [1..n])`), not copied from a previous run. Burn's own unit tests supply the split
sizes ([6, 6, 6, 9] and [10, 10, 5, 2] for 27 items).
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from idx import write_mnist_idx

from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.data.dataset import (
    ComposedDataset,
    Dataset,
    InMemDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    SamplerDatasetOptions,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
    as_dataset,
)
from burnlike.data.dataset.transform import windows

ROOT = Path(__file__).resolve().parents[1]


def burn_shuffle(values, rng):
    """rand's `SliceRandom::shuffle` as Burn calls it: for i in 0..n swap i with j uniform in 0..=i."""
    values = list(values)
    if len(values) <= 1:
        return values
    draws = rng.integers(0, np.arange(1, len(values) + 1)).tolist()  # j_i for i = 0..n-1, one call
    for i in range(len(values)):
        j = draws[i]
        assert 0 <= j <= i
        values[i], values[j] = values[j], values[i]
    return values


def burn_sampler_without_replacement(n, size, rng, count):
    """Burn's `SamplerDataset::index` without replacement: refill a bag (size // n copies of 0..n,
    plus size % n distinct indices), shuffle it, pop from the end."""
    out, bag = [], []
    for _ in range(count):
        if not bag:
            bag = list(range(n)) * (size // n)
            bag += rng.choice(n, size - len(bag), replace=False).tolist()
            bag = burn_shuffle(bag, rng)
        out.append(bag.pop())
    return out


def items(ds):
    return list(ds.iter())


# --- the Dataset protocol ------------------------------------------------------------------------

class Squares(Dataset[int]):
    """Burn-style: only get/len."""

    def get(self, index):
        return index * index if 0 <= index < 5 else None

    def len(self):
        return 5


class TorchStyle(Dataset[str]):
    def __getitem__(self, index):
        return "abc"[index]

    def __len__(self):
        return 3


def test_either_pair_of_methods_gives_the_other():
    sq, ts = Squares(), TorchStyle()
    assert (len(sq), sq[4], sq.get(5), items(sq)) == (5, 16, None, [0, 1, 4, 9, 16])
    assert (ts.len(), ts.get(2), ts.get(3), ts.get(-1), items(ts)) == (3, "c", None, None, ["a", "b", "c"])
    with pytest.raises(IndexError, match="index 5 is out of range for Squares of length 5"):
        sq[5]
    assert isinstance(sq, torch.utils.data.Dataset) and not Squares().is_empty()
    loader = torch.utils.data.DataLoader(sq, batch_size=2)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9], [16]]
    with pytest.raises(TypeError, match="must define get"):
        type("Nothing", (Dataset,), {"len": lambda self: 0})


def test_iteration_stops_at_the_first_none():
    class Gappy(Dataset[int]):
        def get(self, index):
            return None if index == 2 else index

        def len(self):
            return 4

    assert items(Gappy()) == [0, 1]  # Burn's DatasetIterator stops there, whatever len() says


def test_torch_and_duck_typed_datasets_are_wrapped():
    tensors = torch.utils.data.TensorDataset(torch.arange(4))
    wrapped = as_dataset(tensors)
    assert wrapped.len() == 4 and wrapped.get(3)[0].item() == 3 and wrapped.get(4) is None

    class Duck:
        def get(self, index):
            return index + 10 if index < 2 else None

        def len(self):
            return 2

    assert items(as_dataset(Duck())) == [10, 11] and as_dataset(wrapped) is wrapped
    with pytest.raises(TypeError, match="got int"):
        as_dataset(3)


def test_in_mem_dataset():
    ds = InMemDataset(["a", "b"])
    assert (ds.get(1), ds.get(2), ds.get(-1), len(ds), ds.items) == ("b", None, None, 2, ["a", "b"])
    assert InMemDataset.from_dataset(Squares()).items == [0, 1, 4, 9, 16]
    with pytest.raises(IndexError):
        ds[2]


# --- PartialDataset ------------------------------------------------------------------------------

def test_partial_maps_start_plus_index():
    base = InMemDataset(range(100, 127))
    part = PartialDataset(base, 10, 20)
    assert part.len() == 10 and items(part) == list(range(110, 120))
    assert part.get(10) is None and part.get(-1) is None
    assert PartialDataset(base, 0, 10).get(0) == 100


def test_partial_length_is_burns_min():
    """len() = min(end - start, len(dataset)): a range running past the end keeps that length and
    yields None for the missing tail, as Burn's does."""
    part = PartialDataset(InMemDataset(range(15)), 10, 20)
    assert part.len() == 10 and part.get(4) == 14 and part.get(5) is None and items(part) == [10, 11, 12, 13, 14]
    with pytest.raises(ValueError):
        PartialDataset(InMemDataset(range(5)), 3, 2)


def test_partial_split_sizes_match_burns_tests():
    base = InMemDataset(range(27))
    parts = PartialDataset.split(base, 4)
    assert [p.len() for p in parts] == [6, 6, 6, 9]  # Burn: test_split_contains_all_items_without_duplicates
    assert sum((items(p) for p in parts), []) == list(range(27))
    chunks = PartialDataset.split_chunks(base, 4, 5)
    assert [c.len() for c in chunks] == [10, 10, 5, 2]  # Burn: test_split_chunks_contains_all_items...
    assert sum((items(c) for c in chunks), []) == list(range(27))
    assert [c.len() for c in PartialDataset.split_chunks(InMemDataset(range(3)), 4, 5)] == [3]  # empty parts left out


# --- ShuffledDataset / SelectionDataset ----------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 42, 2**40 + 7])
def test_shuffled_order_is_burns_shuffle_of_the_seeded_stream(seed):
    base = InMemDataset([f"item{i}" for i in range(57)])
    shuffled = ShuffledDataset(base, seed)
    order = burn_shuffle(range(57), np.random.default_rng(seed))
    assert shuffled.indices.tolist() == order
    assert items(shuffled) == [f"item{i}" for i in order]
    assert sorted(order) == list(range(57)) and order != list(range(57))
    assert items(ShuffledDataset(base, seed)) == items(shuffled)  # same seed, same order
    assert items(ShuffledDataset.with_seed(base, seed)) == items(shuffled)


def test_different_seeds_differ_and_a_generator_is_consumed():
    base = InMemDataset(range(30))
    assert items(ShuffledDataset(base, 1)) != items(ShuffledDataset(base, 2))
    rng = np.random.default_rng(5)
    first, second = ShuffledDataset(base, rng), ShuffledDataset(base, rng)
    fresh = np.random.default_rng(5)
    assert items(first) == burn_shuffle(range(30), fresh) and items(second) == burn_shuffle(range(30), fresh)
    with pytest.raises(ValueError, match="seed"):
        ShuffledDataset(base, -1)


def test_same_order_in_a_fresh_process():
    code = ("from burnlike.data.dataset import InMemDataset, ShuffledDataset;"
            "print(ShuffledDataset(InMemDataset(range(40)), 42).indices.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "123"}, timeout=120)
    assert out.stdout.strip() == str(ShuffledDataset(InMemDataset(range(40)), 42).indices.tolist())


def test_selection_checked_unchecked_slice_split():
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


# --- SamplerDataset ------------------------------------------------------------------------------

def test_sampler_with_replacement_draws_uniform_indices_from_the_seed():
    base = InMemDataset(range(100, 110))
    sampler = SamplerDataset(base, SamplerDatasetOptions().with_fixed_size(25).with_seed(7))
    rng = np.random.default_rng(7)
    expected = [100 + int(rng.integers(0, 10)) for _ in range(25)]
    assert sampler.is_with_replacement() and sampler.len() == 25
    assert items(sampler) == expected  # get(i) ignores i: each call is the next draw
    assert sampler.get(25) is None and sampler.get(-1) is None
    assert len(set(expected)) < 10 or len(expected) != len(set(expected))  # repeats: with replacement


def test_sampler_without_replacement_uses_burns_bag():
    base = InMemDataset(range(10))
    sampler = SamplerDataset(base, SamplerDatasetOptions().without_replacement().with_size_ratio(2.5).with_seed(11))
    assert sampler.len() == 25 and not sampler.is_with_replacement()
    first, second = items(sampler), items(sampler)  # the second pass refills the bag from the same stream
    expected = burn_sampler_without_replacement(10, 25, np.random.default_rng(11), 50)
    assert first + second == expected
    counts = np.bincount(first, minlength=10)
    assert sorted(counts.tolist()) == [2] * 5 + [3] * 5  # 2 full copies + 5 distinct extra: Burn's bag


def test_sampler_without_replacement_factor_gives_exact_counts():
    """Burn's sampler_dataset_without_replacement_bucket_test: ratio 3 -> every item exactly 3 times."""
    sampler = SamplerDataset(InMemDataset(range(10)), SamplerDatasetOptions().without_replacement().with_size_ratio(3))
    assert np.bincount(items(sampler)).tolist() == [3] * 10


def test_sampler_constructors_and_sizes():
    base = InMemDataset(range(10))
    assert SamplerDataset(base, 15).len() == 15 and SamplerDataset(base, 15).is_with_replacement()  # From<usize>
    assert SamplerDataset(base).len() == 10  # the source's size by default
    assert not SamplerDataset.without_replacement(base, 15).is_with_replacement()
    assert SamplerDataset.with_replacement(base, 4).len() == 4
    assert SamplerDataset(base, SamplerDatasetOptions().with_size_ratio(0.55)).len() == 5  # truncated
    with pytest.raises(ValueError, match="ratio must be >= 0"):
        SamplerDataset(base, SamplerDatasetOptions().with_size_ratio(-1.0))
    with pytest.raises(ValueError, match="empty dataset"):
        SamplerDataset(InMemDataset([]), 3)


def test_sampler_workers_draw_their_own_streams_reproducibly():
    base = InMemDataset(range(1000))

    def batches():
        sampler = SamplerDataset(base, SamplerDatasetOptions().with_fixed_size(64).with_seed(3))
        loader = torch.utils.data.DataLoader(sampler, batch_size=16, num_workers=2)
        return [b.tolist() for b in loader]

    first = batches()
    assert first == batches()  # reproducible
    # worker k draws from the seed's stream jumped k + 1 times; batches alternate between the workers
    streams = [np.random.Generator(np.random.default_rng(3).bit_generator.jumped(k + 1)) for k in (0, 1)]
    expected = [[int(streams[b % 2].integers(0, 1000)) for _ in range(16)] for b in range(4)]
    assert first == [expected[0], expected[1], expected[2], expected[3]]
    assert first[0] != first[1]


# --- Mapper / Windows / Composed -----------------------------------------------------------------

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


def test_windows_are_overlapping_runs():
    base = InMemDataset([1, 2, 3, 4])
    ds = WindowsDataset(base, 2)
    assert ds.len() == 3 and items(ds) == [[1, 2], [2, 3], [3, 4]] and ds.get(3) is None  # Burn's doc example
    assert list(windows(base, 3)) == [[1, 2, 3], [2, 3, 4]]
    assert WindowsDataset(base, 5).len() == 0 and items(WindowsDataset(base, 5)) == [] and list(windows(base, 9)) == []
    assert WindowsDataset(base, 4).get(0) == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="non-zero"):
        WindowsDataset(base, 0)


def test_composed_concatenates():
    ds = ComposedDataset([InMemDataset("ab"), InMemDataset(""), InMemDataset("cde")])
    assert ds.len() == 5 and items(ds) == list("abcde") and ds.get(2) == "c" and ds.get(5) is None
    assert ds.get(-1) is None


def test_transforms_compose_over_torch_datasets():
    tensors = torch.utils.data.TensorDataset(torch.arange(20))
    view = MapperDataset(PartialDataset(ShuffledDataset(tensors, 4), 5, 15), lambda t: int(t[0]))
    order = burn_shuffle(range(20), np.random.default_rng(4))
    assert items(view) == order[5:15]


def test_batched_fetch_survives_the_transforms(tmp_path):
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
