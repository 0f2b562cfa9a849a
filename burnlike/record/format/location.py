"""Where a record lives: a local `Path`, or a `RemotePath` on any fsspec filesystem (`s3://`,
`gs://`, `memory://`; s3/gcs need the `s3`/`gcs` extras, i.e. s3fs/gcsfs).

Why a small path class rather than strings: the recorders, the artifact dir and the file
checkpointer join, rename and list paths the `pathlib` way; `RemotePath` offers that subset over
fsspec, so one code path serves both. `Path("s3://b/x")` would collapse the `//` into a local folder
named `s3:` — the bug this module exists to avoid. Local paths stay `Path` (atomic temp + rename).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

StorageOptions: TypeAlias = Mapping[str, Any] | None


class RemotePath:
    """A file or folder on an fsspec filesystem, spelled as its URL (`memory://run/model.mpk`)."""

    def __init__(self, url: str, storage_options: StorageOptions = None) -> None:
        protocol, sep, rest = url.partition("://")
        if not sep or not protocol:
            raise ValueError(f"not a filesystem URL: {url!r} (expected 'protocol://...')")
        self.protocol = protocol
        self.rest = rest.rstrip("/") if rest.strip("/") else rest
        self.storage_options: dict[str, Any] = dict(storage_options or {})

    # Names ---------------------------------------------------------------------------------------
    def __str__(self) -> str:
        return f"{self.protocol}://{self.rest}"

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __truediv__(self, name: str | os.PathLike[str]) -> RemotePath:
        return self._at(f"{self.rest}/{os.fspath(name)}" if self.rest else os.fspath(name))

    def _at(self, rest: str) -> RemotePath:
        return RemotePath(f"{self.protocol}://{rest}", self.storage_options)

    @property
    def name(self) -> str:
        return self.rest.rsplit("/", 1)[-1]

    @property
    def parent(self) -> RemotePath:
        return self._at(self.rest.rsplit("/", 1)[0] if "/" in self.rest else "")

    @property
    def suffix(self) -> str:
        name = self.name
        return name[name.rfind("."):] if "." in name.lstrip(".") else ""

    @property
    def stem(self) -> str:
        return self.name[: len(self.name) - len(self.suffix)]

    def with_name(self, name: str) -> RemotePath:
        return self.parent / name

    # Filesystem ----------------------------------------------------------------------------------
    @property
    def fs(self) -> AbstractFileSystem:
        import fsspec

        fs, _ = fsspec.core.url_to_fs(str(self), **self.storage_options)
        return fs

    @property
    def fs_path(self) -> str:
        import fsspec

        _, path = fsspec.core.url_to_fs(str(self), **self.storage_options)
        return str(path)

    def exists(self) -> bool:
        self._fresh()
        return bool(self.fs.exists(self.fs_path))

    def is_dir(self) -> bool:
        self._fresh()
        return bool(self.fs.isdir(self.fs_path))

    def _fresh(self) -> None:
        """Forget fsspec's cached listings here: another process (a run's ranks, a resumed run,
        `burnlike summary` on a running run) may have written since this process last looked."""
        self.fs.invalidate_cache(self.fs_path)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        self.fs.makedirs(self.fs_path, exist_ok=True)

    def unlink(self, missing_ok: bool = False) -> None:
        if not self.exists():
            if missing_ok:
                return
            raise FileNotFoundError(str(self))
        self.fs.rm(self.fs_path)

    def open_read(self) -> IO[bytes]:
        f: IO[bytes] = self.fs.open(self.fs_path, "rb")
        return f

    def read_bytes(self) -> bytes:
        return bytes(self.fs.cat_file(self.fs_path))

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def write_bytes(self, data: bytes) -> None:
        """One complete object per put (object stores never show a partial object)."""
        self.fs.pipe_file(self.fs_path, bytes(data))

    def write_text(self, text: str) -> None:
        self.write_bytes(text.encode())

    def size(self) -> int:
        return int(self.fs.size(self.fs_path))

    def iterdir(self) -> Iterator[RemotePath]:
        if not self.is_dir():  # (fresh listings)
            return
        for entry in self.fs.ls(self.fs_path, detail=False):
            yield self / str(entry).rstrip("/").rsplit("/", 1)[-1]

    def is_file(self) -> bool:
        self._fresh()
        return bool(self.fs.isfile(self.fs_path))

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        """Paths under this folder matching `pattern` (`*.mpk`, `epoch-*/*.log`), as Path.glob."""
        if "/" not in pattern:
            return (p for p in self.iterdir() if fnmatch.fnmatch(p.name, pattern))
        base = self.fs_path.rstrip("/")
        self._fresh()
        found = sorted(str(f) for f in self.fs.glob(f"{base}/{pattern}"))
        return (self / f[len(base) + 1:] for f in found if f.startswith(base + "/"))


AnyPath: TypeAlias = Path | RemotePath


def is_url(path: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether `path` names a non-local fsspec filesystem (`file://` counts as local)."""
    if isinstance(path, RemotePath):
        return True
    text = os.fspath(path) if not isinstance(path, str) else path
    protocol, sep, _ = text.partition("://")
    return bool(sep) and protocol not in ("", "file", "local") and "/" not in protocol


def as_path(path: str | os.PathLike[str] | RemotePath, storage_options: StorageOptions = None) -> AnyPath:
    """A user's path as `Path` (local, `file://` stripped) or `RemotePath` (any other URL)."""
    if isinstance(path, RemotePath):
        return RemotePath(str(path), storage_options or path.storage_options)
    if is_url(path):
        return RemotePath(os.fspath(path), storage_options)
    text = os.fspath(path)
    for prefix in ("file://", "local://"):
        text = text.removeprefix(prefix)
    return Path(text)
