"""Run by test_ddp: a 2-process CPU DDP fit through LearnerBuilder.devices(["cpu", "cpu"])."""

import json
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).parent))
from toy import Classifier, blobs, collate  # noqa: E402

from burnlike.optim import AdamConfig  # noqa: E402
from burnlike.train import LearnerBuilder  # noqa: E402
from burnlike.train.metric import AccuracyMetric, LossMetric  # noqa: E402


def main(artifact_dir: str) -> None:
    torch.manual_seed(0)
    learner = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(LossMetric())
        .devices(["cpu", "cpu"]).num_epochs(2).progress_bar(False)
        .trainer_kwargs(strategy="ddp")
        .build(Classifier(), AdamConfig(), 5e-2)
    )
    # Unequal halves: rank 0 sees 96 samples, rank 1 sees 96 too, but the valid values differ per rank.
    train = DataLoader(blobs(192), batch_size=32, collate_fn=collate)
    valid = DataLoader(blobs(128, seed=1), batch_size=32, collate_fn=collate)
    result = learner.fit(train, valid)
    trainer = result.trainer
    out = {k: float(v) for k, v in trainer.callback_metrics.items()}
    Path(artifact_dir, f"rank{trainer.global_rank}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
