"""Burn's `examples/mnist`, in Python: a convolutional classifier trained on MNIST digits augmented with
random affine transforms, then evaluated on every combination of those transforms.

`Model` and `ConvBlock` are Burn's `src/model.rs` field for field (two Conv 3×3 → BatchNorm → ReLU →
MaxPool 2 blocks, then 1600 → 128 → 128 → 10 with GELU and dropout 0.25), so the saved `model.bin` is
Burn's record of it. `src/data.rs`: each item is normalised, then resampled through a random
composition of translation, shear, scale and rotation (`burnlike.vision.Transform2D`). `src/training.rs`:
55,000 training and 5,000 validation images, each of the 16 combinations of transforms sampled
10,000 × (its number of transforms) times for training (so none untransformed), AdamW (cautious
weight decay 5e-5) under a cosine × linear warm-up × linear decay schedule, early stopping after 5
epochs without a better validation loss, 5 epochs of batch 256; then one evaluation per combination
on the test set through one renderer (`test/<name>/`), `model.bin` and `config.json` at the end.
MNIST is read from ROOT/MNIST/raw (default $BURNLIKE_DATA); `--train-items`, `--valid-items` and
`--samples` shrink the run.

    python examples/mnist.py [--data ROOT] [--epochs 5] [--artifact-dir /tmp/burn-example-mnist]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import shutil
from enum import Enum
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, MnistDataset, MnistItem
from burnlike.data.batch import TensorBatch
from burnlike.data.dataset import ComposedDataset, MapperDataset, PartialDataset, SamplerDataset
from burnlike.module import Module
from burnlike.nn import (
    BatchNormConfig,
    Conv2dConfig,
    CrossEntropyLossConfig,
    DropoutConfig,
    Gelu,
    LinearConfig,
    MaxPool2dConfig,
    PaddingConfig2d,
    Relu,
)
from burnlike.optim import (
    AdamWConfig,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
)
from burnlike.record import CompactRecorder, NoStdTrainingRecorder
from burnlike.train import (
    Aggregate,
    ClassificationOutput,
    Direction,
    EvaluatorBuilder,
    InferenceStep,
    Learner,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
    SupervisedTraining,
    TrainOutput,
    TrainStep,
    backward,
)
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from burnlike.vision import Transform2D

ARTIFACT_DIR = "/tmp/burn-example-mnist"

# --- src/model.rs ----------------------------------------------------------------------------------
NUM_CLASSES = 10


class ConvBlock(Module):
    __burn_fields__ = ("conv", "norm", "pool", "activation")
    __burn_optional__ = ("pool",)  # Burn: `pool: Option<MaxPool2d>`

    def __init__(self, channels: list[int], kernel_size: list[int], device: Any = None, pool: bool = True) -> None:
        super().__init__()
        self.conv = Conv2dConfig(channels, kernel_size, padding=PaddingConfig2d.Valid).init(device)
        self.norm = BatchNormConfig(channels[1]).init(device)
        self.register_module("pool", MaxPool2dConfig([2, 2], strides=[2, 2]).init() if pool else None)
        self.activation = Relu.new()

    def forward(self, input: Tensor) -> Tensor:
        x = self.conv(input)
        x = self.norm(x)
        x = self.activation(x)
        return self.pool(x) if self.pool is not None else x


@dataclasses.dataclass
class MnistBatch(TensorBatch):
    images: Tensor  # [batch_size, 28, 28]
    targets: Tensor  # [batch_size]


class Model(Module, TrainStep[MnistBatch, ClassificationOutput], InferenceStep[MnistBatch, ClassificationOutput]):
    __burn_fields__ = ("conv1", "conv2", "dropout", "fc1", "fc2", "fc3", "activation")

    def __init__(self, device: Any = None) -> None:
        super().__init__()
        self.conv1 = ConvBlock([1, 64], [3, 3], device, True)  # out: max_pool -> [Batch,32,13,13]
        self.conv2 = ConvBlock([64, 64], [3, 3], device, True)  # out: max_pool -> [Batch,64,5,5]
        hidden_size = 64 * 5 * 5
        self.fc1 = LinearConfig(hidden_size, 128).init(device)
        self.fc2 = LinearConfig(128, 128).init(device)
        self.fc3 = LinearConfig(128, NUM_CLASSES).init(device)
        self.dropout = DropoutConfig(0.25).init()
        self.activation = Gelu.new()

    @classmethod
    def new(cls, device: Any = None) -> Model:
        return cls(device)

    def forward(self, input: Tensor) -> Tensor:
        batch_size, height, width = input.shape
        x = input.reshape(batch_size, 1, height, width).detach()
        x = self.conv1(x)
        x = self.conv2(x)
        batch_size, channels, height, width = x.shape
        x = x.reshape(batch_size, channels * height * width)
        x = self.fc1(x)
        x = self.activation(x)
        x = self.dropout(x)
        x = self.fc2(x)
        x = self.activation(x)
        x = self.dropout(x)
        out: Tensor = self.fc3(x)
        return out

    def forward_classification(self, item: MnistBatch) -> ClassificationOutput:
        targets = item.targets
        output = self.forward(item.images)
        loss = CrossEntropyLossConfig().init(output.device).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, item: MnistBatch) -> TrainOutput[ClassificationOutput]:
        item_out = self.forward_classification(item)
        return TrainOutput(self, backward(item_out.loss), item_out)

    def inference_step(self, item: MnistBatch) -> ClassificationOutput:
        return self.forward_classification(item)


# --- src/data.rs -----------------------------------------------------------------------------------


@dataclasses.dataclass
class MnistItemPrepared:
    image: Tensor  # [1, 28, 28], normalised (and transformed)
    label: int


class MnistBatcher:
    def batch(self, items: list[MnistItemPrepared], device: Any = None) -> MnistBatch:
        images = torch.cat([item.image for item in items], 0).to(device)
        targets = torch.tensor([item.label for item in items], dtype=torch.int64, device=device)
        return MnistBatch(images, targets)


class Transform(Enum):
    Translate = "Tr"
    Shear = "Sr"
    Scale = "Sc"
    Rotation = "Rot"

    def __str__(self) -> str:
        return self.value


class MnistMapper:
    """Burn's `Mapper<MnistItem, MnistItemPrepared>`: normalise, then the transforms with random parameters."""

    def __init__(self, transforms: list[Transform] | None = None) -> None:
        self.transforms = list(transforms or [])

    def transform(self, transforms: list[Transform]) -> MnistMapper:
        return MnistMapper([*self.transforms, *transforms])

    def map(self, item: MnistItem) -> MnistItemPrepared:
        return prepare_image(self.transforms, item)


def prepare_image(transforms: list[Transform], item: MnistItem) -> MnistItemPrepared:
    tensor = item.image.to(torch.float32).reshape(1, 28, 28)
    tensor = ((tensor / 255) - 0.1307) / 0.3081
    if transforms:
        tensor = mangle_image_batch(transforms, tensor)
    return MnistItemPrepared(tensor, int(item.label))


def mangle_image_batch(transforms: list[Transform], images: Tensor) -> Tensor:
    """A composition of the transforms with parameters drawn from Burn's ranges."""
    rng = random

    def draw(transform: Transform) -> Transform2D:
        if transform is Transform.Translate:
            return Transform2D.translation(rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2))
        if transform is Transform.Shear:
            return Transform2D.shear(rng.uniform(-0.6, 0.6), rng.uniform(-0.6, 0.6), 0.0, 0.0)
        if transform is Transform.Scale:
            return Transform2D.scale(rng.uniform(0.6, 1.5), rng.uniform(0.6, 1.5), 0.0, 0.0)
        return Transform2D.rotation(rng.uniform(-math.pi / 4, math.pi / 4), 0.0, 0.0)

    return Transform2D.composed([draw(t) for t in transforms]).transform(images.unsqueeze(1)).squeeze(1)


# --- src/training.rs -------------------------------------------------------------------------------


@config
class MnistTrainingConfig:
    num_epochs: int = 5
    batch_size: int = 256
    num_workers: int = 8
    seed: int = 42
    optimizer: AdamWConfig  # required after the defaulted fields, as Burn declares it


def create_artifact_dir(artifact_dir: str) -> None:
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


class DatasetIdent:
    """Burn's `DatasetIdent::{Plain, Transformed(Vec<Transform>), All}`."""

    def __init__(self, kind: str, transforms: list[Transform] | None = None) -> None:
        self.kind, self.transforms = kind, list(transforms or [])

    @classmethod
    def many(cls, transforms: list[Transform]) -> DatasetIdent:
        return cls("Transformed", transforms)

    def __str__(self) -> str:
        return " ".join(map(str, self.transforms)) if self.kind == "Transformed" else self.kind

    def prepare(self, dataset: Any) -> MapperDataset[MnistItemPrepared]:
        items = {"Plain": [], "All": list(Transform)}.get(self.kind, self.transforms)
        return MapperDataset(dataset, MnistMapper().transform(items))

    @staticmethod
    def compose(idents: list[tuple[DatasetIdent, int | None]], dataset: Any) -> ComposedDataset:
        datasets = []
        for ident, size in idents:
            prepared = ident.prepare(dataset)
            if size is not None:
                datasets.append(SamplerDataset.with_replacement(prepared, size))
            else:
                datasets.append(SamplerDataset.without_replacement(prepared, len(prepared)))
        return ComposedDataset(datasets)


def generate_idents(num_samples_base: int | None) -> list[tuple[DatasetIdent, int | None]]:
    """The 16 combinations of shear, scale, rotation and translation, each sampled base × its number
    of transforms times (None: the whole dataset once)."""
    idents = []
    for shear in (None, Transform.Shear):
        for scale in (None, Transform.Scale):
            for rotation in (None, Transform.Rotation):
                for translate in (None, Transform.Translate):
                    current = [t for t in (shear, scale, rotation, translate) if t is not None]
                    num_samples = None if num_samples_base is None else num_samples_base * len(current)
                    if len(current) == 4:
                        idents.append((DatasetIdent("All"), num_samples))
                    elif not current:
                        idents.append((DatasetIdent("Plain"), num_samples))
                    else:
                        idents.append((DatasetIdent.many(current), num_samples))
    return idents


def evaluate(artifact_dir: str, name: str, ident: DatasetIdent, model: Model, renderer: Any, dataset: Any,
             batch_size: int) -> Any:
    dataset_test = ident.prepare(dataset)
    dataloader_test = DataLoaderBuilder(MnistBatcher()).batch_size(batch_size).num_workers(2).build(dataset_test)
    evaluator = (EvaluatorBuilder(artifact_dir)
                 .renderer(renderer)
                 .metrics((AccuracyMetric(), LossMetric()))
                 .summary()
                 .build(model))
    return evaluator.eval(name, dataloader_test)


def run(device: str = "cpu", root: str | None = None, artifact_dir: str = ARTIFACT_DIR, num_epochs: int = 5,
        split: tuple[int, int] = (55_000, 60_000), samples: int = 10_000, num_workers: int = 8,
        batch_size: int = 256) -> dict[str, Any]:
    create_artifact_dir(artifact_dir)
    config_optimizer = AdamWConfig(cautious_weight_decay=True, weight_decay=5e-5)
    config = MnistTrainingConfig(config_optimizer, num_epochs=num_epochs, num_workers=num_workers,
                                 batch_size=batch_size)
    burnlike.seed(device, config.seed)

    model = Model.new(device)
    dataset_train_original = MnistDataset.train(root)
    dataset_train_plain = PartialDataset(dataset_train_original, 0, split[0])
    dataset_valid_plain = PartialDataset(dataset_train_original, split[0], split[1])
    dataset_train = DatasetIdent.compose(generate_idents(samples), dataset_train_plain)
    dataset_valid = DatasetIdent.compose(generate_idents(None), dataset_valid_plain)

    dataloader_train = (DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(dataset_train))
    dataloader_valid = (DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(dataset_valid))
    lr_scheduler = (ComposedLrSchedulerConfig()
                    .cosine(CosineAnnealingLrSchedulerConfig(1.0, 2000))
                    .linear(LinearLrSchedulerConfig(1e-8, 1.0, 2000))
                    .linear(LinearLrSchedulerConfig(1e-2, 1e-6, 10000)))

    training = (SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)
                .metrics((AccuracyMetric(), LossMetric()))
                .metric_train_numeric(LearningRateMetric())
                .with_file_checkpointer(CompactRecorder())
                .early_stopping(MetricEarlyStoppingStrategy(
                    LossMetric(), Aggregate.Mean, Direction.Lowest, Split.Valid,
                    StoppingCondition.NoImprovementSince(n_epochs=5)))
                .num_epochs(config.num_epochs)
                .summary())
    result = training.launch(Learner(model, config.optimizer.init(), lr_scheduler.init()))

    dataset_test_plain = MnistDataset.test(root)
    renderer = result.renderer
    names = []
    for ident, _ in generate_idents(None):
        names.append(str(ident))
        renderer = evaluate(artifact_dir, str(ident), ident, result.model, renderer, dataset_test_plain,
                            config.batch_size)

    result.model.save_file(f"{artifact_dir}/model", NoStdTrainingRecorder())
    config.save(f"{artifact_dir}/config.json")
    renderer.manual_close()
    return {"result": result, "evaluations": names}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--artifact-dir", default=ARTIFACT_DIR, help="removed first, then the run's files")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--num-workers", type=int, default=8)
    parser.add_argument("--train-items", type=int, default=55_000, help="training images (the first ones)")
    parser.add_argument("--valid-items", type=int, default=5_000, help="validation images (the next ones)")
    parser.add_argument("--samples", type=int, default=10_000, help="training samples per transform of a combination")
    args = parser.parse_args(argv)
    return run(args.device, args.data, args.artifact_dir, args.epochs,
               (args.train_items, args.train_items + args.valid_items), args.samples, args.num_workers,
               args.batch_size)


if __name__ == "__main__":
    main()
