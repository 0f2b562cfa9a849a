"""Burn's `Linear` (burn-nn `modules/linear.rs`): `LinearConfig(d_input, d_output).init(device)`."""

from __future__ import annotations

from enum import Enum
from typing import Any

import torch
from torch import nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.initializer import KAIMING_DEFAULT, Initializer
from burnlike.record.format.walker import Field


class LinearLayout(str, Enum):
    """Burn's `LinearLayout`: how the weight is stored in a record. `Row` (the default): `[d_input,
    d_output]`, Burn's usual; `Col`: `[d_output, d_input]`, torch's."""

    Row = "Row"
    Col = "Col"


@config
class LinearConfig:
    """Burn's `LinearConfig`: `bias` true, `initializer` KaimingUniform(gain 1/√3) — a ±1/√d_input
    bound for weight and bias, as torch's `nn.Linear` — and `layout` Row."""

    d_input: int  # input features
    d_output: int  # output features
    bias: bool = True  # whether there is a bias
    initializer: Initializer = KAIMING_DEFAULT  # how the weight and bias are drawn
    layout: LinearLayout = LinearLayout.Row  # how the weight is stored in the record

    def init(self, device: Any = None) -> Linear:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Linear(self.d_input, self.d_output, self.bias, self.initializer, self.layout, device=device)


class Linear(Module, nn.Linear):
    """Burn's `Linear`, `O = I·W + b` over the last dim of any rank, as a real `torch.nn.Linear`.

    torch's attribute `weight` is `[d_output, d_input]`, the transpose of Burn's `linear.weight`; the
    record stores Burn's `[d_input, d_output]` (or `[d_output, d_input]` with `LinearLayout.Col`).
    The initializer draws in Burn's shape with Burn's fans (`Col` passes fan_in = d_output, as Burn does).

    Args:
        d_input: Input features.
        d_output: Output features.
        bias: Whether there is a bias.
        initializer: How the weight and bias are drawn.
        layout: How the weight is stored in the record.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).

    Attributes:
        initializer: How `reset_parameters` draws the weight and bias.
        layout: How the weight is stored in the record.
    """

    def __init__(self, d_input: int, d_output: int, bias: bool = True, initializer: Initializer = KAIMING_DEFAULT,
                 layout: LinearLayout = LinearLayout.Row, *, device: Any = None, dtype: torch.dtype | None =
                     None) -> None:
        self.initializer, self.layout = initializer, LinearLayout(layout)
        super().__init__(d_input, d_output, bias, device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Draw the weight and bias again with `initializer`, in Burn's shape with Burn's fans."""
        d_input, d_output = self.in_features, self.out_features
        with torch.no_grad():
            if self.layout is LinearLayout.Row:
                drawn = torch.empty(d_input, d_output, device=self.weight.device, dtype=self.weight.dtype)
                self.weight.copy_(self.initializer.fill_(drawn, d_input, d_output).t())
            else:
                self.initializer.fill_(self.weight, d_output, d_input)
            if self.bias is not None:
                self.initializer.fill_(self.bias, d_input, d_output)

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("weight", "param", self, "weight", transpose=self.layout is LinearLayout.Row),
                Field("bias", "param" if self.bias is not None else "none", self, "bias", optional=True)]
