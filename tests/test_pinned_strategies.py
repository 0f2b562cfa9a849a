"""Early stopping and checkpointing strategies: direction, patience, ties (issue 17).

Two levels: the strategy objects over a metric store filled with chosen values, and real
`Learner.fit` runs whose validation loss follows a script (one value per epoch), so the epoch at
which a run stops and the checkpoint files it keeps are known in advance.
"""

import math

import pytest
import torch
from toy import Batch, Classifier, loader

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import DefaultRecorder
from burnlike.train import (
    ClassificationOutput,
    Direction,
    LearnerBuilder,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    MetricStore,
    Split,
    StoppingCondition,
)
from burnlike.train.checkpoint import Delete, Save
from burnlike.train.logger import read_epochs
from burnlike.train.metric import LossMetric

NAN = float("nan")


def store_with(values: dict[int, float], name: str = "Loss", split: str = "valid") -> MetricStore:
    store = MetricStore()
    for epoch, value in values.items():
        store.record(Split(split), epoch, name, value)
    return store


# --- the store and the strategy objects ------------------------------------------------------------

def test_find_epoch_honours_the_direction():
    store = store_with({1: 0.5, 2: 0.2, 3: 0.9, 4: 0.4})
    assert store.find_epoch("Loss", Split.VALID, Direction.LOWEST) == 2
    assert store.find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 3
    assert store.find_epoch("Loss", Split.TRAIN, Direction.LOWEST) is None  # other split: not logged
    assert store.find_epoch("Accuracy", Split.VALID, Direction.HIGHEST) is None


def test_find_epoch_keeps_the_earliest_of_tied_best_epochs():
    """Burn compares with a strict `<` / `>`: a later epoch equal to the best is not better."""
    assert store_with({1: 0.7, 2: 0.3, 3: 0.3, 4: 0.5}).find_epoch("Loss", Split.VALID, Direction.LOWEST) == 2
    assert store_with({1: 0.7, 2: 0.9, 3: 0.9, 4: 0.5}).find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 2
    assert store_with({3: 0.1, 1: 0.1, 2: 0.1}).find_epoch("Loss", Split.VALID, Direction.LOWEST) == 1


def test_a_nan_epoch_never_wins_wherever_it_falls():
    for values, lowest, highest in (({1: 0.5, 2: NAN, 3: 0.4}, 3, 1), ({1: 0.5, 2: 0.4, 3: NAN}, 2, 1),
                                    ({1: 0.4, 2: NAN, 3: 0.5}, 1, 3)):
        assert store_with(values).find_epoch("Loss", Split.VALID, Direction.LOWEST) == lowest
        assert store_with(values).find_epoch("Loss", Split.VALID, Direction.HIGHEST) == highest


def test_a_nan_first_epoch_neither_wins_nor_crashes():
    store = store_with({1: NAN, 2: 0.5, 3: 0.4})
    assert store.find_epoch("Loss", Split.VALID, Direction.LOWEST) == 3
    assert store.find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 2
    only_nan = store_with({1: NAN, 2: NAN})
    assert only_nan.find_epoch("Loss", Split.VALID, Direction.LOWEST) is None  # nothing to compare: not logged


def test_metric_checkpointing_highest_keeps_the_maximum():
    s = MetricCheckpointingStrategy("Accuracy", direction=Direction.HIGHEST, split=Split.VALID)
    history: dict[int, float] = {}
    actions = {}
    for epoch, value in {1: 50.0, 2: 40.0, 3: 70.0, 4: 70.0, 5: 60.0}.items():
        history[epoch] = value
        actions[epoch] = s.checkpointing(epoch, store_with(history, "Accuracy"))
    assert actions == {1: [Save()], 2: [], 3: [Delete(1), Save()], 4: [], 5: []}


def test_metric_checkpointing_reads_its_own_split():
    s = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST, split=Split.TRAIN)
    store = store_with({1: 0.1, 2: 0.9}, split="valid")
    store.record(Split.TRAIN, 1, "Loss", 0.9)
    store.record(Split.TRAIN, 2, "Loss", 0.1)
    assert s.checkpointing(1, store_with({1: 0.9}, split="train")) == [Save()]
    assert s.checkpointing(2, store) == [Delete(1), Save()]


def test_stopping_condition_needs_at_least_one_epoch():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="n_epochs"):
            MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(bad))


# --- real runs with a scripted validation loss ------------------------------------------------------

class ScriptedValidLoss(Classifier):
    """Trains normally; its validation loss is `script[epoch - 1]` (one valid batch per epoch)."""

    def __init__(self, script: list[float]) -> None:
        super().__init__()
        self.script = script
        self.valid_calls = 0

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        item = self.step(batch)
        value = self.script[self.valid_calls]
        self.valid_calls += 1
        return ClassificationOutput(torch.tensor(value), item.output, item.targets)


def scripted_run(tmp_path, script, *, direction=Direction.LOWEST, patience=None, strategy=None):
    builder = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(len(script))
               .progress_bar(False).with_application_logger(False))
    if patience is not None:
        builder.early_stopping(MetricEarlyStoppingStrategy(
            LossMetric(), direction=direction, condition=StoppingCondition.no_improvement_since(patience)))
    if strategy is not None:
        builder.with_file_checkpointer(DefaultRecorder()).with_checkpointing_strategy(strategy)
    learner = builder.build(ScriptedValidLoss(script), SgdConfig(), 0.01)
    learner.fit(loader(32, 32), loader(32, 32, seed=1))
    logged = read_epochs(tmp_path, "valid", "Loss")
    assert list(logged.values()) == pytest.approx(script[: len(logged)])  # the script reached the metric
    return learner.trainer.current_epoch


@pytest.mark.parametrize(("direction", "epochs"), [(Direction.LOWEST, 2), (Direction.HIGHEST, 4)])
def test_early_stopping_direction(tmp_path, direction, epochs):
    # lowest: best at 1, epoch 2 is worse -> stop after 2; highest: rises until 3, falls at 4 -> stop after 4
    assert scripted_run(tmp_path, [0.5, 0.6, 0.7, 0.65, 0.8, 0.9], direction=direction, patience=1) == epochs


@pytest.mark.parametrize(("patience", "epochs"), [(1, 3), (2, 4), (3, 8)])
def test_early_stopping_patience_counts_epochs_without_strict_improvement(tmp_path, patience, epochs):
    # best 0.8 at epoch 2; epoch 3 ties it (not an improvement), 4 is worse, 5 improves (0.7), then
    # 6 and 7 are worse and 8 ties 0.7: three epochs without a strict improvement
    script = [1.0, 0.8, 0.8, 0.9, 0.7, 0.75, 0.75, 0.7, 0.6, 0.5]
    assert scripted_run(tmp_path, script, patience=patience) == epochs


def test_no_early_stopping_runs_every_epoch(tmp_path):
    assert scripted_run(tmp_path, [0.5, 0.6, 0.7]) == 3


@pytest.mark.parametrize(("direction", "kept"), [(Direction.LOWEST, [2]), (Direction.HIGHEST, [4])])
def test_checkpointer_keeps_the_earliest_best_epoch_file(tmp_path, direction, kept):
    strategy = MetricCheckpointingStrategy(LossMetric(), direction=direction)
    scripted_run(tmp_path, [0.6, 0.4, 0.4, 0.9, 0.5, 0.9], strategy=strategy)
    files = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert files == kept


def test_learning_run_honours_direction(tmp_path):
    """A real run (lr > 0): the validation loss falls every epoch, so `lowest` never stops and
    `highest` stops as soon as it has fallen once."""
    def run(path, direction):
        torch.manual_seed(0)
        stop = MetricEarlyStoppingStrategy(LossMetric(), direction=direction,
                                           condition=StoppingCondition.no_improvement_since(1))
        learner = (LearnerBuilder(path).metric_valid_numeric(LossMetric()).num_epochs(4).progress_bar(False)
                   .with_application_logger(False).early_stopping(stop).build(Classifier(), AdamConfig(), 0.05))
        learner.fit(loader(64, 32), loader(64, 32, seed=1))
        return learner.trainer.current_epoch, list(read_epochs(path, "valid", "Loss").values())

    epochs, losses = run(tmp_path / "lowest", Direction.LOWEST)
    assert epochs == 4 and all(b < a for a, b in zip(losses, losses[1:])), losses
    epochs, losses = run(tmp_path / "highest", Direction.HIGHEST)
    assert epochs == 2 and losses[1] < losses[0] and not math.isnan(losses[1])



def test_a_nan_first_epoch_neither_stops_the_default_checkpointer_nor_stays_behind(tmp_path):
    builder = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(4).progress_bar(False)
               .with_application_logger(False).with_file_checkpointer(DefaultRecorder()))
    learner = builder.build(ScriptedValidLoss([NAN, 0.5, 0.6, 0.7]), SgdConfig(), 0.01)
    learner.fit(loader(32, 32), loader(32, 32, seed=1))
    assert learner.trainer.current_epoch == 4
    kept = sorted(p.name for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert kept == ["model-2.mpk", "model-3.mpk", "model-4.mpk"]  # the best valid loss (2) and the last two
