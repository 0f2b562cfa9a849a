"""`burnlike.data.dataset.cifar`: `CifarDataset`, Burn's CIFAR-10/100 from local files only. Burn's
layout (fastai's PNG folders) reads as an image folder; the binary version's records (1 or 2 label
bytes, then the red, green and blue planes) become `[32, 32, 3]` images with their labels, batched
through `ImageBatcher`; missing or malformed files are named with what was expected."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from burnlike.data import DataLoaderBuilder, ImageBatcher
from burnlike.data.dataset import (
    CifarBinaryDataset,
    CifarDataset,
    CifarType,
    DatasetError,
    DatasetNotFoundError,
    ImageFolderDataset,
    Label,
)
from tests.helpers.expect import raises_exactly


def records(n, seed, label_bytes=1, classes=10):
    """`n` records and the `[n, 32, 32, 3]` images and labels they hold."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, classes, n).astype(np.uint8)
    head = np.stack([labels // 5, labels], 1)[:, -label_bytes:] if label_bytes == 2 else labels[:, None]
    planes = images.transpose(0, 3, 1, 2).reshape(n, -1)  # the red plane, then green, then blue
    return np.concatenate([head.astype(np.uint8), planes], 1).tobytes(), images, labels


def write_cifar10_bin(root, per_batch=3):
    folder = root / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    images, labels = [], []
    for i, name in enumerate([f"data_batch_{k}.bin" for k in range(1, 6)] + ["test_batch.bin"]):
        data, im, lab = records(per_batch, i)
        (folder / name).write_bytes(data)
        images.append(im)
        labels.append(lab)
    return folder, images, labels


def test_cifar10_binary_records_become_images_and_labels(tmp_path):
    folder, images, labels = write_cifar10_bin(tmp_path)
    cifar = CifarDataset(CifarType.Cifar10, tmp_path)
    train, test = cifar.train(), cifar.test()
    assert isinstance(train, CifarBinaryDataset) and (train.len(), test.len(), train.num_classes()) == (15, 3, 10)
    assert train.classes[0] == "airplane" and train.classes[9] == "truck"
    item = train.get(4)
    assert item.image.dtype == torch.uint8 and item.image.shape == (32, 32, 3)
    assert np.array_equal(item.image.numpy(), images[1][1]) and item.annotation == Label(int(labels[1][1]))
    assert (item.image_width, item.image_height, item.image_path) == (32, 32, f"{folder / 'data_batch_2.bin'}#1")
    assert np.array_equal(test[2].image.numpy(), images[5][2]) and train.get(15) is None
    batch = next(iter(DataLoaderBuilder(ImageBatcher((0.0,), (1.0,))).batch_size(6).build(train)))
    expected = np.concatenate(images[:2]).transpose(0, 3, 1, 2) / 255.0
    assert batch.images.shape == (6, 3, 32, 32) and np.allclose(batch.images.numpy(), expected)
    assert batch.targets.tolist() == np.concatenate(labels[:2]).tolist()


def test_cifar100_binary_reads_the_fine_label(tmp_path):
    folder = tmp_path / "cifar-100-binary"
    folder.mkdir()
    data, images, labels = records(4, 7, label_bytes=2, classes=100)
    (folder / "train.bin").write_bytes(data)
    (folder / "test.bin").write_bytes(records(2, 8, 2, 100)[0])
    cifar = CifarDataset(CifarType.Cifar100, tmp_path)
    train = cifar.train()
    assert [i.annotation.label for i in train.iter()] == labels.tolist() and train.num_classes() == 100
    assert np.array_equal(train[3].image.numpy(), images[3]) and cifar.test().len() == 2


def test_burns_png_folders_read_as_an_image_folder(tmp_path, monkeypatch):
    for split, n in (("train", 2), ("test", 1)):
        for name in ("cat", "airplane"):
            (tmp_path / "cifar10" / split / name).mkdir(parents=True)
            for i in range(n):
                Image.fromarray(np.full((32, 32, 3), i, np.uint8)).save(tmp_path / "cifar10" / split / name / f"{i}.png")
    monkeypatch.setenv("BURNLIKE_DATA", str(tmp_path))
    train = CifarDataset(CifarType.Cifar10).train()
    assert isinstance(train, ImageFolderDataset) and train.classes == ["airplane", "cat"] and train.len() == 4
    assert [i.annotation.label for i in train.iter()] == [0, 0, 1, 1] and train[0].image.shape == (32, 32, 3)


def test_missing_and_malformed_files_are_named(tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        CifarDataset(CifarType.Cifar10, tmp_path)
    assert str(e.value) == (
        f"CIFAR-10 not found in {tmp_path.resolve()}. Expected Burn's layout (fastai's PNG folders) "
        "cifar10/train/<class>/*.png and cifar10/test/<class>/*.png, or the binary version cifar-10-batches-bin/ "
        "holding data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, data_batch_5.bin, "
        "test_batch.bin. Nothing is downloaded (the pickled python version is not read); point burnlike at the "
        "folder with CifarDataset(CifarType.Cifar10, root) or BURNLIKE_DATA=<root>.")
    folder, _, _ = write_cifar10_bin(tmp_path)
    (folder / "data_batch_3.bin").unlink()
    with raises_exactly(DatasetNotFoundError, f"{folder}: data_batch_3.bin not found (the train split of CIFAR-10's "
                                              "binary version is data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, "
                                              "data_batch_4.bin, data_batch_5.bin)"):
        CifarDataset(CifarType.Cifar10, tmp_path).train()
    (folder / "test_batch.bin").write_bytes(b"\x00" * 3000)
    with raises_exactly(DatasetError, f"{folder / 'test_batch.bin'}: 3000 bytes, expected a non-zero multiple of "
                                      "3073 (records of 1 label byte(s) and 3072 pixel bytes)"):
        CifarDataset(CifarType.Cifar10, tmp_path).test()
    (folder / "test_batch.bin").write_bytes(bytes([0]) + bytes(3072) + bytes([12]) + bytes(3072))
    with raises_exactly(DatasetError, f"{folder / 'test_batch.bin'}: record 1 has label 12, expected 0 to 9"):
        CifarDataset(CifarType.Cifar10, tmp_path).test()
    with raises_exactly(TypeError, "cifar_type must be CifarType.Cifar10 or CifarType.Cifar100, got 'cifar10'"):
        CifarDataset("cifar10", tmp_path)  # type: ignore[arg-type]
