"""Fixtures for the tests of `burnlike.data`: small data sets on disk, written once per test module."""

from pathlib import Path

import pytest

from tests.helpers.idx import write_mnist_idx
from tests.helpers.images import write_image_folder


@pytest.fixture(scope="module")
def mnist_root(tmp_path_factory) -> Path:
    """A data root holding MNIST/raw with 100 train and 30 test IDX digits (gzip)."""
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=100, n_test=30)


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory) -> Path:
    """An image folder of 3 classes (class0..class2) with 5 16x16 RGB PNGs each."""
    return write_image_folder(tmp_path_factory.mktemp("tree"), classes=3, per_class=5)
