"""Write small, valid (and learnable) MNIST IDX files for fast tests."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

NAMES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def idx_bytes(array: np.ndarray) -> bytes:
    magic = 2051 if array.ndim == 3 else 2049
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each class is a bright horizontal band at its own height, plus noise: easy to learn."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for i, label in enumerate(labels):
        row = 2 + int(label) * 2
        images[i, row : row + 3, 4:24] = 230
    return images, labels


def write_mnist_idx(root: Path, n_train: int = 512, n_test: int = 256, gz: bool = True, seed: int = 0) -> Path:
    """Write the four IDX files under `<root>/MNIST/raw/` and return `root`."""
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for split, n, s in (("train", n_train, seed), ("test", n_test, seed + 1)):
        images, labels = digits(n, s)
        for name, array in zip(NAMES[split], (images, labels)):
            data = idx_bytes(array)
            if gz:
                (raw / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=1))
            else:
                (raw / name).write_bytes(data)
    return Path(root)
