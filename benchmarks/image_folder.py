"""Samples/s of an image-folder epoch (batch 64, shuffled, num_workers=0), in one process:

- burnlike: ImageFolderDataset + ImageBatcher through DataLoaderBuilder (a batch decoded into one
  uint8 array, normalised in one pass; 8-bit PNGs decoded by the "auto" path);
- torchvision: datasets.ImageFolder + ToTensor in a plain DataLoader (a PIL image and a float
  tensor per sample, then default_collate).

The tree is generated (1,000 CIFAR-sized PNGs in 10 classes: smooth class-coloured shapes plus
noise) unless --root names one. Before timing, both pipelines are checked to give the same pixels
and labels for every file. Epochs are interleaved (ours, theirs, ours, ...) so load from other
processes hits both; the best and the median of --repeats epochs are printed.

    python benchmarks/image_folder.py [--root DIR] [--images 1000] [--size 32] [--repeats 5]
    python benchmarks/data_pipeline.py --image-folder      # the same
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from burnlike.data import DataLoaderBuilder, ImageBatcher
from burnlike.data.dataset import ImageFolderDataset
from burnlike.data.vision import IMAGENET_MEAN, IMAGENET_STD

BATCH = 64


def generate(root: Path, images: int, size: int, classes: int = 10, seed: int = 0) -> None:
    from PIL import Image

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    for i in range(images):
        label = i % classes
        colour = np.array([(label * 37) % 256, (label * 91) % 256, (label * 53) % 256], dtype=np.float64)
        shade = (0.5 + 0.5 * np.sin(6 * (xx * np.cos(label) + yy * np.sin(label))))[:, :, None]
        image = colour * shade + rng.normal(0, 12, (size, size, 3)) + 40
        folder = root / f"class{label:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image.clip(0, 255).astype(np.uint8)).save(folder / f"{i:05d}.png")


def samples_per_s(loader: Iterable[Any]) -> float:
    n = 0
    start = time.perf_counter()
    for batch in loader:
        n += len(batch.targets) if hasattr(batch, "targets") else len(batch[1])
    return n / (time.perf_counter() - start)


def check_same_work(ours: ImageFolderDataset, theirs: Any) -> None:
    """Every file: the same label, and the same pixels (ours un-normalised vs ToTensor's)."""
    assert ours.classes == theirs.classes, "class lists differ"
    index = {path: i for i, (path, _) in enumerate(theirs.samples)}
    assert sorted(index) == sorted(raw.path for raw in ours.items), "file lists differ"
    plain = ImageBatcher()  # mean 0, std 1: x / 255, what ToTensor gives
    for start in range(0, ours.len(), BATCH):
        batch = plain.batch(ours.__getitems__(list(range(start, min(start + BATCH, ours.len())))))
        pairs = [theirs[index[path]] for path in batch.image_paths]
        assert torch.allclose(batch.images, torch.stack([x for x, _ in pairs]), atol=1e-6), "pixels differ"
        assert batch.targets.tolist() == [y for _, y in pairs], "labels differ"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=None, help="an image folder to read (default: generate one)")
    parser.add_argument("--images", type=int, default=1000, help="images to generate")
    parser.add_argument("--size", type=int, default=32, help="side of the generated images")
    parser.add_argument("--repeats", type=int, default=5, help="timed epochs, each side")
    args = parser.parse_args(argv)
    from torchvision import datasets, transforms

    with tempfile.TemporaryDirectory() as scratch:
        root = args.root
        if root is None:
            root = Path(scratch)
            generate(root, args.images, args.size)
        pipelines = {}
        for decoder in ("auto", "pil"):
            dataset = ImageFolderDataset.new_classification(root, decoder=decoder)
            pipelines[f"burnlike ImageFolderDataset ({decoder}) + ImageBatcher"] = (
                DataLoaderBuilder(ImageBatcher(IMAGENET_MEAN, IMAGENET_STD)).batch_size(BATCH).shuffle(42)
                .num_workers(0).build(dataset))
        tv_dataset = datasets.ImageFolder(str(root), transform=transforms.ToTensor())
        pipelines["torchvision ImageFolder + ToTensor"] = DataLoader(
            tv_dataset, batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(42), num_workers=0)
        ours = ImageFolderDataset.new_classification(root)
        check_same_work(ours, tv_dataset)
        shape = tuple(ours.get(0).image.shape)

        for loader in pipelines.values():  # warm-up: imports, first allocations, the page cache
            samples_per_s(loader)
        rates: dict[str, list[float]] = {name: [] for name in pipelines}
        for _ in range(args.repeats):
            for name, loader in pipelines.items():
                rates[name].append(samples_per_s(loader))
    print(f"{ours.len()} images ({ours.num_classes()} classes, HWC {shape}), batch {BATCH}, "
          f"shuffled, num_workers=0, {torch.get_num_threads()} torch threads; pixels and labels checked equal")
    baseline = "torchvision ImageFolder + ToTensor"
    print(f"{'pipeline':<52} {'best/s':>9} {'median/s':>9} {'x best':>7} {'x median':>9}")
    for name, values in rates.items():
        best, median = max(values), statistics.median(values)
        print(f"{name:<52} {best:9,.0f} {median:9,.0f} {best / max(rates[baseline]):7.2f} "
              f"{median / statistics.median(rates[baseline]):9.2f}")
    print(f"target: burnlike (auto) >= 3x torchvision, best of {args.repeats} interleaved epochs")


if __name__ == "__main__":
    main()
