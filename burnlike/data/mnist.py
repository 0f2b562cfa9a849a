"""MNIST from the four IDX files (gzip or raw), kept as uint8 until a whole batch is normalised.

Reading is one `numpy.frombuffer` per file; a batch is one fancy-index into the stacked tensor,
so there is no per-sample PIL image or tensor as in torchvision's default pipeline.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

MEAN, STD = 0.1307, 0.3081
_SCALE = np.float32(1.0 / (255.0 * STD))
_SHIFT = np.float32(MEAN / STD)

FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
ALL_FILES = [name for pair in FILES.values() for name in pair]


class MnistNotFoundError(FileNotFoundError):
    """The IDX files are not where burnlike looked (the message says where and how to fix it)."""


class MnistFormatError(ValueError):
    """An IDX file is truncated or not the kind of file its name says."""


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """`root`, else `$BURNLIKE_DATA`, else `./data`: the folder that holds `MNIST/raw/`."""
    if root is None:
        root = os.environ.get("BURNLIKE_DATA") or "data"
    return Path(root).expanduser()


def _find(raw: Path, name: str) -> Path | None:
    for candidate in (raw / name, raw / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise MnistFormatError(f"{path}: cannot read ({e})") from None
    header = 4 + 4 * ndim
    if len(data) < header:
        raise MnistFormatError(f"{path}: {len(data)} bytes, too short for an IDX header")
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise MnistFormatError(f"{path}: magic number {found}, expected {magic} (an IDX file of {ndim} dims)")
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    expected = int(np.prod(dims))
    if len(data) - header != expected:
        raise MnistFormatError(f"{path}: {len(data) - header} data bytes, expected {expected} for shape {dims}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def _download(root: Path) -> None:
    from torchvision.datasets import MNIST

    for train in (True, False):
        MNIST(str(root), train=train, download=True)


@dataclass
class MnistItem:
    image: Tensor  # uint8 [28, 28]
    label: int


@dataclass
class MnistItems:
    """What one batched fetch returns: stacked uint8 images and int64 labels."""

    images: Tensor  # uint8 [B, 28, 28]
    labels: Tensor  # int64 [B]


class MnistDataset(Dataset[MnistItem]):
    """Burn's `MnistDataset::train()` / `::test()`; `root` holds `MNIST/raw/`."""

    def __init__(self, images: Tensor, labels: Tensor) -> None:
        if images.shape[0] != labels.shape[0]:
            raise MnistFormatError(f"{images.shape[0]} images but {labels.shape[0]} labels")
        self.images = images.contiguous()
        self.labels = labels.contiguous()
        # numpy views of the same memory: a small fancy-index is ~10x cheaper in numpy than in a
        # multi-threaded torch op, and it is the whole per-batch cost of this dataset.
        self._images_np = self.images.numpy()
        self._labels_np = self.labels.numpy()

    def __getstate__(self) -> dict[str, Any]:
        return {"images": self.images, "labels": self.labels}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["images"], state["labels"])  # type: ignore[misc]

    @classmethod
    def train(cls, root: str | os.PathLike[str] | None = None, download: bool | None = None) -> MnistDataset:
        return cls.load("train", root, download)

    @classmethod
    def test(cls, root: str | os.PathLike[str] | None = None, download: bool | None = None) -> MnistDataset:
        return cls.load("test", root, download)

    @classmethod
    def load(cls, split: str, root: str | os.PathLike[str] | None = None,
             download: bool | None = None) -> MnistDataset:
        base = data_root(root)
        raw = base / "MNIST" / "raw"
        image_name, label_name = FILES[split]
        paths = [_find(raw, image_name), _find(raw, label_name)]
        if None in paths:
            allowed = download if download is not None else os.environ.get("BURNLIKE_DOWNLOAD") == "1"
            if allowed:
                _download(base)
                paths = [_find(raw, image_name), _find(raw, label_name)]
            if None in paths:
                raise MnistNotFoundError(_missing_message(raw))
        images = _read_idx(paths[0], 2051, 3)  # type: ignore[arg-type]
        labels = _read_idx(paths[1], 2049, 1)  # type: ignore[arg-type]
        if images.shape[1:] != (28, 28):
            raise MnistFormatError(f"{paths[0]}: images of shape {images.shape[1:]}, expected (28, 28)")
        if images.shape[0] != labels.shape[0]:
            raise MnistFormatError(f"{paths[0]} has {images.shape[0]} images but {paths[1]} has {labels.shape[0]} labels")
        return cls(torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64)))

    def __len__(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, index: int) -> MnistItem:
        return MnistItem(self.images[index], int(self.labels[index]))

    def __getitems__(self, indices: list[int] | Tensor) -> MnistItems:
        idx = indices.numpy() if isinstance(indices, Tensor) else np.asarray(indices, dtype=np.int64)
        return MnistItems(torch.from_numpy(self._images_np.take(idx, axis=0)),
                          torch.from_numpy(self._labels_np.take(idx)))


def _missing_message(raw: Path) -> str:
    files = "\n".join(f"  - {name}[.gz]" for name in ALL_FILES)
    return (
        f"MNIST not found in {raw.resolve()}\n"
        f"Expected the four IDX files (gzip or not):\n{files}\n"
        "Put them there, or point burnlike at the folder that holds MNIST/raw with the environment "
        "variable BURNLIKE_DATA=<root>, the Hydra key data.root=<root> or MnistDataset.train(root); "
        "MnistDataset.train(root, download=True) or BURNLIKE_DOWNLOAD=1 lets torchvision download them."
    )


@dataclass
class MnistBatch:
    images: Tensor  # float32 [B, 28, 28], normalised
    targets: Tensor  # int64 [B]

    def to(self, device: Any, non_blocking: bool = False) -> MnistBatch:
        return MnistBatch(self.images.to(device, non_blocking=non_blocking),
                          self.targets.to(device, non_blocking=non_blocking))


class MnistBatcher:
    """Normalises a whole batch at once: ((x / 255) - 0.1307) / 0.3081."""

    def batch(self, items: MnistItems | list[MnistItem], device: Any = None) -> MnistBatch:
        if isinstance(items, MnistItems):
            images, targets = items.images, items.labels
        else:
            images = torch.stack([item.image for item in items])
            targets = torch.tensor([item.label for item in items], dtype=torch.long)
        # One float pass on the CPU batch (numpy: no thread-pool start-up for a 50k-element op).
        x = images.numpy().astype(np.float32)
        x *= _SCALE
        x -= _SHIFT
        batch = MnistBatch(torch.from_numpy(x), targets)
        return batch.to(device) if device is not None else batch
