"""Temp files of atomic saves (issue 15): recognisable names, stale ones of dead writers removed
when a run starts (or on the first save into a directory), and I/O errors naming the destination."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_record import Net, randomised

from burnlike.record import DefaultRecorder
from burnlike.record.format import files
from burnlike.record.format.files import remove_stale_temps, temp_prefix
from burnlike.train.checkpoint import FileCheckpointer, KeepLastNCheckpoints


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def temp_of(path: Path, pid: int) -> Path:
    """A temp file as a writer with `pid` on this host names it."""
    prefix = temp_prefix(path).replace(f".{os.getpid()}.", f".{pid}.")
    tmp = path.parent / f"{prefix}abc123_x.tmp"
    tmp.write_bytes(b"half a checkpoint")
    return tmp


def test_temp_name_is_recognisable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = files.tempfile.mkstemp

    def spy(**kw: str) -> tuple[int, str]:
        fd, name = real(**kw)
        seen.append(Path(name).name)
        return fd, name

    monkeypatch.setattr(files.tempfile, "mkstemp", spy)
    Net().save_file(tmp_path / "model", DefaultRecorder())
    assert seen and seen[0].startswith(".model.mpk.burnlike.") and f".{os.getpid()}." in seen[0]
    assert files._TEMP.match(seen[0])


def test_save_file_removes_a_dead_writers_temp_not_a_live_ones(tmp_path: Path) -> None:
    stale = temp_of(tmp_path / "model.mpk", dead_pid())
    live = temp_of(tmp_path / "model.mpk", os.getppid())  # a running process: its save may be under way
    other = tmp_path / ".model.mpk.x1y2.tmp"  # not ours (no owner in the name): left alone
    other.write_bytes(b"")
    Net().save_file(tmp_path / "model", DefaultRecorder())
    assert not stale.exists()
    assert live.exists() and other.exists()
    assert (tmp_path / "model.mpk").exists()


def test_checkpointer_removes_stale_temps_when_a_run_starts(tmp_path: Path) -> None:
    checkpointer = FileCheckpointer(tmp_path, "mpk", KeepLastNCheckpoints(2))
    directory = checkpointer.path(1).parent
    directory.mkdir(parents=True)
    stale = temp_of(checkpointer.path(3), dead_pid())
    live = temp_of(checkpointer.path(3), os.getpid())

    class Trainer:  # the one attribute setup reads
        is_global_zero = True

    checkpointer.setup(Trainer(), None, "fit")  # type: ignore[arg-type]
    assert not stale.exists() and live.exists()


def test_another_hosts_temp_stays(tmp_path: Path) -> None:
    tmp = tmp_path / ".model.mpk.burnlike.otherhost.1.abc.tmp"
    tmp.write_bytes(b"")
    assert remove_stale_temps(tmp_path) == [] and tmp.exists()


# disk full surfaces at a write, or at the fsync of a durable save; read-only when the temp file is created
@pytest.mark.parametrize(("code", "advice", "where", "durable"), [
    (errno.ENOSPC, "disk is full", (files.os, "fsync"), True),
    (errno.ENOSPC, "disk is full", (files.WritebackFile, "write"), False),
    (errno.EROFS, "read-only", (files.tempfile, "mkstemp"), False)], ids=["full-at-fsync", "full-at-write", "read-only"])
def test_write_errors_name_the_destination_and_keep_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  code: int, advice: str, where: tuple[object, str],
                                                                  durable: bool) -> None:
    path = randomised(Net()).save_file(tmp_path / "model", DefaultRecorder())
    before = path.read_bytes()

    def refuse(*_: object, **__: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(*where, refuse)
    with pytest.raises(OSError) as info:
        Net().save_file(tmp_path / "model", DefaultRecorder(), durable=durable)
    assert info.value.errno == code and info.value.filename == str(path) and advice in str(info.value)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.mpk"]  # no temp left behind


@pytest.mark.parametrize("suffix", [".safetensors", ".ckpt", ".mpk", ".json.gz"])
def test_convert_writes_every_format_through_temp_and_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            suffix: str) -> None:
    from burnlike.cli import main

    src = randomised(Net()).save_file(tmp_path / "model", DefaultRecorder())
    renames: list[tuple[str, str]] = []
    real = files.os.replace

    def spy(a: str, b: str) -> None:
        renames.append((Path(a).name, str(b)))
        real(a, b)

    monkeypatch.setattr(files.os, "replace", spy)
    dst = tmp_path / f"out{suffix}"
    assert main(["convert", str(src), str(dst), "--model", "test_record:Net"]) == 0
    assert [b for _, b in renames] == [str(dst)] and files._TEMP.match(renames[0][0])


@pytest.mark.skipif(files._SYNC_FILE_RANGE is None, reason="sync_file_range is Linux-only")
def test_a_big_save_starts_writeback_as_it_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each WRITEBACK_STEP written is handed to the kernel's writeback at once (so the final fsync
    waits for the last step only): ranges in order, gapless, of the temp file, before its rename."""
    real, started = files._SYNC_FILE_RANGE, []

    def spy(fd: int, offset: int, n: int, flags: int) -> int:
        started.append((os.fstat(fd).st_ino, offset, n, flags))
        return real(fd, offset, n, flags)

    monkeypatch.setattr(files, "_SYNC_FILE_RANGE", spy)
    monkeypatch.setattr(files, "WRITEBACK_STEP", 1 << 20)
    data = os.urandom(5 << 20) + b"tail"
    target = tmp_path / "big.bin"
    files.atomic_write(target, lambda f: [f.write(data[i:i + 300_000]) for i in range(0, len(data), 300_000)],
                       durable=True)
    assert target.read_bytes() == data
    assert {ino for ino, *_ in started} == {target.stat().st_ino}
    assert [(o, f) for _, o, _, f in started][:1] == [(0, 2)]
    ends = [o + n for _, o, n, _ in started]
    assert [o for _, o, _, _ in started[1:]] == ends[:-1]  # gapless
    assert all(n >= 1 << 20 for *_, n, _ in started) and len(data) - ends[-1] < 1 << 20


def test_c_functions_are_found_by_name_with_their_types():
    """`clib.function` gives a process's C function with the argument and int return types set,
    errno kept for ctypes, and None for a name no loaded library has."""
    import ctypes

    from burnlike.record.tensor import clib

    if sys.platform != "linux":
        pytest.skip("the process's own C symbols are looked up on Linux")
    getpid = clib.function("getpid")
    assert getpid is not None and getpid() == os.getpid() and getpid.restype is ctypes.c_int and getpid.argtypes == []
    close = clib.function("close", ctypes.c_int)
    assert close is not None and close.argtypes == [ctypes.c_int]
    ctypes.set_errno(0)  # ctypes' own copy, which an earlier call may have left at EBADF
    assert close(-1) == -1 and ctypes.get_errno() == errno.EBADF  # use_errno: the failure's errno is kept
    assert clib.function("burnlike_no_such_function") is None


def test_c_functions_are_none_where_the_process_has_no_c_handle(monkeypatch):
    """Where ctypes can't open the process itself (Windows: `CDLL(None)` is a TypeError there),
    every lookup is None and the record code falls back (no fallocate, no writeback hints, casts in
    pieces) instead of failing at import."""
    import ctypes

    from burnlike.record.tensor import clib

    def no_handle(*args: object, **kwargs: object) -> None:
        raise TypeError("expected str, bytes or os.PathLike object, not NoneType")

    monkeypatch.setattr(ctypes, "CDLL", no_handle)
    assert clib.function("getpid") is None
