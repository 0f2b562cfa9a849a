"""The pretrained networks of the perceptual metrics (FID, LPIPS, DISTS): their weights read from
local files, and the network kept out of the training module that holds the metric.

Burn 0.21 downloads these weights on first use (burn-train `metric/vision/*/weights.rs`);
burnlike never does. A file is a PyTorch state dict (`.pt`/`.pth`, read with
`torch.load(weights_only=True)`, never unpickled beyond tensors) or a `.safetensors` file (with the
`safetensors` package). A missing file, another kind of file, or a state dict whose keys or shapes
are not the network's raises `WeightsError` (or `FileNotFoundError`) naming the file, the key and
what was expected, before any tensor is copied.

A metric's network is not a submodule of the metric: Lightning would otherwise train-mode it, save it
in every checkpoint, count it in the model summary and hand it to DDP. `Held` keeps it frozen, in
eval mode, and moves it to the device of the images it is given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import torch
from torch import Tensor, nn

from burnlike.record.format.registry import torch_format
from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import IMAGE

PathLike = str | os.PathLike[str]
M = TypeVar("M", bound=nn.Module)
SHOWN_KEYS = 5  # keys an error lists before saying how many more
REASON_CHARS = 300  # characters of a loader's own error an error repeats


class WeightsError(ValueError):
    """A weights file that is not the network's: names the file, the key(s) and what was expected."""


def _is_safetensors(path: Path) -> bool:
    """A safetensors file: an 8-byte little-endian header length, then a JSON header."""
    with path.open("rb") as f:
        head = f.read(9)
    if len(head) < 9:
        return False
    size = int.from_bytes(head[:8], "little")
    return 0 < size < 100_000_000 and head[8:9] == b"{"


def read_state_dict(path: PathLike, what: str) -> dict[str, Tensor]:
    """The tensors of the state dict in `path` (on the CPU); `what` says which weights are expected,
    for the errors."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no such file (expected {what}; burnlike never downloads weights)")
    if file.suffix == ".safetensors" or _is_safetensors(file):
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise WeightsError(f"{file}: a safetensors file needs the 'safetensors' package "
                               "(pip install safetensors)") from None
        try:
            return dict(load_file(str(file), device="cpu"))
        except Exception as e:  # noqa: BLE001 - safetensors' own errors, reported with the file
            raise WeightsError(f"{file}: not a valid safetensors file ({type(e).__name__}: {e}); "
                               f"expected {what}") from None
    if torch_format(file) is None:
        raise WeightsError(f"{file}: neither a PyTorch state dict (.pt/.pth) nor a safetensors file; expected {what}")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any refusal of the weights-only loader names the file
        raise WeightsError(f"{file}: torch's weights_only loader refused it ({type(e).__name__}: {_reason(e)}); "
                           f"expected {what}") from None
    if not isinstance(state, Mapping) or not all(isinstance(k, str) and isinstance(v, Tensor)
                                                 for k, v in state.items()):
        raise WeightsError(f"{file}: holds a {type(state).__name__}, not a state dict of named tensors; "
                           f"expected {what}")
    return dict(state)


def _reason(error: Exception) -> str:
    """The gist of a loader's error: the unpickler's own line (torch wraps it in advice to load the
    file without `weights_only`, which burnlike never does), else its first line, cut short."""
    text = str(error)
    found = re.search(r"WeightsUnpickler error: ([^\n]*)", text)
    line = found.group(1).split(" Please use")[0] if found else text.strip().split("\n")[0]
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS] + "…"


def _listed(keys: list[str]) -> str:
    shown = ", ".join(repr(k) for k in keys[:SHOWN_KEYS])
    more = f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
    return f"key{'s' if len(keys) > 1 else ''} {shown}{more}"


def check(targets: Mapping[str, Tensor], state: Mapping[str, Tensor], path: PathLike, what: str, *,
          ignored: Iterable[str] = (), optional: Iterable[str] = ()) -> None:
    """That `state` has a tensor of the right shape for each of `targets` (parameters and buffers by
    key) and nothing else. File keys starting with an `ignored` prefix (a classifier head the metric
    doesn't use) are allowed; target keys ending with an `optional` suffix may be absent (BatchNorm's
    `num_batches_tracked` in files older than it)."""
    ignored, optional = tuple(ignored), tuple(optional)
    missing = [k for k in targets if k not in state and not (optional and k.endswith(optional))]
    if missing:
        raise WeightsError(f"{path}: missing {_listed(missing)} (expected {what})")
    unexpected = [k for k in state if k not in targets and not (ignored and k.startswith(ignored))]
    if unexpected:
        raise WeightsError(f"{path}: unexpected {_listed(unexpected)} (expected {what})")
    for key, target in targets.items():
        if key in state and state[key].shape != target.shape:
            raise WeightsError(f"{path}: key {key!r} has shape {tuple(state[key].shape)}, expected "
                               f"{tuple(target.shape)} ({what})")


def copy_into(targets: Mapping[str, Tensor], state: Mapping[str, Tensor]) -> None:
    """Copy each of `state`'s tensors into the target of its key (after `check`)."""
    with torch.no_grad():
        for key, target in targets.items():
            if key in state:
                target.copy_(state[key].to(target.dtype))


def tensors(module: nn.Module) -> dict[str, Tensor]:
    """A module's persistent parameters and buffers by state-dict key (the tensors themselves)."""
    named: dict[str, Tensor] = dict(module.named_parameters())
    named.update(dict(module.named_buffers()))
    return {key: named[key] for key in module.state_dict() if key in named}


class Held(Generic[M]):
    """A frozen network a metric uses without owning it as a submodule."""

    def __init__(self, module: M) -> None:
        module.eval().requires_grad_(False)
        self.module = module

    def on(self, device: torch.device) -> M:
        """The network, moved to `device` first if it is elsewhere (once: it stays there)."""
        first: Tensor | None = next(iter(self.module.parameters()), None)
        if first is None:
            first = next(iter(self.module.buffers()), None)
        if first is not None and first.device != device:
            self.module.to(device)
        return self.module


class DistanceNetwork(Protocol):
    """A frozen network giving one distance per image pair (LPIPS, DISTS)."""

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor: ...


def check_images(name: str, input: Tensor, target: Tensor, min_size: int = 1) -> None:
    """Output and target images of one shape, RGB [batch, 3, height, width], at least `min_size` wide."""
    if input.shape != target.shape:
        raise ValueError(f"{name}: images {tuple(input.shape)} and {tuple(target.shape)} differ in shape")
    if input.dim() != 4 or input.shape[1] != 3:
        raise ValueError(f"{name}: expects RGB images [batch, 3, height, width], got {tuple(input.shape)}")
    if min(input.shape[2:]) < min_size:
        raise ValueError(f"{name}: images {tuple(input.shape[2:])} are smaller than the backbone's "
                         f"{min_size}×{min_size} pixels")


D = TypeVar("D", bound="ImageDistanceMetric")


class ImageDistanceMetric(Metric):
    """Each output image's distance to its target through a held network (LPIPS, DISTS), averaged
    over the batch and weighted by batch size. The network runs in float32, outside autocast, on
    the images' device; it is not a submodule (not in checkpoints or the summary), yet moves with
    the training module (before a CUDA-graph capture)."""

    input = IMAGE
    higher_is_better = False

    def __init__(self, network: nn.Module, name: str, min_size: int = 1) -> None:
        super().__init__()
        self._network = Held(network)
        self.name = name
        self.min_size = min_size
        """The smallest image side the network takes."""

    def with_name(self: D, name: str) -> D:
        """Burn's `with_name`: log and show it under `name`; the metric itself.

        Args:
            name: The name.
        """
        self.name = name
        return self

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        x, y = item.output.detach().float(), item.targets.detach().float()
        check_images(self.name, x, y, self.min_size)
        network = cast(DistanceNetwork, self._network.on(x.device))
        with torch.autocast(x.device.type, enabled=False):
            distance = network.forward_no_reduction(x, y)
        return distance.mean(), x.shape[0]

    def _apply(self: D, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> D:
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]  # torch leaves it untyped
        self._network.on(self.mean.device)
        return self
