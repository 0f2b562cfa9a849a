"""A LearnerBuilder run under `ShardedStrategy` (FSDP2 over gloo on the CPU), as a user's script:
`python -m tests.helpers.sharded_fit OUT --devices N ...`; Lightning re-runs it for ranks 1..N-1.
With `--dump DIR` rank 0 writes the whole (gathered) weights as `start.npz` when training starts
(after a resume has loaded them) and `end.npz` when it ends; `--twice` fits once (its files
`first-*.npz`), then resumes in the same process (a `memory://` run dir lives only as long as its
process)."""

from __future__ import annotations

import argparse
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch import nn

from burnlike.optim import AdamConfig
from burnlike.record.format import registry
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.sharded import CompactFSDPStrategy, ShardedStrategy, full_model_state
from tests.helpers.toy import Classifier, loader


class Mlp(Classifier):
    """Two layers whose first dimensions (16, 3) don't split evenly over 4 ranks."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))


class Dump(L.Callback):
    """Rank 0 writes the gathered weights at the start and the end of training (every rank gathers)."""

    def __init__(self, folder: str, prefix: str = "") -> None:
        self.folder = Path(folder)
        self.prefix = prefix

    def write(self, trainer: L.Trainer, pl_module: L.LightningModule, name: str) -> None:
        weights = full_model_state(trainer, pl_module)
        if trainer.is_global_zero:
            self.folder.mkdir(parents=True, exist_ok=True)
            np.savez(self.folder / (self.prefix + name), **{k: v.float().numpy() for k, v in weights.items()})

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.write(trainer, pl_module, "start.npz")

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.write(trainer, pl_module, "end.npz")


def strategy(args: argparse.Namespace) -> ShardedStrategy | CompactFSDPStrategy:
    """FSDP2 (`--strategy sharded`, any accelerator) or torch's FSDP wrapper (`fsdp`, GPUs only)."""
    if args.strategy == "fsdp":
        return CompactFSDPStrategy(state_dict_type="full" if args.full else "sharded")
    return ShardedStrategy(sharded=not args.full)


def fit(args: argparse.Namespace, resume: bool, prefix: str = "") -> None:
    builder = (LearnerBuilder(args.out).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(LossMetric())
               .with_file_checkpointer(registry.by_name(args.recorder)).num_epochs(args.epochs)
               .progress_bar(False)
               .trainer_kwargs(strategy=strategy(args), accelerator=args.accelerator, devices=args.devices))
    if args.dump:
        builder = builder.callback(Dump(args.dump, prefix))
    if resume:
        builder = builder.checkpoint("last")
    torch.manual_seed(0)
    builder.build(Mlp(), AdamConfig(), 1e-2).fit(loader(64, 8), loader(32, 8, seed=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--recorder", default="default")
    parser.add_argument("--full", action="store_true", help="gathered checkpoints (sharded=False)")
    parser.add_argument("--resume", action="store_true", help="learner checkpoint=last")
    parser.add_argument("--twice", action="store_true", help="fit --epochs - 1 epochs, then resume to --epochs")
    parser.add_argument("--dump", default="")
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--strategy", choices=["sharded", "fsdp"], default="sharded")
    args = parser.parse_args()
    if args.twice:
        first = argparse.Namespace(**{**vars(args), "epochs": args.epochs - 1})
        fit(first, resume=False, prefix="first-")
    fit(args, resume=args.resume or args.twice)


if __name__ == "__main__":
    main()
