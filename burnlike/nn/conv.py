"""Burn's convolutions (burn-nn `modules/conv/`): `Conv1dConfig(channels_in, channels_out, kernel_size)`,
`Conv2dConfig([in, out], [kh, kw])`, `Conv3dConfig([in, out], [kd, kh, kw])`,
`ConvTranspose1dConfig([in, out], k)`, `ConvTranspose2dConfig([in, out], [kh, kw])`,
`ConvTranspose3dConfig([in, out], [kd, kh, kw])`; each `init(device)` is a real `torch.nn.Conv*`.

Burn's defaults: stride 1, dilation 1, groups 1, bias, `PaddingConfig*.Valid` (torch: `padding=0`, the
same), initializer KaimingUniform(gain 1/√3) with fan_in = in/groups·k — a ±1/√fan_in bound, as
torch's. `Same` padding keeps ceil(size/stride) and pads an odd total at the end (torch's "same" only
takes stride 1). The weight is `[out, in/groups, k...]` (transposed convs: `[in, out/groups, k...]`),
stored as is in the record; geometry and padding are nil there.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.initializer import KAIMING_DEFAULT, Initializer
from burnlike.nn.padding import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d, symmetric_or_pad
from burnlike.record.format.walker import Field, FieldKind
from burnlike.record.tensor.version import is_0_19

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _check_groups(channels_in: int, channels_out: int, groups: int) -> None:
    if channels_in % groups or channels_out % groups:
        raise ValueError("Both channels must be divisible by the number of groups. Got "
                         f"channels_in={channels_in}, channels_out={channels_out}, groups={groups}")


def _geometry(version: str, dims: int, names: tuple[str, ...], arrays: bool) -> list[Field]:
    """Config fields: nil, or in Burn 0.19 an array of nils for each `[usize; N]` field."""
    kind: FieldKind = "nils" if (arrays and is_0_19(version)) else "nil"
    return [Field(name, kind, width=dims) for name in names]


class _Conv(Module):
    """What Burn's convolutions share: their init, their record, their padding."""

    weight: Any
    """The kernel: `[channels_out, channels_in/groups, k...]` (transposed: `[channels_in,
    channels_out/groups, k...]`), in the record as is."""
    bias: Any
    """`[channels_out]`, or None without a bias."""
    initializer: Initializer
    """How `reset_parameters` draws the weight and bias."""

    def _burn_init(self, fan_in: int, fan_out: int | None) -> None:
        with torch.no_grad():
            self.initializer.fill_(self.weight, fan_in, fan_out)
            if self.bias is not None:
                self.initializer.fill_(self.bias, fan_in, fan_out)

    def _weight_fields(self) -> list[Field]:
        return [Field("weight", "param", self, "weight"),
                Field("bias", "param" if self.bias is not None else "none", self, "bias", optional=True)]


class _ForwardConv(_Conv):
    _dims: int
    burn_padding: PaddingConfig1d | PaddingConfig2d | PaddingConfig3d
    """Burn's padding config (torch's own `padding` stays 0: the forward pads)."""
    kernel_size: tuple[int, ...]
    """The kernel's size per spatial dimension."""
    stride: tuple[int, ...]
    """The stride per spatial dimension."""
    dilation: tuple[int, ...]
    """The dilation per spatial dimension."""
    groups: int
    """The number of groups the channels are split into."""
    in_channels: int
    """Input channels."""
    out_channels: int
    """Output channels."""

    def reset_parameters(self) -> None:
        """Draw the weight and bias again with `initializer`, with Burn's fans (fan_in =
        channels_in/groups · kernel elements)."""
        k = 1
        for size in self.kernel_size:
            k *= size
        fan_out = None if self._dims == 1 else self.out_channels // self.groups * k  # Conv1d: Burn gives none
        self._burn_init(self.in_channels // self.groups * k, fan_out)

    def forward(self, input: Tensor) -> Tensor:
        """Convolve, padding first as Burn's padding config says.

        Args:
            input: `[batch, channels_in, *spatial]`.

        Returns:
            `[batch, channels_out, *spatial_out]`.
        """
        pairs = self.burn_padding.pairs(tuple(input.shape[2:]), self.kernel_size, self.stride)
        x, padding = symmetric_or_pad(input, pairs)
        out: Tensor = _CONV[self._dims](x, self.weight, self.bias, self.stride, padding, self.dilation,
            self.groups)
        return out

    def burn_record_fields(self, version: str) -> list[Field]:
        return self._weight_fields() + _geometry(version, self._dims, ("stride", "kernel_size", "dilation"),
                                                 self._dims > 1) + [Field("groups", "nil"), Field("padding", "nil")]


class Conv1d(_ForwardConv, nn.Conv1d):
    """Burn's `Conv1d`: input `[batch, channels_in, length]`.

    Args:
        channels_in: Input channels.
        channels_out: Output channels.
        kernel_size: The kernel's size.
        stride: The stride.
        dilation: The spacing between kernel elements.
        groups: Blocked connections: both channel counts must divide by it.
        padding: Burn's padding: `Valid` (none), `Same` (out = ceil(size/stride)) or `Explicit(...)`.
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    _dims = 1

    def __init__(self, channels_in: int, channels_out: int, kernel_size: int, stride: int = 1, dilation: int = 1,
                 groups: int = 1, padding: PaddingConfig1d = PaddingConfig1d.Valid, bias: bool = True,
                 initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None, dtype: torch.dtype | None
                     = None) -> None:
        _check_groups(channels_in, channels_out, groups)
        self.initializer, self.burn_padding = initializer, padding
        super().__init__(channels_in, channels_out, kernel_size, stride, 0, dilation, groups, bias,
                         device=device, dtype=dtype)


class Conv2d(_ForwardConv, nn.Conv2d):
    """Burn's `Conv2d`: input `[batch, channels_in, height, width]`.

    Args:
        channels: `[channels_in, channels_out]`.
        kernel_size: The kernel's size per spatial dimension.
        stride: The stride per spatial dimension.
        dilation: The spacing between kernel elements per spatial dimension.
        groups: Blocked connections: both channel counts must divide by it.
        padding: Burn's padding: `Valid` (none), `Same` (out = ceil(size/stride)) or `Explicit(...)`.
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    _dims = 2

    def __init__(self, channels: tuple[int, int] | list[int], kernel_size: tuple[int, int] | list[int],
                 stride: tuple[int, int] | list[int] = (1, 1), dilation: tuple[int, int] | list[int] = (1, 1),
                 groups: int = 1, padding: PaddingConfig2d = PaddingConfig2d.Valid, bias: bool = True,
                 initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None, dtype: torch.dtype | None
                     = None) -> None:
        _check_groups(channels[0], channels[1], groups)
        self.initializer, self.burn_padding = initializer, padding
        super().__init__(channels[0], channels[1], tuple(kernel_size), tuple(stride), 0, tuple(dilation),  # type: ignore[arg-type]
                         groups, bias, device=device, dtype=dtype)


class Conv3d(_ForwardConv, nn.Conv3d):
    """Burn's `Conv3d`: input `[batch, channels_in, depth, height, width]`.

    Args:
        channels: `[channels_in, channels_out]`.
        kernel_size: The kernel's size per spatial dimension.
        stride: The stride per spatial dimension.
        dilation: The spacing between kernel elements per spatial dimension.
        groups: Blocked connections: both channel counts must divide by it.
        padding: Burn's padding: `Valid` (none), `Same` (out = ceil(size/stride)) or `Explicit(...)`.
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    _dims = 3

    def __init__(self, channels: tuple[int, int] | list[int], kernel_size: tuple[int, int, int] | list[int],
                 stride: tuple[int, int, int] | list[int] = (1, 1, 1),
                 dilation: tuple[int, int, int] | list[int] = (1, 1, 1), groups: int = 1,
                 padding: PaddingConfig3d = PaddingConfig3d.Valid, bias: bool = True,
                 initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None, dtype: torch.dtype | None
                     = None) -> None:
        _check_groups(channels[0], channels[1], groups)
        if padding.kind == "Same" and any(k % 2 == 0 for k in kernel_size):
            raise ValueError("Conv3d: Same padding with an even kernel size is not supported (as in Burn)")
        self.initializer, self.burn_padding = initializer, padding
        super().__init__(channels[0], channels[1], tuple(kernel_size), tuple(stride), 0, tuple(dilation),  # type: ignore[arg-type]
                         groups, bias, device=device, dtype=dtype)


class _TransposeConv(_Conv):
    _dims: int
    kernel_size: tuple[int, ...]
    """The kernel's size per spatial dimension."""
    groups: int
    """The number of groups the channels are split into."""
    out_channels: int
    """Output channels."""

    def reset_parameters(self) -> None:
        """Draw the weight and bias again with `initializer`, with Burn's fan_in (channels_out/groups
        · kernel elements, as Burn counts it for a transposed convolution)."""
        k = 1
        for size in self.kernel_size:
            k *= size
        self._burn_init(self.out_channels // self.groups * k, None)

    def burn_record_fields(self, version: str) -> list[Field]:
        arrays = self._dims > 1
        return (self._weight_fields() + _geometry(version, self._dims, ("stride", "kernel_size", "dilation"), arrays)
                + [Field("groups", "nil")] + _geometry(version, self._dims, ("padding", "padding_out"), arrays)
                + _geometry(version, 2, ("channels",), True))


def _transpose_args(channels: tuple[int, int] | list[int], groups: int) -> tuple[int, int]:
    _check_groups(channels[0], channels[1], groups)
    return channels[0], channels[1]


class ConvTranspose1d(_TransposeConv, nn.ConvTranspose1d):
    """Burn's `ConvTranspose1d`: `padding`/`padding_out` are sizes (torch's `padding`/`output_padding`).

    Args:
        channels: `[channels_in, channels_out]`.
        kernel_size: The kernel's size.
        stride: The stride.
        dilation: The spacing between kernel elements.
        groups: Blocked connections: both channel counts must divide by it.
        padding: Zeros removed from each side of the output (torch's `padding`).
        padding_out: Extra size added to one side of the output (torch's `output_padding`).
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    _dims = 1

    def __init__(self, channels: tuple[int, int] | list[int], kernel_size: int, stride: int = 1, dilation: int = 1,
                 groups: int = 1, padding: int = 0, padding_out: int = 0, bias: bool = True,
                 initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None, dtype: torch.dtype | None
                     = None) -> None:
        self.initializer = initializer
        c_in, c_out = _transpose_args(channels, groups)
        super().__init__(c_in, c_out, kernel_size, stride, padding, padding_out, groups, bias, dilation,
                         device=device, dtype=dtype)


class ConvTranspose2d(_TransposeConv, nn.ConvTranspose2d):
    """Burn's `ConvTranspose2d`.

    Args:
        channels: `[channels_in, channels_out]`.
        kernel_size: The kernel's size per spatial dimension.
        stride: The stride per spatial dimension.
        dilation: The spacing between kernel elements per spatial dimension.
        groups: Blocked connections: both channel counts must divide by it.
        padding: Zeros removed from each side of the output per spatial dimension (torch's `padding`).
        padding_out: Extra size added to one side of the output per spatial dimension (torch's
            `output_padding`).
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    _dims = 2

    def __init__(self, channels: tuple[int, int] | list[int], kernel_size: tuple[int, int] | list[int],
                 stride: tuple[int, int] | list[int] = (1, 1), dilation: tuple[int, int] | list[int] = (1, 1),
                 groups: int = 1, padding: tuple[int, int] | list[int] = (0, 0),
                 padding_out: tuple[int, int] | list[int] = (0, 0), bias: bool = True,
                 initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None, dtype: torch.dtype | None
                     = None) -> None:
        self.initializer = initializer
        c_in, c_out = _transpose_args(channels, groups)
        super().__init__(c_in, c_out, tuple(kernel_size), tuple(stride), tuple(padding),  # type: ignore[arg-type]
                         tuple(padding_out), groups, bias, tuple(dilation), device=device, dtype=dtype)  # type: ignore[arg-type]


class ConvTranspose3d(_TransposeConv, nn.ConvTranspose3d):
    """Burn's `ConvTranspose3d`.

    Args:
        channels: `[channels_in, channels_out]`.
        kernel_size: The kernel's size per spatial dimension.
        stride: The stride per spatial dimension.
        dilation: The spacing between kernel elements per spatial dimension.
        groups: Blocked connections: both channel counts must divide by it.
        padding: Zeros removed from each side of the output per spatial dimension (torch's `padding`).
        padding_out: Extra size added to one side of the output per spatial dimension (torch's
            `output_padding`).
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    _dims = 3

    def __init__(self, channels: tuple[int, int] | list[int], kernel_size: tuple[int, int, int] | list[int],
                 stride: tuple[int, int, int] | list[int] = (1, 1, 1),
                 dilation: tuple[int, int, int] | list[int] = (1, 1, 1), groups: int = 1,
                 padding: tuple[int, int, int] | list[int] = (0, 0, 0),
                 padding_out: tuple[int, int, int] | list[int] = (0, 0, 0), bias: bool = True,
                 initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None, dtype: torch.dtype | None
                     = None) -> None:
        self.initializer = initializer
        c_in, c_out = _transpose_args(channels, groups)
        super().__init__(c_in, c_out, tuple(kernel_size), tuple(stride), tuple(padding),  # type: ignore[arg-type]
                         tuple(padding_out), groups, bias, tuple(dilation), device=device, dtype=dtype)  # type: ignore[arg-type]


# --- configs ---------------------------------------------------------------------------------------
@config
class Conv1dConfig:
    """Burn's `Conv1dConfig` (its Xavier initializers need a fan_out Burn doesn't give: they fail, as in Burn)."""

    channels_in: int  # input channels
    channels_out: int  # output channels
    kernel_size: int  # the kernel's size
    stride: int = 1  # the stride
    dilation: int = 1  # the spacing between kernel elements
    groups: int = 1  # blocked connections: both channel counts must divide by it
    # Burn's padding: `Valid` (none), `Same` (out = ceil(size/stride)) or `Explicit(...)`
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn

    def init(self, device: Any = None) -> Conv1d:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Conv1d(self.channels_in, self.channels_out, self.kernel_size, self.stride, self.dilation, self.groups,
                      self.padding, self.bias, self.initializer, device=device)


@config
class Conv2dConfig:
    """Burn's `Conv2dConfig`."""

    channels: list[int]  # `[channels_in, channels_out]`
    kernel_size: list[int]  # the kernel's size per spatial dimension
    stride: list[int] = [1, 1]  # the stride per spatial dimension
    dilation: list[int] = [1, 1]  # the spacing between kernel elements per spatial dimension
    groups: int = 1  # blocked connections: both channel counts must divide by it
    # Burn's padding: `Valid` (none), `Same` (out = ceil(size/stride)) or `Explicit(...)`
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn

    def init(self, device: Any = None) -> Conv2d:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Conv2d(self.channels, self.kernel_size, self.stride, self.dilation, self.groups, self.padding,
                      self.bias, self.initializer, device=device)


@config
class Conv3dConfig:
    """Burn's `Conv3dConfig`."""

    channels: list[int]  # `[channels_in, channels_out]`
    kernel_size: list[int]  # the kernel's size per spatial dimension
    stride: list[int] = [1, 1, 1]  # the stride per spatial dimension
    dilation: list[int] = [1, 1, 1]  # the spacing between kernel elements per spatial dimension
    groups: int = 1  # blocked connections: both channel counts must divide by it
    # Burn's padding: `Valid` (none), `Same` (out = ceil(size/stride)) or `Explicit(...)`
    padding: PaddingConfig3d = PaddingConfig3d.Valid
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn

    def init(self, device: Any = None) -> Conv3d:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Conv3d(self.channels, self.kernel_size, self.stride, self.dilation, self.groups, self.padding,
                      self.bias, self.initializer, device=device)


@config
class ConvTranspose1dConfig:
    """Burn's `ConvTranspose1dConfig`."""

    channels: list[int]  # `[channels_in, channels_out]`
    kernel_size: int  # the kernel's size
    stride: int = 1  # the stride
    dilation: int = 1  # the spacing between kernel elements
    groups: int = 1  # blocked connections: both channel counts must divide by it
    padding: int = 0  # zeros removed from each side of the output (torch's `padding`)
    padding_out: int = 0  # extra size added to one side of the output (torch's `output_padding`)
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn

    def init(self, device: Any = None) -> ConvTranspose1d:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return ConvTranspose1d(self.channels, self.kernel_size, self.stride, self.dilation, self.groups, self.padding,
                               self.padding_out, self.bias, self.initializer, device=device)


@config
class ConvTranspose2dConfig:
    """Burn's `ConvTranspose2dConfig`."""

    channels: list[int]  # `[channels_in, channels_out]`
    kernel_size: list[int]  # the kernel's size per spatial dimension
    stride: list[int] = [1, 1]  # the stride per spatial dimension
    dilation: list[int] = [1, 1]  # the spacing between kernel elements per spatial dimension
    groups: int = 1  # blocked connections: both channel counts must divide by it
    # zeros removed from each side of the output per spatial dimension (torch's `padding`)
    padding: list[int] = [0, 0]
    # extra size added to one side of the output per spatial dimension (torch's `output_padding`)
    padding_out: list[int] = [0, 0]
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn

    def init(self, device: Any = None) -> ConvTranspose2d:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return ConvTranspose2d(self.channels, self.kernel_size, self.stride, self.dilation, self.groups, self.padding,
                               self.padding_out, self.bias, self.initializer, device=device)


@config
class ConvTranspose3dConfig:
    """Burn's `ConvTranspose3dConfig`."""

    channels: list[int]  # `[channels_in, channels_out]`
    kernel_size: list[int]  # the kernel's size per spatial dimension
    stride: list[int] = [1, 1, 1]  # the stride per spatial dimension
    dilation: list[int] = [1, 1, 1]  # the spacing between kernel elements per spatial dimension
    groups: int = 1  # blocked connections: both channel counts must divide by it
    # zeros removed from each side of the output per spatial dimension (torch's `padding`)
    padding: list[int] = [0, 0, 0]
    # extra size added to one side of the output per spatial dimension (torch's `output_padding`)
    padding_out: list[int] = [0, 0, 0]
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn

    def init(self, device: Any = None) -> ConvTranspose3d:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return ConvTranspose3d(self.channels, self.kernel_size, self.stride, self.dilation, self.groups, self.padding,
                               self.padding_out, self.bias, self.initializer, device=device)
