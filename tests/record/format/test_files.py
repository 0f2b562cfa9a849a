"""`burnlike.record.format.files`: how record files reach the disk and come back.

Saves are atomic (a temp file beside the target, renamed over it): a crash, a SIGKILL or a full
disk leaves the old file or the new one, never a torn one, and no temp file behind. Durable saves
(checkpoints) fsync the file before the rename and the folder after; plain saves don't wait for
the disk. Temp files a dead writer of this host left are removed; a live writer's or another
host's stay. Gzip records inflate within a bound (a few KiB can't become gigabytes) and any
damage is a `RecordError` naming the file."""

from __future__ import annotations

import errno
import gzip
import io
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import zlib
from pathlib import Path
from typing import IO, Any

import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    DefaultRecorder,
    NamedMpkGzFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    load_checkpoint,
)
from burnlike.record.format import files
from burnlike.record.format.files import (
    MAX_RATIO,
    MIN_LIMIT,
    WritebackFile,
    atomic_write,
    gunzip,
    remove_stale_temps,
)
from burnlike.record.tensor.tensor_data import tensor_to_data
from tests.helpers.paths import HELPERS
from tests.helpers.records import Net, dead_pid, randomised, temp_of
from tests.record.helpers import Tiny, burnlike_threads, lightning_checkpoint, randomised_params

CHILD = """
import signal, sys
got = []
signal.signal(signal.SIGHUP, lambda *_: got.append(1))
print("ready", flush=True)
sys.stdin.read()
print("signalled" if got else "untouched", flush=True)
"""

SAVER = """
import sys, torch
from burnlike.record import DefaultRecorder
from burnlike.record.tensor.tensor_data import tensor_to_data
r = DefaultRecorder()
print("ready", flush=True)
while True:
    r.record({"w": tensor_to_data(torch.randn(4_000_000))}, sys.argv[1], exact_path=True)
"""


def failing(error: OSError):
    """A writer that writes a little, then fails with `error`."""
    def write(f: Any) -> None:
        f.write(b"partial")
        raise error

    return write


def save_module(path: Path, recorder) -> Path:
    return randomised_params(Tiny()).save_file(path, recorder, durable=True)


def save_checkpoint(path: Path, recorder) -> Path:
    target = path.with_suffix(".ckpt")
    RecorderCheckpointIO(recorder).save_checkpoint(lightning_checkpoint(randomised_params(Tiny())), target)
    return target


class Unencodable:
    """Not a record value: the MessagePack writer fails on it after writing what came before."""


def fail_fsync(path: Path, monkeypatch) -> None:
    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    randomised_params(Tiny(), seed=2).save_file(path, DefaultRecorder(), durable=True)


def fail_mid_record(path: Path, monkeypatch) -> None:
    DefaultRecorder().record({"first": b"x" * (1 << 17), "then": Unencodable()}, path)


def fail_mid_tensor(path: Path, monkeypatch) -> None:
    model = randomised_params(Tiny(128), seed=2)  # a 64 KiB weight is streamed to the file first
    model.norm.to("meta")  # a tensor whose bytes can't be read
    model.save_file(path, DefaultRecorder())


def _save_twice_in_child(path: str, queue) -> None:
    net = nn.Linear(3, 2)
    DefaultRecorder().save_module(net, path)
    before = len(os.listdir("/proc/self/fd"))
    DefaultRecorder().save_module(net, path)
    queue.put(len(os.listdir("/proc/self/fd")) - before)


# --- atomic writes ---


def test_atomic_write_puts_bytes_on_an_fsspec_filesystem(memory_dir):
    target = memory_dir / "deep" / "model.bin"
    atomic_write(target, b"\x01\x02")
    assert target.read_bytes() == b"\x01\x02"


def test_the_temp_file_is_made_in_the_destination_folder(tmp_path, monkeypatch):
    """Beside the target, so the rename stays on one filesystem (atomic; never EXDEV)."""
    renamed: list[tuple[str, str]] = []
    real = files.os.replace
    monkeypatch.setattr(files.os, "replace", lambda a, b: renamed.append((a, b)) or real(a, b))
    target = tmp_path / "deep" / "model.bin"
    files.atomic_write(target, b"abc")
    assert [Path(a).parent for a, _ in renamed] == [target.parent] and target.read_bytes() == b"abc"


def test_temp_file_name_names_the_target_host_and_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_a_plain_save_is_atomic_without_waiting_for_the_disk(tmp_path, monkeypatch, disk_calls):
    """`save_file` as torch.save and Burn's recorders: no fsync, no writeback hints; yet a temp
    file renamed over the target, whose bytes are the durable save's."""
    model = randomised_params(Tiny())
    durable = model.save_file(tmp_path / "durable", DefaultRecorder(), durable=True)
    disk_calls.clear()  # from here on
    monkeypatch.setattr(files, "_SYNC_FILE_RANGE", lambda *args: disk_calls.append(("writeback",)) or 0)
    monkeypatch.setattr(files, "WRITEBACK_STEP", 1)

    def events() -> list[str]:  # each call, a rename as whether its temp file was beside its target
        return [f"replace {c[2].parent == c[3].parent}" if c[0] == "replace" else c[0] for c in disk_calls]

    plain = model.save_file(tmp_path / "plain", DefaultRecorder())
    assert events() == ["replace True"]
    assert plain.read_bytes() == durable.read_bytes()
    # the same default a level down: Burn's recorder API, and the file writer itself
    DefaultRecorder().save_module(model, tmp_path / "module")
    DefaultRecorder().record({"x": 1}, tmp_path / "item")
    files.atomic_write(tmp_path / "raw", b"x" * 64)
    assert events() == ["replace True"] * 4
    model.save_file(tmp_path / "again", DefaultRecorder(), durable=True)
    assert "writeback" in events() and events().count("fsync") == 2  # the file, then its folder


@pytest.mark.parametrize("save", [save_module, save_checkpoint])
@pytest.mark.parametrize("recorder", [DefaultRecorder(), NamedMpkGzFileRecorder(), BinFileRecorder()],
                         ids=lambda r: r.extension)
def test_the_file_is_fsynced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch, disk_calls, save,
                                                                     recorder):
    events = disk_calls
    (tmp_path / "m").mkdir()
    target = save(tmp_path / "m" / "model", recorder)
    monkeypatch.undo()
    renames = [i for i, e in enumerate(events) if e[0] == "replace"]
    assert len(renames) == 1 and events[renames[0]][3] == target
    inode = target.stat().st_ino
    assert events[renames[0]][1] == inode  # the temp file renamed is the file at the target
    synced = [i for i, e in enumerate(events) if e == ("fsync", inode, "file")]
    assert synced and synced[0] < renames[0]  # its data reached the disk before the rename
    folder = (target.parent.stat().st_ino,)
    assert any(e[0] == "fsync" and e[1:] == (*folder, "dir") for e in events[renames[0]:])  # then the rename
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


# --- failed saves keep the old file ---


@pytest.mark.parametrize(("error", "text"), [
    (OSError(errno.ENOSPC, "No space left on device"),
     "No space left on device; could not save (the previous file, if any, is unchanged): the disk is full: "
     "free space there or save elsewhere"),
    (OSError(errno.EIO, "Input/output error"),
     "Input/output error; could not save (the previous file, if any, is unchanged): check the destination"),
    (OSError("the device went away"),
     "the device went away; could not save (the previous file, if any, is unchanged): check the destination"),
])
def test_a_failed_save_says_what_to_do_and_names_the_destination(tmp_path, error, text):
    path = tmp_path / "model.mpk"
    with pytest.raises(OSError) as e:
        atomic_write(path, failing(error))
    assert (e.value.errno, e.value.strerror, e.value.filename) == (error.errno, text, str(path))
    assert not path.exists() and os.listdir(tmp_path) == []


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


@pytest.mark.parametrize("failure", [fail_fsync, fail_mid_record, fail_mid_tensor])
def test_a_failed_save_removes_its_temp_file_and_keeps_the_old_one(tmp_path, monkeypatch, failure):
    folder = tmp_path / "m"
    old = randomised_params(Tiny(128)).save_file(folder / "model", DefaultRecorder())
    content = old.read_bytes()
    with pytest.raises((OSError, RecordError, NotImplementedError, RuntimeError)):
        failure(folder / "model", monkeypatch)
    monkeypatch.undo()
    assert [p.name for p in folder.iterdir()] == ["model.mpk"]
    assert old.read_bytes() == content


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_sigkill_during_save_never_leaves_a_torn_file(tmp_path):
    target = tmp_path / "model-1.mpk"
    DefaultRecorder().record({"w": tensor_to_data(torch.zeros(4_000_000))}, target, exact_path=True)
    size = target.stat().st_size
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(target)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        while proc.poll() is None and not any(tmp_path.glob(".model-1.mpk.*")):
            pass  # a save is in flight once its temp file exists: kill it mid-write
        proc.kill()
        proc.wait()
        item = DefaultRecorder().load(target)  # always a whole record, old or new
        assert target.stat().st_size == size and len(item["w"]["bytes"]) == 16_000_000


@pytest.mark.slow
def test_sigkill_during_an_async_write_leaves_the_previous_checkpoint(tmp_path):
    """The plugin's background writer goes through the same atomic write: killed mid-write, the
    previous checkpoint stays whole."""
    path = tmp_path / "ck.ckpt"
    proc = subprocess.Popen([sys.executable, str(HELPERS / "async_kill_save.py"), str(path)], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    try:
        assert proc.stdout.readline().strip() == "saved"
        before = path.read_bytes()
        assert proc.stdout.readline().strip() == "writing"  # the second save is half written
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    finally:
        proc.kill()
    assert path.read_bytes() == before
    assert load_checkpoint(path)["global_step"] == 1


# --- no open file or thread outlives a save ---


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_overwriting_a_record_leaves_no_open_file_or_thread_behind(tmp_path):
    net = randomised(Net())
    path = DefaultRecorder().save_module(net, tmp_path / "m")
    before = len(list(Path("/proc/self/fd").iterdir()))
    for _ in range(5):  # nothing (fd, thread) outlives a save
        DefaultRecorder().save_module(net, tmp_path / "m")
    assert len(list(Path("/proc/self/fd").iterdir())) == before
    assert burnlike_threads() == []
    assert [p.name for p in tmp_path.iterdir()] == ["m.mpk"] and path.stat().st_nlink == 1
    assert torch.equal(Net().load_file(path, DefaultRecorder()).embed.weight, net.embed.weight)


@pytest.mark.skipif(not Path("/proc/self/fd").exists() or sys.platform != "linux", reason="needs fork and /proc")
def test_a_forked_child_leaves_no_open_file_after_replacing_a_record(tmp_path):
    DefaultRecorder().save_module(nn.Linear(3, 2), tmp_path / "parent")
    DefaultRecorder().save_module(nn.Linear(3, 2), tmp_path / "parent")
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_save_twice_in_child, args=(str(tmp_path / "child"), queue))
    child.start()
    try:
        assert queue.get(timeout=60) == 0
    finally:
        child.join(timeout=10)
        child.kill()
    assert child.exitcode == 0


# --- stale temp files ---


def test_a_temp_naming_a_pid_no_process_can_have_is_stale(tmp_path):
    temp = temp_of(tmp_path / "model.mpk", 10**30)  # os.kill raises OverflowError
    assert remove_stale_temps(tmp_path) == [temp] and not temp.exists()


def test_stale_temps_of_a_dead_writer_go_and_a_live_writers_stay_untouched(tmp_path):
    dead = dead_pid()
    live = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout is not None and live.stdin is not None
        assert live.stdout.readline().strip() == "ready"
        dead_temp, live_temp = temp_of(tmp_path / "model.mpk", dead), temp_of(tmp_path / "model.mpk", live.pid)
        assert remove_stale_temps(tmp_path) == [dead_temp]
        assert live_temp.exists() and not dead_temp.exists()
        live.stdin.close()
        assert live.stdout.readline().strip() == "untouched"  # asking whether it runs sends it nothing
    finally:
        live.kill()
        live.wait()


def test_a_temp_of_another_users_live_process_stays(tmp_path):
    temp = temp_of(tmp_path / "model.mpk", 1)  # pid 1 runs as root: os.kill(1, 0) is refused to anyone else
    if os.getuid() != 0:
        assert remove_stale_temps(tmp_path) == [] and temp.exists()
        return
    tmp_path.chmod(0o777)  # root: look from a forked child running as nobody
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status only
        code = 2
        try:
            os.chdir(tmp_path)
            os.setgid(65534)
            os.setuid(65534)
            code = 0 if remove_stale_temps(Path(".")) == [] else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and temp.exists()


def test_another_hosts_temp_file_is_left_alone(tmp_path: Path) -> None:
    tmp = tmp_path / ".model.mpk.burnlike.otherhost.1.abc.tmp"
    tmp.write_bytes(b"")
    assert remove_stale_temps(tmp_path) == [] and tmp.exists()


def test_first_save_into_a_folder_removes_a_dead_writers_temp_not_a_live_ones(tmp_path: Path) -> None:
    stale = temp_of(tmp_path / "model.mpk", dead_pid())
    live = temp_of(tmp_path / "model.mpk", os.getppid())  # a running process: its save may be under way
    other = tmp_path / ".model.mpk.x1y2.tmp"  # not ours (no owner in the name): left alone
    other.write_bytes(b"")
    Net().save_file(tmp_path / "model", DefaultRecorder())
    assert not stale.exists()
    assert live.exists() and other.exists()
    assert (tmp_path / "model.mpk").exists()


# --- the written file: pieces, writeback, preallocation ---


def test_big_writes_reach_the_kernel_in_pieces(tmp_path):
    """A WritebackFile hands the kernel at most WRITE_PIECE per write, whatever it is given, and the
    file holds exactly what was written."""
    sizes: list[int] = []

    class Counting(io.FileIO):
        def write(self, b):  # type: ignore[override]
            sizes.append(memoryview(b).nbytes)
            return super().write(b)

    data = bytes(range(256)) * ((5 * files.WRITE_PIECE + 300) // 256)
    with files.WritebackFile(Counting(tmp_path / "f", "wb"), buffer_size=1 << 20) as f:
        assert f.write(data) == len(data)
        f.write(b"tail")
    assert max(sizes) <= files.WRITE_PIECE and sum(sizes) == len(data) + 4
    assert (tmp_path / "f").read_bytes() == data + b"tail"


def test_only_files_and_memory_are_rewindable_and_seeking_back_moves_the_writeback(tmp_path):
    """Local files and memory can be gone back in; gzip streams can't. Going back in a
    WritebackFile moves its writeback bookkeeping with it."""
    raw = io.FileIO(tmp_path / "f", "wb")
    with files.WritebackFile(raw) as f:
        assert files.rewindable(f) and files.rewindable(io.BytesIO())
        with gzip.GzipFile(fileobj=io.BytesIO(), mode="wb") as gz:
            assert not files.rewindable(gz)
        f.write(b"a" * (files.WRITEBACK_STEP + 10))
        assert f.written == files.WRITEBACK_STEP + 10
        assert f.started >= files.WRITEBACK_STEP or files._SYNC_FILE_RANGE is None
        f.seek(100)
        assert (f.written, f.started) == (100, 100)
        f.truncate()
        f.write(b"b" * 5)
        assert f.written == 105
    assert (tmp_path / "f").read_bytes() == b"a" * 100 + b"b" * 5


@pytest.mark.skipif(sys.platform != "linux", reason="sync_file_range is Linux-only")
def test_writeback_starts_at_each_full_step(tmp_path, monkeypatch):
    started: list[tuple[int, int]] = []
    monkeypatch.setattr(files, "_SYNC_FILE_RANGE", lambda fd, offset, n, flags: started.append((offset, n)) or 0)
    monkeypatch.setattr(files, "WRITEBACK_STEP", 1000)
    atomic_write(tmp_path / "f.bin", lambda f: [f.write(b"x" * 500) for _ in range(5)], durable=True)
    assert started == [(0, 1000), (1000, 1000)]  # exactly one step written: handed over at once


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


@pytest.mark.skipif(sys.platform != "linux", reason="sync_file_range is Linux-only")
def test_sync_file_range_takes_64_bit_offsets_and_reports_its_result(tmp_path):
    fn = files._SYNC_FILE_RANGE
    assert fn is not None
    with open(tmp_path / "f", "wb") as f:
        f.write(b"x" * 4096)
        f.flush()
        assert fn(f.fileno(), 0, 4096, 2) == 0
        assert fn(f.fileno(), 1 << 31, 1 << 33, 2) == 0  # past 2 GiB (not a C int): a big checkpoint's tail


@pytest.mark.skipif(sys.platform != "linux", reason="fallocate is Linux-only")
def test_fallocate_takes_64_bit_sizes_and_a_guess_never_outlives_the_write(tmp_path, monkeypatch):
    """A save allocates its file up front from a guess: past 2 GiB too (not a C int), and whatever
    the guess, the file ends where the writing ended."""
    fn = files._FALLOCATE
    assert fn is not None
    with open(tmp_path / "big", "wb") as f:
        assert fn(f.fileno(), 1, 1 << 32, 4096) == 0  # FALLOC_FL_KEEP_SIZE, one block past 4 GiB: sparse, no size
    reserved: list[int] = []
    monkeypatch.setattr(files, "_FALLOCATE", lambda fd, mode, offset, n: reserved.append(n) or fn(fd, mode, offset, n))
    atomic_write(tmp_path / "over", lambda f: f.write(b"abc"), size=1 << 20)
    atomic_write(tmp_path / "under", lambda f: f.write(b"x" * 5000), size=100)
    atomic_write(tmp_path / "none", lambda f: f.write(b"abc"))
    assert reserved == [1 << 20, 100]
    assert (tmp_path / "over").read_bytes() == b"abc"
    assert (tmp_path / "under").read_bytes() == b"x" * 5000
    assert (tmp_path / "none").read_bytes() == b"abc"


# --- gzip ---


def test_a_gzip_record_may_inflate_to_its_ratio_limit_past_the_minimum(tmp_path):
    body = os.urandom(1 << 20) + bytes(MIN_LIMIT)  # ~1 MiB compressed, inflating past MIN_LIMIT
    data = gzip.compress(body, compresslevel=1)
    assert MIN_LIMIT < len(body) < MAX_RATIO * len(data)
    assert gunzip(data, tmp_path / "m.mpk.gz") == body


def test_a_gzip_record_inflating_past_its_limit_is_refused(tmp_path, monkeypatch):
    """A gzip bomb (~1000:1) loaded by a gzip recorder: the limit a record's size allows stops it."""
    monkeypatch.setattr(files, "MIN_LIMIT", 1 << 16)
    (tmp_path / "bomb.mpk.gz").write_bytes(gzip.compress(b"\0" * (8 << 20)))
    with pytest.raises(RecordError, match="inflates past"):
        NamedMpkGzFileRecorder().load(tmp_path / "bomb.mpk.gz")


def test_gzip_errors_name_the_file(tmp_path):
    path = tmp_path / "model.mpk.gz"
    packed = gzip.compress(b"\0" * 100_000)
    with pytest.raises(RecordError, match="truncated gzip") as cut:
        gunzip(packed[: len(packed) // 2], path)
    with pytest.raises(RecordError, match="inflates past") as bomb:
        gunzip(packed, path, limit=1000)
    assert cut.value.path == bomb.value.path == str(path)


def test_a_corrupt_gzip_record_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "broken.mpk.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"not a deflate stream" * 4)
    with pytest.raises(RecordError) as error:
        NamedMpkGzFileRecorder().load_module(nn.Linear(2, 2), path)
    assert str(path) in str(error.value) and "gzip" in str(error.value)


def test_a_zlib_stream_is_not_gzip(tmp_path):
    with pytest.raises(RecordError, match="not valid gzip"):
        gunzip(zlib.compress(b"\x83" * 100), tmp_path / "m.mpk.gz")


@pytest.mark.parametrize("junk", [b"\0\0X", b"\0XX\0"])
def test_junk_after_zero_padding_in_gzip_is_refused_with_its_offset(tmp_path, junk):
    data = gzip.compress(b"record")
    with pytest.raises(RecordError) as error:
        gunzip(data + junk, tmp_path / "m.gz")
    assert str(error.value) == f"{tmp_path / 'm.gz'}: junk after the gzip data (byte {len(data)})"
    assert gunzip(data + b"\0\0\0", tmp_path / "m.gz") == b"record"  # zero padding alone is fine


def test_gzip_members_cost_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work counter: input bytes handed to zlib stay a small multiple of the file, however many
    members (copying the rest of the buffer per member made 100,000 of them quadratic)."""
    fed = [0]
    real = files.zlib.decompressobj

    class Counting:
        def __init__(self, **kw: int) -> None:
            self.inner = real(**kw)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            fed[0] += len(data)
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    monkeypatch.setattr(files.zlib, "decompressobj", Counting)
    data = gzip.compress(b"", mtime=0) * 2000 + gzip.compress(b"x" * 100_000, mtime=0)
    assert files.gunzip(data, Path("m.mpk.gz")) == b"x" * 100_000
    assert fed[0] < 16 * len(data)


# --- file modes -------------------------------------------------------------------------------------
WRITERS = {
    "atomic_write": lambda path: atomic_write(path, b"x"),
    "durable atomic_write": lambda path: atomic_write(path, b"x", durable=True),
    "Module.save_file": lambda path: Tiny().save_file(path, DefaultRecorder()),
    "RecorderCheckpointIO": lambda path: RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": {"w": torch.ones(2)}}, path),
}


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_saved_file_has_the_mode_open_gives_under_the_umask(tmp_path, umask, writer):
    """A temp file from mkstemp is 0600: renamed as it was, a teammate's evaluation job (another
    user, same group) could not read the checkpoint. Saves get what `open(path, "w")` would."""
    before = os.umask(umask)
    try:
        reference = tmp_path / "by-open"
        reference.write_bytes(b"x")
        path = tmp_path / f"saved.{DefaultRecorder.extension}"
        WRITERS[writer](path)
    finally:
        os.umask(before)
    assert oct(path.stat().st_mode & 0o777) == oct(reference.stat().st_mode & 0o777) == oct(0o666 & ~umask)


def test_a_writeback_file_seeks_from_the_end_as_asked(tmp_path):
    """WritebackFile.seek keeps io's `whence`: from the end, it lands past the bytes written."""
    with WritebackFile(io.FileIO(tmp_path / "f.bin", "wb"), 16, writeback=False) as f:
        f.write(b"0123456789")
        assert f.seek(-4, io.SEEK_END) == 6
        f.write(b"AB")
    assert (tmp_path / "f.bin").read_bytes() == b"012345AB89"


def test_a_pid_the_kernel_refuses_to_signal_is_a_live_process(monkeypatch):
    """`os.kill(pid, 0)` refused with EPERM: the pid is another user's live process, whose temp
    files stay (the forked test above sees it as a user would; this one sees the branch in-process)."""

    def refused(pid: int, sig: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(files.os, "kill", refused)
    assert files.process_alive(4242) is True


def test_a_writer_of_small_pieces_hands_the_kernel_each_mib_as_it_goes(tmp_path):
    """The save buffers at most 1 MiB in the process; the rest is already the kernel's (and its writeback's)."""
    seen: list[int] = []

    def write(f: IO[bytes]) -> None:
        for _ in range(24):  # 1.5 MiB in 64 KiB pieces
            f.write(b"\1" * (64 << 10))
        seen.append(os.fstat(f.fileno()).st_size)

    atomic_write(tmp_path / "m.bin", write)
    assert seen[0] >= 1 << 20
    assert (tmp_path / "m.bin").stat().st_size == 24 * (64 << 10)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process state from /proc (Linux)")
def test_a_process_that_exited_is_not_alive_even_before_its_parent_reaps_it():
    """A killed child its parent hasn't waited for yet (a zombie) has ended: a lock or temp file
    it left is stale at once."""
    import signal
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert files.process_alive(child.pid)
        child.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # it has exited, and is left unreaped
        assert not files.process_alive(child.pid)  # a zombie
    finally:
        child.kill()
        child.wait()
    assert not files.process_alive(child.pid)  # reaped: gone
