"""Burn's `BinFileRecorder`/`BinGzFileRecorder`: bincode 2 (standard config) records.

bincode carries no field names, so reading and writing walk the PyTorch module's fields in
declaration order (`module_record.fields`), with the layout of the record's Burn version (0.19
writes `[nil, nil]` for Conv2d geometry and `Some(nil)` for optional stateless modules).
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO, Any

from torch import nn

from burnlike.record import stream
from burnlike.record.codec import BINCODE_INDEX
from burnlike.record.error import RecordError
from burnlike.record.module_record import check_param_id, fields, is_stateless
from burnlike.record.recorder import Recorder, gunzip

METADATA_KEYS = ("float", "int", "format", "version", "settings")
ITEM_FORMAT = "burnlike::item::"


class _Reader:
    def __init__(self, data: bytes, path: Path) -> None:
        self.data, self.pos, self.path = memoryview(data), 0, path
        self.key = ""

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


class _Writer:
    def __init__(self) -> None:
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

    def blob(self, data: bytes) -> None:
        self.varint(len(data))
        self.parts.append(bytes(data))

    def raw(self, data: bytes) -> None:
        self.parts.append(data)


def _version_19(version: str) -> bool:
    return version.startswith(("0.14", "0.15", "0.16", "0.17", "0.18", "0.19"))


def read_metadata(data: bytes, path: Path) -> tuple[dict[str, str], _Reader]:
    r = _Reader(data, path)
    return {k: r.string() for k in METADATA_KEYS}, r


def decode(data: bytes, path: Path, module: nn.Module | None) -> dict[str, Any]:
    metadata, r = read_metadata(data, path)
    if metadata["format"].startswith(ITEM_FORMAT):  # a non-module item (training checkpoint)
        blob = r.take(r.varint())
        if r.pos != len(r.data):
            raise r.fail("extra bytes after the record")
        return {"metadata": metadata, "item": stream.read_msgpack(io.BytesIO(blob), len(blob), path), "_b": []}
    if module is None:
        raise RecordError("bincode records have no field names: load them into a module "
                          "(module.load_file(path, BinFileRecorder()))", path)
    version = metadata["version"]
    v19 = _version_19(version)

    def param() -> dict[str, Any]:
        pid = check_param_id(r.string(), path, r.key)
        raw = r.take(r.varint())  # a view: copied once, into the parameter
        ndim = r.varint()
        if ndim > len(r.data) - r.pos:
            raise r.fail(f"shape of {ndim} dims can't fit in the file")
        shape = [r.varint() for _ in range(ndim)]
        index = r.varint()
        if index >= len(BINCODE_INDEX):
            raise r.fail(f"unknown dtype variant {index}")
        dtype: Any = BINCODE_INDEX[index]
        if dtype == "Bool" and not v19:
            r.varint()  # BoolStore variant
        return {"id": pid, "param": {"bytes": raw, "shape": shape, "dtype": dtype}}

    def visit(m: nn.Module, key: str) -> Any:
        if isinstance(m, (nn.ModuleList, nn.Sequential)):
            r.key = key
            n = r.varint()
            if n != len(m):
                raise r.fail(f"record has {n} entries, the model's {type(m).__name__} has {len(m)}")
            return [visit(c, f"{key}.{i}" if key else str(i)) if not is_stateless(c) else r.nil()
                    for i, c in enumerate(m)]
        if is_stateless(m):
            r.key = key
            return r.nil()
        out: dict[str, Any] = {}
        for f in fields(m, version):
            r.key = f"{key}.{f.name}" if key else f.name
            if f.kind == "module":
                out[f.name] = visit(f.module, r.key)  # type: ignore[arg-type]
            elif f.kind in ("param", "none"):
                present = True
                if f.optional:
                    flag = r.take(1)[0]
                    if flag not in (0, 1):
                        raise r.fail(f"invalid Option tag {flag}")
                    present = flag == 1
                if present and f.kind == "none":
                    raise r.fail(f"the record has a {f.name} the model doesn't have")
                out[f.name] = param() if present else None
            elif f.kind == "nil2":
                r.nil()
                r.nil()
                out[f.name] = [None, None]
            elif f.kind == "some_nil":
                if bytes(r.take(2)) != b"\x01\x00":
                    raise r.fail("expected Some(stateless) (0x01 0x00)")
                out[f.name] = None
            else:
                r.nil()
                out[f.name] = None
        return out

    item = visit(module, "")
    if r.pos != len(r.data):
        raise RecordError(f"{len(r.data) - r.pos} bytes left after the record: the model doesn't match the file",
                          path)
    return {"metadata": metadata, "item": item, "_b": []}


def encode(record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
    """Write bincode to `f`, walking `module`'s fields; tensor bytes are streamed."""
    metadata = dict(record["metadata"])
    if module is None:  # not a module record: Burn can't read it anyway; keep it self-describing
        metadata["format"] = ITEM_FORMAT + metadata["format"]
    w = _Writer()
    for k in METADATA_KEYS:
        w.blob(metadata[k].encode())
    if module is None:
        body = io.BytesIO()
        stream.write_msgpack(record["item"], body)
        w.blob(body.getbuffer())
        f.write(b"".join(w.parts))
        return
    version = metadata["version"]
    scratch = stream.Scratch()

    def flush() -> None:
        f.write(b"".join(w.parts))
        w.parts.clear()

    def param(value: dict[str, Any]) -> None:
        w.blob(value["id"].encode())
        data = value["param"]
        raw = data["bytes"]
        if isinstance(raw, stream.TensorBytes):
            view = raw.view(scratch)
            w.varint(view.nbytes)
            flush()
            f.write(view)
        else:
            w.blob(raw)
        w.varint(len(data["shape"]))
        for d in data["shape"]:
            w.varint(d)
        dtype = data["dtype"]
        if isinstance(dtype, dict):
            w.varint(BINCODE_INDEX.index("Bool"))
            w.varint(0)
        else:
            w.varint(BINCODE_INDEX.index(dtype))

    def visit(m: nn.Module, item: Any) -> None:
        if isinstance(m, (nn.ModuleList, nn.Sequential)):
            w.varint(len(m))
            for c, sub in zip(m, item):
                if is_stateless(c):
                    w.raw(b"\x00")
                else:
                    visit(c, sub)
            return
        if is_stateless(m):
            w.raw(b"\x00")
            return
        for fld in fields(m, version):
            if fld.kind == "module":
                visit(fld.module, item[fld.name])  # type: ignore[arg-type]
            elif fld.kind == "param":
                if fld.optional:
                    w.raw(b"\x01")
                param(item[fld.name])
            elif fld.kind == "none":
                w.raw(b"\x00")
            elif fld.kind == "nil2":
                w.raw(b"\x00\x00")
            elif fld.kind == "some_nil":
                w.raw(b"\x01\x00")
            else:
                w.raw(b"\x00")

    visit(module, record["item"])
    flush()


class BinFileRecorder(Recorder):
    """bincode 2 (standard config), Burn's `BinFileRecorder`: loads and saves need the module.

    A non-module item (a training checkpoint from `RecorderCheckpointIO`) is stored as the five
    metadata strings, then the item as a MessagePack blob, with `format` prefixed by
    `burnlike::item::` so readers know; Burn itself can't read such a file.
    """

    extension = "bin"
    format_type = "BinFileRecorder"

    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        encode(record, module, f)

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        return decode(f.read(), path, module)


class BinGzFileRecorder(BinFileRecorder):
    extension = "bin.gz"
    format_type = "BinGzFileRecorder"

    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=6, mtime=0) as gz:
            encode(record, module, gz)  # type: ignore[arg-type]

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        return decode(gunzip(f.read(), path), path, module)
