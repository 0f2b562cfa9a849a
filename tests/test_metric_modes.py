"""Metric options users call but the training tests never reach: the confusion metrics' binary and
multilabel modes, F-beta, the Hamming score's threshold and sigmoid, AUROC, the pad token of Top-K
and Perplexity, Perplexity's running value, the vision metrics' config helpers and the metric
store's names. Each value is checked against a hand computation and, where it exists, torchmetrics."""

import math

import numpy as np
import pytest
import torch
import torchmetrics.functional.classification as tmc
import torchmetrics.functional.text as tmt
from test_metrics_new import Images, epoch, gaussian, images, ssim_maps

from burnlike.train import ClassificationOutput, MultiLabelClassificationOutput, SequenceOutput
from burnlike.train.metric import (
    AurocMetric,
    ClassReduction,
    DiceMetric,
    DiceMetricConfig,
    FBetaScoreMetric,
    HammingScore,
    PerplexityMetric,
    PrecisionMetric,
    PsnrMetric,
    PsnrMetricConfig,
    RecallMetric,
    SsimMetric,
    SsimMetricConfig,
    TopKAccuracyMetric,
)
from burnlike.train.metric.base import MetricContext
from burnlike.train.metric.store import MetricStore, Split

LOSS = torch.tensor(0.0)

# Binary: scores, targets; at 0.5 the predictions are 1,0,1,0 (TP 1, FP 1, FN 1),
# at 0.3 they are 1,1,1,0 (TP 2, FP 1, FN 0).
SCORES = torch.tensor([[0.9], [0.4], [0.6], [0.2]])
TARGETS = torch.tensor([[1], [1], [0], [0]])


def binary_item():
    return ClassificationOutput(LOSS, SCORES, TARGETS)


# each metric is built inside its test (a factory per case), not at collection, so that mutation
# testing sees which tests run the constructors
@pytest.mark.parametrize(("make", "name", "expected", "reference"), [
    (lambda: PrecisionMetric.binary(), "Precision @ Threshold(0.5)", 50.0, tmc.binary_precision),
    (lambda: PrecisionMetric.binary(0.3), "Precision @ Threshold(0.3)", 200 / 3, tmc.binary_precision),
    (lambda: RecallMetric.binary(), "Recall @ Threshold(0.5)", 50.0, tmc.binary_recall),
    (lambda: RecallMetric.binary(0.3), "Recall @ Threshold(0.3)", 100.0, tmc.binary_recall),
    # F2 at 0.3: 5·P·R / (4·P + R) with P = 2/3, R = 1 → 10/11
    (lambda: FBetaScoreMetric.binary(2.0, 0.3), "FBetaScore (2.0) @ Threshold(0.3)", 1000 / 11, tmc.binary_fbeta_score),
    (lambda: FBetaScoreMetric.binary(), "FBetaScore (1.0) @ Threshold(0.5)", 50.0, tmc.binary_fbeta_score),
])
def test_binary_confusion_metrics(make, name, expected, reference):
    metric = make()
    value, lines = epoch(metric, binary_item())
    assert metric.name == name and metric.task == "binary"
    assert value == pytest.approx(expected)
    kwargs = {"threshold": metric.threshold}
    if metric.beta is not None:
        kwargs["beta"] = metric.beta
    assert value == pytest.approx(100 * float(reference(SCORES.reshape(-1), TARGETS.reshape(-1), **kwargs)))
    assert lines == [pytest.approx((expected, 4))]  # weighted by the batch size


# Multilabel: at 0.5 the predictions are [[1,0,1],[0,1,1]]: labels 0 and 1 exact, label 2 has TP 1, FP 1
# (precision 1/2, recall 1); at 0.65 label 2 has TP 0, FP 1, FN 1.
ML_SCORES = torch.tensor([[0.9, 0.2, 0.7], [0.1, 0.8, 0.6]])
ML_TARGETS = torch.tensor([[1, 0, 0], [0, 1, 1]])


@pytest.mark.parametrize(("make", "name", "expected", "reference", "extra"), [
    (lambda: PrecisionMetric.multilabel(), "Precision @ Threshold(0.5) [Macro]", 250 / 3, tmc.multilabel_precision, {}),
    (lambda: PrecisionMetric.multilabel(reduction=ClassReduction.MICRO), "Precision @ Threshold(0.5) [Micro]", 75.0,
     tmc.multilabel_precision, {}),
    (lambda: PrecisionMetric.multilabel(0.65), "Precision @ Threshold(0.65) [Macro]", 200 / 3, tmc.multilabel_precision, {}),
    (lambda: RecallMetric.multilabel(0.65, ClassReduction.MICRO), "Recall @ Threshold(0.65) [Micro]", 200 / 3,
     tmc.multilabel_recall, {}),
    # F1 of label 2 = 2/3; F2 of label 2 = 5·(1/2)·1 / (4·(1/2) + 1) = 5/6
    (lambda: FBetaScoreMetric.multilabel(), "FBetaScore (1.0) @ Threshold(0.5) [Macro]", 100 * (2 + 2 / 3) / 3,
     tmc.multilabel_fbeta_score, {"beta": 1.0}),
    (lambda: FBetaScoreMetric.multilabel(2.0), "FBetaScore (2.0) @ Threshold(0.5) [Macro]", 100 * (2 + 5 / 6) / 3,
     tmc.multilabel_fbeta_score, {"beta": 2.0}),
    (lambda: FBetaScoreMetric.multilabel(2.0, 0.65, ClassReduction.MICRO), "FBetaScore (2.0) @ Threshold(0.65) [Micro]",
     # micro at 0.65: TP 2, FP 1, FN 1 → P = R = 2/3 → F2 = 2/3
     200 / 3, tmc.multilabel_fbeta_score, {"beta": 2.0}),
])
def test_multilabel_confusion_metrics(make, name, expected, reference, extra):
    metric = make()
    item = MultiLabelClassificationOutput(LOSS, ML_SCORES, ML_TARGETS)
    value, lines = epoch(metric, item)
    assert metric.name == name and metric.task == "multilabel"
    assert value == pytest.approx(expected)
    want = reference(ML_SCORES, ML_TARGETS, num_labels=3, threshold=metric.threshold,
                     average=metric.reduction.value, **extra)
    assert value == pytest.approx(100 * float(want))
    assert lines[0][1] == 2


def test_fbeta_multiclass_beta_changes_the_score():
    # predictions 0, 1, 1, 1 for targets 0, 1, 0, 2
    logits = torch.tensor([[3.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 3.0, 0.0], [0.0, 3.0, 0.0]])
    targets = torch.tensor([0, 1, 0, 2])
    item = ClassificationOutput(LOSS, logits, targets)
    f2 = FBetaScoreMetric.multiclass(2.0)
    value, _ = epoch(f2, item)
    want = tmc.multiclass_fbeta_score(logits, targets, beta=2.0, num_classes=3, average="macro")
    assert value == pytest.approx(100 * float(want))
    # F2 = 5·P·R / (4·P + R): class 0 (P 1, R 1/2) 5/9; class 1 (P 1/3, R 1) 5/7; class 2: 0
    assert value == pytest.approx(100 * (5 / 9 + 5 / 7) / 3)
    assert f2.name == "FBetaScore (2.0) @ TopK(1) [Macro]"


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="binary, multiclass or multilabel.*'ordinal'"):
        PrecisionMetric("ordinal")


# Hamming: logits whose predictions differ with each threshold and with the sigmoid (all targets 1,
# so the score is the share of positives): raw > 0.5 → 2/6, raw > 0.6 → 1/6, σ > 0.5 → 5/6, σ > 0.6 → 3/6.
LOGITS = torch.tensor([[0.55, 0.2, 2.0], [-1.0, 0.3, 0.45]])


@pytest.mark.parametrize(("make", "name", "expected"), [
    (lambda: HammingScore(), "Hamming Score @ Threshold(0.5)", 100 * 2 / 6),
    (lambda: HammingScore().with_threshold(0.6), "Hamming Score @ Threshold(0.6)", 100 * 1 / 6),
    (lambda: HammingScore().with_sigmoid(True), "Hamming Score @ Threshold(0.5)", 100 * 5 / 6),
    (lambda: HammingScore().with_sigmoid(True).with_threshold(0.6), "Hamming Score @ Threshold(0.6)", 50.0),
    (lambda: HammingScore().with_threshold(0.6).with_sigmoid(True), "Hamming Score @ Threshold(0.6)", 50.0),
    (lambda: HammingScore(0.6, sigmoid=True).with_sigmoid(False), "Hamming Score @ Threshold(0.6)", 100 * 1 / 6),
])
def test_hamming_threshold_and_sigmoid(make, name, expected):
    metric = make()
    item = MultiLabelClassificationOutput(LOSS, LOGITS, torch.ones(2, 3, dtype=torch.long))
    value, lines = epoch(metric, item)
    assert metric.name == name
    assert value == pytest.approx(expected)
    assert lines[0][1] == 2


def test_hamming_counts_negatives_right_too():
    item = MultiLabelClassificationOutput(LOSS, LOGITS, torch.tensor([[0, 0, 1], [0, 0, 0]]))
    # raw > 0.5: predictions [[1,0,1],[0,0,0]] → 5 of 6 labels right
    assert epoch(HammingScore(), item)[0] == pytest.approx(100 * 5 / 6)


def test_auroc_reads_the_last_column_and_one_dimensional_scores():
    # positive-class scores 0.1, 0.4, 0.35, 0.8 for targets 0, 0, 1, 1: 3 of 4 pairs ordered → 75 %
    positive = torch.tensor([0.1, 0.4, 0.35, 0.8])
    targets = torch.tensor([0, 0, 1, 1])
    two_columns = torch.stack([1 - positive, positive], dim=1)
    value, lines = epoch(AurocMetric(), ClassificationOutput(LOSS, two_columns, targets))
    assert value == pytest.approx(75.0) and lines[0][1] == 4
    assert value == pytest.approx(100 * float(tmc.binary_auroc(positive, targets)))
    assert epoch(AurocMetric(), ClassificationOutput(LOSS, positive, targets))[0] == pytest.approx(75.0)
    # one-hot targets: the last column is the positive class
    one_hot = torch.nn.functional.one_hot(targets, 2)
    assert epoch(AurocMetric(), MultiLabelClassificationOutput(LOSS, two_columns, one_hot))[0] == pytest.approx(75.0)
    # the first column would give the reversed order: 25 %
    assert epoch(AurocMetric(), ClassificationOutput(LOSS, two_columns.flip(1), targets))[0] == pytest.approx(25.0)
    assert AurocMetric().name == "AUROC" and AurocMetric().unit == "%"


def test_top_k_with_pad_token_leaves_pad_positions_out():
    # top-2 per row: {1, 2}, {0, 1}, {2, 0}, {0, 1}; targets 2 (hit), 2 (miss), 0 (hit), 1 (hit)
    logits = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1], [0.35, 0.25, 0.4], [0.6, 0.3, 0.1]])
    item = ClassificationOutput(LOSS, logits, torch.tensor([2, 2, 0, 1]))
    assert epoch(TopKAccuracyMetric(2), item)[0] == pytest.approx(75.0)
    metric = TopKAccuracyMetric(2)
    assert metric.with_pad_token(0) is metric and metric.pad_token == 0
    value, lines = epoch(metric, item)  # the third row, a hit, is padding: 2 hits of 3
    assert value == pytest.approx(200 / 3) and lines[0][1] == 3
    # a pad token that no target uses changes nothing
    value, lines = epoch(TopKAccuracyMetric(2).with_pad_token(7), item)
    assert value == pytest.approx(75.0) and lines[0][1] == 4


def sequences(seed=1):
    g = torch.Generator().manual_seed(seed)
    return [SequenceOutput(LOSS, torch.randn(b, 4, 6, generator=g), None, torch.randint(0, 6, (b, 4), generator=g))
            for b in (3, 2)]


def test_perplexity_running_is_the_perplexity_so_far():
    first, second = sequences()
    metric = PerplexityMetric()
    assert math.isnan(metric.running())  # nothing seen yet
    metric.update(first, MetricContext())
    assert metric.running() == pytest.approx(float(tmt.perplexity(first.logits, first.targets)), rel=1e-5)
    metric.update(second, MetricContext())
    both = tmt.perplexity(torch.cat([first.logits, second.logits]), torch.cat([first.targets, second.targets]))
    assert metric.running() == pytest.approx(float(both), rel=1e-5)
    assert metric.finish_epoch()[0] == pytest.approx(float(both), rel=1e-5)


def test_perplexity_with_pad_token_ignores_pad_positions():
    first, second = sequences(2)
    second.targets[0, :3] = 4
    metric = PerplexityMetric()
    assert metric.with_pad_token(4) is metric and metric.pad_token == 4
    value, lines = epoch(metric, first, second)
    logits = torch.cat([first.logits, second.logits])
    targets = torch.cat([first.targets, second.targets])
    assert value == pytest.approx(float(tmt.perplexity(logits, targets, ignore_index=4)), rel=1e-5)
    assert lines[-1][1] == int((targets != 4).sum())  # tokens counted without the pads
    assert value != pytest.approx(float(tmt.perplexity(logits, targets)), rel=1e-3)


def test_dice_with_config_is_the_configured_metric():
    g = torch.Generator().manual_seed(0)
    out = torch.randint(0, 2, (2, 3, 4, 4, 4), generator=g)
    tgt = torch.randint(0, 2, (2, 3, 4, 4, 4), generator=g)
    metric = DiceMetric.with_config(DiceMetricConfig(epsilon=1e-7, include_background=True), 5)
    assert metric.name == "5D Dice Metric" and metric.dims == 5 and metric.config.include_background
    value, lines = epoch(metric, Images(out, tgt))
    o, t = out.double(), tgt.double()
    assert value == pytest.approx(float((2 * (o * t).sum() + 1e-7) / (o.sum() + t.sum() + 1e-7)))
    without, _ = epoch(DiceMetric.with_config(DiceMetricConfig(), 5), Images(out, tgt))
    o, t = o[:, 1:], t[:, 1:]
    assert without == pytest.approx(float((2 * (o * t).sum() + 1e-7) / (o.sum() + t.sum() + 1e-7)))
    assert lines[0][1] == 2


def test_psnr_with_epsilon_sets_the_floor_of_the_error():
    x, _ = images(0)
    config = PsnrMetricConfig(1.0).with_epsilon(1e-4)
    assert config.epsilon == 1e-4 and config.max_pixel_val == 1.0
    # identical images: MSE 0 is clamped at ε → 10·log10(1 / 1e-4) = 40 dB
    assert epoch(PsnrMetric(config), Images(x, x))[0] == pytest.approx(40.0)
    with pytest.raises(ValueError, match="epsilon"):
        PsnrMetricConfig(1.0).with_epsilon(0.0)


def test_ssim_with_k1_k2_changes_the_stabilising_constants():
    x, y = images(3, (2, 2, 12, 12))
    cfg = SsimMetricConfig(2.0).with_kernel_size(5).with_k1_k2(0.05, 0.2)
    assert (cfg.k1, cfg.k2, cfg.kernel_size, cfg.pixel_range) == (0.05, 0.2, 5, 2.0)
    value, _ = epoch(SsimMetric(cfg), Images(x, y))
    k, c1, c2 = gaussian(5, 1.5), (0.05 * 2.0) ** 2, (0.2 * 2.0) ** 2
    per_image = [np.mean([np.mean(np.multiply(*ssim_maps(x[b, c].double().numpy(), y[b, c].double().numpy(),
                                                          k, c1, c2, "zero"))) for c in range(2)]) for b in range(2)]
    assert value == pytest.approx(np.mean(per_image), abs=1e-5)
    default, _ = epoch(SsimMetric(SsimMetricConfig(2.0).with_kernel_size(5)), Images(x, y))
    assert abs(value - default) > 1e-3
    with pytest.raises(ValueError, match="k2"):
        SsimMetricConfig(1.0).with_k1_k2(0.01, -0.03)


def test_image_metric_with_name_renames_it():
    metric = PsnrMetric(PsnrMetricConfig(1.0))
    assert metric.with_name("PSNR (masks)") is metric and metric.name == "PSNR (masks)"
    assert SsimMetric(SsimMetricConfig(1.0)).with_name("S").name == "S"


def test_store_names_lists_one_split_sorted():
    store = MetricStore()
    store.record(Split.TRAIN, 1, "Loss", 0.5)
    store.record(Split.TRAIN, 1, "Accuracy", 90.0)
    store.record(Split.VALID, 1, "Loss", 0.6)
    store.record(Split.VALID, 2, "CER", 3.0)
    assert store.names(Split.TRAIN) == ["Accuracy", "Loss"]
    assert store.names("valid") == ["CER", "Loss"]
    assert store.names(Split.TEST) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answers of a machine without CUDA")
def test_cuda_metrics_probe_what_they_read_and_record_nothing_without_it():
    from burnlike.train.metric import CudaMetric, CudaUtilization

    memory, usage = CudaMetric(), CudaUtilization()
    assert memory.probe() is True  # memory needs CUDA only
    assert usage.probe() is False  # utilisation needs NVML, which can't answer here
    assert not memory.available and not usage.available
    for metric in (memory, usage):
        metric.update(None, MetricContext())
        assert not metric.updated
