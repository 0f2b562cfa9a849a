"""`LearnerBuilder` translations a regression could drop silently (issue 17): the device count,
and `trainer_kwargs(callbacks=...)` adding to burnlike's callbacks instead of replacing them."""

import pytest
import torch
from lightning.pytorch.callbacks import Callback, Checkpoint, EarlyStopping, ProgressBar
from toy import Classifier, loader

from burnlike.optim import SgdConfig
from burnlike.record import DefaultRecorder
from burnlike.train import LearnerBuilder, MetricEarlyStoppingStrategy
from burnlike.train.metric import LossMetric


@pytest.mark.parametrize("devices", [["cpu", "cpu"], [torch.device("cpu")] * 3, ["cpu"]])
def test_devices_gives_the_trainer_that_many_devices(tmp_path, devices):
    learner = LearnerBuilder(tmp_path).devices(devices).progress_bar(False).build(Classifier(), SgdConfig(), 0.1)
    assert learner.trainer.num_devices == len(devices)
    assert type(learner.trainer.accelerator).__name__ == "CPUAccelerator"


class EpochEnds(Callback):
    def __init__(self) -> None:
        self.epochs: list[int] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.epochs.append(trainer.current_epoch + 1)


def test_trainer_kwargs_callbacks_are_added_to_burnlikes(tmp_path):
    mine = EpochEnds()
    learner = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(2)
               .with_file_checkpointer(DefaultRecorder()).early_stopping(MetricEarlyStoppingStrategy(LossMetric()))
               .trainer_kwargs(callbacks=[mine]).build(Classifier(), SgdConfig(), 0.1))
    callbacks = learner.trainer.callbacks
    assert mine in callbacks
    assert any(isinstance(c, Checkpoint) and type(c).__module__.startswith("burnlike") for c in callbacks)
    assert any(isinstance(c, EarlyStopping) for c in callbacks)
    assert isinstance(learner.trainer.progress_bar_callback, ProgressBar)
    assert type(learner.trainer.progress_bar_callback).__module__.startswith("burnlike")
    learner.fit(loader(32, 32), loader(32, 32, seed=1))
    assert mine.epochs == [1, 2]  # mine ran, and so did burnlike's checkpointer:
    models = sorted(p.name for p in (tmp_path / "checkpoint").iterdir() if p.name.startswith("model-"))
    assert models == ["model-1.mpk", "model-2.mpk"]


def test_trainer_kwargs_callbacks_and_callback_combine(tmp_path):
    first, second = EpochEnds(), EpochEnds()
    learner = (LearnerBuilder(tmp_path).progress_bar(False).trainer_kwargs(callbacks=[first])
               .callback(second).build(Classifier(), SgdConfig(), 0.1))
    assert first in learner.trainer.callbacks and second in learner.trainer.callbacks
