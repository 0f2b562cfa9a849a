"""Write small, valid and learnable MNIST IDX files (and broken ones) for fast tests.

`write_mnist_idx(root)` gives a root to pass as `MnistDataset.train(root)` / `data.root=...`.
Each class is a bright horizontal bar at its own height plus noise, so a small model reaches
high accuracy within an epoch or two.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

NAMES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
MALFORMED = ("bad_magic", "swapped", "truncated", "trailing", "short_header", "count_mismatch", "bad_label",
             "bad_gzip", "truncated_gzip")


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of unsigned bytes: magic (0, 0, 0x08, ndim), big-endian dims, then the data."""
    magic = 0x0800 + array.ndim
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` images (a bright bar at a class-specific height over noise) and their uint8 labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for i, label in enumerate(labels):
        row = 2 + int(label) * 2
        images[i, row : row + 3, 4:24] = 230
    return images, labels


def _write(path: Path, data: bytes, gz: bool) -> Path:
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data, compresslevel=1))
    else:
        path.write_bytes(data)
    return path


def write_mnist_idx(root: Path | str, n_train: int = 512, n_test: int = 256, gz: bool = True, seed: int = 0) -> Path:
    """Write the four IDX files under `<root>/MNIST/raw/` (gzip or raw) and return `root`."""
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for split, n, s in (("train", n_train, seed), ("test", n_test, seed + 1)):
        for name, array in zip(NAMES[split], digits(n, s)):
            for stale in (raw / name, raw / f"{name}.gz"):  # raw wins over .gz when both exist
                stale.unlink(missing_ok=True)
            _write(raw / name, idx_bytes(array), gz)
    return Path(root)


def write_malformed(root: Path | str, kind: str, split: str = "train", n: int = 8) -> Path:
    """Write a valid split, then break it as `kind` says (see MALFORMED); return the broken file's path.

    Files are uncompressed except for the gzip kinds. The other split is left alone.
    """
    if kind not in MALFORMED:
        raise ValueError(f"kind must be one of {MALFORMED}, got {kind!r}")
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    images, labels = digits(n, 0)
    image_name, label_name = NAMES[split]
    for name in (image_name, label_name):
        for stale in (raw / name, raw / f"{name}.gz"):
            stale.unlink(missing_ok=True)
    good_images, good_labels = idx_bytes(images), idx_bytes(labels)
    target, data = raw / image_name, good_images
    if kind == "bad_magic":
        data = b"\x12\x34\x56\x78" + good_images[4:]
    elif kind == "swapped":
        data = good_labels
    elif kind == "truncated":
        data = good_images[:-10]
    elif kind == "trailing":
        data = good_images + b"\x00" * 7
    elif kind == "short_header":
        data = good_images[:6]
    elif kind == "count_mismatch":
        target, data = raw / label_name, idx_bytes(labels[:-1])
    elif kind == "bad_label":
        bad = labels.copy()
        bad[0] = 11
        target, data = raw / label_name, idx_bytes(bad)
    elif kind == "bad_gzip":
        target, data = raw / f"{image_name}.gz", b"this is not gzip data"
    elif kind == "truncated_gzip":
        target, data = raw / f"{image_name}.gz", gzip.compress(good_images)[:-20]
    other = raw / (label_name if target.name.startswith(image_name) else image_name)
    other.write_bytes(good_labels if other.name == label_name else good_images)
    target.write_bytes(data)
    return target
