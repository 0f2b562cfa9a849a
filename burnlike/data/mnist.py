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

from burnlike.data.dataset.base import BatchedItems, Dataset
from burnlike.data.dataset.in_memory import data_root

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


def _find(raw: Path, name: str) -> Path | None:
    for candidate in (raw / name, raw / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


_KINDS = {2051: "IDX images (unsigned bytes, 3 dims)", 2049: "IDX labels (unsigned bytes, 1 dim)"}


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    """Whole-file read and header check: one decompress and one `frombuffer`, no per-item work."""
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError) as e:  # BadGzipFile is an OSError; a cut-off gzip stream is an EOFError
        raise MnistFormatError(f"{path}: not a readable gzip file ({e}); expected a gzip-compressed IDX file") from None
    header = 4 + 4 * ndim
    if len(data) < header:
        raise MnistFormatError(
            f"{path}: {len(data)} bytes, too short for an IDX header (expected at least {header} bytes)"
        )
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        hint = f", which marks {_KINDS[found]} (files swapped?)" if found in _KINDS else ""
        raise MnistFormatError(f"{path}: magic number {found}{hint}; expected {magic} for {_KINDS[magic]}")
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    expected = int(np.prod(dims, dtype=np.int64))
    if len(data) - header != expected:
        what = "truncated" if len(data) - header < expected else "trailing bytes"
        raise MnistFormatError(
            f"{path}: {len(data) - header} data bytes, expected {expected} for shape {dims} ({what})"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def _download_allowed(download: bool | None) -> bool:
    if download is not None:
        return download
    return os.environ.get("BURNLIKE_DOWNLOAD", "").strip().lower() in {"1", "true", "yes", "on"}


def _download(root: Path) -> None:
    """torchvision's downloader (mirrors + checksums) into `<root>/MNIST/raw/`; only when allowed.
    One call fetches all four files (`train` only picks which split torchvision then reads)."""
    from torchvision.datasets import MNIST

    MNIST(str(root), download=True)


@dataclass
class MnistItem:
    """One digit, as Burn's `MnistItem`; the image stays uint8 until the batcher."""

    image: Tensor  # uint8 [28, 28]
    label: int  # the digit, 0 to 9


@dataclass
class MnistItems(BatchedItems[MnistItem]):
    """What one batched fetch returns: stacked uint8 images and int64 labels; also the list of its
    `MnistItem`s for a batcher that iterates (`BatchedItems`)."""

    images: Tensor  # uint8 [B, 28, 28]
    labels: Tensor  # int64 [B]

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def item(self, index: int) -> MnistItem:
        return MnistItem(self.images[index], int(self.labels[index]))


class MnistDataset(Dataset[MnistItem]):
    """Burn's `MnistDataset::train()` / `::test()`; `root` holds `MNIST/raw/`.

    Args:
        images: uint8 `[N, 28, 28]`.
        labels: `[N]` digits.

    Attributes:
        images: uint8 `[N, 28, 28]`, on the CPU.
        labels: int64 `[N]`, on the CPU.

    Raises:
        ValueError: `images` is not uint8 `[N, 28, 28]`.
        MnistFormatError: Different counts of images and labels.
    """

    def __init__(self, images: Tensor, labels: Tensor) -> None:
        if images.dtype != torch.uint8 or images.dim() != 3:
            raise ValueError(f"images must be a uint8 [N, 28, 28] tensor, got {images.dtype} {list(images.shape)}")
        if images.shape[0] != labels.shape[0]:
            raise MnistFormatError(f"{images.shape[0]} images but {labels.shape[0]} labels")
        self.images = images.cpu().contiguous()
        self.labels = labels.cpu().to(torch.int64).contiguous()
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
        """The 60,000 training digits.

        Args:
            root: The folder holding `MNIST/raw/` (None: `$BURNLIKE_DATA`, else `./data`).
            download: Download through torchvision when the files are missing (None: only with
                `BURNLIKE_DOWNLOAD=1`).
        """
        return cls.load("train", root, download)

    @classmethod
    def test(cls, root: str | os.PathLike[str] | None = None, download: bool | None = None) -> MnistDataset:
        """The 10,000 test digits (Burn's guide validates on these).

        Args:
            root: The folder holding `MNIST/raw/` (None: `$BURNLIKE_DATA`, else `./data`).
            download: Download when the files are missing (None: only with `BURNLIKE_DOWNLOAD=1`).
        """
        return cls.load("test", root, download)

    @classmethod
    def load(cls, split: str, root: str | os.PathLike[str] | None = None,
             download: bool | None = None) -> MnistDataset:
        """Read one split's two IDX files (download first only if allowed and they are missing).

        Args:
            split: "train" or "test".
            root: The folder holding `MNIST/raw/` (None: `$BURNLIKE_DATA`, else `./data`).
            download: Download when the files are missing (None: only with `BURNLIKE_DOWNLOAD=1`).

        Raises:
            ValueError: Another split.
            MnistNotFoundError: The files are missing (and weren't downloaded), naming where they were looked for.
            MnistFormatError: The files are not MNIST's IDX files, or don't match each other.
        """
        if split not in FILES:
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        base = data_root(root)
        raw = base / "MNIST" / "raw"
        image_name, label_name = FILES[split]
        paths = [_find(raw, image_name), _find(raw, label_name)]
        if None in paths:
            failure = ""
            if _download_allowed(download):
                try:
                    _download(base)
                except Exception as e:  # offline, mirror down, disk full: say so with the usual advice
                    failure = f"\nDownloading through torchvision failed: {type(e).__name__}: {e}"
                paths = [_find(raw, image_name), _find(raw, label_name)]
            if None in paths:
                raise MnistNotFoundError(_missing_message(raw) + failure)
        images = _read_idx(paths[0], 2051, 3)  # type: ignore[arg-type]
        labels = _read_idx(paths[1], 2049, 1)  # type: ignore[arg-type]
        if images.shape[1:] != (28, 28):
            raise MnistFormatError(f"{paths[0]}: images of shape {images.shape[1:]}, expected (28, 28)")
        if images.shape[0] != labels.shape[0]:
            raise MnistFormatError(
                f"{paths[0]} has {images.shape[0]} images but {paths[1]} has {labels.shape[0]} labels; "
                "expected the same count (files from different splits or downloads?)"
            )
        if labels.size and int(labels.max()) > 9:
            raise MnistFormatError(f"{paths[1]}: label {int(labels.max())} found, expected digits 0-9")
        return cls(torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64)))

    def __len__(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, index: int) -> MnistItem:
        # A copy, not a view: a pickled view (to a worker or another process) carries the whole 47 MB storage.
        return MnistItem(self.images[index].clone(), int(self._labels_np[index]))

    def __getitems__(self, indices: list[int] | Tensor) -> MnistItems:
        """A whole batch in one gather; DataLoader calls this instead of `__getitem__` per sample."""
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
    """A dataclass with `.to()`: Lightning's `move_data_to_device` moves it like a tensor."""

    images: Tensor  # float32 [B, 28, 28], normalised
    targets: Tensor  # int64 [B]

    def to(self, device: Any, non_blocking: bool = False) -> MnistBatch:
        """A copy on `device`.

        Args:
            device: The device.
            non_blocking: Copy asynchronously where the source is pinned.
        """
        return MnistBatch(self.images.to(device, non_blocking=non_blocking),
                          self.targets.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> MnistBatch:
        """Called by the DataLoader when `pin_memory` is on (it leaves unknown dataclasses unpinned)."""
        return MnistBatch(self.images.pin_memory(), self.targets.pin_memory())


class MnistBatcher:
    """Normalises a whole batch at once: ((x / 255) - 0.1307) / 0.3081."""

    def batch(self, items: MnistItems | list[MnistItem], device: Any = None) -> MnistBatch:
        """The normalised images and their labels.

        Args:
            items: The items, or the dataset's batched fetch.
            device: Where the batch goes (None: where the images are).
        """
        if isinstance(items, MnistItems):
            images, targets = items.images, items.labels
        else:
            images = torch.stack([item.image for item in items])
            targets = torch.tensor([item.label for item in items], dtype=torch.long)
        if images.device.type == "cpu":
            # Numpy for a 50k-element op: no intra-op thread-pool dispatch, ~2x faster than torch here.
            # order="C": astype's default keeps the input's layout (a broadcast input gave a batch
            # that `view(B, -1)` refuses)
            x = images.numpy().astype(np.float32, order="C")
            x *= _SCALE
            x -= _SHIFT
            batch = MnistBatch(torch.from_numpy(x), targets)
        else:
            batch = MnistBatch(images.float().mul_(float(_SCALE)).sub_(float(_SHIFT)), targets)
        return batch.to(device) if device is not None else batch
