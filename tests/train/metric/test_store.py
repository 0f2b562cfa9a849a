"""`burnlike.train.metric.store`: the run's record of epoch values. It lists a split's metric names,
keeps one direction per metric name (refusing a second, naming both) and finds the best epoch as
Burn does: the first strict best in the metric's own direction, a NaN epoch never winning (nor a
NaN first epoch being a best to beat), nothing for a split or metric without values."""

import pytest

from burnlike.train import Aggregate, Direction, MetricStore, Split
from burnlike.train.metric import (
    AccuracyMetric,
    AurocMetric,
    CpuMemory,
    CpuUse,
    CudaMetric,
    CudaUtilization,
    FBetaScoreMetric,
    HammingScore,
    IterationSpeedMetric,
    LearningRateMetric,
    LossMetric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)
from tests.train.helpers import NAN, store_of


# --- names and directions --------------------------------------------------------------------------
def test_store_names_lists_one_split_sorted():
    store = MetricStore()
    store.record(Split.TRAIN, 1, "Loss", 0.5)
    store.record(Split.TRAIN, 1, "Accuracy", 90.0)
    store.record(Split.VALID, 1, "Loss", 0.6)
    store.record(Split.VALID, 2, "CER", 3.0)
    assert store.names(Split.TRAIN) == ["Accuracy", "Loss"]
    assert store.names("valid") == ["CER", "Loss"]
    assert store.names(Split.TEST) == []


def test_store_registers_directions_and_refuses_a_second_naming_both():
    store = MetricStore()
    store.register([AccuracyMetric(), LossMetric(), CudaMetric()])
    assert store.direction("Accuracy") is Direction.HIGHEST and store.direction("Loss") is Direction.LOWEST
    assert store.direction("Cuda") is None and store.direction("Unknown") is None

    class HigherLoss(LossMetric):
        higher_is_better = True

    class ScoredCuda(CudaMetric):
        higher_is_better = False

    with pytest.raises(ValueError, match=r"'Loss' is registered with two directions \(lowest and highest\)"):
        store.register([HigherLoss()])
    with pytest.raises(ValueError, match=r"'Cuda' is registered with two directions "
                                         r"\(no direction and lowest\)"):
        store.register([ScoredCuda()])


@pytest.mark.parametrize(("metric", "direction"), [
    (AccuracyMetric, Direction.HIGHEST), (TopKAccuracyMetric, Direction.HIGHEST), (LossMetric, Direction.LOWEST),
    (PrecisionMetric, Direction.HIGHEST), (RecallMetric, Direction.HIGHEST), (FBetaScoreMetric, Direction.HIGHEST),
    (AurocMetric, Direction.HIGHEST), (HammingScore, Direction.HIGHEST),
    (LearningRateMetric, Direction.LOWEST), (IterationSpeedMetric, Direction.HIGHEST), (CpuUse, Direction.LOWEST),
    (CpuMemory, Direction.LOWEST), (CudaMetric, None), (CudaUtilization, None),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_each_metric_declares_its_direction(metric, direction):
    """Burn's `NumericAttributes::higher_is_better` (burn-train/src/metric/learning_rate.rs: false,
    iteration.rs: true, cpu_use.rs and memory_use.rs: false; acc.rs, loss.rs ...); Burn's Cuda
    metric has no numeric attributes."""
    assert Direction.of(metric.higher_is_better) is direction


# --- the best epoch --------------------------------------------------------------------------------
def test_find_epoch_is_burns_first_strict_best_in_the_metrics_own_direction():
    store = MetricStore()
    store.register([AccuracyMetric(), LossMetric(), CudaMetric()])
    for epoch, (acc, loss) in enumerate([(80.0, 0.5), (90.0, float("nan")), (90.0, 0.3), (85.0, 0.3)], 1):
        store.record(Split.VALID, epoch, "Accuracy", acc)
        store.record(Split.VALID, epoch, "Loss", loss)
        store.record(Split.TRAIN, epoch, "Cuda", 0.1 / epoch)
    assert store.find_epoch("Accuracy", Split.VALID) == 2  # the first epoch at the best value
    assert store.find_epoch("Loss", Split.VALID) == 3  # NaN never wins; ties keep the earlier epoch
    assert store.find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 1
    assert store.find_epoch("Accuracy", Split.TRAIN) is None  # nothing stored for this split
    store.record(Split.TRAIN, 1, "Loss", float("nan"))
    store.record(Split.TRAIN, 2, "Loss", 0.9)
    assert store.find_epoch("Loss", Split.TRAIN) == 2  # a NaN first epoch isn't a best to beat
    assert store.find_metric("Loss", 3, Split.VALID, Aggregate.MEAN) == 0.3
    assert store.find_metric("Loss", 9, Split.VALID) is None
    with pytest.raises(ValueError, match="'Cuda' has no direction"):
        store.find_epoch("Cuda", Split.TRAIN)
    with pytest.raises(ValueError, match="median"):
        store.find_epoch("Loss", Split.VALID, aggregate="median")


def test_find_epoch_honours_the_direction():
    store = store_of({1: 0.5, 2: 0.2, 3: 0.9, 4: 0.4})
    assert store.find_epoch("Loss", Split.VALID, Direction.LOWEST) == 2
    assert store.find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 3
    assert store.find_epoch("Loss", Split.TRAIN, Direction.LOWEST) is None  # other split: not logged
    assert store.find_epoch("Accuracy", Split.VALID, Direction.HIGHEST) is None


def test_find_epoch_keeps_the_earliest_of_tied_best_epochs():
    """Burn compares with a strict `<` / `>`: a later epoch equal to the best is not better."""
    assert store_of({1: 0.7, 2: 0.3, 3: 0.3, 4: 0.5}).find_epoch("Loss", Split.VALID, Direction.LOWEST) == 2
    assert store_of({1: 0.7, 2: 0.9, 3: 0.9, 4: 0.5}).find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 2
    assert store_of({3: 0.1, 1: 0.1, 2: 0.1}).find_epoch("Loss", Split.VALID, Direction.LOWEST) == 1


def test_a_nan_epoch_never_wins_wherever_it_falls():
    for values, lowest, highest in (({1: 0.5, 2: NAN, 3: 0.4}, 3, 1), ({1: 0.5, 2: 0.4, 3: NAN}, 2, 1),
                                    ({1: 0.4, 2: NAN, 3: 0.5}, 1, 3)):
        assert store_of(values).find_epoch("Loss", Split.VALID, Direction.LOWEST) == lowest
        assert store_of(values).find_epoch("Loss", Split.VALID, Direction.HIGHEST) == highest


def test_a_nan_first_epoch_neither_wins_nor_crashes():
    store = store_of({1: NAN, 2: 0.5, 3: 0.4})
    assert store.find_epoch("Loss", Split.VALID, Direction.LOWEST) == 3
    assert store.find_epoch("Loss", Split.VALID, Direction.HIGHEST) == 2
    only_nan = store_of({1: NAN, 2: NAN})
    assert only_nan.find_epoch("Loss", Split.VALID, Direction.LOWEST) is None  # nothing to compare: not logged


def test_split_direction_and_aggregate_have_burns_variant_names():
    """burn-train/src/metric/store/base.rs (v0.21.0): `Split::{Train, Valid, Test}`,
    `Direction::{Lowest, Highest}`, `Aggregate::Mean`; the UPPERCASE names are aliases of them."""
    assert (Split.Train, Split.Valid, Split.Test) == (Split.TRAIN, Split.VALID, Split.TEST)
    assert Split.Valid is Split("valid") and Split.Valid.name == "Valid"
    assert Direction.Lowest is Direction.LOWEST and Direction.Highest is Direction.HIGHEST
    assert Aggregate.Mean is Aggregate.MEAN
    assert [m.name for m in Split] == ["Train", "Valid", "Test"]
