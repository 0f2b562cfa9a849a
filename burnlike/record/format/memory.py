"""Burn's in-memory recorders (`burn_core::record::memory`): `BinBytesRecorder`,
`NamedMpkBytesRecorder` and the alias `NoStdInferenceRecorder`.

Burn's `recorder.record(item, ())` returns the record as bytes and `recorder.load(bytes, &device)`
reads them back. The bytes are those the matching file recorder (`BinFileRecorder`,
`NamedMpkFileRecorder`) writes into a file, except `metadata.format`: Burn writes the writing
recorder's Rust type name there (`burn_core::record::memory::BinBytesRecorder<…>`), and no reader
checks it. Reading goes through the file recorders' bounded decoders, so malformed bytes raise
`RecordError`.

The recorder registry (`registry.py`) does not list these: its names pick a recorder for a path
(load_file, checkpoints, the CLI, the app), and a bytes recorder has no file to read or write.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeAlias

import torch
from torch import nn

from burnlike.record.format.bincode import BinFileRecorder
from burnlike.record.format.module_record import load_module_record, module_to_record
from burnlike.record.format.named_mpk import NamedMpkFileRecorder
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.precision import FullPrecisionSettings, PrecisionSettings, SettingsLike
from burnlike.record.tensor.version import DEFAULT_VERSION

BYTES = Path("<bytes>")  # what errors name instead of a file
Bytes: TypeAlias = bytes | bytearray | memoryview


class BytesRecorder:
    """Burn's `BytesRecorder` trait, the base of its in-memory recorders: a file recorder's format,
    into and out of `bytes`.

    `BinBytesRecorder(HalfPrecisionSettings, burn_version="0.19.0")`: the settings class or an
    instance, and the Burn version whose layout is written.
    """

    file_recorder: ClassVar[type[Recorder]] = Recorder  # the format: its encode/decode
    format_type = ""  # the Rust type's name, written into metadata.format
    type_args: ClassVar[tuple[str, ...]] = ()  # its generic arguments after the settings

    def __init__(self, settings: SettingsLike = None, burn_version: str = DEFAULT_VERSION) -> None:
        self.format = self.file_recorder(settings, burn_version)

    def __class_getitem__(cls, settings: SettingsLike) -> Callable[..., BytesRecorder]:
        """`BinBytesRecorder[HalfPrecisionSettings]()`: Burn's generic spelling."""
        return functools.partial(cls, settings)

    @property
    def settings(self) -> PrecisionSettings:
        """The precision the records are written with."""
        return self.format.settings

    @property
    def burn_version(self) -> str:
        """The Burn version whose record layout is written."""
        return self.format.burn_version

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.name}, burn_version={self.burn_version!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BytesRecorder) and other.metadata() == self.metadata()

    def __hash__(self) -> int:
        return hash(tuple(self.metadata().values()))

    def metadata(self) -> dict[str, str]:
        """The `BurnMetadata` written with each record (`format`: this recorder's Rust type name)."""
        args = ", ".join((f"burn_core::record::settings::{self.settings.name}", *self.type_args))
        return {**self.format.metadata(), "format": f"burn_core::record::memory::{self.format_type}<{args}>"}

    def record(self, item: Any, *, module: nn.Module | None = None) -> bytes:
        """Burn's `recorder.record(item, ())`: `BurnRecord{metadata, item, _b}` as bytes (`module`:
        the tree the item came from, which bincode needs to write a module record)."""
        out = io.BytesIO()
        self.format.write({"metadata": self.metadata(), "item": item, "_b": []}, module, out)
        return out.getvalue()

    def load(self, data: Bytes, device: torch.device | str | None = None, *,
             module: nn.Module | None = None) -> Any:
        """Burn's `recorder.load(bytes, &device)`: the record's item; malformed bytes raise
        RecordError. `device` is Burn's argument: the tensors go to a device when the item is
        loaded into a module (`load_module`, `module.load_record`)."""
        return self.read_record(data, module=module)[1]

    def read_record(self, data: Bytes, *, module: nn.Module | None = None) -> tuple[dict[str, str], Any]:
        """`(metadata, item)` of the record in `data`."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a record is read from bytes, got {type(data).__name__}")
        return self.format.parse(io.BytesIO(data), len(data), BYTES, module, lazy=False)

    def save_module(self, module: nn.Module) -> bytes:
        """`module`'s record as bytes (Burn: `recorder.record(model.into_record(), ())`)."""
        item = module_to_record(module, self.settings, self.burn_version, lazy=True)
        return self.record(item, module=module)

    def load_module(self, module: nn.Module, data: Bytes, device: torch.device | str | None = None) -> None:
        """Load a module record (any precision) from `data` into `module`, in place (Burn:
        `model.load_record(recorder.load(bytes, &device))`)."""
        load_module_record(module, self.load(data, module=module), BYTES)
        if device is not None:
            module.to(device)


class BinBytesRecorder(BytesRecorder):
    """Burn's `BinBytesRecorder<S>`: `BinFileRecorder`'s bincode in memory. bincode has no field
    names, so a module record is written and read with its module (`save_module`/`load_module`,
    or `module=`)."""

    file_recorder = BinFileRecorder
    format_type = "BinBytesRecorder"
    type_args = ("alloc::vec::Vec<u8>",)


class NamedMpkBytesRecorder(BytesRecorder):
    """Burn's `NamedMpkBytesRecorder<S>`: `NamedMpkFileRecorder`'s named MessagePack in memory."""

    file_recorder = NamedMpkFileRecorder
    format_type = "NamedMpkBytesRecorder"


class NoStdInferenceRecorder(BinBytesRecorder):
    """Burn's `NoStdInferenceRecorder`: `BinBytesRecorder<FullPrecisionSettings, &'static [u8]>`,
    the recorder that reads weights compiled into a no-std binary."""

    type_args = ("&[u8]",)

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(FullPrecisionSettings, burn_version)
