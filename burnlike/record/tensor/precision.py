"""Burn's precision settings (the element types tensors are recorded at) and burnlike's f16/i16
policy: which tensors keep a wider type so that nothing is silently corrupted."""

from __future__ import annotations

import math
from typing import TypeAlias

import numpy as np
import torch

from burnlike.record.tensor import serial

# The Rust element types Burn names in a record's metadata (`float`, `int`)
RUST_TYPES = {torch.float64: "f64", torch.float32: "f32", torch.float16: "half::binary16::f16",
              torch.int64: "i64", torch.int32: "i32", torch.int16: "i16"}


class PrecisionSettings:
    """Float/int storage types, named as Burn names them in a record's metadata. A recorder takes
    the class or an instance; the base is full precision."""

    name = "FullPrecisionSettings"
    """The Rust struct's name, written into a record's metadata."""
    float_dtype: torch.dtype = torch.float32
    """The dtype floats are recorded at."""
    int_dtype: torch.dtype = torch.int32
    """The dtype ints are recorded at."""

    @property
    def float_name(self) -> str:
        """The float type as Burn's metadata names it (`"f32"`)."""
        return RUST_TYPES[self.float_dtype]

    @property
    def int_name(self) -> str:
        """The int type as Burn's metadata names it (`"i32"`)."""
        return RUST_TYPES[self.int_dtype]

    def __repr__(self) -> str:
        return f"{self.name}()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PrecisionSettings) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class FullPrecisionSettings(PrecisionSettings):
    """f32/i32: Burn's default, exact for a model trained in f32."""


class HalfPrecisionSettings(PrecisionSettings):
    """f16/i16: half the size, lossy (2049→2048, 1e-8→0); see `storage_dtype` for the guards."""

    name = "HalfPrecisionSettings"
    float_dtype = torch.float16
    int_dtype = torch.int16


class DoublePrecisionSettings(PrecisionSettings):
    """f64/i64: exact for a model trained in f64."""

    name = "DoublePrecisionSettings"
    float_dtype = torch.float64
    int_dtype = torch.int64


SettingsLike: TypeAlias = PrecisionSettings | type[PrecisionSettings] | None  # Burn's `S` type parameter


def as_settings(settings: SettingsLike) -> PrecisionSettings:
    """Accept the class (`HalfPrecisionSettings`) or an instance, like Burn's type parameter."""
    if settings is None:
        return FullPrecisionSettings()
    if isinstance(settings, type) and issubclass(settings, PrecisionSettings):
        return settings()
    if isinstance(settings, PrecisionSettings):
        return settings
    raise TypeError(f"expected a precision settings class such as HalfPrecisionSettings, got {settings!r}")


F16_MAX = 65504.0
F16_TINY = 2.0**-14  # smallest normal f16; below it f16 keeps fewer than 10 significant bits
_INT_RANGE = {torch.int16: (-(2**15), 2**15 - 1), torch.int32: (-(2**31), 2**31 - 1)}


def target_dtype(t: torch.Tensor, settings: PrecisionSettings | None) -> torch.dtype:
    """The dtype `settings` ask for (`storage_dtype` may keep a wider one): the likely one, known
    without looking at the values."""
    if settings is None or t.dtype == torch.bool:
        return t.dtype
    return settings.float_dtype if t.is_floating_point() else settings.int_dtype


def storage_dtype(t: torch.Tensor, settings: PrecisionSettings | None, peak: int | None = None) -> torch.dtype:
    """The dtype `t` is recorded at under `settings`. `peak`: `f16_peak` of all of `t`'s values
    already cast to f16 (a save's bytes at the likely dtype, whole or the largest over its parts),
    which often settles it without a pass over `t`.

    Policy (never silently corrupt; cheap: one min/max pass, or none given a settling `peak`):
    - a float tensor with a finite value beyond ±65504 (would become inf in f16) keeps f32 (f64
      stays f64);
    - a float tensor whose nonzero values are all below f16's normal range (|x| < 2**-14, e.g. a
      tensor of 1e-8 values that would flush to zero or keep only a few bits) keeps f32 as well;
    - otherwise f16 rounding applies element-wise: a tiny value next to large ones rounds to zero
      exactly as f16 rounding of that tensor's scale would (2049→2048, 1e-8→0 beside 1.0);
    - an int tensor outside the target int's range keeps the narrowest wider int that holds it.
    Burn's reader accepts any of these, since each TensorData names its own dtype.
    """
    target = target_dtype(t, settings)
    if target == t.dtype:  # nothing narrower to guard against (also: no settings, bool)
        return target
    if t.is_floating_point():
        if target == torch.float16 and peak is not None and _F16_TINY_BITS < peak < _F16_MAX_BITS:
            return target
        if target == torch.float16 and t.numel():
            wider = torch.float32 if t.dtype != torch.float64 else torch.float64
            lo, hi = (float(v) for v in serial.aminmax(t.detach()))  # one pass, no |t| temporary
            top = max(-lo, hi)
            if not math.isfinite(top):
                top = _finite_peak(t)
            if top > F16_MAX:
                return wider
            if 0.0 < top < F16_TINY:
                return wider
        return target
    if target in _INT_RANGE and t.numel():
        low, high = _INT_RANGE[target]
        t_lo, t_hi = (int(v) for v in serial.aminmax(t.detach()))
        if t_lo < low or t_hi > high:
            for wider_int in (torch.int32, torch.int64):
                if wider_int not in _INT_RANGE or _INT_RANGE[wider_int][0] <= t_lo and t_hi <= _INT_RANGE[wider_int][1]:
                    return wider_int
    return target


_F16_TINY_BITS, _F16_MAX_BITS = 0x0400, 0x7BFF  # F16_TINY and F16_MAX as f16 magnitude bits


def f16_peak(cast: torch.Tensor) -> int | None:
    """The magnitude bits of the largest |value| in an f16 tensor (inf and NaN rank above every
    finite value), or None when `cast` isn't a contiguous f16 CPU tensor with values. With it,
    `storage_dtype` keeps f16 when the peak lies strictly between F16_TINY and F16_MAX: then the
    source's did too (rounding to nearest is monotone and both bounds are f16 values). The peak of
    a tensor made in parts is the largest of its parts' peaks. Anything else is left to the exact
    pass over the source.

    Why: a save casts each weight anyway; on the cast the check is two integer maxima over 2-byte
    words (numpy, vectorised, one thread), less than half the time of min/max over the f32 source
    (docs/benchmarks.md). Sign-magnitude bits: as int16, the largest is the largest positive magnitude;
    as uint16, the largest is 0x8000 plus the largest negative magnitude."""
    if cast.dtype != torch.float16 or cast.device.type != "cpu" or not cast.is_contiguous() or not cast.numel():
        return None
    bits = cast.reshape(-1).view(torch.int16).numpy()
    return max(int(bits.max()), int(bits.view(np.uint16).max()) - 0x8000)


def _finite_peak(t: torch.Tensor) -> float:
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0
