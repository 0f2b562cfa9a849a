"""The one table of recorders: Burn's type names and aliases, the app's short names, extensions,
precision names, and what a file on disk is (its extension, else its first bytes).

Used by `Module.load_file`, training checkpoints, the CLI and the Hydra app, so a recorder is
named, found or guessed the same way everywhere.

File recorders only: Burn's in-memory recorders (`memory.py`: `BinBytesRecorder`,
`NamedMpkBytesRecorder`, `NoStdInferenceRecorder`) read and write bytes, never a path, so no name
here stands for them.
"""

from __future__ import annotations

import contextlib
import io
import os
import zlib
from collections.abc import Iterable, Iterator
from functools import partial
from itertools import chain
from typing import IO

from burnlike.record.error import RecordError
from burnlike.record.format.bincode import BinFileRecorder, BinGzFileRecorder
from burnlike.record.format.files import open_record
from burnlike.record.format.location import RemotePath, as_path
from burnlike.record.format.named_mpk import NamedMpkFileRecorder, NamedMpkGzFileRecorder
from burnlike.record.format.pretty_json import JsonGzFileRecorder, PrettyJsonFileRecorder
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.precision import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    PrecisionSettings,
)
from burnlike.record.tensor.version import DEFAULT_VERSION

# Burn's file recorders; a path's extension is matched against them in this order.
FILE_RECORDERS: tuple[type[Recorder], ...] = (
    NamedMpkGzFileRecorder, JsonGzFileRecorder, BinGzFileRecorder,
    NamedMpkFileRecorder, PrettyJsonFileRecorder, BinFileRecorder,
)
PRECISIONS: dict[str, type[PrecisionSettings]] = {
    "full": FullPrecisionSettings, "half": HalfPrecisionSettings, "double": DoublePrecisionSettings,
}
# Burn's type aliases: (recorder, precision)
ALIASES: dict[str, tuple[type[Recorder], str]] = {
    "CompactRecorder": (NamedMpkFileRecorder, "half"),
    "DefaultRecorder": (NamedMpkFileRecorder, "full"),
    "SensitiveCompactRecorder": (BinGzFileRecorder, "half"),
    "NoStdTrainingRecorder": (BinFileRecorder, "full"),
}
# The Hydra app's `learner.recorder` values
SHORT_NAMES: dict[str, tuple[type[Recorder], str]] = {
    "compact": ALIASES["CompactRecorder"],  # named MessagePack, half precision
    "default": ALIASES["DefaultRecorder"],  # named MessagePack, full precision
    "mpk_gz": (NamedMpkGzFileRecorder, "half"),
    "json": (PrettyJsonFileRecorder, "full"),
    "json_gz": (JsonGzFileRecorder, "full"),
    "bin": (BinFileRecorder, "full"),
    "bin_gz": (BinGzFileRecorder, "half"),
}
_BY_TYPE_NAME = {cls.__name__: (cls, "full") for cls in FILE_RECORDERS}


def by_name(name: str, precision: str | None = None, burn_version: str = DEFAULT_VERSION) -> Recorder:
    """A recorder by Burn's type name (`BinFileRecorder`), Burn's alias (`CompactRecorder`) or the
    app's short name (`compact`, `bin_gz`); `precision` ("full", "half", "double") overrides the
    name's own (full for the type names)."""
    entry = _BY_TYPE_NAME.get(name) or ALIASES.get(name) or SHORT_NAMES.get(name)
    if entry is None:
        names = [*_BY_TYPE_NAME, *ALIASES, *SHORT_NAMES]
        raise ValueError(f"unknown recorder {name!r} (expected one of {names})")
    cls, own = entry
    return cls(PRECISIONS[precision or own], burn_version)


def by_extension(path: str | os.PathLike[str] | RemotePath, precision: str | None = None,
                 burn_version: str = DEFAULT_VERSION) -> Recorder | None:
    """The recorder that `path`'s extension names (`model.mpk.gz` → NamedMpkGz), or None."""
    name = as_path(path).name
    for cls in FILE_RECORDERS:
        if name.endswith("." + cls.extension):
            return cls(PRECISIONS[precision] if precision else None, burn_version)
    return None


def sniff(path: str | os.PathLike[str] | RemotePath) -> Recorder:
    """The recorder that reads `path`: by extension, else by its first bytes (Lightning names every
    checkpoint `.ckpt`, whatever recorder wrote it): only the bytes up to its first one that isn't
    whitespace are read (inflated, for gzip)."""
    found = by_extension(path)
    if found is not None:
        return found
    try:
        with _opened(path) as f:
            first = f.read(io.DEFAULT_BUFFER_SIZE)
            if not first:
                return NamedMpkFileRecorder()
            gz = first[:2] == b"\x1f\x8b"
            stream = chain([first], iter(partial(f.read, io.DEFAULT_BUFFER_SIZE), b""))
            try:
                plain = _plain_kind(_inflated(stream) if gz else stream)
            except zlib.error:
                return NamedMpkGzFileRecorder()
    except (OSError, RecordError):
        return NamedMpkFileRecorder()
    return next(cls for cls in FILE_RECORDERS if issubclass(cls, plain) and cls.gzip == gz)()


def _plain_kind(chunks: Iterable[bytes]) -> type[Recorder]:
    """Burn's plain recorder whose records start as `chunks` do, by their first byte after any
    whitespace: `{` for JSON, a 3-entry map for MessagePack (a BurnRecord), else bincode (whose
    first byte is its float name's length)."""
    for chunk in chunks:
        first = chunk.lstrip()[:1]
        if first:
            return PrettyJsonFileRecorder if first == b"{" else \
                NamedMpkFileRecorder if first == b"\x83" else BinFileRecorder
    return BinFileRecorder


def _inflated(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A gzip stream's bytes, inflated a buffer at a time as they are asked for (a few KiB of gzip
    may inflate to gigabytes)."""
    inflate = zlib.decompressobj(wbits=31)
    for chunk in chunks:
        while chunk:
            yield inflate.decompress(chunk, io.DEFAULT_BUFFER_SIZE)
            chunk = inflate.unconsumed_tail


@contextlib.contextmanager
def _opened(path: str | os.PathLike[str] | RemotePath) -> Iterator[IO[bytes]]:
    """`path` open for reading as it goes: a local regular file (never a device or FIFO: RecordError)
    or an fsspec file."""
    target = as_path(path)
    if isinstance(target, RemotePath):
        with target.open_read() as f:
            yield f
    else:
        with open_record(target) as (f, _):
            yield f


# torch.save's two containers: a zip archive (torch >= 1.6), or the legacy pickle stream
# (`_use_new_zipfile_serialization=False`, and any plain pickle), protocol 2+ opcode PROTO.
TORCH_ZIP = b"PK\x03\x04"
PICKLE_PROTO = tuple(bytes([0x80, n]) for n in range(2, 6))


def torch_format(path: str | os.PathLike[str] | RemotePath) -> str | None:
    """`"zip"` or `"pickle"` when `path` is a torch.save (or pickle) file, by its first bytes; else
    None. Such files are read only with torch's `weights_only` loader, never unpickled."""
    try:
        with _opened(path) as f:
            head = f.read(4)
    except (OSError, RecordError):
        return None
    if head.startswith(TORCH_ZIP):
        return "zip"
    if head[:2] in PICKLE_PROTO:
        return "pickle"
    return None


def is_torch_zip(path: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether `path` is a `torch.save` zip container (read only with torch's `weights_only` loader)."""
    return torch_format(path) == "zip"
