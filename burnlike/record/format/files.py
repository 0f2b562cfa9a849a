"""Record files on disk: safe opening, atomic replacement, and bounded gzip.

Why atomic: a crash or SIGKILL mid-save must leave the old file or the new one, never a torn one.
Why bounded: a record is untrusted input, and a few KiB of gzip can inflate to gigabytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gzip
import io
import os
import re
import socket
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from burnlike.record.error import RecordError, SaveError
from burnlike.record.format.location import AnyPath, RemotePath
from burnlike.record.tensor import clib

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
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    except FileNotFoundError:
        raise RecordError("no such record file", path) from None
    except OSError as e:
        raise RecordError(f"cannot read ({e.strerror})", path) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise RecordError(f"{kind}: only regular files are read as records", path)
    with open(fd, "rb") as f:
        yield f, info.st_size


def atomic_write(path: AnyPath, write: Callable[[IO[bytes]], None] | bytes, size: int = 0, *,
                 durable: bool = False) -> None:
    """Write via a temp file in the same folder, then rename over `path`: a crash or SIGKILL of the
    process at any moment leaves either the old file or the new one, never a torn one. On an fsspec
    filesystem: encode into memory, then one put of the complete object under its final name.
    `durable`: also on the disk before the rename (writeback as it goes, fsync, then the folder's
    fsync), so a power loss or node crash can't leave an empty file either; without it the bytes
    reach the disk when the kernel writes them back, as with torch.save or Burn's recorders.
    `size`: bytes the file is expected to hold, allocated before a local file is written (`_reserve`);
    the file ends where the writing ended, whatever the guess."""
    if isinstance(path, RemotePath):
        _put(path, write)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _clean_once(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise write_error(e, path) from e
    try:
        if hasattr(os, "fchmod"):  # mkstemp's 0600 would keep teammates' jobs from reading it
            os.fchmod(fd, new_file_mode())
        reserved = _reserve(fd, size)
        with WritebackFile(io.FileIO(fd, "wb"), buffer_size=1 << 20, writeback=durable) as f:
            if isinstance(write, (bytes, bytearray)):
                f.write(write)
            else:
                write(f)
            f.flush()
            if reserved:
                f.truncate()  # a guess beyond what was written must not leave zeros at the end
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise write_error(e, path) from e
        raise
    if durable:
        sync_folder(path.parent)


def new_file_mode() -> int:
    """The mode `open(path, "w")` gives a new file: 0666 less the process's umask."""
    return 0o666 & ~_umask()


def _umask() -> int:
    """The umask, read without changing it where the OS tells it (Linux: /proc), else set and set
    back (os.umask can only be read that way; a file another thread creates in between gets 022)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def sync_folder(folder: Path) -> None:
    """fsync a folder, so a rename in it is on the disk too."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems can't fsync a directory
        pass


def rewindable(f: IO[bytes]) -> bool:
    """Whether a writer may go back in `f` and write again from there (seek, then truncate): a
    file or memory, not a gzip stream."""
    return isinstance(f, (io.BufferedWriter, io.BytesIO, io.FileIO)) and f.seekable()


class WritebackFile(io.BufferedWriter):
    """A buffered file that asks the kernel to start writing each `WRITEBACK_STEP` bytes to disk as
    soon as they are written, so the fsync before the rename has only the last step left to wait for.

    Why: page-cache writeback otherwise starts only at the fsync, which then waits for the whole
    file, a fifth of a big durable save. Linux only (`sync_file_range`, asynchronous: it neither waits nor makes anything durable);
    elsewhere a plain buffered file.

    Big writes go to the kernel in pieces of at most `WRITE_PIECE`. Why: on a virtual machine whose
    host reclaims free pages, writes of several MiB each now and then made a whole save several
    times slower (its copies into the page cache slow throughout); in 2 MiB pieces that never
    happens, and the typical save takes as long. The figures are in docs/benchmarks.md ("Why a record's
    save and load are built the way they are").

    Args:
        raw: The open file to write to.
        buffer_size: The buffer's size in bytes.
        writeback: Whether to start writeback every `WRITEBACK_STEP` bytes (False: only the pieces).
    """

    def __init__(self, raw: io.FileIO, buffer_size: int = io.DEFAULT_BUFFER_SIZE, writeback: bool = True) -> None:
        super().__init__(raw, buffer_size)
        self.start_writeback = _SYNC_FILE_RANGE if writeback else None  # None: only the pieces
        self.started = 0  # bytes handed to writeback so far
        self.written = 0

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        """Going back (a writer rewriting a tensor): writeback goes on from there."""
        at = super().seek(pos, whence)
        self.written = at
        self.started = min(self.started, at)
        return at

    def write(self, b: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(b).cast("B")
        if view.nbytes > WRITE_PIECE:
            for i in range(0, view.nbytes, WRITE_PIECE):
                self.write(view[i:i + WRITE_PIECE])
            return view.nbytes
        n = super().write(view)
        self.written += n
        if self.start_writeback is not None and self.written - self.started >= WRITEBACK_STEP:
            self.flush()
            self.start_writeback(self.fileno(), self.started, self.written - self.started, _SYNC_FILE_RANGE_WRITE)
            self.started = self.written
        return n


def _reserve(fd: int, size: int) -> bool:
    """Allocate a file's first `size` bytes before they are written (Linux `fallocate`; the file
    reads as zeros there until written). Whether it did: not where the filesystem can't (it then
    allocates as it writes), nor off Linux.

    Why: ext4 otherwise reserves and maps each 4 KiB block as it is written (delayed allocation),
    in the writer's thread, a few percent of a big save's CPU (docs/benchmarks.md)."""
    if size <= 0 or _FALLOCATE is None:
        return False
    return _FALLOCATE(fd, 0, 0, size) == 0


WRITEBACK_STEP = 8 << 20
WRITE_PIECE = 2 << 20
_SYNC_FILE_RANGE_WRITE = 2  # start writeback of the range's dirty pages; don't wait
_SYNC_FILE_RANGE = clib.function("sync_file_range", ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
_FALLOCATE = clib.function("fallocate", ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)


_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:40] or "host"
_TEMP = re.compile(r"^\..+\.burnlike\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")


def temp_prefix(path: Path) -> str:
    """Temp files are `.NAME.burnlike.HOST.PID.XXXX.tmp`: recognisable, and their owner can be told."""
    return f".{path.name}.burnlike.{_HOST}.{os.getpid()}."


def remove_stale_temps(directory: Path) -> list[Path]:
    """Remove temp files in `directory` that a process of this host which no longer runs left
    behind (a SIGKILL mid-save). A live writer's, or another host's (shared filesystems), stay.
    Checkpointers call it when a run starts or resumes; `atomic_write` on its first save into a
    directory (so `Module.save_file` does too)."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        m = _TEMP.match(entry.name)
        if m and m["host"] == _HOST and not process_alive(int(m["pid"])):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


_CLEANED: set[tuple[int, str]] = set()


def _clean_once(directory: Path) -> None:
    key = (os.getpid(), str(directory.resolve()))
    if key not in _CLEANED:
        _CLEANED.add(key)
        remove_stale_temps(directory)


def process_alive(pid: int) -> bool:
    """Whether process `pid` of this host still runs: one that has exited but that its parent has
    not reaped yet (a zombie: a killed child of a test or a launcher) has ended."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except (OverflowError, ValueError):  # no process can have that pid
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:  # state, after the command name in parentheses
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc (not Linux): alive as far as kill tells
        return True


_ADVICE = {
    errno.ENOSPC: "the disk is full: free space there or save elsewhere",
    errno.EDQUOT: "the disk quota is used up: free space there or save elsewhere",
    errno.EROFS: "the filesystem is read-only: save to a writable directory",
    errno.EACCES: "no permission to write there: save to a writable directory",
    errno.EPERM: "no permission to write there: save to a writable directory",
}


def write_error(e: OSError, path: Path) -> SaveError:
    """`e` restated for the destination `path` (not the temp file) with what to do about it; the
    previous file at `path`, if any, is unchanged."""
    advice = _ADVICE.get(e.errno or 0, "check the destination")
    return SaveError(e.errno, f"{e.strerror or e}; could not save (the previous file, if any, is unchanged): {advice}",
                   str(path))


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


def gunzip(data: bytes, path: Path, limit: int | None = None) -> bytearray:
    """Inflate incrementally, refusing streams that expand past `limit` (gzip bombs).

    The default limit is a multiple of the compressed size, so memory stays bounded by the file.
    Members (concatenated gzip streams) are walked by offset: input goes in slices that start small
    after each member, so zlib's copy of the unused input stays small and 100,000 empty members
    take linear time.
    """
    if limit is None:
        limit = min(MAX_DECOMPRESSED, max(MIN_LIMIT, MAX_RATIO * len(data)))
    view = memoryview(data)
    out = bytearray()
    start = 0  # where the current member begins
    try:
        while True:
            decomp = zlib.decompressobj(wbits=31)
            fed, step = start, _FIRST_SLICE  # input handed to zlib ends at `fed`
            while not decomp.eof:
                if decomp.unconsumed_tail:  # the last call stopped at its output cap
                    chunk = decomp.decompress(decomp.unconsumed_tail, 1 << 24)
                else:
                    piece = view[fed : fed + step]
                    if not piece:
                        raise RecordError("truncated gzip stream", path)
                    fed += len(piece)
                    step = min(step * 2, _MAX_SLICE)
                    chunk = decomp.decompress(piece, 1 << 24)
                out += chunk
                if len(out) > limit:
                    raise RecordError(f"gzip stream inflates past {limit:,} bytes", path)
            start = fed - len(decomp.unused_data)
            if start >= len(view):
                break
            if view[start] == 0:  # zero padding after the last member is allowed, nothing else
                if bytes(view[start:]).strip(b"\0"):
                    raise RecordError(f"junk after the gzip data (byte {start})", path)
                break
    except zlib.error as e:
        raise RecordError(f"not valid gzip ({e})", path) from None
    return out  # not copied into bytes: a record inflating to 60 MB would briefly hold 120 MB


_FIRST_SLICE = 256  # input fed to zlib right after a member starts (doubling up to _MAX_SLICE)
_MAX_SLICE = 1 << 20
