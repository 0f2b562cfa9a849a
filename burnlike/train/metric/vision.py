"""Vision metrics with Burn's names and formulas: Dice (0.19), PSNR, SSIM and MS-SSIM (0.21).

They read `item.output` and `item.targets`: an output class that lists `DICE` (int masks
[B, C, ...]) or `IMAGE` (float images [B, C, H, W]) in its `provides` feeds them. Each batch value
stays on the device, weighted by batch size.

Burn's formulas differ from torchmetrics' at the borders, and burnlike follows Burn: SSIM pads the
Gaussian window with zeros and averages over the whole image (torchmetrics pads by reflection and
crops the border); MS-SSIM pads by reflection and averages over the whole image at every scale;
Dice is one micro score over the batch (torchmetrics scores each sample).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from burnlike.train.logger import rust_f64
from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import DICE, IMAGE


def _f32(x: float) -> str:
    """Rust's `Display` for an f32 (shortest digits that round-trip in single precision)."""
    return np.format_float_positional(np.float32(x), trim="-")


def _positive(owner: str, **values: float) -> None:
    for key, value in values.items():
        if not value > 0:
            raise ValueError(f"{owner}.{key} must be positive, got {value!r}")


def _odd_kernel(owner: str, size: int) -> None:
    if not isinstance(size, int) or size <= 0 or size % 2 == 0:
        raise ValueError(f"{owner}.kernel_size must be a positive odd integer, got {size!r}")


def _same_shape(name: str, output: Tensor, targets: Tensor, rank: int | None = None) -> None:
    if output.shape != targets.shape:
        raise ValueError(f"{name}: outputs {tuple(output.shape)} and targets {tuple(targets.shape)} differ in shape")
    if rank is not None and output.dim() != rank:
        raise ValueError(f"{name}: expects [batch, channels, ...] tensors of rank {rank}, got {tuple(output.shape)}")


# Dice --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiceMetricConfig:
    """Burn's `DiceMetricConfig`."""

    epsilon: float = 1e-7  # added to the numerator and the denominator (an empty mask scores 1)
    include_background: bool = False  # count channel 0, the background


class DiceMetric(Metric):
    """`{D}D Dice Metric`: (2·|O∩T| + ε) / (|O| + |T| + ε) over the batch, channel 0 (background)
    left out unless `include_background`. `dims` is Burn's `D`, the rank of the masks (default 4).

    Args:
        config: Its settings; None: the defaults.
        dims: The rank of the masks `[B, C, ...]`, at least 3.

    Raises:
        ValueError: `dims` is below 3.
    """

    input = DICE
    higher_is_better = True

    def __init__(self, config: DiceMetricConfig | None = None, dims: int = 4) -> None:
        super().__init__()
        if dims < 3:
            raise ValueError(f"DiceMetric requires at least 3 dimensions, got dims={dims}")
        self.config = config or DiceMetricConfig()
        """Its settings."""
        self.dims = dims
        """The rank of the masks."""
        self.name = f"{dims}D Dice Metric"

    @classmethod
    def with_config(cls, config: DiceMetricConfig, dims: int = 4) -> DiceMetric:
        """Burn's `DiceMetric::with_config(config)`.

        Args:
            config: Its settings.
            dims: The rank of the masks.
        """
        return cls(config, dims)

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        outputs, targets = item.output, item.targets
        _same_shape(self.name, outputs, targets, self.dims)
        classes = outputs.shape[1]
        if not self.config.include_background and classes > 1:
            outputs, targets = outputs[:, 1:], targets[:, 1:]
        elif self.config.include_background and classes < 2:
            raise ValueError(f"{self.name}: include_background needs at least 2 classes, got {classes}")
        outputs, targets = outputs.double(), targets.double()
        eps = self.config.epsilon
        dice = (2.0 * (outputs * targets).sum() + eps) / (outputs.sum() + targets.sum() + eps)
        return dice, outputs.shape[0]


# Image metrics -----------------------------------------------------------------------------------
class _ImageMetric(Metric):
    """PSNR, SSIM and MS-SSIM: a config, a name derived from it (Burn's), float images [B, C, H, W]."""

    input = IMAGE
    higher_is_better = True

    def __init__(self, config: Any) -> None:
        """The metric, named after its settings as Burn names it.

        Args:
            config: Its settings (the metric's config class).
        """
        super().__init__()
        self.config = config
        """Its settings."""
        self.name = self._label(config)

    def _label(self, config: Any) -> str:
        raise NotImplementedError

    def with_name(self, name: str) -> Any:
        """Burn's `with_name`: log and show it under `name`; the metric itself.

        Args:
            name: The name.
        """
        self.name = name
        return self

    def _images(self, item: Any) -> tuple[Tensor, Tensor]:
        x, y = item.output.detach().float(), item.targets.float()
        _same_shape(self.name, x, y, 4)
        return x, y


# PSNR --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PsnrMetricConfig:
    """Burn's `PsnrMetricConfig`."""

    max_pixel_val: float  # the range of pixel values (1.0 for [0, 1] images, 255.0 for 8-bit ones)
    epsilon: float = 1e-10  # the MSE's floor (identical images score 10·log10(max²/ε))

    def __post_init__(self) -> None:
        _positive("PsnrMetricConfig", max_pixel_val=self.max_pixel_val, epsilon=self.epsilon)

    def with_epsilon(self, epsilon: float) -> PsnrMetricConfig:
        """A copy with `epsilon` set.

        Args:
            epsilon: The MSE's floor, > 0.
        """
        return replace(self, epsilon=epsilon)


class PsnrMetric(_ImageMetric):
    """`PSNR@{max}` in dB: 10·log10(max² / MSE) per image (MSE clamped at ε), averaged over the batch.

    Args:
        config: Its settings.
    """

    unit = "dB"
    config: PsnrMetricConfig

    def _label(self, config: PsnrMetricConfig) -> str:
        return f"PSNR@{rust_f64(config.max_pixel_val)}"

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        x, y = self._images(item)
        mse = (x - y).pow(2).mean(dim=(1, 2, 3)).clamp_min(self.config.epsilon)
        psnr = 10.0 * torch.log10(self.config.max_pixel_val**2 / mse)
        return psnr.mean(), x.shape[0]


# SSIM and MS-SSIM --------------------------------------------------------------------------------
def gaussian_kernel(size: int, sigma: float) -> Tensor:
    """Burn's normalised 1-D Gaussian window, centred on index size // 2.

    Args:
        size: The window's length.
        sigma: The Gaussian's standard deviation.
    """
    x = torch.arange(size, dtype=torch.float64) - size // 2
    kernel = torch.exp(-(x * x) / (2.0 * sigma * sigma))
    return kernel / kernel.sum()


def _blur(x: Tensor, kernel: Tensor, reflect: bool) -> Tensor:
    """Separable Gaussian blur per channel, same size out: zero padding, or reflection padding."""
    channels, size = x.shape[1], kernel.numel()
    pad = size // 2
    k = kernel.to(x)
    horizontal = k.reshape(1, 1, 1, size).repeat(channels, 1, 1, 1)
    vertical = k.reshape(1, 1, size, 1).repeat(channels, 1, 1, 1)
    if reflect:
        x = F.pad(x, (pad, pad, pad, pad), mode="reflect")
        return F.conv2d(F.conv2d(x, horizontal, groups=channels), vertical, groups=channels)
    x = F.conv2d(x, horizontal, padding=(0, pad), groups=channels)
    return F.conv2d(x, vertical, padding=(pad, 0), groups=channels)


def _ssim_terms(x: Tensor, y: Tensor, kernel: Tensor, c1: float, c2: float, reflect: bool) -> tuple[Tensor, Tensor]:
    """Luminance and contrast-structure maps of SSIM."""
    mu_x, mu_y = _blur(x, kernel, reflect), _blur(y, kernel, reflect)
    var_x = (_blur(x * x, kernel, reflect) - mu_x * mu_x).clamp_min(0.0)
    var_y = (_blur(y * y, kernel, reflect) - mu_y * mu_y).clamp_min(0.0)
    cov = _blur(x * y, kernel, reflect) - mu_x * mu_y
    luminance = (2.0 * mu_x * mu_y + c1) / (mu_x * mu_x + mu_y * mu_y + c1)
    contrast_structure = (2.0 * cov + c2) / (var_x + var_y + c2)
    return luminance, contrast_structure


@dataclass(frozen=True)
class SsimMetricConfig:
    """Burn's `SsimMetricConfig`."""

    pixel_range: float  # the range of pixel values (1.0 for [0, 1] images, 255.0 for 8-bit ones)
    k1: float = 0.01  # the luminance constant's factor, c1 = (k1·pixel_range)²
    k2: float = 0.03  # the contrast constant's factor, c2 = (k2·pixel_range)²
    kernel_size: int = 11  # the Gaussian window's size, odd
    sigma: float = 1.5  # the Gaussian window's standard deviation

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _positive(owner, pixel_range=self.pixel_range, k1=self.k1, k2=self.k2, sigma=self.sigma)
        _odd_kernel(owner, self.kernel_size)

    def with_k1_k2(self, k1: float, k2: float) -> Any:
        """A copy with `k1` and `k2` set.

        Args:
            k1: The luminance constant's factor.
            k2: The contrast constant's factor.
        """
        return replace(self, k1=k1, k2=k2)

    def with_kernel_size(self, kernel_size: int) -> Any:
        """A copy with `kernel_size` set.

        Args:
            kernel_size: The Gaussian window's size, odd.
        """
        return replace(self, kernel_size=kernel_size)

    def with_sigma(self, sigma: float) -> Any:
        """A copy with `sigma` set.

        Args:
            sigma: The Gaussian window's standard deviation.
        """
        return replace(self, sigma=sigma)


class SsimMetric(_ImageMetric):
    """`SSIM (dr=…, w=…, σ=…)`: mean SSIM map per image (zero-padded Gaussian window), batch mean.

    Args:
        config: Its settings.
    """

    config: SsimMetricConfig

    def _label(self, config: SsimMetricConfig) -> str:
        return f"SSIM (dr={_f32(config.pixel_range)}, w={config.kernel_size}, σ={_f32(config.sigma)})"

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        cfg = self.config
        x, y = self._images(item)
        if min(x.shape[2:]) < cfg.kernel_size:
            raise ValueError(f"{self.name}: image size {tuple(x.shape[2:])} is smaller than kernel_size {cfg.kernel_size}")
        c1, c2 = (cfg.k1 * cfg.pixel_range) ** 2, (cfg.k2 * cfg.pixel_range) ** 2
        luminance, contrast_structure = _ssim_terms(x, y, gaussian_kernel(cfg.kernel_size, cfg.sigma), c1, c2, False)
        return (luminance * contrast_structure).mean(dim=(1, 2, 3)).mean(), x.shape[0]


@dataclass(frozen=True)
class MsSsimMetricConfig(SsimMetricConfig):
    """SSIM's settings plus the channel count and one exponent per scale (Burn's defaults)."""

    channels: int = 3  # the images' channels
    # one exponent per scale, finest first; their count is the number of scales
    betas: tuple[float, ...] = field(default=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333))

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("MsSsimMetricConfig", channels=self.channels)
        if not self.betas or any(b < 0 for b in self.betas):
            raise ValueError(f"MsSsimMetricConfig.betas must be a non-empty list of values >= 0, got {self.betas!r}")
        object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))

    def with_channels(self, channels: int) -> MsSsimMetricConfig:
        """A copy with `channels` set.

        Args:
            channels: The images' channels.
        """
        return replace(self, channels=channels)

    def with_betas(self, betas: list[float]) -> MsSsimMetricConfig:
        """A copy with `betas` set.

        Args:
            betas: One exponent per scale, each >= 0.
        """
        return replace(self, betas=tuple(betas))


class MsSsimMetric(_ImageMetric):
    """`MS-SSIM (pr=…, k=…, σ=…)`: Πⱼ csⱼ^βⱼ (SSIM at the last scale) per channel, reflection-padded
    windows, 2×2 average pooling between scales; channel mean, then batch mean.

    Args:
        config: Its settings.
        device: Unused (Burn's signature).
    """

    config: MsSsimMetricConfig

    def __init__(self, config: MsSsimMetricConfig, device: Any = None) -> None:  # device: Burn's signature
        super().__init__(config)

    def _label(self, config: MsSsimMetricConfig) -> str:
        return f"MS-SSIM (pr={_f32(config.pixel_range)}, k={config.kernel_size}, σ={_f32(config.sigma)})"

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        cfg = self.config
        x, y = self._images(item)
        if x.shape[1] != cfg.channels:
            raise ValueError(f"{self.name}: input has {x.shape[1]} channels but the metric was configured for "
                             f"{cfg.channels} (MsSsimMetricConfig.with_channels)")
        min_size = cfg.kernel_size * 2 ** (len(cfg.betas) - 1)
        if min(x.shape[2:]) < min_size:
            raise ValueError(f"{self.name}: images {tuple(x.shape[2:])} must be at least {min_size} pixels for "
                             f"{len(cfg.betas)} scales with kernel_size={cfg.kernel_size}: use larger images, a smaller "
                             "kernel_size or fewer betas")
        c1, c2 = (cfg.k1 * cfg.pixel_range) ** 2, (cfg.k2 * cfg.pixel_range) ** 2
        kernel = gaussian_kernel(cfg.kernel_size, cfg.sigma)
        score = torch.ones(x.shape[:2], dtype=x.dtype, device=x.device)
        for j, beta in enumerate(cfg.betas):
            luminance, contrast_structure = _ssim_terms(x, y, kernel, c1, c2, True)
            last = j == len(cfg.betas) - 1
            term = luminance * contrast_structure if last else contrast_structure
            score = score * term.mean(dim=(2, 3)).clamp_min(0.0).pow(beta)
            if not last:
                x, y = F.avg_pool2d(x, 2, 2), F.avg_pool2d(y, 2, 2)
        return score.mean(dim=1).mean(), x.shape[0]
