"""Burn's `ImageFolderDataset`: images from disk, labelled by folder (classification), by a list of
class names (multi-label) or by a mask image (segmentation).

Items keep Burn's fields (`image`, `image_width`, `image_height`, `annotation`, `image_path`); the
image is a `[H, W, C]` tensor of the file's own depth (uint8 for ordinary images) until a batcher
normalises a whole batch. `__getitems__` decodes a batch straight into one stacked array when the
images share a size, so a `DataLoader` hands the batcher a single uint8 tensor.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from burnlike.data.dataset.base import BatchedItems, Dataset
from burnlike.data.dataset.decode import DECODERS, decode_image
from burnlike.data.dataset.errors import DatasetError, DatasetNotFoundError, EmptySplitError, ImageDecodeError

__all__ = [
    "SUPPORTED_FILES",
    "Annotation",
    "ImageDatasetItem",
    "ImageFolderDataset",
    "ImageItems",
    "Label",
    "MultiLabel",
    "SegmentationMask",
    "scan_folder",
]

SUPPORTED_FILES = ("bmp", "jpg", "jpeg", "png")  # Burn's; new_classification_with may add these:
_EXTRA_FILES = ("gif", "tif", "tiff", "webp")


class Annotation:
    """Burn's `Annotation` enum: `Annotation.Label(3)`, `Annotation.MultiLabel([0, 2])`,
    `Annotation.SegmentationMask(mask)`."""

    Label: ClassVar[type[Label]]
    MultiLabel: ClassVar[type[MultiLabel]]
    SegmentationMask: ClassVar[type[SegmentationMask]]


@dataclasses.dataclass(frozen=True)
class Label(Annotation):
    label: int


@dataclasses.dataclass(frozen=True)
class MultiLabel(Annotation):
    labels: list[int]


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentationMask(Annotation):
    """Class ids per pixel, `[H, W]` int64 (Burn keeps them flat; the first channel of the mask file)."""

    mask: Tensor


Annotation.Label, Annotation.MultiLabel, Annotation.SegmentationMask = Label, MultiLabel, SegmentationMask


@dataclasses.dataclass
class ImageDatasetItem:
    image: Tensor  # [H, W, C], the file's depth: uint8 (uint16 / float32 for deeper images)
    image_width: int
    image_height: int
    annotation: Annotation
    image_path: str


@dataclasses.dataclass
class ImageItems(BatchedItems[ImageDatasetItem]):
    """A batch as `__getitems__` returns it: images stacked into one `[B, H, W, C]` tensor; also the
    list of its `ImageDatasetItem`s for a batcher that iterates, as Burn's batchers get them
    (`BatchedItems`)."""

    images: Tensor
    annotations: list[Annotation]
    image_paths: list[str]

    def __len__(self) -> int:
        return len(self.image_paths)

    def item(self, index: int) -> ImageDatasetItem:
        image = self.images[index]
        return ImageDatasetItem(image, int(image.shape[1]), int(image.shape[0]), self.annotations[index],
                                self.image_paths[index])


@dataclasses.dataclass(frozen=True)
class _Raw:
    path: str
    kind: str  # "label" | "multilabel" | "mask"
    value: Any  # class name | list of class names | mask path


_PACKAGE = str(Path(__file__).resolve().parent.parent)  # burnlike/data


def _caller_level() -> int:
    """`stacklevel` of the first frame outside burnlike.data, so a warning names the user's line
    (the constructors nest one or two deep, so no fixed level fits them all)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _extensions(extensions: Sequence[str]) -> tuple[str, ...]:
    out = []
    for ext in extensions:
        ext = ext.lower().lstrip(".")
        if ext not in SUPPORTED_FILES + _EXTRA_FILES:
            raise DatasetError(f"Invalid file extension: {ext!r} (supported: {', '.join(SUPPORTED_FILES + _EXTRA_FILES)})")
        out.append(ext)
    return tuple(out)


def scan_folder(root: str | os.PathLike[str], extensions: Sequence[str], what: str) -> list[tuple[str, str]]:
    """`(path, parent folder name)` for every file with one of `extensions` at any depth under `root`,
    sorted by path component by component (as Burn's glob walk), following symlinks."""
    root = Path(root)
    if not root.is_dir():
        raise DatasetNotFoundError(f"{what} folder {root} not found" + (" (it is a file)" if root.exists() else ""))
    suffixes = {f".{e.lower()}" for e in extensions}
    found = []
    for folder, _, files in os.walk(root, followlinks=True):
        for name in files:
            if Path(name).suffix.lower() in suffixes:
                found.append(Path(folder) / name)
    found.sort(key=lambda p: p.parts)
    if not found:
        raise EmptySplitError(f"no {what} files (*.{', *.'.join(extensions)}) under {root}")
    return [(str(p), p.parent.name) for p in found]


class ImageFolderDataset(Dataset[ImageDatasetItem]):
    """Build with `new_classification(root)` (a folder per class) or the `*_with_items` constructors.

    Options on every constructor: `decoder` ("auto", "pil" or "torchvision"), `mode` (convert to
    "RGB", "L", ...; `None` keeps each file's channels), `size` (`(height, width)` to resize to), and
    `skip_corrupt`: `False` (default) raises `ImageDecodeError` naming the file when it is read;
    `True` decodes every image once up front and leaves out, with one warning, those that fail.
    """

    def __init__(self, items: Sequence[_Raw], classes: Sequence[str], *, decoder: str = "auto",
                 mode: str | None = None, size: Sequence[int] | None = None, skip_corrupt: bool = False) -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        if size is not None and (len(size) != 2 or min(size) < 1):
            raise ValueError(f"size must be (height, width) with both >= 1, got {size!r}")
        self.classes = [str(c) for c in classes]
        self._class_ids = {name: i for i, name in enumerate(self.classes)}
        self.decoder, self.mode = decoder, mode
        self.size = None if size is None else (int(size[0]), int(size[1]))
        for raw in items:
            names = [raw.value] if raw.kind == "label" else raw.value if raw.kind == "multilabel" else []
            unknown = [n for n in names if n not in self._class_ids]
            if unknown:
                raise DatasetError(f"{raw.path}: label {unknown[0]!r} is not one of the classes {self.classes}")
        self.items = list(items)
        if skip_corrupt:
            self.items = self._without_corrupt(self.items)

    def _without_corrupt(self, items: list[_Raw]) -> list[_Raw]:
        kept, bad = [], []
        for raw in items:
            try:
                self._decode(raw.path)
                if raw.kind == "mask":
                    self._mask(raw.value)
                kept.append(raw)
            except (ImageDecodeError, DatasetNotFoundError) as e:
                bad.append(str(e))
        if bad:
            shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
            warnings.warn(f"ImageFolderDataset: skipped {len(bad)} of {len(items)} images that don't decode: {shown}",
                          stacklevel=_caller_level())
        if not kept:
            raise EmptySplitError(f"none of the {len(items)} images decode")
        return kept

    @classmethod
    def new_classification(cls, root: str | os.PathLike[str], classes: Sequence[str] | None = None,
                           **options: Any) -> ImageFolderDataset:
        """Every image under `root` (Burn's extensions), labelled by its folder; classes sorted by name.

        `classes` (not in Burn) numbers the folders as another split did, so a validation folder
        missing a class keeps the same ids; a folder not among them is an error naming an image.
        """
        return cls.new_classification_with(root, SUPPORTED_FILES, classes, **options)

    @classmethod
    def new_classification_with(cls, root: str | os.PathLike[str], extensions: Sequence[str],
                                classes: Sequence[str] | None = None, **options: Any) -> ImageFolderDataset:
        found = scan_folder(root, _extensions(extensions), "image")
        if classes is None:
            classes = sorted({label for _, label in found})
        return cls([_Raw(path, "label", label) for path, label in found], classes, **options)

    @classmethod
    def new_classification_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], str]],
                                      classes: Sequence[str], **options: Any) -> ImageFolderDataset:
        return cls([_Raw(cls._checked_path(p), "label", label) for p, label in items], classes, **options)

    @classmethod
    def new_multilabel_classification_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], Sequence[str]]],
                                                 classes: Sequence[str], **options: Any) -> ImageFolderDataset:
        return cls([_Raw(cls._checked_path(p), "multilabel", list(labels)) for p, labels in items], classes,
                   **options)

    @classmethod
    def new_segmentation_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
                                    classes: Sequence[str], **options: Any) -> ImageFolderDataset:
        """`(image path, mask path)` pairs; the mask's first channel holds each pixel's class id."""
        return cls([_Raw(cls._checked_path(p), "mask", str(m)) for p, m in items], classes, **options)

    @staticmethod
    def _checked_path(path: str | os.PathLike[str]) -> str:
        _extensions([Path(path).suffix or "(none)"])
        return str(path)

    def num_classes(self) -> int:
        return len(self.classes)

    def _decode(self, path: str) -> np.ndarray:
        return decode_image(path, self.decoder, self.mode, self.size)

    def _mask(self, path: str) -> Tensor:
        mask = decode_image(path, self.decoder, None, self.size)[:, :, 0]
        return torch.from_numpy(mask.astype(np.int64))

    def _annotation(self, raw: _Raw) -> Annotation:
        if raw.kind == "label":
            return Label(self._class_ids[raw.value])
        if raw.kind == "multilabel":
            return MultiLabel([self._class_ids[name] for name in raw.value])
        return SegmentationMask(self._mask(raw.value))

    def len(self) -> int:
        return len(self.items)

    def get(self, index: int) -> ImageDatasetItem | None:
        if not 0 <= index < len(self.items):
            return None
        raw = self.items[index]
        pixels = self._decode(raw.path)
        return ImageDatasetItem(torch.from_numpy(pixels), pixels.shape[1], pixels.shape[0], self._annotation(raw),
                                raw.path)

    def __getitems__(self, indices: Sequence[int]) -> ImageItems | list[ImageDatasetItem]:
        """Decode a batch into one `[B, H, W, C]` array; a list of items if sizes or depths differ."""
        raws = []
        for i in indices:
            if not 0 <= i < len(self.items):
                raise IndexError(f"index {i} is out of range for ImageFolderDataset of length {len(self.items)}")
            raws.append(self.items[i])
        arrays = [self._decode(raw.path) for raw in raws]
        first = arrays[0] if arrays else None
        if first is None or any(a.shape != first.shape or a.dtype != first.dtype for a in arrays):
            return [ImageDatasetItem(torch.from_numpy(a), a.shape[1], a.shape[0], self._annotation(r), r.path)
                    for a, r in zip(arrays, raws)]
        return ImageItems(torch.from_numpy(np.stack(arrays)), [self._annotation(r) for r in raws],
                          [r.path for r in raws])
