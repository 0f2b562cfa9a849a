"""Evaluator settings and the checkpointing/early-stopping state that the other tests leave open,
found by mutation testing (issue 17): the evaluator's Trainer settings and result, a test metric
checked at the first step, the strategies' restored state, early stopping's initial best epoch,
its log lines, its Lightning callback settings and its skip under `fast_dev_run`."""

import logging
import warnings
from pathlib import Path

import pytest
import torch
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger
from torch import nn
from torch.utils.data import DataLoader
from toy import Classifier, Regressor, collate, loader

import burnlike
from burnlike.optim import AdamConfig
from burnlike.record import CompactRecorder
from burnlike.train import (
    EvaluatorBuilder,
    LearnerBuilder,
    MetricEarlyStoppingStrategy,
    MetricInputError,
    SupervisedTraining,
)
from burnlike.train.checkpoint import (
    ComposedCheckpointingStrategy,
    Direction,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
    Split,
    StoppingCondition,
    newest_checkpoint,
)
from burnlike.train.logger import read_epochs, tagged_test_split
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from burnlike.train.metric.store import MetricStore
from burnlike.train.summary import LearnerSummary
from burnlike.train.tracking import continue_run


# Evaluator ----------------------------------------------------------------------------------------
def test_evaluator_trainer_settings_by_default(tmp_path):
    builder = EvaluatorBuilder(tmp_path)
    assert builder.trainer_kwargs_for(Classifier()) == {
        "default_root_dir": str(tmp_path), "logger": False, "enable_checkpointing": False,
        "enable_model_summary": False, "enable_progress_bar": True, "accelerator": "cpu", "devices": 1}
    assert builder.progress_bar(False).trainer_kwargs_for(Classifier())["enable_progress_bar"] is False
    assert builder.progress_bar().trainer_kwargs_for(Classifier())["enable_progress_bar"] is True
    # a model without parameters: Lightning picks the device
    assert "accelerator" not in builder.trainer_kwargs_for(nn.Identity())


def test_evaluator_refuses_a_non_metric_naming_it(tmp_path):
    with pytest.raises(TypeError, match=r"^expected a burnlike Metric \(e\.g\. AccuracyMetric\(\)\), got str$"):
        EvaluatorBuilder(tmp_path).metric("Accuracy")


def test_a_valid_step_models_output_is_checked_at_build(tmp_path):
    with pytest.raises(MetricInputError, match="test metric 'Accuracy'"):
        EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).build(Regressor())  # RegressionOutput: no accuracy


class Untyped(nn.Module):
    """An inference step without type hints: the output is only known at the first step."""

    def __init__(self):
        super().__init__()
        self.inner = Regressor()

    def inference_step(self, batch):
        return self.inner.step(batch)


def test_an_untyped_models_output_is_checked_at_the_first_test_step(tmp_path):
    evaluator = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).progress_bar(False).build(Untyped())
    with pytest.raises(MetricInputError, match="test metric 'Accuracy'"):
        evaluator.eval("blobs", loader(32, 16))


def test_evaluation_result_names_its_run_and_prints_no_summary_unless_asked(tmp_path, capsys, caplog):
    burnlike.seed(0)
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).metrics_text(LearningRateMetric())
                 .progress_bar(False).with_application_logger(False).build(Classifier()))
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        result = evaluator.eval("Blobs Test", loader(32, 16))
    assert result.name == "Blobs Test" and result.summary is None
    assert capsys.readouterr().out == ""  # no summary table, no Lightning results table
    assert "evaluating Classifier on test/blobs-test" in [r.getMessage() for r in caplog.records]
    assert torch.isnan(torch.tensor(result.metrics["Learning Rate"]))  # no learning rate in a test
    assert evaluator.results == {"blobs-test": {"Loss": result.metrics["Loss"]}}  # numeric metrics only


# Checkpointing strategies' state -----------------------------------------------------------------
def test_composed_strategy_restores_its_deletions_and_its_childrens_state():
    best = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)
    composed = ComposedCheckpointingStrategy([KeepLastNCheckpoints(2), best])
    state = {"deleted": [[1], []], "children": [{}, {"current": 3}]}
    composed.load_state_dict(state)
    assert composed.deleted == [{1}, set()] and best.current == 3
    assert composed.state_dict() == state
    fresh = ComposedCheckpointingStrategy([KeepLastNCheckpoints(2)])
    fresh.load_state_dict({})  # a state from before these fields: nothing to restore
    assert fresh.deleted == [set()]


# Early stopping ----------------------------------------------------------------------------------
def losses(*values):
    store = MetricStore()
    store.register([LossMetric()])
    for epoch, value in enumerate(values, 1):
        store.record(Split.VALID, epoch, "Loss", value)
    return store


def test_early_stopping_counts_from_epoch_one_when_nothing_improves():
    strategy = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(1))
    store = losses(float("nan"), float("nan"))
    assert not strategy.should_stop(1, store)
    assert strategy.should_stop(2, store)  # NaN never improves: best is still Burn's initial epoch 1


def test_early_stopping_logs_a_missing_value_and_why_it_stops(caplog):
    strategy = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(1))
    store = losses(0.5, 0.75)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        assert not strategy.should_stop(1, store)
        assert strategy.should_stop(2, store)
        assert not strategy.should_stop(3, store)
    assert [r.getMessage() for r in caplog.records] == [
        "stopping: valid/Loss has not improved since epoch 1 (0.5), now 0.75",
        "early stopping: no valid/Loss value for epoch 3",
    ]


def test_the_early_stopping_callback_watches_the_strategys_metric():
    callback = MetricEarlyStoppingStrategy(LossMetric()).to_callback()
    assert callback.monitor == "valid/Loss"
    assert callback.state_key == "MetricEarlyStopping{'monitor': 'valid/Loss', 'strategy': 'burn'}"


def test_early_stopping_is_checked_after_every_train_epoch_even_without_validation(tmp_path):
    stop = MetricEarlyStoppingStrategy(LossMetric(), split=Split.TRAIN, condition=StoppingCondition(2))
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).num_epochs(8).progress_bar(False)
               .with_application_logger(False).early_stopping(stop).trainer_kwargs(check_val_every_n_epoch=2)
               .build(Classifier(), AdamConfig(), 0.0))  # lr 0: the train loss never improves after epoch 1
    learner.fit(loader(32, 16), loader(32, 16))
    assert learner.trainer.current_epoch == 3  # stopped after epoch 3 (3 - 1 >= 2), not at a validation epoch
    callback = learner.trainer.early_stopping_callback
    assert callback.stopped_epoch == 2  # Lightning's 0-based epoch of the stop


def test_early_stopping_sits_out_a_fast_dev_run(tmp_path, caplog):
    stop = MetricEarlyStoppingStrategy(LossMetric(), split=Split.TRAIN)
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).num_epochs(3).progress_bar(False)
               .with_application_logger(False).early_stopping(stop).trainer_kwargs(fast_dev_run=True)
               .build(Classifier(), AdamConfig(), 1e-2))
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        learner.fit(loader(32, 16))
    assert stop.best_value is None  # never consulted
    assert not [r for r in caplog.records if "stopping" in r.getMessage()]


def test_an_evaluation_tag_keeps_its_slashes_in_the_summary(tmp_path):
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).with_application_logger(False)
                 .build(Classifier()))
    result = evaluator.eval("mnist/test", loader(16, 16))
    assert evaluator.results == {"mnist/test": {"Loss": result.metrics["Loss"]}}


# Continuing a logger's run on resume -------------------------------------------------------------
def messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "burnlike.train"]


def test_continue_run_points_csv_and_tensorboard_loggers_at_the_checkpoints_version(tmp_path, caplog):
    csv, board = CSVLogger(tmp_path / "csv"), TensorBoardLogger(tmp_path / "tb")
    with caplog.at_level(logging.INFO, logger="burnlike.train"), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        continue_run(csv, {"kind": "CSVLogger", "version": 3})
        continue_run(board, {"kind": "TensorBoardLogger", "version": 5})
        # Lightning's warning about the existing folder of the continued run is silenced, no other
        warnings.warn(f"Experiment logs directory {csv.log_dir} exists and is not empty.", UserWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert csv.version == 3 and board.version == 5
    assert [str(w.message) for w in seen] == ["something else"]
    assert messages(caplog) == ["resume: CSVLogger continues run 3", "resume: TensorBoardLogger continues run 5"]


def test_continue_run_resumes_a_wandb_run_by_id(tmp_path):
    pytest.importorskip("wandb")
    wandb = pytest.importorskip("lightning.pytorch.loggers").WandbLogger(offline=True, save_dir=str(tmp_path))
    continue_run(wandb, {"kind": "WandbLogger", "version": "run-7"})
    assert wandb._id == "run-7" and wandb._wandb_init["id"] == "run-7" and wandb._wandb_init["resume"] == "allow"


class OwnLogger(Logger):
    name, version = "own", 0

    def log_hyperparams(self, params, *args, **kwargs):
        pass

    def log_metrics(self, metrics, step=None):
        pass


def test_continue_run_says_why_a_logger_starts_a_new_run(tmp_path, caplog):
    csv = CSVLogger(tmp_path / "csv")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(csv, {"kind": "TensorBoardLogger", "version": 3})  # another kind
        continue_run(csv, {"kind": "CSVLogger"})  # no version
        continue_run(OwnLogger(), {"kind": "OwnLogger", "version": 1})
        csv.experiment  # noqa: B018  (starts its run)
        continue_run(csv, {"kind": "CSVLogger", "version": 3})
    assert csv.version == 0
    assert messages(caplog) == [
        "resume: logger CSVLogger is not the checkpoint's (TensorBoardLogger); it starts a new run",
        "resume: logger CSVLogger is not the checkpoint's (CSVLogger); it starts a new run",
        "resume: burnlike can't continue a OwnLogger run; it starts a new one",
        "resume: CSVLogger already started a run; it can't continue run 3",
    ]


def test_launch_names_what_it_got_instead_of_a_learner(tmp_path):
    with pytest.raises(TypeError, match=r"^launch expects Learner\(model, optim, lr\), got Classifier$"):
        SupervisedTraining(tmp_path, loader(32, 16)).launch(Classifier())


def test_summary_from_a_run_dir_keeps_the_model_and_misses_unknown_rows(tmp_path):
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).progress_bar(False)
               .with_application_logger(False).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(32, 16))
    summary = LearnerSummary.from_dir(tmp_path, ["Loss"], ["Loss"], model="Classifier(4 -> 3)")
    assert summary.model == "Classifier(4 -> 3)" and "Model:\nClassifier(4 -> 3)" in str(summary)
    assert summary.get("train", "Loss") is not None and summary.get("valid", "Accuracy") is None


def test_the_untagged_test_split_is_test():
    assert tagged_test_split() == "test" and tagged_test_split(" My Set ") == "test/my-set"


def test_evaluating_an_empty_loader_gives_no_values(tmp_path):
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).with_application_logger(False)
                 .build(Classifier()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning warns that the loader is empty
        result = evaluator.eval("nothing", DataLoader([], batch_size=4, collate_fn=collate))
    assert result.metrics == {} and evaluator.results == {"nothing": {}}


def test_read_epochs_skips_folders_that_are_not_an_epoch(tmp_path):
    for folder, value in (("epoch-1", 0.5), ("epoch-old", 9.0), ("epoch-3-backup", 7.0), ("epoch-2", 0.25),
                          ("epoch-x", 8.0), ("epoch-old-4", 6.0), ("epoch-10", 0.125)):
        (tmp_path / "train" / folder).mkdir(parents=True)
        (tmp_path / "train" / folder / "Loss.log").write_text(f"{value},4\n")
    assert read_epochs(tmp_path, "train", "Loss") == {1: 0.5, 2: 0.25, 10: 0.125}


def test_checkpoints_of_an_epoch_the_strategy_drops_are_removed_and_logged(tmp_path, caplog):
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).num_epochs(2).progress_bar(False)
               .with_application_logger(False).with_file_checkpointer(CompactRecorder())
               .with_checkpointing_strategy(KeepLastNCheckpoints(1))
               .build(Classifier(), AdamConfig(), 1e-2))
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        learner.fit(loader(32, 16))
    removed = [m.removeprefix("removing checkpoint ") for m in messages(caplog) if m.startswith("removing checkpoint ")]
    folder = tmp_path / "checkpoint"
    assert removed and all(Path(p).parent == folder and Path(p).name.split(".")[0].endswith("-1") for p in removed)
    assert not [p for p in folder.iterdir() if p.name.split(".")[0].endswith("-1")]  # epoch 1's files are gone
    assert [p for p in folder.iterdir() if p.name.split(".")[0].endswith("-2")]  # epoch 2's are kept


def checkpointed_run(tmp_path, epochs=2):
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).num_epochs(epochs).progress_bar(False)
               .with_application_logger(False).with_file_checkpointer(CompactRecorder())
               .build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(32, 16))
    return tmp_path / "checkpoint", CompactRecorder().file_extension()


def test_an_epoch_checkpoint_removes_the_preempted_ones_it_supersedes(tmp_path, caplog):
    folder, ext = tmp_path / "checkpoint", CompactRecorder().file_extension()
    folder.mkdir()
    stale, later = folder / f"preempted-1.{ext}", folder / f"preempted-99.{ext}"
    stale.write_bytes(b"left by an earlier run")
    later.write_bytes(b"a later step")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        checkpointed_run(tmp_path, epochs=1)  # epoch 1 ends at step 2
    assert not stale.exists() and later.exists()
    assert f"removing {stale}: the checkpoint of step 2 supersedes it" in messages(caplog)


def test_newest_checkpoint_takes_an_older_single_file_model_checkpoint_and_none_from_an_empty_folder(tmp_path):
    folder, ext = checkpointed_run(tmp_path)
    newest = newest_checkpoint(tmp_path, ext)
    assert newest == folder / f"trainer-2.{ext}"
    for path in folder.iterdir():  # the older layout: one model-N file holding the training checkpoint
        if path != newest:
            path.unlink()
    newest.rename(folder / f"model-2.{ext}")
    assert newest_checkpoint(tmp_path, ext) == folder / f"model-2.{ext}"
    (folder / f"model-2.{ext}").unlink()
    assert newest_checkpoint(tmp_path, ext) is None
