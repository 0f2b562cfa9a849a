"""Burn's `CifarDataset`: CIFAR-10 and CIFAR-100 (32x32 colour images; 50,000 train, 10,000 test)
from local files. Nothing is downloaded.

Two layouts are read, from `root` (default: `$BURNLIKE_DATA`, else `./data`, then Burn's cache
folder `~/.cache/burn-dataset`):

- Burn's own, fastai's PNG folders: `cifar10/train/<class>/*.png` and `cifar10/test/...` (or
  `cifar100/...`), read as an `ImageFolderDataset.new_classification`, as Burn does;
- the binary version from the CIFAR site: `cifar-10-batches-bin/data_batch_{1..5}.bin` and
  `test_batch.bin` (records of 1 label byte and 3,072 pixel bytes, the red, green and blue planes),
  or `cifar-100-binary/train.bin` and `test.bin` (a coarse and a fine label byte, then the pixels),
  read whole with numpy. CIFAR-100's label is the fine one (100 classes), as in Burn's folders.

The python version (pickled batches, what torchvision's `CIFAR10` reads) is not read: burnlike never
unpickles files. In both layouts the class ids are the classes' sorted names, which is also the
order of CIFAR's own label numbers, so the two layouts give the same labels.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from burnlike.data.dataset.base import Dataset
from burnlike.data.dataset.errors import DatasetError, DatasetNotFoundError
from burnlike.data.dataset.in_memory import source_roots
from burnlike.data.dataset.vision import ImageDatasetItem, ImageFolderDataset, ImageItems, Label

__all__ = ["CIFAR100_CLASSES", "CIFAR10_CLASSES", "CifarBinaryDataset", "CifarDataset", "CifarType"]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
"""CIFAR-10's class names, in label order."""
CIFAR100_CLASSES = (
    "apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle", "bowl", "boy",
    "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle", "chair", "chimpanzee", "clock",
    "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur", "dolphin", "elephant", "flatfish",
    "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard", "lamp", "lawn_mower", "leopard", "lion",
    "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain", "mouse", "mushroom", "oak_tree", "orange",
    "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree", "plain", "plate", "poppy", "porcupine",
    "possum", "rabbit", "raccoon", "ray", "road", "rocket", "rose", "sea", "seal", "shark", "shrew", "skunk",
    "skyscraper", "snail", "snake", "spider", "squirrel", "streetcar", "sunflower", "sweet_pepper", "table",
    "tank", "telephone", "television", "tiger", "tractor", "train", "trout", "tulip", "turtle", "wardrobe",
    "whale", "willow_tree", "wolf", "woman", "worm",
)
"""CIFAR-100's fine class names, in label order."""
_PIXELS = 3 * 32 * 32


class CifarType(enum.Enum):
    """Burn's `CifarType`: `CifarType.Cifar10` (10 classes) or `CifarType.Cifar100` (100 classes)."""

    Cifar10 = "cifar10"
    Cifar100 = "cifar100"


# per type: display name, Burn's folder, binary folder, binary files per split, label bytes, class names
_LAYOUT: dict[CifarType, tuple[str, str, str, dict[str, tuple[str, ...]], int, tuple[str, ...]]] = {
    CifarType.Cifar10: ("CIFAR-10", "cifar10", "cifar-10-batches-bin",
                        {"train": tuple(f"data_batch_{i}.bin" for i in range(1, 6)), "test": ("test_batch.bin",)},
                        1, CIFAR10_CLASSES),
    CifarType.Cifar100: ("CIFAR-100", "cifar100", "cifar-100-binary", {"train": ("train.bin",), "test": ("test.bin",)},
                         2, CIFAR100_CLASSES),
}


class CifarBinaryDataset(Dataset[ImageDatasetItem]):
    """One split of CIFAR's binary version held in memory: `images` `[N, 32, 32, 3]` uint8 and
    `labels` `[N]` int64. Items are `ImageDatasetItem`s (a `Label` annotation; the path is
    `<file>#<record>`), and a batched fetch stacks the images, as `ImageFolderDataset`'s does.

    Args:
        images: `[N, 32, 32, 3]` uint8.
        labels: `[N]` class ids.
        paths: Each image's `<file>#<record>`.
        classes: The class names in id order.

    Attributes:
        paths: Each image's `<file>#<record>`.
        classes: The class names in id order.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, paths: Sequence[str], classes: Sequence[str]) -> None:
        self.images, self.labels = images, labels
        self.paths = list(paths)
        self.classes = list(classes)

    @classmethod
    def read(cls, files: Sequence[Path], label_bytes: int, classes: Sequence[str]) -> CifarBinaryDataset:
        """Every record of `files`.

        Args:
            files: The binary batch files.
            label_bytes: 1 (CIFAR-10) or 2 (CIFAR-100: the coarse label, then the fine one, which is read).
            classes: The class names in id order.

        Raises:
            DatasetError: A file whose size is not a whole number of records, or a label out of range.
        """
        record = label_bytes + _PIXELS
        images: list[np.ndarray] = []
        labels: list[np.ndarray] = []
        paths: list[str] = []
        for path in files:
            data = np.fromfile(path, dtype=np.uint8)
            if data.size == 0 or data.size % record:
                raise DatasetError(f"{path}: {data.size} bytes, expected a non-zero multiple of {record} "
                                   f"(records of {label_bytes} label byte(s) and {_PIXELS} pixel bytes)")
            rows = data.reshape(-1, record)
            found = rows[:, label_bytes - 1].astype(np.int64)
            if int(found.max()) >= len(classes):
                bad = int(np.argmax(found >= len(classes)))
                raise DatasetError(f"{path}: record {bad} has label {int(found[bad])}, expected 0 to {len(classes) - 1}")
            images.append(rows[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(found)
            paths.extend(f"{path}#{i}" for i in range(rows.shape[0]))
        return cls(np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels), paths, classes)

    def num_classes(self) -> int:
        """The number of classes."""
        return len(self.classes)

    def len(self) -> int:
        return len(self.paths)

    def get(self, index: int) -> ImageDatasetItem | None:
        if not 0 <= index < len(self.paths):
            return None
        return ImageDatasetItem(torch.from_numpy(self.images[index].copy()), 32, 32, Label(int(self.labels[index])),
                                self.paths[index])

    def __getitems__(self, indices: Sequence[int]) -> ImageItems:
        """A batch in one gather: `[B, 32, 32, 3]` uint8 images, their labels and paths."""
        for i in indices:
            if not 0 <= i < len(self.paths):
                raise IndexError(f"index {i} is out of range for CifarBinaryDataset of length {len(self.paths)}")
        idx = np.asarray(indices, dtype=np.int64)
        return ImageItems(torch.from_numpy(self.images.take(idx, axis=0)),
                          [Label(int(v)) for v in self.labels.take(idx)], [self.paths[i] for i in indices])


class CifarDataset:
    """`CifarDataset::new(CifarType::Cifar10)` is `CifarDataset(CifarType.Cifar10, root=None)`;
    `.train()` and `.test()` return the splits (see the module's docstring for the files read).
    Missing files raise `DatasetNotFoundError` naming the folders looked in and the files expected.

    Args:
        cifar_type: `CifarType.Cifar10` or `CifarType.Cifar100`.
        root: Where to look first (None: `$BURNLIKE_DATA`, then Burn's cache folder).

    Attributes:
        cifar_type: Which CIFAR.

    Raises:
        TypeError: `cifar_type` is not a `CifarType`.
        DatasetNotFoundError: Neither layout in any of the folders.
    """

    def __init__(self, cifar_type: CifarType, root: str | os.PathLike[str] | None = None) -> None:
        if not isinstance(cifar_type, CifarType):
            raise TypeError(f"cifar_type must be CifarType.Cifar10 or CifarType.Cifar100, got {cifar_type!r}")
        self.cifar_type = cifar_type
        name, folder, binary, files, self._label_bytes, self.classes = _LAYOUT[cifar_type]
        self._files = files
        roots = source_roots(root)
        for base in roots:
            if (base / folder).is_dir():
                self.cifar_dir, self.binary = base / folder, False
                return
            if (base / binary).is_dir():
                self.cifar_dir, self.binary = base / binary, True
                return
        listed = ", ".join(files["train"] + files["test"])
        raise DatasetNotFoundError(
            f"{name} not found in {' or '.join(str(b.resolve()) for b in roots)}. Expected Burn's layout "
            f"(fastai's PNG folders) {folder}/train/<class>/*.png and {folder}/test/<class>/*.png, or the "
            f"binary version {binary}/ holding {listed}. Nothing is downloaded (the pickled python version "
            f"is not read); point burnlike at the folder with CifarDataset({cifar_type}, root) or "
            "BURNLIKE_DATA=<root>.")

    def train(self) -> Dataset[ImageDatasetItem]:
        """The 50,000 training images."""
        return self._split("train")

    def test(self) -> Dataset[ImageDatasetItem]:
        """The 10,000 test images."""
        return self._split("test")

    def _split(self, split: str) -> Dataset[ImageDatasetItem]:
        if not self.binary:
            return ImageFolderDataset.new_classification(self.cifar_dir / split)
        paths = [self.cifar_dir / name for name in self._files[split]]
        missing = [p.name for p in paths if not p.is_file()]
        if missing:
            raise DatasetNotFoundError(f"{self.cifar_dir}: {', '.join(missing)} not found (the {split} split of "
                                       f"{_LAYOUT[self.cifar_type][0]}'s binary version is "
                                       f"{', '.join(self._files[split])})")
        return CifarBinaryDataset.read(paths, self._label_bytes, self.classes)
