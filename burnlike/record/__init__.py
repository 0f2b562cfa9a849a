"""Burn's `burn::record`: precision settings, file recorders, and the Lightning checkpoint plugin."""

from burnlike.record.bincode import BinFileRecorder, BinGzFileRecorder
from burnlike.record.checkpoint_io import (
    RecorderCheckpointIO,
    load_checkpoint,
    load_lightning_module,
)
from burnlike.record.codec import Unstorable
from burnlike.record.error import RecordError
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
    "load_lightning_module",
]
