"""burnlike.record behaviour the rest of the suite left unpinned (issue 17, second pass over the
record sample's survivors): errors that name the file and say what was expected, the walker's
record fields for norms and custom parameters, Burn 0.19's Bool spelling, gzip's trailing junk,
checkpoint value keys and markers, shape limits, the load threads and the bf16 min/max path."""

from __future__ import annotations

import gzip
import io
import json
import sys
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import BinFileRecorder, DefaultRecorder, PrettyJsonFileRecorder, RecordError
from burnlike.record.checkpoint.epoch_files import FILES_KEY, join_parts
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint, load_checkpoint
from burnlike.record.checkpoint.value import Unstorable, decode_value, encode_value
from burnlike.record.format.bincode import _Writer
from burnlike.record.format.files import gunzip
from burnlike.record.format.location import RemotePath, as_path, is_url
from burnlike.record.format.messagepack import bin_header, read_msgpack, write_msgpack
from burnlike.record.format.module_record import module_to_record
from burnlike.record.tensor import serial, transfer
from burnlike.record.tensor.ahead import ViewsAhead
from burnlike.record.tensor.tensor_data import check_data


def same_dtype(key: str, t: torch.Tensor) -> torch.dtype:
    return t.dtype


# --- errors name the file and what was expected ------------------------------------------------------------

def test_a_bias_the_model_lacks_is_refused_by_the_bincode_reader(tmp_path):
    path = BinFileRecorder().save_module(nn.Linear(3, 2), tmp_path / "m")
    with pytest.raises(RecordError, match="the record has a bias the model doesn't have"):
        BinFileRecorder().load_module(nn.Linear(3, 2, bias=False), path)


def test_a_bin_over_4_gib_is_refused_saying_how_big_it_is():
    with pytest.raises(RecordError) as error:
        bin_header(2**32)
    assert str(error.value) == "a MessagePack bin holds at most 4 GiB; this tensor has 4294967296 bytes"


def test_a_truncated_document_names_the_file_and_no_key(tmp_path):
    with pytest.raises(RecordError) as error:
        read_msgpack(io.BytesIO(b"\xc6\x00"), 2, tmp_path / "t.mpk")
    assert str(error.value).startswith(f"{tmp_path / 't.mpk'}: not valid MessagePack: truncated")


def test_a_value_flood_is_refused_naming_the_file(tmp_path):
    n = 70_000  # empty lists: more values than a file of this size may make a decoder build
    data = b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n
    with pytest.raises(RecordError) as error:
        read_msgpack(io.BytesIO(data), len(data), tmp_path / "flood.mpk")
    assert str(error.value).startswith(f"{tmp_path / 'flood.mpk'}: holds more than")


def test_metadata_that_is_not_strings_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "m.mpk"
    path.write_bytes(msgpack.packb({"metadata": {"format": 1}, "item": {}, "_b": []}))
    with pytest.raises(RecordError) as error:
        DefaultRecorder().load(path)
    assert str(error.value) == f"{path}: at 'metadata': metadata must be a map of strings"


@pytest.mark.parametrize("junk", [b"\0\0X", b"\0XX\0"])
def test_junk_after_zero_padding_in_gzip_is_refused_with_its_offset(tmp_path, junk):
    data = gzip.compress(b"record")
    with pytest.raises(RecordError) as error:
        gunzip(data + junk, tmp_path / "m.gz")
    assert str(error.value) == f"{tmp_path / 'm.gz'}: junk after the gzip data (byte {len(data)})"
    assert gunzip(data + b"\0\0\0", tmp_path / "m.gz") == b"record"  # zero padding alone is fine


def test_a_record_that_is_not_a_checkpoint_says_so(tmp_path):
    path = DefaultRecorder().record({"weights": [1, 2]}, tmp_path / "not-ckpt")
    for value in ({"weights": [1, 2]}, [1, 2]):
        DefaultRecorder().record(value, path, exact_path=True)
        with pytest.raises(RecordError) as error:
            load_checkpoint(path)
        assert str(error.value) == f"{path}: not a training checkpoint (no 'state_dict')"


def test_a_missing_epoch_file_is_named_from_the_trainer_file(tmp_path):
    trainer = tmp_path / "trainer-1.mpk"
    names = {"model": "model-1.mpk", "optim": "optim-1.mpk", "scheduler": "scheduler-1.mpk"}
    with pytest.raises(RecordError) as error:
        join_parts({FILES_KEY: dict(names)}, trainer)
    assert str(error.value) == f"{trainer}: the epoch's optim file optim-1.mpk is missing beside it"
    for kind in ("optim", "scheduler"):
        DefaultRecorder().record(encode_checkpoint({"optimizer_states" if kind == "optim" else "lr_schedulers": []},
                                                   DefaultRecorder()), tmp_path / names[kind], exact_path=True)
    with pytest.raises(RecordError) as error:
        join_parts({FILES_KEY: dict(names)}, trainer)
    assert str(error.value) == f"{trainer}: the epoch's model file model-1.mpk is missing beside it"


def test_quantized_tensors_are_refused_by_name():
    with pytest.raises(RecordError) as error:
        check_data({"bytes": b"", "shape": [0], "dtype": {"QFloat": "Q8S"}}, "w", "f.mpk")
    assert str(error.value) == "f.mpk: at 'w': quantized (QFloat) tensors are not supported"


@pytest.mark.parametrize("dim", [2**63, 2**64 - 1])
def test_a_shape_beyond_i64_is_refused_as_a_shape(dim):
    with pytest.raises(RecordError, match=r"shape must be a list of at most 64 non-negative ints, got \["):
        check_data({"bytes": b"", "shape": [dim], "dtype": "F32"}, "w", "f.mpk")


# --- what records hold ------------------------------------------------------------------------------------

def test_group_norm_records_its_affine_params_then_its_config():
    norm = nn.GroupNorm(2, 4)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    item = module_to_record(norm)
    assert list(item) == ["gamma", "beta", "num_groups", "num_channels", "epsilon"]
    assert bytes(item["gamma"]["param"]["bytes"]) == norm.weight.detach().numpy().tobytes()


class Scaled(nn.Module):
    """A custom module with a parameter of its own (no standard layer)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([2.0, 3.0]))


def test_a_custom_modules_own_parameter_is_recorded_under_its_name(tmp_path):
    item = module_to_record(Scaled())
    assert list(item) == ["scale"]
    assert bytes(item["scale"]["param"]["bytes"]) == torch.tensor([2.0, 3.0]).numpy().tobytes()
    path = DefaultRecorder().save_module(Scaled(), tmp_path / "s")
    loaded = Scaled()
    with torch.no_grad():
        loaded.scale.zero_()
    DefaultRecorder().load_module(loaded, path)
    assert loaded.scale.tolist() == [2.0, 3.0]


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask", torch.tensor([True, False]))


@pytest.mark.parametrize(("version", "spelling"), [("0.19.0", "Bool"), ("0.20.0", {"Bool": "Native"})])
def test_bool_tensors_take_the_burn_versions_spelling(version, spelling):
    assert module_to_record(Masked(), version=version)["mask"]["param"]["dtype"] == spelling


def test_bincode_writes_a_length_of_2_32_as_an_8_byte_varint():
    with ViewsAhead(()) as views:
        writer = _Writer(io.BytesIO(), views)
        writer.varint(2**32)
    assert writer.parts == [b"\xfd" + (2**32).to_bytes(8, "little")]


# --- paths ------------------------------------------------------------------------------------------------

def test_file_urls_are_local_paths():
    assert not is_url("file:///tmp/m.mpk")
    assert as_path("file:///tmp/m.mpk") == Path("/tmp/m.mpk")


def test_a_remote_path_keeps_its_storage_options():
    remote = RemotePath("memory://bucket/m.mpk", {"skip_instance_cache": True})
    assert as_path(remote).storage_options == {"skip_instance_cache": True}
    assert as_path(remote, {"other": 1}).storage_options == {"other": 1}


def test_resolve_finds_the_file_with_the_recorders_extension(tmp_path):
    path = DefaultRecorder().save_module(nn.Linear(2, 2), tmp_path / "model")
    assert DefaultRecorder().resolve(tmp_path / "model") == path


# --- checkpoint values ------------------------------------------------------------------------------------

def test_a_tensor_key_of_an_ordered_dict_is_stored_with_the_dtype_rule():
    asked: list[str] = []

    def rule(key: str, t: torch.Tensor) -> torch.dtype:
        asked.append(key)
        return t.dtype

    key = torch.tensor(1.0)
    encoded = encode_value(OrderedDict([(key, "a")]), rule, "opt")
    assert encoded["__burnlike__"] == "odict" and asked == [f"opt.{key}"]
    buf = io.BytesIO()
    write_msgpack(encoded, buf)  # the writer streams the lazy tensor bytes, as a checkpoint save does
    decoded = decode_value(read_msgpack(io.BytesIO(buf.getvalue()), len(buf.getvalue()), None))
    (k, v), = decoded.items()
    assert torch.equal(k, key) and v == "a"


class Opaque:
    pass


@pytest.mark.parametrize("container", ["odict", "dict"])
def test_unstorable_keys_are_told_with_their_key_path(container):
    told: list[tuple[str, str]] = []
    inner = OrderedDict([(Opaque(), 1)]) if container == "odict" else {Opaque(): 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the callback is told instead of the default warning
        encode_value({"outer": inner}, same_dtype, "", lambda key, kind: told.append((key, kind)))
    expected_key = "outer." + repr(next(iter(inner))) if container == "odict" else "outer"
    assert told == [(expected_key, f"{Opaque.__module__}.Opaque")]


def test_an_unstorable_value_reads_back_with_its_type_and_text():
    value = Opaque()
    with pytest.warns(UserWarning, match="it is replaced by a marker"):
        encoded = encode_value({"x": value}, same_dtype)
    decoded = decode_value(encoded)["x"]
    assert isinstance(decoded, Unstorable)
    assert decoded.type_name == f"{Opaque.__module__}.Opaque" and decoded.text == repr(value)


def test_a_checkpoint_value_that_cannot_be_stored_warns_how_it_reads_back():
    with pytest.warns(UserWarning, match=r"^checkpoint key 'hparams\.fn' holds a .*, which can't be stored without "
                                         r"pickle; it is saved as a marker and reads back as "
                                         r"burnlike\.record\.Unstorable$"):
        encode_checkpoint({"state_dict": {}, "hparams": {"fn": Opaque()}}, DefaultRecorder())


# --- threads and min/max ----------------------------------------------------------------------------------

def test_big_loads_run_on_named_load_threads(tmp_path, monkeypatch):
    model = nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512))
    path = DefaultRecorder().save_module(model, tmp_path / "m")
    names: list[str] = []
    run = transfer.Copy.run

    def spy(self: transfer.Copy, scratch: object) -> None:
        names.append(threading.current_thread().name)
        run(self, scratch)  # type: ignore[arg-type]

    monkeypatch.setattr(transfer.Copy, "run", spy)
    monkeypatch.setattr(transfer, "THREADS", 2)
    DefaultRecorder().load_module(nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512)), path)
    assert sum(n.startswith("burnlike-load") for n in names) == 2, names  # the two 2 MiB weights


@pytest.mark.parametrize("where", [0, 3 * serial.CHUNK + 5])
def test_bf16_min_max_in_pieces_sees_every_element(where):
    t = torch.zeros(4 * serial.CHUNK, dtype=torch.bfloat16)
    t[where] = -8.0
    t[where + 1] = 8.0
    lo, hi = serial.aminmax(t)
    assert (float(lo), float(hi)) == (-8.0, 8.0)


def test_a_checkpoint_nested_deeper_than_python_can_decode_is_a_record_error(tmp_path):
    """JSON parses in C (one level per container); decoding the values takes Python frames: under a
    tight recursion limit the decode is what overflows, and that must be a RecordError, not a crash."""
    nested: list[object] = []
    for _ in range(300):
        nested = [nested]
    recorder = PrettyJsonFileRecorder()
    path = recorder.record({"state_dict": {}}, tmp_path / "deep")
    doc = json.loads(path.read_text())
    doc["item"]["deep"] = nested
    path.write_text(json.dumps(doc))  # C's encoder: no Python frame per level
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    # Room for the JSON parse, not for decoding. Up to 3.11 the C parser counts against the limit
    # (300) and decoding takes 2 frames a level; from 3.12 the parser doesn't and, with list
    # comprehensions inlined (PEP 709), decoding takes 1 frame a level.
    sys.setrecursionlimit(depth + (400 if sys.version_info < (3, 12) else 200))
    try:
        with pytest.raises(RecordError) as error:
            load_checkpoint(path, recorder)
    finally:
        sys.setrecursionlimit(limit)
    assert str(error.value) == f"{path}: checkpoint nests too deeply"
