"""Tests for mutants a new seeded draw of `burnlike.record` found uncaught (2026-11-26, after the
save-durability change re-seeded the sample): exact messages, the edges of MessagePack's type bytes,
Burn's Bool params in bincode, sniffing, URLs and the plain read paths. Each was seen to fail on its
mutant (`cd mutants && MUTANT_UNDER_TEST=<name> python -m pytest ../tests/test_mutation_sample7.py`).
"""

from __future__ import annotations

import io
import os
import re
import sys

import pytest
import torch
from torch import nn

from burnlike.module import Module
from burnlike.record import BinFileRecorder, DefaultRecorder, PrettyJsonFileRecorder, RecordError
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.format import registry
from burnlike.record.format.files import read_head
from burnlike.record.format.location import is_url
from burnlike.record.format.messagepack import BIG, MAX_DEPTH, read_msgpack


def unpack(data: bytes) -> object:
    return read_msgpack(io.BytesIO(data), len(data), "mem.mpk")


# --- MessagePack ----------------------------------------------------------------------------------

def test_fixstr_of_length_zero_is_an_empty_string_not_an_array():
    assert unpack(b"\xa0") == ""  # 0xa0 is the first fixstr, one past the last fixarray (0x9f)
    assert unpack(b"\x9f" + b"\xc0" * 15) == [None] * 15


def test_a_big_bin_cut_short_of_the_size_the_file_claimed_says_truncated():
    """A file that shrinks under the reader: its size said the bytes were there, the read finds fewer."""
    n = BIG
    data = b"\xc6" + n.to_bytes(4, "big") + b"x" * (n // 2)
    with pytest.raises(RecordError, match=r"not valid MessagePack: truncated bin \(byte"):
        read_msgpack(io.BytesIO(data), 5 + n, "mem.mpk")


def test_arrays_nest_exactly_to_the_depth_limit():
    def nested(levels: int) -> bytes:
        return b"\x91" * levels + b"\xc0"

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 40 * MAX_DEPTH))  # room for mutmut's trampolines, a few frames a level
    try:
        inner: object = unpack(nested(MAX_DEPTH))
        with pytest.raises(RecordError, match="nest"):
            unpack(nested(MAX_DEPTH + 1))
    finally:
        sys.setrecursionlimit(limit)
    for _ in range(MAX_DEPTH):
        assert isinstance(inner, list) and len(inner) == 1
        inner = inner[0]
    assert inner is None


# --- bincode --------------------------------------------------------------------------------------

class Masked(Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("mask", torch.tensor([True, False, True]))


@pytest.mark.parametrize("version", ["0.21.0", "0.19.0"])
def test_a_bool_param_round_trips_through_bincode_in_both_layouts(tmp_path, version):
    """0.20+ writes a BoolStore variant after the Bool dtype, 0.19 doesn't: reading must match."""
    src = Masked()
    path = src.save_file(tmp_path / "m", BinFileRecorder(burn_version=version))
    dst = Masked()
    dst.mask.fill_(False)
    with torch.no_grad():
        dst.linear.weight.zero_()
    dst.load_file(path, BinFileRecorder(burn_version=version))
    assert dst.mask.tolist() == [True, False, True]
    assert torch.equal(dst.linear.weight, src.linear.weight)


def test_a_short_bincode_record_says_how_many_bytes_are_left(tmp_path):
    path = Masked().save_file(tmp_path / "m", BinFileRecorder())
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(RecordError) as e:
        Masked().load_file(path, BinFileRecorder())
    needs = re.search(r"needs (\d+) more bytes, (\d+) left", str(e.value))
    assert needs is not None, str(e.value)
    assert int(needs.group(1)) > int(needs.group(2)) >= 0 and int(needs.group(2)) < 3


# --- sniffing, URLs, heads ------------------------------------------------------------------------

def test_a_json_record_with_leading_whitespace_is_sniffed_as_json(tmp_path):
    path = Masked().save_file(tmp_path / "m", PrettyJsonFileRecorder())
    padded = tmp_path / "padded.ckpt"  # an extension that says nothing: the head decides
    padded.write_bytes(b"\n  " + path.read_bytes())
    assert isinstance(registry.sniff(padded), PrettyJsonFileRecorder)


def test_heads_are_the_first_n_bytes_of_local_and_fsspec_files(tmp_path):
    import fsspec

    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(200)))
    assert read_head(path, 4) == bytes(range(4))
    assert registry._head(path, 4) == bytes(range(4))
    fsspec.filesystem("memory").pipe("/sample7/f.bin", bytes(range(200)))
    assert registry._head("memory://sample7/f.bin", 4) == bytes(range(4))


def test_local_and_file_urls_are_paths_other_protocols_are_urls():
    assert not is_url("local://models/m.mpk") and not is_url("file:///tmp/m.mpk")
    assert is_url("s3://bucket/m.mpk") and is_url("memory://m.mpk")


# --- recorder read paths --------------------------------------------------------------------------

def test_read_record_can_add_the_recorders_extension(tmp_path):
    DefaultRecorder().record({"x": 3}, tmp_path / "item")
    metadata, item = DefaultRecorder().read_record(tmp_path / "item", exact_path=False)
    assert item == {"x": 3} and "format" in metadata


def test_a_record_too_large_to_decode_names_its_file(tmp_path, monkeypatch):
    path = DefaultRecorder().record({"x": 3}, tmp_path / "item")

    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    recorder = DefaultRecorder()
    monkeypatch.setattr(recorder, "read", out_of_memory)
    with pytest.raises(RecordError) as e:
        recorder.load(path)
    assert "record too large to decode" in str(e.value) and str(path) in str(e.value)


# --- checkpoint values ----------------------------------------------------------------------------

def test_an_unknown_tag_names_the_tag_and_the_key():
    with pytest.raises(RecordError) as e:
        decode_value({"__burnlike__": "frobnicate"}, "ck.mpk", "loops.x")
    assert "unknown tagged value 'frobnicate'" in str(e.value) and "loops.x" in str(e.value)


def test_a_tuple_whose_items_are_not_a_list_says_so():
    with pytest.raises(RecordError, match=r"malformed 'tuple' value \('expected a list'\)"):
        decode_value({"__burnlike__": "tuple", "items": 3}, "ck.mpk", "loops.t")


def test_unstorable_items_of_a_tuple_go_to_the_callers_handler():
    from burnlike.record.checkpoint.value import encode_value

    seen: list[tuple[str, str]] = []
    encode_value({"pair": (1, object())}, lambda key, t: t.dtype, on_unstorable=lambda key, kind: seen.append((key, kind)))
    assert seen == [("pair[1]", "builtins.object")]


def test_a_stateless_module_records_as_nil_and_loads_back(tmp_path):
    path = DefaultRecorder().save_module(nn.ReLU(), tmp_path / "relu")
    metadata, item = DefaultRecorder().read_record(path)
    assert item is None
    DefaultRecorder().load_module(nn.ReLU(), path)


@pytest.mark.parametrize("raw", [[0, 0, 300, 0], [0, 0, 0], [0, 0, -1, 0]], ids=["over-255", "short", "negative"])
def test_json_bytes_must_be_exactly_the_tensors_u8s(raw):
    from burnlike.record.tensor.tensor_data import check_data

    with pytest.raises(RecordError, match=r"bytes must be a list of 4 u8 for shape \[1\] of F32"):
        check_data({"bytes": raw, "shape": [1], "dtype": "F32"}, "w", "m.json")


@pytest.mark.skipif(not hasattr(os, "preadv"), reason="positional reads need os.preadv")
def test_parallel_slices_read_by_position_never_by_the_shared_file_offset(tmp_path):
    """Loads read one file's parts on two threads: a read that seeks the shared file object would
    race the other thread's, so where `parallel` says yes, a read must not touch the offset."""
    from burnlike.record.tensor.file_slice import FileSlice

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
