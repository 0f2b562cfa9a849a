"""`burnlike.train.metric.vision`: Dice, PSNR, SSIM and MS-SSIM with Burn's names and formulas,
checked against hand computations (explicit window sums over zero- or reflect-padded images) and
torchmetrics. Also checked: which channels Dice scores (background left out only when there are
several), the floors and constants each config sets, the per-image mean weighted by batch size,
and errors that name the metric, the bad field or the shapes."""

from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torchmetrics.functional as tmf
import torchmetrics.functional.segmentation as tm_seg

from burnlike.train.metric import (
    DiceMetric,
    DiceMetricConfig,
    MsSsimMetric,
    MsSsimMetricConfig,
    PsnrMetric,
    PsnrMetricConfig,
    SsimMetric,
    SsimMetricConfig,
)
from burnlike.train.metric.vision import gaussian_kernel
from burnlike.train.output import DICE, IMAGE, Adaptor
from tests.train.helpers import feed_epoch
from tests.train.metric.helpers import CTX


@dataclass
class Images(Adaptor):
    """An output item that feeds the image and Dice metrics."""

    output: torch.Tensor
    targets: torch.Tensor
    provides = frozenset({IMAGE, DICE})


def masks(seed, shape=(2, 3, 8, 8)):
    """Random 0/1 masks [B, C, H, W]."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g) > 0.5).long()


def images(seed, shape=(2, 3, 16, 16)):
    """Random images in [0, 1] and a noisy copy."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g)
    return x, (x + 0.1 * torch.randn(shape, generator=g)).clamp(0, 1)


def gaussian(size, sigma):
    """The normalised 1-D Gaussian window, in numpy."""
    x = np.arange(size) - size // 2
    k = np.exp(-(x**2) / (2 * sigma**2))
    return k / k.sum()


def window_mean(img, kernel, mode):
    """Gaussian-weighted mean around every pixel, by explicit sums over the padded image."""
    r = len(kernel) // 2
    padded = np.pad(img, r, mode="constant" if mode == "zero" else "reflect")
    w = np.outer(kernel, kernel)
    out = np.zeros_like(img)
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            out[i, j] = (padded[i : i + len(kernel), j : j + len(kernel)] * w).sum()
    return out


def ssim_maps(x, y, kernel, c1, c2, mode):
    """SSIM's luminance and contrast-structure maps of two 2-D images."""
    mx, my = window_mean(x, kernel, mode), window_mean(y, kernel, mode)
    vx = np.maximum(window_mean(x * x, kernel, mode) - mx * mx, 0)
    vy = np.maximum(window_mean(y * y, kernel, mode) - my * my, 0)
    cov = window_mean(x * y, kernel, mode) - mx * my
    return (2 * mx * my + c1) / (mx**2 + my**2 + c1), (2 * cov + c2) / (vx + vy + c2)


def dice(o, t, eps=1e-7):
    """Burn's micro Dice of masks `o` and `t`."""
    o, t = o.double(), t.double()
    return float((2 * (o * t).sum() + eps) / (o.sum() + t.sum() + eps))


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


# --- Dice ------------------------------------------------------------------------------------------
def test_dice_by_hand_and_against_torchmetrics():
    out, tgt = masks(0), masks(1)
    value, lines = feed_epoch(DiceMetric(), Images(out, tgt))
    o, t = out[:, 1:].double(), tgt[:, 1:].double()  # background channel left out
    assert value == pytest.approx(float((2 * (o * t).sum() + 1e-7) / (o.sum() + t.sum() + 1e-7)))
    assert lines[0][1] == 2 and DiceMetric().name == "4D Dice Metric" and DiceMetric.higher_is_better is True
    with_bg, _ = feed_epoch(DiceMetric(DiceMetricConfig(include_background=True)), Images(out, tgt))
    o, t = out.double(), tgt.double()
    assert with_bg == pytest.approx(float(2 * (o * t).sum() / (o.sum() + t.sum())))
    # one image: Burn's micro Dice is torchmetrics' micro Dice score
    single, _ = feed_epoch(DiceMetric(), Images(out[:1], tgt[:1]))
    want = tm_seg.dice_score(out[:1], tgt[:1], num_classes=3, include_background=False, average="micro",
                                       input_format="one-hot")
    assert single == pytest.approx(float(want), rel=1e-6)
    with pytest.raises(ValueError, match="rank 3"):
        feed_epoch(DiceMetric(dims=3), Images(out, tgt))


def test_dice_with_config_is_the_configured_metric():
    g = torch.Generator().manual_seed(0)
    out = torch.randint(0, 2, (2, 3, 4, 4, 4), generator=g)
    tgt = torch.randint(0, 2, (2, 3, 4, 4, 4), generator=g)
    metric = DiceMetric.with_config(DiceMetricConfig(epsilon=1e-7, include_background=True), 5)
    assert metric.name == "5D Dice Metric" and metric.dims == 5 and metric.config.include_background
    value, lines = feed_epoch(metric, Images(out, tgt))
    o, t = out.double(), tgt.double()
    assert value == pytest.approx(float((2 * (o * t).sum() + 1e-7) / (o.sum() + t.sum() + 1e-7)))
    without, _ = feed_epoch(DiceMetric.with_config(DiceMetricConfig(), 5), Images(out, tgt))
    o, t = o[:, 1:], t[:, 1:]
    assert without == pytest.approx(float((2 * (o * t).sum() + 1e-7) / (o.sum() + t.sum() + 1e-7)))
    assert lines[0][1] == 2


def test_dice_leaves_out_channel_zero_only_when_there_are_several():
    g = torch.Generator().manual_seed(5)
    out, tgt = (torch.rand((2, 2, 6, 6), generator=g) > 0.5).long(), (torch.rand((2, 2, 6, 6), generator=g) > 0.5).long()
    # two classes: channel 0 (background) is left out
    assert feed_epoch(DiceMetric(), Images(out, tgt))[0] == pytest.approx(dice(out[:, 1:], tgt[:, 1:]))
    # one class: nothing to leave out, its one channel is scored
    one_out, one_tgt = out[:, :1], tgt[:, :1]
    assert feed_epoch(DiceMetric(), Images(one_out, one_tgt))[0] == pytest.approx(dice(one_out, one_tgt))
    # with the background: two classes are enough, one is refused
    with_bg = DiceMetric(DiceMetricConfig(include_background=True))
    assert feed_epoch(with_bg, Images(out, tgt))[0] == pytest.approx(dice(out, tgt))
    with pytest.raises(ValueError, match=r"^4D Dice Metric: include_background needs at least 2 classes, got 1$"):
        feed_epoch(DiceMetric(DiceMetricConfig(include_background=True)), Images(one_out, one_tgt))


def test_dice_of_two_empty_masks_is_one():
    empty = torch.zeros((2, 3, 4, 4), dtype=torch.long)
    assert feed_epoch(DiceMetric(), Images(empty, empty))[0] == pytest.approx(1.0)  # ε / ε


def test_dice_errors_name_the_metric_and_the_shapes():
    with pytest.raises(ValueError, match=r"^DiceMetric requires at least 3 dimensions, got dims=2$"):
        DiceMetric(dims=2)
    default = DiceMetric.with_config(DiceMetricConfig())
    assert default.dims == 4 and default.name == "4D Dice Metric"
    a, b = torch.zeros((2, 3, 8, 8)), torch.zeros((2, 3, 8, 4))
    with pytest.raises(ValueError, match=r"^4D Dice Metric: outputs \(2, 3, 8, 8\) and targets \(2, 3, 8, 4\) "
                                         r"differ in shape$"):
        feed_epoch(DiceMetric(), Images(a, b))


# --- PSNR ------------------------------------------------------------------------------------------
def test_psnr_equals_torchmetrics():
    x, y = (2 * t for t in images(0))  # pixel values in [0, 2]
    value, _ = feed_epoch(PsnrMetric(PsnrMetricConfig(2.0)), Images(x, y))
    want = tmf.image.peak_signal_noise_ratio(x, y, data_range=2.0, dim=(1, 2, 3), reduction="elementwise_mean")
    assert value == pytest.approx(float(want), rel=1e-5)
    assert PsnrMetric(PsnrMetricConfig(255.0)).name == "PSNR@255" and PsnrMetric(PsnrMetricConfig(1.0)).unit == "dB"
    # identical images: Burn clamps the error at ε instead of reporting infinity
    assert feed_epoch(PsnrMetric(PsnrMetricConfig(1.0)), Images(x, x))[0] == pytest.approx(100.0)
    assert PsnrMetric.higher_is_better is True


def test_psnr_is_the_mean_of_per_image_values_weighted_by_batch_size():
    x, y = images(0, (3, 2, 8, 8))
    x[0] = y[0]  # the first image exact: its MSE is clamped at ε → 100 dB
    value, lines = feed_epoch(PsnrMetric(PsnrMetricConfig(1.0)), Images(x, y))
    mse = ((x - y) ** 2).double().mean(dim=(1, 2, 3)).clamp_min(1e-10)
    assert value == pytest.approx(float((10 * torch.log10(1 / mse)).mean()), rel=1e-5)
    assert lines[0][1] == 3  # three images (of two channels)


def test_psnr_with_epsilon_sets_the_floor_of_the_error():
    x, _ = images(0)
    config = PsnrMetricConfig(1.0).with_epsilon(1e-4)
    assert config.epsilon == 1e-4 and config.max_pixel_val == 1.0
    # identical images: MSE 0 is clamped at ε → 10·log10(1 / 1e-4) = 40 dB
    assert feed_epoch(PsnrMetric(config), Images(x, x))[0] == pytest.approx(40.0)
    with pytest.raises(ValueError, match="epsilon"):
        PsnrMetricConfig(1.0).with_epsilon(0.0)


def test_psnr_config_names_the_bad_field():
    with pytest.raises(ValueError, match=r"^PsnrMetricConfig\.max_pixel_val must be positive, got 0\.0$"):
        PsnrMetricConfig(0.0)
    with pytest.raises(ValueError, match=r"^PsnrMetricConfig\.epsilon must be positive, got -1\.0$"):
        PsnrMetricConfig(1.0, epsilon=-1.0)


# --- all image metrics -----------------------------------------------------------------------------
def test_image_metric_with_name_renames_it():
    metric = PsnrMetric(PsnrMetricConfig(1.0))
    assert metric.with_name("PSNR (masks)") is metric and metric.name == "PSNR (masks)"
    assert SsimMetric(SsimMetricConfig(1.0)).with_name("S").name == "S"


def test_image_metrics_refuse_other_ranks_naming_the_metric():
    x = torch.rand(3, 8, 8)
    with pytest.raises(ValueError, match=r"^PSNR@1: expects \[batch, channels, \.\.\.\] tensors of rank 4, "
                                         r"got \(3, 8, 8\)$"):
        feed_epoch(PsnrMetric(PsnrMetricConfig(1.0)), Images(x, x))


# --- SSIM ------------------------------------------------------------------------------------------
def test_gaussian_kernel_is_burns_double_precision_window():
    kernel = gaussian_kernel(5, 1.5)
    assert kernel.dtype == torch.float64
    np.testing.assert_allclose(kernel.numpy(), gaussian(5, 1.5), rtol=1e-12)


def test_ssim_matches_a_hand_computation_with_zero_padding():
    x, y = images(3, (2, 2, 12, 12))
    cfg = SsimMetricConfig(1.0).with_kernel_size(5).with_sigma(1.2)
    value, _ = feed_epoch(SsimMetric(cfg), Images(x, y))
    k, c1, c2 = gaussian(5, 1.2), 0.01**2, 0.03**2
    per_image = [np.mean([np.mean(np.multiply(*ssim_maps(x[b, c].double().numpy(), y[b, c].double().numpy(),
                                                          k, c1, c2, "zero"))) for c in range(2)]) for b in range(2)]
    assert value == pytest.approx(np.mean(per_image), abs=1e-5)
    assert SsimMetric(SsimMetricConfig(1.0)).name == "SSIM (dr=1, w=11, σ=1.5)"
    with pytest.raises(ValueError, match="kernel_size"):
        SsimMetricConfig(1.0, kernel_size=4)


def test_ssim_with_k1_k2_changes_the_stabilising_constants():
    x, y = images(3, (2, 2, 12, 12))
    cfg = SsimMetricConfig(2.0).with_kernel_size(5).with_k1_k2(0.05, 0.2)
    assert (cfg.k1, cfg.k2, cfg.kernel_size, cfg.pixel_range) == (0.05, 0.2, 5, 2.0)
    value, _ = feed_epoch(SsimMetric(cfg), Images(x, y))
    k, c1, c2 = gaussian(5, 1.5), (0.05 * 2.0) ** 2, (0.2 * 2.0) ** 2
    per_image = [np.mean([np.mean(np.multiply(*ssim_maps(x[b, c].double().numpy(), y[b, c].double().numpy(),
                                                          k, c1, c2, "zero"))) for c in range(2)]) for b in range(2)]
    assert value == pytest.approx(np.mean(per_image), abs=1e-5)
    default, _ = feed_epoch(SsimMetric(SsimMetricConfig(2.0).with_kernel_size(5)), Images(x, y))
    assert abs(value - default) > 1e-3
    with pytest.raises(ValueError, match="k2"):
        SsimMetricConfig(1.0).with_k1_k2(0.01, -0.03)


def test_ssim_needs_both_image_sides_at_least_the_kernel():
    x, y = images(1, (3, 2, 11, 16))
    value, lines = feed_epoch(SsimMetric(SsimMetricConfig(1.0)), Images(x, y))  # 11 rows = the kernel: accepted
    per_image = [np.mean([np.mean(np.multiply(*ssim_maps(x[b, c].double().numpy(), y[b, c].double().numpy(),
                                                          gaussian(11, 1.5), 1e-4, 9e-4, "zero")))
                          for c in range(2)]) for b in range(3)]
    assert value == pytest.approx(np.mean(per_image), abs=1e-5)
    assert lines[0][1] == 3  # weighted by the batch size, not the channels
    with pytest.raises(ValueError, match=r"^SSIM \(dr=1, w=11, σ=1\.5\): image size \(10, 16\) is smaller than "
                                         r"kernel_size 11$"):
        feed_epoch(SsimMetric(SsimMetricConfig(1.0)), Images(x[:, :, :10], y[:, :, :10]))


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


# --- MS-SSIM ---------------------------------------------------------------------------------------
def test_ms_ssim_matches_a_hand_computation_and_checks_channels_and_size():
    betas = [0.3, 0.3, 0.4]
    three_channels = MsSsimMetricConfig(1.0).with_kernel_size(3).with_betas(betas)
    cfg = three_channels.with_channels(2)
    x, y = images(4, (2, 2, 16, 16))  # 3 scales with reflect padding: 16, 8 and 4 pixels
    assert feed_epoch(MsSsimMetric(cfg), Images(x, y))[0] == pytest.approx(
        ms_ssim(x, y, betas, 3, 1.5, 0.01**2, 0.03**2), abs=1e-5)
    x, y = images(4, (2, 2, 20, 20))
    with pytest.raises(ValueError, match=r"input has 2 channels but the metric was configured for 3 "
                                         r"\(MsSsimMetricConfig\.with_channels\)$"):
        feed_epoch(MsSsimMetric(three_channels), Images(x, y))
    # 3 scales with kernel 3: 3·2² = 12 pixels at least, on both sides
    with pytest.raises(ValueError, match=r": images \(8, 20\) must be at least 12 pixels for 3 scales with "
                                         r"kernel_size=3: use larger images, a smaller kernel_size or fewer betas$"):
        feed_epoch(MsSsimMetric(cfg), Images(x[:, :, :8], y[:, :, :8]))
    small_x, small_y = x[:, :, :12, :12], y[:, :, :12, :12]  # exactly the minimum: accepted
    assert feed_epoch(MsSsimMetric(cfg), Images(small_x, small_y))[0] == pytest.approx(
        ms_ssim(small_x, small_y, betas, 3, 1.5, 1e-4, 9e-4), abs=1e-5)
    # 4 scales: 3·2³ = 24 pixels
    with pytest.raises(ValueError, match="must be at least 24 pixels for 4 scales"):
        feed_epoch(MsSsimMetric(cfg.with_betas([0.25] * 4)), Images(x, y))


def test_ms_ssim_is_computed_in_float32_whatever_torchs_default_dtype():
    """Burn computes in its backend's float (f32): the images are cast to it, and every scale's
    product stays in it in a run that made float64 torch's default (double-precision training)."""
    cfg = MsSsimMetricConfig(1.0).with_kernel_size(3).with_channels(2).with_betas([0.3, 0.3, 0.4])
    x, y = images(4, (2, 2, 16, 16))
    value, _ = MsSsimMetric(cfg).batch_value(Images(x, y), CTX)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        wide, _ = MsSsimMetric(cfg).batch_value(Images(x.double(), y.double()), CTX)
    finally:
        torch.set_default_dtype(default)
    assert wide.dtype == value.dtype == torch.float32 and torch.equal(wide, value)


def test_ms_ssim_of_images_on_a_gpu_is_computed_there(fake_cuda):
    """torch's fake CUDA tensors (no values; devices checked as on a GPU): every scale's product is
    made on the images' device."""
    metric = MsSsimMetric(MsSsimMetricConfig(1.0).with_kernel_size(3).with_channels(2).with_betas([0.3, 0.3, 0.4]))
    with fake_cuda:
        x, y = torch.rand(2, 2, 16, 16, device="cuda"), torch.rand(2, 2, 16, 16, device="cuda")
        value, count = metric.batch_value(Images(x, y), CTX)
    assert (value.device.type, value.shape, count) == ("cuda", (), 2)


def test_ms_ssim_constants_scale_with_the_pixel_range():
    # dark images (values in [0, 0.1]) against a half as bright copy with noise: the stabilising
    # constants (k·range)² are of the order of the means and variances, so each one matters
    g = torch.Generator().manual_seed(7)
    x = 0.1 * torch.rand((3, 2, 12, 12), generator=g)
    y = (0.5 * x + 0.02 * torch.rand((3, 2, 12, 12), generator=g))
    betas = [0.3, 0.3, 0.4]
    cfg = MsSsimMetricConfig(4.0).with_kernel_size(3).with_channels(2).with_betas(betas)
    value, lines = feed_epoch(MsSsimMetric(cfg), Images(x, y))
    want = ms_ssim(x, y, betas, 3, 1.5, (0.01 * 4.0) ** 2, (0.03 * 4.0) ** 2)
    assert value == pytest.approx(want, rel=1e-4)
    assert lines[0][1] == 3  # three images of two channels
    assert MsSsimMetric(MsSsimMetricConfig(2.0, sigma=0.5)).name == "MS-SSIM (pr=2, k=11, σ=0.5)"


def test_ms_ssim_config_checks_channels_and_betas():
    with pytest.raises(ValueError, match=r"^MsSsimMetricConfig\.channels must be positive, got 0$"):
        MsSsimMetricConfig(1.0, channels=0)
    for betas in ([], [0.5, -0.1]):
        with pytest.raises(ValueError, match=r"^MsSsimMetricConfig\.betas must be a non-empty list of values >= 0, "
                                             r"got "):
            MsSsimMetricConfig(1.0, betas=betas)
    cfg = MsSsimMetricConfig(1.0, betas=[0, 1])  # a zero exponent is allowed (that scale counts as 1)
    assert cfg.betas == (0.0, 1.0) and all(isinstance(b, float) for b in cfg.betas)
