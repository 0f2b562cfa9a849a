"""Burn's `BinFileRecorder`/`BinGzFileRecorder`: bincode 2 (standard config) records, and its aliases
`SensitiveCompactRecorder` (gzipped, half precision) and `NoStdTrainingRecorder` (full).

bincode carries no field names, so reading and writing walk the PyTorch module's fields in
declaration order (`walker.walk`), with the layout of the record's Burn version (0.19 writes
`[nil, nil]` for Conv2d geometry and `Some(nil)` for optional stateless modules).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, Any

from torch import nn

from burnlike.record.error import RecordError
from burnlike.record.format.budget import Budget
from burnlike.record.format.files import rewindable
from burnlike.record.format.messagepack import read_msgpack, write_msgpack
from burnlike.record.format.module_record import check_param_id
from burnlike.record.format.recorder import Recorder
from burnlike.record.format.walker import Field, ModuleArray, Visitor, walk
from burnlike.record.tensor.ahead import ViewsAhead, tensor_bytes_in
from burnlike.record.tensor.dtypes import BINCODE_INDEX
from burnlike.record.tensor.layout import TensorBytes
from burnlike.record.tensor.precision import FullPrecisionSettings, HalfPrecisionSettings
from burnlike.record.tensor.tensor_data import DtypeField
from burnlike.record.tensor.version import DEFAULT_VERSION, is_0_19

METADATA_KEYS = ("float", "int", "format", "version", "settings")
ITEM_FORMAT = "burnlike::item::"
_NIL = b"\x00"
_SOME_NIL = b"\x01\x00"


class _Reader(Visitor[None]):
    """bincode bytes → the named module record item, following the module's fields."""

    def __init__(self, data: bytes | bytearray | memoryview, path: Path) -> None:
        self.data, self.pos, self.path = memoryview(data), 0, path
        self.key = ""
        self.v19 = False

    def fail(self, message: str) -> RecordError:
        return RecordError(f"{message} (byte {self.pos})", self.path, self.key or None)

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"needs {n} more bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def varint(self) -> int:
        first = self.take(1)[0]
        if first < 251:
            return first
        width = {251: 2, 252: 4, 253: 8}.get(first)
        if width is None:
            raise self.fail(f"invalid varint tag {first}")
        return int.from_bytes(self.take(width), "little")

    def string(self) -> str:
        try:
            return bytes(self.take(self.varint())).decode()
        except UnicodeDecodeError:
            raise self.fail("string is not UTF-8") from None

    def nil(self) -> None:
        if self.take(1)[0] != 0:
            raise self.fail("expected a stateless field (0x00)")

    def param(self) -> dict[str, Any]:
        pid = check_param_id(self.string(), self.path, self.key)
        raw = self.take(self.varint())  # a view: copied once, into the parameter
        ndim = self.varint()
        if ndim > len(self.data) - self.pos:
            raise self.fail(f"shape of {ndim} dims can't fit in the record")
        shape = [self.varint() for _ in range(ndim)]
        index = self.varint()
        if index >= len(BINCODE_INDEX):
            raise self.fail(f"unknown dtype variant {index}")
        dtype = BINCODE_INDEX[index]
        if dtype == "Bool" and not self.v19:
            self.varint()  # BoolStore variant
        return {"id": pid, "param": {"bytes": raw, "shape": shape, "dtype": dtype}}

    # the walk
    def sequence(self, node: None, key: str, m: ModuleArray) -> None:
        self.key = key
        n = self.varint()
        if n != len(m):
            raise self.fail(f"record has {n} entries, the model's {type(m).__name__} has {len(m)}")

    def stateless(self, node: None, key: str) -> None:
        self.key = key
        self.nil()

    def tag(self, field: Field) -> None:
        """An enum variant's index, then an Option's Some, before a field's value."""
        if field.variant is not None:
            index = self.varint()
            if index != field.variant:
                raise self.fail(f"the record has enum variant {index} for {field.name}, the model variant "
                                f"{field.variant}")

    def child(self, node: None, key: str, field: Field) -> None:
        self.key = key
        self.tag(field)
        if field.optional:
            flag = self.take(1)[0]
            if flag != 1:
                raise self.fail(f"the record has no {field.name} (Option tag {flag}), the model has one")

    def leaf(self, node: None, key: str, field: Field) -> Any:
        self.key = key
        self.tag(field)
        if field.kind in ("param", "none"):
            present = True
            if field.optional:
                flag = self.take(1)[0]
                if flag not in (0, 1):
                    raise self.fail(f"invalid Option tag {flag}")
                present = flag == 1
            if present and field.kind == "none":
                raise self.fail(f"the record has a {field.name} the model doesn't have")
            return self.param() if present else None
        if field.kind == "nils":
            for _ in range(field.width):
                self.nil()
            return [None] * field.width
        if field.kind == "some_nil":
            if bytes(self.take(2)) != _SOME_NIL:
                raise self.fail("expected Some(stateless) (0x01 0x00)")
            return None
        self.nil()
        return None


def read_metadata(data: bytes | bytearray | memoryview, path: Path) -> tuple[dict[str, str], _Reader]:
    r = _Reader(data, path)
    return {k: r.string() for k in METADATA_KEYS}, r


def decode(data: bytes | bytearray, path: Path, module: nn.Module | None, budget: Budget | None = None) -> dict[str, Any]:
    metadata, r = read_metadata(data, path)
    if metadata["format"].startswith(ITEM_FORMAT):  # a non-module item (training checkpoint)
        blob = r.take(r.varint())
        if r.pos != len(r.data):
            raise r.fail("extra bytes after the record")
        return {"metadata": metadata, "item": read_msgpack(io.BytesIO(blob), len(blob), path, budget=budget), "_b": []}
    if module is None:
        raise RecordError("bincode records have no field names: load them into a module "
                          "(module.load_file(path, BinFileRecorder()))", path)
    version = metadata["version"]
    r.v19 = is_0_19(version)
    item = walk(module, r, None, version)
    if r.pos != len(r.data):
        raise RecordError(f"{len(r.data) - r.pos} bytes left after the record: the model doesn't match the record",
                          path)
    return {"metadata": metadata, "item": item, "_b": []}


class _Writer(Visitor[Any]):
    """The named module record item → bincode, following the module's fields; tensor bytes are
    streamed to the file."""

    def __init__(self, f: IO[bytes], views: ViewsAhead) -> None:
        self.f, self.views = f, views
        self.parts: list[bytes] = []

    def varint(self, n: int) -> None:
        if n < 251:
            self.parts.append(bytes([n]))
        elif n < 2**16:
            self.parts.append(b"\xfb" + n.to_bytes(2, "little"))
        elif n < 2**32:
            self.parts.append(b"\xfc" + n.to_bytes(4, "little"))
        else:
            self.parts.append(b"\xfd" + n.to_bytes(8, "little"))

    def blob(self, data: bytes | memoryview) -> None:
        self.varint(len(data))
        self.parts.append(bytes(data))

    def flush(self) -> None:
        self.f.write(b"".join(self.parts))
        self.parts.clear()

    def length(self, n: int) -> None:
        self.varint(n)
        self.flush()

    def param(self, value: dict[str, Any]) -> None:
        self.blob(value["id"].encode())
        data = value["param"]
        raw = data["bytes"]
        if isinstance(raw, TensorBytes):
            self.flush()
            self.views.write(raw, self.f, self.length)
        else:
            self.blob(raw)
        self.varint(len(data["shape"]))
        for d in data["shape"]:
            self.varint(d)
        dtype = data["dtype"]
        if isinstance(dtype, DtypeField):  # decided by now: its bytes were written first
            dtype = dtype.value()
        if isinstance(dtype, dict):
            self.varint(BINCODE_INDEX.index("Bool"))
            self.varint(0)
        else:
            self.varint(BINCODE_INDEX.index(dtype))

    # the walk
    def sequence(self, node: Any, key: str, m: ModuleArray) -> None:
        self.varint(len(m))

    def entry(self, node: Any, index: int) -> Any:
        return node[index]

    def stateless(self, node: Any, key: str) -> None:
        self.parts.append(_NIL)

    def tag(self, field: Field) -> None:
        if field.variant is not None:
            self.varint(field.variant)

    def child(self, node: Any, key: str, field: Field) -> Any:
        self.tag(field)
        if field.optional:
            self.parts.append(b"\x01")
        return node[field.name]

    def leaf(self, node: Any, key: str, field: Field) -> None:
        self.tag(field)
        if field.kind == "param":
            if field.optional:
                self.parts.append(b"\x01")
            self.param(node[field.name])
        elif field.kind == "nils":
            self.parts.append(_NIL * field.width)
        elif field.kind == "some_nil":
            self.parts.append(_SOME_NIL)
        else:  # nil, or an absent Option (None)
            self.parts.append(_NIL)


def encode(record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
    """Write bincode to `f`, walking `module`'s fields; tensor bytes are streamed."""
    metadata = dict(record["metadata"])
    if module is None:  # not a module record: Burn can't read it anyway; keep it self-describing
        metadata["format"] = ITEM_FORMAT + metadata["format"]
    with ViewsAhead(tensor_bytes_in(record["item"]) if module is not None else (), rewind=rewindable(f)) as views:
        w = _Writer(f, views)
        for k in METADATA_KEYS:
            w.blob(metadata[k].encode())
        if module is None:
            body = io.BytesIO()
            write_msgpack(record["item"], body)
            w.blob(body.getbuffer())
        else:
            walk(module, w, record["item"], metadata["version"])
        w.flush()


class BinFileRecorder(Recorder):
    """bincode 2 (standard config), Burn's `BinFileRecorder`: loads and saves need the module.

    A non-module item (a training checkpoint from `RecorderCheckpointIO`) is stored as the five
    metadata strings, then the item as a MessagePack blob, with `format` prefixed by
    `burnlike::item::` so readers know; Burn itself can't read such a file.
    """

    extension = "bin"
    format_type = "BinFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        encode(record, module, f)

    def decode(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool,
               budget: Budget) -> Any:
        return decode(f.read(), path, module, budget)


class BinGzFileRecorder(BinFileRecorder):
    """Burn's `BinGzFileRecorder`: bincode, gzipped (`.bin.gz`); loads and saves need the module."""

    extension = "bin.gz"
    format_type = "BinGzFileRecorder"
    gzip = True


class SensitiveCompactRecorder(BinGzFileRecorder):
    """Burn's `SensitiveCompactRecorder`: `BinGzFileRecorder<HalfPrecisionSettings>`, the smallest
    files; without field names, so a change to the model's fields breaks them.

    Args:
        burn_version: The Burn version whose record layout is written (`"0.19.0"` for Burn 0.19's).
    """

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(HalfPrecisionSettings, burn_version)


class NoStdTrainingRecorder(BinFileRecorder):
    """Burn's `NoStdTrainingRecorder`: `BinFileRecorder<FullPrecisionSettings>`, files that
    `NoStdInferenceRecorder` reads as bytes.

    Args:
        burn_version: The Burn version whose record layout is written (`"0.19.0"` for Burn 0.19's).
    """

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(FullPrecisionSettings, burn_version)
