"""Data pieces that the loader tests pass through without looking: batched fetches of wrapped and
sampled datasets, the sampler's pickling (what a DataLoader worker receives), the worker's own
random stream, Burn's `shuffled_indices`, CSV booleans, `TabularItems`, text items given by hand,
the device loader's repr, and pinning batches (GPU machines only)."""

import dataclasses
import pickle
import threading

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from toy import Batch, blobs

from burnlike.data import DataLoaderBuilder
from burnlike.data.batch import TensorBatch
from burnlike.data.dataset import (
    DatasetError,
    InMemDataset,
    SamplerDataset,
    SamplerDatasetOptions,
    as_dataset,
)
from burnlike.data.dataset.table import TabularDataset
from burnlike.data.dataset.transform import shuffled_indices
from burnlike.data.mnist import MnistBatch


class Squares:
    """A torch map-style dataset with a batched fetch that records what it was asked."""

    def __init__(self, n):
        self.n, self.asked = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i

    def __getitems__(self, indices):
        self.asked.append(list(indices))
        return torch.tensor([i * i for i in indices])


class BurnStyle:
    """A duck-typed Burn dataset (`get`/`len`)."""

    def get(self, i):
        return f"item {i}" if 0 <= i < 3 else None

    def len(self):
        return 3


def test_wrapped_dataset_fetches_many_through_the_inner_batched_fetch():
    inner = Squares(5)
    wrapped = as_dataset(inner)
    assert torch.equal(wrapped.__getitems__([4, 1, 1]), torch.tensor([16, 1, 1]))
    assert inner.asked == [[4, 1, 1]]  # one call, not one per index
    plain = as_dataset(TensorDataset(torch.arange(4)))
    assert [t[0].item() for t in plain.__getitems__([3, 0])] == [3, 0]
    assert as_dataset(BurnStyle()).__getitems__([2, 0]) == ["item 2", "item 0"]
    # a DataLoader uses the batched fetch
    batches = list(DataLoader(wrapped, batch_size=2, collate_fn=lambda x: x))
    assert [b.tolist() for b in batches] == [[0, 1], [4, 9], [16]]


def test_sampler_fetches_many_and_refuses_indices_past_its_size():
    inner = Squares(4)
    sampler = SamplerDataset(inner, SamplerDatasetOptions().without_replacement().with_fixed_size(8).with_seed(3))
    first, second = sampler.__getitems__([0, 1, 2, 3]), sampler.__getitems__([4, 5, 6, 7])
    # without replacement, 8 draws from 4 items give each item exactly twice
    assert sorted(first.tolist() + second.tolist()) == [0, 0, 1, 1, 4, 4, 9, 9]
    assert len(inner.asked) == 2 and all(len(a) == 4 for a in inner.asked)
    with pytest.raises(IndexError, match="index 8 is out of range for SamplerDataset of length 8"):
        sampler.__getitems__([0, 8])
    with pytest.raises(IndexError, match="index -1"):
        sampler.__getitems__([-1])


def test_a_pickled_sampler_continues_the_same_stream_with_a_fresh_lock():
    sampler = SamplerDataset(InMemDataset(list(range(100))), SamplerDatasetOptions().with_seed(11).with_fixed_size(50))
    [sampler.get(i) for i in range(5)]
    state = sampler.__getstate__()
    assert "_lock" not in state and "_rng" in state
    copy = pickle.loads(pickle.dumps(sampler))  # what a DataLoader worker process receives
    assert isinstance(copy._lock, type(threading.Lock())) and copy._lock is not sampler._lock
    assert [copy.get(i) for i in range(10)] == [sampler.get(i) for i in range(10)]


def test_each_loader_worker_draws_its_own_stream():
    options = SamplerDatasetOptions().with_seed(5).with_fixed_size(8)
    sampler = SamplerDataset(InMemDataset(list(range(1000))), options)
    expected_parent = [SamplerDataset(InMemDataset(list(range(1000))), options).get(i) for i in range(8)]
    loader = DataLoader(sampler, batch_size=4, num_workers=2, collate_fn=list)
    batches = [b for b in loader]
    # worker w draws from the seed's stream jumped w + 1 times: not the parent's, not each other's
    rng = np.random.default_rng(5).bit_generator
    want = [np.random.Generator(rng.jumped(w + 1)).integers(0, 1000, 4).tolist() for w in range(2)]
    assert batches == want
    assert batches[0] != expected_parent[:4] and batches[0] != batches[1]


def test_shuffled_indices_is_rands_forward_fisher_yates_on_the_seeds_draws():
    order = shuffled_indices(10, np.random.default_rng(42))
    assert order.dtype == np.int64 and sorted(order.tolist()) == list(range(10))
    swaps = np.random.default_rng(42).integers(0, np.arange(1, 11))  # j_i uniform in 0..=i
    want = list(range(10))
    for i, j in enumerate(swaps):
        want[i], want[j] = want[j], want[i]
    assert order.tolist() == want
    assert shuffled_indices(10, np.random.default_rng(42)).tolist() == want  # the seed fixes the order
    assert shuffled_indices(10, np.random.default_rng(43)).tolist() != want
    rng = np.random.default_rng(1)
    assert shuffled_indices(1, rng).tolist() == [0] and shuffled_indices(0, rng).tolist() == []
    assert rng.integers(0, 1 << 30) == np.random.default_rng(1).integers(0, 1 << 30)  # nothing drawn


@dataclasses.dataclass
class Flagged:
    name: str
    ok: bool


@pytest.mark.parametrize(("text", "value"), [("true", True), ("True", True), (" YES ", True), ("y", True), ("t", True),
                                             ("1", True), ("false", False), ("No", False), ("n", False),
                                             ("f", False), ("0", False)])
def test_csv_booleans(tmp_path, text, value):
    path = tmp_path / "rows.csv"
    path.write_text(f"name,ok\na,{text}\n")
    assert InMemDataset.from_csv(path, Flagged).get(0) == Flagged("a", value)


@pytest.mark.parametrize("text", ["maybe", "2", "tru"])
def test_a_csv_value_that_is_no_boolean_is_named(tmp_path, text):
    path = tmp_path / "rows.csv"
    path.write_text(f"name,ok\na,{text}\n")
    with pytest.raises(DatasetError, match=rf"rows.csv line 2: column 'ok': '{text}' is not a valid bool"):
        InMemDataset.from_csv(path, Flagged)


def test_json_booleans_and_bits(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"name": "a", "ok": true}\n{"name": "b", "ok": 0}\n{"name": "c", "ok": 1}\n{"name": "d", "ok": 2}\n')
    with pytest.raises(DatasetError, match="line 4: column 'ok': 2 is not a valid bool"):
        InMemDataset.from_json_rows(path, Flagged)
    path.write_text('{"name": "a", "ok": true}\n{"name": "b", "ok": 0}\n{"name": "c", "ok": 1}\n')
    assert [item.ok for item in InMemDataset.from_json_rows(path, Flagged).iter()] == [True, False, True]


def test_tabular_items_length_is_the_batch_size():
    data = TabularDataset(torch.randn(7, 3), torch.arange(7) % 2, ["a", "b", "c"], ["y"], ["no", "yes"])
    items = data.__getitems__([6, 0, 2])
    assert len(items) == 3 and items.features.shape == (3, 3)
    assert torch.equal(items.targets, torch.tensor([0, 0, 0]))


def test_text_folder_items_given_by_hand(tmp_path):
    from burnlike.data.dataset.nlp import TextFolderDataset

    (tmp_path / "a.txt").write_text("good film")
    (tmp_path / "b.txt").write_text("bad film")
    data = TextFolderDataset.new_classification_with_items([(tmp_path / "a.txt", "pos"), (str(tmp_path / "b.txt"), "neg")],
                                                           ["neg", "pos"])
    assert data.num_classes() == 2 and data.len() == 2
    first, second = data.get(0), data.get(1)
    assert (first.text.text, first.text.text_path, first.label) == ("good film", str(tmp_path / "a.txt"), 1)
    assert (second.text.text, second.label) == ("bad film", 0)
    with pytest.raises(DatasetError, match=r"a.txt: label 'meh' is not one of the classes \['neg', 'pos'\]"):
        TextFolderDataset.new_classification_with_items([(tmp_path / "a.txt", "meh")], ["neg", "pos"])


class ToyBatcher:
    def batch(self, items, device=None):
        xs, ys = zip(*items)
        return Batch(torch.stack(xs), torch.stack(ys))


def test_device_loader_repr_says_what_it_holds():
    loader = DataLoaderBuilder(ToyBatcher()).batch_size(32).shuffle(1).on_device("cpu").build(blobs(100))
    assert repr(loader) == "DeviceDataLoader(100 items on cpu, batch_size=32, shuffle=True, batches=4)"
    loader = DataLoaderBuilder(ToyBatcher()).batch_size(25).drop_last(True).on_device("cpu").build(blobs(60))
    assert repr(loader) == "DeviceDataLoader(60 items on cpu, batch_size=25, shuffle=False, batches=2)"


@dataclasses.dataclass
class Tagged(TensorBatch):
    x: torch.Tensor
    y: torch.Tensor
    name: str


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning host memory needs a CUDA device")
def test_pin_memory_pins_every_tensor_and_keeps_the_rest():
    batch = Tagged(torch.randn(2, 3), torch.arange(2), "files 1-2")
    pinned = batch.pin_memory()
    assert pinned.x.is_pinned() and pinned.y.is_pinned() and pinned.name == "files 1-2"
    assert torch.equal(pinned.x, batch.x) and not batch.x.is_pinned()
    mnist = MnistBatch(torch.randn(2, 1, 28, 28), torch.tensor([3, 4])).pin_memory()
    assert mnist.images.is_pinned() and mnist.targets.is_pinned() and mnist.targets.tolist() == [3, 4]


def test_an_allowed_download_that_cannot_reach_the_network_says_so(tmp_path, monkeypatch):
    """The real downloader (torchvision), offline: the error keeps the advice and says why it failed."""
    import socket

    from burnlike.data import MnistDataset, MnistNotFoundError

    tried = []

    def offline(*args, **kwargs):
        tried.append(args[0] if args else None)
        raise socket.gaierror("no network in tests")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.setattr(socket.socket, "connect", offline)
    with pytest.raises(MnistNotFoundError) as err:
        MnistDataset.train(tmp_path, download=True)
    message = str(err.value)
    assert f"MNIST not found in {(tmp_path / 'MNIST' / 'raw').resolve()}" in message
    assert "Downloading through torchvision failed: RuntimeError" in message
    assert tried  # torchvision did try its mirrors
    assert not list((tmp_path / "MNIST" / "raw").glob("*-ubyte"))  # nothing half-written was left as data


@pytest.mark.parametrize("metric", ["CpuMemory", "CpuUse"])
def test_cpu_metrics_report_psutils_figures(metric):
    psutil = pytest.importorskip("psutil")  # the `system` extra
    from burnlike.train import metric as metrics
    from burnlike.train.metric import MetricContext

    m = getattr(metrics, metric)()
    value, count = m.batch_value(None, MetricContext())
    assert count == 1
    if metric == "CpuMemory":
        assert value == pytest.approx(psutil.virtual_memory().used / 1e9, rel=0.2) and m.unit == "GB"
    else:
        assert 0.0 <= value <= 100.0 and m.unit == "%"


def test_in_a_worker_the_sampler_switches_once_to_its_jumped_stream(monkeypatch):
    """What the two-worker test above checks from outside, seen inside one worker (worker 1 of 2):
    the first draw after the process changed jumps the stream once; later draws continue it."""
    from torch.utils.data._utils import worker

    import burnlike.data.dataset.transform.sampler as sampler_module

    options = SamplerDatasetOptions().with_seed(9).with_fixed_size(8)
    child = pickle.loads(pickle.dumps(SamplerDataset(InMemDataset(list(range(1000))), options)))
    other = child._pid + 1
    monkeypatch.setattr(sampler_module.os, "getpid", lambda: other)  # as in another process
    monkeypatch.setattr(worker, "_worker_info", worker.WorkerInfo(id=1, num_workers=2, seed=0, dataset=child))
    draws = [child.get(i) for i in range(8)]
    stream = np.random.Generator(np.random.default_rng(9).bit_generator.jumped(2))
    assert draws == [int(stream.integers(0, 1000)) for _ in range(8)]
    assert child._pid == other
