"""Burn's `burn::record`: precision settings, file and in-memory recorders, and the Lightning
checkpoint plugin.

Files are byte-compatible with Burn 0.19–0.21 (`BurnRecord{metadata, item, _b}`); decoding never
unpickles and raises `RecordError` (a ValueError naming the file and key path) on any bad input.
f16 policy (HalfPrecisionSettings, CompactRecorder): see `tensor.precision.storage_dtype`.

Three layers, each importing only those below it (`LAYERS`; tests/test_architecture.py checks):
  1. `tensor/`     tensor bytes: TensorData codec, dtypes, precision and the f16 policy, Burn's
                   layouts (transpose/cast), file slices and transfers into parameters
  2. `format/`     MessagePack, JSON and bincode recorders (files and bytes) over one module-tree
                   walk; the registry
  3. `checkpoint/` Lightning checkpoint dicts, weights out of either kind of file, the plugin
The plugin names (`RecorderCheckpointIO`, `load_from_checkpoint`, `load_lightning_module`) load
Lightning on first use, so records and `load_checkpoint` never import it.
"""

from typing import TYPE_CHECKING, Any

from burnlike.record.checkpoint.lightning_dict import load_checkpoint
from burnlike.record.checkpoint.value import Unstorable
from burnlike.record.checkpoint.weights import load_weights
from burnlike.record.error import RecordError, SaveError
from burnlike.record.format.bincode import (
    BinFileRecorder,
    BinGzFileRecorder,
    NoStdTrainingRecorder,
    SensitiveCompactRecorder,
)
from burnlike.record.format.memory import (
    BinBytesRecorder,
    BytesRecorder,
    NamedMpkBytesRecorder,
    NoStdInferenceRecorder,
)
from burnlike.record.format.module_record import load_module_record, module_to_record
from burnlike.record.format.named_mpk import (
    CompactRecorder,
    DefaultRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
)
from burnlike.record.format.pretty_json import JsonGzFileRecorder, PrettyJsonFileRecorder
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.precision import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    PrecisionSettings,
)

# The record layers, lowest first: a module may import its own layer's modules and lower layers'.
# `burnlike.record` itself (this facade) sits above them all.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("burnlike.record.error", "burnlike.record.tensor"),
    ("burnlike.record.format",),
    ("burnlike.record.checkpoint",),
)

__all__ = [
    "BinBytesRecorder",
    "BinFileRecorder",
    "BinGzFileRecorder",
    "BytesRecorder",
    "CompactRecorder",
    "DefaultRecorder",
    "DoublePrecisionSettings",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "JsonGzFileRecorder",
    "NamedMpkBytesRecorder",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "NoStdInferenceRecorder",
    "NoStdTrainingRecorder",
    "PrecisionSettings",
    "PrettyJsonFileRecorder",
    "RecordError",
    "SaveError",
    "SensitiveCompactRecorder",
    "Recorder",
    "RecorderCheckpointIO",
    "Unstorable",
    "load_checkpoint",
    "load_from_checkpoint",
    "load_lightning_module",
    "load_module_record",
    "load_weights",
    "module_to_record",
]


_LAZY = {"RecorderCheckpointIO", "load_from_checkpoint", "load_lightning_module"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from burnlike.record.checkpoint import plugin

        return getattr(plugin, name)
    raise AttributeError(f"module 'burnlike.record' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from burnlike.record.checkpoint.plugin import (  # noqa: F401
        RecorderCheckpointIO,
        load_from_checkpoint,
        load_lightning_module,
    )
