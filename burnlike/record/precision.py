"""Burn's precision settings: the element types tensors are converted to when recorded."""

from __future__ import annotations

from typing import Any

import torch


class PrecisionSettings:
    """Float/int storage types plus the strings Burn writes into a record's metadata."""

    name = "FullPrecisionSettings"
    float_dtype: torch.dtype = torch.float32
    int_dtype: torch.dtype = torch.int32
    float_name = "f32"
    int_name = "i32"

    def __repr__(self) -> str:
        return f"{self.name}()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PrecisionSettings) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class FullPrecisionSettings(PrecisionSettings):
    pass


class HalfPrecisionSettings(PrecisionSettings):
    """f16/i16: half the size, lossy (2049→2048, 1e-8→0); see `codec.storage_dtype` for the guards."""

    name = "HalfPrecisionSettings"
    float_dtype = torch.float16
    int_dtype = torch.int16
    float_name = "half::binary16::f16"
    int_name = "i16"


class DoublePrecisionSettings(PrecisionSettings):
    name = "DoublePrecisionSettings"
    float_dtype = torch.float64
    int_dtype = torch.int64
    float_name = "f64"
    int_name = "i64"


def as_settings(settings: Any) -> PrecisionSettings:
    """Accept the class (`HalfPrecisionSettings`) or an instance, like Burn's type parameter."""
    if settings is None:
        return FullPrecisionSettings()
    if isinstance(settings, type) and issubclass(settings, PrecisionSettings):
        return settings()
    if isinstance(settings, PrecisionSettings):
        return settings
    raise TypeError(f"expected a precision settings class such as HalfPrecisionSettings, got {settings!r}")
