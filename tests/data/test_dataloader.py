"""TODO: docstring."""

from __future__ import annotations

import itertools
import pickle

import pytest
import torch
from torch.utils.data import DataLoader

from burnlike.data import (
    DataLoaderBuilder,
    DeviceDataLoader,
    InMemDataset,
    MnistBatch,
    MnistBatcher,
    MnistDataset,
)
from burnlike.optim import AdamConfig
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric
from burnlike.train.metric.store import Split
from tests.data.helpers import TorchCalls
from tests.helpers.expect import raises_exactly
from tests.helpers.fit import StackingBatcher, train
from tests.helpers.toy import Batch, Classifier, blobs


def epochs(loader, n: int = 3) -> list[list[int]]:
    """The target order of `n` epochs (each target tensor tells which items came, in which order)."""
    return [torch.cat([b.targets for b in loader]).tolist() for _ in range(n)]


class Stack:
    def batch(self, items, device=None):
        return torch.tensor(items)


class Gathered:
    """What a dataset's batched fetch returns (as MnistItems): the batcher batches it in one go."""

    def __init__(self, values):
        self.values = values


class GatheringData(InMemDataset):
    def __getitems__(self, indices):
        return Gathered([self.items[i] for i in indices])


class GatherBatcher:
    def batch(self, items, device=None):
        assert isinstance(items, Gathered), "expected the dataset's batched fetch"
        return torch.tensor(items.values)


class NoTensors:
    def batch(self, items, device=None):
        return "text"


class ToyBatcher:
    def batch(self, items, device=None):
        xs, ys = zip(*items)
        return Batch(torch.stack(xs), torch.stack(ys))


# --- device-resident loader ---------------------------------------------------------------------------
def epoch_batches(loader, stop_at_len: bool) -> list:
    """One epoch's batches: to the end (`for`), or exactly `len(loader)` of them, as Lightning's
    fetcher takes them (it never asks past the last, so a host sampler's last step may not run)."""
    return list(itertools.islice(iter(loader), len(loader))) if stop_at_len else list(loader)


class WholeBatchMean:
    def batch(self, items: list[tuple[torch.Tensor, torch.Tensor]], device: object = None) -> torch.Tensor:
        return torch.stack([x for x, _ in items]).mean(0)  # not item by item: one row for the batch


def _digits(n: int) -> MnistDataset:
    return MnistDataset(torch.arange(n * 784, dtype=torch.int64).remainder(256).to(torch.uint8).reshape(n, 28, 28),
                        torch.arange(n) % 10)


def test_seeded_shuffle_is_deterministic_and_changes_each_epoch(root):
    ds = MnistDataset.train(root)
    a = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    b = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    c = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(7).build(ds))
    assert a == b and a[0] != a[1] != a[2] and a != c
    assert all(sorted(e) == sorted(ds.labels.tolist()) for e in a)  # a permutation, nothing dropped
    plain = DataLoaderBuilder(MnistBatcher()).batch_size(16).build(ds)
    assert torch.cat([bt.targets for bt in plain]).tolist() == ds.labels.tolist()


def test_shuffle_leaves_the_global_rng_alone(root):
    ds = MnistDataset.train(root)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds), 2)
    assert torch.equal(torch.rand(3), expected)


def test_builder_knobs_reach_the_dataloader(root):
    ds = MnistDataset.train(root)
    builder = DataLoaderBuilder(MnistBatcher())
    assert builder.batch_size(16) is builder and builder.shuffle(1) is builder and builder.num_workers(0) is builder
    assert builder.drop_last() is builder and builder.pin_memory(False) is builder
    loader = builder.dataloader_kwargs(timeout=5).build(ds)
    assert (loader.batch_size, loader.drop_last, loader.timeout, len(loader)) == (16, True, 5, 6)
    assert isinstance(loader.sampler, torch.utils.data.RandomSampler)  # so Lightning's DDP sampler shuffles
    assert len(DataLoaderBuilder(MnistBatcher()).batch_size(16).build(ds)) == 7
    workers = DataLoaderBuilder(MnistBatcher()).num_workers(2).build(ds)
    assert workers.persistent_workers and workers.num_workers == 2
    assert not DataLoaderBuilder(MnistBatcher()).num_workers(2).persistent_workers(False).build(ds).persistent_workers
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            DataLoaderBuilder(MnistBatcher()).batch_size(bad)
    with pytest.raises(ValueError):
        DataLoaderBuilder(MnistBatcher()).num_workers(-1)
    with pytest.raises(TypeError, match="batch"):
        DataLoaderBuilder(object())  # type: ignore[arg-type]


def test_workers_give_the_same_batches_every_epoch(root):
    """num_workers=2 (persistent) yields exactly what num_workers=0 yields, epoch after epoch."""
    ds = MnistDataset.train(root)
    builder = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(1)
    single = builder.num_workers(0).build(ds)
    multi = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(1).num_workers(2).build(ds)
    assert multi.persistent_workers
    for _ in range(2):
        for x, y in zip(single, multi, strict=True):
            assert isinstance(y, MnistBatch)
            assert torch.equal(x.images, y.images) and torch.equal(x.targets, y.targets)


def test_loader_dataset_and_batch_survive_pickling(root):
    ds = MnistDataset.train(root)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).build(ds)
    again = pickle.loads(pickle.dumps(loader))  # what ddp_spawn does to the loaders passed to fit
    assert epochs(again, 2) == epochs(loader, 2)
    ds2 = pickle.loads(pickle.dumps(ds))
    assert torch.equal(ds2.__getitems__([3, 1]).images, ds.images[[3, 1]])
    batch = pickle.loads(pickle.dumps(MnistBatcher().batch(ds.__getitems__([0, 1]))))
    assert isinstance(batch, MnistBatch) and batch.images.shape == (2, 28, 28)


def test_loader_hands_item_lists_to_the_batcher_without_getitems():
    class Summer:
        def batch(self, items: list[int], device: object = None) -> int:
            assert isinstance(items, list)
            return sum(items)

    loader = DataLoaderBuilder(Summer()).batch_size(4).build(InMemDataset(range(10)))
    assert list(loader) == [6, 22, 17]
    assert InMemDataset([1, 2]).get(2) is None and InMemDataset([1, 2]).get(1) == 2


def test_builder_pin_memory_and_persistent_workers_switches_reach_the_loader():
    data = InMemDataset([1, 2, 3])
    default = DataLoaderBuilder(Stack()).num_workers(1).build(data)
    assert default.pin_memory is False and default.persistent_workers is True
    loader = DataLoaderBuilder(Stack()).pin_memory().persistent_workers(False).num_workers(1).build(data)
    assert loader.pin_memory is True and loader.persistent_workers is False
    loader = DataLoaderBuilder(Stack()).pin_memory(False).persistent_workers().num_workers(1).build(data)
    assert loader.pin_memory is False and loader.persistent_workers is True


def test_device_loader_repr_names_items_device_batch_size_shuffle_and_batches():
    data = InMemDataset([1, 2, 3, 4, 5])
    plain = DataLoaderBuilder(Stack()).batch_size(2).on_device("cpu").build(data)
    assert repr(plain) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=False, batches=3)"
    shuffled = DataLoaderBuilder(Stack()).batch_size(2).shuffle(0).drop_last().on_device("cpu").build(data)
    assert repr(shuffled) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=True, batches=2)"


def test_device_loader_batches_the_batched_fetch_and_refuses_batches_without_tensors():
    loader = DataLoaderBuilder(GatherBatcher()).batch_size(2).on_device("cpu").build(GatheringData([5, 6, 7]))
    assert [b.tolist() for b in loader] == [[5, 6], [7]]
    with raises_exactly(TypeError, "on_device: NoTensors.batch(...) returned no tensors (str); nothing to keep on "
                                   "the device"):
        DataLoaderBuilder(NoTensors()).on_device("cpu").build(InMemDataset([1]))


def test_device_loader_repr_says_what_it_holds():
    loader = DataLoaderBuilder(ToyBatcher()).batch_size(32).shuffle(1).on_device("cpu").build(blobs(100))
    assert repr(loader) == "DeviceDataLoader(100 items on cpu, batch_size=32, shuffle=True, batches=4)"
    loader = DataLoaderBuilder(ToyBatcher()).batch_size(25).drop_last(True).on_device("cpu").build(blobs(60))
    assert repr(loader) == "DeviceDataLoader(60 items on cpu, batch_size=25, shuffle=False, batches=2)"


@pytest.mark.parametrize("n", [100, 96])
@pytest.mark.parametrize("stop_at_len", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("seed", [None, 7])
def test_device_loader_gives_the_host_batches_epoch_after_epoch(seed, drop_last, stop_at_len, n):
    data = blobs(n, seed=1)

    def builder() -> DataLoaderBuilder[Batch]:
        b = DataLoaderBuilder(StackingBatcher()).batch_size(32).drop_last(drop_last)
        return b.shuffle(seed) if seed is not None else b

    host, device = builder().build(data), builder().on_device("cpu").build(data)
    assert isinstance(device, DeviceDataLoader) and len(device) == len(host) == (3 if drop_last or n == 96 else 4)
    epochs = []
    for _ in range(3):
        host_batches, device_batches = epoch_batches(host, stop_at_len), epoch_batches(device, stop_at_len)
        assert len(host_batches) == len(device_batches) == len(host)
        for h, d in zip(host_batches, device_batches):
            assert torch.equal(h.x, d.x) and torch.equal(h.y, d.y)
        epochs.append(torch.cat([b.y for b in device_batches]))
    if seed is not None:  # a new order each epoch, as the host loader
        assert not torch.equal(epochs[0], epochs[1])


def test_device_loader_trains_as_the_host_loader_in_lightning(tmp_path):
    """Three epochs of 10 batches, the last 10 items dropped: the same weights from either loader."""
    host, _ = train(tmp_path / "host", fast=False, epochs=3, n=330, drop_last=True)
    device, _ = train(tmp_path / "device", fast=False, epochs=3, n=330, drop_last=True, on_device="cpu")
    for key in host:
        assert torch.equal(host[key], device[key]), key


def test_device_loader_batches_mnist_like_the_host_loader(tmp_path):
    from burnlike.data import MnistBatcher, MnistDataset
    from tests.helpers.idx import write_mnist_idx

    ds = MnistDataset.train(write_mnist_idx(tmp_path, n_train=70, n_test=10))
    host = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).build(ds)
    device = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).on_device("cpu").build(ds)
    for h, d in zip(host, device, strict=True):
        assert torch.equal(h.images, d.images) and torch.equal(h.targets, d.targets)


def test_a_device_loader_validates_in_lightnings_fit(tmp_path):
    """Lightning asks a valid loader whether it shuffles (its `sampler`, then `batch_sampler`): the
    app's fast path hands it device loaders for both splits."""
    data = DataLoaderBuilder(StackingBatcher()).batch_size(25)
    learner = (LearnerBuilder(tmp_path).devices(["cpu"]).num_epochs(1).metrics(AccuracyMetric()).progress_bar(False)
               .with_application_logger(False).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(data.shuffle(1).on_device("cpu").build(blobs(100)), data.on_device("cpu").build(blobs(50, seed=2)))
    assert len(learner.module.store.epochs(Split.VALID, "Accuracy")) == 1


def test_device_loader_names_a_batcher_that_does_not_batch_item_by_item():
    with pytest.raises(ValueError, match=r"item by item: WholeBatchMean.*\(4,\).*first dimension of 10"):
        DataLoaderBuilder(WholeBatchMean()).on_device("cpu").build(blobs(10))


def test_builder_defaults_to_batch_size_one_and_refuses_bad_sizes():
    loader = DataLoaderBuilder(MnistBatcher()).build(_digits(3))
    assert isinstance(loader, DataLoader) and loader.batch_size == 1 and len(loader) == 3
    assert DataLoaderBuilder(MnistBatcher()).batch_size(1).build(_digits(2)).batch_size == 1
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got 0$"):
        DataLoaderBuilder(MnistBatcher()).batch_size(0)
    with pytest.raises(ValueError, match=r"^num_workers must be an integer >= 0, got -1$"):
        DataLoaderBuilder(MnistBatcher()).num_workers(-1)


def test_on_device_loader_keeps_data_and_order_on_the_device():
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(2).shuffle(3).on_device("meta").build(_digits(5))
    assert loader.data.images.device.type == "meta" and loader.data.targets.device.type == "meta"
    with TorchCalls() as calls:
        batches = list(loader)
    assert [b.images.shape[0] for b in batches] == [2, 2, 1]
    gathers = calls.named("index_select")
    assert gathers and all(args[2].device.type == "meta" for args, _ in gathers)
    moves = [k for args, k in calls.named("to") if args[0].dtype == torch.long and args[0].device.type == "cpu"]
    assert moves and all(k.get("non_blocking") is True for k in moves)  # the order is copied asynchronously


def test_a_batcher_without_batch_is_named_by_its_type():
    from burnlike.data import DataLoaderBuilder

    with pytest.raises(TypeError) as error:
        DataLoaderBuilder([1, 2, 3])  # type: ignore[arg-type]
    assert str(error.value).endswith("got list")
