"""Image batchers: `ImageDatasetItem`s (or a stacked `ImageItems` batch) into normalised float tensors.

Burn's custom-image-dataset example converts each image to float, permutes it to `[C, H, W]`, divides
by 255 and normalises per channel. Here that is two passes over the whole uint8 batch: one multiply
that casts, permutes and scales, and one subtract, with per-channel constants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from burnlike.data.batch import TensorBatch
from burnlike.data.dataset.vision import (
    Annotation,
    ImageDatasetItem,
    ImageItems,
    Label,
    MultiLabel,
    SegmentationMask,
)

__all__ = ["CIFAR10_MEAN", "CIFAR10_STD", "IMAGENET_MEAN", "IMAGENET_STD", "ImageBatch", "ImageBatcher"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
"""ImageNet's per-channel (RGB) mean, for `ImageBatcher(mean=...)` with pretrained torchvision models."""
IMAGENET_STD = (0.229, 0.224, 0.225)
"""ImageNet's per-channel (RGB) standard deviation."""
CIFAR10_MEAN = (0.4914, 0.48216, 0.44653)
"""CIFAR-10's per-channel (RGB) mean, as Burn's example normalises."""
CIFAR10_STD = (0.24703, 0.24349, 0.26159)
"""CIFAR-10's per-channel (RGB) standard deviation, as Burn's example normalises."""
_RANGE = {torch.uint8: 255.0, torch.uint16: 65535.0}  # full scale of each depth (floats: 1)


@dataclasses.dataclass
class ImageBatch(TensorBatch):
    """`images` float32 `[B, C, H, W]`; `targets` int64 `[B]` (labels), `[B, classes]` (multi-hot)
    or `[B, H, W]` (segmentation masks); `image_paths` for tracing a sample back to its file."""

    images: Tensor  # float32 [B, C, H, W], normalised
    targets: Tensor  # int64: [B] labels, [B, classes] multi-hot or [B, H, W] masks
    image_paths: list[str]  # each image's file


class ImageBatcher:
    """`(x / full_scale - mean) / std` per channel; `mean`/`std` of one value apply to every channel.

    `num_classes` is needed for multi-label annotations (the width of the multi-hot targets).

    Args:
        mean: Per-channel means, on the 0-1 scale (one value: every channel).
        std: Per-channel standard deviations, > 0.
        num_classes: The number of classes, for multi-hot targets (None: not multi-label).

    Attributes:
        mean: Per-channel means.
        std: Per-channel standard deviations.
        num_classes: The width of multi-hot targets (None: not multi-label).

    Raises:
        ValueError: `mean` and `std` of different lengths, or a std <= 0.
    """

    def __init__(self, mean: Sequence[float] = (0.0,), std: Sequence[float] = (1.0,),
                 num_classes: int | None = None) -> None:
        self.mean = [float(m) for m in mean]
        self.std = [float(s) for s in std]
        if not self.mean or len(self.mean) != len(self.std):
            raise ValueError(f"mean and std need the same number of values (one, or one per channel), "
                             f"got {self.mean} and {self.std}")
        if any(s <= 0 for s in self.std):
            raise ValueError(f"std values must be > 0, got {self.std}")
        self.num_classes = num_classes

    def _stack(self, items: list[ImageDatasetItem]) -> Tensor:
        first = items[0]
        for item in items[1:]:
            if item.image.shape != first.image.shape:
                raise ValueError(
                    f"images of different sizes in one batch: {first.image_path} is "
                    f"{_shape(first.image)}, {item.image_path} is {_shape(item.image)}; resize them to one size "
                    "(ImageFolderDataset(..., size=(H, W)), data.size=[H,W] in the app)")
            if item.image.dtype != first.image.dtype:
                raise ValueError(f"images of different depths in one batch: {first.image_path} is "
                                 f"{first.image.dtype}, {item.image_path} is {item.image.dtype}")
        return torch.stack([item.image for item in items])

    def normalise(self, images: Tensor) -> Tensor:
        """`[B, H, W, C]` pixels of any depth -> normalised float32 `[B, C, H, W]`.

        Args:
            images: The pixels (uint8, uint16 or float).

        Raises:
            ValueError: `mean`/`std` have neither one value nor one per channel.
        """
        channels = images.shape[-1]
        if len(self.mean) not in (1, channels):
            raise ValueError(f"mean/std have {len(self.mean)} values but the images have {channels} channels")
        full_scale = _RANGE.get(images.dtype, 1.0)
        std = np.broadcast_to(np.asarray(self.std, dtype=np.float32), (channels,))
        scale = (1.0 / (full_scale * std)).astype(np.float32).reshape(1, -1, 1, 1)
        shift = (np.asarray(self.mean, dtype=np.float32) / std).astype(np.float32).reshape(1, -1, 1, 1)
        if images.device.type != "cpu":
            x = images.permute(0, 3, 1, 2).float()
            return x.mul_(torch.from_numpy(scale).to(x.device)).sub_(torch.from_numpy(shift).to(x.device))
        # numpy: one single-threaded pass that casts and transposes; torch's thread pool costs more
        # than the work at these sizes (and much more on a busy machine)
        out = np.empty((images.shape[0], channels, *images.shape[1:3]), dtype=np.float32)
        np.multiply(_numpy(images).transpose(0, 3, 1, 2), scale, out=out)
        out -= shift
        return torch.from_numpy(out)

    def targets(self, annotations: Sequence[Annotation]) -> Tensor:
        """The targets of the batch's annotations: labels, multi-hot rows or masks.

        Args:
            annotations: One per image, all of one kind.

        Raises:
            ValueError: Mixed kinds, multi-label without `num_classes`, or bounding boxes.
        """
        kinds = {type(a) for a in annotations}
        if len(kinds) != 1:
            raise ValueError(f"one batch mixes annotation kinds {sorted(k.__name__ for k in kinds)}")
        kind = kinds.pop()
        if kind is Label:
            return torch.tensor([a.label for a in annotations], dtype=torch.int64)  # type: ignore[attr-defined]
        if kind is MultiLabel:
            if self.num_classes is None:
                raise ValueError("multi-label targets need ImageBatcher(num_classes=...)")
            hot = torch.zeros((len(annotations), self.num_classes), dtype=torch.int64)
            for row, a in enumerate(annotations):
                hot[row, a.labels] = 1  # type: ignore[attr-defined]
            return hot
        if kind is SegmentationMask:
            return torch.stack([a.mask for a in annotations])  # type: ignore[attr-defined]
        raise ValueError(f"unsupported annotation {kind.__name__}")

    def batch(self, items: ImageItems | list[ImageDatasetItem], device: Any = None) -> ImageBatch:
        """The normalised images, their targets and files.

        Args:
            items: The items, or the dataset's batched fetch.
            device: Where the batch goes (None: where the images are).

        Raises:
            ValueError: No item, or images of different sizes or depths.
        """
        if isinstance(items, ImageItems):
            images, annotations, paths = items.images, items.annotations, items.image_paths
        else:
            if not items:
                raise ValueError("cannot batch zero images")
            images = self._stack(items)
            annotations, paths = [i.annotation for i in items], [i.image_path for i in items]
        batch = ImageBatch(self.normalise(images), self.targets(annotations), list(paths))
        return batch.to(device) if device is not None else batch


def _numpy(images: Tensor) -> np.ndarray:
    if images.dtype == torch.uint16:  # numpy has uint16, but torch's .numpy() may not take it
        return images.view(torch.int16).numpy().view(np.uint16)
    return images.numpy()


def _shape(image: Tensor) -> str:
    return f"{image.shape[1]}x{image.shape[0]} ({image.shape[2]} channels)"
