"""Burn's `burn::record`: precision settings, file recorders, and the Lightning checkpoint plugin.

Files are byte-compatible with Burn 0.19–0.21 (`BurnRecord{metadata, item, _b}`); decoding never
unpickles and raises `RecordError` (a ValueError naming the file and key path) on any bad input.
f16 policy (HalfPrecisionSettings, CompactRecorder): see `codec.storage_dtype`.

The plugin names (`RecorderCheckpointIO`, `load_from_checkpoint`, `load_lightning_module`) load
Lightning on first use, so records and `load_checkpoint` never import it.
"""

from typing import TYPE_CHECKING, Any

from burnlike.record.bincode import BinFileRecorder, BinGzFileRecorder
from burnlike.record.checkpoint import load_checkpoint
from burnlike.record.codec import Unstorable
from burnlike.record.error import RecordError
from burnlike.record.module_record import load_module_record, module_to_record
from burnlike.record.precision import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    PrecisionSettings,
)
from burnlike.record.recorder import (
    CompactRecorder,
    DefaultRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    Recorder,
)

__all__ = [
    "BinFileRecorder",
    "BinGzFileRecorder",
    "CompactRecorder",
    "DefaultRecorder",
    "DoublePrecisionSettings",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "JsonGzFileRecorder",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "PrecisionSettings",
    "PrettyJsonFileRecorder",
    "RecordError",
    "Recorder",
    "RecorderCheckpointIO",
    "Unstorable",
    "load_checkpoint",
    "load_from_checkpoint",
    "load_lightning_module",
    "load_module_record",
    "module_to_record",
]


_LAZY = {"RecorderCheckpointIO", "load_from_checkpoint", "load_lightning_module"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from burnlike.record import checkpoint_io

        return getattr(checkpoint_io, name)
    raise AttributeError(f"module 'burnlike.record' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from burnlike.record.checkpoint_io import (  # noqa: F401
        RecorderCheckpointIO,
        load_from_checkpoint,
        load_lightning_module,
    )
