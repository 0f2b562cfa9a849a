"""Burn's pooling (burn-nn `modules/pool/`): `MaxPool1dConfig(kernel_size)`, `MaxPool2dConfig([kh, kw])`,
`AvgPool1dConfig`, `AvgPool2dConfig`, `AdaptiveAvgPool1dConfig(output_size)`,
`AdaptiveAvgPool2dConfig([h, w])`; each `init()` is the matching `torch.nn` pool.

Burn's defaults: stride = the kernel size (the config's `strides` for 2d, `stride` for 1d), padding
`Valid`, dilation 1, `ceil_mode` false, `count_include_pad` true — torch's too. Asymmetric padding
(`Same` with an even kernel, `Explicit`) pads first, with -inf for max pools and 0 for average
pools (those zeros are then always counted). Stateless: nil in records.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.padding import PaddingConfig1d, PaddingConfig2d, symmetric_or_pad


def _padded(x: Tensor, padding: PaddingConfig1d | PaddingConfig2d, kernel: Any, stride: Any, dilation: Any = 1,
            value: float = 0.0) -> tuple[Tensor, list[int]]:
    """`x` and the pool's own padding, Burn's padding applied (`kernel`/`stride`/`dilation` as torch's
    pools keep them: ints or tuples)."""
    dims = x.dim() - 2

    def as_tuple(v: Any) -> tuple[int, ...]:
        return tuple(v) if isinstance(v, (tuple, list)) else (v,) * dims

    kernel, stride, dilation = as_tuple(kernel), as_tuple(stride), as_tuple(dilation)
    pairs = padding.pairs(tuple(x.shape[2:]), kernel, stride)
    most = tuple(((k - 1) * d + 1) // 2 for k, d in zip(kernel, dilation))
    return symmetric_or_pad(x, pairs, value, most)


class MaxPool1d(Module, nn.MaxPool1d):
    """Burn's `MaxPool1d`, torch's `MaxPool1d` with Burn's padding.

    Args:
        kernel_size: The window's size.
        stride: The step between windows; None: the kernel size.
        padding: Burn's padding: `Valid`, `Same` or `Explicit(...)`; asymmetric padding is applied first (with
            -inf).
        dilation: The spacing between a window's elements.
        ceil_mode: Round the output size up, not down.
    """

    def __init__(self, kernel_size: int, stride: int | None = None, padding: PaddingConfig1d = PaddingConfig1d.Valid,
                 dilation: int = 1, ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, kernel_size if stride is None else stride, 0, dilation, ceil_mode=ceil_mode)
        self.burn_padding = padding
        """Burn's padding config (torch's own `padding` stays 0: the forward pads)."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool.

        Args:
            input: `[batch, channels, length]`.

        Returns:
            The pooled tensor, same batch and channels.
        """
        x, pad = _padded(input, self.burn_padding, self.kernel_size, self.stride, self.dilation, float("-inf"))
        return F.max_pool1d(x, self.kernel_size, self.stride, pad, self.dilation, self.ceil_mode)


class MaxPool2d(Module, nn.MaxPool2d):
    """Burn's `MaxPool2d`, torch's `MaxPool2d` with Burn's padding.

    Args:
        kernel_size: The window's `[height, width]`.
        strides: The step between windows, `[height, width]`; None: the kernel size.
        padding: Burn's padding: `Valid`, `Same` or `Explicit(...)`; asymmetric padding is applied first (with
            -inf).
        dilation: The spacing between a window's elements, `[height, width]`.
        ceil_mode: Round the output size up, not down.
    """

    def __init__(self, kernel_size: tuple[int, int] | list[int], strides: tuple[int, int] | list[int] | None = None,
                 padding: PaddingConfig2d = PaddingConfig2d.Valid, dilation: tuple[int, int] | list[int] = (1,
                     1),
                 ceil_mode: bool = False) -> None:
        kernel = tuple(kernel_size)
        super().__init__(kernel, kernel if strides is None else tuple(strides), 0, tuple(dilation), ceil_mode=ceil_mode)
        self.burn_padding = padding
        """Burn's padding config (torch's own `padding` stays 0: the forward pads)."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool.

        Args:
            input: `[batch, channels, height, width]`.

        Returns:
            The pooled tensor, same batch and channels.
        """
        x, pad = _padded(input, self.burn_padding, self.kernel_size, self.stride, self.dilation, float("-inf"))
        return F.max_pool2d(x, self.kernel_size, self.stride, pad, self.dilation, self.ceil_mode)


class AvgPool1d(Module, nn.AvgPool1d):
    """Burn's `AvgPool1d`, torch's `AvgPool1d` with Burn's padding.

    Args:
        kernel_size: The window's size.
        stride: The step between windows; None: the kernel size.
        padding: Burn's padding: `Valid`, `Same` or `Explicit(...)`; asymmetric padding is applied first (with
            zeros, then always counted).
        count_include_pad: Count the padding zeros in each window's mean.
        ceil_mode: Round the output size up, not down.
    """

    def __init__(self, kernel_size: int, stride: int | None = None, padding: PaddingConfig1d = PaddingConfig1d.Valid,
                 count_include_pad: bool = True, ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, kernel_size if stride is None else stride, 0, ceil_mode, count_include_pad)
        self.burn_padding = padding
        """Burn's padding config (torch's own `padding` stays 0: the forward pads)."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool.

        Args:
            input: `[batch, channels, length]`.

        Returns:
            The pooled tensor, same batch and channels.
        """
        x, pad = _padded(input, self.burn_padding, self.kernel_size, self.stride)
        return F.avg_pool1d(x, self.kernel_size, self.stride, pad, self.ceil_mode, self.count_include_pad)


class AvgPool2d(Module, nn.AvgPool2d):
    """Burn's `AvgPool2d`, torch's `AvgPool2d` with Burn's padding.

    Args:
        kernel_size: The window's `[height, width]`.
        strides: The step between windows, `[height, width]`; None: the kernel size.
        padding: Burn's padding: `Valid`, `Same` or `Explicit(...)`; asymmetric padding is applied first (with
            zeros, then always counted).
        count_include_pad: Count the padding zeros in each window's mean.
        ceil_mode: Round the output size up, not down.
    """

    def __init__(self, kernel_size: tuple[int, int] | list[int], strides: tuple[int, int] | list[int] | None = None,
                 padding: PaddingConfig2d = PaddingConfig2d.Valid, count_include_pad: bool = True,
                 ceil_mode: bool = False) -> None:
        kernel: Any = tuple(kernel_size)
        stride: Any = kernel if strides is None else tuple(strides)
        super().__init__(kernel, stride, 0, ceil_mode, count_include_pad)
        self.burn_padding = padding
        """Burn's padding config (torch's own `padding` stays 0: the forward pads)."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool.

        Args:
            input: `[batch, channels, height, width]`.

        Returns:
            The pooled tensor, same batch and channels.
        """
        x, pad = _padded(input, self.burn_padding, self.kernel_size, self.stride)
        return F.avg_pool2d(x, self.kernel_size, self.stride, pad, self.ceil_mode, self.count_include_pad)


class AdaptiveAvgPool1d(Module, nn.AdaptiveAvgPool1d):
    """Burn's `AdaptiveAvgPool1d`: window i spans [⌊i·L/n⌋, ⌈(i+1)·L/n⌉), as torch's."""


class AdaptiveAvgPool2d(Module, nn.AdaptiveAvgPool2d):
    """Burn's `AdaptiveAvgPool2d`: windows as torch's (⌊i·H/h⌋ to ⌈(i+1)·H/h⌉)."""


@config
class MaxPool1dConfig:
    """Burn's `MaxPool1dConfig`."""

    kernel_size: int  # the window's size
    stride: int | None = None  # the step between windows; None: the kernel size (Burn's default)
    padding: PaddingConfig1d = PaddingConfig1d.Valid  # Burn's padding, applied with -inf
    dilation: int = 1  # the spacing between a window's elements
    ceil_mode: bool = False  # round the output size up, not down

    def __post_init__(self) -> None:
        if self.stride is None:
            self.stride = self.kernel_size

    def init(self, device: Any = None) -> MaxPool1d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return MaxPool1d(self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


@config
class MaxPool2dConfig:
    """Burn's `MaxPool2dConfig`."""

    kernel_size: list[int]  # the window's [height, width]
    strides: list[int] | None = None  # the step between windows; None: the kernel size (Burn's default)
    padding: PaddingConfig2d = PaddingConfig2d.Valid  # Burn's padding, applied with -inf
    dilation: list[int] = [1, 1]  # the spacing between a window's elements
    ceil_mode: bool = False  # round the output size up, not down

    def __post_init__(self) -> None:
        if self.strides is None:
            self.strides = list(self.kernel_size)

    def init(self, device: Any = None) -> MaxPool2d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return MaxPool2d(self.kernel_size, self.strides, self.padding, self.dilation, self.ceil_mode)


@config
class AvgPool1dConfig:
    """Burn's `AvgPool1dConfig`."""

    kernel_size: int  # the window's size
    stride: int | None = None  # the step between windows; None: the kernel size (Burn's default)
    padding: PaddingConfig1d = PaddingConfig1d.Valid  # Burn's padding, applied with zeros
    count_include_pad: bool = True  # count the padding zeros in each window's mean
    ceil_mode: bool = False  # round the output size up, not down

    def __post_init__(self) -> None:
        if self.stride is None:
            self.stride = self.kernel_size

    def init(self, device: Any = None) -> AvgPool1d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return AvgPool1d(self.kernel_size, self.stride, self.padding, self.count_include_pad, self.ceil_mode)


@config
class AvgPool2dConfig:
    """Burn's `AvgPool2dConfig`."""

    kernel_size: list[int]  # the window's [height, width]
    strides: list[int] | None = None  # the step between windows; None: the kernel size (Burn's default)
    padding: PaddingConfig2d = PaddingConfig2d.Valid  # Burn's padding, applied with zeros
    count_include_pad: bool = True  # count the padding zeros in each window's mean
    ceil_mode: bool = False  # round the output size up, not down

    def __post_init__(self) -> None:
        if self.strides is None:
            self.strides = list(self.kernel_size)

    def init(self, device: Any = None) -> AvgPool2d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return AvgPool2d(self.kernel_size, self.strides, self.padding, self.count_include_pad, self.ceil_mode)


@config
class AdaptiveAvgPool1dConfig:
    """Burn's `AdaptiveAvgPool1dConfig`."""

    output_size: int  # the output's length, whatever the input's

    def init(self, device: Any = None) -> AdaptiveAvgPool1d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return AdaptiveAvgPool1d(self.output_size)


@config
class AdaptiveAvgPool2dConfig:
    """Burn's `AdaptiveAvgPool2dConfig`."""

    output_size: list[int]  # the output's [height, width], whatever the input's

    def init(self, device: Any = None) -> AdaptiveAvgPool2d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return AdaptiveAvgPool2d(tuple(self.output_size))
