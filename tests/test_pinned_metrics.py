"""Metric semantics that a regression could silently change (issue 17).

Every case is built so that the wrong rule gives a different number: batches of unequal size
(count-weighted vs plain mean of batch means), pads placed where counting them would move the
value, and epochs with no update at all.
"""

import math

import pytest
import torch
from torch import nn
from toy import Batch, Classifier, loader

from burnlike.optim import SgdConfig
from burnlike.train import ClassificationOutput, LearnerBuilder, TrainOutput, backward
from burnlike.train.metric import AccuracyMetric, LossMetric, MetricContext, TopKAccuracyMetric

CTX = MetricContext()


def item(logits, targets, loss=0.0):
    return ClassificationOutput(torch.as_tensor(loss), torch.as_tensor(logits, dtype=torch.float32),
                                torch.as_tensor(targets))


def one_hot_logits(predicted: list[int], classes: int = 3) -> torch.Tensor:
    return nn.functional.one_hot(torch.tensor(predicted), classes).float() * 5.0


# --- count-weighted epoch values -------------------------------------------------------------------

def test_accuracy_epoch_value_weights_each_batch_by_its_size():
    acc = AccuracyMetric()
    acc.update(item(one_hot_logits([0, 1, 2]), [0, 1, 2]), CTX)  # 3 of 3 right
    acc.update(item(one_hot_logits([0]), [1]), CTX)  # 0 of 1 right
    value, history = acc.finish_epoch()
    assert history == [(100.0, 3.0), (0.0, 1.0)]
    assert value == pytest.approx(75.0)  # 3 of 4 samples; the mean of batch means would be 50


def test_loss_of_a_per_sample_tensor_is_weighted_by_its_length():
    loss = LossMetric()
    loss.update(item(one_hot_logits([0, 0, 0]), [0, 0, 0], loss=[1.0, 2.0, 3.0]), CTX)
    loss.update(item(one_hot_logits([0]), [0], loss=[10.0]), CTX)
    value, history = loss.finish_epoch()
    assert history == [(2.0, 3.0), (10.0, 1.0)]
    assert value == pytest.approx((1 + 2 + 3 + 10) / 4)  # mean over samples, not (2 + 10) / 2


def test_scalar_loss_counts_one_per_batch_as_burn_does():
    """Burn's LossMetric takes `batch_size` from the loss tensor's dims: a mean loss is [1]."""
    loss = LossMetric()
    loss.update(item(one_hot_logits([0, 0, 0]), [0, 0, 0], loss=2.0), CTX)
    loss.update(item(one_hot_logits([0]), [0], loss=10.0), CTX)
    value, history = loss.finish_epoch()
    assert history == [(2.0, 1.0), (10.0, 1.0)] and value == pytest.approx(6.0)


class PerSampleValidLoss(Classifier):
    """Train step: the usual mean loss. Valid step: the per-sample loss vector (reduction='none')."""

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        out = self(batch.x)
        return ClassificationOutput(nn.functional.cross_entropy(out, batch.y, reduction="none"), out, batch.y)

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)


def test_trainer_epoch_values_are_count_weighted_over_a_short_last_batch(tmp_path):
    torch.manual_seed(7)  # an initial model that gets 23/32 and 4/8 right
    model = PerSampleValidLoss()
    data = loader(40, 32)  # batches of 32 and 8
    x = torch.cat([b.x for b in data])
    y = torch.cat([b.y for b in data])
    with torch.no_grad():  # lr 0: the weights the whole run sees
        logits = model(x)
        right = (logits.argmax(1) == y).float()
        per_sample = nn.functional.cross_entropy(logits, y, reduction="none")
    accuracy = 100 * right.mean().item()
    batch_means = [right[:32].mean().item() * 100, right[32:].mean().item() * 100]
    assert abs(accuracy - sum(batch_means) / 2) > 1  # the wrong rule would give another number
    valid_loss = per_sample.mean().item()
    assert abs(valid_loss - (per_sample[:32].mean() + per_sample[32:].mean()).item() / 2) > 1e-3
    train_loss = (per_sample[:32].mean() + per_sample[32:].mean()).item() / 2  # scalar loss: 1 per batch

    learner = (LearnerBuilder(tmp_path).metric_train_numeric(AccuracyMetric()).metric_train_numeric(LossMetric())
               .metric_valid_numeric(AccuracyMetric()).metric_valid_numeric(LossMetric())
               .num_epochs(1).progress_bar(False).build(model, SgdConfig(), 0.0))
    learner.fit(data, data)
    logged = {k: float(v) for k, v in learner.trainer.callback_metrics.items()}
    assert logged["train/Accuracy"] == pytest.approx(accuracy, rel=1e-6)
    assert logged["valid/Accuracy"] == pytest.approx(accuracy, rel=1e-6)
    assert logged["valid/Loss"] == pytest.approx(valid_loss, rel=1e-5)
    assert logged["train/Loss"] == pytest.approx(train_loss, rel=1e-5)
    lines = (tmp_path / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert [line.split(",")[1] for line in lines] == ["32", "8"]


# --- pad positions ---------------------------------------------------------------------------------

PAD = 2


def sequence_item(predicted: list[list[int]], targets: list[list[int]]) -> ClassificationOutput:
    logits = torch.stack([one_hot_logits(row, 4) for row in predicted])  # [B, T, C]
    return item(logits, targets)


def test_accuracy_ignores_pads_predicted_right_and_wrong():
    acc = AccuracyMetric(pad_token=PAD)
    # batch 1: one real token right, one wrong; both pads "predicted right" (would lift it to 75%)
    acc.update(sequence_item([[0, 3, PAD, PAD]], [[0, 1, PAD, PAD]]), CTX)
    # batch 2: three real tokens all right; the pad predicted wrong (would drop it to 75%)
    acc.update(sequence_item([[1, 3, 0, 1]], [[1, 3, 0, PAD]]), CTX)
    value, history = acc.finish_epoch()
    assert history == [(50.0, 2.0), (100.0, 3.0)]
    assert value == pytest.approx(400 / 5)  # 4 of the 5 real tokens


def test_topk_ignores_pads_predicted_right_and_wrong():
    top2 = TopKAccuracyMetric(2, pad_token=PAD)
    logits = torch.tensor([[[4.0, 3.0, 0.0, 1.0],   # target 1: in the top 2
                            [4.0, 0.0, 1.0, 3.0],   # target 2 (pad), not in the top 2: would count as a miss
                            [0.0, 4.0, 3.0, 1.0],   # target 2 (pad), in the top 2: would count as a hit
                            [0.0, 1.0, 4.0, 3.0]]])  # target 0: a miss
    top2.update(item(logits, [[1, PAD, PAD, 0]]), CTX)
    value, history = top2.finish_epoch()
    assert history == [(50.0, 2.0)] and value == pytest.approx(50.0)
    assert top2.name == "Top-K Accuracy @ TopK(2)"


def test_a_batch_of_pads_only_adds_nothing():
    acc = AccuracyMetric().with_pad_token(PAD)
    acc.update(sequence_item([[0, 1]], [[0, 0]]), CTX)
    acc.update(sequence_item([[PAD, PAD]], [[PAD, PAD]]), CTX)  # no real token: weight 0
    value, history = acc.finish_epoch()
    assert history[1][1] == 0.0 and value == pytest.approx(50.0)


# --- an epoch without updates ----------------------------------------------------------------------

# (metric, value of the 2-sample batch below, value of the 1-sample batch below)
EMPTY_CASES = [(AccuracyMetric(), 50.0, 0.0), (LossMetric(), 0.5, 0.25), (TopKAccuracyMetric(2), 100.0, 0.0)]


@pytest.mark.parametrize(("metric", "full", "single"), EMPTY_CASES, ids=["Accuracy", "Loss", "TopK"])
def test_an_epoch_without_updates_is_nan_and_does_not_leak(metric, full, single):
    value, history = metric.finish_epoch()  # no update at all
    assert math.isnan(value) and history == [] and math.isnan(metric.running())
    two = item([[5.0, 1.0, 0.0], [0.0, 5.0, 1.0]], [0, 2], loss=0.5)  # right; wrong but second best
    metric.update(two, CTX)
    assert metric.finish_epoch()[0] == pytest.approx(full)
    value, history = metric.finish_epoch()  # an empty epoch after a full one: not the stale value
    assert math.isnan(value) and history == []
    metric.update(item([[5.0, 1.0, 0.0]], [2], loss=0.25), CTX)  # the next epoch starts from zero
    assert metric.finish_epoch()[0] == pytest.approx(single)


class TwoValidLosses(Classifier):
    """Valid losses 1 and 2**-24 (one per batch): their float32 sum rounds the small one away."""

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        item = self.step(batch)
        small = bool(batch.y.numel() < 32)
        return ClassificationOutput(torch.tensor(2.0**-24 if small else 1.0), item.output, item.targets)


def test_trainer_epoch_value_is_the_float64_weighted_mean(tmp_path):
    learner = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(1).progress_bar(False)
               .build(TwoValidLosses(), SgdConfig(), 0.0))
    learner.fit(loader(32, 32), loader(40, 32))  # valid batches of 32 and 8
    lines = (tmp_path / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert lines == ["1,1", "0.00000005960464477539063,1"]  # 2**-24, exact in the log
    assert learner.module.store.epochs("valid", "Loss") == {1: (1 + 2.0**-24) / 2}  # Burn sums in f64
