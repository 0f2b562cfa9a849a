"""`burnlike.data.dataloader`: `DataLoaderBuilder`, Burn's builder over torch's DataLoader. Its
options reach the loader (batch size, workers, pinning, drop_last), a seed gives the same order each
run and a new one each epoch without touching the global RNG, workers give the batches a single
process gives, and the batcher gets the dataset's batched fetch when there is one. With
`.on_device(...)` it builds a `DeviceDataLoader` that keeps the data and the order on the device and
yields, epoch after epoch, the batches the host loader yields, in a Lightning fit too. Burn's
`DataLoader` methods (`iter`, `num_items`, `slice`, `to_device`), `set_device`, and a batcher written
as Burn's `batch(items, device)`. `build` takes any object with Burn's `get`/`len` (or `__len__`) and
names what a dataset lacks; `set_epoch_batches(n)` cuts epochs of n batches from one stream of
passes, continuing across epochs (and resuming into the stream)."""

from __future__ import annotations

import itertools
import pickle

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from burnlike.data import (
    DataLoaderBuilder,
    DeviceDataLoader,
    InMemDataset,
    MnistBatch,
    MnistBatcher,
    MnistDataset,
)
from burnlike.data.dataloader import EpochsOf, Progress, ResumableDataLoader, epoch_seed, epochs_of
from burnlike.optim import AdamConfig
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric
from burnlike.train.metric.store import Split
from tests.data.helpers import TorchCalls
from tests.helpers.expect import raises_exactly
from tests.helpers.fit import StackingBatcher, train
from tests.helpers.idx import write_mnist_idx
from tests.helpers.toy import Batch, Classifier, blobs


def epoch_targets(loader, n: int = 3) -> list[list[int]]:
    """The target order of `n` epochs (each target tensor tells which items came, in which order)."""
    return [torch.cat([b.targets for b in loader]).tolist() for _ in range(n)]


def epoch_batches(loader, stop_at_len: bool) -> list:
    """One epoch's batches: to the end (`for`), or exactly `len(loader)` of them, as Lightning's
    fetcher takes them (it never asks past the last, so a host sampler's last step may not run)."""
    return list(itertools.islice(iter(loader), len(loader))) if stop_at_len else list(loader)


def synthetic_mnist(n: int) -> MnistDataset:
    """`n` MNIST-shaped images of counting pixel values, labels 0..9 in turn."""
    return MnistDataset(torch.arange(n * 784, dtype=torch.int64).remainder(256).to(torch.uint8).reshape(n, 28, 28),
                        torch.arange(n) % 10)


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


class WholeBatchMean:
    def batch(self, items: list[tuple[torch.Tensor, torch.Tensor]], device: object = None) -> torch.Tensor:
        return torch.stack([x for x, _ in items]).mean(0)  # not item by item: one row for the batch


# --- the builder's options ----------------------------------------------------------------------------------
def test_builder_knobs_reach_the_dataloader(mnist_root):
    ds = MnistDataset.train(mnist_root)
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


def test_builder_defaults_to_batch_size_one_and_refuses_bad_sizes():
    loader = DataLoaderBuilder(MnistBatcher()).build(synthetic_mnist(3))
    assert isinstance(loader, DataLoader) and loader.batch_size == 1 and len(loader) == 3
    assert DataLoaderBuilder(MnistBatcher()).batch_size(1).build(synthetic_mnist(2)).batch_size == 1
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got 0$"):
        DataLoaderBuilder(MnistBatcher()).batch_size(0)
    with pytest.raises(ValueError, match=r"^num_workers must be an integer >= 0, got -1$"):
        DataLoaderBuilder(MnistBatcher()).num_workers(-1)


def test_builder_pin_memory_and_persistent_workers_switches_reach_the_loader():
    data = InMemDataset([1, 2, 3])
    default = DataLoaderBuilder(Stack()).num_workers(1).build(data)
    assert default.pin_memory is False and default.persistent_workers is True
    loader = DataLoaderBuilder(Stack()).pin_memory().persistent_workers(False).num_workers(1).build(data)
    assert loader.pin_memory is True and loader.persistent_workers is False
    loader = DataLoaderBuilder(Stack()).pin_memory(False).persistent_workers().num_workers(1).build(data)
    assert loader.pin_memory is False and loader.persistent_workers is True


def test_a_batcher_without_batch_is_named_by_its_type():
    with pytest.raises(TypeError) as error:
        DataLoaderBuilder([1, 2, 3])  # type: ignore[arg-type]
    assert str(error.value).endswith("got list")


# --- what the batcher is handed -----------------------------------------------------------------------------
def test_loader_hands_item_lists_to_the_batcher_without_getitems():
    class Summer:
        def batch(self, items: list[int], device: object = None) -> int:
            assert isinstance(items, list)
            return sum(items)

    loader = DataLoaderBuilder(Summer()).batch_size(4).build(InMemDataset(range(10)))
    assert list(loader) == [6, 22, 17]


# --- shuffling, workers and pickling ------------------------------------------------------------------------
def test_seeded_shuffle_is_deterministic_and_changes_each_epoch(mnist_root):
    ds = MnistDataset.train(mnist_root)
    a = epoch_targets(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    b = epoch_targets(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    c = epoch_targets(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(7).build(ds))
    assert a == b and a[0] != a[1] != a[2] and a != c
    assert all(sorted(e) == sorted(ds.labels.tolist()) for e in a)  # a permutation, nothing dropped
    plain = DataLoaderBuilder(MnistBatcher()).batch_size(16).build(ds)
    assert torch.cat([bt.targets for bt in plain]).tolist() == ds.labels.tolist()


def test_shuffle_leaves_the_global_rng_alone(mnist_root):
    ds = MnistDataset.train(mnist_root)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    epoch_targets(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds), 2)
    assert torch.equal(torch.rand(3), expected)


def test_workers_give_the_same_batches_every_epoch(mnist_root):
    """num_workers=2 (persistent) yields exactly what num_workers=0 yields, epoch after epoch."""
    ds = MnistDataset.train(mnist_root)
    builder = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(1)
    single = builder.num_workers(0).build(ds)
    multi = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(1).num_workers(2).build(ds)
    assert multi.persistent_workers
    for _ in range(2):
        for x, y in zip(single, multi, strict=True):
            assert isinstance(y, MnistBatch)
            assert torch.equal(x.images, y.images) and torch.equal(x.targets, y.targets)


def test_pickled_loader_gives_the_same_shuffled_epochs(mnist_root):
    ds = MnistDataset.train(mnist_root)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).build(ds)
    again = pickle.loads(pickle.dumps(loader))  # what ddp_spawn does to the loaders passed to fit
    assert epoch_targets(again, 2) == epoch_targets(loader, 2)


# --- the device-resident loader (on_device) -----------------------------------------------------------------
# --- resuming at an epoch and a batch -------------------------------------------------------------------
class CountingItems(InMemDataset):
    """Items 0..n-1 that count how often each is read."""

    def __init__(self, n: int) -> None:
        super().__init__(list(range(n)))
        self.reads: list[int] = []

    def __getitem__(self, index):
        self.reads.append(index)
        return super().__getitem__(index)

    def __getitems__(self, indices):
        return [self[i] for i in indices]


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize(("seed", "drop_last"), [(3, False), (None, False), (5, True)])
def test_a_loader_resumed_at_an_epoch_and_batch_gives_the_uninterrupted_batches_from_there(on_device, seed,
                                                                                          drop_last):
    """`resume_at(epoch, skip)`: its next pass is epoch `epoch`'s order (a seeded shuffle's draws
    replayed) past `skip` batches, and the passes after it are the epochs that follow."""
    def build():
        b = DataLoaderBuilder(Stack()).batch_size(4).drop_last(drop_last)
        b = b.shuffle(seed) if seed is not None else b
        return b.on_device("cpu").build(list(range(18))) if on_device else b.build(list(range(18)))

    straight = [[x.tolist() for x in epoch_batches(build(), stop_at_len=True)]]
    loader = build()
    epochs = [[x.tolist() for x in epoch_batches(loader, stop_at_len=True)] for _ in range(4)]
    resumed = build()
    resumed.resume_at(2, 3)
    assert [x.tolist() for x in epoch_batches(resumed, stop_at_len=True)] == epochs[2][3:]
    assert [x.tolist() for x in epoch_batches(resumed, stop_at_len=True)] == epochs[3]  # then on, as it would
    assert straight[0] == epochs[0]
    again = build()
    again.resume_at(1)  # an epoch's end checkpoint: the next epoch whole
    assert [x.tolist() for x in epoch_batches(again, stop_at_len=True)] == epochs[1]


def test_skipped_batches_are_never_loaded_and_lightning_counts_the_whole_epoch():
    data = CountingItems(12)
    loader = DataLoaderBuilder(Stack()).batch_size(4).build(data)
    loader.resume_at(0, 2)
    assert [b.tolist() for b in loader] == [[8, 9, 10, 11]]
    assert data.reads == [8, 9, 10, 11]
    assert len(loader) == 3  # Lightning numbers the batches it gets from the ones skipped on


def test_resume_state_is_constructor_state_so_lightnings_ddp_copy_keeps_it():
    """Under DDP Lightning re-creates a DataLoader from its constructor arguments, with a
    DistributedSampler; the resume point is one of them, and that sampler gets the epoch before the
    first batch is fetched (Lightning sets it only after)."""
    import inspect

    from torch.utils.data import DistributedSampler

    loader = DataLoaderBuilder(Stack()).batch_size(2).shuffle(1).build(list(range(8)))
    loader.resume_at(3, 1)
    params = inspect.signature(type(loader).__init__).parameters
    assert {"start_epoch", "skip", "shuffle_seed"} <= set(params)
    copy = type(loader)(loader.dataset, batch_size=2, collate_fn=loader.collate_fn,
                        sampler=DistributedSampler(loader.dataset, num_replicas=2, rank=0, shuffle=True, seed=7),
                        **{k: getattr(loader, k) for k in ("start_epoch", "skip", "shuffle_seed")})
    reference = DistributedSampler(loader.dataset, num_replicas=2, rank=0, shuffle=True, seed=7)
    reference.set_epoch(3)
    expected = [reference_batch for reference_batch in torch.tensor(list(reference)).split(2)][1:]
    assert [b.tolist() for b in copy] == [b.tolist() for b in expected]


def test_device_loader_repr_names_items_device_batch_size_shuffle_and_batches():
    data = InMemDataset([1, 2, 3, 4, 5])
    plain = DataLoaderBuilder(Stack()).batch_size(2).on_device("cpu").build(data)
    assert repr(plain) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=False, batches=3)"
    shuffled = DataLoaderBuilder(Stack()).batch_size(2).shuffle(0).drop_last().on_device("cpu").build(data)
    assert repr(shuffled) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=True, batches=2)"
    loader = DataLoaderBuilder(StackingBatcher()).batch_size(32).shuffle(1).on_device("cpu").build(blobs(100))
    assert repr(loader) == "DeviceDataLoader(100 items on cpu, batch_size=32, shuffle=True, batches=4)"
    loader = DataLoaderBuilder(StackingBatcher()).batch_size(25).drop_last(True).on_device("cpu").build(blobs(60))
    assert repr(loader) == "DeviceDataLoader(60 items on cpu, batch_size=25, shuffle=False, batches=2)"


def test_device_loader_batches_the_batched_fetch_and_refuses_batches_without_tensors():
    loader = DataLoaderBuilder(GatherBatcher()).batch_size(2).on_device("cpu").build(GatheringData([5, 6, 7]))
    assert [b.tolist() for b in loader] == [[5, 6], [7]]
    with raises_exactly(TypeError, "on_device: NoTensors.batch(...) returned no tensors (str); nothing to keep on "
                                   "the device"):
        DataLoaderBuilder(NoTensors()).on_device("cpu").build(InMemDataset([1]))


def test_device_loader_names_a_batcher_that_does_not_batch_item_by_item():
    with pytest.raises(ValueError, match=r"item by item: WholeBatchMean.*\(4,\).*first dimension of 10"):
        DataLoaderBuilder(WholeBatchMean()).on_device("cpu").build(blobs(10))


def test_on_device_loader_keeps_data_and_order_on_the_device():
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(2).shuffle(3).on_device("meta").build(synthetic_mnist(5))
    assert loader.data.images.device.type == "meta" and loader.data.targets.device.type == "meta"
    with TorchCalls() as calls:
        batches = list(loader)
    assert [b.images.shape[0] for b in batches] == [2, 2, 1]
    gathers = calls.named("index_select")
    assert gathers and all(args[2].device.type == "meta" for args, _ in gathers)
    moves = [k for args, k in calls.named("to") if args[0].dtype == torch.long and args[0].device.type == "cpu"]
    assert moves and all(k.get("non_blocking") is True for k in moves)  # the order is copied asynchronously


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
    orders = []
    for _ in range(3):
        host_batches, device_batches = epoch_batches(host, stop_at_len), epoch_batches(device, stop_at_len)
        assert len(host_batches) == len(device_batches) == len(host)
        for h, d in zip(host_batches, device_batches):
            assert torch.equal(h.x, d.x) and torch.equal(h.y, d.y)
        orders.append(torch.cat([b.y for b in device_batches]))
    if seed is not None:  # a new order each epoch, as the host loader
        assert not torch.equal(orders[0], orders[1])


def test_device_loader_batches_mnist_like_the_host_loader(tmp_path):
    ds = MnistDataset.train(write_mnist_idx(tmp_path, n_train=70, n_test=10))
    host = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).build(ds)
    device = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).on_device("cpu").build(ds)
    for h, d in zip(host, device, strict=True):
        assert torch.equal(h.images, d.images) and torch.equal(h.targets, d.targets)


def test_device_loader_trains_as_the_host_loader_in_lightning(tmp_path):
    """Three epochs of 10 batches, the last 10 items dropped: the same weights from either loader."""
    host, _ = train(tmp_path / "host", fast=False, epochs=3, n=330, drop_last=True)
    device, _ = train(tmp_path / "device", fast=False, epochs=3, n=330, drop_last=True, on_device="cpu")
    for key in host:
        assert torch.equal(host[key], device[key]), key


def test_a_device_loader_validates_in_lightnings_fit(tmp_path):
    """Lightning asks a valid loader whether it shuffles (its `sampler`, then `batch_sampler`): the
    app's fast path hands it device loaders for both splits."""
    data = DataLoaderBuilder(StackingBatcher()).batch_size(25)
    learner = (LearnerBuilder(tmp_path).devices(["cpu"]).num_epochs(1).metrics(AccuracyMetric()).progress_bar(False)
               .with_application_logger(False).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(data.shuffle(1).on_device("cpu").build(blobs(100)), data.on_device("cpu").build(blobs(50, seed=2)))
    assert len(learner.module.store.epochs(Split.VALID, "Accuracy")) == 1


# --- Burn's DataLoader trait and Batcher signature ---------------------------------------------------
class BurnBatcher:
    """A batcher as Burn 0.19+ writes it: `batch(&self, items: Vec<I>, device: &Device) -> O`
    (burn-core/src/data/dataloader/batcher.rs, v0.21.0)."""

    def __init__(self) -> None:
        self.devices: list[torch.device] = []

    def batch(self, items, device):
        self.devices.append(device)
        xs, ys = zip(*items)
        return Batch(torch.stack(xs).to(device), torch.stack(ys).to(device))


def test_a_burn_batcher_gets_a_device_and_set_device_chooses_it():
    batcher = BurnBatcher()
    first = next(iter(DataLoaderBuilder(batcher).batch_size(4).build(blobs(8))))
    assert batcher.devices == [torch.device("cpu")] and first.x.shape == (4, 4)
    meta = next(iter(DataLoaderBuilder(batcher).batch_size(4).set_device("meta").build(blobs(8))))
    assert batcher.devices[-1] == torch.device("meta") and meta.x.device.type == "meta"


def test_set_device_with_workers_moves_the_batch_after_the_workers_batched_it():
    loader = DataLoaderBuilder(StackingBatcher()).batch_size(4).num_workers(1).set_device("meta").build(blobs(8))
    batches = list(loader)
    assert len(batches) == 2 and all(b.x.device.type == "meta" for b in batches)


def test_batchers_without_a_device_or_with_an_optional_one_are_called_as_before():
    class ItemsOnly:
        def batch(self, items):
            xs, ys = zip(*items)
            return Batch(torch.stack(xs), torch.stack(ys))

    class Optional:
        seen: list = []

        def batch(self, items, device=None):
            self.seen.append(device)
            return ItemsOnly().batch(items)

    assert next(iter(DataLoaderBuilder(ItemsOnly()).batch_size(2).build(blobs(4)))).x.shape == (2, 4)
    optional = Optional()
    next(iter(DataLoaderBuilder(optional).batch_size(2).build(blobs(4))))
    next(iter(DataLoaderBuilder(optional).batch_size(2).set_device("cpu").build(blobs(4))))
    assert optional.seen == [None, torch.device("cpu")]


@pytest.mark.parametrize("on_device", [False, True])
def test_burns_dataloader_methods(on_device):
    """burn-core/src/data/dataloader/base.rs (v0.21.0): `iter()` (its iterator's `progress()`),
    `num_items()` (the dataset's items), `slice(start, end)` (a `PartialDataset`, batch.rs) and
    `to_device(device)`; the same on a device-resident loader."""
    builder = DataLoaderBuilder(StackingBatcher()).batch_size(4)
    loader = (builder.on_device("cpu") if on_device else builder).build(blobs(10))
    assert loader.num_items() == 10 and len(loader) == 3
    it = loader.iter()
    assert it.progress() == Progress(0, 10)
    next(it)
    assert it.progress() == Progress(4, 10)
    assert len(list(it)) == 2 and it.progress() == Progress(10, 10)
    part = loader.slice(2, 7)
    assert part.num_items() == 5 and len(part) == 2
    whole = torch.cat([b.y for b in loader])
    assert torch.equal(torch.cat([b.y for b in part]), whole[2:7])
    moved = loader.to_device("meta")
    assert moved.num_items() == 10 and all(b.x.device.type == "meta" for b in moved)
    assert all(b.x.device.type == "cpu" for b in loader)  # the original stays where it was


def test_a_shuffled_slice_shuffles_its_own_items():
    loader = DataLoaderBuilder(StackingBatcher()).batch_size(3).shuffle(5).build(blobs(12))
    part = loader.slice(0, 6)
    seen = torch.cat([b.y for b in part])
    assert sorted(seen.tolist()) == sorted(torch.stack([blobs(12)[i][1] for i in range(6)]).tolist())
    assert part.shuffle_seed == 5 and isinstance(part.sampler, type(loader.sampler))


def test_a_device_loader_takes_a_sampler_of_numpy_integers():
    """A sampler may yield numpy integers of any width (an int16 permutation, say): the order is made
    int64, the index type gathers on the device take."""
    import numpy as np

    from burnlike.data.dataloader import DeviceDataLoader

    order = [np.int16(i) for i in (4, 0, 3, 1, 2)]
    loader = DeviceDataLoader(Stack(), InMemDataset([10, 11, 12, 13, 14]), 2, order, False, torch.device("cpu"))
    assert [b.tolist() for b in loader] == [[14, 10], [13, 11], [12]]


def test_epoch_seeds_are_fixed_so_a_resumed_run_draws_the_orders_it_drew_before():
    """The order of epoch e comes from `epoch_seed(seed, e)`: a checkpoint written by one version and
    resumed by another must see the same orders, so the mix is pinned to its values."""
    assert epoch_seed(42, 0) == 42
    assert epoch_seed(1, 1) == 6741819538770190798
    assert epoch_seed(42, 3) == 3684734727176522909


def test_a_shuffled_device_loader_slice_shuffles_its_own_items():
    loader = DataLoaderBuilder(Stack()).batch_size(3).shuffle(5).on_device("cpu").build(InMemDataset(list(range(12))))
    assert loader.shuffle_seed == 5
    part = loader.slice(6, 12)
    assert sorted(torch.cat(list(part)).tolist()) == list(range(6, 12))


def test_a_loader_given_the_builders_collate_and_a_device_without_num_workers_batches_there():
    """Lightning and users re-create a ResumableDataLoader from its constructor arguments, which
    need not name num_workers (DataLoader's default 0)."""
    built = DataLoaderBuilder(StackingBatcher()).batch_size(4).build(blobs(8))
    loader = ResumableDataLoader(blobs(8), batch_size=4, collate_fn=built.collate_fn, device="meta")
    batches = list(loader)
    assert len(batches) == 2 and all(b.x.device.type == "meta" for b in batches)


def test_a_loaders_own_sampler_is_kept_when_it_moves_to_another_device():
    """Under DDP Lightning re-creates the loader with a DistributedSampler (the shuffle seed kept as an
    attribute): `to_device` must keep that rank's share, not put a whole-dataset shuffle back."""
    data = InMemDataset(list(range(8)))
    sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
    loader = ResumableDataLoader(data, batch_size=2, sampler=sampler, collate_fn=Stack().batch, shuffle_seed=5)
    moved = loader.to_device("cpu")
    assert moved.sampler is sampler
    assert torch.cat(list(moved)).tolist() == [1, 3, 5, 7]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_on_device_cuda_without_a_gpu_names_the_call_and_what_to_do():
    with pytest.raises(ValueError) as error:
        DataLoaderBuilder(MnistBatcher()).on_device("cuda")
    assert str(error.value).startswith("on_device('cuda'): torch sees no CUDA device here;")


# --- any dataset with Burn's get/len at build() ---------------------------------------------------------------
class Windows:
    """A plain Burn-style dataset: `get(index)` (None past the end) and `__len__`, no `__getitem__`."""

    def __init__(self, n: int) -> None:
        self.n = n

    def get(self, index: int):
        return index * 10 if 0 <= index < self.n else None

    def __len__(self) -> int:
        return self.n


class BurnLen(Windows):
    """Burn's `len()` instead of `__len__`."""

    __len__ = None  # type: ignore[assignment]

    def len(self) -> int:
        return self.n


@pytest.mark.parametrize("dataset", [Windows(10), BurnLen(10)], ids=["__len__", "len"])
@pytest.mark.parametrize("workers", [0, 1])
def test_build_reads_a_plain_class_with_get_and_a_length(dataset, workers):
    loader = DataLoaderBuilder(Stack()).batch_size(4).shuffle(3).num_workers(workers).build(dataset)
    batches = [b.tolist() for b in loader]
    assert sorted(x for b in batches for x in b) == [i * 10 for i in range(10)] and len(batches) == len(loader) == 3


@pytest.mark.parametrize(("dataset", "has"), [(object(), "none of them"), (type("OnlyGet", (), {"get": lambda s, i: i})(), "get"),
                                              (type("OnlyLen", (), {"__len__": lambda s: 3})(), "__len__")])
def test_build_names_what_a_dataset_lacks(dataset, has):
    with raises_exactly(TypeError, "a data loader needs a dataset with Burn's get(index) and len() (or __len__), or "
                                   f"torch's __getitem__ and __len__; {type(dataset).__name__} has {has}"):
        DataLoaderBuilder(Stack()).build(dataset)


# --- epochs of n batches of one stream ---------------------------------------------------------------------
def stream_loader(kind: str, seed: int | None = 3, n: int = 18, batch: int = 4):
    b = DataLoaderBuilder(Stack()).batch_size(batch)
    b = b.shuffle(seed) if seed is not None else b
    if kind == "device":
        return b.on_device("cpu").build(list(range(n)))
    if kind == "plain":
        return DataLoader(list(range(n)), batch_size=batch, collate_fn=torch.tensor)
    return b.num_workers(1 if kind == "workers" else 0).build(list(range(n)))


def passes(loader, count: int) -> list[list[int]]:
    """`count` whole passes, batch by batch, from a fresh loader."""
    return [b.tolist() for _ in range(count) for b in loader]


@pytest.mark.parametrize("kind", ["host", "workers", "device", "plain"])
def test_epochs_of_n_batches_continue_the_stream_of_passes(kind):
    """Each epoch of 3 batches starts where the last one stopped; when a pass (5 batches) runs out
    mid-epoch, the next pass follows in its own order. No batch repeats before a pass is done."""
    stream = passes(stream_loader(kind), 4)
    loader = epochs_of(stream_loader(kind), 3)
    assert len(loader) == 3 and (kind == "plain") == isinstance(loader, EpochsOf)
    epochs = [[b.tolist() for b in loader] for _ in range(5)]
    assert [len(e) for e in epochs] == [3] * 5
    assert [b for e in epochs for b in e] == stream[:15]


@pytest.mark.parametrize("kind", ["host", "workers", "device", "plain"])
def test_a_stream_resumes_at_an_epoch_and_batch(kind):
    stream = passes(stream_loader(kind), 4)
    loader = epochs_of(stream_loader(kind), 3)
    loader.resume_at(2, 1)  # epoch 2 (0-based) past its first batch: batch 7 of the stream
    assert [b.tolist() for b in loader] == stream[7:9]
    assert [b.tolist() for b in loader] == stream[9:12]  # and on, as the uninterrupted run


def test_an_epoch_cut_short_restarts_the_stream_where_the_next_epoch_begins():
    stream = passes(stream_loader("host"), 3)
    loader = epochs_of(stream_loader("host"), 3)
    first = iter(loader)
    assert next(first).tolist() == stream[0]  # (the rest of epoch 0 is never asked for)
    assert [b.tolist() for b in loader] == stream[3:6]


def test_epoch_batches_are_constructor_state_so_lightnings_ddp_copy_keeps_them():
    import inspect

    loader = stream_loader("host")
    loader.set_epoch_batches(2)
    assert "epoch_batches" in inspect.signature(type(loader).__init__).parameters
    copy = type(loader)(loader.dataset, batch_size=4, collate_fn=loader.collate_fn, epoch_batches=loader.epoch_batches)
    assert len(copy) == 2 and [len([b for b in copy]) for _ in range(3)] == [2, 2, 2]
    assert loader.to_device("cpu").epoch_batches == 2 and stream_loader("device").slice(0, 8).epoch_batches is None


@pytest.mark.parametrize("batches", [0, -1, True, 1.5])
def test_epoch_batches_must_be_a_positive_integer_or_none(batches):
    with pytest.raises(ValueError, match="epoch_batches must be None or an integer >= 1"):
        stream_loader("host").set_epoch_batches(batches)


def test_a_plain_loader_needs_a_length_for_epochs_of_batches():
    with raises_exactly(TypeError, "epochs of 2 batches need a loader with a length (len(loader)); generator has none"):
        epochs_of((x for x in range(3)), 2)


def test_a_resumed_pass_with_persistent_workers_skips_only_once():
    """The workers' iterator outlives a pass and keeps the batch sampler it started with: the next
    pass must not skip the first pass's batches again."""
    loader = DataLoaderBuilder(Stack()).batch_size(2).num_workers(1).build(list(range(8)))
    loader.resume_at(0, 2)
    assert [b.tolist() for b in loader] == [[4, 5], [6, 7]]
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]
