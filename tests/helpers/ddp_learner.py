"""Child-process script of tests/journeys/test_ddp.py: a 2-process CPU DDP fit through
LearnerBuilder.devices(["cpu", "cpu"]); each rank writes its callback metrics and global step to
`rank{rank}.json`. With a second argument `interrupt`, only rank 1 asks the interrupter to stop, after step 2."""

import json
import sys
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `tests.helpers`
from burnlike.optim import AdamConfig  # noqa: E402
from burnlike.train import Interrupter, LearnerBuilder  # noqa: E402
from burnlike.train.metric import AccuracyMetric, LossMetric  # noqa: E402
from tests.helpers.ddp_execution import report_group_at_exit  # noqa: E402
from tests.helpers.toy import Classifier, blobs, collate  # noqa: E402


class StopOnRankOne(L.Callback):
    """Rank 1 alone asks to stop after its second step; rank 0's interrupter is never told."""

    def __init__(self, interrupter: Interrupter) -> None:
        self.interrupter = interrupter

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):  # noqa: ANN001
        if trainer.global_rank == 1 and trainer.global_step == 2:
            self.interrupter.stop("rank 1 asked")


def main(artifact_dir: str, interrupt: bool) -> None:
    rank: dict[str, int] = {}
    report_group_at_exit(artifact_dir, rank)
    torch.manual_seed(0)
    builder = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(LossMetric())
        .devices(["cpu", "cpu"]).num_epochs(2).progress_bar(False)
        .trainer_kwargs(strategy="ddp")
    )
    if interrupt:
        builder.callback(StopOnRankOne(builder.interrupter()))
    learner = builder.build(Classifier(), AdamConfig(), 5e-2)
    # Each rank trains on 96 of the 192 samples and validates on its own half, so the ranks' own valid values differ.
    train = DataLoader(blobs(192), batch_size=32, collate_fn=collate)
    valid = DataLoader(blobs(128, seed=1), batch_size=32, collate_fn=collate)
    result = learner.fit(train, valid)
    trainer = result.trainer
    rank["rank"] = trainer.global_rank
    out = {k: float(v) for k, v in trainer.callback_metrics.items()} | {"global_step": trainer.global_step}
    Path(artifact_dir, f"rank{trainer.global_rank}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] == ["interrupt"])
