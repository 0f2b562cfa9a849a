"""Metric behaviour the other metric tests leave open, found by mutation testing (issue 17): the
vision metrics' config checks and error messages, per-image averaging and batch weights, the
confusion metrics' constructors and defaults, the sequence metrics' edge cases (empty targets, a
single kept token), the CPU temperature's sensor choice and the CPU metrics' messages. Values are
checked against torchmetrics or a hand computation."""

import logging
import math
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torchmetrics.functional.classification as tmc
import torchmetrics.functional.text as tmt
from test_metrics_new import Images, epoch, gaussian, images, ssim_maps

from burnlike.train import ClassificationOutput, MultiLabelClassificationOutput, SequenceOutput
from burnlike.train.metric import (
    AurocMetric,
    CharErrorRate,
    ClassReduction,
    CpuMemory,
    CpuTemperature,
    CudaMetric,
    CudaUtilization,
    DiceMetric,
    DiceMetricConfig,
    FBetaScoreMetric,
    HammingScore,
    IterationSpeedMetric,
    MsSsimMetric,
    MsSsimMetricConfig,
    PerplexityMetric,
    PrecisionMetric,
    PsnrMetric,
    PsnrMetricConfig,
    RecallMetric,
    SsimMetric,
    SsimMetricConfig,
    TopKAccuracyMetric,
    WordErrorRate,
)
from burnlike.train.metric.base import MetricContext
from burnlike.train.metric.store import MetricStore
from burnlike.train.metric.system import cpu_temperature
from burnlike.train.metric.text import edit_distance
from burnlike.train.metric.vision import gaussian_kernel

LOSS = torch.tensor(0.0)


# Dice ---------------------------------------------------------------------------------------------
def dice(o, t, eps=1e-7):
    o, t = o.double(), t.double()
    return float((2 * (o * t).sum() + eps) / (o.sum() + t.sum() + eps))


def test_dice_leaves_out_channel_zero_only_when_there_are_several():
    g = torch.Generator().manual_seed(5)
    out, tgt = (torch.rand((2, 2, 6, 6), generator=g) > 0.5).long(), (torch.rand((2, 2, 6, 6), generator=g) > 0.5).long()
    # two classes: channel 0 (background) is left out
    assert epoch(DiceMetric(), Images(out, tgt))[0] == pytest.approx(dice(out[:, 1:], tgt[:, 1:]))
    # one class: nothing to leave out, its one channel is scored
    one_out, one_tgt = out[:, :1], tgt[:, :1]
    assert epoch(DiceMetric(), Images(one_out, one_tgt))[0] == pytest.approx(dice(one_out, one_tgt))
    # with the background: two classes are enough, one is refused
    with_bg = DiceMetric(DiceMetricConfig(include_background=True))
    assert epoch(with_bg, Images(out, tgt))[0] == pytest.approx(dice(out, tgt))
    with pytest.raises(ValueError, match=r"^4D Dice Metric: include_background needs at least 2 classes, got 1$"):
        epoch(DiceMetric(DiceMetricConfig(include_background=True)), Images(one_out, one_tgt))


def test_dice_of_two_empty_masks_is_one():
    empty = torch.zeros((2, 3, 4, 4), dtype=torch.long)
    assert epoch(DiceMetric(), Images(empty, empty))[0] == pytest.approx(1.0)  # ε / ε


def test_dice_errors_name_the_metric_and_the_shapes():
    with pytest.raises(ValueError, match=r"^DiceMetric requires at least 3 dimensions, got dims=2$"):
        DiceMetric(dims=2)
    default = DiceMetric.with_config(DiceMetricConfig())
    assert default.dims == 4 and default.name == "4D Dice Metric"
    a, b = torch.zeros((2, 3, 8, 8)), torch.zeros((2, 3, 8, 4))
    with pytest.raises(ValueError, match=r"^4D Dice Metric: outputs \(2, 3, 8, 8\) and targets \(2, 3, 8, 4\) "
                                         r"differ in shape$"):
        epoch(DiceMetric(), Images(a, b))


# PSNR ---------------------------------------------------------------------------------------------
def test_psnr_is_the_mean_of_per_image_values_weighted_by_batch_size():
    x, y = images(0, (3, 2, 8, 8))
    x[0] = y[0]  # the first image exact: its MSE is clamped at ε → 100 dB
    value, lines = epoch(PsnrMetric(PsnrMetricConfig(1.0)), Images(x, y))
    mse = ((x - y) ** 2).double().mean(dim=(1, 2, 3)).clamp_min(1e-10)
    assert value == pytest.approx(float((10 * torch.log10(1 / mse)).mean()), rel=1e-5)
    assert lines[0][1] == 3  # three images (of two channels)


def test_image_metrics_refuse_other_ranks_naming_the_metric():
    x = torch.rand(3, 8, 8)
    with pytest.raises(ValueError, match=r"^PSNR@1: expects \[batch, channels, \.\.\.\] tensors of rank 4, "
                                         r"got \(3, 8, 8\)$"):
        epoch(PsnrMetric(PsnrMetricConfig(1.0)), Images(x, x))


def test_psnr_config_names_the_bad_field():
    with pytest.raises(ValueError, match=r"^PsnrMetricConfig\.max_pixel_val must be positive, got 0\.0$"):
        PsnrMetricConfig(0.0)
    with pytest.raises(ValueError, match=r"^PsnrMetricConfig\.epsilon must be positive, got -1\.0$"):
        PsnrMetricConfig(1.0, epsilon=-1.0)


# SSIM ---------------------------------------------------------------------------------------------
def test_gaussian_kernel_is_burns_double_precision_window():
    kernel = gaussian_kernel(5, 1.5)
    assert kernel.dtype == torch.float64
    np.testing.assert_allclose(kernel.numpy(), gaussian(5, 1.5), rtol=1e-12)


def test_ssim_needs_both_image_sides_at_least_the_kernel():
    x, y = images(1, (3, 2, 11, 16))
    value, lines = epoch(SsimMetric(SsimMetricConfig(1.0)), Images(x, y))  # 11 rows = the kernel: accepted
    per_image = [np.mean([np.mean(np.multiply(*ssim_maps(x[b, c].double().numpy(), y[b, c].double().numpy(),
                                                          gaussian(11, 1.5), 1e-4, 9e-4, "zero")))
                          for c in range(2)]) for b in range(3)]
    assert value == pytest.approx(np.mean(per_image), abs=1e-5)
    assert lines[0][1] == 3  # weighted by the batch size, not the channels
    with pytest.raises(ValueError, match=r"^SSIM \(dr=1, w=11, σ=1\.5\): image size \(10, 16\) is smaller than "
                                         r"kernel_size 11$"):
        epoch(SsimMetric(SsimMetricConfig(1.0)), Images(x[:, :, :10], y[:, :, :10]))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"pixel_range": 0.0}, r"SsimMetricConfig\.pixel_range must be positive, got 0\.0"),
    ({"pixel_range": 1.0, "k1": 0.0}, r"SsimMetricConfig\.k1 must be positive, got 0\.0"),
    ({"pixel_range": 1.0, "k2": -0.1}, r"SsimMetricConfig\.k2 must be positive, got -0\.1"),
    ({"pixel_range": 1.0, "sigma": 0.0}, r"SsimMetricConfig\.sigma must be positive, got 0\.0"),
    ({"pixel_range": 1.0, "kernel_size": 4}, r"SsimMetricConfig\.kernel_size must be a positive odd integer, got 4"),
    ({"pixel_range": 1.0, "kernel_size": -1}, r"SsimMetricConfig\.kernel_size must be a positive odd integer, got -1"),
    ({"pixel_range": 1.0, "kernel_size": 3.0}, r"SsimMetricConfig\.kernel_size must be a positive odd integer, got 3\.0"),
])
def test_ssim_config_names_the_bad_field(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        SsimMetricConfig(**kwargs)


def test_ssim_config_accepts_a_one_pixel_kernel_and_ms_ssim_names_its_own_class():
    assert SsimMetricConfig(1.0, kernel_size=1).kernel_size == 1
    with pytest.raises(ValueError, match=r"^MsSsimMetricConfig\.k1 must be positive, got 0\.0$"):
        MsSsimMetricConfig(1.0, k1=0.0)
    with pytest.raises(ValueError, match=r"^MsSsimMetricConfig\.kernel_size must be a positive odd integer, got 2$"):
        MsSsimMetricConfig(1.0, kernel_size=2)


# MS-SSIM ------------------------------------------------------------------------------------------
def ms_ssim(x, y, betas, kernel_size, sigma, c1, c2):
    """Burn's MS-SSIM by explicit window sums: per channel, then channel mean, then batch mean."""
    k, scores = gaussian(kernel_size, sigma), []
    for b in range(x.shape[0]):
        per_channel = []
        for c in range(x.shape[1]):
            xs, ys, score = x[b, c].double().numpy(), y[b, c].double().numpy(), 1.0
            for j, beta in enumerate(betas):
                lum, cs = ssim_maps(xs, ys, k, c1, c2, "reflect")
                score *= max((lum * cs if j == len(betas) - 1 else cs).mean(), 0.0) ** beta
                h, w = xs.shape[0] // 2 * 2, xs.shape[1] // 2 * 2
                xs = xs[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
                ys = ys[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
            per_channel.append(score)
        scores.append(np.mean(per_channel))
    return float(np.mean(scores))


def test_ms_ssim_constants_scale_with_the_pixel_range():
    # dark images (values in [0, 0.1]) against a half as bright copy with noise: the stabilising
    # constants (k·range)² are of the order of the means and variances, so each one matters
    g = torch.Generator().manual_seed(7)
    x = 0.1 * torch.rand((3, 2, 12, 12), generator=g)
    y = (0.5 * x + 0.02 * torch.rand((3, 2, 12, 12), generator=g))
    betas = [0.3, 0.3, 0.4]
    cfg = MsSsimMetricConfig(4.0).with_kernel_size(3).with_channels(2).with_betas(betas)
    value, lines = epoch(MsSsimMetric(cfg), Images(x, y))
    want = ms_ssim(x, y, betas, 3, 1.5, (0.01 * 4.0) ** 2, (0.03 * 4.0) ** 2)
    assert value == pytest.approx(want, rel=1e-4)
    assert lines[0][1] == 3  # three images of two channels
    assert MsSsimMetric(MsSsimMetricConfig(2.0, sigma=0.5)).name == "MS-SSIM (pr=2, k=11, σ=0.5)"


def test_ms_ssim_checks_name_the_channels_and_the_minimum_size():
    x, y = images(4, (2, 2, 20, 20))
    betas = [0.3, 0.3, 0.4]
    three_channels = MsSsimMetricConfig(1.0).with_kernel_size(3).with_betas(betas)
    with pytest.raises(ValueError, match=r"input has 2 channels but the metric was configured for 3 "
                                         r"\(MsSsimMetricConfig\.with_channels\)$"):
        epoch(MsSsimMetric(three_channels), Images(x, y))
    cfg = three_channels.with_channels(2)
    # 3 scales with kernel 3: 3·2² = 12 pixels at least, on both sides
    with pytest.raises(ValueError, match=r": images \(8, 20\) must be at least 12 pixels for 3 scales with "
                                         r"kernel_size=3: use larger images, a smaller kernel_size or fewer betas$"):
        epoch(MsSsimMetric(cfg), Images(x[:, :, :8], y[:, :, :8]))
    small_x, small_y = x[:, :, :12, :12], y[:, :, :12, :12]  # exactly the minimum: accepted
    assert epoch(MsSsimMetric(cfg), Images(small_x, small_y))[0] == pytest.approx(
        ms_ssim(small_x, small_y, betas, 3, 1.5, 1e-4, 9e-4), abs=1e-5)
    # 4 scales: 3·2³ = 24 pixels
    with pytest.raises(ValueError, match="must be at least 24 pixels for 4 scales"):
        epoch(MsSsimMetric(cfg.with_betas([0.25] * 4)), Images(x, y))


def test_ms_ssim_config_checks_channels_and_betas():
    with pytest.raises(ValueError, match=r"^MsSsimMetricConfig\.channels must be positive, got 0$"):
        MsSsimMetricConfig(1.0, channels=0)
    for betas in ([], [0.5, -0.1]):
        with pytest.raises(ValueError, match=r"^MsSsimMetricConfig\.betas must be a non-empty list of values >= 0, "
                                             r"got "):
            MsSsimMetricConfig(1.0, betas=betas)
    cfg = MsSsimMetricConfig(1.0, betas=[0, 1])  # a zero exponent is allowed (that scale counts as 1)
    assert cfg.betas == (0.0, 1.0) and all(isinstance(b, float) for b in cfg.betas)


# Confusion metrics --------------------------------------------------------------------------------
BIN_SCORES = torch.tensor([[0.9], [0.4], [0.6], [0.2]])
BIN_TARGETS = torch.tensor([[1], [1], [0], [0]])


def test_confusion_metric_defaults_are_threshold_one_half_and_top_one():
    assert PrecisionMetric("binary").name == "Precision @ Threshold(0.5)"
    assert RecallMetric("multiclass").name == "Recall @ TopK(1) [Macro]"
    assert PrecisionMetric("multilabel").name == "Precision @ Threshold(0.5) [Macro]"
    assert PrecisionMetric.multiclass().name == "Precision @ TopK(1) [Macro]"
    assert FBetaScoreMetric.multiclass().name == "FBetaScore (1.0) @ TopK(1) [Macro]"
    value, _ = epoch(PrecisionMetric("binary"), ClassificationOutput(LOSS, BIN_SCORES, BIN_TARGETS))
    assert value == pytest.approx(50.0)  # at 0.5: TP 1, FP 1


def test_fbeta_without_a_beta_is_f1():
    metric = FBetaScoreMetric("binary", threshold=0.3)  # beta None: the name has none, the score is F1
    assert metric.name == "FBetaScore @ Threshold(0.3)"
    value, _ = epoch(metric, ClassificationOutput(LOSS, BIN_SCORES, BIN_TARGETS))
    # at 0.3: P = 2/3, R = 1 → F1 = 0.8 (F2 would be 10/11)
    want = tmc.binary_fbeta_score(BIN_SCORES.reshape(-1), BIN_TARGETS.reshape(-1), beta=1.0, threshold=0.3)
    assert value == pytest.approx(80.0) and value == pytest.approx(100 * float(want))


def test_binary_mode_weighs_a_batch_by_its_predictions():
    scores = torch.tensor([[0.9, 0.1, 0.7], [0.2, 0.8, 0.4]])
    targets = torch.tensor([[1, 0, 0], [0, 1, 1]])
    value, lines = epoch(RecallMetric.binary(), ClassificationOutput(LOSS, scores, targets))
    assert value == pytest.approx(100 * float(tmc.binary_recall(scores.reshape(-1), targets.reshape(-1))))
    assert lines[0][1] == 6  # every prediction counts, not the rows


def test_fbeta_multiclass_passes_top_k_and_reduction():
    logits = torch.tensor([[3.0, 2.0, 0.0], [0.0, 3.0, 2.0], [2.0, 0.0, 3.0], [0.0, 2.0, 3.0]])
    targets = torch.tensor([1, 1, 0, 0])
    metric = FBetaScoreMetric.multiclass(top_k=2, reduction=ClassReduction.MICRO)
    assert metric.name == "FBetaScore (1.0) @ TopK(2) [Micro]"
    value, _ = epoch(metric, ClassificationOutput(LOSS, logits, targets))
    want = tmc.multiclass_fbeta_score(logits, targets, beta=1.0, num_classes=3, top_k=2, average="micro")
    assert value == pytest.approx(100 * float(want))
    assert value != pytest.approx(100 * float(tmc.multiclass_fbeta_score(logits, targets, beta=1.0, num_classes=3)))


def test_multiclass_counts_classes_from_the_logits_last_dimension():
    logits = torch.tensor([[0.0, 0.0, 3.0], [0.0, 3.0, 0.0]])  # two rows, three classes
    targets = torch.tensor([2, 0])
    value, _ = epoch(PrecisionMetric.multiclass(reduction=ClassReduction.MICRO), ClassificationOutput(LOSS, logits,
                                                                                                     targets))
    assert value == pytest.approx(50.0)
    assert value == pytest.approx(100 * float(tmc.multiclass_precision(logits, targets, num_classes=3,
                                                                         average="micro")))


def test_auroc_scores_are_the_last_of_several_columns():
    # three columns: the last is the positive class's score; 3 of 4 positive/negative pairs ordered
    positive = torch.tensor([0.1, 0.4, 0.35, 0.8])
    targets = torch.tensor([0, 0, 1, 1])
    scores = torch.stack([torch.full((4,), 0.5), 1 - positive, positive], dim=1)
    assert epoch(AurocMetric(), ClassificationOutput(LOSS, scores, targets))[0] == pytest.approx(75.0)
    # multi-hot targets with three columns: the last column is the positive label
    multi_hot = torch.stack([torch.ones(4, dtype=torch.long), 1 - targets, targets], dim=1)
    value = epoch(AurocMetric(), MultiLabelClassificationOutput(LOSS, scores, multi_hot))[0]
    assert value == pytest.approx(100 * float(tmc.binary_auroc(positive, targets)))


def test_hamming_score_at_exactly_the_threshold_is_a_negative():
    scores = torch.tensor([[0.5, 0.75], [0.25, 0.5]])
    item = MultiLabelClassificationOutput(LOSS, scores, torch.tensor([[0, 1], [0, 0]]))
    assert epoch(HammingScore(), item)[0] == pytest.approx(100.0)  # 0.5 is not above 0.5


# Top-K, CER/WER, perplexity -----------------------------------------------------------------------
def test_top_k_accepts_k_one_and_names_a_bad_k():
    logits = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    assert epoch(TopKAccuracyMetric(1), ClassificationOutput(LOSS, logits, torch.tensor([1, 1])))[0] == 50.0
    with pytest.raises(ValueError, match=r"^TopKAccuracyMetric: k must be >= 1, got 0$"):
        TopKAccuracyMetric(0)


def test_top_k_over_a_sequence_ranks_the_vocabulary():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 2, 6, generator=g)  # sequence of 2 tokens, vocabulary of 6: k=3 < 6
    targets = torch.randint(0, 6, (4, 2), generator=g)
    value, _ = epoch(TopKAccuracyMetric(3), SequenceOutput(LOSS, logits, None, targets))
    want = tmc.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro", top_k=3)
    assert value == pytest.approx(100 * float(want))


def test_top_k_with_one_kept_target_scores_it_alone():
    logits = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    value, lines = epoch(TopKAccuracyMetric(2).with_pad_token(0), ClassificationOutput(LOSS, logits,
                                                                                       torch.tensor([2, 0])))
    assert value == pytest.approx(100.0) and lines[0][1] == 1  # the one non-pad target is a hit


def test_edit_distance_counts_insertions_deletions_and_substitutions():
    assert edit_distance([], [1, 2]) == 2
    assert edit_distance([1, 2], []) == 2
    assert edit_distance([1, 2, 3], [1, 3]) == 1
    assert edit_distance([1, 3], [1, 2, 3]) == 1
    kitten, sitting = [ord(c) for c in "kitten"], [ord(c) for c in "sitting"]
    assert edit_distance(kitten, sitting) == 3


def test_error_rates_of_empty_targets_are_zero():
    empty = SequenceOutput(LOSS, torch.zeros(2, 0, 4), torch.zeros(2, 0, dtype=torch.long),
                           torch.zeros(2, 0, dtype=torch.long))
    assert epoch(CharErrorRate(), empty) == (0.0, [(0.0, 2.0)])
    padded = SequenceOutput(LOSS, torch.zeros(2, 3, 4), torch.ones(2, 3, dtype=torch.long),
                            torch.zeros(2, 3, dtype=torch.long))  # all targets are the pad token
    assert epoch(WordErrorRate(pad_token=0), padded)[0] == 0.0


def test_error_rates_name_the_expected_shapes():
    item = SequenceOutput(LOSS, torch.zeros(2, 3, 4), torch.zeros(2, 3, dtype=torch.long),
                          torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^CER: predictions \(2, 3\) and targets \(2, 4\) must both be "
                                         r"\[batch, sequence\]$"):
        epoch(CharErrorRate(), item)


def test_perplexity_of_one_kept_token_and_of_an_all_pad_batch():
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(1, 3, 5, generator=g)
    targets = torch.tensor([[2, 0, 0]])  # one token, then padding
    metric = PerplexityMetric(pad_token=0)
    value, lines = epoch(metric, SequenceOutput(LOSS, logits, None, targets))
    assert value == pytest.approx(float(tmt.perplexity(logits, targets, ignore_index=0)), rel=1e-5)
    assert lines == [pytest.approx((value, 1.0))]
    # a first batch of padding only: its running line is infinite (no token yet), the next one counts
    all_pad = SequenceOutput(LOSS, logits, None, torch.zeros(1, 3, dtype=torch.long))
    value, lines = epoch(PerplexityMetric(pad_token=0), all_pad, SequenceOutput(LOSS, logits, None, targets))
    assert lines[0] == (math.inf, 0.0) and lines[1] == pytest.approx((value, 1.0))


# Store, machine metrics ---------------------------------------------------------------------------
def test_store_names_both_directions_when_refusing_a_second():
    from burnlike.train.metric import LearningRateMetric, LossMetric

    class HigherLoss(LossMetric):
        higher_is_better = True

    class ScoredRate(LearningRateMetric):
        higher_is_better = False

    store = MetricStore()
    store.register([LossMetric(), LearningRateMetric()])
    with pytest.raises(ValueError, match=r"'Loss' is registered with two directions \(lowest and highest\)"):
        store.register([HigherLoss()])
    with pytest.raises(ValueError, match=r"'Learning Rate' is registered with two directions "
                                         r"\(no direction and lowest\)"):
        store.register([ScoredRate()])


def sensor(root: Path, kind: str, folder_name: str, **files: str) -> None:
    folder = root / "class" / kind / folder_name
    folder.mkdir(parents=True)
    for file, text in files.items():
        (folder / file).write_text(text + "\n")


def test_cpu_temperature_reads_only_cpu_sensors(tmp_path):
    sensor(tmp_path, "hwmon", "hwmon0", name="nvme", temp1_input="61000")  # a disk: not the CPU
    sensor(tmp_path, "hwmon", "hwmon1", name="coretemp")  # a CPU driver without a reading
    sensor(tmp_path, "thermal", "thermal_zone0", type="acpitz", temp="30000")  # the board
    sensor(tmp_path, "thermal", "thermal_zone1", temp="35000")  # no type
    assert math.isnan(cpu_temperature(tmp_path))
    sensor(tmp_path, "thermal", "thermal_zone2", type="CPU-therm", temp="44500")  # case-insensitive
    assert cpu_temperature(tmp_path) == 44.5
    soc = tmp_path / "soc"
    sensor(soc, "thermal", "thermal_zone0", type="soc_thermal", temp="51000")
    assert cpu_temperature(soc) == 51.0
    value, lines = epoch(CpuTemperature(soc), None)
    assert value == 51.0 and lines == [(51.0, 1.0)]


def test_cpu_temperature_reads_the_machines_sysfs_by_default():
    assert CpuTemperature().sys_root == Path("/sys")
    default, machine = cpu_temperature(), cpu_temperature("/sys")  # NaN both where /sys has no CPU sensor
    assert default == machine or (math.isnan(default) and math.isnan(machine))


def test_cpu_metrics_name_themselves_when_psutil_is_missing(monkeypatch):
    from burnlike.train.metric import CpuUse

    monkeypatch.setitem(__import__("sys").modules, "psutil", None)
    for metric in (CpuUse, CpuMemory):
        with pytest.raises(ImportError, match=rf"^{metric.__name__} needs psutil: "):
            metric()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answers of a machine without CUDA")
def test_cuda_metrics_say_once_why_they_record_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        memory, usage = CudaMetric(), CudaUtilization()
    assert memory.available is False and usage.available is False
    assert [r.getMessage() for r in caplog.records] == [
        "CudaMetric: no CUDA device or NVML, nothing will be recorded",
        "CudaUtilization: no CUDA device or NVML, nothing will be recorded",
    ]


def advance_clock(seconds):
    """Busy-wait until perf_counter has moved on by `seconds` (the metric reads that clock)."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pass


def test_iteration_speed_counts_iterations_since_the_epochs_first_update():
    metric = IterationSpeedMetric()
    for _ in range(2):  # a second epoch starts over
        before = time.perf_counter()
        metric.update(None, MetricContext())  # the first update starts the clock: no speed yet
        after_first = time.perf_counter()
        advance_clock(0.005)
        before_second = time.perf_counter()
        metric.update(None, MetricContext())
        after = time.perf_counter()
        _, [(first, first_count), (second, second_count)] = metric.finish_epoch()  # Burn's log lines
        assert first == 0.0 and first_count == second_count == 1
        # 2 iterations over the time between the two reads of the clock, which lies between these
        assert 2 / (after - before) <= second <= 2 / (before_second - after_first)
