"""Samples/s of one MNIST training epoch (batch 64, shuffled, num_workers=0), in one process:

- burnlike: MnistDataset + MnistBatcher through DataLoaderBuilder (uint8 until the batch, one
  gather and one normalisation per batch);
- torchvision's default: datasets.MNIST + ToTensor + Normalize in a plain DataLoader (a PIL image
  and a tensor per sample, then default_collate).

burnlike is timed over whole epochs; torchvision over its first `--limit` batches (samples/s is a
rate, so the whole-epoch time is extrapolated from it). Before timing, both pipelines are checked to
give the same normalised images for the same indices.

    python benchmarks/data_pipeline.py [--root DATA] [--limit BATCHES] [--repeats N]
    python benchmarks/data_pipeline.py --image-folder [--root DIR] ...   # see benchmarks/image_folder.py
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader

from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset, data_root

NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
BATCH = 64


def samples_per_s(loader: Iterable[Any], limit: int | None = None) -> float:
    n = 0
    start = time.perf_counter()
    for i, batch in enumerate(loader):
        if limit is not None and i >= limit:
            break
        n += len(batch.targets) if hasattr(batch, "targets") else len(batch[1])
    return n / (time.perf_counter() - start)


def torchvision_root(root: Path, scratch: Path) -> Path:
    """torchvision only reads the uncompressed files (offline); decompress .gz ones into scratch."""
    raw = root / "MNIST" / "raw"
    if all((raw / n).is_file() for n in NAMES):
        return root
    out = scratch / "MNIST" / "raw"
    out.mkdir(parents=True)
    for name in NAMES:
        if (raw / name).is_file():
            shutil.copyfile(raw / name, out / name)
        else:
            with gzip.open(raw / f"{name}.gz") as src, open(out / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return scratch


def main() -> None:
    if "--image-folder" in sys.argv[1:]:  # the image-folder benchmark, with the remaining arguments
        from image_folder import main as image_folder

        image_folder([a for a in sys.argv[1:] if a != "--image-folder"])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image-folder", action="store_true",
                        help="benchmark ImageFolderDataset against torchvision instead (benchmarks/image_folder.py)")
    parser.add_argument("--root", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--limit", type=int, default=300, help="batches timed for torchvision (it is slow)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many timings, each side")
    args = parser.parse_args()
    from torchvision import datasets, transforms

    root = data_root(args.root)
    start = time.perf_counter()
    dataset = MnistDataset.train(root)
    load_s = time.perf_counter() - start
    ours = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).shuffle(42).num_workers(0).build(dataset)
    with tempfile.TemporaryDirectory() as scratch:
        tv_dataset = datasets.MNIST(
            str(torchvision_root(root, Path(scratch))), train=True, download=False,
            transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))]),
        )
        tv = DataLoader(tv_dataset, batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(42))

        # Same work: identical normalised pixels and labels for the same indices.
        idx = [0, 1, 59999, 12345]
        mine = MnistBatcher().batch(dataset.__getitems__(idx))
        theirs = torch.stack([tv_dataset[i][0][0] for i in idx])
        assert torch.allclose(mine.images, theirs, atol=1e-5), "pipelines disagree on pixel values"
        assert mine.targets.tolist() == [tv_dataset[i][1] for i in idx], "pipelines disagree on labels"

        samples_per_s(ours, 20)  # warm-up: first-call allocations and imports
        samples_per_s(tv, 5)
        burn_rates, tv_rates = [], []
        for _ in range(args.repeats):  # interleaved, so load from other processes hits both sides
            burn_rates.append(samples_per_s(ours))
            tv_rates.append(samples_per_s(tv, args.limit))
    b, t = max(burn_rates), max(tv_rates)
    n = len(dataset)
    print(f"MNIST train ({n} samples), batch {BATCH}, shuffled, num_workers=0, "
          f"{torch.get_num_threads()} torch threads, best of {args.repeats}")
    print(f"burnlike parses the four-file split in {load_s:.2f} s (gzip IDX, whole-file)")
    print(f"{'pipeline':<44} {'samples/s':>12} {'epoch s':>9}")
    print(f"{'burnlike MnistDataset + MnistBatcher':<44} {b:12,.0f} {n / b:9.2f}")
    print(f"{'torchvision MNIST + ToTensor + Normalize':<44} {t:12,.0f} {n / t:9.2f}  "
          f"({args.limit} batches, epoch extrapolated)")
    print(f"ratio: {b / t:.0f}x (target >= 100x)")


if __name__ == "__main__":
    main()
