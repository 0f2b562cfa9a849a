"""`burnlike.train.builder`: what `LearnerBuilder` hands the Lightning Trainer. Devices (one auto
device by default), gradient accumulation, callbacks (one's own next to burnlike's checkpointer,
early stopping and progress display; one's own progress display replacing the builder's), the
switches (the last value wins), text metrics (logged for both splits, each its own instance, left
out of the summary), and errors naming the setting or what was passed instead."""

from __future__ import annotations

import io
import threading

import pytest
import torch
from lightning.pytorch.callbacks import Callback, Checkpoint, EarlyStopping, ProgressBar

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import DefaultRecorder, RecorderCheckpointIO, load_checkpoint
from burnlike.train import LearnerBuilder, MetricEarlyStoppingStrategy
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric, LossMetric, TopKAccuracyMetric
from burnlike.train.renderer import BurnProgressBar, PlainProgress
from burnlike.train.tui import LiveView
from tests.helpers.fit import metrics_builder
from tests.helpers.toy import Classifier, loader


class EpochEnds(Callback):
    """Notes each train epoch's end (from 1)."""

    def __init__(self) -> None:
        self.epochs: list[int] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.epochs.append(trainer.current_epoch + 1)


# --- devices and the trainer's settings ------------------------------------------------------------
def test_the_builder_without_devices_asks_lightning_for_one_auto_device(tmp_path):
    trainer = LearnerBuilder(tmp_path).progress_bar(False).build(Classifier(), AdamConfig(), 1e-3).trainer
    expected = "CUDAAccelerator" if torch.cuda.is_available() else "CPUAccelerator"
    assert type(trainer.accelerator).__name__ == expected and trainer.num_devices == 1


@pytest.mark.parametrize("devices", [["cpu", "cpu"], [torch.device("cpu")] * 3, ["cpu"]])
def test_devices_gives_the_trainer_that_many_devices(tmp_path, devices):
    learner = LearnerBuilder(tmp_path).devices(devices).progress_bar(False).build(Classifier(), SgdConfig(), 0.1)
    assert learner.trainer.num_devices == len(devices)
    assert type(learner.trainer.accelerator).__name__ == "CPUAccelerator"


def test_accumulation_and_devices_reach_the_trainer(tmp_path):
    learner = metrics_builder(tmp_path, 1).grads_accumulation(4).build(Classifier(), AdamConfig(), 1e-3)
    trainer = learner.trainer
    assert trainer.accumulate_grad_batches == 4
    assert type(trainer.accelerator).__name__ == "CPUAccelerator" and trainer.num_devices == 1
    learner.fit(loader(256, 32))  # 8 batches → 2 optimizer steps
    assert trainer.global_step == 2


def test_builder_application_logger_and_cuda_graph_switches_take_their_last_value(tmp_path):
    generator = torch.Generator()
    builder = LearnerBuilder(tmp_path).devices(["cpu"]).progress_bar(False)
    learner = builder.with_application_logger(False).with_application_logger(True).build(Classifier(), SgdConfig(), 0.1)
    assert learner.application_logger is True
    graphed = builder.cuda_graph(True, generators=[generator]).build(Classifier(), SgdConfig(), 0.1)
    assert tuple(graphed.module.graph_step.config.generators) == (generator,)
    eager = builder.cuda_graph(False).build(Classifier(), SgdConfig(), 0.1)
    assert eager.module.graph_step is None


def test_cuda_graph_false_keeps_the_default_path(tmp_path):
    learner = LearnerBuilder(tmp_path).devices(["cpu"]).progress_bar(False).cuda_graph(False).build(
        Classifier(), AdamConfig(), 1e-2)
    assert learner.module.graph_step is None and learner.module.automatic_optimization


# --- callbacks and progress displays ---------------------------------------------------------------
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


def test_a_progress_bar_of_ones_own_replaces_the_builders(tmp_path):
    mine = PlainProgress(stream=io.StringIO())
    for builder in (LearnerBuilder(tmp_path).callback(mine), LearnerBuilder(tmp_path).trainer_kwargs(callbacks=[mine])):
        trainer = builder.devices(["cpu"]).build(Classifier(), AdamConfig(), 1e-2).trainer
        assert trainer.progress_bar_callback is mine
        assert sum(isinstance(c, (PlainProgress, LiveView, BurnProgressBar)) for c in trainer.callbacks) == 1


def test_the_builder_hands_out_one_interrupter_not_yet_stopped(tmp_path):
    """For a callback or a signal handler to stop the run with."""
    builder = LearnerBuilder(tmp_path)
    assert builder.interrupter() is builder.interrupter() and not builder.interrupter().should_stop()


# --- metrics ---------------------------------------------------------------------------------------
def test_text_metrics_are_logged_for_both_splits_but_left_out_of_the_summary(tmp_path, capsys):
    torch.manual_seed(0)
    accuracy = AccuracyMetric()
    learner = (LearnerBuilder(tmp_path).metrics_text((accuracy, TopKAccuracyMetric(2))).metrics(LossMetric())
               .devices(["cpu"]).num_epochs(1).summary().progress_bar(False).with_application_logger(False)
               .build(Classifier(), AdamConfig(), 1e-2))
    assert learner.numeric == {"train": ["Loss"], "valid": ["Loss"]}
    train, valid = learner.module.metrics("train"), learner.module.metrics("valid")
    assert [m.name for m in train] == ["Accuracy", "Top-K Accuracy @ TopK(2)", "Loss"] == [m.name for m in valid]
    assert train[0] is accuracy and valid[0] is not accuracy  # each split has its own instance
    result = learner.fit(loader(64, 16), loader(32, 16))
    for split in ("train", "valid"):
        for name in ("Accuracy", "Top-K_Accuracy_@_TopK(2)"):
            assert 0.0 <= read_metric_log(tmp_path / split / "epoch-1" / f"{name}.log") <= 100.0
    assert {m.name for m in result.summary.metrics} == {"Loss"}
    assert "Accuracy" not in capsys.readouterr().out
    assert not (tmp_path / "experiment.log").exists()  # with_application_logger(False)


# --- errors ----------------------------------------------------------------------------------------
# --- async checkpoints ------------------------------------------------------------------------------
def test_async_checkpoints_are_the_file_checkpointers_one_plugin(tmp_path):
    """One CheckpointIO: beside with_file_checkpointer, Lightning refused a second one ("Received
    multiple values for CheckpointIO flags in plugins")."""
    learner = (metrics_builder(tmp_path, epochs=2).with_file_checkpointer(DefaultRecorder()).async_checkpoints()
               .build(Classifier(), AdamConfig(), 1e-2))
    io_plugin = learner.trainer.strategy.checkpoint_io
    assert isinstance(io_plugin, RecorderCheckpointIO) and io_plugin.async_save
    learner.fit(loader(64, 16), loader(32, 16))
    sync = (metrics_builder(tmp_path / "sync", epochs=2).with_file_checkpointer(DefaultRecorder())
            .build(Classifier(), AdamConfig(), 1e-2))
    assert not sync.trainer.strategy.checkpoint_io.async_save
    for name in ("trainer-2.mpk", "model-2.mpk"):  # every write done at the fit's end, and whole
        assert load_checkpoint(tmp_path / "checkpoint" / name) if name.startswith("trainer") else \
            Classifier().load_file(tmp_path / "checkpoint" / name, DefaultRecorder())


def test_async_checkpoints_need_the_file_checkpointer_and_refuse_a_second_checkpoint_io(tmp_path):
    with pytest.raises(ValueError, match=r"^async_checkpoints\(\) needs with_file_checkpointer\(recorder\)"):
        metrics_builder(tmp_path).async_checkpoints().build(Classifier(), AdamConfig(), 1e-2)
    own = RecorderCheckpointIO(DefaultRecorder())
    with pytest.raises(ValueError, match=r"already has a CheckpointIO; give it async_save=True itself"):
        (metrics_builder(tmp_path).with_file_checkpointer(DefaultRecorder()).async_checkpoints()
         .trainer_kwargs(plugins=[own]).build(Classifier(), AdamConfig(), 1e-2))
    mine = (metrics_builder(tmp_path).with_file_checkpointer(DefaultRecorder()).trainer_kwargs(plugins=[own])
            .build(Classifier(), AdamConfig(), 1e-2))
    assert mine.trainer.strategy.checkpoint_io is own  # the user's own plugin, not a second one


def test_non_positive_builder_values_name_the_setting(tmp_path):
    with pytest.raises(ValueError, match="num_epochs"):
        LearnerBuilder(tmp_path).num_epochs(0)
    with pytest.raises(ValueError, match="grads_accumulation"):
        LearnerBuilder(tmp_path).grads_accumulation(-1)


def test_with_logger_names_what_it_expects_and_what_it_got(tmp_path):
    with pytest.raises(TypeError, match=r"^with_logger expects lightning loggers \(e\.g\. TensorBoardLogger"
                                        r"\(\.\.\.\)\), got str$"):
        LearnerBuilder(tmp_path).with_logger("tensorboard")


def test_with_interrupter_names_what_it_got(tmp_path):
    for wrong, got in (("stop", "str"), (threading.Event(), "Event")):
        with pytest.raises(TypeError, match=rf"^with_interrupter expects a burnlike\.train\.Interrupter, got {got}$"):
            LearnerBuilder(tmp_path).with_interrupter(wrong)
