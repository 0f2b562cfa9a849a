"""Burn's `examples/custom-image-dataset`, in Python: images in a folder per class, a small CNN.

Burn's example trains its VGG-style CNN (`burnlike.models.cnn.Cnn`) from scratch on CIFAR-10 as
PNG folders (`cifar10/train/<class>/*.png`, `cifar10/test/<class>/*.png`), read with
`ImageFolderDataset::new_classification`, normalised with CIFAR-10's mean and std, SGD at 0.02 for
30 epochs (70-80% test accuracy there). Any folder of that shape works: `--data DIR` holds `train/`
and `test/`. burnlike downloads nothing: fast.ai's cifar10.tgz (the mirror Burn uses) unpacks to
exactly this layout.

    python examples/custom_image_dataset.py --data /data/cifar10 [--epochs 30] [--artifact-dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, ImageBatcher
from burnlike.data.dataset import ImageFolderDataset
from burnlike.data.vision import CIFAR10_MEAN, CIFAR10_STD
from burnlike.models.cnn import CnnConfig
from burnlike.optim import SgdConfig
from burnlike.record import CompactRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric


@config
class TrainingConfig:
    optimizer: SgdConfig
    num_epochs: int = 30
    batch_size: int = 128
    num_workers: int = 4
    seed: int = 42
    learning_rate: float = 0.02


def create_artifact_dir(artifact_dir: str) -> None:
    # Remove existing artifacts before to get an accurate learner summary
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def train(artifact_dir: str, data: Path, config: TrainingConfig, device: str) -> float:
    """Returns the best validation accuracy (%)."""
    create_artifact_dir(artifact_dir)
    config.save(f"{artifact_dir}/config.json")
    burnlike.seed(config.seed)

    # Dataloaders: the images stay uint8 until the batcher normalises a whole batch
    train_dataset = ImageFolderDataset.new_classification(data / "train")
    test_dataset = ImageFolderDataset.new_classification(data / "test", classes=train_dataset.classes)
    batcher = ImageBatcher(CIFAR10_MEAN, CIFAR10_STD)
    dataloader_train = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(train_dataset))
    # NOTE: we use the test set as validation for demonstration purposes (as Burn's example does)
    dataloader_test = (DataLoaderBuilder(batcher).batch_size(config.batch_size)
                       .num_workers(config.num_workers).build(test_dataset))

    # Learner config
    learner = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder())
               .devices([device]).num_epochs(config.num_epochs).summary()
               .build(CnnConfig(num_classes=train_dataset.num_classes()).init(device), config.optimizer.init(),
                      config.learning_rate))

    # Training
    start = time.monotonic()
    result = learner.fit(dataloader_train, dataloader_test)
    elapsed = int(time.monotonic() - start)
    print(f"Training completed in {elapsed // 60}m{elapsed % 60}s")
    result.model.save_file(f"{artifact_dir}/model", CompactRecorder())
    from burnlike.train.logger import read_epochs

    return max(read_epochs(artifact_dir, "valid", "Accuracy").values())


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder holding train/<class>/ and test/<class>/")
    parser.add_argument("--artifact-dir", default="/tmp/custom-image-dataset")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-workers", type=int, default=4)
    args = parser.parse_args(argv)
    config = TrainingConfig(SgdConfig(), num_epochs=args.epochs, batch_size=args.batch_size,
                            num_workers=args.num_workers)
    return train(args.artifact_dir, args.data, config, args.device)


if __name__ == "__main__":
    main()
