"""Issue 10's table from one process: the guide model's MNIST train epoch (batch 64), seven ways.

1. raw eager loop, host batches moved to the GPU each step
2. raw eager loop, batches already on the GPU (`DataLoaderBuilder.on_device`)
3. same + `torch.optim.Adam(fused=True)`
4. raw loop with the whole step (forward, backward, Adam) captured in one CUDA graph
5. Lightning `Trainer(barebones=True)`, a minimal module
6. burnlike, default path (progress bar off)
7. burnlike fast path (`LearnerBuilder.cuda_graph()` + `on_device`)

Every row runs one warm-up epoch, then `--repeats` timed epochs (median; GPU synchronised at both
ends); ratios are against row 1. Then ResNet-18 on CIFAR-sized batches (256×3×32×32): steady-state
time per step, raw loop vs burnlike's `fit()`, with burnlike's setup (fit's start to its first
step) reported apart. Without CUDA it exits with a message; `--device cpu` smoke-tests the script.

    python benchmarks/gpu.py [--root DATA] [--repeats 2] [--items N] [--resnet-steps 100]
    python benchmarks/gpu.py --device cpu --items 640 --repeats 1 --resnet-steps 4 --resnet-batch 8
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import lightning as L
import torch
from torch import nn
from torch.utils.data import Subset

import burnlike
from burnlike.data import DataLoaderBuilder, MnistBatch, MnistBatcher, MnistDataset
from burnlike.models.mnist import Model, ModelConfig
from burnlike.optim import AdamConfig
from burnlike.train import ClassificationOutput, LearnerBuilder, TrainOutput, backward
from burnlike.train.metric import AccuracyMetric, LossMetric

LR = 1e-4
BATCH = 64


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_epochs(run_epoch: Callable[[], None], repeats: int, device: torch.device) -> float:
    """Median seconds of `repeats` epochs after one warm-up epoch."""
    run_epoch()
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        run_epoch()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def guide_model(device: torch.device) -> Model:
    burnlike.seed(42)
    return ModelConfig(10, 512).init().to(device)


# Raw loops --------------------------------------------------------------------------------------------
def raw_eager(loader: Iterable[MnistBatch], device: torch.device, fused: bool = False) -> Callable[[], None]:
    model = guide_model(device)
    opt = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5, fused=fused or None)

    def epoch() -> None:
        for batch in loader:
            x, y = batch.images.to(device, non_blocking=True), batch.targets.to(device, non_blocking=True)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    return epoch


def raw_graph(loader: Iterable[MnistBatch], device: torch.device) -> Callable[[], None]:
    """The whole step in one CUDA graph (torch's recipe); the short last batch runs eagerly."""
    model = guide_model(device)
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(LR, device=device), eps=1e-5, capturable=True)
    first = next(iter(loader))
    static_x, static_y = first.images.clone(), first.targets.clone()

    def step() -> None:
        loss = nn.functional.cross_entropy(model(static_x), static_y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up (real steps on the first batch, as torch's recipe)
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()

    def epoch() -> None:
        for batch in loader:
            if batch.images.shape != static_x.shape:
                loss = nn.functional.cross_entropy(model(batch.images), batch.targets)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=False)
                continue
            static_x.copy_(batch.images, non_blocking=True)
            static_y.copy_(batch.targets, non_blocking=True)
            graph.replay()

    return epoch


# Lightning ---------------------------------------------------------------------------------------------
class Minimal(L.LightningModule):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def training_step(self, batch: MnistBatch, batch_idx: int) -> torch.Tensor:
        return nn.functional.cross_entropy(self.model(batch.images), batch.targets)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=LR, eps=1e-5)


class EpochTimer(L.Callback):
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.times: list[float] = []
        self._start = 0.0

    def on_train_epoch_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        sync(self.device)
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        sync(self.device)
        self.times.append(time.perf_counter() - self._start)


def accelerator(device: torch.device) -> dict[str, Any]:
    return {"accelerator": "gpu", "devices": [device.index or 0]} if device.type == "cuda" else {
        "accelerator": "cpu", "devices": 1}


def barebones(loader: Iterable[MnistBatch], device: torch.device, repeats: int) -> float:
    timer = EpochTimer(device)
    trainer = L.Trainer(barebones=True, max_epochs=repeats + 1, callbacks=[timer], **accelerator(device))
    trainer.fit(Minimal(guide_model(device)), loader)
    return statistics.median(timer.times[1:])


def burnlike_fit(loader: Iterable[MnistBatch], device: torch.device, repeats: int, fast: bool) -> float:
    timer = EpochTimer(device)
    with tempfile.TemporaryDirectory() as tmp:
        builder = (LearnerBuilder(tmp).devices([device]).num_epochs(repeats + 1).progress_bar(False)
                   .metric_train_numeric(AccuracyMetric()).metric_train_numeric(LossMetric())
                   .with_application_logger(False).callback(timer))
        if fast:
            builder = builder.cuda_graph()
        builder.build(guide_model(device), AdamConfig(), LR).fit(loader)
    return statistics.median(timer.times[1:])


# ResNet-18 --------------------------------------------------------------------------------------------
class ResNetStep(nn.Module):
    """torchvision's ResNet-18 (10 classes) with Burn's train step."""

    def __init__(self) -> None:
        super().__init__()
        import torchvision

        self.net = torchvision.models.resnet18(num_classes=10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def train_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> TrainOutput[ClassificationOutput]:
        x, y = batch
        out = self.net(x)
        item = ClassificationOutput(nn.functional.cross_entropy(out, y), out, y)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> ClassificationOutput:
        x, y = batch
        out = self.net(x)
        return ClassificationOutput(nn.functional.cross_entropy(out, y), out, y)


class Batches:
    """One iterable of batches (Lightning reads a plain list as several loaders)."""

    def __init__(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Any:
        return iter(self.batches)


class StepTimer(L.Callback):
    """When the first step starts (setup ends) and the steady-state steps after `skip` take."""

    def __init__(self, device: torch.device, skip: int) -> None:
        self.device, self.skip = device, skip
        self.first_step = self.steady_start = self.end = 0.0
        self.steps = 0

    def on_train_batch_start(self, trainer: L.Trainer, module: L.LightningModule, batch: Any, idx: int) -> None:
        if idx == 0:
            self.first_step = time.perf_counter()
        if idx == self.skip:
            sync(self.device)
            self.steady_start = time.perf_counter()

    def on_train_batch_end(self, trainer: L.Trainer, module: L.LightningModule, out: Any, batch: Any, idx: int) -> None:
        self.steps = idx + 1
        if self.steps == trainer.num_training_batches:  # one sync at the end, as the raw loop (none per step)
            sync(self.device)
            self.end = time.perf_counter()


def resnet(device: torch.device, steps: int, batch: int, precision: str) -> tuple[float, float, float]:
    """(raw s/step, burnlike s/step, burnlike setup s), steady state after 10 warm-up steps."""
    skip = min(10, steps // 2)
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(batch, 3, 32, 32, generator=g).to(device), torch.randint(0, 10, (batch,), generator=g).to(device))
            for _ in range(8)]
    batches = [data[i % len(data)] for i in range(steps)]
    dtype = torch.bfloat16 if precision == "bf16-mixed" else None

    burnlike.seed(0)
    model = ResNetStep().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-5)
    for i, (x, y) in enumerate(batches):
        if i == skip:
            sync(device)
            start = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    sync(device)
    raw = (time.perf_counter() - start) / (steps - skip)

    burnlike.seed(0)
    timer = StepTimer(device, skip)
    with tempfile.TemporaryDirectory() as tmp:
        built = time.perf_counter()
        learner = (LearnerBuilder(tmp).devices([device]).num_epochs(1).progress_bar(False)
                   .with_application_logger(False).callback(timer).trainer_kwargs(precision=precision)
                   .build(ResNetStep(), AdamConfig(), 1e-3))
        learner.fit(Batches(batches))
    return raw, (timer.end - timer.steady_start) / (timer.steps - skip), timer.first_step - built


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=None, help="folder holding MNIST/raw (default $BURNLIKE_DATA or ./data)")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu, to smoke-test the script")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--items", type=int, default=None, help="train on the first N MNIST items (default all)")
    p.add_argument("--resnet-steps", type=int, default=100)
    p.add_argument("--resnet-batch", type=int, default=256)
    p.add_argument("--resnet-repeats", type=int, default=1, help="ResNet-18 runs per precision (raw, then burnlike)")
    p.add_argument("--resnet-only", action="store_true", help="skip the MNIST table")
    args = p.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("benchmarks/gpu.py measures GPU training: torch sees no CUDA device here "
                 "(use --device cpu to smoke-test the script)")
    warnings.filterwarnings("ignore")
    if not args.resnet_only:
        mnist_table(args, device)
    for precision in ("32-true", "bf16-mixed"):
        ratios = []
        for _ in range(args.resnet_repeats):
            raw, ours, setup = resnet(device, args.resnet_steps, args.resnet_batch, precision)
            ratios.append(ours / raw)
            print(f"ResNet-18, batch {args.resnet_batch}, {precision}: raw {raw * 1e3:.2f} ms/step, burnlike "
                  f"{ours * 1e3:.2f} ms/step ({ours / raw:.3f}x raw, steady state); burnlike setup (build + fit to "
                  f"the first step) {setup:.2f} s", flush=True)
        if len(ratios) > 1:
            print(f"ResNet-18 {precision}: median {statistics.median(ratios):.3f}x raw over {len(ratios)} runs "
                  f"({min(ratios):.3f}-{max(ratios):.3f}x)")


def mnist_table(args: argparse.Namespace, device: torch.device) -> None:
    """The guide model's MNIST epoch, seven ways, as ratios to the raw eager loop."""
    dataset: Any = MnistDataset.train(args.root)
    if args.items:
        dataset = Subset(dataset, range(args.items))
    host = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).shuffle(42).build(dataset)
    on_device = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).shuffle(42).on_device(device).build(dataset)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}, Lightning {L.__version__}; {len(host)} steps of {BATCH}; "
          f"median of {args.repeats} epochs after a warm-up epoch")

    rows: list[tuple[str, float]] = []

    def row(label: str, seconds: float) -> None:
        rows.append((label, seconds))
        print(f"  {label:<58} {seconds:8.3f} s  {seconds / rows[0][1]:5.2f}x raw eager", flush=True)

    row("raw eager loop, host batches moved to the device", timed_epochs(raw_eager(host, device), args.repeats, device))
    row("raw eager loop, batches on the device", timed_epochs(raw_eager(on_device, device), args.repeats, device))
    if device.type == "cuda":
        row("  + Adam(fused=True)", timed_epochs(raw_eager(on_device, device, fused=True), args.repeats, device))
        row("raw loop, whole step in one CUDA graph", timed_epochs(raw_graph(on_device, device), args.repeats, device))
    barebones_s = barebones(host, device, args.repeats)
    row("Lightning Trainer(barebones=True), minimal module", barebones_s)
    default_s = burnlike_fit(host, device, args.repeats, fast=False)
    row("burnlike default path (progress bar off)", default_s)
    row("burnlike fast path (cuda_graph + on_device)", burnlike_fit(on_device, device, args.repeats, fast=True))
    print(f"  burnlike default / Lightning barebones: {default_s / barebones_s:.3f}x")


if __name__ == "__main__":
    main()
