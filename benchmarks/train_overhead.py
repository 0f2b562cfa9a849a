"""Epoch time of the guide model three ways, in one process, on the same data loader:

1. a raw PyTorch loop (forward, loss, backward, Adam step, running loss/accuracy on device),
2. a hand-written LightningModule (the usual `self.log` of loss and accuracy each step),
3. burnlike (`LearnerBuilder` with Accuracy and Loss metrics, progress bar on, as in the guide).

Runs are interleaved and repeated; the median of each is compared with the raw loop's.

    python benchmarks/train_overhead.py [--root DATA] [--repeats 3] [--limit BATCHES]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable

import lightning as L
import torch
from torch import nn

import burnlike
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import Model, ModelConfig
from burnlike.optim import AdamConfig
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric

LR = 1e-4


def make_loader(dataset: MnistDataset, seed: int) -> torch.utils.data.DataLoader:
    return DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(seed).num_workers(0).build(dataset)


def fresh_model() -> Model:
    burnlike.seed(42)
    return ModelConfig(10, 512).init("cpu")


def raw_loop(loader: torch.utils.data.DataLoader, limit: int | None) -> float:
    model = fresh_model()
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
    model.train()
    loss_sum = torch.zeros(())
    correct = torch.zeros((), dtype=torch.long)
    start = time.perf_counter()
    for i, batch in enumerate(loader):
        if limit is not None and i >= limit:
            break
        output = model(batch.images)
        loss = nn.functional.cross_entropy(output, batch.targets)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        loss_sum += loss.detach()
        correct += (output.argmax(-1) == batch.targets).sum()
    float(loss_sum), int(correct)  # the one host sync at the end
    return time.perf_counter() - start


class HandWritten(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.model = fresh_model()

    def training_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
        output = self.model(batch.images)
        loss = nn.functional.cross_entropy(output, batch.targets)
        acc = (output.argmax(-1) == batch.targets).float().mean() * 100
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/acc", acc, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=LR, eps=1e-5)


def trainer_kwargs(limit: int | None) -> dict:
    return {"limit_train_batches": limit} if limit else {}


def lightning_module(loader: torch.utils.data.DataLoader, limit: int | None) -> float:
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_model_summary=False, num_sanity_val_steps=0, **trainer_kwargs(limit))
    module = HandWritten()
    start = time.perf_counter()
    trainer.fit(module, loader)
    return time.perf_counter() - start


def burnlike_learner(loader: torch.utils.data.DataLoader, limit: int | None) -> float:
    with tempfile.TemporaryDirectory() as artifact_dir:
        learner = (
            LearnerBuilder(artifact_dir)
            .metric_train_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric())
            .devices(["cpu"])
            .num_epochs(1)
            .trainer_kwargs(**trainer_kwargs(limit))
            .build(fresh_model(), AdamConfig().init(), LR)
        )
        start = time.perf_counter()
        learner.fit(loader)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="train batches per epoch (default: all 938)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    dataset = MnistDataset.train(args.root)
    ways: dict[str, Callable[[torch.utils.data.DataLoader, int | None], float]] = {
        "raw PyTorch loop": raw_loop,
        "hand-written LightningModule": lightning_module,
        "burnlike Learner": burnlike_learner,
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    raw_loop(make_loader(dataset, 0), 20)  # warm-up: allocator, kernels
    for rep in range(args.repeats):
        order = list(ways) if rep % 2 == 0 else list(reversed(ways))
        for name in order:
            times[name].append(ways[name](make_loader(dataset, 42), args.limit))
    base = statistics.median(times["raw PyTorch loop"])
    batches = args.limit or len(make_loader(dataset, 0))
    print(f"\nguide model, MNIST train epoch ({batches} batches of 64), {args.threads} threads, "
          f"median of {args.repeats}")
    print(f"{'way':<30} {'epoch s':>8} {'vs raw':>7}   runs")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:<30} {med:8.2f} {med / base:7.3f}x  {' '.join(f'{v:.2f}' for v in values)}")


if __name__ == "__main__":
    main()
