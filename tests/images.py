"""Write small image-folder trees (and broken images) for fast tests.

Class `c` is a bright square at its own place over noise, so the classes are learnable; the pixels
come from a seeded generator, so a test can recompute what any file holds (`pixels`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

CORRUPT = ("truncated", "bad_crc", "not_an_image", "empty")


def pixels(label: int, index: int, size: int = 16, channels: int = 3, seed: int = 0) -> np.ndarray:
    """The `[size, size, channels]` uint8 image number `index` of class `label`."""
    rng = np.random.default_rng([seed, label, index])
    image = rng.integers(0, 80, (size, size, channels), dtype=np.uint8)
    row, col = divmod(label % 4, 2)
    half = size // 2
    image[row * half + 1:row * half + half - 1, col * half + 1:col * half + half - 1] = 220 - 30 * (label // 4)
    return image


def write_image_folder(root: Path | str, classes: int = 4, per_class: int = 10, size: int = 16, channels: int = 3,
                       seed: int = 0, ext: str = "png") -> Path:
    """`<root>/class<k>/<i>.png` for each class; returns `root`."""
    root = Path(root)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    options = {"compress_level": 1} if ext == "png" else {}  # fast to write; decoding is the same work
    for label in range(classes):
        folder = root / f"class{label}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            array = pixels(label, i, size, channels, seed)
            Image.fromarray(array[:, :, 0] if channels == 1 else array, mode).save(folder / f"{i:04d}.{ext}", **options)
    return root


def write_splits(root: Path | str, classes: int = 4, train: int = 10, valid: int = 4, size: int = 16) -> Path:
    """`<root>/train/...` and `<root>/valid/...` (different images: another seed)."""
    root = Path(root)
    write_image_folder(root / "train", classes, train, size, seed=0)
    write_image_folder(root / "valid", classes, valid, size, seed=1)
    return root


def write_corrupt(path: Path | str, kind: str, size: int = 16) -> Path:
    """A file named like an image that doesn't decode as one (see CORRUPT)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels(0, 0, size)).save(path)
    data = path.read_bytes()
    if kind == "truncated":
        data = data[: len(data) // 2]
    elif kind == "bad_crc":
        at = data.index(b"IDAT") + 8  # a byte inside the compressed pixels, CRC left as it was
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    elif kind == "not_an_image":
        data = b"this is a text file, not a PNG\n" * 4
    elif kind == "empty":
        data = b""
    else:
        raise ValueError(f"kind must be one of {CORRUPT}, got {kind!r}")
    path.write_bytes(data)
    return path
