"""LPIPS (Burn 0.21, burn-train `metric/vision/lpips/`): `LpipsConfig`, `LpipsNet`, the `Lpips`
module, and `LpipsMetric`, which feeds it a fit's images.

LPIPS is the learned perceptual distance of "The Unreasonable Effectiveness of Deep Features as a
Perceptual Metric" (https://arxiv.org/abs/1801.03924): each image goes through a backbone (VGG16,
AlexNet or SqueezeNet); each layer's features are unit-normalised over the channels, their squared
difference weighted per channel by a learned 1×1 convolution and averaged over the pixels; the
layers' values are summed. Inputs in [0, 1] are mapped to [-1, 1] first (`normalize`, Burn's
default), then shifted and scaled as the reference code does. The network is torchmetrics'
(`torchmetrics.functional.image.lpips`), built with random weights: its normalisation divides by
√(Σx² + 1e-8) where Burn clamps √(Σx²) at 1e-10, which only differs for all-but-zero features.

Weights. Burn downloads two files on first use (`weights.rs`); burnlike reads them from paths you
give and never downloads anything:

- the backbone's ImageNet weights (`backbone`), as torchvision publishes them:
  VGG16 https://download.pytorch.org/models/vgg16-397923af.pth,
  AlexNet https://download.pytorch.org/models/alexnet-owt-4df8aa71.pth,
  SqueezeNet 1.1 https://download.pytorch.org/models/squeezenet1_1-f364aa15.pth
  (Burn's addresses; torchvision's current files, `alexnet-owt-7be5be79.pth` and
  `squeezenet1_1-b8a52dc0.pth`, have the same layout);
- the LPIPS linear layers (`weights`), version 0.1 of
  https://github.com/richzhang/PerceptualSimilarity (`lpips/weights/v0.1/{vgg,alex,squeeze}.pth`).
  torchmetrics installs a copy of these (`torchmetrics/functional/image/lpips_models/`), read when
  `weights` is not given.

`LpipsMetric` is burnlike's: Burn 0.21 has the module but no `Metric` over it. It scores a fit's
output images against its targets: the mean distance per image, weighted by batch size, lower is
better.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import cast

import torch
from torch import Tensor, nn
from torchmetrics.functional.image.lpips import ScalingLayer, _NoTrainLpips

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


class LpipsNet(str, Enum):
    """Burn's `LpipsNet::{Vgg, Alex, Squeeze}`: the backbone."""

    Vgg = "Vgg"
    Alex = "Alex"
    Squeeze = "Squeeze"


_TORCHMETRICS_NAME = {LpipsNet.Vgg: "vgg", LpipsNet.Alex: "alex", LpipsNet.Squeeze: "squeeze"}
_BACKBONE_NAME = {LpipsNet.Vgg: "VGG16", LpipsNet.Alex: "AlexNet", LpipsNet.Squeeze: "SqueezeNet 1.1"}
MIN_SIZE = {LpipsNet.Vgg: 16, LpipsNet.Alex: 31, LpipsNet.Squeeze: 17}  # smallest image side each backbone takes

LPIPS_VGG_URL = "https://github.com/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/vgg.pth"
LPIPS_ALEX_URL = "https://github.com/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/alex.pth"
LPIPS_SQUEEZE_URL = "https://github.com/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/squeeze.pth"
VGG16_IMAGENET_URL = "https://download.pytorch.org/models/vgg16-397923af.pth"
ALEXNET_IMAGENET_URL = "https://download.pytorch.org/models/alexnet-owt-4df8aa71.pth"
SQUEEZENET_IMAGENET_URL = "https://download.pytorch.org/models/squeezenet1_1-f364aa15.pth"


def get_lpips_weights_url(net: LpipsNet) -> str:
    """Where the LPIPS linear-layer weights of `net` are published (Burn's function; burnlike only
    names the address).

    Args:
        net: The backbone.
    """
    return {LpipsNet.Vgg: LPIPS_VGG_URL, LpipsNet.Alex: LPIPS_ALEX_URL, LpipsNet.Squeeze: LPIPS_SQUEEZE_URL}[
        LpipsNet(net)]


def get_backbone_weights_url(net: LpipsNet) -> str:
    """Where the ImageNet weights of `net`'s backbone are published (Burn's function).

    Args:
        net: The backbone.
    """
    return {LpipsNet.Vgg: VGG16_IMAGENET_URL, LpipsNet.Alex: ALEXNET_IMAGENET_URL,
            LpipsNet.Squeeze: SQUEEZENET_IMAGENET_URL}[LpipsNet(net)]


def bundled_weights(net: LpipsNet) -> Path:
    """The copy of the LPIPS linear layers of `net` that torchmetrics installs."""
    import torchmetrics.functional.image.lpips as tm_lpips

    return Path(tm_lpips.__file__).parent / "lpips_models" / f"{_TORCHMETRICS_NAME[LpipsNet(net)]}.pth"


@config
class LpipsConfig:
    """Burn's `LpipsConfig`: the backbone (`net`, VGG16 by default) and `normalize` (inputs in
    [0, 1], mapped to [-1, 1]; False: inputs already in [-1, 1])."""

    net: LpipsNet = LpipsNet.Vgg  # the backbone
    normalize: bool = True  # inputs in [0, 1], mapped to [-1, 1]; False: inputs already in [-1, 1]

    def init(self, device: torch.device | str | None = None) -> Lpips:
        """An `Lpips` with random weights (Burn's `init`).

        Args:
            device: Where the network is moved; None: the CPU.
        """
        return Lpips(self.net, self.normalize).to(device)

    def init_pretrained(self, backbone: PathLike, weights: PathLike | None = None,
                        device: torch.device | str | None = None) -> Lpips:
        """An `Lpips` with the published weights, read from local files: `backbone` (the
        backbone's ImageNet state dict, see `get_backbone_weights_url`) and `weights` (the LPIPS
        linear layers, see `get_lpips_weights_url`; torchmetrics' copy when None). Burn's
        `init_pretrained` downloads them; this never does.

        Args:
            backbone: The backbone's ImageNet weights. A local file: a PyTorch state dict (`.pt`/`.pth`) or
                `.safetensors`.
            weights: The LPIPS linear layers; None: torchmetrics' copy.
            device: Where the network is moved; None: the CPU.

        Raises:
            WeightsError: A file that is not those weights, naming the key.
            FileNotFoundError: A file that isn't there.
        """
        return Lpips(self.net, self.normalize).load_weights(backbone, weights).to(device)


class Lpips(nn.Module):
    """Burn's `Lpips`: `forward(input, target, reduction)` is the reduced distance (a 0-dim tensor,
    Burn's is of shape [1]), `forward_no_reduction(input, target)` one distance per image [B].
    Images are [B, 3, H, W]. The module stays in eval mode and holds no gradients.

    Args:
        net: The backbone.
        normalize: Inputs in [0, 1], mapped to [-1, 1]; False: inputs already in [-1, 1].

    Attributes:
        net: The backbone.
        normalize: Whether inputs are mapped from [0, 1].
        model: torchmetrics' LPIPS network (backbone and linear layers).
    """

    def __init__(self, net: LpipsNet = LpipsNet.Vgg, normalize: bool = True) -> None:
        super().__init__()
        self.net = LpipsNet(net)
        self.normalize = normalize
        # random backbone and linear layers (`pnet_rand`, not `pretrained`): nothing is downloaded;
        # the dropout layer before each 1×1 convolution (inactive in eval) gives the published keys.
        # Built on the meta device: torchvision builds (and initialises) the whole classifier, of
        # which LPIPS keeps only the features; those are then allocated and initialised here.
        with torch.device("meta"):
            model = _NoTrainLpips(pretrained=False, net=_TORCHMETRICS_NAME[self.net],  # type: ignore[arg-type]
                                  pnet_rand=True, use_dropout=True)
        self.model = model.to_empty(device="cpu")
        self.model.scaling_layer = ScalingLayer()  # constants its __init__ made on the meta device
        for module in self.model.modules():
            if any(True for _ in module.parameters(recurse=False)):
                module.reset_parameters()  # type: ignore[operator]
        self.eval().requires_grad_(False)

    def train(self, mode: bool = True) -> Lpips:
        """Always in eval mode: the backbone's dropout is never on.

        Args:
            mode: Ignored (torch's signature).
        """
        return super().train(False)

    def load_weights(self, backbone: PathLike, weights: PathLike | None = None) -> Lpips:
        """Read the backbone's ImageNet state dict from `backbone` and the LPIPS linear layers from
        `weights` (torchmetrics' copy when None); see the module docstring for where they are
        published. Keys or shapes that don't match raise `WeightsError` before anything is copied.

        Args:
            backbone: The backbone's ImageNet weights. A local file: a PyTorch state dict (`.pt`/`.pth`) or
                `.safetensors`.
            weights: The LPIPS linear layers; None: torchmetrics' copy.

        Returns:
            The module itself.
        """
        name = _BACKBONE_NAME[self.net]
        what = f"the {name} ImageNet weights torchvision publishes ({get_backbone_weights_url(self.net)})"
        backbone_state = read_state_dict(backbone, what)
        # torchmetrics slices torchvision's `features` Sequential, keeping each layer's index:
        # net.slice2.3.weight (net.slices.1.3.… for SqueezeNet) is features.3.weight
        targets = {}
        for key, tensor in tensors(self.model.net).items():
            parts = key.split(".")
            index = 2 if parts[0] == "slices" else 1
            targets["features." + ".".join(parts[index:])] = tensor
        what_lin = (f"the LPIPS {self.net.value} linear layers, version 0.1 "
                    f"({get_lpips_weights_url(self.net)})")
        lin_path = bundled_weights(self.net) if weights is None else weights
        lin_state = read_state_dict(lin_path, what_lin)
        lins = {k: v for k, v in tensors(self.model).items() if k.startswith("lin")}
        check(targets, backbone_state, backbone, what, ignored=("classifier.",))
        check(lins, lin_state, lin_path, what_lin)
        copy_into(targets, backbone_state)
        copy_into(lins, lin_state)
        return self

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:
        """The distance of each pair of images, [B].

        Args:
            input: Images `[B, 3, H, W]`.
            target: Images of the same shape.
        """
        check_images(f"LPIPS ({self.net.value})", input, target, MIN_SIZE[self.net])
        with torch.no_grad():
            distance: Tensor = self.model(input, target, normalize=self.normalize)
        return distance.reshape(input.shape[0])

    def forward(self, input: Tensor, target: Tensor, reduction: Reduction | str = Reduction.Mean) -> Tensor:
        """The reduced distance (Burn's `forward(input, target, reduction)`), a 0-dim tensor.

        Args:
            input: Images `[B, 3, H, W]`.
            target: Images of the same shape.
            reduction: `Reduction.Mean` (the default) or `Sum` over the batch.
        """
        distance = self.forward_no_reduction(input, target)
        return distance.sum() if Reduction(reduction) is Reduction.Sum else distance.mean()


class LpipsMetric(ImageDistanceMetric):
    """`LPIPS (Vgg)` (or `Alex`, `Squeeze`): the LPIPS distance of each output image to its target,
    averaged over the batch and weighted by batch size (burnlike's metric over Burn's module).

    `LpipsMetric(LpipsConfig().with_net(LpipsNet.Alex).init_pretrained(backbone="alexnet-owt-4df8aa71.pth"))`.
    The network runs in float32, outside autocast, without gradients, on the images' device; it is
    not a submodule of the training module (not in its checkpoints or summary).

    Args:
        lpips: The network (`LpipsConfig().init_pretrained(...)`).

    Raises:
        TypeError: `lpips` is not an `Lpips`.
    """

    def __init__(self, lpips: Lpips) -> None:
        if not isinstance(lpips, Lpips):
            raise TypeError(f"LpipsMetric expects an Lpips module (LpipsConfig().init_pretrained(...)), "
                            f"got {type(lpips).__name__}")
        super().__init__(lpips, f"LPIPS ({lpips.net.value})", MIN_SIZE[lpips.net])

    @property
    def lpips(self) -> Lpips:
        """The network."""
        return cast(Lpips, self._network.module)

    def clone(self) -> LpipsMetric:
        """A fresh metric sharing the (frozen) network."""
        return LpipsMetric(self.lpips).with_name(self.name)
