"""Write small image-folder trees (and broken images) for fast tests.

Class `c` is a bright square at its own place over noise, so the classes are learnable; the pixels
come from a seeded generator, so a test can recompute what any file holds (`pixels`).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

CORRUPT = ("truncated", "bad_crc", "cut_stream", "not_an_image", "empty")


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


def png(width: int, height: int, idat: bytes, interlace: int = 0) -> bytes:
    """An 8-bit RGB PNG around the given IDAT payload, every chunk with its right CRC."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, interlace)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def adam7_png(array: np.ndarray) -> bytes:
    """`array` ([H, W, 3] uint8) as an interlaced PNG: the spec's seven passes, filter 0 rows."""
    rows = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
        sub = array[y0::dy, x0::dx]
        if sub.shape[0] and sub.shape[1]:
            rows += b"".join(b"\0" + row.tobytes() for row in sub)
    return png(array.shape[1], array.shape[0], zlib.compress(rows), interlace=1)


def write_corrupt(path: Path | str, kind: str, size: int = 16) -> Path:
    """A file named like an image that doesn't decode as one (see CORRUPT; and "short_pixels")."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels(0, 0, size)).save(path)
    data = path.read_bytes()
    if kind == "truncated":
        data = data[: len(data) // 2]
    elif kind == "bad_crc":
        at = data.index(b"IDAT") + 8  # a byte inside the compressed pixels, CRC left as it was
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    elif kind == "cut_stream":  # every chunk well-formed, the compressed pixels cut off
        data = png(size, size, zlib.compress(bytes((1 + size * 3) * size))[:-12])
    elif kind == "short_pixels":  # a complete zlib stream of half the rows (Pillow reads it, zero-filled)
        data = png(size, size, zlib.compress(bytes((1 + size * 3) * (size // 2))))
    elif kind == "not_an_image":
        data = b"this is a text file, not a PNG\n" * 4
    elif kind == "empty":
        data = b""
    else:
        raise ValueError(f"kind must be one of {CORRUPT} or short_pixels, got {kind!r}")
    path.write_bytes(data)
    return path
