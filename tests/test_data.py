import os
from pathlib import Path

import numpy as np
import pytest
import torch
from idx import idx_bytes, write_mnist_idx

from burnlike.data import (
    Batcher,
    DataLoaderBuilder,
    MnistBatch,
    MnistBatcher,
    MnistDataset,
    MnistFormatError,
    MnistNotFoundError,
)

REAL = Path(os.environ.get("BURNLIKE_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.mark.parametrize("gz", [True, False])
def test_reads_gz_and_raw_idx(tmp_path, gz):
    write_mnist_idx(tmp_path, 40, 20, gz=gz)
    train, test = MnistDataset.train(tmp_path), MnistDataset.test(tmp_path)
    assert (len(train), len(test)) == (40, 20)
    item = train[3]
    assert item.image.dtype == torch.uint8 and item.image.shape == (28, 28) and 0 <= item.label < 10


def test_batcher_normalises_whole_batch(tmp_path):
    write_mnist_idx(tmp_path, 40, 20)
    ds = MnistDataset.train(tmp_path)
    batch = MnistBatcher().batch([ds[0], ds[1]])
    assert isinstance(batch, MnistBatch) and isinstance(MnistBatcher(), Batcher)
    expected = (ds.images[:2].float() / 255 - 0.1307) / 0.3081
    assert batch.images.dtype == torch.float32 and torch.allclose(batch.images, expected, atol=1e-6)
    assert batch.targets.dtype == torch.int64 and batch.targets.tolist() == ds.labels[:2].tolist()


def test_batched_fetch_equals_per_item_fetch(tmp_path):
    write_mnist_idx(tmp_path, 100, 20)
    ds = MnistDataset.train(tmp_path)
    idx = [5, 0, 99, 42]
    fast = MnistBatcher().batch(ds.__getitems__(torch.tensor(idx)))
    slow = MnistBatcher().batch([ds[i] for i in idx])
    assert torch.equal(fast.images, slow.images) and torch.equal(fast.targets, slow.targets)


def test_seeded_shuffle_is_deterministic_and_changes_each_epoch(tmp_path):
    write_mnist_idx(tmp_path, 100, 20)
    ds = MnistDataset.train(tmp_path)

    def epochs(loader):
        return [torch.cat([b.targets for b in loader]).tolist() for _ in range(2)]

    a = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    b = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(42).build(ds))
    c = epochs(DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(7).build(ds))
    assert a == b and a[0] != a[1] and a != c
    assert sorted(a[0]) == sorted(ds.labels.tolist())
    plain = DataLoaderBuilder(MnistBatcher()).batch_size(16).build(ds)
    assert torch.cat([bt.targets for bt in plain]).tolist() == ds.labels.tolist()
    assert len(plain) == 7 and len(DataLoaderBuilder(MnistBatcher()).batch_size(16).drop_last().build(ds)) == 6


def test_workers(tmp_path):
    write_mnist_idx(tmp_path, 64, 20)
    ds = MnistDataset.train(tmp_path)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(1).num_workers(2).build(ds)
    assert sum(len(b.targets) for b in loader) == 64


def test_generic_dataset_without_getitems():
    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i

    class Summer:
        def batch(self, items, device=None):
            return sum(items)

    loader = DataLoaderBuilder(Summer()).batch_size(4).build(Pairs())
    assert list(loader) == [6, 22, 17]


def test_missing_files_name_folder_and_files(tmp_path, monkeypatch):
    monkeypatch.delenv("BURNLIKE_DOWNLOAD", raising=False)
    with pytest.raises(MnistNotFoundError) as err:
        MnistDataset.train(tmp_path)
    text = str(err.value)
    assert str((tmp_path / "MNIST" / "raw").resolve()) in text
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        assert name in text
    assert "BURNLIKE_DATA" in text and "data.root" in text
    assert isinstance(err.value, FileNotFoundError)


def test_env_var_root(tmp_path, monkeypatch):
    write_mnist_idx(tmp_path, 12, 8)
    monkeypatch.setenv("BURNLIKE_DATA", str(tmp_path))
    assert len(MnistDataset.test()) == 8


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        (b"\x00\x00\x08\x01" + b"\x00" * 12, "magic number"),
        (idx_bytes(np.zeros((4, 28, 28), np.uint8))[:-10], "data bytes"),
        (b"\x00\x00", "too short"),
    ],
)
def test_malformed_files_are_named(tmp_path, payload, needle):
    write_mnist_idx(tmp_path, 4, 4, gz=False)
    bad = tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte"
    bad.write_bytes(payload)
    with pytest.raises(MnistFormatError, match=needle) as err:
        MnistDataset.train(tmp_path)
    assert "train-images-idx3-ubyte" in str(err.value)


def test_count_mismatch(tmp_path):
    write_mnist_idx(tmp_path, 4, 4, gz=False)
    (tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(MnistFormatError, match="4 images but .* 3 labels"):
        MnistDataset.train(tmp_path)


def test_batch_moves_with_lightning():
    from lightning.fabric.utilities.apply_func import move_data_to_device

    batch = MnistBatch(torch.zeros(2, 28, 28), torch.zeros(2, dtype=torch.long))
    moved = move_data_to_device(batch, torch.device("meta"))
    assert isinstance(moved, MnistBatch) and moved.images.device.type == "meta"


@pytest.mark.skipif(not (REAL / "MNIST" / "raw").is_dir(), reason="real MNIST not present")
def test_real_mnist_label_counts():
    train, test = MnistDataset.train(REAL), MnistDataset.test(REAL)
    assert (len(train), len(test)) == (60000, 10000)
    assert train.labels.bincount().tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert test.labels.bincount().tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
