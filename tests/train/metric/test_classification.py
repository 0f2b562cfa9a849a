"""`burnlike.train.metric.classification`: accuracy, top-k accuracy and Burn's loss metric. Each
counts samples (tokens of a sequence); with a pad token, a batch's value leaves the pad positions
out, whatever was predicted there, and its weight is the batch size, pads included, as Burn's
(burn-train metric/acc.rs, top_k_acc.rs); `weighted_by_tokens()` weighs by the non-pad count
instead. A per-sample loss weighs by its length, a scalar (mean) loss counts one per batch, as
Burn's `LossMetric` does."""

import math

import pytest
import torch
import torchmetrics.functional.classification as tmc

from burnlike.train import ClassificationOutput, SequenceOutput
from burnlike.train.metric import AccuracyMetric, LossMetric, TopKAccuracyMetric
from tests.train.helpers import feed_epoch
from tests.train.metric.helpers import CTX, LOSS, classification_item, one_hot_logits

PAD = 2


def sequence_item(predicted: list[list[int]], targets: list[list[int]]) -> ClassificationOutput:
    logits = torch.stack([one_hot_logits(row, 4) for row in predicted])  # [B, T, C]
    return classification_item(logits, targets)


# --- accuracy -------------------------------------------------------------------------------------
def test_accuracy_skips_the_pad_token_and_top_k_counts_the_k_best():
    logits = torch.tensor([[5.0, 1.0, 0.0], [0.0, 5.0, 1.0], [0.0, 1.0, 5.0], [5.0, 0.0, 1.0]])
    targets = torch.tensor([0, 2, 2, 1])
    item = ClassificationOutput(torch.tensor(0.0), logits, targets)
    acc = AccuracyMetric()
    acc.update(item, CTX)
    assert acc.finish_epoch()[0] == pytest.approx(50.0)
    padded = AccuracyMetric().with_pad_token(1)  # the last target is padding
    padded.update(item, CTX)
    value, history = padded.finish_epoch()
    assert value == pytest.approx(200 / 3) and history[0][1] == 4  # Burn's weight: the batch size
    top2 = TopKAccuracyMetric(2)
    top2.update(item, CTX)
    assert top2.name == "Top-K Accuracy @ TopK(2)" and top2.finish_epoch()[0] == pytest.approx(75.0)


def padded_batches(metric):
    # batch 1: one real token right, one wrong; both pads "predicted right" (would lift it to 75%)
    metric.update(sequence_item([[0, 3, PAD, PAD]], [[0, 1, PAD, PAD]]), CTX)
    # batch 2: three real tokens all right; the pad predicted wrong (would drop it to 75%)
    metric.update(sequence_item([[1, 3, 0, 1]], [[1, 3, 0, PAD]]), CTX)
    return metric.finish_epoch()


def test_accuracy_ignores_pads_predicted_right_and_wrong_and_weighs_batches_by_their_size():
    """burn-train/src/metric/acc.rs (v0.21.0): a batch's accuracy is over its non-pad targets, its
    weight `batch_size` (all 4 targets); the epoch is the weighted mean (store/aggregate.rs):
    (50·4 + 100·4) / 8 = 75."""
    value, history = padded_batches(AccuracyMetric(pad_token=PAD))
    assert history == [(50.0, 4.0), (100.0, 4.0)]
    assert value == pytest.approx(75.0)


def test_accuracy_weighted_by_tokens_is_the_share_of_all_non_pad_tokens():
    metric = AccuracyMetric(pad_token=PAD)
    assert metric.weighted_by_tokens() is metric and metric.token_weighted
    value, history = padded_batches(metric)
    assert history == [(50.0, 2.0), (100.0, 3.0)]
    assert value == pytest.approx(400 / 5)  # 4 of the 5 real tokens
    value, history = padded_batches(AccuracyMetric(pad_token=PAD, token_weighted=True))
    assert value == pytest.approx(80.0)


def test_accuracy_follows_burns_test_accuracy_with_padding():
    """burn-train/src/metric/acc.rs (v0.21.0), `test_accuracy_with_padding`: pad 3, 4 real rows of 7,
    2 right: 50%, whatever is predicted at the pads; `test_accuracy_without_padding`: 50%."""
    logits = torch.tensor([[0.0, 0.2, 0.8, 0.0], [1.0, 2.0, 0.5, 0.0], [0.4, 0.1, 0.2, 0.0], [0.6, 0.7, 0.2, 0.0],
                           [0.0, 0.1, 0.2, 5.0], [0.0, 0.1, 0.2, 0.0], [0.6, 0.0, 0.2, 0.0]])
    targets = torch.tensor([2, 2, 1, 1, 3, 3, 3])
    value, lines = feed_epoch(AccuracyMetric().with_pad_token(3), ClassificationOutput(LOSS, logits, targets))
    assert value == 50.0 and lines == [(50.0, 7.0)]
    value, _ = feed_epoch(AccuracyMetric(), ClassificationOutput(LOSS, logits[:4, :3], targets[:4]))
    assert value == 50.0


def test_accuracy_batch_of_pads_only_is_nan_as_in_burn_and_weighs_nothing_by_tokens():
    """burn-train/src/metric/acc.rs (v0.21.0): 0 right of 0 non-pad targets is 0/0 (NaN) with the batch
    size as its weight, so Burn's epoch value is NaN; weighted by tokens, the batch weighs 0."""
    acc = AccuracyMetric().with_pad_token(PAD)
    acc.update(sequence_item([[0, 1]], [[0, 0]]), CTX)
    acc.update(sequence_item([[PAD, PAD]], [[PAD, PAD]]), CTX)
    value, history = acc.finish_epoch()
    assert math.isnan(history[1][0]) and history[1][1] == 2.0 and math.isnan(value)
    acc = AccuracyMetric().with_pad_token(PAD).weighted_by_tokens()
    acc.update(sequence_item([[0, 1]], [[0, 0]]), CTX)
    acc.update(sequence_item([[PAD, PAD]], [[PAD, PAD]]), CTX)  # no real token: weight 0
    value, history = acc.finish_epoch()
    assert history[1][1] == 0.0 and value == pytest.approx(50.0)


# --- top-k accuracy -------------------------------------------------------------------------------
def test_top_k_accepts_k_one_and_names_a_bad_k():
    logits = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    assert feed_epoch(TopKAccuracyMetric(1), ClassificationOutput(LOSS, logits, torch.tensor([1, 1])))[0] == 50.0
    with pytest.raises(ValueError, match=r"^TopKAccuracyMetric: k must be an integer >= 1, got 0$"):
        TopKAccuracyMetric(0)


def test_top_k_with_pad_token_leaves_pad_positions_out():
    # top-2 per row: {1, 2}, {0, 1}, {2, 0}, {0, 1}; targets 2 (hit), 2 (miss), 0 (hit), 1 (hit)
    logits = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1], [0.35, 0.25, 0.4], [0.6, 0.3, 0.1]])
    item = ClassificationOutput(LOSS, logits, torch.tensor([2, 2, 0, 1]))
    assert feed_epoch(TopKAccuracyMetric(2), item)[0] == pytest.approx(75.0)
    metric = TopKAccuracyMetric(2)
    assert metric.with_pad_token(0) is metric and metric.pad_token == 0
    value, lines = feed_epoch(metric, item)  # the third row, a hit, is padding: 2 hits of 3
    assert value == pytest.approx(200 / 3) and lines[0][1] == 4  # weighed by the batch size (top_k_acc.rs)
    # a pad token that no target uses changes nothing
    value, lines = feed_epoch(TopKAccuracyMetric(2).with_pad_token(7), item)
    assert value == pytest.approx(75.0) and lines[0][1] == 4


def test_top_k_with_one_kept_target_scores_it_alone():
    logits = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    value, lines = feed_epoch(TopKAccuracyMetric(2).with_pad_token(0),
                              ClassificationOutput(LOSS, logits, torch.tensor([2, 0])))
    assert value == pytest.approx(100.0) and lines[0][1] == 2  # the one non-pad target is a hit; batch of 2


def test_topk_ignores_pads_predicted_right_and_wrong():
    top2 = TopKAccuracyMetric(2, pad_token=PAD)
    logits = torch.tensor([[[4.0, 3.0, 0.0, 1.0],   # target 1: in the top 2
                            [4.0, 0.0, 1.0, 3.0],   # target 2 (pad), not in the top 2: would count as a miss
                            [0.0, 4.0, 3.0, 1.0],   # target 2 (pad), in the top 2: would count as a hit
                            [0.0, 1.0, 4.0, 3.0]]])  # target 0: a miss
    top2.update(classification_item(logits, [[1, PAD, PAD, 0]]), CTX)
    value, history = top2.finish_epoch()
    assert history == [(50.0, 4.0)] and value == pytest.approx(50.0)
    assert top2.name == "Top-K Accuracy @ TopK(2)"
    by_tokens = TopKAccuracyMetric(2, pad_token=PAD).weighted_by_tokens()
    by_tokens.update(classification_item(logits, [[1, PAD, PAD, 0]]), CTX)
    assert by_tokens.finish_epoch() == (50.0, [(50.0, 2.0)])


def test_top_k_follows_burns_tests_and_weighs_batches_by_their_size():
    """burn-train/src/metric/top_k_acc.rs (v0.21.0), `test_accuracy_with_padding` and
    `test_accuracy_without_padding`: top-2, 50% both; a second batch then weighs by its size."""
    logits = torch.tensor([[0.0, 0.2, 0.8, 0.0], [1.0, 2.0, 0.5, 0.0], [0.4, 0.1, 0.2, 0.0], [0.6, 0.7, 0.2, 0.0],
                           [0.0, 0.1, 0.2, 5.0], [0.0, 0.1, 0.2, 0.0], [0.6, 0.0, 0.2, 0.0]])
    targets = torch.tensor([2, 2, 1, 1, 3, 3, 3])
    assert feed_epoch(TopKAccuracyMetric(2), ClassificationOutput(LOSS, logits[:4, :3], targets[:4]))[0] == 50.0
    first = ClassificationOutput(LOSS, logits, targets)  # 50% of the 4 real rows, weight 7
    second = ClassificationOutput(LOSS, logits[:1], targets[:1])  # 100%, weight 1
    value, lines = feed_epoch(TopKAccuracyMetric(2).with_pad_token(3), first, second)
    assert lines == [(50.0, 7.0), (100.0, 1.0)] and value == pytest.approx((50 * 7 + 100) / 8)


def test_top_k_over_a_sequence_ranks_the_vocabulary():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 2, 6, generator=g)  # sequence of 2 tokens, vocabulary of 6: k=3 < 6
    targets = torch.randint(0, 6, (4, 2), generator=g)
    value, _ = feed_epoch(TopKAccuracyMetric(3), SequenceOutput(LOSS, logits, None, targets))
    want = tmc.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro", top_k=3)
    assert value == pytest.approx(100 * float(want))


# --- loss -----------------------------------------------------------------------------------------
def test_loss_of_a_per_sample_tensor_is_weighted_by_its_length():
    loss = LossMetric()
    loss.update(classification_item(one_hot_logits([0, 0, 0]), [0, 0, 0], loss=[1.0, 2.0, 3.0]), CTX)
    loss.update(classification_item(one_hot_logits([0]), [0], loss=[10.0]), CTX)
    value, history = loss.finish_epoch()
    assert history == [(2.0, 3.0), (10.0, 1.0)]
    assert value == pytest.approx((1 + 2 + 3 + 10) / 4)  # mean over samples, not (2 + 10) / 2


def test_scalar_loss_counts_one_per_batch_as_burn_does():
    """Burn's LossMetric takes `batch_size` from the loss tensor's dims: a mean loss is [1]."""
    loss = LossMetric()
    loss.update(classification_item(one_hot_logits([0, 0, 0]), [0, 0, 0], loss=2.0), CTX)
    loss.update(classification_item(one_hot_logits([0]), [0], loss=10.0), CTX)
    value, history = loss.finish_epoch()
    assert history == [(2.0, 1.0), (10.0, 1.0)] and value == pytest.approx(6.0)
