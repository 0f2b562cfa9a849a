"""Burn's JSON recorders: human-readable records, bytes as lists of u8, `_b` as null (serde_json's
PhantomData). `PrettyJsonFileRecorder` indents; `JsonGzFileRecorder` is compact and gzipped."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import IO, Any

from torch import nn

from burnlike.record.error import RecordError, quote
from burnlike.record.format.budget import Budget
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.layout import TensorBytes
from burnlike.record.tensor.tensor_data import DtypeField


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (TensorBytes, bytes, bytearray, memoryview)):
        return list(bytes(obj))
    if isinstance(obj, DtypeField):
        return obj.value()
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        raise RecordError(f"JSON recorders can't store {obj}; use a MessagePack recorder")
    return obj


class PrettyJsonFileRecorder(Recorder):
    """Human-readable records: bytes as lists of u8, `_b` as null (serde_json's PhantomData)."""

    extension = "json"
    format_type = "PrettyJsonFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        doc = _jsonable({**record, "_b": None})
        f.write((json.dumps(doc, separators=(",", ":")) if self.gzip else json.dumps(doc, indent=2)).encode())

    def decode(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool,
               budget: Budget) -> Any:
        data = f.read()
        budget.take(data.count(b"[") + data.count(b"{"))  # every map/list, before building any (C-speed
        # parsing makes the other values cheap: a list of u8 per tensor is how JSON stores bytes)
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as e:
            raise RecordError(f"not valid JSON ({quote(str(e))})", path) from None


class JsonGzFileRecorder(PrettyJsonFileRecorder):
    """Burn's `JsonGzFileRecorder`: JSON on one line, gzipped (`.json.gz`)."""

    extension = "json.gz"
    format_type = "JsonGzFileRecorder"
    gzip = True
