"""`Recorder`: what every file recorder shares — settings, metadata, extensions, atomic writes and
safe reads of `BurnRecord{metadata, item, _b}`. A format implements `encode` and `decode`; its
`*Gz` twin sets `gzip = True`.

`save_module` replaces the file's extension like Burn's `set_extension` and writes atomically
(temp file in the same folder, then rename), so a crash mid-save never leaves a torn file; with
`durable=True` (checkpoints) the file is fsynced before the rename and its folder after.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import torch
from torch import nn

from burnlike.record.error import RecordError
from burnlike.record.format.budget import Budget
from burnlike.record.format.files import atomic_write, gunzip, gzip_writer, open_record
from burnlike.record.format.location import AnyPath, RemotePath, as_path
from burnlike.record.format.module_record import load_module_record, module_to_record
from burnlike.record.tensor.ahead import tensor_bytes_in
from burnlike.record.tensor.precision import PrecisionSettings, SettingsLike, as_settings
from burnlike.record.tensor.version import DEFAULT_VERSION

OTHER_EXTENSIONS = ("ckpt", "safetensors", "pt", "pth")  # weight files `path_for` also replaces


class Recorder:
    """Base of all file recorders.

    `NamedMpkFileRecorder(HalfPrecisionSettings, burn_version="0.19.0")`. Burn's generic spelling
    works too: `NamedMpkFileRecorder[HalfPrecisionSettings]()`.

    Args:
        settings: The precision floats and ints are written at: a settings class
            (`HalfPrecisionSettings`) or an instance; full precision when None. Any precision
            reads.
        burn_version: The Burn version whose record layout is written (`"0.19.0"` for Burn
            0.19's); readers take it from the file.

    Raises:
        ValueError: `burn_version` does not look like `"0.21.0"`.
        TypeError: `settings` is not precision settings.
    """

    extension = ""
    format_type = ""  # Rust type name written into metadata.format
    gzip = False  # the format's bytes, gzipped (Burn's `*GzFileRecorder`)

    def __init__(self, settings: SettingsLike = None, burn_version: str = DEFAULT_VERSION) -> None:
        self.settings: PrecisionSettings = as_settings(settings)
        """The precision records are written at."""
        if not isinstance(burn_version, str) or not burn_version.startswith("0."):
            raise ValueError(f"burn_version must look like '0.21.0' or '0.19.0', got {burn_version!r}")
        self.burn_version = burn_version
        """The Burn version whose record layout is written."""

    def __class_getitem__(cls, settings: SettingsLike) -> Callable[..., Recorder]:
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
        """Burn's `FileRecorder::file_extension`: `"mpk"`, `"bin.gz"`, ... (without the dot)."""
        return self.extension

    def metadata(self) -> dict[str, str]:
        """The `BurnMetadata` written with each record: the float and int types, the recorder's Rust
        type name, the Burn version and the settings' name."""
        name = self.settings.name
        return {
            "float": self.settings.float_name,
            "int": self.settings.int_name,
            "format": f"burn_core::record::file::{self.format_type}<burn_core::record::settings::{name}>",
            "version": self.burn_version,
            "settings": name,
        }

    def path_for(self, path: str | os.PathLike[str] | RemotePath) -> AnyPath:
        """Replace any extension with this recorder's `file_extension()` (`model.mpk.gz` → `model.bin`,
        `model` → `model.mpk`); a subclass that overrides it, as Burn's `FileRecorder` allows, names
        every file it is given a path for with its own. Training checkpoints keep the checkpointer's
        names (`checkpoint/model-N.<file_extension()>`, ...), which a resume finds them by.

        Args:
            path: A path or an fsspec URL, with or without an extension.
        """
        p = as_path(path)
        name = p.name
        ext = self.file_extension()
        for known in dict.fromkeys([ext, *_known_extensions()]):
            if name.endswith("." + known):
                name = name[: -len(known) - 1]
                break
        else:
            name = p.stem if p.suffix else name
        return p.with_name(f"{name}.{ext}")

    def resolve(self, path: str | os.PathLike[str] | RemotePath) -> AnyPath:
        """The file to read: `path`, or `path` with this recorder's extension when only that exists.

        Args:
            path: A path or an fsspec URL, with or without the extension.
        """
        target = as_path(path)
        if not target.exists() and self.path_for(target).exists():
            return self.path_for(target)
        return target

    # Whole records ------------------------------------------------------------------------------
    def record(self, item: Any, path: str | os.PathLike[str] | RemotePath, *, exact_path: bool = False,
               module: nn.Module | None = None, durable: bool = False) -> AnyPath:
        """Write `BurnRecord{metadata, item, _b}` to `path` atomically (extension replaced unless
        `exact_path`). `item` may hold lazy `TensorBytes`; they are streamed to the file.
        `durable`: on the disk before it replaces `path` (`atomic_write`); checkpoints are.

        Args:
            item: A record item: a module's (`module.into_record()`) or any tree of maps, lists,
                strings, numbers and tensors.
            path: Where to write, a local path or an fsspec URL.
            exact_path: Write `path` as given, its extension kept.
            module: The module the item came from; bincode, which has no field names, needs it.
            durable: fsync the file before the rename and its folder after.

        Returns:
            The path written.

        Raises:
            SaveError: The file could not be written; the previous one at the path is unchanged.
        """
        target = as_path(path) if exact_path else self.path_for(path)
        record = {"metadata": self.metadata(), "item": item, "_b": []}
        atomic_write(target, lambda f: self.write(record, module, f), self.size_hint(record), durable=durable)
        return target

    def size_hint(self, record: Any) -> int:
        """Bytes the file will hold at least: its tensors' bytes at their likely dtypes (a dtype is
        only ever decided wider); 0 when gzipped, where it can't be known."""
        return 0 if self.gzip else sum(tb.likely_nbytes for tb in tensor_bytes_in(record))

    def load(self, path: str | os.PathLike[str] | RemotePath, device: torch.device | str | None = None, *,
             exact_path: bool = False, module: nn.Module | None = None) -> Any:
        """Burn's `recorder.load(file_path, &device)`: read a record and return its item; any malformed
        input raises RecordError. As Burn's file recorders add their extension, `path` without it (or
        with another) reads `path` with this recorder's extension, unless `path` itself exists or
        `exact_path`. `device` is Burn's argument: the item holds the tensors' bytes, which go to a
        device when loaded into a module (`load_module(module, path, device)`, `module.load_file`).

        Args:
            path: The file, a local path or an fsspec URL.
            device: Burn's argument, unused here (see above).
            exact_path: Read `path` as given, never with this recorder's extension added.
            module: The module the record was written from; bincode needs it to read a module
                record.

        Raises:
            RecordError: The file is missing, truncated or not such a record, naming it and the key.
        """
        target = as_path(path) if exact_path else self.resolve(path)
        return self.read_record(target, exact_path=True, module=module)[1]

    def read_record(self, path: str | os.PathLike[str] | RemotePath, *, exact_path: bool = True,
                    module: nn.Module | None = None) -> tuple[dict[str, str], Any]:
        """Read a record and return `(metadata, item)` with every tensor's bytes in memory.

        Args:
            path: The file, a local path or an fsspec URL.
            exact_path: Read `path` as given; False reads `path` with this recorder's extension.
            module: The module the record was written from (bincode needs it).
        """
        target = as_path(path) if exact_path else self.path_for(path)
        with open_record(target) as (f, size):
            return self.parse(f, size, _named(target), module, lazy=False)

    @contextlib.contextmanager
    def scan(self, path: str | os.PathLike[str] | RemotePath, *, module: nn.Module | None = None
             ) -> Iterator[tuple[dict[str, str], Any]]:
        """`(metadata, item)` with big tensors' bytes left in the file (valid inside the `with`):
        looks at a 200 MB record in milliseconds, without reading its weights.

        Args:
            path: The file, a local path or an fsspec URL, read as given.
            module: The module the record was written from (bincode needs it).
        """
        target = as_path(path)
        with open_record(target) as (f, size):
            metadata_item = self.parse(f, size, _named(target), module, lazy=True)
            try:
                yield metadata_item
            except RecursionError:
                raise RecordError("record nests too deeply", str(target)) from None

    def parse(self, f: IO[bytes], size: int, target: Path, module: nn.Module | None,
              lazy: bool) -> tuple[dict[str, str], Any]:
        """`(metadata, item)` of the record in `f` (`size` bytes, named `target` in errors)."""
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
    def save_module(self, module: nn.Module, path: str | os.PathLike[str] | RemotePath, *,
                    exact_path: bool = False, durable: bool = False) -> AnyPath:
        """Save `module`'s record; returns the path written (extension replaced, like Burn, unless
        `exact_path`).

        Args:
            module: The module to record.
            path: Where to write, a local path or an fsspec URL.
            exact_path: Write `path` as given, its extension kept.
            durable: fsync the file before the rename and its folder after.
        """
        item = module_to_record(module, self.settings, self.burn_version, lazy=True)
        return self.record(item, path, exact_path=exact_path, module=module, durable=durable)

    def load_module(self, module: nn.Module, path: str | os.PathLike[str] | RemotePath,
                    device: torch.device | str | None = None) -> None:
        """Load a module record (any precision) into `module`, in place.

        Args:
            module: The module to load into; it must have the record's structure.
            path: The file, with or without this recorder's extension.
            device: Move the module there once loaded; None leaves it where it is.

        Raises:
            RecordError: The file is not a record of this module (a missing or extra field, a
                shape that differs), naming the file and the key.
        """
        target = self.resolve(path)
        with self.scan(target, module=module) as (_, item):
            load_module_record(module, item, str(target))
        if device is not None:
            module.to(device)

    # Formats ---------------------------------------------------------------------------------------
    def write(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        if self.gzip:
            with gzip_writer(f) as gz:
                self.encode(record, module, gz)
        else:
            self.encode(record, module, f)

    def read(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool) -> Any:
        budget = Budget.for_record(size, module, path)  # from the size on disk, compressed or not
        if self.gzip:
            data = gunzip(f.read(), path)
            return self.decode(io.BytesIO(data), len(data), path, module, lazy, budget)
        return self.decode(f, size, path, module, lazy, budget)

    def encode(self, record: dict[str, Any], module: nn.Module | None, f: IO[bytes]) -> None:
        """Write the whole record to `f` (`module`: the tree it came from, for formats without names)."""
        raise NotImplementedError

    def decode(self, f: IO[bytes], size: int, path: Path, module: nn.Module | None, lazy: bool,
               budget: Budget) -> Any:
        """Read the whole record from `f` (`lazy`: big tensors' bytes may stay in the file; `budget`
        bounds the maps and lists it may build)."""
        raise NotImplementedError


def _named(target: AnyPath) -> Path:
    """The path the decoders name in their errors (only ever formatted with `str`)."""
    return target if isinstance(target, Path) else cast(Path, target)


def _subclasses(cls: type[Recorder]) -> Iterator[type[Recorder]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _known_extensions() -> list[str]:
    """Every recorder's extension, then other weight files'."""
    return list(dict.fromkeys(c.extension for c in _subclasses(Recorder) if c.extension)) + list(OTHER_EXTENSIONS)
