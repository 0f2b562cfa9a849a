"""Burn's book guide (`examples/guide`), line for line in Python.

    python examples/guide.py --artifact-dir /tmp/guide [--device cpu] [--epochs 10]

MNIST is read from `$BURNLIKE_DATA/MNIST/raw` (or `./data`); see the README.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import ModelConfig
from burnlike.optim import AdamConfig
from burnlike.record import CompactRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric


@config
class TrainingConfig:
    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    learning_rate: float = 1.0e-4


def create_artifact_dir(artifact_dir: str) -> None:
    # Remove existing artifacts before to get an accurate learner summary
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def train(artifact_dir: str, config: TrainingConfig, device: str) -> float:
    create_artifact_dir(artifact_dir)
    config.save(f"{artifact_dir}/config.json")

    burnlike.seed(config.seed)

    batcher = MnistBatcher()

    dataloader_train = (
        DataLoaderBuilder(batcher)
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(config.num_workers)
        .build(MnistDataset.train())
    )
    dataloader_test = (
        DataLoaderBuilder(batcher)
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(config.num_workers)
        .build(MnistDataset.test())
    )

    learner = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .devices([device])
        .num_epochs(config.num_epochs)
        .summary()
        .build(config.model.init(device), config.optimizer.init(), config.learning_rate)
    )

    result = learner.fit(dataloader_train, dataloader_test)

    result.model.save_file(f"{artifact_dir}/model", CompactRecorder())
    assert result.summary is not None
    best = result.summary.get("valid", "Accuracy")
    return best.max_value if best else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifact-dir", default="/tmp/guide", help="where config, logs, checkpoints go")
    parser.add_argument("--device", default="cpu", help="'cpu', 'cuda', 'cuda:1', 'mps'")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--num-workers", type=int, default=4)
    args = parser.parse_args()
    cfg = TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=args.epochs, num_workers=args.num_workers)
    best = train(args.artifact_dir, cfg, args.device)
    print(f"best valid accuracy: {best:.2f}%")


if __name__ == "__main__":
    main()
