"""TODO: docstring."""

from __future__ import annotations

import torch
from torch import nn

from burnlike.module import Module
from burnlike.record import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
)


class Masked(Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("mask", torch.tensor([True, False, True]))


RECORDERS = [NamedMpkFileRecorder, NamedMpkGzFileRecorder, PrettyJsonFileRecorder, JsonGzFileRecorder]


SETTINGS = [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings]
