"""`burnlike.train.metric.confusion`: precision, recall, F-beta, AUROC and the Hamming score, by
hand counts and against torchmetrics. Checked per task (binary, multiclass, multilabel): the
threshold (a score equal to it is a negative) or top-k, the class reduction, the metric's name
(Burn's spelling), which column holds the positive class's score, and the weight of a batch (its
predictions in binary mode)."""

import re

import pytest
import torch
import torchmetrics.functional.classification as tmc

from burnlike.train import ClassificationOutput, MultiLabelClassificationOutput
from burnlike.train.metric import (
    AurocMetric,
    ClassReduction,
    FBetaScoreMetric,
    HammingScore,
    PrecisionMetric,
    RecallMetric,
)
from tests.train.helpers import feed_epoch
from tests.train.metric.helpers import CTX, LOSS

# Binary: scores, targets; at 0.5 the predictions are 1,0,1,0 (TP 1, FP 1, FN 1),
# at 0.3 they are 1,1,1,0 (TP 2, FP 1, FN 0).
SCORES = torch.tensor([[0.9], [0.4], [0.6], [0.2]])
TARGETS = torch.tensor([[1], [1], [0], [0]])

# Multilabel: at 0.5 the predictions are [[1,0,1],[0,1,1]]: labels 0 and 1 exact, label 2 has TP 1, FP 1
# (precision 1/2, recall 1); at 0.65 label 2 has TP 0, FP 1, FN 1.
ML_SCORES = torch.tensor([[0.9, 0.2, 0.7], [0.1, 0.8, 0.6]])
ML_TARGETS = torch.tensor([[1, 0, 0], [0, 1, 1]])

# Hamming: logits whose predictions differ with each threshold and with the sigmoid (all targets 1,
# so the score is the share of positives): raw > 0.5 → 2/6, raw > 0.6 → 1/6, σ > 0.5 → 5/6, σ > 0.6 → 3/6.
LOGITS = torch.tensor([[0.55, 0.2, 2.0], [-1.0, 0.3, 0.45]])


def binary_item():
    return ClassificationOutput(LOSS, SCORES, TARGETS)


# --- names, defaults and tasks ---------------------------------------------------------------------
def test_confusion_metric_defaults_are_threshold_one_half_and_top_one():
    assert PrecisionMetric("binary").name == "Precision @ Threshold(0.5) [Macro]"
    assert RecallMetric("multiclass").name == "Recall @ TopK(1) [Macro]"
    assert PrecisionMetric("multilabel").name == "Precision @ Threshold(0.5) [Macro]"
    assert PrecisionMetric.multiclass().name == "Precision @ TopK(1) [Macro]"
    assert FBetaScoreMetric.multiclass().name == "FBetaScore (1) @ TopK(1) [Macro]"
    value, _ = feed_epoch(PrecisionMetric("binary"), ClassificationOutput(LOSS, SCORES, TARGETS))
    assert value == pytest.approx(50.0)  # at 0.5: TP 1, FP 1


def test_confusion_metric_refuses_an_unknown_task():
    with pytest.raises(ValueError, match="binary, multiclass or multilabel.*'ordinal'"):
        PrecisionMetric("ordinal")


# --- precision, recall, F-beta ---------------------------------------------------------------------
def test_confusion_metrics_and_hamming_match_definitions():
    logits = torch.tensor([[3.0, 0.0], [0.0, 3.0], [0.0, 3.0], [3.0, 0.0]])
    targets = torch.tensor([0, 1, 0, 1])  # predictions 0,1,1,0
    item = ClassificationOutput(torch.tensor(0.0), logits, targets)
    for metric, expected in ((PrecisionMetric.multiclass(1, ClassReduction.MACRO), 50.0),
                             (RecallMetric.multiclass(1, ClassReduction.MICRO), 50.0),
                             (FBetaScoreMetric.multiclass(1.0), 50.0)):
        metric.update(item, CTX)
        assert metric.finish_epoch()[0] == pytest.approx(expected)
    assert PrecisionMetric.multiclass(2, ClassReduction.MICRO).name == "Precision @ TopK(2) [Micro]"
    multi = MultiLabelClassificationOutput(torch.tensor(0.0), torch.tensor([[0.9, 0.2], [0.7, 0.6]]),
                                           torch.tensor([[1, 0], [0, 1]]))
    ham = HammingScore()
    ham.update(multi, CTX)
    assert ham.name == "Hamming Score @ Threshold(0.5)" and ham.finish_epoch()[0] == pytest.approx(75.0)


# each metric is built inside its test (a factory per case), not at collection: a fresh one per case
@pytest.mark.parametrize(("make", "name", "expected", "reference"), [
    (lambda: PrecisionMetric.binary(), "Precision @ Threshold(0.5) [Macro]", 50.0, tmc.binary_precision),
    (lambda: PrecisionMetric.binary(0.3), "Precision @ Threshold(0.3) [Macro]", 200 / 3, tmc.binary_precision),
    (lambda: RecallMetric.binary(), "Recall @ Threshold(0.5) [Macro]", 50.0, tmc.binary_recall),
    (lambda: RecallMetric.binary(0.3), "Recall @ Threshold(0.3) [Macro]", 100.0, tmc.binary_recall),
    # F2 at 0.3: 5·P·R / (4·P + R) with P = 2/3, R = 1 → 10/11
    (lambda: FBetaScoreMetric.binary(2.0, 0.3), "FBetaScore (2) @ Threshold(0.3) [Macro]", 1000 / 11, tmc.binary_fbeta_score),
    (lambda: FBetaScoreMetric.binary(), "FBetaScore (1) @ Threshold(0.5) [Macro]", 50.0, tmc.binary_fbeta_score),
])
def test_binary_precision_recall_fbeta_match_hand_counts_and_torchmetrics(make, name, expected, reference):
    metric = make()
    value, lines = feed_epoch(metric, binary_item())
    assert metric.name == name and metric.task == "binary"
    assert value == pytest.approx(expected)
    kwargs = {"threshold": metric.threshold}
    if metric.beta is not None:
        kwargs["beta"] = metric.beta
    assert value == pytest.approx(100 * float(reference(SCORES.reshape(-1), TARGETS.reshape(-1), **kwargs)))
    assert lines == [pytest.approx((expected, 4))]  # weighted by the batch size


def test_binary_mode_weighs_a_batch_by_its_predictions():
    scores = torch.tensor([[0.9, 0.1, 0.7], [0.2, 0.8, 0.4]])
    targets = torch.tensor([[1, 0, 0], [0, 1, 1]])
    value, lines = feed_epoch(RecallMetric.binary(), ClassificationOutput(LOSS, scores, targets))
    assert value == pytest.approx(100 * float(tmc.binary_recall(scores.reshape(-1), targets.reshape(-1))))
    assert lines[0][1] == 6  # every prediction counts, not the rows


@pytest.mark.parametrize(("make", "name", "expected", "reference", "extra"), [
    (lambda: PrecisionMetric.multilabel(), "Precision @ Threshold(0.5) [Macro]", 250 / 3, tmc.multilabel_precision, {}),
    (lambda: PrecisionMetric.multilabel(reduction=ClassReduction.MICRO), "Precision @ Threshold(0.5) [Micro]", 75.0,
     tmc.multilabel_precision, {}),
    (lambda: PrecisionMetric.multilabel(0.65), "Precision @ Threshold(0.65) [Macro]", 200 / 3, tmc.multilabel_precision, {}),
    (lambda: RecallMetric.multilabel(0.65, ClassReduction.MICRO), "Recall @ Threshold(0.65) [Micro]", 200 / 3,
     tmc.multilabel_recall, {}),
    # F1 of label 2 = 2/3; F2 of label 2 = 5·(1/2)·1 / (4·(1/2) + 1) = 5/6
    (lambda: FBetaScoreMetric.multilabel(), "FBetaScore (1) @ Threshold(0.5) [Macro]", 100 * (2 + 2 / 3) / 3,
     tmc.multilabel_fbeta_score, {"beta": 1.0}),
    (lambda: FBetaScoreMetric.multilabel(2.0), "FBetaScore (2) @ Threshold(0.5) [Macro]", 100 * (2 + 5 / 6) / 3,
     tmc.multilabel_fbeta_score, {"beta": 2.0}),
    (lambda: FBetaScoreMetric.multilabel(2.0, 0.65, ClassReduction.MICRO), "FBetaScore (2) @ Threshold(0.65) [Micro]",
     # micro at 0.65: TP 2, FP 1, FN 1 → P = R = 2/3 → F2 = 2/3
     200 / 3, tmc.multilabel_fbeta_score, {"beta": 2.0}),
])
def test_multilabel_precision_recall_fbeta_follow_threshold_and_reduction(make, name, expected, reference, extra):
    metric = make()
    item = MultiLabelClassificationOutput(LOSS, ML_SCORES, ML_TARGETS)
    value, lines = feed_epoch(metric, item)
    assert metric.name == name and metric.task == "multilabel"
    assert value == pytest.approx(expected)
    want = reference(ML_SCORES, ML_TARGETS, num_labels=3, threshold=metric.threshold,
                     average=metric.reduction.value, **extra)
    assert value == pytest.approx(100 * float(want))
    assert lines[0][1] == 2


def test_multiclass_counts_classes_from_the_logits_last_dimension():
    logits = torch.tensor([[0.0, 0.0, 3.0], [0.0, 3.0, 0.0]])  # two rows, three classes
    targets = torch.tensor([2, 0])
    value, _ = feed_epoch(PrecisionMetric.multiclass(reduction=ClassReduction.MICRO), ClassificationOutput(LOSS, logits,
                                                                                                     targets))
    assert value == pytest.approx(50.0)
    assert value == pytest.approx(100 * float(tmc.multiclass_precision(logits, targets, num_classes=3,
                                                                         average="micro")))


def test_fbeta_without_a_beta_is_f1():
    metric = FBetaScoreMetric("binary", threshold=0.3)  # beta None: the name has none, the score is F1
    assert metric.name == "FBetaScore @ Threshold(0.3) [Macro]"
    value, _ = feed_epoch(metric, ClassificationOutput(LOSS, SCORES, TARGETS))
    # at 0.3: P = 2/3, R = 1 → F1 = 0.8 (F2 would be 10/11)
    want = tmc.binary_fbeta_score(SCORES.reshape(-1), TARGETS.reshape(-1), beta=1.0, threshold=0.3)
    assert value == pytest.approx(80.0) and value == pytest.approx(100 * float(want))


def test_fbeta_multiclass_beta_changes_the_score():
    # predictions 0, 1, 1, 1 for targets 0, 1, 0, 2
    logits = torch.tensor([[3.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 3.0, 0.0], [0.0, 3.0, 0.0]])
    targets = torch.tensor([0, 1, 0, 2])
    item = ClassificationOutput(LOSS, logits, targets)
    f2 = FBetaScoreMetric.multiclass(2.0)
    value, _ = feed_epoch(f2, item)
    want = tmc.multiclass_fbeta_score(logits, targets, beta=2.0, num_classes=3, average="macro")
    assert value == pytest.approx(100 * float(want))
    # F2 = 5·P·R / (4·P + R): class 0 (P 1, R 1/2) 5/9; class 1 (P 1/3, R 1) 5/7; class 2: 0
    assert value == pytest.approx(100 * (5 / 9 + 5 / 7) / 3)
    assert f2.name == "FBetaScore (2) @ TopK(1) [Macro]"


def test_fbeta_multiclass_passes_top_k_and_reduction():
    logits = torch.tensor([[3.0, 2.0, 0.0], [0.0, 3.0, 2.0], [2.0, 0.0, 3.0], [0.0, 2.0, 3.0]])
    targets = torch.tensor([1, 1, 0, 0])
    metric = FBetaScoreMetric.multiclass(top_k=2, reduction=ClassReduction.MICRO)
    assert metric.name == "FBetaScore (1) @ TopK(2) [Micro]"
    value, _ = feed_epoch(metric, ClassificationOutput(LOSS, logits, targets))
    want = tmc.multiclass_fbeta_score(logits, targets, beta=1.0, num_classes=3, top_k=2, average="micro")
    assert value == pytest.approx(100 * float(want))
    assert value != pytest.approx(100 * float(tmc.multiclass_fbeta_score(logits, targets, beta=1.0, num_classes=3)))


# --- AUROC -----------------------------------------------------------------------------------------
def test_auroc_reads_the_last_column_and_one_dimensional_scores():
    # positive-class scores 0.1, 0.4, 0.35, 0.8 for targets 0, 0, 1, 1: 3 of 4 pairs ordered → 75 %
    positive = torch.tensor([0.1, 0.4, 0.35, 0.8])
    targets = torch.tensor([0, 0, 1, 1])
    two_columns = torch.stack([1 - positive, positive], dim=1)
    value, lines = feed_epoch(AurocMetric(), ClassificationOutput(LOSS, two_columns, targets))
    assert value == pytest.approx(75.0) and lines[0][1] == 4
    assert value == pytest.approx(100 * float(tmc.binary_auroc(positive, targets)))
    assert feed_epoch(AurocMetric(), ClassificationOutput(LOSS, positive, targets))[0] == pytest.approx(75.0)
    # one-hot targets: the last column is the positive class
    one_hot = torch.nn.functional.one_hot(targets, 2)
    assert feed_epoch(AurocMetric(), MultiLabelClassificationOutput(LOSS, two_columns, one_hot))[0] == pytest.approx(75.0)
    # the first column would give the reversed order: 25 %
    assert feed_epoch(AurocMetric(), ClassificationOutput(LOSS, two_columns.flip(1), targets))[0] == pytest.approx(25.0)
    assert AurocMetric().name == "AUROC" and AurocMetric().unit == "%"


@pytest.mark.parametrize(("output", "targets"), [((4, 2), (8,)), ((4,), (8,)), ((4, 2), (8, 2)), ((4, 2), (4, 2, 2))])
def test_auroc_refuses_targets_that_are_not_one_per_score_naming_both_shapes(output, targets):
    """Not a guess at which targets were meant (every other one of twice as many, say)."""
    item = ClassificationOutput(LOSS, torch.rand(output), torch.randint(0, 2, targets))
    message = f"AUROC: expected a target per score [4], got targets of shape {list(targets)} for outputs of shape {list(output)}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        feed_epoch(AurocMetric(), item)


def test_auroc_scores_are_the_last_of_several_columns():
    # three columns: the last is the positive class's score; 3 of 4 positive/negative pairs ordered
    positive = torch.tensor([0.1, 0.4, 0.35, 0.8])
    targets = torch.tensor([0, 0, 1, 1])
    scores = torch.stack([torch.full((4,), 0.5), 1 - positive, positive], dim=1)
    assert feed_epoch(AurocMetric(), ClassificationOutput(LOSS, scores, targets))[0] == pytest.approx(75.0)
    # multi-hot targets with three columns: the last column is the positive label
    multi_hot = torch.stack([torch.ones(4, dtype=torch.long), 1 - targets, targets], dim=1)
    value = feed_epoch(AurocMetric(), MultiLabelClassificationOutput(LOSS, scores, multi_hot))[0]
    assert value == pytest.approx(100 * float(tmc.binary_auroc(positive, targets)))


# --- Hamming score ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("make", "name", "expected"), [
    (lambda: HammingScore(), "Hamming Score @ Threshold(0.5)", 100 * 2 / 6),
    (lambda: HammingScore().with_threshold(0.6), "Hamming Score @ Threshold(0.6)", 100 * 1 / 6),
    (lambda: HammingScore().with_sigmoid(True), "Hamming Score @ Threshold(0.5)", 100 * 5 / 6),
    (lambda: HammingScore().with_sigmoid(True).with_threshold(0.6), "Hamming Score @ Threshold(0.6)", 50.0),
    (lambda: HammingScore().with_threshold(0.6).with_sigmoid(True), "Hamming Score @ Threshold(0.6)", 50.0),
    (lambda: HammingScore(0.6, sigmoid=True).with_sigmoid(False), "Hamming Score @ Threshold(0.6)", 100 * 1 / 6),
])
def test_hamming_score_applies_threshold_and_sigmoid_in_either_order(make, name, expected):
    metric = make()
    item = MultiLabelClassificationOutput(LOSS, LOGITS, torch.ones(2, 3, dtype=torch.long))
    value, lines = feed_epoch(metric, item)
    assert metric.name == name
    assert value == pytest.approx(expected)
    assert lines[0][1] == 2


def test_hamming_score_counts_correct_negatives():
    item = MultiLabelClassificationOutput(LOSS, LOGITS, torch.tensor([[0, 0, 1], [0, 0, 0]]))
    # raw > 0.5: predictions [[1,0,1],[0,0,0]] → 5 of 6 labels right
    assert feed_epoch(HammingScore(), item)[0] == pytest.approx(100 * 5 / 6)


def test_hamming_score_at_exactly_the_threshold_is_a_negative():
    scores = torch.tensor([[0.5, 0.75], [0.25, 0.5]])
    item = MultiLabelClassificationOutput(LOSS, scores, torch.tensor([[0, 1], [0, 0]]))
    assert feed_epoch(HammingScore(), item)[0] == pytest.approx(100.0)  # 0.5 is not above 0.5


def test_names_print_numbers_as_burns_format_strings_do():
    """burn-train/src/metric/fbetascore.rs (v0.21.0): "FBetaScore ({}) @ {:?} [{:?}]" (beta with `{}`,
    1.0 -> "1"), precision.rs / recall.rs: "Precision @ {:?} [{:?}]" (binary keeps the default Macro,
    the threshold with `{:?}`, 1.0 -> "1.0"), hamming.rs: "Hamming Score @ Threshold({})"."""
    assert PrecisionMetric.binary(1.0).name == "Precision @ Threshold(1.0) [Macro]"
    assert RecallMetric.multilabel(1e-5, ClassReduction.Micro).name == "Recall @ Threshold(1e-5) [Micro]"
    assert FBetaScoreMetric.binary(0.5, 0.25).name == "FBetaScore (0.5) @ Threshold(0.25) [Macro]"
    assert FBetaScoreMetric.multiclass(3.0, 2, ClassReduction.Macro).name == "FBetaScore (3) @ TopK(2) [Macro]"
    assert HammingScore(1.0).name == "Hamming Score @ Threshold(1)"
    assert HammingScore(0.75).name == "Hamming Score @ Threshold(0.75)"
    assert ClassReduction.Micro is ClassReduction.MICRO and ClassReduction.Macro is ClassReduction.MACRO
