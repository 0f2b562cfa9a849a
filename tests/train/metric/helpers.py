"""Inputs shared by the tests of `burnlike.train.metric`: a zero loss, an empty metric context,
confident logits for chosen classes and a classification output from plain lists; for the image
metrics (FID, LPIPS, DISTS), seeded random images, an output item that feeds them, a backbone
He-initialised and saved as torchvision publishes it, and a check that broken weight files are
refused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from burnlike.train import ClassificationOutput
from burnlike.train.metric import MetricContext, WeightsError
from burnlike.train.output import IMAGE, Adaptor

LOSS = torch.tensor(0.0)
CTX = MetricContext()


def one_hot_logits(predicted: list[int], classes: int = 3) -> torch.Tensor:
    """Logits whose argmax is `predicted` (each row one-hot, scaled by 5)."""
    return nn.functional.one_hot(torch.tensor(predicted), classes).float() * 5.0


def classification_item(logits, targets, loss=0.0) -> ClassificationOutput:
    return ClassificationOutput(torch.as_tensor(loss), torch.as_tensor(logits, dtype=torch.float32),
                                torch.as_tensor(targets))


# --- image metrics --------------------------------------------------------------------------------
@dataclass
class Images(Adaptor):
    """An output item that feeds the image metrics."""

    output: torch.Tensor
    targets: torch.Tensor
    provides = frozenset({IMAGE})


def images(seed: int, n: int = 2, size: int = 32) -> torch.Tensor:
    """`n` RGB images `size`×`size`, uniform in [0, 1), the same for the same seed."""
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def he_initialised(network: nn.Module) -> nn.Module:
    """`network` with He-normal convolution weights and biases in ±0.1, from torch's global generator:
    activations keep their scale through a deep backbone, so the distances depend on the input."""
    for layer in network.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.uniform_(layer.bias, -0.1, 0.1)
    return network


def save_as_torchvision(features: nn.Module, path: Path, classifier: dict[str, torch.Tensor]) -> Path:
    """Save `features` as torchvision publishes a backbone: `features.*` in float32, plus the
    `classifier` entries the metrics must ignore."""
    torch.save({**{f"features.{k}": v.float() for k, v in features.state_dict().items()}, **classifier}, path)
    return path


def assert_each_refused(folder: Path, cases: dict[str, tuple[dict[str, torch.Tensor], str]],
                        load: Callable[[Path], object], suffix: str = ".pth") -> None:
    """Each case's state dict, saved as `folder`/<case><suffix>, makes `load` raise a WeightsError
    that names the file, then says the case's message (a regex)."""
    for name, (state, message) in cases.items():
        file = folder / f"{name}{suffix}"
        torch.save(state, file)
        with pytest.raises(WeightsError, match=rf"^{file}: {message}"):
            load(file)
