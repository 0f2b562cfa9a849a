"""`burnlike.record.format.messagepack`: the streaming MessagePack writer and bounded reader. The
writer's bytes equal `msgpack.packb`'s, with no ext types; the reader charges the budget per
container, nests exactly to `MAX_DEPTH`, and refuses bad input (invalid or truncated documents,
floods of values, bytes after the document, also inside gzip) as a `RecordError` naming the file
and, where known, the key."""

from __future__ import annotations

import gzip
import io
import sys

import msgpack
import pytest
from torch import nn

from burnlike.record import (
    CompactRecorder,
    DefaultRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    RecordError,
)
from burnlike.record.format.budget import Budget
from burnlike.record.format.messagepack import BIG, MAX_DEPTH, bin_header, read_msgpack, write_msgpack
from burnlike.record.format.module_record import module_to_record
from tests.helpers.records import Net, randomised
from tests.record.format.helpers import SETTINGS
from tests.record.helpers import Tiny, randomised_params


def decode(data: bytes) -> object:
    """One MessagePack document read from memory."""
    return read_msgpack(io.BytesIO(data), len(data), "mem.mpk")


# --- writing ---


def test_streamed_bytes_equal_msgpack_packb(tmp_path):
    net = nn.Sequential(nn.Linear(300, 200), nn.Embedding(500, 64), nn.Linear(4, 2))  # bins above and below 64 KiB
    for settings in SETTINGS:
        eager = module_to_record(net, settings)
        lazy = module_to_record(net, settings, lazy=True)
        buf = io.BytesIO()
        write_msgpack({"item": lazy}, buf)
        assert buf.getvalue() == msgpack.packb({"item": eager}, use_bin_type=True)


def test_msgpack_records_use_no_ext_types(tmp_path):
    path = randomised(Net()).save_file(tmp_path / "m", CompactRecorder())
    msgpack.unpackb(path.read_bytes(), raw=False, ext_hook=lambda code, data: pytest.fail("ext type used"))


def test_a_record_nested_150_lists_deep_is_written():
    """The writer's depth bound (budget.MAX_DEPTH, 200) counts one level per list."""
    nested: list[object] = [1]
    for _ in range(149):
        nested = [nested]
    out = io.BytesIO()
    write_msgpack({"item": nested}, out)
    assert out.getvalue().startswith(b"\x81")


def test_a_bin_over_4_gib_is_refused_saying_how_big_it_is():
    with pytest.raises(RecordError) as error:
        bin_header(2**32)
    assert str(error.value) == "a MessagePack bin holds at most 4 GiB; this tensor has 4294967296 bytes"


# --- reading ---


def test_fixstr_of_length_zero_is_an_empty_string_not_an_array():
    assert decode(b"\xa0") == ""  # 0xa0 is the first fixstr, one past the last fixarray (0x9f)
    assert decode(b"\x9f" + b"\xc0" * 15) == [None] * 15


def test_a_messagepack_map_or_array_costs_one_plus_its_entries_in_the_budget():
    """A container is charged 1 + its entries (a map: 1 + keys + values) when its header is read."""
    for doc, cost in (([1, 2, 3], 4), ({"a": 1, "b": 2}, 5), ([[1], []], 3 + 2 + 1)):
        data = msgpack.packb(doc)
        budget = Budget(100)
        assert read_msgpack(io.BytesIO(data), len(data), None, budget=budget) == doc
        assert budget.used == cost, doc


def test_arrays_nest_exactly_to_the_depth_limit():
    def nested(levels: int) -> bytes:
        return b"\x91" * levels + b"\xc0"

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 40 * MAX_DEPTH))  # room for a few Python frames a level, wrapped code's too
    try:
        inner: object = decode(nested(MAX_DEPTH))
        with pytest.raises(RecordError, match="nest"):
            decode(nested(MAX_DEPTH + 1))
    finally:
        sys.setrecursionlimit(limit)
    for _ in range(MAX_DEPTH):
        assert isinstance(inner, list) and len(inner) == 1
        inner = inner[0]
    assert inner is None


# --- malformed documents ---


def test_invalid_messagepack_names_the_key_being_read(tmp_path):
    path = tmp_path / "m.mpk"
    data = msgpack.packb({"metadata": {}, "item": {"layer": {"name": "Z"}}, "_b": []}, use_bin_type=True)
    path.write_bytes(data.replace(b"\xa1Z", b"\xa1\xff"))  # a one-byte string that isn't UTF-8
    with pytest.raises(RecordError) as e:
        NamedMpkFileRecorder().load(path)
    assert e.value.key == "item.layer.name" and e.value.path == str(path)
    assert str(e.value).startswith(f"{path}: at 'item.layer.name': not valid MessagePack: string is not UTF-8")
    path.write_bytes(b"\xc1")  # fails before any key
    with pytest.raises(RecordError) as e:
        NamedMpkFileRecorder().load(path)
    assert e.value.key is None and str(e.value).startswith(f"{path}: not valid MessagePack: unsupported type byte")


def test_a_truncated_document_names_the_file_and_no_key(tmp_path):
    with pytest.raises(RecordError) as error:
        read_msgpack(io.BytesIO(b"\xc6\x00"), 2, tmp_path / "t.mpk")
    assert str(error.value).startswith(f"{tmp_path / 't.mpk'}: not valid MessagePack: truncated")


def test_a_big_bin_cut_short_of_the_size_the_file_claimed_says_truncated():
    """A file that shrinks under the reader: its size said the bytes were there, the read finds fewer."""
    n = BIG
    data = b"\xc6" + n.to_bytes(4, "big") + b"x" * (n // 2)
    with pytest.raises(RecordError, match=r"not valid MessagePack: truncated bin \(byte"):
        read_msgpack(io.BytesIO(data), 5 + n, "mem.mpk")


def test_a_value_flood_is_refused_naming_the_file(tmp_path):
    n = 70_000  # empty lists: more values than a file of this size may make a decoder build
    data = b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n
    with pytest.raises(RecordError) as error:
        read_msgpack(io.BytesIO(data), len(data), tmp_path / "flood.mpk")
    assert str(error.value).startswith(f"{tmp_path / 'flood.mpk'}: holds more than")


@pytest.mark.parametrize("payload", [b"\x91" * 300 + b"\xc0", b"\x81\xa1k" * 300 + b"\xc0", b"\xdd\xff\xff\xff\xff",
                                     b"\xdf\x7f\xff\xff\xff\xc0", b"\xc7\x01\x05\x00", b"\xc1", b"\x83\xa1a\xc0"])
def test_hostile_msgpack_is_a_record_error(tmp_path, payload):
    path = tmp_path / "x.mpk"
    path.write_bytes(payload)
    with pytest.raises(RecordError, match="x.mpk"):
        DefaultRecorder().load(path)


@pytest.mark.parametrize("trailing", [b"\xc0", b"\x00", b"\x81\xa1a\x01"])
def test_bytes_after_the_messagepack_document_are_refused(tmp_path, trailing):
    path = randomised_params(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    path.write_bytes(path.read_bytes() + trailing)
    with pytest.raises(RecordError, match=rf"m\.mpk.*{len(trailing)} bytes of extra data"):
        Tiny().load_file(path, DefaultRecorder())
    with pytest.raises(RecordError, match="extra data"):
        DefaultRecorder().read_record(path)


def test_bytes_after_the_document_inside_gzip_are_refused(tmp_path):
    path = randomised_params(Tiny()).save_file(tmp_path / "m", NamedMpkGzFileRecorder())
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()) + b"\xc0"))
    with pytest.raises(RecordError, match="1 bytes of extra data"):
        Tiny().load_file(path, NamedMpkGzFileRecorder())


def test_a_value_msgpack_cannot_encode_is_named_by_its_type():
    with pytest.raises(RecordError, match=r"^can't encode complex \("):
        write_msgpack({"item": 1j}, io.BytesIO())


def test_a_map_is_charged_for_its_own_number_of_entries():
    """One and three entries: a two-entry map costs 5 whichever count is used."""
    for doc, cost in (({"a": 1}, 3), ({"a": 1, "b": 2, "c": 3}, 7)):
        data = msgpack.packb(doc)
        budget = Budget(100)
        assert read_msgpack(io.BytesIO(data), len(data), None, budget=budget) == doc
        assert budget.used == cost, doc


def test_a_map_key_that_is_a_list_is_refused_naming_its_type():
    with pytest.raises(RecordError, match="map key of type list"):
        decode(b"\x81\x90\xc0")  # {[]: nil}
