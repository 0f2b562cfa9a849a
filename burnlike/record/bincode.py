"""Burn's `BinFileRecorder`/`BinGzFileRecorder`: bincode 2 (standard config) records.

bincode carries no field names, so reading and writing walk the PyTorch module's fields in
declaration order (`module_record.fields`), with the layout of the record's Burn version (0.19
writes `[nil, nil]` for Conv2d geometry and `Some(nil)` for optional stateless modules).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from torch import nn

from burnlike.record.codec import BINCODE_INDEX
from burnlike.record.error import RecordError
from burnlike.record.module_record import check_param_id, fields, is_stateless, module_to_record
from burnlike.record.recorder import Recorder, gunzip

METADATA_KEYS = ("float", "int", "format", "version", "settings")


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


def decode(data: bytes, path: Path, module: nn.Module | None) -> dict[str, Any]:
    if module is None:
        raise RecordError("bincode records have no field names: load them into a module "
                          "(module.load_file(path, BinFileRecorder()))", path)
    r = _Reader(data, path)
    metadata = {k: r.string() for k in METADATA_KEYS}
    version = metadata["version"]
    v19 = _version_19(version)

    def param() -> dict[str, Any]:
        pid = check_param_id(r.string(), path, r.key)
        raw = bytes(r.take(r.varint()))
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


def encode(record: dict[str, Any], module: nn.Module | None) -> bytes:
    if module is None:
        raise RecordError("BinFileRecorder writes module records only (it needs the module's field order)")
    w = _Writer()
    metadata = record["metadata"]
    for k in METADATA_KEYS:
        w.blob(metadata[k].encode())
    version = metadata["version"]

    def param(value: dict[str, Any]) -> None:
        w.blob(value["id"].encode())
        data = value["param"]
        w.blob(data["bytes"])
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
        for f in fields(m, version):
            if f.kind == "module":
                visit(f.module, item[f.name])  # type: ignore[arg-type]
            elif f.kind == "param":
                if f.optional:
                    w.raw(b"\x01")
                param(item[f.name])
            elif f.kind == "none":
                w.raw(b"\x00")
            elif f.kind == "nil2":
                w.raw(b"\x00\x00")
            elif f.kind == "some_nil":
                w.raw(b"\x01\x00")
            else:
                w.raw(b"\x00")

    visit(module, record["item"])
    return b"".join(w.parts)


class BinFileRecorder(Recorder):
    extension = "bin"
    format_type = "BinFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        return encode(record, module)

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        return decode(data, path, module)

    def save_module(self, module: nn.Module, path: Any) -> Path:
        return self.record(module_to_record(module, self.settings, self.burn_version), path, module=module)


class BinGzFileRecorder(BinFileRecorder):
    extension = "bin.gz"
    format_type = "BinGzFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        return gzip.compress(encode(record, module), compresslevel=6, mtime=0)

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        return decode(gunzip(data, path), path, module)
