"""`burnlike.record.tensor.file_slice`: `FileSlice`, a tensor's bytes left in the record file
until read into place. Reads go on after a short read (Linux moves at most ~2 GiB per read), never
move the shared file offset where they run in parallel, and a file that shrank since it was parsed
is a `RecordError`."""

from __future__ import annotations

import io
import os

import pytest
import torch

from burnlike.record import CompactRecorder, RecordError
from burnlike.record.tensor import transfer
from burnlike.record.tensor.file_slice import FileSlice
from tests.record.helpers import Wide


def test_a_file_slice_reads_on_after_short_reads(tmp_path, monkeypatch):
    """Linux moves at most ~2 GiB per read: each next read starts where the last one ended."""
    data = torch.arange(1000, dtype=torch.int32)
    path = tmp_path / "raw"
    path.write_bytes(b"head" + data.numpy().tobytes())
    real = os.preadv
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, offset: real(fd, [bufs[0][:700]], offset))
    with open(path, "rb") as f:
        out = FileSlice(f, 4, 4000).readinto(torch.empty(1000, dtype=torch.int32))
    assert torch.equal(out, data)


@pytest.mark.skipif(not hasattr(os, "preadv"), reason="positional reads need os.preadv")
def test_parallel_slices_read_by_position_never_by_the_shared_file_offset(tmp_path):
    """Loads read one file's parts on two threads: a read that seeks the shared file object would
    race the other thread's, so where `parallel` says yes, a read must not touch the offset."""

    class NoSeek(io.FileIO):
        def seek(self, *args: object, **kwargs: object) -> int:
            raise AssertionError("a parallel read moved the shared file offset")

    path = tmp_path / "raw.bin"
    path.write_bytes(bytes(range(64)))
    with NoSeek(path, "rb") as f:
        piece = FileSlice(f, 16, 8)
        assert piece.parallel
        out = torch.empty(8, dtype=torch.uint8)
        piece.readinto(out)
    assert out.tolist() == list(range(16, 24))


def test_a_file_truncated_during_a_threaded_load_is_a_record_error(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "THREADS", 2)
    path = CompactRecorder().save_module(Wide(), tmp_path / "wide")
    model = Wide()
    original = transfer.Transfers.run

    def truncate_then_run(self):  # the file shrinks after it was parsed, before the bytes are read
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)
        original(self)

    monkeypatch.setattr(transfer.Transfers, "run", truncate_then_run)
    with pytest.raises(RecordError, match="changed while reading"):
        CompactRecorder().load_module(model, path)
