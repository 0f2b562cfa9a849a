"""`burnlike.data.dataset.transform.sampler`: `SamplerDataset`, Burn's sampler. Its size is the
source's, a fixed size or a ratio; with replacement each `get` is the next uniform draw of the
seed's stream, without it draws come from Burn's bag (size // n copies of every item plus distinct
extras, shuffled). The batched fetch goes through the source's and checks its bounds; a copy or a
pickled sampler continues the same stream with a fresh lock, and each DataLoader worker draws from
the stream jumped by its id + 1, once, so workers don't repeat each other or the parent."""

from __future__ import annotations

import copy
import pickle
import threading
from collections import Counter

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data._utils import worker as torch_worker

import burnlike.data.dataset.transform.sampler as sampler_module
from burnlike.data import InMemDataset
from burnlike.data.dataset import SamplerDataset, SamplerDatasetOptions
from tests.data.dataset.helpers import AskedSquares, burn_shuffle, iter_items
from tests.helpers.expect import raises_exactly


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


# --- sizes and options --------------------------------------------------------------------------------------
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


def test_without_replacement_option_sets_replace_samples_false():
    assert SamplerDatasetOptions().without_replacement().replace_samples is False
    assert SamplerDataset.without_replacement(InMemDataset([1, 2]), 2).is_with_replacement() is False


# --- draws --------------------------------------------------------------------------------------------------
def test_sampler_with_replacement_draws_uniform_indices_from_the_seed():
    base = InMemDataset(range(100, 110))
    sampler = SamplerDataset(base, SamplerDatasetOptions().with_fixed_size(25).with_seed(7))
    rng = np.random.default_rng(7)
    expected = [100 + int(rng.integers(0, 10)) for _ in range(25)]
    assert sampler.is_with_replacement() and sampler.len() == 25
    assert iter_items(sampler) == expected  # get(i) ignores i: each call is the next draw
    assert sampler.get(25) is None and sampler.get(-1) is None
    assert len(set(expected)) < 10 or len(expected) != len(set(expected))  # repeats: with replacement


def test_sampler_without_replacement_uses_burns_bag():
    base = InMemDataset(range(10))
    sampler = SamplerDataset(base, SamplerDatasetOptions().without_replacement().with_size_ratio(2.5).with_seed(11))
    assert sampler.len() == 25 and not sampler.is_with_replacement()
    first, second = iter_items(sampler), iter_items(sampler)  # the second pass refills the bag from the same stream
    expected = burn_sampler_without_replacement(10, 25, np.random.default_rng(11), 50)
    assert first + second == expected
    counts = np.bincount(first, minlength=10)
    assert sorted(counts.tolist()) == [2] * 5 + [3] * 5  # 2 full copies + 5 distinct extra: Burn's bag


def test_sampler_without_replacement_factor_gives_exact_counts():
    """Burn's sampler_dataset_without_replacement_bucket_test: ratio 3 -> every item exactly 3 times."""
    sampler = SamplerDataset(InMemDataset(range(10)), SamplerDatasetOptions().without_replacement().with_size_ratio(3))
    assert np.bincount(iter_items(sampler)).tolist() == [3] * 10


# --- batched fetch and copies -------------------------------------------------------------------------------
def test_sampler_fetches_many_and_refuses_indices_past_its_size():
    inner = AskedSquares(4)
    sampler = SamplerDataset(inner, SamplerDatasetOptions().without_replacement().with_fixed_size(8).with_seed(3))
    first, second = sampler.__getitems__([0, 1, 2, 3]), sampler.__getitems__([4, 5, 6, 7])
    # without replacement, 8 draws from 4 items give each item exactly twice
    assert sorted(first.tolist() + second.tolist()) == [0, 0, 1, 1, 4, 4, 9, 9]
    assert len(inner.asked) == 2 and all(len(a) == 4 for a in inner.asked)
    with pytest.raises(IndexError, match="index 8 is out of range for SamplerDataset of length 8"):
        sampler.__getitems__([0, 8])
    with pytest.raises(IndexError, match="index -1"):
        sampler.__getitems__([-1])


def test_sampler_batched_fetch_bounds_and_a_deep_copy_continues_the_stream():
    source = InMemDataset(range(5))
    sampler = SamplerDataset(source, SamplerDatasetOptions().without_replacement().with_fixed_size(12).with_seed(1))
    drawn = sampler.__getitems__(list(range(12)))
    counts = Counter(drawn)
    assert sorted(counts) == [0, 1, 2, 3, 4] and sorted(counts.values()) == [2, 2, 2, 3, 3]  # 12 = 2·5 + 2 distinct
    for bad in (-1, 12):
        with raises_exactly(IndexError, f"index {bad} is out of range for SamplerDataset of length 12"):
            sampler.__getitems__([0, bad])
    with_replacement = SamplerDataset(source, SamplerDatasetOptions().with_fixed_size(6).with_seed(2))
    twin = copy.deepcopy(with_replacement)  # what a DataLoader worker gets: the stream state, a new lock
    assert [with_replacement.get(0) for _ in range(6)] == [twin.get(0) for _ in range(6)]
    assert twin.__getitems__([0, 5]) == with_replacement.__getitems__([0, 5])


def test_pickled_sampler_continues_the_same_stream_with_a_fresh_lock():
    sampler = SamplerDataset(InMemDataset(list(range(100))), SamplerDatasetOptions().with_seed(11).with_fixed_size(50))
    [sampler.get(i) for i in range(5)]
    state = sampler.__getstate__()
    assert "_lock" not in state and "_rng" in state
    clone = pickle.loads(pickle.dumps(sampler))  # what a DataLoader worker process receives
    assert isinstance(clone._lock, type(threading.Lock())) and clone._lock is not sampler._lock
    assert [clone.get(i) for i in range(10)] == [sampler.get(i) for i in range(10)]


# --- loader workers -----------------------------------------------------------------------------------------
def test_sampler_workers_draw_from_their_own_jumped_streams():
    """Worker k continues the parent's stream jumped k + 1 times (and once only: the jump is made on
    the worker's first draw, not on every draw)."""
    source = InMemDataset(list(range(1000)))
    sampler = SamplerDataset(source, SamplerDatasetOptions().with_fixed_size(8).with_seed(7))
    loader = DataLoader(sampler, batch_size=4, num_workers=2, multiprocessing_context="fork",
                        collate_fn=list)
    got = [batch for batch in loader]
    expected = []
    for worker in range(2):
        rng = np.random.Generator(np.random.default_rng(7).bit_generator.jumped(worker + 1))
        expected.append([int(rng.integers(0, 1000)) for _ in range(4)])
    assert got == expected
    parent = np.random.default_rng(7)  # the parent process keeps the unjumped stream
    assert [sampler.get(i) for i in range(3)] == [int(parent.integers(0, 1000)) for _ in range(3)]


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


def test_sampler_in_a_worker_switches_once_to_its_jumped_stream(monkeypatch):
    """What the loader tests above check from outside, seen inside one worker (worker 1 of 2): the
    first draw after the process changed jumps the stream once; later draws continue it."""
    options = SamplerDatasetOptions().with_seed(9).with_fixed_size(8)
    child = pickle.loads(pickle.dumps(SamplerDataset(InMemDataset(list(range(1000))), options)))
    other = child._pid + 1
    monkeypatch.setattr(sampler_module.os, "getpid", lambda: other)  # as in another process
    monkeypatch.setattr(torch_worker, "_worker_info", torch_worker.WorkerInfo(id=1, num_workers=2, seed=0, dataset=child))
    draws = [child.get(i) for i in range(8)]
    stream = np.random.Generator(np.random.default_rng(9).bit_generator.jumped(2))
    assert draws == [int(stream.integers(0, 1000)) for _ in range(8)]
    assert child._pid == other


def test_a_sampler_built_inside_a_worker_draws_its_seeds_own_stream(monkeypatch):
    """The jump is for a sampler that crossed into a worker from the parent; one constructed in the
    worker (a dataset that builds its sampler lazily) is no copy of a parent's and keeps the seed's stream."""
    monkeypatch.setattr(torch_worker, "_worker_info", torch_worker.WorkerInfo(id=1, num_workers=2, seed=0, dataset=None))
    sampler = SamplerDataset(InMemDataset(list(range(1000))), SamplerDatasetOptions().with_seed(9).with_fixed_size(8))
    stream = np.random.default_rng(9)
    assert [sampler.get(i) for i in range(8)] == [int(stream.integers(0, 1000)) for _ in range(8)]
