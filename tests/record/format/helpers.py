"""Shared by the tests of `burnlike.record.format`: the MessagePack and JSON file recorders, the
precision settings, and `Masked`, a module with a bool buffer beside its weights."""

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
    """A Linear and a bool buffer, `mask`."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("mask", torch.tensor([True, False, True]))


RECORDERS = [NamedMpkFileRecorder, NamedMpkGzFileRecorder, PrettyJsonFileRecorder, JsonGzFileRecorder]

SETTINGS = [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings]
