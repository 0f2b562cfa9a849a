"""Hostile record files: each builds one in a folder; the decoding budget or a check must refuse it."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import msgpack

from burnlike.record import RecorderCheckpointIO, load_checkpoint
from burnlike.record.format import registry
from tests.helpers.records import Net

META = {"float": "f32", "int": "i32", "format": "burn_core::record::file::NamedMpkFileRecorder<x>",
        "version": "0.21.0", "settings": "FullPrecisionSettings"}


def record(item: object) -> bytes:
    return msgpack.packb({"metadata": META, "item": item, "_b": []}, use_bin_type=True)


def flood(n: int) -> bytes:
    """A Burn record whose item is an array of `n` empty arrays (one byte each)."""
    head = msgpack.packb("metadata") + msgpack.packb(META) + msgpack.packb("item")
    return b"\x83" + head + b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n + msgpack.packb("_b") + b"\x90"


def param(data: object) -> dict[str, object]:
    """A module record for `Net` whose first parameter's TensorData is `data`."""
    return {"embed": {"weight": {"id": "abcdefghij", "param": data}}}


def hostile_checkpoint(value: object) -> dict[str, object]:
    return {"state_dict": {"model.w": value}, "pytorch-lightning_version": "2"}


GOOD = {"bytes": b"\0" * 4, "shape": [1], "dtype": "F32"}


BIG_STRING = "F" * 10_000_000


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        path = d / name
        path.write_bytes(data)
        return path
    return make


def _link(name: str) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        path = d / name
        path.symlink_to("/dev/zero")
        return path
    return make


def _dir(d: Path) -> Path:
    path = d / "x.ckpt"
    path.mkdir()
    return path


# name -> (builder, whether the decoding budget is what must refuse it)
CASES: dict[str, tuple[Callable[[Path], Path], bool]] = {
    "32M-empty-arrays.mpk.gz": (_write("flood.mpk.gz", gzip.compress(flood(32 << 20), 9, mtime=0)), True),
    "8MB-empty-arrays.mpk": (_write("flood.mpk", flood(8 << 20)), True),
    "8MB-empty-arrays.json": (_write("flood.json", b'{"metadata":{},"item":[' + b"[]," * (8 << 20) + b"[]]}"),
                              True),
    "100k-empty-gzip-members.mpk.gz": (_write("members.mpk.gz", gzip.compress(b"", mtime=0) * 100_000), False),
    "dev-zero.json": (_link("zero.json"), False),
    "dev-zero.mpk.gz": (_link("zero.mpk.gz"), False),
    "dtype-empty-map.mpk": (_write("a.mpk", record(param({**GOOD, "dtype": {}}))), False),
    "dtype-int.mpk": (_write("b.mpk", record(param({**GOOD, "dtype": 3}))), False),
    "bytes-int.mpk": (_write("c.mpk", record(param({**GOOD, "bytes": 5}))), False),
    "tensor-marker-int-data.mpk": (_write("d.mpk", record(hostile_checkpoint({"__burnlike__": "tensor", "data": 5}))),
                                   False),
    "directory.ckpt": (_dir, False),
    "garbage.safetensors": (_write("g.safetensors", b"\xff" * 64), False),
    "negative-shape.mpk": (_write("e.mpk", record(param({**GOOD, "shape": [-1, -4]}))), False),
    "unknown-dtype.mpk": (_write("f.mpk", record(param({**GOOD, "dtype": "F128"}))), False),
    "10MB-dtype.mpk": (_write("h.mpk", record(param({**GOOD, "dtype": BIG_STRING}))), False),
    "10MB-param-id.mpk": (_write("k.mpk", record({"embed": {"weight": {"id": BIG_STRING, "param": GOOD}}})), False),
    "1M-dim-shape.mpk": (_write("i.mpk", record(param({**GOOD, "shape": [1] * 1_000_000}))), True),
    "checkpoint-10MB-torch-dtype.mpk": (_write("j.mpk", record(hostile_checkpoint({"__burnlike__": "dtype",
                                                                            "name": BIG_STRING}))), False),
}


# Every way a user loads a file: each must refuse a hostile one with RecordError.
def _recorder_load(path: Path) -> None:
    registry.sniff(path).load(path)


def _module_load(path: Path) -> None:
    Net().load_file(path)


def _plugin(path: Path) -> None:
    RecorderCheckpointIO(registry.sniff(path)).load_checkpoint(path)


LOADERS: dict[str, Callable[[Path], object]] = {
    "Recorder.load": _recorder_load, "Module.load_file": _module_load, "load_checkpoint": load_checkpoint,
    "plugin": _plugin,
}
