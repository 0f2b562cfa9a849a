"""Fixtures shared below this folder."""

from pathlib import Path

import pytest

from tests.helpers.idx import write_mnist_idx
from tests.helpers.images import write_image_folder


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=100, n_test=30)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_image_folder(tmp_path_factory.mktemp("tree"), classes=3, per_class=5)
