"""burnlike.train behaviour the rest of the suite left unpinned (issue 17, third pass over the
train sample's survivors): error texts that name what was expected, the summary table's header,
the experiment log's reach, the plot's size, the composed checkpointing rule and the saved NumPy
random state. Real components: Lightning Trainers on tiny data, real loggers and files."""

from __future__ import annotations

import logging
import random

import numpy as np
import pytest
import torch
from PIL import Image
from toy import Batch, Classifier, SelfBackward, loader

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import DefaultRecorder
from burnlike.train import (
    ClassificationOutput,
    ComposedCheckpointingStrategy,
    LearnerBuilder,
    LearnerSummary,
    MetricStore,
    TrainOutput,
    TrainStep,
)
from burnlike.train.checkpoint import CheckpointingAction, CheckpointingStrategy, Delete, Save
from burnlike.train.learner import _plot
from burnlike.train.logger import install_experiment_log, read_metric_log, remove_experiment_log
from burnlike.train.metric import LossMetric
from burnlike.train.module import output_type
from burnlike.train.preemption import RandomState, restore_random_state
from burnlike.train.summary import MetricSummary


def quick(tmp_path, epochs: int = 1) -> LearnerBuilder:
    return (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(epochs).progress_bar(False)
            .devices(["cpu"]))


def test_with_logger_names_what_it_expects_and_what_it_got(tmp_path):
    with pytest.raises(TypeError, match=r"^with_logger expects lightning loggers \(e\.g\. TensorBoardLogger"
                                        r"\(\.\.\.\)\), got str$"):
        LearnerBuilder(tmp_path).with_logger("tensorboard")


class LossAsGrads(Classifier):
    """Hands the loss itself over as the gradients."""

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, item.loss, item)  # type: ignore[arg-type]


@pytest.mark.parametrize(("model", "got"), [(SelfBackward, "NoneType"), (LossAsGrads, "Tensor")])
def test_a_step_with_wrong_grads_is_told_what_grads_must_be(tmp_path, model, got):
    learner = quick(tmp_path).build(model(), AdamConfig(), 1e-3)
    with pytest.raises(TypeError, match=r"^TrainOutput\.grads must be backward\(loss\) \(burnlike\.train\.backward\), "
                                        rf"got {got}\. Don't call loss\.backward\(\) yourself"):
        learner.fit(loader(32, 16))


def test_resuming_last_without_checkpoints_names_the_checkpoint_folder(tmp_path):
    learner = (quick(tmp_path).with_file_checkpointer(DefaultRecorder()).checkpoint("last")
               .build(Classifier(), SgdConfig(), 0.01))
    with pytest.raises(FileNotFoundError) as error:
        learner.fit(loader(32, 16))
    assert str(error.value) == f"checkpoint('last'): no complete checkpoint in {tmp_path / 'checkpoint'}"


def test_the_experiment_log_says_where_training_finished(tmp_path):
    learner = quick(tmp_path).with_application_logger(True).build(Classifier(), SgdConfig(), 0.01)
    learner.fit(loader(32, 16), loader(16, 16))
    assert "training finished at epoch 1" in (tmp_path / "experiment.log").read_text()


def test_the_experiment_log_takes_lightning_fabric_records_and_lets_go_of_every_logger(tmp_path):
    names = ("burnlike", "lightning.pytorch", "lightning.fabric")
    handler = install_experiment_log(tmp_path)
    try:
        assert all(handler in logging.getLogger(n).handlers for n in names)
        logging.getLogger("lightning.fabric").info("fabric says hello")
        handler.flush()
        assert "fabric says hello" in (tmp_path / "experiment.log").read_text()
    finally:
        remove_experiment_log(handler)
    assert not any(handler in logging.getLogger(n).handlers for n in names)


def test_a_metric_log_without_counted_values_has_no_epoch_value(tmp_path):
    empty = tmp_path / "Loss.log"
    empty.write_text("")
    assert read_metric_log(empty) is None
    zero = tmp_path / "Accuracy.log"
    zero.write_text("0.5,0\n")  # a value that weighs nothing
    assert read_metric_log(zero) is None


class HintOnly(torch.nn.Module):
    """Declares its output only through `train_step`'s return hint, not `TrainStep[B, O]`."""

    def train_step(self, batch: object) -> TrainOutput[ClassificationOutput]:
        raise NotImplementedError


def test_the_output_type_is_read_from_a_train_step_return_hint():
    assert output_type(HintOnly(), TrainStep) is ClassificationOutput


class NeverSaves(CheckpointingStrategy):
    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        return [Delete(epoch - 1)] if epoch > 1 else []


def test_a_composed_strategy_saves_only_when_one_of_its_strategies_does():
    composed = ComposedCheckpointingStrategy([NeverSaves(), NeverSaves()])
    store = MetricStore()
    assert composed.checkpointing(1, store) == []
    actions = composed.checkpointing(2, store)
    assert not any(isinstance(a, Save) for a in actions)


def test_the_summary_table_header_spells_burns_columns():
    summary = LearnerSummary(2, [MetricSummary("valid", "Loss", 0.5, 2, 0.9, 1)])
    header = str(summary).splitlines()[4]
    assert [c.strip() for c in header.strip("|").split("|")] == ["Split", "Metric", "Min.", "Epoch", "Max.", "Epoch"]


def test_the_plot_is_one_panel_of_4_5_by_3_2_inches_per_metric(tmp_path):
    pytest.importorskip("matplotlib")
    summary = LearnerSummary(2, [MetricSummary("train", "Loss", 0.5, 2, 0.9, 1, {1: 0.9, 2: 0.5}),
                                 MetricSummary("valid", "Accuracy", 50.0, 1, 60.0, 2, {1: 50.0, 2: 60.0})])
    path = tmp_path / "metrics.png"
    _plot(summary, path)
    with Image.open(path) as image:
        assert image.size == (round(2 * 4.5 * 80), round(3.2 * 80))  # figsize × dpi 80


def test_checkpoints_keep_numpy_random_state(tmp_path):
    checkpoint: dict[str, object] = {}
    np.random.seed(7)
    RandomState().on_save_checkpoint(None, None, checkpoint)  # type: ignore[arg-type]
    expected = np.random.rand(3)
    state = checkpoint[RandomState.KEY]
    assert isinstance(state, dict) and "numpy" in state
    np.random.rand(5)
    random.random()
    restore_random_state(state)
    assert np.array_equal(np.random.rand(3), expected)


def test_a_continued_logger_is_named_when_it_keeps_its_runs_hyperparameters(tmp_path, caplog):
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    from burnlike.train import tracking

    logger = CSVLogger(tmp_path, name="r", version=0)
    tracking.continue_run(logger, {"kind": "CSVLogger", "version": 0})
    trainer = L.Trainer(logger=logger, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        tracking.MetricLoggerBridge(hyperparams={"lr": 0.1}).on_fit_start(trainer, None)  # type: ignore[arg-type]
    assert "resume: CSVLogger keeps the hyperparameters its run started with" in [r.getMessage() for r in caplog.records]
