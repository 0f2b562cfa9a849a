"""`burnlike.train.builder`: what `LearnerBuilder` hands the Lightning Trainer. Devices (one auto
device by default), gradient accumulation (Burn's: summed, the LR scheduler stepped every batch, a
short group at the epoch's end dropped; Lightning's averaging under its own name), callbacks (one's own next to burnlike's checkpointer,
early stopping and progress display; one's own progress display replacing the builder's), the
switches (the last value wins), text metrics (logged for both splits, each its own instance, left
out of the summary), `num_iterations`/`valid_every` (epochs of n batches), the profiler (Lightning's
pass-through one without its per-hook cost, unless one is asked for), and errors naming the setting
or what was passed instead."""

from __future__ import annotations

import io
import threading

import pytest
import torch
from lightning.pytorch.callbacks import Callback, Checkpoint, EarlyStopping, ProgressBar
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from burnlike.module import Module
from burnlike.optim import AdamConfig, ExponentialLrSchedulerConfig, GradientClippingConfig, SgdConfig
from burnlike.record import DefaultRecorder, RecorderCheckpointIO, load_checkpoint
from burnlike.train import (
    LearnerBuilder,
    MetricEarlyStoppingStrategy,
    RegressionOutput,
    TrainOutput,
    TrainStep,
    ValidStep,
    backward,
)
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric, TopKAccuracyMetric
from burnlike.train.renderer import BurnProgressBar, PlainProgress
from burnlike.train.tui import LiveView
from tests.helpers.fit import metrics_builder
from tests.helpers.toy import Batch, Classifier, collate, loader


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
    # Burn's accumulation (sums, scheduler per batch) is the module's manual step, not Lightning's averaging
    assert trainer.accumulate_grad_batches == 1 and not learner.module.automatic_optimization
    assert learner.module.manual_step.accumulation == 4 and learner.module.graph_step is None
    assert type(trainer.accelerator).__name__ == "CPUAccelerator" and trainer.num_devices == 1
    learner.fit(loader(256, 32))  # 8 batches → 2 optimizer steps
    assert trainer.global_step == 2


# --- Burn's gradient accumulation --------------------------------------------------------------------
class Slope(Module, TrainStep[Batch, RegressionOutput], ValidStep[Batch, RegressionOutput]):
    """loss = w·Σx with x = 1: every batch's gradient is 1, so w is minus the sum of lr·(summed gradient)
    over the optimizer's steps (SGD without momentum)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros((), dtype=torch.float64))

    def item(self, batch: Batch) -> RegressionOutput:
        loss = self.w * batch.x.sum()
        return RegressionOutput(loss, loss.reshape(1, 1), loss.detach().reshape(1, 1))

    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        item = self.item(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: Batch) -> RegressionOutput:
        return self.item(batch)


def ones(n: int) -> DataLoader:
    return DataLoader(TensorDataset(torch.ones(n, 1, dtype=torch.float64), torch.zeros(n)), batch_size=1,
                      collate_fn=collate)


def burns_epochs(lr_at, batches: int, epochs: int, accumulation: int) -> tuple[float, list[float]]:
    """burn-train/src/learner/supervised/strategies/single/epoch.rs (v0.21.0), `SingleDeviceTrainEpoch::run`:
    per item `learner.lr_step()`, then `accumulator.accumulate(grads)`; once `accumulation <=
    accumulation_current` the optimizer steps on `accumulator.grads()` (their sum) at the current lr; the
    accumulator is the epoch's. Returns the weight and the lr of every iteration."""
    w, k, lrs = 0.0, 0, []
    for _ in range(epochs):
        summed, current = 0.0, 0
        for _ in range(batches):
            k += 1
            lr = lr_at(k)  # lr_step
            lrs.append(lr)
            summed, current = summed + 1.0, current + 1  # each batch's gradient is 1
            if accumulation <= current:
                w -= lr * summed
                summed, current = 0.0, 0
    return w, lrs


def slope_fit(tmp_path, lr, *, batches=4, epochs=1, accumulation=2, **trainer_kwargs):
    builder = (LearnerBuilder(tmp_path).devices(["cpu"]).num_epochs(epochs).metric_train(LearningRateMetric())
               .progress_bar(False).with_application_logger(False))
    if accumulation:
        builder = builder.grads_accumulation(accumulation)
    learner = builder.trainer_kwargs(**trainer_kwargs).build(Slope(), SgdConfig(), lr)
    learner.fit(ones(batches), ones(1) if trainer_kwargs.get("val_check_interval") else None)
    return learner.module.model.w.item(), learner


def logged_lrs(tmp_path, epochs: int) -> list[float]:
    return [float(line.split(",")[0]) for e in range(1, epochs + 1)
            for line in (tmp_path / "train" / f"epoch-{e}" / "Learning_Rate.log").read_text().splitlines()]


def test_grads_accumulation_sums_the_gradients_as_burn_does(tmp_path):
    """epoch.rs (v0.21.0): 4 batches in groups of 2 at a constant lr 0.5 step twice on a sum of 2: w = -2
    (Lightning's averaging, accumulate_grad_batches=2, gives -1)."""
    w, learner = slope_fit(tmp_path, 0.5)
    assert w == burns_epochs(lambda k: 0.5, 4, 1, 2)[0] == -2.0
    assert learner.trainer.global_step == 2
    lightning, _ = slope_fit(tmp_path / "lightning", 0.5, accumulation=0, accumulate_grad_batches=2)
    assert lightning == -1.0


def test_grads_accumulation_steps_the_scheduler_every_batch_as_burn_does(tmp_path):
    """epoch.rs (v0.21.0): `learner.lr_step()` every iteration, so the steps after batches 2 and 4 use the
    schedule's 2nd and 4th rates: 0.25·2 + 0.0625·2, w = -0.625 (Lightning steps the scheduler per optimizer
    step: 0.5·1 + 0.25·1, w = -0.75); the learning-rate metric logs every iteration's rate."""
    schedule = ExponentialLrSchedulerConfig(0.5, 0.5)
    w, _ = slope_fit(tmp_path, schedule)
    expected, lrs = burns_epochs(lambda k: 0.5 * 0.5 ** (k - 1), 4, 1, 2)
    assert w == expected == -0.625
    assert logged_lrs(tmp_path, 1) == lrs == [0.5, 0.25, 0.125, 0.0625]
    lightning, _ = slope_fit(tmp_path / "lightning", schedule, accumulation=0, accumulate_grad_batches=2)
    assert lightning == -0.75


def test_grads_accumulation_drops_a_group_the_epoch_ends_in(tmp_path):
    """epoch.rs (v0.21.0): the accumulator is created per epoch, so 5 batches in groups of 2 step after the
    2nd and 4th; the 5th's gradient is dropped, and the next epoch starts a fresh group; the scheduler
    keeps counting iterations across epochs."""
    schedule = ExponentialLrSchedulerConfig(0.5, 0.5)
    w, learner = slope_fit(tmp_path, schedule, batches=5, epochs=2)
    expected, lrs = burns_epochs(lambda k: 0.5 * 0.5 ** (k - 1), 5, 2, 2)
    assert w == pytest.approx(expected, rel=1e-15) and learner.trainer.global_step == 4
    assert logged_lrs(tmp_path, 2) == pytest.approx(lrs, rel=1e-15)
    assert all(p.grad is None for p in learner.module.model.parameters())  # nothing left over


def test_a_validation_inside_a_group_keeps_the_groups_gradients(tmp_path):
    """A validation after batch 3 (val_check_interval) sits inside the second group: the group's gradient
    so far is kept, so the weights are those of a run without it (Burn validates at epoch ends only)."""
    w, learner = slope_fit(tmp_path, 0.5, batches=4, val_check_interval=3)
    assert w == -2.0 and learner.trainer.global_step == 2


def test_grads_accumulation_refuses_lightnings_accumulation_and_clipping_beside_it(tmp_path):
    builder = LearnerBuilder(tmp_path).devices(["cpu"]).progress_bar(False).grads_accumulation(2)
    with pytest.raises(ValueError, match=r"^grads_accumulation\(2\) with trainer_kwargs\(accumulate_grad_batches=...\): "
                                         "one or the other"):
        builder.trainer_kwargs(accumulate_grad_batches=2).build(Slope(), SgdConfig(), 0.1)
    builder = LearnerBuilder(tmp_path).devices(["cpu"]).progress_bar(False).grads_accumulation(2)
    with pytest.raises(ValueError, match="clip with the optimizer config's grad_clipping"):
        builder.trainer_kwargs(gradient_clip_val=1.0).build(Slope(), SgdConfig(), 0.1)
    clipped = SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.5))  # Burn's clipping: each step
    learner = (LearnerBuilder(tmp_path / "clip").devices(["cpu"]).progress_bar(False).with_application_logger(False)
               .grads_accumulation(2).build(Slope(), clipped, 0.5))
    learner.fit(ones(4))
    assert learner.module.model.w.item() == -0.5  # each summed gradient 2 clipped to 0.5, lr 0.5, 2 steps


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


@pytest.mark.parametrize("epoch", [0, -2])
def test_a_non_positive_checkpoint_epoch_names_the_setting(tmp_path, epoch):
    with pytest.raises(ValueError, match=rf"^checkpoint must be a positive integer, got {epoch}$"):
        LearnerBuilder(tmp_path).checkpoint(epoch)


# --- iterations and validation intervals ---------------------------------------------------------------
@pytest.mark.parametrize(("iterations", "every", "epochs", "batches"), [
    (12, 3, 4, 3), (12, None, 1, 12), (None, 5, 7, 5), (None, None, 7, None)])
def test_num_iterations_and_valid_every_set_the_epochs_and_their_batches(tmp_path, iterations, every, epochs, batches):
    builder = LearnerBuilder(tmp_path).num_epochs(7).devices(["cpu"]).progress_bar(False)
    if iterations is not None:
        builder.num_iterations(iterations)
    if every is not None:
        builder.valid_every(every)
    learner = builder.build(Classifier(), AdamConfig(), 1e-3)
    assert learner.trainer.max_epochs == epochs and learner.epoch_batches == batches


def test_iterations_refuse_a_remainder_and_a_limit_on_the_batches(tmp_path):
    with pytest.raises(ValueError, match=r"^num_iterations\(10\) is not a multiple of valid_every\(4\): each epoch is 4 "
                                         r"batches \(e\.g\. num_iterations\(8\)\)$"):
        LearnerBuilder(tmp_path).num_iterations(10).valid_every(4).build(Classifier(), AdamConfig(), 1e-3)
    with pytest.raises(ValueError, match="leave trainer_kwargs\\(limit_train_batches=...\\) out"):
        (LearnerBuilder(tmp_path).valid_every(4).trainer_kwargs(limit_train_batches=2)
         .build(Classifier(), AdamConfig(), 1e-3))
    for method in ("num_iterations", "valid_every"):
        with pytest.raises(ValueError, match=f"^{method} must be a positive integer, got 0$"):
            getattr(LearnerBuilder(tmp_path), method)(0)


def test_the_trainer_profiles_nothing_unless_a_profiler_is_asked_for(tmp_path):
    from lightning.pytorch.profilers import PassThroughProfiler, SimpleProfiler

    from burnlike.train.profiler import NoProfiler

    trainer = LearnerBuilder(tmp_path).devices(["cpu"]).build(Classifier(), AdamConfig(), 1e-3).trainer
    assert isinstance(trainer.profiler, NoProfiler) and isinstance(trainer.profiler, PassThroughProfiler)
    context = trainer.profiler.profile("training_step")
    assert trainer.profiler.profile("other") is context  # one shared no-op, not a new one per hook
    with context:
        pass
    asked = (LearnerBuilder(tmp_path).devices(["cpu"]).trainer_kwargs(profiler="simple")
             .build(Classifier(), AdamConfig(), 1e-3).trainer)
    assert isinstance(asked.profiler, SimpleProfiler)
