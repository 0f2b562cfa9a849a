"""Burn's `ImageFolderDataset`: images from disk, labelled by folder (classification), by a list of
class names (multi-label), by a mask image (segmentation) or by the boxes of a COCO annotations
file (detection).

Items keep Burn's fields (`image`, `image_width`, `image_height`, `annotation`, `image_path`); the
image is a `[H, W, C]` tensor of the file's own depth (uint8 for ordinary images) until a batcher
normalises a whole batch. `__getitems__` decodes a batch straight into one stacked array when the
images share a size, so a `DataLoader` hands the batcher a single uint8 tensor.
"""

from __future__ import annotations

import dataclasses
import json
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
    "BoundingBox",
    "BoundingBoxes",
    "ImageDatasetItem",
    "ImageFolderDataset",
    "ImageItems",
    "Label",
    "MultiLabel",
    "SegmentationMask",
    "scan_folder",
]

SUPPORTED_FILES = ("bmp", "jpg", "jpeg", "png")
"""The image extensions Burn reads; `new_classification_with` also takes gif, tif, tiff and webp."""
_EXTRA_FILES = ("gif", "tif", "tiff", "webp")


class Annotation:
    """Burn's `Annotation` enum: `Annotation.Label(3)`, `Annotation.MultiLabel([0, 2])`,
    `Annotation.BoundingBoxes([BoundingBox(...), ...])`, `Annotation.SegmentationMask(mask)`."""

    Label: ClassVar[type[Label]]
    """One class id."""
    MultiLabel: ClassVar[type[MultiLabel]]
    """Several class ids."""
    BoundingBoxes: ClassVar[type[BoundingBoxes]]
    """The boxes of the objects in the image."""
    SegmentationMask: ClassVar[type[SegmentationMask]]
    """A class id per pixel."""


@dataclasses.dataclass(frozen=True)
class Label(Annotation):
    """A classification image's class."""

    label: int  # the class id (its index in the dataset's `classes`)


@dataclasses.dataclass(frozen=True)
class MultiLabel(Annotation):
    """A multi-label image's classes."""

    labels: list[int]  # the class ids, in the order given


@dataclasses.dataclass(frozen=True)
class BoundingBox:
    """Burn's `BoundingBox`: `coords` are `[x_min, y_min, width, height]` in the image's pixels (COCO's
    `bbox`), `label` the box's class id (COCO's `category_id`)."""

    coords: tuple[float, float, float, float]  # [x_min, y_min, width, height], in pixels
    label: int  # the object's class id


@dataclasses.dataclass(frozen=True)
class BoundingBoxes(Annotation):
    """The objects in an image (an empty list for an image without any)."""

    boxes: list[BoundingBox]  # one per object


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentationMask(Annotation):
    """Class ids per pixel, `[H, W]` int64 (Burn keeps them flat; the first channel of the mask file)."""

    mask: Tensor  # [H, W] int64 class ids


Annotation.Label, Annotation.MultiLabel, Annotation.SegmentationMask = Label, MultiLabel, SegmentationMask
Annotation.BoundingBoxes = BoundingBoxes


@dataclasses.dataclass
class ImageDatasetItem:
    """Burn's `ImageDatasetItem`: one decoded image and its annotation."""

    image: Tensor  # [H, W, C], the file's depth: uint8 (uint16 / float32 for deeper images)
    image_width: int  # W, in pixels
    image_height: int  # H, in pixels
    annotation: Annotation  # its label(s), boxes or mask
    image_path: str  # the file it was read from


@dataclasses.dataclass
class ImageItems(BatchedItems[ImageDatasetItem]):
    """A batch as `__getitems__` returns it: images stacked into one `[B, H, W, C]` tensor; also the
    list of its `ImageDatasetItem`s for a batcher that iterates, as Burn's batchers get them
    (`BatchedItems`)."""

    images: Tensor  # [B, H, W, C], the files' depth
    annotations: list[Annotation]  # one per image
    image_paths: list[str]  # one per image

    def __len__(self) -> int:
        return len(self.image_paths)

    def item(self, index: int) -> ImageDatasetItem:
        image = self.images[index]
        return ImageDatasetItem(image, int(image.shape[1]), int(image.shape[0]), self.annotations[index],
                                self.image_paths[index])


@dataclasses.dataclass(frozen=True)
class _Raw:
    path: str
    kind: str  # "label" | "multilabel" | "mask" | "boxes"
    value: Any  # class name | list of class names | mask path | list of BoundingBox


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
    sorted by path component by component (as Burn's glob walk), following symlinks.

    Args:
        root: The folder to walk.
        extensions: The file extensions to take (without the dot).
        what: What the files are, for the error messages ("image").

    Raises:
        DatasetNotFoundError: `root` doesn't exist.
        EmptySplitError: No file with those extensions under it.
    """
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

    Args:
        items: The images and their raw annotations (the constructors make them).
        classes: The class names; a label's id is its index here.
        decoder: "auto", "pil" or "torchvision".
        mode: The mode to convert to ("RGB", "L" ...; None keeps each file's channels).
        size: `(height, width)` to resize to (None: each file's size).
        skip_corrupt: Leave out the images that don't decode (else the read raises).

    Attributes:
        classes: The class names.
        size: `(height, width)` the images are resized to (None: as they are).
        items: The images and their raw annotations.

    Raises:
        ValueError: An unknown decoder or a bad size.
        DatasetError: A label not among `classes`.
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

        Args:
            root: The folder of class folders.
            classes: The class names in id order (None: the folders' names, sorted).
        """
        return cls.new_classification_with(root, SUPPORTED_FILES, classes, **options)

    @classmethod
    def new_classification_with(cls, root: str | os.PathLike[str], extensions: Sequence[str],
                                classes: Sequence[str] | None = None, **options: Any) -> ImageFolderDataset:
        """`new_classification` with other file extensions.

        Args:
            root: The folder of class folders.
            extensions: The extensions to read (Burn's, plus gif, tif, tiff, webp).
            classes: The class names in id order (None: the folders' names, sorted).
            **options: `decoder`, `mode`, `size`, `skip_corrupt`.
        """
        found = scan_folder(root, _extensions(extensions), "image")
        if classes is None:
            classes = sorted({label for _, label in found})
        return cls([_Raw(path, "label", label) for path, label in found], classes, **options)

    @classmethod
    def new_classification_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], str]],
                                      classes: Sequence[str], **options: Any) -> ImageFolderDataset:
        """`(image path, class name)` pairs.

        Args:
            items: The pairs.
            classes: The class names in id order.
            **options: `decoder`, `mode`, `size`, `skip_corrupt`.
        """
        return cls([_Raw(cls._checked_path(p), "label", label) for p, label in items], classes, **options)

    @classmethod
    def new_multilabel_classification_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], Sequence[str]]],
                                                 classes: Sequence[str], **options: Any) -> ImageFolderDataset:
        """`(image path, [class names])` pairs.

        Args:
            items: The pairs.
            classes: The class names in id order.
            **options: `decoder`, `mode`, `size`, `skip_corrupt`.
        """
        return cls([_Raw(cls._checked_path(p), "multilabel", list(labels)) for p, labels in items], classes,
                   **options)

    @classmethod
    def new_segmentation_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
                                    classes: Sequence[str], **options: Any) -> ImageFolderDataset:
        """`(image path, mask path)` pairs; the mask's first channel holds each pixel's class id.

        Args:
            items: The pairs.
            classes: The class names in id order.
        """
        return cls([_Raw(cls._checked_path(p), "mask", str(m)) for p, m in items], classes, **options)

    @classmethod
    def new_coco_detection(cls, annotations_json: str | os.PathLike[str], images_path: str | os.PathLike[str],
                           **options: Any) -> ImageFolderDataset:
        """Burn's COCO detection dataset: an item per entry of the file's `images` (in file order, at
        `images_path / file_name`), annotated with `BoundingBoxes` from its `annotations` (`bbox`,
        `category_id`). `classes[id]` is the name of category `id` (`""` for an id no category has).

        As in Burn, the file needs categories and annotations, and every image must exist; an error
        names the file, the entry (`annotations[3]`) and the key at fault. `size` is not an option
        here: the boxes are in the file's own pixels.

        Args:
            annotations_json: The COCO annotations file.
            images_path: The folder the entries' `file_name`s are in.

        Raises:
            DatasetNotFoundError: The file or an image is missing.
            DatasetError: The file is not valid COCO, naming the entry and key.
            ValueError: A `size` option.
        """
        if options.get("size") is not None:
            raise ValueError("new_coco_detection takes no size: the boxes are in the image files' own pixels")
        path = Path(annotations_json)
        if not path.is_file():
            raise DatasetNotFoundError(f"COCO annotations file {path} not found"
                                       + (" (it is a folder)" if path.is_dir() else ""))
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DatasetError(f"{path}: not a valid JSON file ({e})") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{path}: expected a JSON object with 'images', 'annotations' and 'categories'")
        classes = _coco_classes(path, data)
        boxes = _coco_boxes(path, data, len(classes))
        items = _coco_images(path, data, Path(images_path), boxes)
        return cls(items, classes, **options)

    @staticmethod
    def _checked_path(path: str | os.PathLike[str]) -> str:
        _extensions([Path(path).suffix or "(none)"])
        return str(path)

    def num_classes(self) -> int:
        """The number of classes."""
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
        if raw.kind == "boxes":
            return BoundingBoxes(list(raw.value))
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


def _coco_list(path: Path, data: dict[str, Any], key: str) -> list[Any]:
    entries = data.get(key)
    if not isinstance(entries, list) or not entries:
        found = "missing" if entries is None else "empty" if entries == [] else f"a {type(entries).__name__}"
        raise DatasetError(f"{path}: no {key} found (the key {key!r} is {found}; expected a non-empty list)")
    return entries


def _coco_field(path: Path, where: str, entry: Any, key: str, kind: type) -> Any:
    value: Any = entry.get(key) if isinstance(entry, dict) else None
    valid = isinstance(value, kind) and not isinstance(value, bool)
    if valid and ((kind is int and value < 0) or (kind is str and not value)):
        valid = False
    if not valid:
        expected = {int: "an integer >= 0", str: "a non-empty string", list: "a list"}[kind]
        shown = "missing" if value is None else repr(value)
        raise DatasetError(f"{path}: {where}: {key!r} is {shown}, expected {expected}")
    return value


def _coco_classes(path: Path, data: dict[str, Any]) -> list[str]:
    """Category names by id, `""` where no category has the id."""
    names: dict[int, str] = {}
    for i, category in enumerate(_coco_list(path, data, "categories")):
        where = f"categories[{i}]"
        names[_coco_field(path, where, category, "id", int)] = _coco_field(path, where, category, "name", str)
    return [names.get(i, "") for i in range(max(names) + 1)]


def _coco_boxes(path: Path, data: dict[str, Any], num_classes: int) -> dict[int, list[BoundingBox]]:
    boxes: dict[int, list[BoundingBox]] = {}
    for i, annotation in enumerate(_coco_list(path, data, "annotations")):
        where = f"annotations[{i}]"
        image_id = _coco_field(path, where, annotation, "image_id", int)
        label = _coco_field(path, where, annotation, "category_id", int)
        if label >= num_classes:
            raise DatasetError(f"{path}: {where}: 'category_id' is {label}, which no category has "
                               f"(the largest category id is {num_classes - 1})")
        coords = _coco_field(path, where, annotation, "bbox", list)
        if len(coords) < 4 or not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in coords):
            raise DatasetError(f"{path}: {where}: 'bbox' is {coords!r}, expected 4 numbers "
                               "[x_min, y_min, width, height]")
        box = BoundingBox((float(coords[0]), float(coords[1]), float(coords[2]), float(coords[3])), label)
        boxes.setdefault(image_id, []).append(box)
    return boxes


def _coco_images(path: Path, data: dict[str, Any], images_path: Path,
                 boxes: dict[int, list[BoundingBox]]) -> list[_Raw]:
    items = []
    for i, image in enumerate(_coco_list(path, data, "images")):
        where = f"images[{i}]"
        image_id = _coco_field(path, where, image, "id", int)
        image_path = images_path / _coco_field(path, where, image, "file_name", str)
        if not image_path.is_file():
            raise DatasetNotFoundError(f"{path}: {where}: image {image_path} not found")
        items.append(_Raw(str(image_path), "boxes", boxes.get(image_id, [])))
    return items
