"""Burn's `examples/simple-regression`, in Python, on scikit-learn's bundled diabetes table.

Burn's example reads California housing from the Hugging Face hub into a `SqliteDataset` (a table
per split), min-max normalises the features in its batcher, and trains `Linear(8, 64)`, ReLU,
`Linear(64, 1)` with MSE (`RegressionOutput`) and Adam for 100 epochs. Here the table is the
diabetes data scikit-learn ships (442 patients, 10 features, disease progression after a year; no
download), or any CSV (`--csv FILE --target COLUMN`). It is split 80/10/10 with a seeded
`ShuffledDataset` + `PartialDataset`, written to SQLite in Burn's layout (tables `train`,
`validation`, `test`), and read back with `SqliteDataset`. The targets are in the hundreds, so the
batcher min-max scales them as well as the features; errors are reported in the target's units.

    pip install -e ".[examples]"      # scikit-learn
    python examples/simple_regression.py [--artifact-dir /tmp/simple-regression] [--epochs 100]
"""

from __future__ import annotations

import argparse
import csv
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder
from burnlike.data.batch import TensorBatch
from burnlike.data.dataset import (
    InMemDataset,
    PartialDataset,
    ShuffledDataset,
    SqliteDataset,
    SqliteDatasetWriter,
)
from burnlike.module import Module
from burnlike.nn import MseLoss
from burnlike.optim import AdamConfig
from burnlike.record import BinFileRecorder, CompactRecorder, FullPrecisionSettings
from burnlike.train import LearnerBuilder, RegressionOutput, TrainOutput, TrainStep, ValidStep, backward
from burnlike.train.metric import LossMetric

SPLITS = {"train": (0.0, 0.8), "validation": (0.8, 0.9), "test": (0.9, 1.0)}


def load_table(csv_path: str | None, target: str) -> tuple[list[dict[str, float]], list[str]]:
    """Rows as `{column: value}` and the feature names: the CSV's, or scikit-learn's diabetes."""
    if csv_path is None:
        try:
            from sklearn.datasets import load_diabetes
        except ImportError:
            raise SystemExit("scikit-learn is needed for the diabetes data: pip install -e \".[examples]\" "
                             "(or pass --csv FILE --target COLUMN)") from None
        bunch = load_diabetes(scaled=False)
        names = list(bunch.feature_names)
        rows = [{**dict(zip(names, map(float, x))), target: float(y)} for x, y in zip(bunch.data, bunch.target)]
        return rows, names
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        names = [n for n in reader.fieldnames or [] if n != target]
        if target not in (reader.fieldnames or []):
            raise SystemExit(f"{csv_path}: no column {target!r} (columns: {reader.fieldnames})")
        rows = [{k: float(v) for k, v in row.items()} for row in reader]
    return rows, names


def write_database(db: Path, rows: list[dict[str, float]], seed: int) -> dict[str, int]:
    """Split the rows 80/10/10 after a seeded shuffle and store each split as a table (Burn's layout)."""
    shuffled = ShuffledDataset(InMemDataset(rows), seed)
    n = shuffled.len()
    sizes = {}
    with SqliteDatasetWriter(db, overwrite=True) as writer:
        for split, (start, end) in SPLITS.items():
            part = PartialDataset(shuffled, round(start * n), round(end * n))
            for row in part.iter():
                writer.write(split, row)
            sizes[split] = part.len()
    return sizes


@dataclass
class RegressionBatch(TensorBatch):  # TensorBatch: .to(device) moves every tensor field
    inputs: Tensor  # [B, features], min-max scaled
    targets: Tensor  # [B], min-max scaled


class Normalizer:
    """Min-max scaling with the train split's statistics (Burn's example uses precomputed ones)."""

    def __init__(self, rows: list[dict[str, float]], columns: list[str]) -> None:
        values = torch.tensor([[row[c] for c in columns] for row in rows], dtype=torch.float32)
        self.columns = columns
        self.min = values.amin(0)
        self.range = (values.amax(0) - self.min).clamp_min(1e-12)

    def normalize(self, values: Tensor) -> Tensor:
        return (values - self.min) / self.range

    def denormalize(self, values: Tensor) -> Tensor:
        return values * self.range + self.min


class RegressionBatcher:
    def __init__(self, features: Normalizer, target: Normalizer) -> None:
        self.features, self.target = features, target

    def batch(self, items: list[dict[str, float]], device: Any = None) -> RegressionBatch:
        inputs = torch.tensor([[item[c] for c in self.features.columns] for item in items], dtype=torch.float32)
        targets = torch.tensor([[item[c] for c in self.target.columns] for item in items], dtype=torch.float32)
        batch = RegressionBatch(self.features.normalize(inputs), self.target.normalize(targets)[:, 0])
        return batch.to(device) if device is not None else batch


class RegressionModel(Module, TrainStep[RegressionBatch, RegressionOutput], ValidStep[RegressionBatch, RegressionOutput]):
    def __init__(self, num_features: int, hidden_size: int) -> None:
        super().__init__()
        self.input_layer = nn.Linear(num_features, hidden_size)
        self.output_layer = nn.Linear(hidden_size, 1)
        self.activation = nn.ReLU()

    def forward(self, inputs: Tensor) -> Tensor:
        return self.output_layer(self.activation(self.input_layer(inputs)))

    def forward_step(self, item: RegressionBatch) -> RegressionOutput:
        targets = item.targets.unsqueeze(1)
        output = self.forward(item.inputs)
        loss = MseLoss().forward(output, targets)
        return RegressionOutput(loss, output, targets)

    def train_step(self, item: RegressionBatch) -> TrainOutput[RegressionOutput]:
        output = self.forward_step(item)
        return TrainOutput(self, backward(output.loss), output)

    def valid_step(self, item: RegressionBatch) -> RegressionOutput:
        return self.forward_step(item)


@config
class RegressionModelConfig:
    num_features: int
    hidden_size: int = 64

    def init(self, device: Any = None) -> RegressionModel:
        return RegressionModel(self.num_features, self.hidden_size).to(device or "cpu")


@config
class ExpConfig:
    optimizer: AdamConfig
    num_epochs: int = 100
    num_workers: int = 2
    seed: int = 1337
    batch_size: int = 256
    learning_rate: float = 1e-3


def create_artifact_dir(artifact_dir: str) -> None:
    # Remove existing artifacts before to get an accurate learner summary
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def run(artifact_dir: str, device: str, config: ExpConfig, csv_path: str | None = None,
        target: str = "progression") -> dict[str, float]:
    create_artifact_dir(artifact_dir)
    burnlike.seed(config.seed)

    # Define train/valid datasets and dataloaders
    rows, features = load_table(csv_path, target)
    db = Path(artifact_dir) / "dataset.db"
    sizes = write_database(db, rows, config.seed)
    train_dataset = SqliteDataset(db, "train")
    valid_dataset = SqliteDataset(db, "validation")
    print(f"Train Dataset Size: {train_dataset.len()}")
    print(f"Valid Dataset Size: {valid_dataset.len()}")

    train_rows = list(train_dataset.iter())
    batcher = RegressionBatcher(Normalizer(train_rows, features), Normalizer(train_rows, [target]))
    dataloader_train = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(train_dataset))
    dataloader_test = (DataLoaderBuilder(batcher).batch_size(config.batch_size)
                       .num_workers(config.num_workers).build(valid_dataset))

    # Model
    model = RegressionModelConfig(len(features)).init(device)
    learner = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder())
               .devices([device]).num_epochs(config.num_epochs).summary()
               .build(model, config.optimizer.init(), config.learning_rate))
    result = learner.fit(dataloader_train, dataloader_test)

    config.save(f"{artifact_dir}/config.json")
    # Burn saves with NoStdTrainingRecorder, i.e. BinFileRecorder<FullPrecisionSettings>
    result.model.save_file(f"{artifact_dir}/model", BinFileRecorder(FullPrecisionSettings))
    return infer(result.model, SqliteDataset(db, "test"), batcher, train_rows, target, sizes)


def infer(model: RegressionModel, test: SqliteDataset[Any], batcher: RegressionBatcher,
          train_rows: list[dict[str, float]], target: str, sizes: dict[str, int]) -> dict[str, float]:
    """Errors on the held-out test split, in the target's units, next to predicting the train mean."""
    items = list(test.iter())
    batch = batcher.batch(items)
    with torch.no_grad():
        predicted = batcher.target.denormalize(model.valid().forward(batch.inputs))[:, 0]
    expected = torch.tensor([item[target] for item in items])
    baseline = sum(row[target] for row in train_rows) / len(train_rows)
    rmse = math.sqrt(float(((predicted - expected) ** 2).mean()))
    mae = float((predicted - expected).abs().mean())
    base_rmse = math.sqrt(float(((baseline - expected) ** 2).mean()))
    print(f"Predicted {predicted[0].item():.1f} Expected {expected[0].item():.1f}")
    print(f"Test split ({sizes['test']} rows): RMSE {rmse:.2f}, MAE {mae:.2f} "
          f"(predicting the train mean: RMSE {base_rmse:.2f})")
    return {"test_rmse": rmse, "test_mae": mae, "baseline_rmse": base_rmse}


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifact-dir", default="/tmp/simple-regression")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--csv", default=None, help="a CSV of numbers instead of the diabetes data")
    parser.add_argument("--target", default="progression", help="the column to predict (with --csv)")
    args = parser.parse_args(argv)
    config = ExpConfig(AdamConfig(), num_epochs=args.epochs, num_workers=args.num_workers,
                       batch_size=args.batch_size, learning_rate=args.learning_rate)
    return run(args.artifact_dir, args.device, config, args.csv, args.target)


if __name__ == "__main__":
    main()
