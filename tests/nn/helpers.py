"""Records laid out as Burn 0.21 writes them (burn-core `record/`, reference/burn.md §7): a NamedMpk
file built here with msgpack, and a saved file read back as plain msgpack."""

from __future__ import annotations

import base64
import itertools
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
from torch import nn

from burnlike.record import NamedMpkFileRecorder

FULL_METADATA = {
    "float": "f32", "int": "i32",
    "format": "burn_core::record::file::NamedMpkFileRecorder<burn_core::record::settings::FullPrecisionSettings>",
    "version": "0.21.0", "settings": "FullPrecisionSettings",
}
_ids = itertools.count(1)


def param(values: Any) -> dict[str, Any]:
    """A `ParamSerde{id, param: TensorData}` of f32 `values` (row-major, little-endian)."""
    array = np.asarray(values, dtype="<f4")
    pid = base64.b32hexencode(next(_ids).to_bytes(8, "little")).decode().lower().rstrip("=")
    return {"id": pid, "param": {"bytes": array.tobytes(), "shape": list(array.shape), "dtype": "F32"}}


def burn_file(path: Path, item: dict[str, Any]) -> Path:
    """`item` written as Burn's `NamedMpkFileRecorder<FullPrecisionSettings>` file."""
    path.write_bytes(msgpack.packb({"metadata": FULL_METADATA, "item": item, "_b": []}, use_bin_type=True))
    return path


def saved_item(module: nn.Module, tmp_path: Path) -> dict[str, Any]:
    """The record item `module` saves (NamedMpk, full precision), decoded as plain msgpack."""
    path = NamedMpkFileRecorder().save_module(module, tmp_path / "saved")
    record = msgpack.unpackb(Path(path).read_bytes(), raw=False)
    item: dict[str, Any] = record["item"]
    return item


class Fields(dict):  # type: ignore[type-arg]
    """A record's fields: equal only to the same fields *in the same order* (bincode has no names,
    so Burn's declaration order is part of the record)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and list(self.items()) == list(other.items())

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


def layout(item: Any) -> Any:
    """The item's structure: field names in order, each param as its shape, nil as None."""
    if isinstance(item, dict) and set(item) == {"id", "param"}:
        return tuple(item["param"]["shape"])
    if isinstance(item, dict):
        return Fields((k, layout(v)) for k, v in item.items())
    if isinstance(item, list):
        return [layout(v) for v in item]
    return item


def values(item: dict[str, Any]) -> np.ndarray:
    """A saved f32 param's values in its stored shape."""
    data = item["param"]
    return np.frombuffer(data["bytes"], dtype="<f4").reshape(data["shape"])
