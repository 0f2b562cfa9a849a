"""`burnlike.train.metric.base`: the epoch value of a metric is the count-weighted mean of its batch
values, as Burn's numeric state has it (not the mean of batch means), NaN when a batch was NaN or
nothing was fed, and starts from zero each epoch; through the trainer it is summed in float64, so
a tiny batch value next to a large one is not rounded away."""

import math

import pytest
import torch

from burnlike.optim import SgdConfig
from burnlike.train import ClassificationOutput, LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric, TopKAccuracyMetric
from tests.helpers.toy import Batch, Classifier, loader
from tests.train.metric.helpers import CTX, classification_item, one_hot_logits

# (metric, value of the 2-sample batch below, value of the 1-sample batch below)
EMPTY_CASES = [(AccuracyMetric(), 50.0, 0.0), (LossMetric(), 0.5, 0.25), (TopKAccuracyMetric(2), 100.0, 0.0)]


class TwoValidLosses(Classifier):
    """Valid losses 1 and 2**-24 (one per batch): their float32 sum rounds the small one away."""

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        item = self.step(batch)
        small = bool(batch.y.numel() < 32)
        return ClassificationOutput(torch.tensor(2.0**-24 if small else 1.0), item.output, item.targets)


def test_epoch_value_is_the_weighted_mean_and_nan_stays_nan():
    item = ClassificationOutput(torch.tensor([1.0]), torch.zeros(1, 2), torch.zeros(1, dtype=torch.long))
    loss = LossMetric()
    for value, n in ((1.0, 1), (3.0, 3)):
        loss.update(ClassificationOutput(torch.full((n,), value), torch.zeros(n, 2), torch.zeros(n).long()), CTX)
    value, steps = loss.finish_epoch()
    assert value == pytest.approx(2.5) and steps == [(1.0, 1.0), (3.0, 3.0)]  # (1·1 + 3·3) / 4
    loss.update(item, CTX)
    loss.update(ClassificationOutput(torch.tensor([float("nan")]), item.output, item.targets), CTX)
    assert math.isnan(loss.finish_epoch()[0])  # as Burn: a NaN step makes a NaN epoch, it isn't dropped


def test_accuracy_epoch_value_weights_each_batch_by_its_size():
    acc = AccuracyMetric()
    acc.update(classification_item(one_hot_logits([0, 1, 2]), [0, 1, 2]), CTX)  # 3 of 3 right
    acc.update(classification_item(one_hot_logits([0]), [1]), CTX)  # 0 of 1 right
    value, history = acc.finish_epoch()
    assert history == [(100.0, 3.0), (0.0, 1.0)]
    assert value == pytest.approx(75.0)  # 3 of 4 samples; the mean of batch means would be 50


@pytest.mark.parametrize(("metric", "full", "single"), EMPTY_CASES, ids=["Accuracy", "Loss", "TopK"])
def test_an_epoch_without_updates_is_nan_and_does_not_leak(metric, full, single):
    value, history = metric.finish_epoch()  # no update at all
    assert math.isnan(value) and history == [] and math.isnan(metric.running())
    two = classification_item([[5.0, 1.0, 0.0], [0.0, 5.0, 1.0]], [0, 2], loss=0.5)  # right; wrong but second best
    metric.update(two, CTX)
    assert metric.finish_epoch()[0] == pytest.approx(full)
    value, history = metric.finish_epoch()  # an empty epoch after a full one: not the stale value
    assert math.isnan(value) and history == []
    metric.update(classification_item([[5.0, 1.0, 0.0]], [2], loss=0.25), CTX)  # the next epoch starts from zero
    assert metric.finish_epoch()[0] == pytest.approx(single)


def test_trainer_epoch_value_is_the_float64_weighted_mean(tmp_path):
    learner = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(1).progress_bar(False)
               .build(TwoValidLosses(), SgdConfig(), 0.0))
    learner.fit(loader(32, 32), loader(40, 32))  # valid batches of 32 and 8
    lines = (tmp_path / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert lines == ["1,1", "0.00000005960464477539063,1"]  # 2**-24, exact in the log
    assert learner.module.store.epochs("valid", "Loss") == {1: (1 + 2.0**-24) / 2}  # Burn sums in f64

