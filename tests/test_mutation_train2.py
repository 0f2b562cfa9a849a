"""Behaviour of burnlike.train's checkpointing, early stopping, evaluator, live view, loggers and
preemption that the rest of the suite left unpinned (issue 17: each test here kills mutants that
survived it). Real components throughout: Lightning Trainers on tiny data, rich consoles, the
loggers' own classes."""

from __future__ import annotations

import gc
import io
import logging
import math
import signal
import sys
import threading
import time
import warnings

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelSummary
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger
from rich.console import Console
from torch.utils.data import DataLoader
from toy import Batch, Classifier, FailsInTraining, Regressor, UntypedRegressor, blobs, collate, loader

import burnlike.train
from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import DefaultRecorder, PrettyJsonFileRecorder
from burnlike.train import (
    ClassificationOutput,
    ComposedCheckpointingStrategy,
    Direction,
    EvaluatorBuilder,
    KeepLastNCheckpoints,
    Learner,
    LearnerBuilder,
    LearnerSummary,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    MetricInputError,
    MetricStore,
    Split,
    StepModule,
    SupervisedTraining,
    tracking,
)
from burnlike.train.checkpoint import Delete, MetricEarlyStopping, Save, newest_checkpoint
from burnlike.train.logger import read_epochs, tagged_test_split
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from burnlike.train.preemption import Preemption
from burnlike.train.quiet import DropMessages
from burnlike.train.summary import MetricSummary
from burnlike.train.tracking import continue_logger_runs, continue_run
from burnlike.train.tui import LiveView, _duration

NAN = float("nan")


def store_with(values: dict[int, float], name: str = "Loss", split: Split = Split.VALID) -> MetricStore:
    store = MetricStore()
    for epoch, value in values.items():
        store.record(split, epoch, name, value)
    return store


# --- burnlike.train's lazy names ----------------------------------------------------------------------

def test_lazy_names_resolve_once_and_unknown_names_are_refused_by_name():
    from burnlike.train.evaluator import Evaluator

    burnlike.train.__dict__.pop("Evaluator", None)  # resolved afresh, whatever ran before
    assert burnlike.train.__getattr__("Evaluator") is Evaluator
    assert vars(burnlike.train)["Evaluator"] is Evaluator  # cached: the next lookup needs no import
    with pytest.raises(AttributeError, match=r"^module 'burnlike.train' has no attribute 'Evaluater'$"):
        burnlike.train.__getattr__("Evaluater")
    assert not hasattr(burnlike.train, "NoSuchName")


# --- checkpointing strategies: state across a resume --------------------------------------------------

def test_metric_checkpointing_state_round_trip_deletes_the_old_best_after_resume():
    straight = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)
    store = store_with({1: 0.5, 2: 0.7})
    assert straight.checkpointing(1, store) == [Save()]
    assert straight.checkpointing(2, store) == []
    assert straight.state_dict() == {"current": 1}
    resumed = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)
    resumed.load_state_dict(straight.state_dict())
    assert resumed.current == 1
    store.record(Split.VALID, 3, "Loss", 0.1)  # a new best: the resumed strategy drops epoch 1's files
    assert resumed.checkpointing(3, store) == [Delete(1), Save()]


def composed() -> ComposedCheckpointingStrategy:
    return ComposedCheckpointingStrategy([KeepLastNCheckpoints(1),
                                          MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)])


def test_composed_strategy_resumes_with_what_each_child_had_deleted():
    store = store_with({1: 0.5, 2: 0.7})
    straight = composed()
    assert straight.checkpointing(1, store) == [Save()]
    assert straight.checkpointing(2, store) == [Save()]  # epoch 1 is still the best: kept
    state = straight.state_dict()
    assert state == {"deleted": [[1], [2]], "children": [{}, {"current": 1}]}
    resumed = composed()
    resumed.load_state_dict(state)
    store.record(Split.VALID, 3, "Loss", 0.1)
    # epoch 3 is the best: epoch 1 (best so far) and epoch 2 (last-1 already let it go) both go
    assert resumed.checkpointing(3, store) == [Save(), Delete(1), Delete(2)]
    assert straight.checkpointing(3, store) == [Save(), Delete(1), Delete(2)]


def test_composed_strategy_takes_a_state_with_either_part_missing():
    strategy = composed()
    strategy.load_state_dict({"children": [{}, {"current": 4}]})  # no deletions recorded: none assumed
    assert strategy.deleted == [set(), set()] and strategy.strategies[1].current == 4
    strategy.load_state_dict({"deleted": [[2], [3]]})  # no children's states: theirs stay
    assert strategy.deleted == [{2}, {3}] and strategy.strategies[1].current == 4


# --- newest_checkpoint ---------------------------------------------------------------------------------

def write_checkpoint(path, step, recorder=None, **extra):
    (recorder or DefaultRecorder()).record(
        {"state_dict": {}, "pytorch-lightning_version": L.__version__, "global_step": step, **extra}, path,
        exact_path=True)


def test_newest_checkpoint_reads_only_the_asked_format_and_old_single_file_checkpoints(tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    assert newest_checkpoint(tmp_path, "mpk") is None  # a folder with nothing in it
    write_checkpoint(folder / "trainer-1.mpk", 4)
    write_checkpoint(folder / "trainer-3.json", 12, PrettyJsonFileRecorder())  # another recorder's run
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-1.mpk"
    write_checkpoint(folder / "model-2.mpk", 8)  # before per-epoch files: the whole checkpoint in model-N
    assert newest_checkpoint(tmp_path, "mpk") == folder / "model-2.mpk"
    write_checkpoint(folder / "optim-3.mpk", 99)  # not a kind that holds a resumable checkpoint
    assert newest_checkpoint(tmp_path, "mpk") == folder / "model-2.mpk"


def test_newest_checkpoint_skips_a_checkpoint_whose_step_is_not_an_integer(tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    write_checkpoint(folder / "trainer-1.mpk", 4)
    write_checkpoint(folder / "trainer-2.mpk", "8")
    DefaultRecorder().record({"global_step": 50}, folder / "trainer-3.mpk", exact_path=True)  # not a checkpoint
    DefaultRecorder().record([1, 2, 3], folder / "trainer-4.mpk", exact_path=True)
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-1.mpk"


# --- FileCheckpointer in a run ------------------------------------------------------------------------

def test_checkpointer_logs_each_file_it_removes(tmp_path, caplog):
    builder = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(2).progress_bar(False)
               .with_application_logger(False).with_file_checkpointer(DefaultRecorder())
               .with_checkpointing_strategy(KeepLastNCheckpoints(1)).devices(["cpu"]))
    learner = builder.build(Classifier(), SgdConfig(), 0.01)
    preempted = tmp_path / "checkpoint" / "preempted-3.mpk"
    preempted.parent.mkdir(parents=True)
    write_checkpoint(preempted, 3)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        learner.fit(loader(32, 16), loader(16, 16))
    messages = [r.getMessage() for r in caplog.records]
    for kind in ("trainer", "scheduler", "optim", "model"):  # trainer first: never a half epoch
        assert f"removing checkpoint {tmp_path / 'checkpoint' / f'{kind}-1.mpk'}" in messages
    assert f"removing {preempted}: the checkpoint of step 4 supersedes it" in messages
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == [
        "model-2.mpk", "optim-2.mpk", "scheduler-2.mpk", "trainer-2.mpk"]


# --- early stopping ------------------------------------------------------------------------------------

def test_early_stopping_counts_from_epoch_one_when_no_value_ever_improves():
    strategy = MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST)
    store = store_with({1: NAN, 2: NAN})
    assert strategy.should_stop(1, store) is False
    assert strategy.should_stop(2, store) is True  # one epoch without improvement since epoch 1


def test_warmup_epochs_take_zero_and_refuse_booleans():
    strategy = MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST)
    assert strategy.with_warmup_epochs(0).warmup_epochs == 0
    for bad in (True, -1, "3"):
        with pytest.raises(ValueError, match="with_warmup_epochs: expected None or an integer >= 0"):
            strategy.with_warmup_epochs(bad)


def test_early_stopping_uses_the_registered_metrics_direction_and_logs_its_decisions(caplog):
    store = store_with({1: 0.5, 2: 0.6})
    store.register([LossMetric()])
    strategy = MetricEarlyStoppingStrategy("Loss")  # no direction given: the Loss metric's (lowest)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        assert strategy.should_stop(1, store) is False
        assert strategy.should_stop(2, store) is True
        assert strategy.should_stop(3, store) is False  # no value for epoch 3
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["stopping: valid/Loss has not improved since epoch 1 (0.5), now 0.6",
                        "early stopping: no valid/Loss value for epoch 3"]


class ConstantTrainLoss(Classifier):
    """Its train loss is the same every epoch: never an improvement."""

    def train_step(self, batch: Batch):
        out = super().train_step(batch)
        return type(out)(out.model, out.grads, ClassificationOutput(torch.tensor(1.0), out.item.output,
                                                                    out.item.targets))


def early_stopping_run(tmp_path, **trainer_kwargs):
    strategy = MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST, split=Split.TRAIN)
    learner = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .num_epochs(5).progress_bar(False).with_application_logger(False).devices(["cpu"])
               .early_stopping(strategy).trainer_kwargs(**trainer_kwargs)
               .build(ConstantTrainLoss(), SgdConfig(), 0.01))
    learner.fit(loader(16, 16), loader(16, 16))
    return learner, strategy


def test_early_stopping_decides_after_each_train_epoch_even_without_validation(tmp_path):
    learner, strategy = early_stopping_run(tmp_path, check_val_every_n_epoch=3)
    callback = learner.trainer.early_stopping_callback
    assert isinstance(callback, MetricEarlyStopping)
    assert callback.monitor == "train/Loss"
    assert learner.trainer.current_epoch == 2  # stopped after epoch 2, not at the validation of epoch 3
    assert callback.stopped_epoch == 1  # Lightning counts from 0
    state = callback.state_dict()
    assert state == {"strategy": {"best_epoch": 1, "best_value": 1.0}, "stopped_epoch": 1}
    again = MetricEarlyStopping(MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST, split=Split.TRAIN))
    again.load_state_dict(state)
    assert again.stopped_epoch == 1 and again.strategy.best_value == 1.0


def test_two_early_stoppings_keep_their_states_apart():
    a = MetricEarlyStopping(MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST))
    b = MetricEarlyStopping(MetricEarlyStoppingStrategy("Accuracy", direction=Direction.HIGHEST))
    assert a.state_key != b.state_key and "valid/Loss" in a.state_key


def test_a_fast_dev_run_leaves_early_stopping_untouched(tmp_path):
    learner, strategy = early_stopping_run(tmp_path, fast_dev_run=True)
    assert strategy.best_value is None and learner.trainer.early_stopping_callback.stopped_epoch == 0


# --- small pieces: logger folders, summary, quiet, StepModule -----------------------------------------

def test_tagged_test_split_names():
    assert tagged_test_split() == "test"
    assert tagged_test_split(" My Set ") == "test/my-set"


def test_read_epochs_reads_only_epoch_n_folders(tmp_path):
    for folder in ("epoch-1", "epoch-2-old", "epoch-old-3", "epoch-4", "epoch-x", "epoch-5"):
        (tmp_path / "valid" / folder).mkdir(parents=True)
        (tmp_path / "valid" / folder / "Loss.log").write_text("0.5,1\n")
    assert read_epochs(tmp_path, "valid", "Loss") == {1: 0.5, 4: 0.5, 5: 0.5}  # the others are skipped


def test_summary_from_dir_keeps_the_model_and_get_answers_none_for_a_missing_row(tmp_path):
    (tmp_path / "train" / "epoch-1").mkdir(parents=True)
    (tmp_path / "train" / "epoch-1" / "Loss.log").write_text("0.25,1\n")
    summary = LearnerSummary.from_dir(tmp_path, ["Loss"], [], model="Net(hidden=3)")
    assert summary.model == "Net(hidden=3)" and "Model:\nNet(hidden=3)" in str(summary)
    assert summary.get("train", "Loss").min_value == 0.25
    assert summary.get("valid", "Loss") is None


def test_drop_messages_drops_only_records_containing_its_texts():
    drop = DropMessages(("advert",))

    def record(msg):
        return logging.LogRecord("x", logging.INFO, __file__, 1, msg, None, None)

    assert drop.filter(record("an advert here")) is False
    assert drop.filter(record("a real problem")) is True


def test_step_module_forwards_keyword_arguments_to_the_model():
    model = Classifier()
    module = StepModule(model, AdamConfig(), 1e-3, [], [])
    x = torch.randn(2, 4)
    assert torch.equal(module(x=x), model(x))


# --- resuming logger runs (tracking) --------------------------------------------------------------------

@pytest.fixture(autouse=True)
def own_resume_notes(monkeypatch):
    """Each test starts with empty resume notes of the containers' own kind."""
    monkeypatch.setattr(tracking, "_CONTINUED", type(tracking._CONTINUED)())
    monkeypatch.setattr(tracking, "_PREVIOUS_ROWS", type(tracking._PREVIOUS_ROWS)())


def test_a_logger_that_never_trained_leaves_no_resume_note(tmp_path):
    """Notes go with their logger: with id() keys, a later logger at the same address looked continued."""
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(tmp_path, name="r", version=0)
    tracking.continue_run(logger, {"kind": "CSVLogger", "version": 0})
    assert logger in tracking._CONTINUED and logger in tracking._PREVIOUS_ROWS
    del logger
    gc.collect()
    assert len(tracking._CONTINUED) == 0 and len(tracking._PREVIOUS_ROWS) == 0


def messages_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "burnlike.train"]


def test_continue_run_refuses_another_kind_a_missing_version_and_a_started_run(tmp_path, caplog):
    csv = CSVLogger(tmp_path)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(csv, {"kind": "TensorBoardLogger", "version": 3})
        continue_run(csv, {"kind": "CSVLogger", "version": None})
        assert csv.experiment is not None  # its run starts: too late to point it elsewhere
        continue_run(csv, {"kind": "CSVLogger", "version": 7})
    assert messages_of(caplog) == [
        "resume: logger CSVLogger is not the checkpoint's (TensorBoardLogger); it starts a new run",
        "resume: logger CSVLogger is not the checkpoint's (CSVLogger); it starts a new run",
        "resume: CSVLogger already started a run; it can't continue run 7"]
    assert csv.version == 0


def test_resuming_from_a_checkpoint_without_logger_runs_starts_new_ones(tmp_path):
    csv = CSVLogger(tmp_path / "csv")
    learner = (LearnerBuilder(tmp_path).with_file_checkpointer(DefaultRecorder()).with_logger(csv).devices(["cpu"])
               .progress_bar(False).build(Classifier(), SgdConfig(), 0.1))
    for name, extra in (("bare.mpk", {}), ("no-bridge.mpk", {"callbacks": {}})):  # e.g. saved by a run without loggers
        write_checkpoint(tmp_path / name, 4, **extra)
        continue_logger_runs(learner.trainer, tmp_path / name)
    assert csv._version is None  # not pointed anywhere: its own next version
    plain = L.Trainer(logger=CSVLogger(tmp_path / "plain"), enable_progress_bar=False)  # no burnlike bridge
    continue_logger_runs(plain, tmp_path / "missing.mpk")  # nothing to read: the file is never opened


class OwnLogger(Logger):
    name = "own"
    version = "v1"

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        pass


def test_continue_run_says_which_loggers_it_cannot_continue_and_which_it_does(tmp_path, caplog):
    board = TensorBoardLogger(tmp_path)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(OwnLogger(), {"kind": "OwnLogger", "version": "v0"})
        continue_run(board, {"kind": "TensorBoardLogger", "version": 5})
    assert messages_of(caplog) == ["resume: burnlike can't continue a OwnLogger run; it starts a new one",
                                   "resume: TensorBoardLogger continues run 5"]
    assert board.version == 5


def test_continuing_a_csv_run_silences_only_lightnings_existing_directory_warning(tmp_path):
    csv = CSVLogger(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        continue_run(csv, {"kind": "CSVLogger", "version": 0})
        warnings.warn(f"Experiment logs directory {csv.log_dir} exists and is not empty.", UserWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else"]


def test_continuing_a_wandb_run_resumes_it_by_id(tmp_path):
    pytest.importorskip("wandb")
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="p")
    continue_run(logger, {"kind": "WandbLogger", "version": "run42"})
    assert logger.version == "run42"
    assert logger._wandb_init["id"] == "run42" and logger._wandb_init["resume"] == "allow"  # what wandb.init gets


# --- preemption's signal handler ------------------------------------------------------------------------

def test_preemption_handler_chains_keeps_sigterm_from_lightning_and_survives_its_trainer(tmp_path):
    seen = []

    def own(signum, frame):
        seen.append((signum, frame))

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    signal.signal(signal.SIGUSR1, own)
    try:
        trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
        preemption = Preemption(lambda step: tmp_path / f"preempted-{step}.mpk")
        preemption.on_train_start(trainer, Classifier())
        frame = sys._getframe()
        trainer._signal_connector.received_sigterm = True  # Lightning's own handler saw a SIGTERM
        signal.getsignal(signal.SIGUSR1)(signal.SIGUSR1, frame)
        assert seen == [(signal.SIGUSR1, frame)] and preemption.received == signal.SIGUSR1
        assert trainer.received_sigterm is True  # a SIGUSR1 leaves Lightning's SIGTERM flag alone
        notice = signal.getsignal(signal.SIGTERM)
        notice(signal.SIGTERM, frame)
        assert trainer.received_sigterm is False  # taken back: the next step saves instead
        assert preemption.received == signal.SIGTERM

        def later(signum, frame):  # someone installs a handler over ours and chains to it
            notice(signum, frame)

        signal.signal(signal.SIGTERM, later)
        preemption.teardown(trainer, Classifier(), "fit")
        assert signal.getsignal(signal.SIGUSR1) is own and signal.getsignal(signal.SIGTERM) is later
        preemption.received = None
        later(signal.SIGTERM, frame)  # no trainer any more: the signal is only noted
        assert preemption.received == signal.SIGTERM
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


# --- builder and SupervisedTraining translations -------------------------------------------------------

def test_builder_refuses_a_non_interrupter_naming_its_type(tmp_path):
    with pytest.raises(TypeError, match="with_interrupter expects a burnlike.train.Interrupter, got str"):
        LearnerBuilder(tmp_path).with_interrupter("stop")


def test_builder_application_logger_and_cuda_graph_switches_take_their_last_value(tmp_path):
    generator = torch.Generator()
    builder = LearnerBuilder(tmp_path).devices(["cpu"]).progress_bar(False)
    learner = builder.with_application_logger(False).with_application_logger(True).build(Classifier(), SgdConfig(), 0.1)
    assert learner.application_logger is True
    graphed = builder.cuda_graph(True, generators=[generator]).build(Classifier(), SgdConfig(), 0.1)
    assert tuple(graphed.module.graph_step.config.generators) == (generator,)
    eager = builder.cuda_graph(False).build(Classifier(), SgdConfig(), 0.1)
    assert eager.module.graph_step is None


def test_launch_refuses_a_non_learner_naming_its_type(tmp_path):
    with pytest.raises(TypeError, match=r"launch expects Learner\(model, optim, lr\), got Classifier"):
        SupervisedTraining(tmp_path, loader(16, 16)).launch(Classifier())


class NoParameters(Classifier):
    """A train step over a model with no parameters (nothing to optimise)."""

    def __init__(self) -> None:
        super().__init__()
        del self.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :3]


def test_launch_of_a_model_without_parameters_gets_the_optimizers_error(tmp_path):
    with pytest.raises(ValueError, match="empty parameter list"):
        SupervisedTraining(tmp_path, loader(16, 16)).progress_bar(False).with_application_logger(False) \
            .launch(Learner(NoParameters(), SgdConfig(), 0.1))


# --- the evaluator --------------------------------------------------------------------------------------

def test_evaluator_defaults_translate_to_a_quiet_test_trainer(tmp_path, capsys):
    evaluator = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).build(Classifier())
    result = evaluator.eval("My Set", loader(32, 16))
    assert result.name == "My Set" and result.summary is None  # no summary unless asked
    assert set(result.metrics) == {"Accuracy", "Loss"}
    trainer = result.trainer
    assert trainer.default_root_dir == str(tmp_path)
    assert trainer.logger is None and trainer.checkpoint_callback is None
    assert not any(isinstance(c, ModelSummary) for c in trainer.callbacks)
    assert trainer.progress_bar_callback is not None  # shown by default
    assert not (tmp_path / "lightning_logs").exists()
    assert any(line.endswith(" burnlike.train: evaluating Classifier on test/my-set")
               for line in (tmp_path / "evaluation.log").read_text().splitlines())
    assert "Learner Summary" not in capsys.readouterr().out


def test_evaluator_progress_bar_switch(tmp_path):
    builder = EvaluatorBuilder(tmp_path).metrics(LossMetric()).with_application_logger(False)
    assert builder.progress_bar(False).build(Classifier()).eval("a", loader(16, 16)).trainer.progress_bar_callback is None
    assert builder.progress_bar().build(Classifier()).eval("a", loader(16, 16)).trainer.progress_bar_callback is not None


def test_evaluator_refuses_a_non_metric_naming_its_type(tmp_path):
    with pytest.raises(TypeError, match=r"expected a burnlike Metric \(e.g. AccuracyMetric\(\)\), got str"):
        EvaluatorBuilder(tmp_path).metric("Accuracy")


def test_evaluator_summary_rows_are_the_test_epoch(tmp_path, capsys):
    evaluator = (EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).summary().progress_bar(False)
                 .with_application_logger(False).build(Classifier()))
    result = evaluator.eval("mnist/digits", loader(32, 16))
    value = result.metrics["Accuracy"]
    assert result.summary.get("test (mnist/digits)", "Accuracy") == MetricSummary(
        "test (mnist/digits)", "Accuracy", value, 1, value, 1, {1: value})
    assert "Learner Summary" in capsys.readouterr().out


def test_evaluator_feeds_context_metrics_and_checks_untyped_outputs_at_the_first_step(tmp_path):
    builder = EvaluatorBuilder(tmp_path).progress_bar(False).with_application_logger(False)
    rate = builder.metrics(LearningRateMetric()).build(Classifier()).eval("lr", loader(16, 16))
    assert math.isnan(rate.metrics["Learning Rate"])  # no optimizer, no learning rate
    checked = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).progress_bar(False).with_application_logger(False)
    with pytest.raises(MetricInputError, match=r"^test metric 'Accuracy' \(AccuracyMetric\) needs"):
        checked.build(UntypedRegressor()).eval("r", loader(16, 16))
    with pytest.raises(MetricInputError, match=r"^test metric 'Accuracy'"):
        checked.build(Regressor())  # typed: refused before any data


def test_evaluator_on_an_empty_loader_and_a_model_without_parameters(tmp_path):
    builder = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).progress_bar(False).with_application_logger(False)
    empty = DataLoader(blobs(0), batch_size=4, collate_fn=collate)
    assert builder.build(Classifier()).eval("empty", empty).metrics == {}
    result = builder.build(NoParameters()).eval("fixed", loader(32, 16))
    assert 0 <= result.metrics["Accuracy"] <= 100 and result.trainer.num_devices == 1


# --- the live view (tui) ----------------------------------------------------------------------------

def step_module():
    return StepModule(Classifier(), AdamConfig(), 1e-3, [LossMetric(), AccuracyMetric()], [LossMetric()])


def rendered(view, trainer, module, now, **console):
    out = Console(file=io.StringIO(), width=120, **({"color_system": None} | console))
    out.print(view.render(trainer, module, now))
    return out.file.getvalue()


def cells(frame, first):
    line = next(line for line in frame.splitlines() if line.startswith(f"│ {first} "))
    return [c.strip() for c in line.strip("│").replace("┃", "│").split("│")]


def test_a_fresh_live_view_renders_an_empty_table_of_the_modules_metrics():
    frame = rendered(LiveView(), L.Trainer(max_epochs=3, logger=False), step_module(), now=100.0)
    lines = frame.splitlines()
    assert "─ burnlike ─" in lines[0]
    assert lines[1].strip("│ ") == "Epoch 1/3 · train 0/0 · 0.0 it/s"
    assert cells(frame, "Metric") == ["Metric", "Train", "train per epoch", "Valid", "valid per epoch"]
    assert cells(frame, "Loss") == ["Loss", "", "", "", ""]  # no running value, no epoch yet
    assert lines[3].count("━") > 100  # the table spans the panel


def test_live_view_speed_below_one_second():
    view = LiveView()
    view._begin("train", 10)
    view._batches = 5
    assert "Epoch 1/2 · train 5/10 · 10.0 it/s · ETA 0:00:00" in rendered(
        view, L.Trainer(max_epochs=2, logger=False), step_module(), now=view._start + 0.5)


def test_live_view_of_a_run_without_an_epoch_limit_counts_epochs_only():
    """A max_steps run has no epoch limit (Lightning: max_epochs None or -1): no "1/None" or "-1/-1"."""
    view = LiveView()
    view._begin("train", 10)
    view._batches = 5
    module = step_module()
    for trainer in (L.Trainer(max_steps=100, logger=False), L.Trainer(max_epochs=-1, logger=False)):
        assert rendered(view, trainer, module, now=view._start + 1.0).splitlines()[1].startswith("│ Epoch 1 · train 5/10")


def test_live_view_header_is_bold_and_the_border_dim():
    frame = rendered(LiveView(), L.Trainer(max_epochs=1, logger=False), step_module(), now=1.0,
                     force_terminal=True, color_system="standard")
    assert frame.startswith("\x1b[2m╭") and "\x1b[1mEpoch 1/1 · train 0/0" in frame


def test_duration_minutes_just_below_an_hour():
    assert _duration(3540) == "0:59:00"


class Watch(L.Callback):
    """Notes rich refresh threads running while training."""

    threads: list[str]

    def on_train_batch_end(self, trainer, pl_module, *args):
        self.threads = [type(t).__name__ for t in threading.enumerate()]


def live_fit(tmp_path, view, *callbacks, model=None):
    learner = (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).devices(["cpu"]).num_epochs(1)
               .with_application_logger(False).callback(view, *callbacks)
               .build(model or Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 16), loader(32, 16))
    return learner


def terminal():
    return Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)


def test_every_live_frame_shows_the_metric_rows_and_no_thread_redraws(tmp_path):
    console, watch = terminal(), Watch()
    learner = live_fit(tmp_path, LiveView(refresh=0.0, console=console), watch)
    frames = console.file.getvalue().split("╭")[1:]
    assert len(frames) >= 8  # a frame per train and valid batch, plus the epoch ends
    for frame in frames:
        assert "│ Accuracy " in frame and "│ Loss " in frame
    assert "_RefreshThread" not in watch.threads  # redrawn from the loop only
    learner.trainer.validate(learner.module, loader(32, 16))  # after the run: the panel is gone, no redraw


def test_live_view_skips_redraws_within_its_refresh_interval(tmp_path):
    console = terminal()
    live_fit(tmp_path, LiveView(refresh=time.monotonic(), console=console))  # longer than the run
    assert "train 1/4" not in console.file.getvalue() and "train 4/4" in console.file.getvalue()



def test_validating_after_a_failed_live_run_draws_nothing(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    with pytest.raises(RuntimeError, match="boom"):
        live_fit(tmp_path, view, model=FailsInTraining())
    drawn = console.file.getvalue()
    trainer = L.Trainer(logger=False, callbacks=[view], enable_model_summary=False)
    trainer.validate(StepModule(Classifier(), AdamConfig(), 1e-2, [], [LossMetric()]), loader(32, 16))
    assert console.file.getvalue() == drawn
