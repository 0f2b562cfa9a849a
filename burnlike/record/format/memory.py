"""Burn's in-memory recorders (`burn_core::record::memory`): `BinBytesRecorder`,
`NamedMpkBytesRecorder` and the alias `NoStdInferenceRecorder`.

Burn's `recorder.record(item, ())` returns the record as bytes and `recorder.load(bytes, &device)`
reads them back. The bytes are those the matching file recorder (`BinFileRecorder`,
`NamedMpkFileRecorder`) writes into a file, except `metadata.format`: Burn writes the writing
recorder's Rust type name there (`burn_core::record::memory::BinBytesRecorder<…>`), and no reader
checks it. Reading goes through the file recorders' bounded decoders, so malformed bytes raise
`RecordError`, its message led by the recorder and what it expected (`BinBytesRecorder.load:
expected the bytes BinBytesRecorder.record/save_module write (bincode, …); got …`) and naming the
recorder that wrote other bytes; a path given for the bytes is a `TypeError` naming the file
recorder that reads it.

The recorder registry (`registry.py`) does not list these: its names pick a recorder for a path
(load_file, checkpoints, the CLI, the app), and a bytes recorder has no file to read or write.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeAlias

import torch
from torch import nn

from burnlike.record.error import RecordError, quote
from burnlike.record.format import registry
from burnlike.record.format.bincode import ITEM_FORMAT, BinFileRecorder, read_metadata
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

    `BinBytesRecorder(HalfPrecisionSettings, burn_version="0.19.0")`.

    Args:
        settings: The precision floats and ints are written at: a settings class
            (`HalfPrecisionSettings`) or an instance; full precision when None.
        burn_version: The Burn version whose record layout is written.
    """

    file_recorder: ClassVar[type[Recorder]] = Recorder  # the format: its encode/decode
    format_name = ""  # the format in words, for errors
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
        """Burn's `recorder.record(item, ())`: `BurnRecord{metadata, item, _b}` as bytes.

        Args:
            item: A record item: a module's (`module.into_record()`) or any tree of maps, lists,
                strings, numbers and tensors.
            module: The module the item came from; bincode, which has no field names, needs it to
                write a module record.
        """
        out = io.BytesIO()
        self.format.write({"metadata": self.metadata(), "item": item, "_b": []}, module, out)
        return out.getvalue()

    def load(self, data: Bytes, device: torch.device | str | None = None, *,
             module: nn.Module | None = None) -> Any:
        """Burn's `recorder.load(bytes, &device)`: the record's item.

        Args:
            data: The bytes `record` or `save_module` returned.
            device: Burn's argument, unused: the tensors go to a device when the item is loaded
                into a module (`load_module`, `module.load_record`).
            module: The module the record was written from; bincode needs it to read a module
                record.

        Raises:
            RecordError: The bytes are not such a record, saying what they look like instead.
            TypeError: `data` is not bytes (a path names the file recorder that reads it).
        """
        return self._read(data, module, "load")[1]

    def read_record(self, data: Bytes, *, module: nn.Module | None = None) -> tuple[dict[str, str], Any]:
        """`(metadata, item)` of the record in `data`.

        Args:
            data: The bytes `record` or `save_module` returned.
            module: The module the record was written from (bincode needs it).
        """
        return self._read(data, module, "read_record")

    def _expected(self, method: str) -> str:
        name = type(self).__name__
        return (f"{name}.{method}: expected the bytes {name}.record/save_module write ({self.format_name}, "
                f"as a {self.file_recorder.__name__} file holds them)")

    def _read(self, data: Bytes, module: nn.Module | None, method: str) -> tuple[dict[str, str], Any]:
        """Parse `data`; an error says which call expected what, and what `data` looks like instead."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{self._expected(method)}; got {self._not_bytes(data)}")
        if len(data) == 0:
            raise RecordError(f"{self._expected(method)}; got no bytes", BYTES)
        try:
            if module is not None or not self._needs_module(data):
                return self.format.parse(io.BytesIO(data), len(data), BYTES, module, lazy=False)
        except RecordError as e:
            got = f"{len(data):,} byte{'s' if len(data) > 1 else ''}{self._which(data)}"
            raise RecordError(f"{self._expected(method)}; got {got}: {e.detail}", BYTES, e.key) from None
        name = type(self).__name__
        raise RecordError(f"{name}.{method}: expected the module the bytes were written from ({self.format_name} "
                          f"has no field names; the record is read along the module's fields): "
                          f"{name}().load_module(module, data) or {name}().load(data, module=module)", BYTES)

    def _needs_module(self, data: Bytes) -> bool:
        """Whether the record in `data` can only be read along its module's fields."""
        return False

    def _not_bytes(self, data: object) -> str:
        """What was passed instead of bytes; for a path, the file recorder that reads it."""
        if isinstance(data, str) and ("\n" in data or "\0" in data):
            return f"str of {len(data):,} characters: text, not bytes (a file's bytes are read with open(path, 'rb'))"
        if not isinstance(data, (str, os.PathLike)):
            return type(data).__name__
        path = os.fsdecode(os.fspath(data))
        found = registry.by_extension(path)
        reader = type(found).__name__ if found is not None else self.file_recorder.__name__
        return (f"{type(data).__name__} {quote(path)}, a path: a file is read by the file recorder, "
                f"{reader}().load(path) or module.load_file(path, {reader}())")

    def _which(self, data: Bytes) -> str:
        """What `data` is, where that can be told: gzip, or a record whose metadata names its writer."""
        if bytes(data[:2]) == b"\x1f\x8b":
            return " of gzip (a *GzFileRecorder file; gzip.decompress them first)"
        writer = _writer(data)
        if writer is None:
            return ""
        said = f" whose metadata names {quote(writer)}"
        type_name = writer.removeprefix(ITEM_FORMAT).split("<")[0].rsplit("::", 1)[-1]
        for cls in (BinBytesRecorder, NamedMpkBytesRecorder):
            if type_name.startswith(cls.format_type.removesuffix("BytesRecorder")) and not isinstance(self, cls):
                said += f" ({cls.format_name}: {cls.__name__} reads them)"
        return said

    def save_module(self, module: nn.Module) -> bytes:
        """`module`'s record as bytes (Burn: `recorder.record(model.into_record(), ())`).

        Args:
            module: The module to record.
        """
        item = module_to_record(module, self.settings, self.burn_version, lazy=True)
        return self.record(item, module=module)

    def load_module(self, module: nn.Module, data: Bytes, device: torch.device | str | None = None) -> None:
        """Load a module record (any precision) from `data` into `module`, in place (Burn:
        `model.load_record(recorder.load(bytes, &device))`).

        Args:
            module: The module to load into; it must have the record's structure.
            data: The bytes `save_module` returned.
            device: Move the module there once loaded; None leaves it where it is.

        Raises:
            RecordError: The bytes are not a record of this module, naming the key.
        """
        load_module_record(module, self._read(data, module, "load_module")[1], BYTES)
        if device is not None:
            module.to(device)


class BinBytesRecorder(BytesRecorder):
    """Burn's `BinBytesRecorder<S>`: `BinFileRecorder`'s bincode in memory. bincode has no field
    names, so a module record is written and read with its module (`save_module`/`load_module`,
    or `module=`)."""

    file_recorder = BinFileRecorder
    format_name = "bincode"
    format_type = "BinBytesRecorder"
    type_args = ("alloc::vec::Vec<u8>",)

    def _needs_module(self, data: Bytes) -> bool:
        return not read_metadata(data, BYTES)[0]["format"].startswith(ITEM_FORMAT)


class NamedMpkBytesRecorder(BytesRecorder):
    """Burn's `NamedMpkBytesRecorder<S>`: `NamedMpkFileRecorder`'s named MessagePack in memory."""

    file_recorder = NamedMpkFileRecorder
    format_name = "named MessagePack"
    format_type = "NamedMpkBytesRecorder"


class NoStdInferenceRecorder(BinBytesRecorder):
    """Burn's `NoStdInferenceRecorder`: `BinBytesRecorder<FullPrecisionSettings, &'static [u8]>`,
    the recorder that reads weights compiled into a no-std binary.

    Args:
        burn_version: The Burn version whose record layout is written (`"0.19.0"` for Burn 0.19's).
    """

    type_args = ("&[u8]",)

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(FullPrecisionSettings, burn_version)


def _writer(data: Bytes) -> str | None:
    """The `metadata.format` (the writing recorder's Rust type) of a record in either bytes format."""
    readers: tuple[Callable[[], dict[str, str]], ...] = (
        lambda: read_metadata(data, BYTES)[0],
        lambda: NamedMpkFileRecorder().parse(io.BytesIO(data), len(data), BYTES, None, lazy=True)[0],
    )
    for read in readers:
        try:
            written_by = read().get("format", "")
        except RecordError:
            continue
        if written_by.startswith(("burn_core::", ITEM_FORMAT)):
            return written_by
    return None
