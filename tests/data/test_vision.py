"""`burnlike.data.vision`: `ImageBatcher` and `ImageBatch`. The batcher normalises images of any
depth (uint8, uint16, float already in [0, 1]) with a per-channel mean and std, on the device the
images are on; turns labels, multi-labels (multi-hot) and masks into targets; refuses, naming the
values and the files, what it cannot batch (sizes or depths that differ, mixed annotation kinds);
and puts the batch, image paths along, on the device asked for."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from burnlike.data import DataLoaderBuilder, ImageBatch, ImageBatcher
from burnlike.data.dataset import Annotation, ImageFolderDataset, Label, MultiLabel
from burnlike.data.dataset.vision import ImageDatasetItem
from tests.helpers.expect import raises_exactly
from tests.helpers.images import pixels


def image_item(shape, dtype=torch.uint8, path="a.png", label=0) -> ImageDatasetItem:
    """An item of zeros of `shape` ([H, W, C]) built in memory, no file behind it."""
    return ImageDatasetItem(torch.zeros(shape, dtype=dtype), shape[1], shape[0], Label(label), path)


def items_from_files(tmp_path: Path, shapes: list[tuple[int, int]], channels: int = 3) -> list[ImageDatasetItem]:
    """One PNG per `(height, width)` written under `tmp_path`, read back as items of one class."""
    paths = []
    for i, (h, w) in enumerate(shapes):
        array = pixels(i, i, size=max(h, w), channels=channels)[:h, :w]
        path = tmp_path / f"{i}.png"
        Image.fromarray(array[:, :, 0] if channels == 1 else array).save(path)
        paths.append((path, "c"))
    ds = ImageFolderDataset.new_classification_with_items(paths, ["c"])
    return [ds.get(i) for i in range(ds.len())]


# --- normalising --------------------------------------------------------------------------------------------
def test_normalise_applies_mean_and_std_per_channel_at_every_depth():
    batcher = ImageBatcher(mean=(0.5, 0.25, 0.0), std=(0.5, 0.25, 2.0))
    u8 = torch.tensor([[[[255, 0, 51]]]], dtype=torch.uint8)  # [B=1, H=1, W=1, C=3]
    out = batcher.normalise(u8)
    assert out.shape == (1, 3, 1, 1) and out.dtype == torch.float32
    assert torch.allclose(out.flatten(), torch.tensor([1.0, -1.0, 0.1]), atol=1e-6)
    u16 = torch.tensor([[[[65535, 0, 13107]]]], dtype=torch.int32).to(torch.uint16)
    assert torch.allclose(batcher.normalise(u16).flatten(), torch.tensor([1.0, -1.0, 0.1]), atol=1e-6)
    floats = torch.tensor([[[[1.0, 0.0, 0.2]]]])  # float images are already in [0, 1]
    assert torch.allclose(batcher.normalise(floats).flatten(), torch.tensor([1.0, -1.0, 0.1]), atol=1e-6)
    one = ImageBatcher(mean=(0.5,), std=(0.25,)).normalise(torch.full((2, 2, 3, 4), 255, dtype=torch.uint8))
    assert one.shape == (2, 4, 2, 3) and torch.allclose(one, torch.full_like(one, 2.0))


def test_float_images_are_already_in_unit_range():
    images = torch.tensor([0.0, 0.5, 1.0]).reshape(1, 1, 3, 1)
    assert ImageBatcher(mean=(0.5,), std=(0.25,)).normalise(images).flatten().tolist() == [-2.0, 0.0, 2.0]


def test_images_on_a_gpu_are_normalised_there(fake_cuda):
    """The GPU path without a GPU (torch's fake CUDA tensors): shapes, dtype and devices checked as a
    GPU checks them, so a mean or std left on the CPU would be refused."""
    with fake_cuda:
        images = torch.empty(2, 4, 5, 3, dtype=torch.uint8, device="cuda")
        out = ImageBatcher(mean=(0.1, 0.2, 0.3), std=(0.5, 0.5, 0.5)).normalise(images)
    assert (out.device.type, out.dtype, tuple(out.shape)) == ("cuda", torch.float32, (2, 3, 4, 5))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_images_on_a_gpu_are_normalised_there_with_the_cpus_values():
    """Mean and std move to the images' device, with the values the CPU path gives."""
    images = torch.randint(0, 256, (2, 4, 5, 3), dtype=torch.uint8)
    batcher = ImageBatcher(mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 0.125))
    out = batcher.normalise(images.cuda())
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), batcher.normalise(images))



def test_images_normalised_on_the_cpu_come_out_contiguous():
    """`[B, C, H, W]` in row-major order however the `[B, H, W, C]` input was laid out, so a model's
    `x.view(B, -1)` works on the batch."""
    images = torch.arange(2 * 4 * 5 * 3, dtype=torch.int64).to(torch.uint8).reshape(2, 4, 5, 3)
    out = ImageBatcher(mean=(0.1, 0.2, 0.3), std=(0.5, 0.5, 0.5)).normalise(images)
    assert out.is_contiguous() and out.view(2, -1).shape == (2, 60)


def test_labels_held_as_numpy_integers_give_int64_targets():
    """Labels often come from numpy arrays (int32, uint8): the targets are int64 whatever their type,
    as cross-entropy losses want."""
    targets = ImageBatcher().targets([Label(np.int32(3)), Label(np.uint8(1))])
    assert targets.dtype == torch.int64 and targets.tolist() == [3, 1]


# --- batches and their device -------------------------------------------------------------------------------
def test_image_batch_goes_to_the_device_asked_for(tmp_path):
    items = items_from_files(tmp_path, [(2, 3), (2, 3)])
    here = ImageBatcher().batch(items)
    assert here.images.device.type == "cpu" and here.targets.tolist() == [0, 0]
    moved = ImageBatcher().batch(items, device="meta")
    assert moved.images.device.type == "meta" and moved.targets.device.type == "meta"
    assert moved.image_paths == [i.image_path for i in items]


def test_loader_yields_image_batches_that_move_with_their_paths(image_tree):
    ds = ImageFolderDataset.new_classification(image_tree)
    loader = DataLoaderBuilder(ImageBatcher()).batch_size(4).shuffle(3).num_workers(0).build(ds)
    batches = list(loader)
    assert all(isinstance(b, ImageBatch) for b in batches) and [len(b.targets) for b in batches] == [4, 4, 4, 3]
    assert sorted(torch.cat([b.targets for b in batches]).tolist()) == [0] * 5 + [1] * 5 + [2] * 5
    moved = batches[0].to("meta")
    assert moved.images.device.type == "meta" and moved.image_paths == batches[0].image_paths


# --- refusals -----------------------------------------------------------------------------------------------
def test_image_batcher_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match=r"^mean and std need the same number of values \(one, or one per channel\), "
                                         r"got \[0.1, 0.2\] and \[1.0\]$"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0,))
    with pytest.raises(ValueError, match=r"^std values must be > 0, got \[1.0, 0.0\]$"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0, 0.0))
    with raises_exactly(ValueError, "std values must be > 0, got [1.0, 0.0]"):
        ImageBatcher(mean=(0.0, 0.0), std=(1.0, 0.0))
    with pytest.raises(ValueError, match=r"^mean/std have 2 values but the images have 3 channels$"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0, 1.0)).normalise(torch.zeros((1, 2, 2, 3), dtype=torch.uint8))
    batcher = ImageBatcher()
    with pytest.raises(ValueError, match=r"^cannot batch zero images$"):
        batcher.batch([])
    a, b = items_from_files(tmp_path, [(2, 5), (3, 5)])
    with pytest.raises(ValueError, match=rf"^images of different sizes in one batch: {re.escape(a.image_path)} is "
                                         rf"5x2 \(3 channels\), {re.escape(b.image_path)} is 5x3 \(3 channels\); "
                                         r"resize them to one size \(ImageFolderDataset\(\.\.\., size=\(H, W\)\), "
                                         r"data\.size=\[H,W\] in the app\)$"):
        batcher.batch([a, b])
    with raises_exactly(ValueError, "images of different sizes in one batch: a.png is 2x3 (1 channels), b.png is "
                                    "2x4 (1 channels); resize them to one size (ImageFolderDataset(..., size=(H, W)), "
                                    "data.size=[H,W] in the app)"):
        batcher.batch([image_item((3, 2, 1)), image_item((4, 2, 1), path="b.png")])
    deep = dataclasses.replace(a, image=a.image.to(torch.int32).to(torch.uint16))
    with pytest.raises(ValueError, match=rf"^images of different depths in one batch: {re.escape(a.image_path)} is "
                                         rf"torch.uint8, {re.escape(a.image_path)} is torch.uint16$"):
        batcher.batch([a, deep])
    with raises_exactly(ValueError, "images of different depths in one batch: a.png is torch.uint8, b.png is "
                                    "torch.float32"):
        batcher.batch([image_item((3, 2, 1)), image_item((3, 2, 1), torch.float32, "b.png")])
    with pytest.raises(ValueError, match=r"^one batch mixes annotation kinds \['Label', 'MultiLabel'\]$"):
        batcher.targets([Label(0), MultiLabel([1])])
    mixed = [image_item((2, 2, 1)), image_item((2, 2, 1))]
    mixed[1].annotation = MultiLabel([0])
    with raises_exactly(ValueError, "one batch mixes annotation kinds ['Label', 'MultiLabel']"):
        ImageBatcher(num_classes=2).batch(mixed)
    with pytest.raises(ValueError, match=r"^multi-label targets need ImageBatcher\(num_classes=\.\.\.\)$"):
        batcher.targets([MultiLabel([1])])

    class Box(Annotation):
        pass

    with pytest.raises(ValueError, match=r"^unsupported annotation Box$"):
        batcher.targets([Box()])
    hot = ImageBatcher(num_classes=3).targets([MultiLabel([0, 2]), MultiLabel([])])
    assert hot.dtype == torch.int64 and hot.tolist() == [[1, 0, 1], [0, 0, 0]]


def test_normalise_takes_mean_and_std_as_float32_as_burns_f32_config_does():
    """The scale and shift come from the float32 values of mean and std (what a Burn config's f32 fields
    hold): computed from their float64 values, MNIST's 0.1307 and 0.3081 round to other float32 batches."""
    images = torch.arange(256, dtype=torch.uint8).reshape(1, 16, 16, 1)
    mean, std = torch.tensor(0.1307), torch.tensor(0.3081)  # float32
    expected = images.permute(0, 3, 1, 2).float() * (1.0 / (255.0 * std)) - mean / std
    assert torch.equal(ImageBatcher(mean=(0.1307,), std=(0.3081,)).normalise(images), expected)
