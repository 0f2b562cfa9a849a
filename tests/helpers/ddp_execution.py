"""Child-process script of tests/journeys/test_ddp.py: a 2-process CPU DDP run through Burn 0.21's spelling,
`SupervisedTraining(...).with_training_strategy(ExecutionStrategy.ddp(devices, DistributedConfig()))`.
Each rank writes its callback metrics to `rank{rank}.json` in the artifact dir."""

import json
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `tests.helpers`
from burnlike.optim import AdamConfig  # noqa: E402
from burnlike.train import DistributedConfig, ExecutionStrategy, Learner, SupervisedTraining  # noqa: E402
from burnlike.train.metric import AccuracyMetric, LossMetric  # noqa: E402
from tests.helpers.toy import Classifier, blobs, collate  # noqa: E402


def report_group_at_exit(artifact_dir: str, rank: dict[str, int]) -> None:
    """At exit, after burnlike's own exit handler (registered later, so run earlier), write whether
    the process group is up: `group{rank}.txt` holds "ended" or "up"."""
    import atexit

    def report() -> None:
        up = torch.distributed.is_available() and torch.distributed.is_initialized()
        Path(artifact_dir, f"group{rank.get('rank', 'unknown')}.txt").write_text("up" if up else "ended")

    atexit.register(report)


def main(artifact_dir: str) -> None:
    rank: dict[str, int] = {}
    report_group_at_exit(artifact_dir, rank)
    torch.manual_seed(0)
    train = DataLoader(blobs(128), batch_size=32, collate_fn=collate)
    valid = DataLoader(blobs(64, seed=1), batch_size=16, collate_fn=collate)
    result = (SupervisedTraining(artifact_dir, train, valid)
              .metrics((AccuracyMetric(), LossMetric())).num_epochs(1).progress_bar(False)
              .with_training_strategy(ExecutionStrategy.ddp(["cpu", "cpu"], DistributedConfig()))
              .launch(Learner(Classifier(), AdamConfig(), 5e-2)))
    trainer = result.trainer
    rank["rank"] = trainer.global_rank
    out = {k: float(v) for k, v in trainer.callback_metrics.items()}
    out["world_size"] = trainer.world_size
    Path(artifact_dir, f"rank{trainer.global_rank}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
