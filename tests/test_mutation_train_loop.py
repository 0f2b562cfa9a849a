"""Training-loop behaviour the other tests leave open, found by mutation testing (issue 17): the
interrupter's log line and its no-op when never stopped, the device strategies' error messages and
custom strategies, the evaluator's summary rows, the progress displays in the valid split and
across runs, warm-up and early-stopping state, and the fast path's optimizer setup. Real Lightning
fits on tiny data."""

import functools
import io
import logging
import re
import time

import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.strategies import DDPStrategy
from rich.console import Console
from torch.utils.data import DataLoader, IterableDataset
from toy import EAGER_ON_CPU, Classifier, FailsInTraining, blobs, collate, loader

import burnlike
from burnlike.optim import AdamConfig
from burnlike.train import (
    DistributedConfig,
    EvaluatorBuilder,
    ExecutionStrategy,
    Interrupter,
    Learner,
    LearnerBuilder,
    LearningStrategy,
    MetricEarlyStoppingStrategy,
    ReduceOperation,
    TrainingStrategy,
)
from burnlike.train.evaluator import TEST_EPOCH
from burnlike.train.graph_step import host_lr
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.metric.store import Split
from burnlike.train.quiet import DropMessages
from burnlike.train.renderer import BurnProgressBar, PlainProgress, progress_display
from burnlike.train.summary import MetricSummary
from burnlike.train.tui import LiveView, _duration


def builder(tmp_path, epochs=1):
    return (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).devices(["cpu"]).num_epochs(epochs)
            .with_application_logger(False).progress_bar(False))


# Interrupter --------------------------------------------------------------------------------------
def test_interrupter_keeps_its_reason():
    interrupter = Interrupter()
    assert interrupter.get_message() is None and not interrupter.should_stop()
    interrupter.stop("disk almost full")
    assert interrupter.should_stop() and interrupter.get_message() == "disk almost full"
    interrupter.reset()
    assert not interrupter.should_stop()


def test_an_interrupter_never_stopped_changes_nothing(tmp_path):
    learner = builder(tmp_path, epochs=2).with_interrupter(Interrupter()).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16))
    assert learner.trainer.global_step == 8  # 4 steps an epoch, both epochs


@pytest.mark.parametrize(("reason", "logged"), [("user asked", "user asked"), (None, "Reason unknown")])
def test_an_interrupted_run_logs_why_and_after_which_step(tmp_path, caplog, reason, logged):
    interrupter = Interrupter()
    interrupter.stop(reason)  # already set: the run stops after its first step
    learner = builder(tmp_path, epochs=2).with_interrupter(interrupter).build(Classifier(), AdamConfig(), 1e-2)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        learner.fit(loader(64, 16))
    assert learner.trainer.global_step == 1
    assert f"Training interrupted: {logged} (after step 1)" in [r.getMessage() for r in caplog.records]


def test_with_interrupter_names_what_it_got(tmp_path):
    with pytest.raises(TypeError, match=r"^with_interrupter expects a burnlike\.train\.Interrupter, got Event$"):
        LearnerBuilder(tmp_path).with_interrupter(__import__("threading").Event())


# Device strategies --------------------------------------------------------------------------------
@pytest.mark.parametrize(("make", "what"), [
    (LearningStrategy.multi_device_naive, "LearningStrategy.multi_device_naive"),
    (LearningStrategy.ddp, "LearningStrategy.ddp"),
    (TrainingStrategy.ddp, "TrainingStrategy.ddp"),
    (functools.partial(TrainingStrategy.custom, "ddp"), "TrainingStrategy.custom"),
    (ExecutionStrategy.multi, "ExecutionStrategy.multi"),
    (ExecutionStrategy.ddp, "ExecutionStrategy.ddp"),
])
def test_strategies_refuse_a_single_device_naming_themselves(make, what):
    with pytest.raises(TypeError, match=rf"^{what} takes a list of devices, got the single device 'cpu': "
                                        r"use \['cpu'\]$"):
        make("cpu")


@pytest.mark.parametrize(("make", "what"), [(LearningStrategy.ddp, "LearningStrategy.ddp"),
                                            (TrainingStrategy.ddp, "TrainingStrategy.ddp"),
                                            (ExecutionStrategy.ddp, "ExecutionStrategy.ddp")])
def test_ddp_strategies_name_a_wrong_config(make, what):
    with pytest.raises(TypeError, match=rf"^{what}: config must be a DistributedConfig/CollectiveConfig, got dict$"):
        make(["cpu", "cpu"], {"num_nodes": 2})


def test_distributed_config_and_strategy_errors_say_what_to_use(tmp_path):
    with pytest.raises(NotImplementedError, match=r"^DistributedConfig\(all_reduce_op=ReduceOperation\.SUM\): Lightning's "
                                                  r"DDP averages gradients across processes; use ReduceOperation\.MEAN "
                                                  r"\(and scale the learning rate if you relied on sums\)$"):
        DistributedConfig(all_reduce_op=ReduceOperation.SUM)
    for nodes in (0, 1.5):
        with pytest.raises(ValueError, match=rf"^DistributedConfig\.num_nodes must be an integer >= 1, got {nodes}$"):
            DistributedConfig(num_nodes=nodes)
    with pytest.raises(TypeError, match=r"^expected a device strategy such as LearningStrategy\.single_device\('cpu'\), "
                                        r"ExecutionStrategy\.ddp\(\['cuda:0', 'cuda:1'\]\) or "
                                        r"TrainingStrategy\.custom\(\.\.\.\), got str$"):
        LearnerBuilder(tmp_path).learning_strategy("cpu")


def test_a_custom_strategy_reaches_the_trainer_with_or_without_devices(tmp_path):
    alone = TrainingStrategy.custom("ddp")
    assert alone.devices == () and alone.trainer_kwargs() == {"strategy": "ddp"}
    two = TrainingStrategy.custom("ddp", ["cpu", "cpu"])
    assert two.trainer_kwargs() == {"accelerator": "cpu", "devices": 2, "strategy": "ddp"}
    trainer = (LearnerBuilder(tmp_path).learning_strategy(two).progress_bar(False)
               .build(Classifier(), AdamConfig(), 1e-3).trainer)
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.num_devices == 2


# Evaluator, learner -------------------------------------------------------------------------------
def test_evaluator_summary_rows_are_the_test_values_at_the_test_epoch(tmp_path):
    burnlike.seed(0)
    evaluator = (EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).summary().progress_bar(False)
                 .with_application_logger(False).build(Classifier()))
    result = evaluator.eval("Blobs", loader(32, 16))
    rows = {m.name: m for m in evaluator.summary().metrics if m.split.startswith("test")}
    assert set(rows) == {"Accuracy", "Loss"}
    for name, row in rows.items():
        value = result.metrics[name]
        assert row == MetricSummary("test (blobs)", name, value, TEST_EPOCH, value, TEST_EPOCH, {TEST_EPOCH: value})


def test_a_plain_learner_says_how_to_train_it():
    with pytest.raises(TypeError) as error:
        Learner(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    assert str(error.value) == (
        "Learner(model, optim, lr) holds what to train (Burn 0.20); train it with "
        "SupervisedTraining(dir, train_loader, valid_loader)....launch(learner), or build a fitting "
        "learner with LearnerBuilder(dir)....build(model, optim, lr).fit(train_loader, valid_loader)")


def test_the_lightning_module_passes_keyword_arguments_to_the_model(tmp_path):
    learner = builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    x = torch.randn(3, 4)
    assert torch.equal(learner.module(x=x), learner.module.model(x))


# Progress displays --------------------------------------------------------------------------------
class ProbeBar(Callback):
    """Reads the progress bar's metrics in the middle of the valid epoch."""

    def __init__(self, bar: BurnProgressBar) -> None:
        self.bar, self.seen = bar, []

    def on_validation_batch_end(self, trainer, pl_module, *args):
        valid_loss = next(m for m in pl_module.metrics("valid") if m.name == "Loss")
        self.seen.append((self.bar.get_metrics(trainer, pl_module).get("Loss"), f"{valid_loss.running():.4g}"))


def test_the_progress_bar_shows_the_valid_running_means_while_validating(tmp_path):
    bar = BurnProgressBar()
    probe = ProbeBar(bar)
    builder(tmp_path).progress_bar(True).callback(bar, probe).build(Classifier(), AdamConfig(), 1e-2).fit(
        loader(64, 16), loader(32, 16))
    assert len(probe.seen) == 2 and all(shown == valid for shown, valid in probe.seen)


def terminal():
    return Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)


def loss_cells(frame):
    line = next(line for line in frame.splitlines() if line.startswith("│ Loss "))
    return [cell.strip() for cell in line.split("│")[2:-1]]  # train, train plot, valid, valid plot


def test_live_view_shows_valid_values_drawn_at_the_end_of_validation(tmp_path):
    console = terminal()
    learner = builder(tmp_path).progress_bar(True).callback(LiveView(refresh=1e9, console=console)).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16))
    out = console.file.getvalue()
    frame = out[out.rindex("╭"):]
    (valid,) = learner.module.store.epochs(Split.VALID, "Loss").values()
    assert loss_cells(frame)[2] == f"{valid:.4g}"


def test_live_view_shows_the_valid_running_value_during_validation(tmp_path):
    console = terminal()
    learner = builder(tmp_path).progress_bar(True).callback(LiveView(refresh=0.0, console=console)).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16))
    out = console.file.getvalue()
    frames = [f for f in out.split("╭") if "valid 1/2" in f]  # drawn after the first valid batch
    assert frames and all(loss_cells(f)[2] for f in frames)



def test_a_live_view_serves_another_run_after_one_ended_or_failed(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    with pytest.raises(RuntimeError, match="boom"):
        builder(tmp_path / "fails").progress_bar(True).callback(view).build(FailsInTraining(), AdamConfig(), 1e-2).fit(loader(32, 16))
    view.disable()  # the next run draws nothing: the failed run's display is gone
    builder(tmp_path / "quiet").progress_bar(True).callback(view).build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    view.enable()
    builder(tmp_path / "ends").progress_bar(True).callback(view).build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    view.disable()  # and after a run that ended, too
    before = console.file.getvalue()
    builder(tmp_path / "quiet2").progress_bar(True).callback(view).build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    assert console.file.getvalue() == before


def test_drop_messages_filters_records_containing_its_texts():
    drop = DropMessages(("tip: use", "noise"))

    def record(message):
        return logging.LogRecord("lightning", logging.INFO, __file__, 1, message, None, None)

    assert not drop.filter(record("a tip: use more workers"))
    assert not drop.filter(record("some noise here"))
    assert drop.filter(record("Epoch 1 done"))


# Early stopping state -----------------------------------------------------------------------------
def test_warmup_accepts_zero_and_refuses_booleans_and_fractions():
    strategy = MetricEarlyStoppingStrategy(LossMetric())
    assert strategy.with_warmup_epochs(0).warmup_epochs == 0
    for bad in (True, 1.5, "2"):
        with pytest.raises(ValueError, match=rf"^with_warmup_epochs: expected None or an integer >= 0, got {bad!r}$"):
            strategy.with_warmup_epochs(bad)


def test_early_stopping_callback_restores_the_epoch_it_stopped_at():
    callback = MetricEarlyStoppingStrategy(LossMetric()).to_callback()
    callback.load_state_dict({"strategy": {"best_epoch": 2, "best_value": 0.5}, "stopped_epoch": 4})
    assert callback.stopped_epoch == 4 and callback.strategy.best_epoch == 2
    assert callback.state_dict() == {"strategy": {"best_epoch": 2, "best_value": 0.5}, "stopped_epoch": 4}


# The fast path's optimizer setup (host side) ------------------------------------------------------
def test_host_lr_leaves_checkpoints_without_optimizer_parts_alone():
    for checkpoint in ({}, {"optimizer_states": [{}]}, {"lr_schedulers": [{}]}):
        before = {k: list(v) for k, v in checkpoint.items()}
        host_lr(checkpoint)
        assert checkpoint == before
    checkpoint = {"optimizer_states": [{"param_groups": [{"lr": torch.tensor(0.25)}]}],
                  "lr_schedulers": [{"_last_lr": [torch.tensor(0.5), 0.125]}]}
    host_lr(checkpoint)
    assert checkpoint == {"optimizer_states": [{"param_groups": [{"lr": 0.25}]}],
                          "lr_schedulers": [{"_last_lr": [0.5, 0.125]}]}
    assert type(checkpoint["optimizer_states"][0]["param_groups"][0]["lr"]) is float


def fast_path(tmp_path, optim):
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).cuda_graph().progress_bar(False)
               .with_application_logger(False).build(Classifier(), optim, 1e-2))
    learner.fit(loader(32, 16))
    return learner.module.graph_step


def test_preparing_for_capture_keeps_a_device_lr_and_leaves_fused_optimizers_as_they_are(tmp_path):
    step = fast_path(tmp_path / "adam", AdamConfig())
    step._prepare_optimizer()
    lr = step._optimizer().param_groups[0]["lr"]
    step._prepare_optimizer()  # again: the lr tensor already on the model's device is kept
    assert step._optimizer().param_groups[0]["lr"] is lr
    fused = fast_path(tmp_path / "fused", functools.partial(torch.optim.Adam, fused=True))
    fused._prepare_optimizer()
    group = fused._optimizer().param_groups[0]
    assert group["fused"] is True and group["capturable"] is False  # fused steps need no capturable mode
    assert isinstance(group["lr"], torch.Tensor) and float(group["lr"]) == pytest.approx(1e-2)


def trained(tmp_path, *, fast, accumulation, n):
    burnlike.seed(0)
    builder = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).grads_accumulation(accumulation)
               .progress_bar(False).with_application_logger(False))
    learner = (builder.cuda_graph() if fast else builder).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(n, 16))
    return learner


# 4 batches in windows of 2; 5 batches in windows of 3 (a step after the 3rd and the short 5th)
@pytest.mark.parametrize(("accumulation", "n"), [(2, 64), (3, 80)])
def test_the_eager_fast_path_accumulates_as_the_default_path(tmp_path, caplog, accumulation, n):
    default = trained(tmp_path / "default", fast=False, accumulation=accumulation, n=n).module.model.state_dict()
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        learner = trained(tmp_path / "fast", fast=True, accumulation=accumulation, n=n)
    assert learner.trainer.global_step == 2
    assert [r.getMessage() for r in caplog.records if "cuda_graph" in r.getMessage()] == [
        f"cuda_graph: the training step runs eagerly: {EAGER_ON_CPU}"]
    for key, value in learner.module.model.state_dict().items():
        assert torch.equal(value, default[key]), key  # each loss divided by k, as Lightning's accumulation
    # eager steps free the gradients (only captured graphs need their tensors kept)
    assert all(p.grad is None for p in learner.module.model.parameters())


def test_cuda_graph_false_keeps_the_default_path(tmp_path):
    learner = LearnerBuilder(tmp_path).devices(["cpu"]).progress_bar(False).cuda_graph(False).build(
        Classifier(), AdamConfig(), 1e-2)
    assert learner.module.graph_step is None and learner.module.automatic_optimization


def test_the_application_logger_writes_the_experiment_log_when_enabled(tmp_path):
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).progress_bar(False)
               .with_application_logger(True).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(32, 16))
    assert (tmp_path / "experiment.log").is_file()


class Stream(IterableDataset):
    """Five batches of 16 from a loader that can't say how long it is."""

    def __iter__(self):
        yield from blobs(80)


def test_the_eager_fast_path_steps_at_the_end_of_a_loader_without_length(tmp_path):
    burnlike.seed(0)
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).grads_accumulation(3).cuda_graph()
               .progress_bar(False).with_application_logger(False).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(DataLoader(Stream(), batch_size=16, collate_fn=collate))
    assert learner.trainer.global_step == 2  # after the 3rd batch, and after the short window the loader ends with


def test_live_view_header_without_an_epoch_limit_counts_epochs_alone(tmp_path):
    learner = builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(32, 16))
    view = LiveView(console=terminal())
    view._begin("train", 2)
    for max_epochs in (-1, None):  # Lightning's "no limit", and a trainer without max_epochs at all
        unbounded = Trainer(max_epochs=max_epochs, max_steps=10, logger=False, enable_progress_bar=False,
                            enable_checkpointing=False)
        console = Console(file=io.StringIO(), width=120, color_system=None)
        console.print(view.render(unbounded, learner.module, now=view._start + 1.0))
        assert "Epoch 1 · train 0/2" in console.file.getvalue()


def test_live_view_speed_over_less_than_a_second_and_durations(tmp_path):
    learner = builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(32, 16))
    view = LiveView(console=terminal())
    view._begin("train", 8)
    view._batches = 4
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(view.render(learner.trainer, learner.module, now=view._start + 0.5))
    assert "train 4/8 · 8.0 it/s · ETA 0:00:00" in console.file.getvalue()
    assert _duration(3540) == "0:59:00" and _duration(3661) == "1:01:01"


def test_live_view_frame_is_a_dim_panel_titled_burnlike_with_a_bold_header(tmp_path):
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system="standard")
    builder(tmp_path).progress_bar(True).callback(LiveView(refresh=1e9, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    out = console.file.getvalue()
    assert "\x1b[2m╭─" in out and " burnlike " in out  # the border dim, the title in it
    assert "\x1b[1mEpoch 1/1 · train 2/2" in out  # the header bold


def test_live_view_draws_running_train_values_between_forced_draws(tmp_path):
    console = terminal()
    builder(tmp_path).progress_bar(True).callback(LiveView(refresh=0.0, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))
    frames = [f for f in console.file.getvalue().split("╭") if "· train 1/4 ·" in f]  # after the first batch
    assert frames and all(loss_cells(f)[0] for f in frames)


def test_live_view_draws_the_train_values_at_each_epochs_end(tmp_path):
    console = terminal()
    builder(tmp_path, epochs=2).progress_bar(True).callback(LiveView(refresh=1e9, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))
    frames = [f for f in console.file.getvalue().split("╭") if "Epoch 1/2 · train 4/4" in f]
    assert frames and all(loss_cells(f)[0] for f in frames)


def test_live_view_refresh_is_the_time_since_the_last_draw(tmp_path):
    console = terminal()
    refresh = time.monotonic()  # longer than this run, and shorter than twice the clock's reading
    builder(tmp_path).progress_bar(True).callback(LiveView(refresh=refresh, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16))
    assert "train 1/4" not in console.file.getvalue()  # forced draws only


def test_burnlike_train_exports_resolve_lazily_to_their_modules():
    import burnlike.train as train
    from burnlike.train.interrupter import Interrupter as defined

    assert train.__getattr__("Interrupter") is defined and vars(train)["Interrupter"] is defined
    with pytest.raises(AttributeError, match=r"^module 'burnlike\.train' has no attribute 'Nope'$"):
        train.__getattr__("Nope")


# Plain progress lines -----------------------------------------------------------------------------
LINE = re.compile(r"^(epoch \d+/\d+ (?:train|valid)(?: \d+/\d+)?) Accuracy=(\S+)% Loss=(\S+) ([\d,]+|\d+\.\d\d) it/s$")


def plain_run(tmp_path, interval, train=64, valid=32, **trainer_kwargs):
    stream = io.StringIO()
    learner = (builder(tmp_path).progress_bar(True).callback(PlainProgress(interval=interval, stream=stream))
               .trainer_kwargs(**trainer_kwargs).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(train, 16), loader(valid, 16))
    return learner, [LINE.match(line) for line in stream.getvalue().splitlines()]


def test_plain_progress_writes_a_line_per_batch_and_one_per_split_at_its_end(tmp_path):
    assert PlainProgress().interval == 30.0
    learner, lines = plain_run(tmp_path, interval=0.0)
    assert all(lines)
    assert [m.group(1) for m in lines] == ["epoch 1/1 train 1/4", "epoch 1/1 train 2/4", "epoch 1/1 train 3/4",
                                           "epoch 1/1 train 4/4", "epoch 1/1 valid 1/2", "epoch 1/1 valid 2/2",
                                           "epoch 1/1 valid", "epoch 1/1 train"]
    store = learner.module.store
    (train_loss,) = store.epochs(Split.TRAIN, "Loss").values()
    (valid_loss,) = store.epochs(Split.VALID, "Loss").values()
    # the last step's running value, and the split's end line, are the epoch value
    assert [m.group(3) for m in lines if m.group(1).startswith("epoch 1/1 train 4")] == [f"{train_loss:.4g}"]
    assert lines[-1].group(3) == f"{train_loss:.4g}"
    assert lines[5].group(3) == lines[6].group(3) == f"{valid_loss:.4g}"


def test_plain_progress_returns_to_the_train_counts_after_a_mid_epoch_validation(tmp_path):
    _, lines = plain_run(tmp_path, interval=0.0, valid=16, val_check_interval=0.5)
    assert all(lines)
    assert [m.group(1) for m in lines][:5] == ["epoch 1/1 train 1/4", "epoch 1/1 train 2/4", "epoch 1/1 valid 1/1",
                                               "epoch 1/1 valid", "epoch 1/1 train 3/4"]


def test_plain_progress_interval_is_the_time_since_the_last_line(tmp_path):
    _, lines = plain_run(tmp_path, interval=time.monotonic())  # longer than the run, shorter than 2× the clock
    assert [m.group(1) for m in lines] == ["epoch 1/1 valid", "epoch 1/1 train"]  # the split ends only


def test_plain_progress_line_counts_and_speed(tmp_path):
    learner = builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(32, 16))
    display = PlainProgress()
    display._begin()
    display._start = time.monotonic() - 100.0  # 100 s ago
    for batches, total, want in ((5, 10.0, "train 5/10 "), (5, float("inf"), "train 5 "), (5000, 10, "train 5,000/10 ")):
        display._batches = batches
        line = display._line(learner.trainer, learner.module, "train", total, final=False)
        assert want in line
    display._batches = 5
    assert display._line(learner.trainer, learner.module, "train", 10, final=False).endswith(" 0.05 it/s")
    display._batches = 150_000
    assert display._line(learner.trainer, learner.module, "train", 10, final=True).endswith(" 1,500 it/s")
    display._batches = 1_050  # 10.5 it/s: from 10 on, whole numbers
    assert display._line(learner.trainer, learner.module, "train", 10, final=True).endswith(" 10 it/s")
    display._start = time.monotonic() - 0.5  # half a second: 50 batches are 100 it/s
    display._batches = 50
    assert display._line(learner.trainer, learner.module, "train", 10, final=True).endswith(" 100 it/s")


def test_progress_display_takes_plain_lines_for_a_stream_without_isatty():
    class Sink:
        def write(self, text):
            return len(text)

        def flush(self):
            pass

    assert isinstance(progress_display(Sink()), PlainProgress)


def test_live_view_table_fills_the_panel_and_leaves_missing_running_values_empty(tmp_path):
    learner = builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(32, 16), loader(32, 16))
    view = LiveView(console=terminal())
    view._begin("train", 2)  # nothing drawn yet: no running value in either split
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(view.render(learner.trainer, learner.module, now=view._start + 1.0))
    lines = console.file.getvalue().splitlines()
    header = next(line for line in lines if "Metric" in line)
    assert [cell.strip() for cell in header.strip("│ ").split("┃")] == [
        "Metric", "Train", "train per epoch", "Valid", "valid per epoch"]
    # the table spreads its columns over the panel instead of fitting them to their titles
    assert header.rindex("┃") > len("│ Metric ┃ Train ┃ train per epoch ┃ Valid ┃") + 10
    assert [loss_cells(line) for line in lines if line.startswith("│ Loss ")] == [["", "▁", "", "▁"]]
