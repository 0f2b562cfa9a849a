"""The run's one metric store: directions, Burn's queries, and everything it feeds (strategies, early
stopping, the summary, resume) without reading back the files the run wrote."""

import math
import sys
from pathlib import Path

import pytest
import torch
from toy import Classifier, Regressor, loader

from burnlike.optim import AdamConfig
from burnlike.record import DefaultRecorder
from burnlike.train import (
    Aggregate,
    ClassificationOutput,
    Direction,
    LearnerBuilder,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    MetricInputError,
    MetricStore,
    Split,
    StepModule,
    StoppingCondition,
)
from burnlike.train.checkpoint import Save
from burnlike.train.metric import (
    AccuracyMetric,
    AurocMetric,
    CpuMemory,
    CpuUse,
    FBetaScoreMetric,
    HammingScore,
    IterationSpeedMetric,
    LearningRateMetric,
    LossMetric,
    MetricContext,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)
from burnlike.train.metric.store import EpochEntry


@pytest.mark.parametrize(("metric", "direction"), [
    (AccuracyMetric, Direction.HIGHEST), (TopKAccuracyMetric, Direction.HIGHEST), (LossMetric, Direction.LOWEST),
    (PrecisionMetric, Direction.HIGHEST), (RecallMetric, Direction.HIGHEST), (FBetaScoreMetric, Direction.HIGHEST),
    (AurocMetric, Direction.HIGHEST), (HammingScore, Direction.HIGHEST),
    (LearningRateMetric, None), (IterationSpeedMetric, None), (CpuUse, None), (CpuMemory, None),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_each_metric_declares_its_direction(metric, direction):
    assert Direction.of(metric.higher_is_better) is direction


def test_store_registers_directions_and_refuses_two_for_one_name():
    store = MetricStore()
    store.register([AccuracyMetric(), LossMetric(), LearningRateMetric()])
    assert store.direction("Accuracy") is Direction.HIGHEST and store.direction("Loss") is Direction.LOWEST
    assert store.direction("Learning Rate") is None and store.direction("Unknown") is None

    class HigherLoss(LossMetric):
        higher_is_better = True

    with pytest.raises(ValueError, match="'Loss'.*two directions"):
        store.register([HigherLoss()])


def test_find_epoch_is_burns_first_strict_best_in_the_metrics_own_direction():
    store = MetricStore()
    store.register([AccuracyMetric(), LossMetric(), LearningRateMetric()])
    for epoch, (acc, loss) in enumerate([(80.0, 0.5), (90.0, float("nan")), (90.0, 0.3), (85.0, 0.3)], 1):
        store.record(Split.VALID, epoch, "Accuracy", acc)
        store.record(Split.VALID, epoch, "Loss", loss)
        store.record(Split.TRAIN, epoch, "Learning Rate", 0.1 / epoch)
    assert store.find_epoch("Accuracy", Split.VALID) == 2  # the first epoch at the best value
    assert store.find_epoch("Loss", Split.VALID) == 3  # NaN never wins; ties keep the earlier epoch
    assert store.find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 1
    assert store.find_epoch("Accuracy", Split.TRAIN) is None  # nothing stored for this split
    store.record(Split.TRAIN, 1, "Loss", float("nan"))
    store.record(Split.TRAIN, 2, "Loss", 0.9)
    assert store.find_epoch("Loss", Split.TRAIN) == 2  # a NaN first epoch isn't a best to beat
    assert store.find_metric("Loss", 3, Split.VALID, Aggregate.MEAN) == 0.3
    assert store.find_metric("Loss", 9, Split.VALID) is None
    with pytest.raises(ValueError, match="'Learning Rate' has no direction"):
        store.find_epoch("Learning Rate", Split.TRAIN)
    with pytest.raises(ValueError, match="median"):
        store.find_epoch("Loss", Split.VALID, aggregate="median")


def test_strategies_take_the_metrics_direction_and_validate_the_aggregate():
    store = MetricStore()
    store.register([AccuracyMetric()])
    strategy = MetricCheckpointingStrategy(AccuracyMetric())  # Burn's default split: valid
    for epoch, acc in enumerate([80.0, 90.0, 85.0], 1):
        store.record(Split.VALID, epoch, "Accuracy", acc)
        strategy.checkpointing(epoch, store)
    assert strategy.current == 2  # highest accuracy, not lowest
    by_name = MetricCheckpointingStrategy("Accuracy")  # a name: the registered metric's direction
    assert by_name.checkpointing(3, store) == [] and by_name.current == 2
    assert MetricCheckpointingStrategy("Accuracy", split=Split.TRAIN).checkpointing(1, store) == [Save()]
    with pytest.raises(ValueError, match="median"):
        MetricCheckpointingStrategy(LossMetric(), aggregate="median")
    with pytest.raises(ValueError, match="median"):
        MetricEarlyStoppingStrategy(LossMetric(), aggregate="median")
    with pytest.raises(ValueError, match="no direction"):
        MetricEarlyStoppingStrategy(LearningRateMetric(), split=Split.TRAIN)
    # Burn's spelling, all positional
    MetricCheckpointingStrategy(LossMetric(), Aggregate.MEAN, Direction.LOWEST, Split.VALID)


def stopping(values: dict[int, float], n_epochs: int, metric=None) -> list[int]:
    """Epochs at which Burn's strategy says stop, fed from a store one epoch at a time."""
    store = MetricStore()
    store.register([metric or LossMetric()])
    strategy = MetricEarlyStoppingStrategy(metric or LossMetric(), condition=StoppingCondition.no_improvement_since(n_epochs))
    stops = []
    for epoch in range(1, max(values) + 1):
        if epoch in values:
            store.record(Split.VALID, epoch, (metric or LossMetric()).name, values[epoch])
        if strategy.should_stop(epoch, store):
            stops.append(epoch)
    return stops


def test_early_stopping_has_burns_semantics():
    # n epochs without a strict improvement, counted in epochs since the best
    assert stopping({1: 0.5, 2: 0.6, 3: 0.4, 4: 0.4, 5: 0.45}, 2) == [5]
    # a missing value never stops; epochs without one still count (Lightning's patience counts checks)
    assert stopping({2: 0.5, 4: 0.6}, 2) == [4]
    # NaN never improves but doesn't stop by itself (Lightning's check_finite would stop at once)
    assert stopping({1: 0.5, 2: float("nan")}, 2) == []
    # the metric's own direction: accuracy going up is an improvement
    assert stopping({1: 50.0, 2: 60.0, 3: 70.0}, 1, AccuracyMetric()) == []


def test_early_stopping_state_survives_a_resume():
    store = MetricStore()
    store.register([LossMetric()])
    first = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition(2))
    for epoch, loss in ((1, 0.5), (2, 0.4)):
        store.record(Split.VALID, epoch, "Loss", loss)
        first.should_stop(epoch, store)
    callback = first.to_callback()
    resumed = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition(2)).to_callback()
    resumed.load_state_dict(callback.state_dict())
    for epoch, loss in ((3, 0.45), (4, 0.41)):
        store.record(Split.VALID, epoch, "Loss", loss)
    assert not resumed.strategy.should_stop(3, store) and resumed.strategy.should_stop(4, store)


def test_epoch_value_is_the_weighted_mean_and_nan_stays_nan():
    item = ClassificationOutput(torch.tensor([1.0]), torch.zeros(1, 2), torch.zeros(1, dtype=torch.long))
    loss = LossMetric()
    for value, n in ((1.0, 1), (3.0, 3)):
        loss.update(ClassificationOutput(torch.full((n,), value), torch.zeros(n, 2), torch.zeros(n).long()),
                    MetricContext())
    value, steps = loss.finish_epoch()
    assert value == pytest.approx(2.5) and steps == [(1.0, 1.0), (3.0, 3.0)]  # (1·1 + 3·3) / 4
    loss.update(item, MetricContext())
    loss.update(ClassificationOutput(torch.tensor([float("nan")]), item.output, item.targets), MetricContext())
    assert math.isnan(loss.finish_epoch()[0])  # as Burn: a NaN step makes a NaN epoch, it isn't dropped


def test_a_typed_models_metric_mismatch_fails_when_the_step_module_is_made():
    with pytest.raises(MetricInputError, match="Accuracy.*RegressionOutput"):
        StepModule(Regressor(), AdamConfig(), 1e-3, valid_metrics=[AccuracyMetric()])


def test_cpu_metrics_name_their_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # as if psutil were not installed
    for metric in (CpuUse, CpuMemory):
        with pytest.raises(ImportError, match=r"burnlike\[system\]"):
            metric()


class CorruptLogs:
    """A store listener after the file logger: leaves every `.log` the run wrote unreadable."""

    def __init__(self, artifact_dir: Path) -> None:
        self.artifact_dir = artifact_dir

    def __call__(self, split: Split, epoch: int, entries: dict[str, EpochEntry]) -> None:
        for path in (self.artifact_dir / split.value / f"epoch-{epoch}").glob("*.log"):
            path.write_text("not,a,metric,log\n")


def builder(tmp_path, epochs):
    return (LearnerBuilder(tmp_path).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .with_file_checkpointer(DefaultRecorder()).num_epochs(epochs).progress_bar(False))


def test_summary_and_checkpoints_come_from_the_store_not_the_log_files(tmp_path, capsys):
    torch.manual_seed(0)
    learner = builder(tmp_path, 3).summary().build(Classifier(), AdamConfig(), 5e-2)
    store = learner.module.store
    store.add_listener(CorruptLogs(tmp_path))
    result = learner.fit(loader(256, 32), loader(128, 32, seed=1))
    with pytest.raises(ValueError, match="Accuracy.log:1"):  # what the run wrote can't be read back
        from burnlike.train import LearnerSummary

        LearnerSummary.from_dir(tmp_path, ["Accuracy"], ["Accuracy"])
    for split in (Split.TRAIN, Split.VALID):
        for name in ("Accuracy", "Loss"):
            row = result.summary.get(split.value, name)
            assert row.epochs == store.epochs(split, name) and len(row.epochs) == 3
            assert row.max_value == max(store.epochs(split, name).values())
    assert "Total Epochs: 3" in capsys.readouterr().out
    best = store.find_epoch("Loss", Split.VALID)
    kept = sorted(int(p.stem.split("-")[1]) for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert kept == sorted({2, 3, best})  # Burn's default: the last two plus the best valid loss


def test_early_stopping_on_a_train_metric_sees_the_epoch_just_finished(tmp_path):
    # constant lr: no strict improvement after epoch 1, so Burn stops after epoch 2
    stop = MetricEarlyStoppingStrategy(LearningRateMetric(), direction=Direction.LOWEST, split=Split.TRAIN,
                                       condition=StoppingCondition.no_improvement_since(1))
    learner = (LearnerBuilder(tmp_path).metric_train(LearningRateMetric()).num_epochs(5).progress_bar(False)
               .early_stopping(stop).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 32))
    assert learner.trainer.current_epoch == 2 and learner.trainer.early_stopping_callback is not None
    assert stop.best_epoch == 1


def test_the_store_survives_a_resume(tmp_path):
    torch.manual_seed(0)
    first = builder(tmp_path, 2).build(Classifier(), AdamConfig(), 5e-2)
    first.fit(loader(128, 32), loader(64, 32, seed=1))
    before = first.module.store.epochs(Split.VALID, "Loss")
    resumed = builder(tmp_path, 3).checkpoint(2).build(Classifier(), AdamConfig(), 5e-2)
    resumed.fit(loader(128, 32), loader(64, 32, seed=1))
    after = resumed.module.store.epochs(Split.VALID, "Loss")
    assert list(after) == [1, 2, 3] and {e: after[e] for e in (1, 2)} == before
