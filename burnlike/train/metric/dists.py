"""DISTS (Burn 0.21, burn-train `metric/vision/dists/`): `DistsConfig`, the `Dists` module, and
`DistsMetric`, which feeds it a fit's images.

DISTS ("Image Quality Assessment: Unifying Structure and Texture Similarity",
https://arxiv.org/abs/2004.07728) compares VGG16 features, with L2 pooling (a normalised Hanning
window over the squared features, then the square root) in place of max pooling. For each of six
stages (the input after ImageNet normalisation, then relu1_2, relu2_2, relu3_3, relu4_3, relu5_3)
and each channel, the spatial means give a structure term (2μxμy + c)/(μx² + μy² + c) and the
variances and covariance a texture term (2σxy + c)/(σx² + σy² + c), c = 1e-6.

burnlike computes Burn's formula, in plain torch: the distance is
Σ α·(1 - structure) / Σ α + Σ β·(1 - texture) / Σ β, the structure and texture distances each
normalised by their own weights, between 0 and 2. The paper's (and torchmetrics') score is
1 - (Σ α·structure + Σ β·texture) / (Σ α + Σ β), between 0 and 1, half of Burn's when Σ α = Σ β;
its first stage is the raw input, where Burn's (and burnlike's) is the normalised one.

Weights. Burn downloads two files on first use (`weights.rs`); burnlike reads them from paths you
give and never downloads anything:

- VGG16's ImageNet weights (`backbone`), as torchvision publishes them:
  https://download.pytorch.org/models/vgg16-397923af.pth (only `features.*` is used);
- the DISTS α and β (`weights`): https://github.com/dingkeyan93/DISTS/raw/master/DISTS_pytorch/weights.pt
  (`alpha` and `beta`, [1, 1475, 1, 1] each). torchmetrics ≥ 1.7 installs a copy of this file
  (`torchmetrics/functional/image/dists_models/weights.pt`), read when `weights` is not given.

`DistsMetric` is burnlike's: Burn 0.21 has the module but no `Metric` over it. It scores a fit's
output images against its targets: the mean distance per image, weighted by batch size, lower is
better.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config
from burnlike.nn.loss import Reduction
from burnlike.train.metric.pretrained import (
    ImageDistanceMetric,
    PathLike,
    check,
    check_images,
    copy_into,
    read_state_dict,
    tensors,
)

DISTS_WEIGHTS_URL = "https://github.com/dingkeyan93/DISTS/raw/master/DISTS_pytorch/weights.pt"
VGG16_IMAGENET_URL = "https://download.pytorch.org/models/vgg16-397923af.pth"
CHANNELS = (3, 64, 128, 256, 512, 512)  # the six stages' channels
C1 = 1e-6  # structure term's constant
C2 = 1e-6  # texture term's constant
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# VGG16's `features` up to relu5_3 (torchvision's layer indices): 3×3 convolutions, "P" a pooling
_VGG16 = (64, 64, "P", 128, 128, "P", 256, 256, 256, "P", 512, 512, 512, "P", 512, 512, 512)


def bundled_weights() -> Path:
    """The copy of the DISTS α and β that torchmetrics (≥ 1.7) installs."""
    import torchmetrics.functional.image as tm_image

    return Path(tm_image.__file__).parent / "dists_models" / "weights.pt"


def hanning_kernel(size: int = 5) -> Tensor:
    """Burn's L2-pooling window: the outer product of a `size`-point Hanning window (zero at both
    ends), normalised to sum 1."""
    n = torch.arange(size, dtype=torch.float64)
    window = 0.5 * (1 - torch.cos(2 * math.pi * n / (size - 1))) if size > 1 else torch.ones(1, dtype=torch.float64)
    kernel = torch.outer(window, window)
    return (kernel / kernel.sum()).float()


class L2Pool2d(nn.Module):
    """Burn's `L2Pool2d`: √(Hanning-window sum of x²), per channel, stride 2 (kernel 5, padding 2);
    the square root's argument is clamped at 1e-10."""

    kernel: Tensor

    def __init__(self, channels: int, kernel_size: int = 5, stride: int = 2, padding: int = 2) -> None:
        super().__init__()
        self.stride, self.padding = stride, padding
        kernel = hanning_kernel(kernel_size).reshape(1, 1, kernel_size, kernel_size).repeat(channels, 1, 1, 1)
        self.register_buffer("kernel", kernel, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        pooled = F.conv2d(x * x, self.kernel.to(x.dtype), stride=self.stride, padding=self.padding, groups=x.shape[1])
        return pooled.clamp_min(1e-10).sqrt()


def _vgg16_l2pool() -> nn.Sequential:
    """VGG16's convolutions and ReLUs at torchvision's indices (`features.N` of its weights), L2
    pooling where VGG16 max-pools."""
    layers: list[nn.Module] = []
    channels = 3
    for spec in _VGG16:
        if spec == "P":
            layers.append(L2Pool2d(channels))
        else:
            assert isinstance(spec, int)
            layers += [nn.Conv2d(channels, spec, 3, padding=1), nn.ReLU()]
            channels = spec
    return nn.Sequential(*layers)


_TAPS = (3, 8, 15, 22, 29)  # the ReLU after which each stage's features are taken


@config
class DistsConfig:
    """Burn's `DistsConfig`: `normalize` applies ImageNet normalisation to the input images
    (inputs in [0, 1])."""

    normalize: bool = True  # apply ImageNet normalisation to the input images (inputs in [0, 1])

    def init(self, device: torch.device | str | None = None) -> Dists:
        """A `Dists` with a random VGG16 and α = β = 0.1 (Burn's `init`).

        Args:
            device: Where the network is moved; None: the CPU.
        """
        return Dists(self.normalize).to(device)

    def init_pretrained(self, backbone: PathLike, weights: PathLike | None = None,
                        device: torch.device | str | None = None) -> Dists:
        """A `Dists` with the published weights, read from local files: `backbone` (VGG16's
        ImageNet state dict, `VGG16_IMAGENET_URL`) and `weights` (α and β, `DISTS_WEIGHTS_URL`;
        torchmetrics' copy when None). Burn's `init_pretrained` downloads them; this never does.

        Args:
            backbone: VGG16's ImageNet weights. A local file: a PyTorch state dict (`.pt`/`.pth`) or
                `.safetensors`.
            weights: The DISTS α and β; None: torchmetrics' copy.
            device: Where the network is moved; None: the CPU.

        Raises:
            WeightsError: A file that is not those weights, naming the key.
            FileNotFoundError: A file that isn't there.
        """
        return Dists(self.normalize).load_weights(backbone, weights).to(device)


class Dists(nn.Module):
    """Burn's `Dists`: `forward(input, target, reduction)` is the reduced distance (a 0-dim tensor,
    Burn's is of shape [1]), `forward_no_reduction(input, target)` one distance per image [B].
    Images are [B, 3, H, W]. The module stays in eval mode and holds no gradients.

    Args:
        normalize: Apply ImageNet normalisation to the input images (inputs in [0, 1]).

    Attributes:
        normalize: Whether inputs are normalised.
        features: VGG16's convolutions with L2 pooling (torchvision's `features.N` indices).
        alpha: The structure terms' weights, one per channel of the six stages (1475).
        beta: The texture terms' weights, one per channel.
    """

    mean: Tensor
    """ImageNet's channel means, `[1, 3, 1, 1]` (a non-persistent buffer)."""
    std: Tensor
    """ImageNet's channel standard deviations, `[1, 3, 1, 1]` (a non-persistent buffer)."""

    def __init__(self, normalize: bool = True) -> None:
        super().__init__()
        self.normalize = normalize
        self.features = _vgg16_l2pool()
        total = sum(CHANNELS)
        self.alpha = nn.Parameter(torch.full((total,), 0.1))
        self.beta = nn.Parameter(torch.full((total,), 0.1))
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).reshape(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).reshape(1, 3, 1, 1), persistent=False)
        self.eval().requires_grad_(False)

    def load_weights(self, backbone: PathLike, weights: PathLike | None = None) -> Dists:
        """Read VGG16's ImageNet state dict from `backbone` and α, β from `weights` (torchmetrics'
        copy when None); see the module docstring for where they are published. Keys or shapes that
        don't match raise `WeightsError` before anything is copied.

        Args:
            backbone: VGG16's ImageNet weights. A local file: a PyTorch state dict (`.pt`/`.pth`) or
                `.safetensors`.
            weights: The DISTS α and β; None: torchmetrics' copy.

        Returns:
            The module itself.
        """
        what = f"the VGG16 ImageNet weights torchvision publishes ({VGG16_IMAGENET_URL})"
        backbone_state = read_state_dict(backbone, what)
        targets = {f"features.{key}": tensor for key, tensor in tensors(self.features).items()}
        what_ab = f"the DISTS alpha and beta ({DISTS_WEIGHTS_URL})"
        ab_path = bundled_weights() if weights is None else weights
        ab_state = read_state_dict(ab_path, what_ab)
        published = (1, sum(CHANNELS), 1, 1)  # the file's layout; Burn's parameters are flat
        ab_state = {k: v.reshape(-1) if v.shape == published else v for k, v in ab_state.items()}
        ab_targets = {"alpha": self.alpha, "beta": self.beta}
        check(targets, backbone_state, backbone, what, ignored=("classifier.",))
        check(ab_targets, ab_state, ab_path, what_ab)
        copy_into(targets, backbone_state)
        copy_into(ab_targets, ab_state)
        return self

    def stages(self, x: Tensor) -> list[Tensor]:
        """The six stages' features of images `x` (already normalised).

        Args:
            x: Images `[B, 3, H, W]`.
        """
        out = [x]
        for i, layer in enumerate(self.features):
            x = layer(x)
            if i in _TAPS:
                out.append(x)
        return out

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:
        """The distance of each pair of images, [B].

        Args:
            input: Images `[B, 3, H, W]`.
            target: Images of the same shape.
        """
        check_images("DISTS", input, target)
        with torch.no_grad():
            if self.normalize:
                input, target = (input - self.mean) / self.std, (target - self.mean) / self.std
            alpha, beta = self.alpha, self.beta
            structure = input.new_zeros(input.shape[0])
            texture = input.new_zeros(input.shape[0])
            offset = 0
            for fx, fy in zip(self.stages(input), self.stages(target)):
                c = fx.shape[1]
                x, y = fx.flatten(2), fy.flatten(2)  # [B, C, H·W]
                mx, my = x.mean(dim=2), y.mean(dim=2)
                vx = ((x * x).mean(dim=2) - mx * mx).clamp_min(0.0)
                vy = ((y * y).mean(dim=2) - my * my).clamp_min(0.0)
                cov = (x * y).mean(dim=2) - mx * my
                s = (2 * mx * my + C1) / (mx * mx + my * my + C1)
                t = (2 * cov + C2) / (vx + vy + C2)
                structure = structure + ((1 - s) * alpha[offset:offset + c]).sum(dim=1)
                texture = texture + ((1 - t) * beta[offset:offset + c]).sum(dim=1)
                offset += c
            return structure / alpha.sum() + texture / beta.sum()

    def forward(self, input: Tensor, target: Tensor, reduction: Reduction | str = Reduction.Mean) -> Tensor:
        """The reduced distance (Burn's `forward(input, target, reduction)`), a 0-dim tensor.

        Args:
            input: Images `[B, 3, H, W]`.
            target: Images of the same shape.
            reduction: `Reduction.Mean` (the default) or `Sum` over the batch.
        """
        distance = self.forward_no_reduction(input, target)
        return distance.sum() if Reduction(reduction) is Reduction.Sum else distance.mean()


class DistsMetric(ImageDistanceMetric):
    """`DISTS`: the DISTS distance of each output image to its target, averaged over the batch and
    weighted by batch size (burnlike's metric over Burn's module).

    `DistsMetric(DistsConfig().init_pretrained(backbone="vgg16-397923af.pth"))`. The network runs
    in float32, outside autocast, without gradients, on the images' device; it is not a submodule
    of the training module (not in its checkpoints or summary).

    Args:
        dists: The network (`DistsConfig().init_pretrained(...)`).

    Raises:
        TypeError: `dists` is not a `Dists`.
    """

    def __init__(self, dists: Dists) -> None:
        if not isinstance(dists, Dists):
            raise TypeError(f"DistsMetric expects a Dists module (DistsConfig().init_pretrained(...)), "
                            f"got {type(dists).__name__}")
        super().__init__(dists, "DISTS")

    @property
    def dists(self) -> Dists:
        """The network."""
        return cast(Dists, self._network.module)

    def clone(self) -> DistsMetric:
        """A fresh metric sharing the (frozen) network."""
        return DistsMetric(self.dists).with_name(self.name)
