"""Burn's `examples/custom-learning-strategy`, in Python: the guide's model trained on MNIST by a
learning strategy of its own (`TrainingStrategy.Custom`), which runs the epoch loop itself with the
Learner's `lr_step`, `train_step` and `optimizer_step`, reports each step to the event processor
(metrics, Burn's metric logs, the renderer) and checkpoints through the learning checkpointer.

    python examples/custom_learning_strategy.py [--data ROOT] [--epochs 5] [--artifact-dir /tmp/burn-example-mnist]

MNIST is read from ROOT/MNIST/raw (default: $BURNLIKE_DATA, else ./data); see the README. Burn's
example trains on the first 15,000 training images and validates on the next 2,000
(`--train-items`/`--valid-items` make that smaller).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
from typing import Any

import torch
from torch import nn

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.data.dataloader import Progress
from burnlike.data.dataset import PartialDataset
from burnlike.models.mnist import ModelConfig
from burnlike.optim import AdamConfig, ComposedLrSchedulerConfig
from burnlike.optim.lr_scheduler import CosineAnnealingLrSchedulerConfig, LinearLrSchedulerConfig
from burnlike.record import CompactRecorder, NoStdTrainingRecorder
from burnlike.train import (
    Aggregate,
    Direction,
    Learner,
    LearnerEvent,
    LearningResult,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
    SupervisedLearningStrategy,
    SupervisedTraining,
    SupervisedTrainingEventProcessor,
    TrainingComponents,
    TrainingItem,
    TrainingStrategy,
)
from burnlike.train.metric import AccuracyMetric, LossMetric

ARTIFACT_DIR = "/tmp/burn-example-mnist"
log = logging.getLogger(__name__)


@config
class MnistTrainingConfig:
    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 5
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    lr: float = 1e-4


def create_artifact_dir(artifact_dir: str) -> None:
    # Remove existing artifacts before to get an accurate learner summary
    shutil.rmtree(artifact_dir, ignore_errors=True)
    os.makedirs(artifact_dir, exist_ok=True)


class MyCustomLearningStrategy(SupervisedLearningStrategy):
    def __init__(self, device: str | torch.device) -> None:
        self.device = device

    def fit(self, training_components: TrainingComponents, learner: Learner, dataloader_train: Any,
            dataloader_valid: Any, starting_epoch: int) -> tuple[nn.Module, SupervisedTrainingEventProcessor]:
        dataloader_train = dataloader_train.to_device(self.device)
        dataloader_valid = dataloader_valid.to_device(self.device)
        learner.fork(self.device)
        event_processor = training_components.event_processor
        checkpointer = training_components.checkpointer
        interrupter = training_components.interrupter
        num_epochs = training_components.num_epochs

        for epoch in range(starting_epoch, num_epochs + 1):
            # Iterate over our training and validation loop for X epochs.
            log.info("Executing training step for epoch %d", epoch)

            # Single device / dataloader
            iterator = dataloader_train.iter()
            iteration = 0

            for item in iterator:
                iteration += 1
                learner.lr_step()
                log.info("Iteration %d of my custom learning strategy", iteration)

                progress = iterator.progress()
                output = learner.train_step(item)
                learner.optimizer_step(output.grads)

                training_item = TrainingItem(output.item, progress, Progress.new(epoch, num_epochs), iteration,
                                             learner.lr_current())

                event_processor.process_train(LearnerEvent.ProcessedItem(training_item))

                if interrupter.should_stop():
                    reason = interrupter.get_message() or "Reason unknown"
                    log.info("Training interrupted: %s", reason)
                    break
            event_processor.process_train(LearnerEvent.EndEpoch(epoch))

            model_valid = learner.model().valid()

            iterator = dataloader_valid.iter()
            iteration = 0

            for item in iterator:
                progress = iterator.progress()
                iteration += 1

                valid_item = TrainingItem(model_valid.valid_step(item), progress, Progress.new(epoch, num_epochs),
                                          iteration, None)

                event_processor.process_valid(LearnerEvent.ProcessedItem(valid_item))
            event_processor.process_valid(LearnerEvent.EndEpoch(epoch))

            if checkpointer is not None:
                checkpointer.checkpoint(learner, epoch, training_components.event_store)

        return learner.model(), event_processor


def run(device: str, root: str | None = None, artifact_dir: str = ARTIFACT_DIR, num_epochs: int = 5,
        train_items: int = 15_000, valid_items: int = 2_000, batch_size: int = 64,
        num_workers: int = 4) -> LearningResult:
    create_artifact_dir(artifact_dir)
    # Config
    config_model = ModelConfig(10, 1024)
    config_optimizer = AdamConfig()
    config = MnistTrainingConfig(config_model, config_optimizer, num_epochs=num_epochs, batch_size=batch_size,
                                 num_workers=num_workers)

    burnlike.seed(config.seed)

    model = config.model.init(device)

    dataset_train_original = MnistDataset.train(root)
    dataset_train = PartialDataset(dataset_train_original, 0, train_items)
    dataset_valid = PartialDataset(dataset_train_original, train_items, train_items + valid_items)

    lr_scheduler = (ComposedLrSchedulerConfig()
                    .cosine(CosineAnnealingLrSchedulerConfig(1.0, 2000))
                    # Warmup
                    .linear(LinearLrSchedulerConfig(1e-8, 1.0, 2000))
                    .linear(LinearLrSchedulerConfig(1e-2, 1e-6, 10000)))
    early_stopping = MetricEarlyStoppingStrategy(
        LossMetric(),
        Aggregate.Mean,
        Direction.Lowest,
        Split.Valid,
        StoppingCondition.NoImprovementSince(n_epochs=5),
    )

    dataloader_train = (DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(dataset_train))
    dataloader_valid = (DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(dataset_valid))

    training = (SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)
                .metrics((AccuracyMetric(), LossMetric()))
                .with_file_checkpointer(CompactRecorder())
                .early_stopping(early_stopping)
                .num_epochs(config.num_epochs)
                .summary()
                .with_training_strategy(TrainingStrategy.Custom(MyCustomLearningStrategy(device))))

    result = training.launch(Learner(model, config.optimizer.init(), lr_scheduler.init()))

    result.model.save_file(f"{artifact_dir}/model", NoStdTrainingRecorder())
    return result


def main(argv: list[str] | None = None) -> LearningResult:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--train-items", type=int, default=15_000, help="training images (the first ones)")
    parser.add_argument("--valid-items", type=int, default=2_000, help="validation images (the next ones)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=4)
    parser.add_argument("--artifact-dir", default=ARTIFACT_DIR, help="removed first, then the run's files")
    args = parser.parse_args(argv)
    return run(args.device, args.data, args.artifact_dir, args.epochs, args.train_items, args.valid_items,
               args.batch_size, args.num_workers)


if __name__ == "__main__":
    main()
