"""Epoch time of the guide model three ways, in one process, on the same data loader:

1. a raw PyTorch loop (forward, loss, backward, Adam step, running loss/accuracy on device),
2. a hand-written LightningModule (the usual `self.log` of loss and accuracy each step),
3. burnlike (`LearnerBuilder` with Accuracy and Loss metrics, progress bar on, as in the guide).

Runs are interleaved and repeated; the median of each is compared with the raw loop's. Each run
reports wall time and process CPU time (all threads, user+sys): on a shared VM the wall clock
includes time the host steals from this guest (reported too), CPU time does not, so the CPU-time
ratio is the stable one; both are printed.

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


def steal_seconds() -> float:
    """Time the hypervisor ran other guests on our CPUs (Linux /proc/stat 'steal'), in seconds."""
    try:
        fields = open("/proc/stat").readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Clock:
    def __init__(self) -> None:
        self.wall, self.cpu, self.steal = time.perf_counter(), time.process_time(), steal_seconds()

    def stop(self) -> tuple[float, float, float]:
        return (time.perf_counter() - self.wall, time.process_time() - self.cpu, steal_seconds() - self.steal)


def make_loader(dataset: MnistDataset, seed: int) -> torch.utils.data.DataLoader:
    return DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(seed).num_workers(0).build(dataset)


def fresh_model() -> Model:
    burnlike.seed(42)
    return ModelConfig(10, 512).init("cpu")


def raw_loop(loader: torch.utils.data.DataLoader, limit: int | None) -> tuple[float, float, float]:
    model = fresh_model()
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
    model.train()
    loss_sum = torch.zeros(())
    correct = torch.zeros((), dtype=torch.long)
    start = Clock()
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
    return start.stop()


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


def lightning_module(loader: torch.utils.data.DataLoader, limit: int | None) -> tuple[float, float, float]:
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_model_summary=False, num_sanity_val_steps=0, **trainer_kwargs(limit))
    module = HandWritten()
    start = Clock()
    trainer.fit(module, loader)
    return start.stop()


def burnlike_learner(loader: torch.utils.data.DataLoader, limit: int | None) -> tuple[float, float, float]:
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
        start = Clock()
        learner.fit(loader)
        return start.stop()


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
    ways: dict[str, Callable[[torch.utils.data.DataLoader, int | None], tuple[float, float, float]]] = {
        "raw PyTorch loop": raw_loop,
        "hand-written LightningModule": lightning_module,
        "burnlike Learner": burnlike_learner,
    }
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
    raw_loop(make_loader(dataset, 0), 20)  # warm-up: allocator, kernels
    for rep in range(args.repeats):
        order = list(ways) if rep % 2 == 0 else list(reversed(ways))
        for name in order:
            times[name].append(ways[name](make_loader(dataset, 42), args.limit))
    batches = args.limit or len(make_loader(dataset, 0))
    base_wall = statistics.median(t[0] for t in times["raw PyTorch loop"])
    base_cpu = statistics.median(t[1] for t in times["raw PyTorch loop"])
    print(f"\nguide model, MNIST train epoch ({batches} batches of 64), {args.threads} threads, "
          f"median of {args.repeats} interleaved runs")
    print(f"{'way':<30} {'wall s':>7} {'vs raw':>7} {'cpu s':>7} {'vs raw':>7} {'stolen s':>9}")
    for name, runs in times.items():
        wall = statistics.median(t[0] for t in runs)
        cpu = statistics.median(t[1] for t in runs)
        steal = statistics.median(t[2] for t in runs)
        print(f"{name:<30} {wall:7.2f} {wall / base_wall:6.3f}x {cpu:7.2f} {cpu / base_cpu:6.3f}x {steal:9.2f}")


if __name__ == "__main__":
    main()
