"""Burn's file recorders: `BurnRecord{metadata, item, _b}` as MessagePack, JSON or bincode.

`NamedMpkFileRecorder(HalfPrecisionSettings)` is `CompactRecorder()`; `save_module` replaces the
file's extension like Burn's `set_extension` and writes atomically (temp file in the same folder,
fsync, rename), so a crash mid-save never leaves a torn file at the destination.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import math
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from torch import nn

from burnlike.record import stream
from burnlike.record.error import RecordError
from burnlike.record.module_record import load_module_record, module_to_record
from burnlike.record.precision import (
    FullPrecisionSettings,
    HalfPrecisionSettings,
    PrecisionSettings,
    as_settings,
)

DEFAULT_VERSION = "0.21.0"
MAX_DECOMPRESSED = 16 * 2**30  # absolute cap on an inflated gzip record
MAX_RATIO = 100  # real records (float weights) deflate ~1.1:1; raise this for mostly-zero records
MIN_LIMIT = 64 * 2**20  # small files may always inflate this far


class Recorder:
    """Base of all file recorders: settings, metadata, atomic writes, safe reads.

    `NamedMpkFileRecorder(HalfPrecisionSettings, burn_version="0.19.0")`: the settings class or an
    instance; the Burn version decides the layout written (readers take it from the file).
    """

    extension = ""
    format_type = ""  # Rust type name written into metadata.format

    def __init__(self, settings: Any = None, burn_version: str = DEFAULT_VERSION) -> None:
        self.settings: PrecisionSettings = as_settings(settings)
        if not isinstance(burn_version, str) or not burn_version.startswith("0."):
            raise ValueError(f"burn_version must look like '0.21.0' or '0.19.0', got {burn_version!r}")
        self.burn_version = burn_version

    def __class_getitem__(cls, settings: Any) -> Any:
        """`NamedMpkFileRecorder[HalfPrecisionSettings]()` — Burn's generic spelling."""
        return functools.partial(cls, settings)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.name}, burn_version={self.burn_version!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Recorder) and other.extension == self.extension
                and other.settings == self.settings and other.burn_version == self.burn_version)

    def __hash__(self) -> int:
        return hash((self.extension, self.settings, self.burn_version))

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
        """Replace any extension with this recorder's (`model.mpk.gz` → `model.bin`, `model` → `model.mpk`)."""
        p = Path(path)
        name = p.name
        for known in KNOWN_EXTENSIONS:
            if name.endswith("." + known):
                name = name[: -len(known) - 1]
                break
        else:
            name = p.stem if p.suffix else name
        return p.with_name(f"{name}.{self.extension}")

    # Whole records ------------------------------------------------------------------------------
    def record(self, item: Any, path: str | os.PathLike[str], *, exact_path: bool = False,
               module: nn.Module | None = None) -> Path:
        """Write `BurnRecord{metadata, item, _b}` to `path` atomically (extension replaced unless
        `exact_path`). `item` may hold lazy `TensorBytes`; they are streamed to the file."""
        target = Path(path) if exact_path else self.path_for(path)
        record = {"metadata": self.metadata(), "item": item, "_b": []}
        atomic_write(target, lambda f: self.write(record, module, f))
        return target

    def load(self, path: str | os.PathLike[str], *, exact_path: bool = True, module: nn.Module | None = None) -> Any:
        """Read a record and return its item; any malformed input raises RecordError."""
        return self.read_record(path, exact_path=exact_path, module=module)[1]

    def read_record(self, path: str | os.PathLike[str], *, exact_path: bool = True,
                    module: nn.Module | None = None) -> tuple[dict[str, str], Any]:
        """Read a record and return `(metadata, item)` with every tensor's bytes in memory."""
        target = Path(path) if exact_path else self.path_for(path)
        with open_record(target) as (f, size):
            return self._parse(f, size, target, module, lazy=False)

    @contextlib.contextmanager
    def scan(self, path: str | os.PathLike[str], *, module: nn.Module | None = None
             ) -> Iterator[tuple[dict[str, str], Any]]:
        """`(metadata, item)` with big tensors' bytes left in the file (valid inside the `with`):
        looks at a 200 MB record in milliseconds, without reading its weights."""
        target = Path(path)
        with open_record(target) as (f, size):
            yield self._parse(f, size, target, module, lazy=True)

    def _parse(self, f: IO[bytes], size: int, target: Path, module: nn.Module | None,
               lazy: bool) -> tuple[dict[str, str], Any]:
        try:
            record = self.read(f, size, target, module, lazy)
        except RecursionError:
            raise RecordError("record nests too deeply", target) from None
        except MemoryError:
            raise RecordError("record too large to decode", target) from None
        if not isinstance(record, dict) or "item" not in record or "metadata" not in record:
            raise RecordError("not a Burn record (expected a map with 'metadata' and 'item')", target)
        metadata = record["metadata"]
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise RecordError("metadata must be a map of strings", target, "metadata")
        return metadata, record["item"]

    # Modules -------------------------------------------------------------------------------------
    def save_module(self, module: nn.Module, path: str | os.PathLike[str]) -> Path:
        """Save `module`'s record; returns the path written (extension replaced, like Burn)."""
        item = module_to_record(module, self.settings, self.burn_version, lazy=True)
        return self.record(item, path, module=module)

    def load_module(self, module: nn.Module, path: str | os.PathLike[str], device: Any = None) -> None:
        """Load a record (any precision; or a burnlike training checkpoint) into `module`, in place."""
        target = Path(path)
        if not target.exists() and self.path_for(target).exists():
            target = self.path_for(target)
        with open_record(target) as (f, size):
            _, item = self._parse(f, size, target, module, lazy=True)
            try:
                if isinstance(item, dict) and "state_dict" in item and "pytorch-lightning_version" in item:
                    from burnlike.record.checkpoint import weights_from_checkpoint

                    weights_from_checkpoint(module, item, target)
                else:
                    load_module_record(module, item, target)
            except RecursionError:
                raise RecordError("record nests too deeply", target) from None
        if device is not None:
            module.to(device)

    # Format hooks ----------------------------------------------------------------------------------
    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        raise NotImplementedError

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        raise NotImplementedError


KNOWN_EXTENSIONS = ("mpk.gz", "json.gz", "bin.gz", "mpk", "json", "bin", "ckpt", "safetensors", "pt", "pth")


@contextlib.contextmanager
def open_record(path: Path) -> Iterator[tuple[IO[bytes], int]]:
    """Open a record file for reading, as RecordError when it can't be."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise RecordError("no such record file", path) from None
    except OSError as e:
        raise RecordError(f"cannot read ({e.strerror})", path) from None
    with f:
        yield f, os.fstat(f.fileno()).st_size


def atomic_write(path: Path, write: Callable[[IO[bytes]], None] | bytes) -> None:
    """Write via a temp file in the same folder, fsync, then rename over `path`: a crash or SIGKILL
    at any moment leaves either the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            if isinstance(write, (bytes, bytearray)):
                f.write(write)
            else:
                write(f)
            f.flush()
            os.fsync(f.fileno())
        old = _hold(path)
        os.replace(tmp, path)
        if old is not None:
            _release_later(old)
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


def _hold(path: Path) -> int | None:
    """An fd on the file about to be replaced, so the rename doesn't free its blocks inline.
    POSIX only: on Windows an open file can't be replaced."""
    if os.name != "posix":
        return None
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


@functools.cache
def _releaser(pid: int | None = None) -> Any:
    """One closing thread per process (keyed by pid: a forked child has no copy of the parent's)."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(1, thread_name_prefix="burnlike-release")


def _release_later(fd: int) -> None:
    """Close the replaced file's last fd off the caller's thread. Why: freeing a big file's blocks
    (ext4 with `discard`, network filesystems) took 0.4 s for a 190 MiB checkpoint here, as long
    as writing it; training goes on while the kernel frees them (like Redis' lazy free)."""
    try:
        _releaser(os.getpid()).submit(os.close, fd)
    except RuntimeError:  # interpreter shutting down: no new threads
        os.close(fd)


def gunzip(data: bytes, path: Path, limit: int | None = None) -> bytes:
    """Inflate incrementally, refusing streams that expand past `limit` (gzip bombs).

    The default limit is a multiple of the compressed size, so memory stays bounded by the file.
    """
    if limit is None:
        limit = min(MAX_DECOMPRESSED, max(MIN_LIMIT, MAX_RATIO * len(data)))
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
    """Decode a whole in-memory MessagePack document (bounded by its own size)."""
    return stream.read_msgpack(io.BytesIO(data), len(data), path, lazy=False)


class NamedMpkFileRecorder(Recorder):
    """`rmp_serde::encode::write_named`: maps with field names, tensor bytes as `bin`."""

    extension = "mpk"
    format_type = "NamedMpkFileRecorder"

    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        stream.write_msgpack(record, f)

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        return stream.read_msgpack(f, size, path, lazy)


class NamedMpkGzFileRecorder(NamedMpkFileRecorder):
    extension = "mpk.gz"
    format_type = "NamedMpkGzFileRecorder"

    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=6, mtime=0) as gz:
            stream.write_msgpack(record, gz)  # type: ignore[arg-type]

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        data = gunzip(f.read(), path)
        return stream.read_msgpack(io.BytesIO(data), len(data), path, lazy)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, stream.TensorBytes):
        return list(bytes(obj))
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return list(bytes(obj))
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

    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        f.write(json.dumps(_jsonable({**record, "_b": None}), indent=2).encode())

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        return _json_loads(f.read(), path)


def _json_loads(data: bytes, path: Path) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise RecordError(f"not valid JSON ({e})", path) from None


class JsonGzFileRecorder(PrettyJsonFileRecorder):
    extension = "json.gz"
    format_type = "JsonGzFileRecorder"

    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        compact = json.dumps(_jsonable({**record, "_b": None}), separators=(",", ":")).encode()
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=6, mtime=0) as gz:
            gz.write(compact)

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        return _json_loads(gunzip(f.read(), path), path)


class CompactRecorder(NamedMpkFileRecorder):
    """Burn's `CompactRecorder`: NamedMpk with half precision (f16 floats, i16 ints; see
    `codec.storage_dtype` for the tensors that keep a wider type). Writes NamedMpk's metadata."""

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(HalfPrecisionSettings, burn_version)


class DefaultRecorder(NamedMpkFileRecorder):
    """Burn's `DefaultRecorder`: NamedMpk with full precision (f32, i32)."""

    def __init__(self, burn_version: str = DEFAULT_VERSION) -> None:
        super().__init__(FullPrecisionSettings, burn_version)
