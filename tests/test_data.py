import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from idx import MALFORMED, NAMES, digits, idx_bytes, write_malformed, write_mnist_idx

import burnlike.data.mnist as mnist_module
from burnlike.data import (
    Batcher,
    DataLoaderBuilder,
    InMemDataset,
    MnistBatch,
    MnistBatcher,
    MnistDataset,
    MnistFormatError,
    MnistItem,
    MnistNotFoundError,
)

REAL = Path(os.environ.get("BURNLIKE_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
FOUR = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def normalised(images: torch.Tensor) -> torch.Tensor:
    return (images.double() / 255 - 0.1307) / 0.3081


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=100, n_test=30)


def epochs(loader, n: int = 3) -> list[list[int]]:
    """The target order of `n` epochs (each target tensor tells which items came, in which order)."""
    return [torch.cat([b.targets for b in loader]).tolist() for _ in range(n)]


def test_idx_helper_is_learnable_and_valid():
    images, labels = digits(200, 0)
    assert set(labels.tolist()) == set(range(10))
    # a nearest-class-mean classifier on row sums separates the classes: the content is learnable
    rows = images.astype(np.float64).sum(axis=2)
    means = np.stack([rows[labels == c].mean(axis=0) for c in range(10)])
    predicted = ((rows[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    assert (predicted == labels).mean() > 0.99
    data = idx_bytes(images)
    assert int.from_bytes(data[:4], "big") == 2051 and len(data) == 16 + 200 * 784


@pytest.mark.parametrize("gz", [True, False])
def test_reads_gz_and_raw_idx(tmp_path, gz):
    write_mnist_idx(tmp_path, 40, 20, gz=gz, seed=3)
    raw = tmp_path / "MNIST" / "raw"
    assert (raw / "train-images-idx3-ubyte.gz").exists() == gz and (raw / "train-images-idx3-ubyte").exists() != gz
    train, test = MnistDataset.train(tmp_path), MnistDataset.test(tmp_path)
    assert (len(train), len(test)) == (40, 20)
    images, labels = digits(40, 3)
    assert train.images.shape == (40, 28, 28) and train.images.dtype == torch.uint8
    assert train.labels.dtype == torch.int64
    assert torch.equal(train.images, torch.from_numpy(images)) and train.labels.tolist() == labels.tolist()
    assert torch.equal(test.images, torch.from_numpy(digits(20, 4)[0]))
    item = train[3]
    assert isinstance(item, MnistItem) and isinstance(item.label, int) and item.label == int(labels[3])
    assert item.image.dtype == torch.uint8 and item.image.shape == (28, 28)
    assert torch.equal(item.image, torch.from_numpy(images[3]))


def test_item_is_a_small_copy(root):
    item = MnistDataset.train(root)[0]
    assert item.image.untyped_storage().nbytes() == 784  # pickling it won't drag the whole dataset along
    assert pickle.loads(pickle.dumps(item)).label == item.label


def test_batcher_normalises_whole_batch(root):
    ds = MnistDataset.train(root)
    batch = MnistBatcher().batch([ds[0], ds[1], ds[7]])
    assert isinstance(batch, MnistBatch) and isinstance(MnistBatcher(), Batcher)
    assert batch.images.dtype == torch.float32 and batch.images.shape == (3, 28, 28)
    expected = normalised(ds.images[[0, 1, 7]])
    assert torch.allclose(batch.images.double(), expected, atol=1e-5)
    assert batch.images.min().item() == pytest.approx(-0.1307 / 0.3081, abs=1e-5)  # pixel 0
    assert batch.images.max().item() == pytest.approx((230 / 255 - 0.1307) / 0.3081, abs=1e-5)  # the bar
    assert batch.targets.dtype == torch.int64 and batch.targets.tolist() == ds.labels[[0, 1, 7]].tolist()
    moved = MnistBatcher().batch([ds[0]], device="meta")
    assert moved.images.device.type == "meta" and moved.targets.device.type == "meta"


def test_batched_fetch_equals_per_item_fetch(root):
    ds = MnistDataset.train(root)
    idx = [5, 0, 99, 42, 5]
    fast_items = ds.__getitems__(idx)
    assert fast_items.images.dtype == torch.uint8  # still uint8 until the batcher
    for fast in (MnistBatcher().batch(fast_items), MnistBatcher().batch(ds.__getitems__(torch.tensor(idx)))):
        slow = MnistBatcher().batch([ds[i] for i in idx])
        assert torch.equal(fast.images, slow.images) and torch.equal(fast.targets, slow.targets)


def test_loader_batches_match_per_item_batches(root):
    """The DataLoader uses __getitems__; the result equals batching the same indices item by item."""
    ds = MnistDataset.train(root)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(5).build(ds)
    order = list(iter(loader.sampler))  # the sampler's generator is fresh: this is the first epoch's order
    fresh = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(5).build(ds)
    for n, batch in enumerate(fresh):
        idx = order[16 * n : 16 * (n + 1)]
        slow = MnistBatcher().batch([ds[i] for i in idx])
        assert torch.equal(batch.images, slow.images) and torch.equal(batch.targets, slow.targets)
    assert n == 6


def test_seeded_shuffle_is_deterministic_and_changes_each_epoch(root):
    ds = MnistDataset.train(root)
    a = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    b = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    c = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(7).build(ds))
    assert a == b and a[0] != a[1] != a[2] and a != c
    assert all(sorted(e) == sorted(ds.labels.tolist()) for e in a)  # a permutation, nothing dropped
    plain = DataLoaderBuilder(MnistBatcher()).batch_size(16).build(ds)
    assert torch.cat([bt.targets for bt in plain]).tolist() == ds.labels.tolist()


def test_shuffle_leaves_global_rng_alone(root):
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


def test_everything_pickles(root):
    ds = MnistDataset.train(root)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).build(ds)
    again = pickle.loads(pickle.dumps(loader))  # what ddp_spawn does to the loaders passed to fit
    assert epochs(again, 2) == epochs(loader, 2)
    ds2 = pickle.loads(pickle.dumps(ds))
    assert torch.equal(ds2.__getitems__([3, 1]).images, ds.images[[3, 1]])
    batch = pickle.loads(pickle.dumps(MnistBatcher().batch(ds.__getitems__([0, 1]))))
    assert isinstance(batch, MnistBatch) and batch.images.shape == (2, 28, 28)


def test_subset_keeps_batched_fetching(root):
    ds = MnistDataset.train(root)
    subset = torch.utils.data.Subset(ds, range(10, 42))
    batches = list(DataLoaderBuilder(MnistBatcher()).batch_size(8).build(subset))
    assert len(batches) == 4 and torch.cat([b.targets for b in batches]).tolist() == ds.labels[10:42].tolist()


def test_generic_dataset_without_getitems():
    class Summer:
        def batch(self, items: list[int], device: object = None) -> int:
            assert isinstance(items, list)
            return sum(items)

    loader = DataLoaderBuilder(Summer()).batch_size(4).build(InMemDataset(range(10)))
    assert list(loader) == [6, 22, 17]
    assert InMemDataset([1, 2]).get(2) is None and InMemDataset([1, 2]).get(1) == 2


def test_missing_files_name_folder_and_files(tmp_path, monkeypatch):
    monkeypatch.delenv("BURNLIKE_DOWNLOAD", raising=False)
    monkeypatch.setattr(mnist_module, "_download", lambda root: pytest.fail("downloaded without permission"))
    with pytest.raises(MnistNotFoundError) as err:
        MnistDataset.train(tmp_path)
    text = str(err.value)
    assert str((tmp_path / "MNIST" / "raw").resolve()) in text
    for name in FOUR:
        assert f"{name}[.gz]" in text
    assert "BURNLIKE_DATA" in text and "data.root" in text and "download=True" in text
    assert isinstance(err.value, FileNotFoundError)


def test_half_present_split_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("BURNLIKE_DOWNLOAD", raising=False)
    write_mnist_idx(tmp_path, 10, 10)
    (tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").unlink()
    assert len(MnistDataset.train(tmp_path)) == 10
    with pytest.raises(MnistNotFoundError, match="t10k-labels-idx1-ubyte"):
        MnistDataset.test(tmp_path)


def test_download_only_when_allowed(tmp_path, monkeypatch):
    calls: list[Path] = []

    def fake_download(root: Path) -> None:  # stands in for torchvision: no network in tests
        calls.append(root)
        write_mnist_idx(root, 12, 6)

    monkeypatch.setattr(mnist_module, "_download", fake_download)
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", "1")
    with pytest.raises(MnistNotFoundError):
        MnistDataset.train(tmp_path / "a", download=False)  # the explicit argument wins over the env var
    assert calls == [] and len(MnistDataset.train(tmp_path / "a")) == 12 and calls == [tmp_path / "a"]
    monkeypatch.delenv("BURNLIKE_DOWNLOAD")
    with pytest.raises(MnistNotFoundError):
        MnistDataset.test(tmp_path / "b")
    assert len(MnistDataset.test(tmp_path / "b", download=True)) == 6 and len(calls) == 2
    assert len(MnistDataset.test(tmp_path / "b", download=True)) == 6 and len(calls) == 2  # present: no refetch


def test_failed_download_keeps_the_advice(tmp_path, monkeypatch):
    def offline(root: Path) -> None:
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz")

    monkeypatch.setattr(mnist_module, "_download", offline)
    with pytest.raises(MnistNotFoundError, match="(?s)BURNLIKE_DATA.*Downloading through torchvision failed"):
        MnistDataset.train(tmp_path, download=True)


def test_env_var_root(tmp_path, monkeypatch):
    write_mnist_idx(tmp_path / "env", 12, 8)
    write_mnist_idx(tmp_path / "data", 14, 9)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BURNLIKE_DATA", str(tmp_path / "env"))
    assert (len(MnistDataset.train()), len(MnistDataset.test())) == (12, 8)
    assert len(MnistDataset.test(tmp_path / "data")) == 9  # an explicit root beats the env var
    monkeypatch.delenv("BURNLIKE_DATA")
    assert len(MnistDataset.test()) == 9  # ./data


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("bad_magic", r"magic number 305419896; expected 2051"),
        ("swapped", r"magic number 2049, which marks IDX labels"),
        ("truncated", r"data bytes, expected 6272 .*truncated"),
        ("trailing", r"6279 data bytes, expected 6272 .*trailing"),
        ("short_header", r"6 bytes, too short for an IDX header"),
        ("count_mismatch", r"8 images but .*train-labels-idx1-ubyte has 7 labels"),
        ("bad_label", r"label 11 found, expected digits 0-9"),
        ("bad_gzip", r"not a readable gzip file"),
        ("truncated_gzip", r"not a readable gzip file"),
    ],
)
def test_malformed_files_are_named(tmp_path, kind, needle):
    assert kind in MALFORMED
    write_mnist_idx(tmp_path, 4, 4)
    bad = write_malformed(tmp_path, kind)
    with pytest.raises(MnistFormatError, match=needle) as err:
        MnistDataset.train(tmp_path)
    assert str(bad) in str(err.value) and isinstance(err.value, ValueError)
    assert len(MnistDataset.test(tmp_path)) == 4  # the other split is untouched


def test_malformed_test_split(tmp_path):
    bad = write_malformed(tmp_path, "truncated", split="test")
    assert bad.name == NAMES["test"][0]
    with pytest.raises(MnistFormatError, match="t10k-images-idx3-ubyte"):
        MnistDataset.test(tmp_path)


def test_batch_moves_with_lightning():
    from lightning.fabric.utilities.apply_func import move_data_to_device

    batch = MnistBatch(torch.zeros(2, 28, 28), torch.zeros(2, dtype=torch.long))
    moved = move_data_to_device(batch, torch.device("meta"))
    assert isinstance(moved, MnistBatch) and moved.images.device.type == "meta"
    assert moved.targets.device.type == "meta" and batch.images.device.type == "cpu"
    assert batch.to("meta").images.device.type == "meta"


@pytest.mark.skipif(not (REAL / "MNIST" / "raw").is_dir(), reason="real MNIST not present")
def test_real_mnist_label_counts():
    train, test = MnistDataset.train(REAL), MnistDataset.test(REAL)
    assert (len(train), len(test)) == (60000, 10000)
    assert train.labels.bincount().tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert test.labels.bincount().tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert train.labels[:5].tolist() == [5, 0, 4, 1, 9]  # the well-known first training labels
    # the normalisation constants are the training set's own mean and std
    x = MnistBatcher().batch(train.__getitems__(list(range(60000)))).images.double()
    assert x.mean().item() == pytest.approx(0.0, abs=1e-3) and x.std().item() == pytest.approx(1.0, abs=1e-3)
