"""Child-process script of tests/journeys/test_preemption.py: train the toy classifier for 4 epochs with
checkpoints and save the final model as `final.mpk`. Mode `kill` blocks inside epoch 3 (after printing
"blocked") for the test to SIGKILL it, `resume=<epoch>` resumes from that epoch's checkpoint, `plain` runs straight."""

import sys
from pathlib import Path

import lightning as L
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `tests.helpers`
from burnlike.optim import AdamConfig  # noqa: E402
from burnlike.record import DefaultRecorder  # noqa: E402
from burnlike.train import LearnerBuilder  # noqa: E402
from burnlike.train.metric import AccuracyMetric, LossMetric  # noqa: E402
from tests.helpers.toy import Classifier, loader  # noqa: E402


class BlockAt(L.Callback):
    """Announce, then wait forever at (epoch, batch): the test SIGKILLs the process here."""

    def __init__(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch = epoch, batch

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):  # noqa: ANN001
        if trainer.current_epoch + 1 == self.epoch and batch_idx == self.batch:
            print("blocked", flush=True)
            sys.stdin.readline()


def main(artifact_dir: str, mode: str) -> None:
    torch.manual_seed(0)
    builder = (LearnerBuilder(artifact_dir).metric_valid_numeric(LossMetric()).metric_valid_numeric(AccuracyMetric())
               .with_file_checkpointer(DefaultRecorder()).num_epochs(4).progress_bar(False))
    if mode == "kill":
        builder.callback(BlockAt(epoch=3, batch=2))
    elif mode.startswith("resume="):
        builder.checkpoint(int(mode.split("=")[1]))
    result = builder.build(Classifier(), AdamConfig(), 1e-2).fit(loader(256, 32), loader(64, 32, seed=1))
    result.model.save_file(Path(artifact_dir) / "final", DefaultRecorder())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
