"""Burn's file recorders: `BurnRecord{metadata, item, _b}` as MessagePack, JSON or bincode.

`NamedMpkFileRecorder(HalfPrecisionSettings)` is `CompactRecorder()`; `save_module` replaces the
file's extension like Burn's `set_extension` and writes atomically (temp file in the same folder,
fsync, rename), so a crash mid-save never leaves a torn file at the destination.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

import msgpack
from torch import nn

from burnlike.record.error import RecordError
from burnlike.record.module_record import load_module_record, module_to_record
from burnlike.record.precision import PrecisionSettings, as_settings

DEFAULT_VERSION = "0.21.0"
MAX_DECOMPRESSED = 8 * 2**30  # gzip streams are inflated incrementally and refused past this


class Recorder:
    """Base of all file recorders: settings, metadata, atomic writes, safe reads."""

    extension = ""
    format_type = ""  # Rust type name written into metadata.format

    def __init__(self, settings: Any = None, burn_version: str = DEFAULT_VERSION) -> None:
        self.settings: PrecisionSettings = as_settings(settings)
        self.burn_version = burn_version

    def __class_getitem__(cls, settings: Any) -> Any:
        """`NamedMpkFileRecorder[HalfPrecisionSettings]()` — Burn's generic spelling."""
        return lambda burn_version=DEFAULT_VERSION: cls(settings, burn_version)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.name})"

    def file_extension(self) -> str:
        return self.extension

    def metadata(self) -> dict[str, str]:
        name = self.settings.name
        return {
            "float": self.settings.float_name,
            "int": self.settings.int_name,
            "format": f"burn_core::record::file::{self.format_type}<burn_core::record::settings::{name}>",
            "version": self.burn_version,
            "settings": name,
        }

    def path_for(self, path: str | os.PathLike[str]) -> Path:
        """Replace any extension with this recorder's (`model.mpk.gz` → `model.bin`)."""
        p = Path(path)
        name = p.name
        for known in ("mpk.gz", "json.gz", "bin.gz", "mpk", "json", "bin", "ckpt"):
            if name.endswith("." + known):
                name = name[: -len(known) - 1]
                break
        else:
            name = p.stem if p.suffix else name
        return p.with_name(f"{name}.{self.extension}")

    # Whole records ------------------------------------------------------------------------------
    def record(self, item: Any, path: str | os.PathLike[str], *, exact_path: bool = False,
               module: nn.Module | None = None) -> Path:
        """Write `BurnRecord{metadata, item, _b}` to `path` (extension replaced unless `exact_path`)."""
        target = Path(path) if exact_path else self.path_for(path)
        payload = self.encode({"metadata": self.metadata(), "item": item, "_b": []}, module)
        atomic_write(target, payload)
        return target

    def load(self, path: str | os.PathLike[str], *, exact_path: bool = True, module: nn.Module | None = None) -> Any:
        """Read a record and return `(metadata, item)`; any malformed input raises RecordError."""
        target = Path(path) if exact_path else self.path_for(path)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise RecordError("no such record file", target) from None
        except OSError as e:
            raise RecordError(f"cannot read ({e.strerror})", target) from None
        record = self.decode(data, target, module)
        if not isinstance(record, dict) or "item" not in record or "metadata" not in record:
            raise RecordError("not a Burn record (expected a map with 'metadata' and 'item')", target)
        metadata = record["metadata"]
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise RecordError("metadata must be a map of strings", target, "metadata")
        return metadata, record["item"]

    # Modules -------------------------------------------------------------------------------------
    def save_module(self, module: nn.Module, path: str | os.PathLike[str]) -> Path:
        return self.record(module_to_record(module, self.settings, self.burn_version), path, module=module)

    def load_module(self, module: nn.Module, path: str | os.PathLike[str], device: Any = None) -> None:
        target = Path(path)
        if not target.exists() and self.path_for(target).exists():
            target = self.path_for(target)
        _, item = self.load(target, module=module)
        if isinstance(item, dict) and "state_dict" in item and "pytorch-lightning_version" in item:
            from burnlike.record.checkpoint_io import weights_from_checkpoint

            weights_from_checkpoint(module, item, target)
        else:
            load_module_record(module, item, target)
        if device is not None:
            module.to(device)

    # Format hooks ----------------------------------------------------------------------------------
    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        raise NotImplementedError


def atomic_write(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems can't fsync a directory
        pass


def gunzip(data: bytes, path: Path, limit: int = MAX_DECOMPRESSED) -> bytes:
    """Inflate incrementally, refusing streams that expand past `limit` (gzip bombs)."""
    out = bytearray()
    decomp = zlib.decompressobj(wbits=31)
    try:
        chunk = decomp.decompress(data, 1 << 24)
        while True:
            out += chunk
            if len(out) > limit:
                raise RecordError(f"gzip stream inflates past {limit} bytes", path)
            if decomp.eof:
                rest = decomp.unused_data
                if rest.strip(b"\0"):
                    decomp = zlib.decompressobj(wbits=31)  # another gzip member
                    chunk = decomp.decompress(rest, 1 << 24)
                    continue
                break
            if not decomp.unconsumed_tail and not chunk:
                raise RecordError("truncated gzip stream", path)
            chunk = decomp.decompress(decomp.unconsumed_tail, 1 << 24)
    except zlib.error as e:
        raise RecordError(f"not valid gzip ({e})", path) from None
    return bytes(out)


def unpack_msgpack(data: bytes, path: Path) -> Any:
    try:
        # Lengths are bounded by the input size; int keys (optimizer state) are allowed.
        return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except RecordError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData, UnicodeDecodeError,
            OverflowError, RecursionError, MemoryError) as e:
        raise RecordError(f"not valid MessagePack ({type(e).__name__}: {e})", path) from None


class NamedMpkFileRecorder(Recorder):
    extension = "mpk"
    format_type = "NamedMpkFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        return msgpack.packb(record, use_bin_type=True)

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        return unpack_msgpack(data, path)


class NamedMpkGzFileRecorder(NamedMpkFileRecorder):
    extension = "mpk.gz"
    format_type = "NamedMpkGzFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        return gzip.compress(super().encode(record, module), compresslevel=6, mtime=0)

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        return super().decode(gunzip(data, path), path, module)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return list(bytes(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        raise RecordError(f"JSON recorders can't store {obj}")
    return obj


class PrettyJsonFileRecorder(Recorder):
    """Human-readable records: bytes as lists of u8, `_b` as null (serde_json's PhantomData)."""

    extension = "json"
    format_type = "PrettyJsonFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        return json.dumps(_jsonable({**record, "_b": None}), indent=2).encode()

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as e:
            raise RecordError(f"not valid JSON ({e})", path) from None


class JsonGzFileRecorder(PrettyJsonFileRecorder):
    extension = "json.gz"
    format_type = "JsonGzFileRecorder"

    def encode(self, record: dict[str, Any], module: nn.Module | None) -> bytes:
        compact = json.dumps(_jsonable({**record, "_b": None}), separators=(",", ":")).encode()
        return gzip.compress(compact, compresslevel=6, mtime=0)

    def decode(self, data: bytes, path: Path, module: nn.Module | None) -> Any:
        return super().decode(gunzip(data, path), path, module)


def CompactRecorder(burn_version: str = DEFAULT_VERSION) -> NamedMpkFileRecorder:  # noqa: N802 - Burn's alias
    """Burn's `CompactRecorder`: NamedMpk with half precision (f16 floats, i16 ints)."""
    from burnlike.record.precision import HalfPrecisionSettings

    return NamedMpkFileRecorder(HalfPrecisionSettings, burn_version)


def DefaultRecorder(burn_version: str = DEFAULT_VERSION) -> NamedMpkFileRecorder:  # noqa: N802 - Burn's alias
    """Burn's `DefaultRecorder`: NamedMpk with full precision."""
    return NamedMpkFileRecorder(None, burn_version)
