"""FID (Burn 0.21, burn-train `metric/vision/fid/`): `FidConfig`, the `Fid` module with its
`InceptionV3FeatureExtractor`, and `FidMetric`, the FID of a whole epoch's images.

The Fréchet Inception Distance (https://arxiv.org/abs/1706.08500) compares two sets of images
through the 2048 pooled features of an InceptionV3: with μ and Σ the mean and (unbiased) covariance
of each set's features, FID = |μ₁ - μ₂|² + tr(Σ₁ + Σ₂ - 2 (Σ₁Σ₂)^½). It is a statistic of the two
sets, not of a batch: lower is better.

The network is pytorch-fid's InceptionV3 (its blocks average-pool without counting the padding, and
the last one max-pools), as Burn builds it in `inception.rs`. As in Burn, images in [0, 1] are
normalised with ImageNet's mean and std (`normalize`, the default; pytorch-fid maps them to [-1, 1]
instead) and resized to 299×299 bilinearly with aligned corners. The Fréchet distance is
torchmetrics' (`FrechetInceptionDistance`, given this network as its `feature` module; torch-fidelity
is not needed): sums of the features and of their outer products in float64, the square-root term
from the eigenvalues of Σ₁Σ₂. Burn takes matrix square roots by Newton–Schulz iterations
(`FidConfig.num_iterations`) after adding 1e-6 × the mean variance to both diagonals; burnlike keeps
the field, for Burn's config files, but does not use it.

Weights. Burn downloads pytorch-fid's InceptionV3 weights on first use (`weights.rs`); burnlike reads
them from a path you give and never downloads anything. pytorch-fid publishes them as
https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/pt_inception-2015-12-05-6726825d.pth
(Burn 0.21's `weights.rs` spells the file `pt-inception-…`, with a hyphen); its `fc.*` classifier is
not used.

`FidMetric` is burnlike's: Burn 0.21 has the module but no `Metric` over it. It takes a fit's
targets as the real images and its outputs as the generated ones, accumulates the epoch's features
in torchmetrics state (summed across processes when the epoch ends), and reports one value per
epoch: the FID of all the epoch's images.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics.image.fid import FrechetInceptionDistance

from burnlike.config import config
from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.metric.pretrained import Held, PathLike, check, copy_into, read_state_dict, tensors
from burnlike.train.output import IMAGE

INCEPTION_WEIGHTS_URL = ("https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/"
                         "pt_inception-2015-12-05-6726825d.pth")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INPUT_SIZE = 299
NUM_FEATURES = 2048

Pad = int | tuple[int, int]
Kernel = int | tuple[int, int]


# InceptionV3 (pytorch-fid's; attribute names are its weight file's keys) -----------------------
class BasicConv2d(nn.Module):
    """Convolution without bias, batch norm (ε = 1e-3), ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Kernel, stride: int = 1,
                 padding: Pad = 0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.bn(self.conv(x)))


def _avg_pool(x: Tensor) -> Tensor:
    """3×3, stride 1, padding 1, the padding not counted (pytorch-fid's, Burn's)."""
    return F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)


class InceptionA(nn.Module):
    def __init__(self, in_channels: int, pool_features: int) -> None:
        super().__init__()
        self.branch1x1 = BasicConv2d(in_channels, 64, 1)
        self.branch5x5_1 = BasicConv2d(in_channels, 48, 1)
        self.branch5x5_2 = BasicConv2d(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, 64, 1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, padding=1)
        self.branch_pool = BasicConv2d(in_channels, pool_features, 1)

    def forward(self, x: Tensor) -> Tensor:
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([self.branch1x1(x), b5, b3, self.branch_pool(_avg_pool(x))], 1)


class InceptionB(nn.Module):
    def __init__(self, in_channels: int) -> None:
        super().__init__()
        self.branch3x3 = BasicConv2d(in_channels, 384, 3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, 64, 1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([self.branch3x3(x), b3, F.max_pool2d(x, 3, stride=2)], 1)


class InceptionC(nn.Module):
    def __init__(self, in_channels: int, channels_7x7: int) -> None:
        super().__init__()
        c7 = channels_7x7
        self.branch1x1 = BasicConv2d(in_channels, 192, 1)
        self.branch7x7_1 = BasicConv2d(in_channels, c7, 1)
        self.branch7x7_2 = BasicConv2d(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7_3 = BasicConv2d(c7, 192, (7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = BasicConv2d(in_channels, c7, 1)
        self.branch7x7dbl_2 = BasicConv2d(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = BasicConv2d(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = BasicConv2d(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = BasicConv2d(c7, 192, (1, 7), padding=(0, 3))
        self.branch_pool = BasicConv2d(in_channels, 192, 1)

    def forward(self, x: Tensor) -> Tensor:
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        d = self.branch7x7dbl_1(x)
        for conv in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            d = conv(d)
        return torch.cat([self.branch1x1(x), b7, d, self.branch_pool(_avg_pool(x))], 1)


class InceptionD(nn.Module):
    def __init__(self, in_channels: int) -> None:
        super().__init__()
        self.branch3x3_1 = BasicConv2d(in_channels, 192, 1)
        self.branch3x3_2 = BasicConv2d(192, 320, 3, stride=2)
        self.branch7x7x3_1 = BasicConv2d(in_channels, 192, 1)
        self.branch7x7x3_2 = BasicConv2d(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = BasicConv2d(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = BasicConv2d(192, 192, 3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return torch.cat([b3, b7, F.max_pool2d(x, 3, stride=2)], 1)


class InceptionE(nn.Module):
    """The last two blocks; `use_max_pool` in the very last one (pytorch-fid's `FIDInceptionE_2`)."""

    def __init__(self, in_channels: int, use_max_pool: bool) -> None:
        super().__init__()
        self.use_max_pool = use_max_pool
        self.branch1x1 = BasicConv2d(in_channels, 320, 1)
        self.branch3x3_1 = BasicConv2d(in_channels, 384, 1)
        self.branch3x3_2a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(in_channels, 448, 1)
        self.branch3x3dbl_2 = BasicConv2d(448, 384, 3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(in_channels, 192, 1)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_1(x)
        b3 = torch.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        d = torch.cat([self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d)], 1)
        pooled = F.max_pool2d(x, 3, stride=1, padding=1) if self.use_max_pool else _avg_pool(x)
        return torch.cat([self.branch1x1(x), b3, d, self.branch_pool(pooled)], 1)


class InceptionV3FeatureExtractor(nn.Module):
    """Burn's `InceptionV3FeatureExtractor`: images [N, 3, H, W] (resized to 299×299 bilinearly,
    corners aligned, unless already that size) to their 2048 pooled features [N, 2048]. Its attributes
    are pytorch-fid's (its weight file's keys).

    Attributes:
        Conv2d_1a_3x3: Stem, 3 → 32, stride 2.
        Conv2d_2a_3x3: Stem, 32 → 32.
        Conv2d_2b_3x3: Stem, 32 → 64, then a 3×3 max-pool.
        Conv2d_3b_1x1: Stem, 64 → 80.
        Conv2d_4a_3x3: Stem, 80 → 192, then a 3×3 max-pool.
        Mixed_5b: Inception A block, 192 → 256.
        Mixed_5c: Inception A block, 256 → 288.
        Mixed_5d: Inception A block, 288 → 288.
        Mixed_6a: Inception B block (grid reduction), 288 → 768.
        Mixed_6b: Inception C block, 768 → 768.
        Mixed_6c: Inception C block.
        Mixed_6d: Inception C block.
        Mixed_6e: Inception C block.
        Mixed_7a: Inception D block (grid reduction), 768 → 1280.
        Mixed_7b: Inception E block, 1280 → 2048.
        Mixed_7c: Inception E block with max-pooling (pytorch-fid's), 2048 → 2048.
    """

    num_features = NUM_FEATURES
    """The features per image, 2048."""

    def __init__(self) -> None:
        super().__init__()
        self.Conv2d_1a_3x3 = BasicConv2d(3, 32, 3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(32, 32, 3)
        self.Conv2d_2b_3x3 = BasicConv2d(32, 64, 3, padding=1)
        self.Conv2d_3b_1x1 = BasicConv2d(64, 80, 1)
        self.Conv2d_4a_3x3 = BasicConv2d(80, 192, 3)
        self.Mixed_5b = InceptionA(192, 32)
        self.Mixed_5c = InceptionA(256, 64)
        self.Mixed_5d = InceptionA(288, 64)
        self.Mixed_6a = InceptionB(288)
        self.Mixed_6b = InceptionC(768, 128)
        self.Mixed_6c = InceptionC(768, 160)
        self.Mixed_6d = InceptionC(768, 160)
        self.Mixed_6e = InceptionC(768, 192)
        self.Mixed_7a = InceptionD(768)
        self.Mixed_7b = InceptionE(1280, use_max_pool=False)
        self.Mixed_7c = InceptionE(2048, use_max_pool=True)

    def forward(self, x: Tensor) -> Tensor:
        """The pooled features.

        Args:
            x: Images `[N, 3, H, W]`, already normalised.

        Returns:
            `[N, 2048]`.
        """
        if x.shape[2:] != (INPUT_SIZE, INPUT_SIZE):
            x = F.interpolate(x, size=(INPUT_SIZE, INPUT_SIZE), mode="bilinear", align_corners=True)
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
        x = F.max_pool2d(x, 3, stride=2)
        x = self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x))
        x = F.max_pool2d(x, 3, stride=2)
        for block in (self.Mixed_5b, self.Mixed_5c, self.Mixed_5d, self.Mixed_6a, self.Mixed_6b, self.Mixed_6c,
                      self.Mixed_6d, self.Mixed_6e, self.Mixed_7a, self.Mixed_7b, self.Mixed_7c):
            x = block(x)
        return F.adaptive_avg_pool2d(x, 1).flatten(1)


# Burn's config and module ------------------------------------------------------------------------
@config
class FidConfig:
    """Burn's `FidConfig`: `normalize` maps images in [0, 1] to ImageNet's normalisation;
    `num_iterations` is Burn's Newton–Schulz count, kept for its config files and not used (the
    square root is torchmetrics' eigenvalue form)."""

    normalize: bool = True  # map images in [0, 1] to ImageNet's normalisation
    num_iterations: int = 50  # Burn's Newton–Schulz iterations: kept for its config files, not used

    def init(self, device: torch.device | str | None = None) -> Fid:
        """An `Fid` with a random InceptionV3 (Burn's `init`).

        Args:
            device: Where the network is moved; None: the CPU.
        """
        return Fid(self.normalize).to(device)

    def init_pretrained(self, weights: PathLike, device: torch.device | str | None = None) -> Fid:
        """An `Fid` with pytorch-fid's InceptionV3 weights, read from the local file `weights`
        (`INCEPTION_WEIGHTS_URL`). Burn's `init_pretrained` downloads them; this never does.

        Args:
            weights: pytorch-fid's InceptionV3 weights. A local file: a PyTorch state dict (`.pt`/`.pth`) or
                `.safetensors`.
            device: Where the network is moved; None: the CPU.

        Raises:
            WeightsError: A file that is not those weights, naming the key.
            FileNotFoundError: A file that isn't there.
        """
        return Fid(self.normalize).load_weights(weights).to(device)


class Fid(nn.Module):
    """Burn's `Fid`: `extract_features(images)` [N, 2048], `compute_fid(features_real,
    features_gen)` and `forward(images_real, images_gen)` (0-dim tensors; Burn's are of shape [1]).

    `extractor` replaces the InceptionV3 with another feature network (burnlike's, as
    torchmetrics' `feature`): a module from images [N, 3, H, W] to features [N, D] with an int
    `num_features` (D). The module stays in eval mode and holds no gradients.

    Args:
        normalize: Map images in [0, 1] to ImageNet's normalisation.
        extractor: The feature network; None: pytorch-fid's InceptionV3 (random until
            `load_weights`).

    Raises:
        TypeError: The extractor has no int `num_features`.

    Attributes:
        normalize: Whether images are normalised.
        extractor: The feature network.
        num_features: The features per image (D).
    """

    mean: Tensor
    """ImageNet's channel means, `[1, 3, 1, 1]` (a non-persistent buffer)."""
    std: Tensor
    """ImageNet's channel standard deviations, `[1, 3, 1, 1]` (a non-persistent buffer)."""

    def __init__(self, normalize: bool = True, extractor: nn.Module | None = None) -> None:
        super().__init__()
        self.normalize = normalize
        self.extractor = extractor if extractor is not None else InceptionV3FeatureExtractor()
        num_features = getattr(self.extractor, "num_features", None)
        if not isinstance(num_features, int) or isinstance(num_features, bool) or num_features < 1:
            raise TypeError(f"Fid: the extractor {type(self.extractor).__name__} needs an int attribute "
                            f"num_features (its feature count), got {num_features!r}")
        self.num_features = num_features
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).reshape(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).reshape(1, 3, 1, 1), persistent=False)
        self.eval().requires_grad_(False)

    def train(self, mode: bool = True) -> Fid:
        """Always in eval mode: batch norm uses its running statistics.

        Args:
            mode: Ignored (torch's signature).
        """
        return super().train(False)

    def load_weights(self, weights: PathLike) -> Fid:
        """Read pytorch-fid's InceptionV3 state dict from `weights` (see `INCEPTION_WEIGHTS_URL`).
        Keys or shapes that don't match raise `WeightsError` before anything is copied; the file's
        `fc.*` classifier is skipped, and BatchNorm's `num_batches_tracked` may be absent.

        Args:
            weights: pytorch-fid's InceptionV3 weights. A local file: a PyTorch state dict (`.pt`/`.pth`) or
                `.safetensors`.

        Returns:
            The module itself.

        Raises:
            TypeError: The extractor is not the InceptionV3.
        """
        if not isinstance(self.extractor, InceptionV3FeatureExtractor):
            raise TypeError(f"Fid.load_weights reads pytorch-fid's InceptionV3 weights; this Fid's extractor is "
                            f"a {type(self.extractor).__name__} (load its weights yourself)")
        what = f"pytorch-fid's InceptionV3 weights ({INCEPTION_WEIGHTS_URL})"
        state = read_state_dict(weights, what)
        targets = tensors(self.extractor)
        check(targets, state, weights, what, ignored=("fc.", "AuxLogits."), optional=("num_batches_tracked",))
        copy_into(targets, state)
        return self

    def extract_features(self, images: Tensor) -> Tensor:
        """The features [N, D] of images [N, 3, H, W] (in [0, 1] when `normalize`).

        Args:
            images: RGB images `[N, 3, H, W]`.
        """
        if images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"Fid: expects RGB images [batch, 3, height, width], got {tuple(images.shape)}")
        with torch.no_grad():
            if self.normalize:
                images = (images - self.mean) / self.std
            features: Tensor = self.extractor(images)
        return features

    def compute_fid(self, features_real: Tensor, features_gen: Tensor) -> Tensor:
        """The Fréchet distance between two sets of features [N, D] (at least 2 rows each).

        Args:
            features_real: The real images' features.
            features_gen: The generated images' features.
        """
        for name, features in (("features_real", features_real), ("features_gen", features_gen)):
            if features.dim() != 2 or features.shape[0] < 2:
                raise ValueError(f"Fid.compute_fid: {name} must be [N, D] with N >= 2, got {tuple(features.shape)}")
        if features_real.shape[1] != features_gen.shape[1]:
            raise ValueError(f"Fid.compute_fid: {tuple(features_real.shape)} and {tuple(features_gen.shape)} "
                             "have different feature counts")
        state = EpochFid(Features(features_real.shape[1])).to(features_real.device)
        state.update(features_real, real=True)
        state.update(features_gen, real=False)
        return state.compute()

    def forward(self, images_real: Tensor, images_gen: Tensor) -> Tensor:
        """The FID between two sets of images (Burn's `forward`), a 0-dim tensor.

        Args:
            images_real: Real images `[N, 3, H, W]`, N >= 2.
            images_gen: Generated images `[M, 3, H', W']`, M >= 2.
        """
        return self.compute_fid(self.extract_features(images_real), self.extract_features(images_gen))


# torchmetrics' FID over this network -------------------------------------------------------------
class Features(nn.Module):
    """The `feature` module torchmetrics' FID runs: `Fid.extract_features` in float32 outside
    autocast, or (without a `fid`) the identity on precomputed features."""

    def __init__(self, num_features: int, fid: Fid | None = None) -> None:
        super().__init__()
        self.num_features = num_features
        self.fid = fid

    def forward(self, x: Tensor) -> Tensor:
        if self.fid is None:
            return x
        with torch.autocast(x.device.type, enabled=False):
            return self.fid.extract_features(x.float())


class EpochFid(FrechetInceptionDistance):
    """torchmetrics' FID whose value is NaN, not an error, while either set has fewer than two
    images (after the processes' states are summed)."""

    def compute(self) -> Tensor:
        if int(self.real_features_num_samples) < 2 or int(self.fake_features_num_samples) < 2:
            return torch.tensor(float("nan"))
        value: Tensor = super().compute()
        return value


def _features_module(fid: Fid) -> Features:
    return Features(fid.num_features, fid)


def _distributed() -> bool:
    """Whether this process is one of several (its FID state is summed with theirs)."""
    return torch.distributed.is_available() and torch.distributed.is_initialized()


class FidMetric(Metric):
    """`FID`: the Fréchet distance between the epoch's target images (real) and output images
    (generated), [B, 3, H, W] in [0, 1] (with `normalize`); lower is better.

    Each step extracts both batches' features into torchmetrics state (the network runs in float32,
    outside autocast, without gradients, on the images' device; it is not a submodule of the training
    module, so not in its checkpoints or summary). The epoch's value is the FID of all its images,
    every process's (the states are summed when the epoch ends); NaN while either set has fewer than
    two images. Its log holds one line: that value and the images this process fed. No per-step
    value exists, so the progress display shows the last epoch's value. A run resumed in the middle
    of an epoch computes that epoch's FID over the images after the resume.

    `FidMetric(FidConfig().init_pretrained("pt_inception-2015-12-05-6726825d.pth"))`.

    Args:
        fid: The network (`FidConfig().init_pretrained(...)`).

    Raises:
        TypeError: `fid` is not an `Fid`.
    """

    name = "FID"
    input = IMAGE
    higher_is_better = False

    def __init__(self, fid: Fid) -> None:
        super().__init__()
        if not isinstance(fid, Fid):
            raise TypeError(f"FidMetric expects an Fid module (FidConfig().init_pretrained(...)), got {type(fid).__name__}")
        self._network = Held(fid)
        self._state = Held(EpochFid(_features_module(fid)))
        self._images = 0

    @property
    def fid(self) -> Fid:
        """The network."""
        return self._network.module

    def with_name(self, name: str) -> FidMetric:
        """Burn's `with_name`: log and show it under `name`; the metric itself.

        Args:
            name: The name.
        """
        self.name = name
        return self

    def update(self, item: Any, ctx: MetricContext) -> None:
        generated, real = item.output.detach().float(), item.targets.detach().float()
        for what, images in (("outputs", generated), ("targets", real)):
            if images.dim() != 4 or images.shape[1] != 3:
                raise ValueError(f"{self.name}: {what} must be RGB images [batch, 3, height, width], got "
                                 f"{tuple(images.shape)}")
        self._network.on(generated.device)
        state = self._state.module
        if state.device != generated.device:
            state.to(generated.device)
        state.update(real, real=True)
        state.update(generated, real=False)
        self._images += generated.shape[0]

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        raise TypeError(f"{self.name} has no per-batch value: it is the distance over all the epoch's images "
                        "(FidMetric.update feeds them, finish_epoch computes it)")

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> FidMetric:
        """Moved with the training module (to its device, never to another dtype), though not its
        submodule."""
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]  # torch leaves it untyped
        device = self.mean.device
        self._network.on(device)
        if self._state.module.device != device:
            self._state.module.to(device)
        return self

    def finish_epoch(self) -> tuple[float, list[tuple[float, float]]]:
        """The FID of the epoch's images (every process's), and its one log line."""
        state = self._state.module
        if self._images == 0 and not _distributed():
            value = float("nan")
        elif self._images == 0:  # nothing fed here, images elsewhere: join the sum, on the run's device
            if state.device != self.mean.device:
                state.to(self.mean.device)
            with warnings.catch_warnings():  # torchmetrics' "compute before update", expected here
                warnings.filterwarnings("ignore", message=r"The ``compute`` method of metric", category=UserWarning)
                value = float(state.compute())
        else:
            value = float(state.compute())
        lines = [(value, float(self._images))] if self._images else []
        self.reset()
        return value, lines

    def reset(self) -> None:
        super().reset()
        self._state.module.reset()
        self._images = 0

    def clone(self) -> FidMetric:
        """A fresh metric sharing the (frozen) network, with its own state."""
        return FidMetric(self.fid).with_name(self.name)
