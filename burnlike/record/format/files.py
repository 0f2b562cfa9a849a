"""Record files on disk: safe opening, atomic replacement, and bounded gzip.

Why atomic: a crash or SIGKILL mid-save must leave the old file or the new one, never a torn one.
Why bounded: a record is untrusted input, and a few KiB of gzip can inflate to gigabytes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from burnlike.record.error import RecordError
from burnlike.record.format.location import AnyPath, RemotePath

MAX_DECOMPRESSED = 16 * 2**30  # absolute cap on an inflated gzip record
MAX_RATIO = 100  # real records (float weights) deflate ~1.1:1; raise this for mostly-zero records
MIN_LIMIT = 64 * 2**20  # small files may always inflate this far


@contextlib.contextmanager
def open_record(path: AnyPath) -> Iterator[tuple[IO[bytes], int]]:
    """Open a record file for reading, as RecordError when it can't be (a remote one is read
    into memory whole: one get)."""
    if isinstance(path, RemotePath):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise RecordError("no such record file", str(path)) from None
        except OSError as e:
            raise RecordError(f"cannot read ({e})", str(path)) from None
        yield io.BytesIO(data), len(data)
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise RecordError("no such record file", path) from None
    except OSError as e:
        raise RecordError(f"cannot read ({e.strerror})", path) from None
    with f:
        yield f, os.fstat(f.fileno()).st_size


def atomic_write(path: AnyPath, write: Callable[[IO[bytes]], None] | bytes) -> None:
    """Write via a temp file in the same folder, fsync, then rename over `path`: a crash or SIGKILL
    at any moment leaves either the old file or the new one, never a torn one. On an fsspec
    filesystem: encode into memory, then one put of the complete object under its final name."""
    if isinstance(path, RemotePath):
        _put(path, write)
        return
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


def _put(path: RemotePath, write: Callable[[IO[bytes]], None] | bytes) -> None:
    if isinstance(write, (bytes, bytearray)):
        data = bytes(write)
    else:
        buffer = io.BytesIO()
        write(buffer)
        data = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@contextlib.contextmanager
def gzip_writer(f: IO[bytes]) -> Iterator[IO[bytes]]:
    """Burn's gzip settings for `*GzFileRecorder`s: level 6, no name, mtime 0 (same bytes every time)."""
    with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=6, mtime=0) as gz:
        yield gz  # type: ignore[misc]


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
