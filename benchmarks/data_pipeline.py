"""Samples/s of one MNIST training epoch (batch 64, shuffled, no workers), in one process:

- burnlike: MnistDataset + MnistBatcher through DataLoaderBuilder (uint8 until the batch, one
  fancy-index and one normalisation per batch);
- torchvision's default: datasets.MNIST + ToTensor + Normalize in a plain DataLoader (PIL per sample).

    python benchmarks/data_pipeline.py [--root DATA] [--limit BATCHES_FOR_TORCHVISION]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset, data_root

NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def samples_per_s(loader: DataLoader, limit: int | None = None) -> float:
    n = 0
    start = time.perf_counter()
    for i, batch in enumerate(loader):
        if limit is not None and i >= limit:
            break
        n += len(batch.targets) if hasattr(batch, "targets") else len(batch[1])
    return n / (time.perf_counter() - start)


def torchvision_root(root: Path, scratch: Path) -> Path:
    """torchvision reads uncompressed files from <root>/MNIST/raw; decompress into scratch if needed."""
    raw = root / "MNIST" / "raw"
    if all((raw / n).is_file() for n in NAMES):
        return root
    out = scratch / "MNIST" / "raw"
    out.mkdir(parents=True)
    for name in NAMES:
        with gzip.open(raw / f"{name}.gz") as src, open(out / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return scratch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--limit", type=int, default=300, help="batches timed for torchvision (it is slow)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from torchvision import datasets, transforms

    root = data_root(args.root)
    dataset = MnistDataset.train(root)
    ours = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(0).build(dataset)
    with tempfile.TemporaryDirectory() as scratch:
        tv_dataset = datasets.MNIST(
            str(torchvision_root(root, Path(scratch))), train=True, download=False,
            transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))]),
        )
        tv = DataLoader(tv_dataset, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(42))
        burn_rates, tv_rates = [], []
        for _ in range(args.repeats):
            burn_rates.append(samples_per_s(ours))
            tv_rates.append(samples_per_s(tv, args.limit))
    b, t = max(burn_rates), max(tv_rates)
    print(f"MNIST train epoch, batch 64, shuffled, num_workers=0, {torch.get_num_threads()} threads, best of {args.repeats}")
    print(f"{'pipeline':<44} {'samples/s':>12}")
    print(f"{'burnlike MnistDataset + MnistBatcher':<44} {b:12,.0f}")
    print(f"{'torchvision MNIST + ToTensor + Normalize':<44} {t:12,.0f}")
    print(f"ratio: {b / t:.0f}x")


if __name__ == "__main__":
    main()
