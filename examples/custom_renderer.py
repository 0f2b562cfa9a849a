"""Burn's `examples/custom-renderer`, in Python: the guide's model trained on MNIST with a metrics
renderer of its own in place of the progress display.

`CustomRenderer` implements Burn's three renderer traits (`MetricsRenderer` holds them all) and
prints each train and valid step's `TrainingProgress`, as Burn's prints them with `dbg!`. Burn's
example registers no metric; this one registers accuracy and loss (`.metrics(...)`) and prints
their states too, so every call a renderer gets shows up.

    python examples/custom_renderer.py [--data ROOT] [--epochs 10] [--artifact-dir /tmp/custom-renderer]

MNIST is read from ROOT/MNIST/raw (default: $BURNLIKE_DATA, else ./data); see the README.
"""

from __future__ import annotations

import argparse

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import ModelConfig
from burnlike.optim import AdamConfig
from burnlike.train import Learner, LearningResult, SupervisedTraining
from burnlike.train.metric import AccuracyMetric, LossMetric, MetricDefinition
from burnlike.train.renderer import (
    EvaluationName,
    EvaluationProgress,
    MetricsRenderer,
    MetricState,
    ProgressType,
    TrainingProgress,
)


@config
class MnistTrainingConfig:
    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    lr: float = 1e-4


class CustomRenderer(MetricsRenderer):
    # MetricsRendererTraining
    def update_train(self, state: MetricState) -> None:
        print(f"train {state.entry.metric_id}: {state.entry.serialized_entry.formatted}")

    def update_valid(self, state: MetricState) -> None:
        print(f"valid {state.entry.metric_id}: {state.entry.serialized_entry.formatted}")

    def render_train(self, item: TrainingProgress, progress_indicators: list[ProgressType]) -> None:
        print(item)

    def render_valid(self, item: TrainingProgress, progress_indicators: list[ProgressType]) -> None:
        print(item)

    # MetricsRenderer
    def manual_close(self) -> None:
        pass  # Nothing to do.

    def register_metric(self, definition: MetricDefinition) -> None:
        pass

    # MetricsRendererEvaluation
    def update_test(self, name: EvaluationName, state: MetricState) -> None:
        pass

    def render_test(self, item: EvaluationProgress, progress_indicators: list[ProgressType]) -> None:
        print(item)


def run(device: str, config: MnistTrainingConfig, root: str | None = None,
        artifact_dir: str = "/tmp/custom-renderer") -> LearningResult:
    burnlike.seed(config.seed)

    # Create the model and optimizer.
    model = config.model.init(device)
    optim = config.optimizer.init()

    # Create the batcher.
    batcher = MnistBatcher()

    # Create the dataloaders.
    dataloader_train = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(MnistDataset.train(root)))
    dataloader_test = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
                       .num_workers(config.num_workers).build(MnistDataset.test(root)))

    # burnlike writes Burn's metric logs in the artifact dir, so it is given; no application logger.
    training = (SupervisedTraining(artifact_dir, dataloader_train, dataloader_test)
                .metrics((AccuracyMetric(), LossMetric()))
                .num_epochs(config.num_epochs)
                .renderer(CustomRenderer())
                .with_application_logger(None))
    # can be used to interrupt training
    _interrupter = training.interrupter()

    return training.launch(Learner(model, optim, config.lr))


def main(argv: list[str] | None = None) -> LearningResult:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=4)
    parser.add_argument("--artifact-dir", default="/tmp/custom-renderer", help="where the metric logs go")
    args = parser.parse_args(argv)
    # Create the configuration.
    config = MnistTrainingConfig(ModelConfig(10, 1024), AdamConfig(), num_epochs=args.epochs,
                                 batch_size=args.batch_size, num_workers=args.num_workers)
    return run(args.device, config, args.data, args.artifact_dir)


if __name__ == "__main__":
    main()
