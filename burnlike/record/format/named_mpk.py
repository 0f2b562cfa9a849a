"""Burn's MessagePack recorders (`rmp_serde::encode::write_named`: maps with field names, tensor
bytes as `bin`) and its aliases `CompactRecorder` (half precision) and `DefaultRecorder` (full)."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from torch import nn

from burnlike.record.format.budget import Budget
from burnlike.record.format.messagepack import read_msgpack, write_msgpack
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.precision import FullPrecisionSettings, HalfPrecisionSettings
from burnlike.record.tensor.version import DEFAULT_VERSION


class NamedMpkFileRecorder(Recorder):
    """`rmp_serde::encode::write_named`: maps with field names, tensor bytes as `bin`."""

    extension = "mpk"
    format_type = "NamedMpkFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        write_msgpack(record, f)

    def decode(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool,
               budget: Budget) -> Any:
        return read_msgpack(f, size, path, lazy, budget)


class NamedMpkGzFileRecorder(NamedMpkFileRecorder):
    """Burn's `NamedMpkGzFileRecorder`: named MessagePack, gzipped (`.mpk.gz`)."""

    extension = "mpk.gz"
    format_type = "NamedMpkGzFileRecorder"
    gzip = True


class CompactRecorder(NamedMpkFileRecorder):
    """Burn's `CompactRecorder`: NamedMpk with half precision (f16 floats, i16 ints; see
    `storage_dtype` for the tensors that keep a wider type). Writes NamedMpk's metadata.

    Args:
        burn_version: The Burn version whose record layout is written (`"0.19.0"` for Burn 0.19's).
    """

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(HalfPrecisionSettings, burn_version)


class DefaultRecorder(NamedMpkFileRecorder):
    """Burn's `DefaultRecorder`: NamedMpk with full precision (f32, i32).

    Args:
        burn_version: The Burn version whose record layout is written (`"0.19.0"` for Burn 0.19's).
    """

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(FullPrecisionSettings, burn_version)
