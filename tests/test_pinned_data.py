"""MNIST input checks and the download switch, at their boundaries (issue 17).

Downloads are faked the way tests/test_data.py does (the torchvision call is replaced), so no test
touches the network.
"""

from pathlib import Path

import numpy as np
import pytest
from idx import NAMES, digits, idx_bytes, write_mnist_idx

import burnlike.data.mnist as mnist_module
from burnlike.data import MnistDataset, MnistFormatError, MnistNotFoundError


def write_split(root: Path, images: np.ndarray, labels: np.ndarray, split: str = "train") -> Path:
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    image_name, label_name = NAMES[split]
    (raw / image_name).write_bytes(idx_bytes(images))
    (raw / label_name).write_bytes(idx_bytes(labels))
    return raw


@pytest.mark.parametrize("label", [10, 11, 255])
def test_a_label_above_nine_is_refused_naming_the_file(tmp_path, label):
    images, labels = digits(6, 0)
    labels[4] = label
    raw = write_split(tmp_path, images, labels)
    with pytest.raises(MnistFormatError, match=rf"label {label} found, expected digits 0-9") as err:
        MnistDataset.train(tmp_path)
    assert str(raw / NAMES["train"][1]) in str(err.value)


def test_labels_zero_to_nine_are_all_accepted(tmp_path):
    images, _ = digits(10, 0)
    write_split(tmp_path, images, np.arange(10, dtype=np.uint8))
    assert MnistDataset.train(tmp_path).labels.tolist() == list(range(10))


@pytest.mark.parametrize("shape", [(28, 27), (27, 28), (32, 32), (14, 56)])
def test_images_that_are_not_28_by_28_are_refused(tmp_path, shape):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (5, *shape)).astype(np.uint8)
    raw = write_split(tmp_path, images, np.zeros(5, dtype=np.uint8))
    with pytest.raises(MnistFormatError, match=r"images of shape \(\d+, \d+\), expected \(28, 28\)") as err:
        MnistDataset.train(tmp_path)
    assert str(raw / NAMES["train"][0]) in str(err.value) and str(shape) in str(err.value)


@pytest.fixture
def downloads(monkeypatch):
    calls: list[Path] = []

    def fake_download(root: Path) -> None:  # stands in for torchvision
        calls.append(root)
        write_mnist_idx(root, 12, 6)

    monkeypatch.setattr(mnist_module, "_download", fake_download)
    return calls


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE", " Yes "])
def test_burnlike_download_enables_the_download(tmp_path, monkeypatch, downloads, value):
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", value)
    assert len(MnistDataset.train(tmp_path)) == 12 and downloads == [tmp_path]


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "2", "y"])
def test_other_burnlike_download_values_do_not_download(tmp_path, monkeypatch, downloads, value):
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", value)
    with pytest.raises(MnistNotFoundError):
        MnistDataset.train(tmp_path)
    assert downloads == []
