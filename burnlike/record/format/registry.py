"""The one table of recorders: Burn's type names and aliases, the app's short names, extensions,
precision names, and what a file on disk is (its extension, else its first bytes).

Used by `Module.load_file`, training checkpoints, the CLI and the Hydra app, so a recorder is
named, found or guessed the same way everywhere.

File recorders only: Burn's in-memory recorders (`memory.py`: `BinBytesRecorder`,
`NamedMpkBytesRecorder`, `NoStdInferenceRecorder`) read and write bytes, never a path, so no name
here stands for them.
"""

from __future__ import annotations

import os
import zlib

from burnlike.record.format.bincode import BinFileRecorder, BinGzFileRecorder
from burnlike.record.format.files import read_head
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
    checkpoint `.ckpt`, whatever recorder wrote it)."""
    found = by_extension(path)
    if found is not None:
        return found
    head = _head(path, 4096)
    if head is None:
        return NamedMpkFileRecorder()
    gz = head[:2] == b"\x1f\x8b"
    if gz:
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 64)
        except zlib.error:
            return NamedMpkGzFileRecorder()
    plain = PrettyJsonFileRecorder if head.lstrip()[:1] == b"{" else \
        NamedMpkFileRecorder if head[:1] == b"\x83" else BinFileRecorder  # a BurnRecord map has 3 entries
    return next(cls for cls in FILE_RECORDERS if issubclass(cls, plain) and cls.gzip == gz)()


def _head(path: str | os.PathLike[str] | RemotePath, n: int) -> bytes | None:
    """The first `n` bytes of a local or fsspec file, None when it can't be read."""
    target = as_path(path)
    try:
        if isinstance(target, RemotePath):
            with target.open_read() as f:
                return f.read(n)
        return read_head(target, n) or None  # regular files only: never a device or FIFO
    except OSError:
        return None


# torch.save's two containers: a zip archive (torch >= 1.6), or the legacy pickle stream
# (`_use_new_zipfile_serialization=False`, and any plain pickle), protocol 2+ opcode PROTO.
TORCH_ZIP = b"PK\x03\x04"
PICKLE_PROTO = tuple(bytes([0x80, n]) for n in range(2, 6))


def torch_format(path: str | os.PathLike[str] | RemotePath) -> str | None:
    """`"zip"` or `"pickle"` when `path` is a torch.save (or pickle) file, by its first bytes; else
    None. Such files are read only with torch's `weights_only` loader, never unpickled."""
    head = _head(path, 4) or b""
    if head.startswith(TORCH_ZIP):
        return "zip"
    if head[:2] in PICKLE_PROTO:
        return "pickle"
    return None


def is_torch_zip(path: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether `path` is a `torch.save` zip container (read only with torch's `weights_only` loader)."""
    return torch_format(path) == "zip"
