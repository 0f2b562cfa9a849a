"""`burnlike.record.checkpoint.value`: a checkpoint's Python values as record values and back,
without pickle. Tensors, tuples, non-string keys, ordered dicts, dtypes, devices, paths and
non-finite floats round-trip; an object that can't be stored becomes an `Unstorable` marker
(its type and repr), told to the caller's handler with its key path, or warned about; a
malformed tagged value is a `RecordError` naming the file and key, and an unknown dtype name is
refused without importing what it names."""

from __future__ import annotations

import io
import math
import subprocess
import sys
import warnings
from collections import OrderedDict
from functools import partial
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from burnlike.record import (
    DefaultRecorder,
    RecorderCheckpointIO,
    RecordError,
    Unstorable,
    load_checkpoint,
)
from burnlike.record.checkpoint.value import TAG, ClassName, decode_value, encode_value
from burnlike.record.format.messagepack import read_msgpack, write_msgpack
from tests.helpers.hostile import hostile_checkpoint, record
from tests.record.checkpoint.helpers import Opaque


def same_dtype(key: str, t: torch.Tensor) -> torch.dtype:
    """The dtype rule that stores every tensor at its own dtype."""
    return t.dtype


# --- round trips ---


def test_checkpoint_values_round_trip_without_pickle(tmp_path):
    io = RecorderCheckpointIO(DefaultRecorder())
    ckpt = {
        "epoch": 3, "pytorch-lightning_version": "2.6.6",
        "state_dict": OrderedDict(w=torch.randn(3, 2), n=torch.tensor(7, dtype=torch.int64)),
        "optimizer_states": [{"state": {0: {"step": torch.tensor(5.0), "exp_avg": torch.randn(2)}},
                              "param_groups": [{"betas": (0.9, 0.999), "weight_decay": None, "params": [0, 1],
                                                "lr": float("inf")}]}],
        "loops": {"nan": float("nan"), 1.5: "float key", (1, 2): "tuple key"},
        "hparams": {"path": Path("/x"), "dtype": torch.float16, "dev": torch.device("cpu")},
    }
    path = tmp_path / "epoch=0-step=1.ckpt"
    io.save_checkpoint(ckpt, path)
    assert path.exists() and not list(tmp_path.glob(".*tmp"))
    back = io.load_checkpoint(path)
    assert isinstance(back["state_dict"], OrderedDict) and torch.equal(back["state_dict"]["w"], ckpt["state_dict"]["w"])
    assert back["state_dict"]["n"].dtype == torch.int64
    state = back["optimizer_states"][0]
    assert list(state["state"]) == [0] and state["param_groups"][0]["betas"] == (0.9, 0.999)
    assert state["param_groups"][0]["lr"] == math.inf and state["param_groups"][0]["weight_decay"] is None
    assert math.isnan(back["loops"]["nan"]) and back["loops"][(1, 2)] == "tuple key" and back["loops"][1.5]
    assert back["hparams"] == {"path": "/x", "dtype": torch.float16, "dev": torch.device("cpu")}


def test_torch_dtypes_in_a_checkpoint_read_back(tmp_path: Path) -> None:
    path = tmp_path / "c.mpk"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": {}, "dtypes": [torch.float32, torch.bfloat16, torch.int8, torch.bool, torch.complex64]}, path)
    assert load_checkpoint(path)["dtypes"] == [torch.float32, torch.bfloat16, torch.int8, torch.bool, torch.complex64]


def test_plain_maps_decode_as_plain_dicts_and_ordered_ones_stay_ordered():
    # a tuple key: a map stored tagged, as [key, value] pairs
    encoded = encode_value({"plain": {(1, 2): "a"}, "ordered": OrderedDict([(2, "b")])}, same_dtype)
    decoded = decode_value(encoded)
    assert type(decoded["plain"]) is dict and decoded["plain"] == {(1, 2): "a"}
    assert type(decoded["ordered"]) is OrderedDict and decoded["ordered"] == OrderedDict([(2, "b")])


def test_a_class_key_is_stored_by_name_and_reads_back_as_its_name_not_the_class():
    # Lightning keys a legacy callback's state by its class (`Callback._legacy_state_key`)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoded = encode_value({"callbacks": {Opaque: {"state": 1}, "named": 2},
                                "ordered": OrderedDict([(nn.Linear, 3)])}, same_dtype)
    assert encoded["callbacks"][TAG] == "dict"
    assert encoded["callbacks"]["items"][0][0] == {TAG: "class", "module": Opaque.__module__, "qualname": "Opaque"}
    buf = io.BytesIO()
    write_msgpack(encoded, buf)
    decoded = decode_value(read_msgpack(io.BytesIO(buf.getvalue()), len(buf.getvalue()), None))
    name = ClassName(Opaque.__module__, "Opaque")
    assert decoded["callbacks"] == {name: {"state": 1}, "named": 2} and str(name) == f"{Opaque.__module__}.Opaque"
    assert decoded["ordered"] == OrderedDict([(ClassName("torch.nn.modules.linear", "Linear"), 3)])


@pytest.mark.parametrize("bad", [{"module": 1, "qualname": "X"}, {"module": "m"}])
def test_a_malformed_class_name_is_a_record_error(bad):
    with pytest.raises(RecordError, match="malformed 'class' value"):
        decode_value({"callbacks": {TAG: "dict", "items": [[{TAG: "class", **bad}, 1]]}})


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


# --- objects that can't be stored ---


def test_unstorable_hparams_become_markers_with_a_warning(tmp_path):
    io = RecorderCheckpointIO(DefaultRecorder())
    ckpt = {"state_dict": {}, "pytorch-lightning_version": "x",
            "hyper_parameters": {"net": nn.Linear(1, 1), "opt": partial(torch.optim.SGD, lr=0.1), "cls": nn.Linear}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        io.save_checkpoint(ckpt, tmp_path / "c.ckpt")
    text = " ".join(str(w.message) for w in caught)
    assert "hyper_parameters.net" in text and "hyper_parameters.opt" in text and "hyper_parameters.cls" in text
    back = io.load_checkpoint(tmp_path / "c.ckpt")["hyper_parameters"]
    assert all(isinstance(v, Unstorable) for v in back.values())


def test_an_unstorable_value_reads_back_with_its_type_and_text():
    value = Opaque()
    with pytest.warns(UserWarning, match="it is replaced by a marker"):
        encoded = encode_value({"x": value}, same_dtype)
    decoded = decode_value(encoded)["x"]
    assert isinstance(decoded, Unstorable)
    assert decoded.type_name == f"{Opaque.__module__}.Opaque" and decoded.text == repr(value)


def test_an_unstorable_objects_marker_keeps_the_first_200_characters_of_its_repr():
    class Long:
        def __repr__(self) -> str:
            return "x" * 300

    marker = encode_value({"thing": Long()}, same_dtype, on_unstorable=lambda key, kind: None)["thing"]
    assert marker["repr"] == "x" * 200


@pytest.mark.parametrize("container", ["odict", "dict"])
def test_unstorable_keys_are_told_with_their_key_path(container):
    told: list[tuple[str, str]] = []
    inner = OrderedDict([(Opaque(), 1)]) if container == "odict" else {Opaque(): 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the callback is told instead of the default warning
        encode_value({"outer": inner}, same_dtype, "", lambda key, kind: told.append((key, kind)))
    expected_key = "outer." + repr(next(iter(inner))) if container == "odict" else "outer"
    assert told == [(expected_key, f"{Opaque.__module__}.Opaque")]


def test_an_object_inside_an_omegaconf_hparam_goes_to_the_callers_handler():
    cfg = OmegaConf.create({"opt": {"thing": Opaque()}}, flags={"allow_objects": True})
    seen: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the handler is told instead of a warning
        encoded = encode_value(cfg, same_dtype, "hparams", lambda key, kind: seen.append((key, kind)))
    assert seen == [("hparams.opt.thing", f"{Opaque.__module__}.{Opaque.__qualname__}")]
    assert encoded["opt"]["thing"]["__burnlike__"] == "unstorable"


def test_an_object_in_a_list_goes_to_the_handler_under_its_index():
    seen: list[tuple[str, str]] = []
    encoded = encode_value([1, Opaque()], same_dtype, "hp", lambda key, kind: seen.append((key, kind)))
    assert seen == [("hp[1]", f"{Opaque.__module__}.{Opaque.__qualname__}")]
    assert encoded[0] == 1 and encoded[1]["__burnlike__"] == "unstorable"


def test_unstorable_items_of_a_tuple_go_to_the_callers_handler():
    seen: list[tuple[str, str]] = []
    encode_value({"pair": (1, object())}, same_dtype, on_unstorable=lambda key, kind: seen.append((key, kind)))
    assert seen == [("pair[1]", "builtins.object")]


def test_values_of_a_tagged_map_go_to_the_callers_handler_for_unstorable_objects():
    seen: list[tuple[str, str]] = []
    encode_value({"opt": {(1, 2): object()}}, same_dtype, on_unstorable=lambda key, kind: seen.append((key, kind)))
    assert seen and seen[0][1] == "builtins.object"


# --- malformed tagged values ---


def test_an_unknown_tag_names_the_tag_and_the_key():
    with pytest.raises(RecordError) as e:
        decode_value({"__burnlike__": "frobnicate"}, "ck.mpk", "loops.x")
    assert "unknown tagged value 'frobnicate'" in str(e.value) and "loops.x" in str(e.value)


def test_a_malformed_tagged_value_is_named_by_file_and_key():
    with pytest.raises(RecordError) as error:
        decode_value({"opt": {"state": {TAG: "tuple", "items": 5}}}, "f.mpk")
    assert "f.mpk" in str(error.value) and "opt.state" in str(error.value) and "malformed" in str(error.value)


def test_a_tuple_whose_items_are_not_a_list_says_so():
    with pytest.raises(RecordError, match=r"malformed 'tuple' value \('expected a list'\)"):
        decode_value({"__burnlike__": "tuple", "items": 3}, "ck.mpk", "loops.t")


@pytest.mark.parametrize("item", [[1, 2, 3], [1], "ab"])
def test_a_tagged_dict_entry_that_is_not_a_pair_is_refused_by_name(item):
    with pytest.raises(RecordError) as error:
        decode_value({"__burnlike__": "dict", "items": [item]}, "f.ckpt", "hparams")
    assert "malformed 'dict' value ('expected a [key, value] pair')" in str(error.value)


def test_a_bad_value_inside_a_tagged_map_names_the_file(tmp_path):
    path = tmp_path / "last.ckpt"
    bad_tensor = {TAG: "tensor", "data": {"bytes": b"\0", "shape": [4], "dtype": "F32"}}  # 1 byte for 16
    for pair in ([bad_tensor, 1], [1, bad_tensor]):
        with pytest.raises(RecordError) as info:
            decode_value({TAG: "dict", "items": [pair]}, path, "hparams")
        assert info.value.path == str(path)


def test_a_dtype_named_inductor_is_refused_without_importing_torch_inductor(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.mpk"
    path.write_bytes(record(hostile_checkpoint({"__burnlike__": "dtype", "name": "_inductor"})))
    code = ("import sys\nfrom burnlike.record import load_checkpoint, RecordError\n"
            f"try:\n    load_checkpoint({str(path)!r})\nexcept RecordError as e:\n    print('refused', e)\n"
            "assert 'torch._inductor' not in sys.modules and 'torch._dynamo' not in sys.modules, 'imported'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "refused" in out.stdout and "unknown torch dtype '_inductor'" in out.stdout


def test_a_big_int_reads_back_as_the_same_int():
    assert decode_value({TAG: "bigint", "value": str(2**70)}) == 2**70


def test_an_unknown_dtype_names_the_file_and_the_key():
    with pytest.raises(RecordError, match="unknown torch dtype 'float77'") as info:
        decode_value({TAG: "dtype", "name": "float77"}, "ck.mpk", "hparams.dtype")
    assert (info.value.path, info.value.key) == ("ck.mpk", "hparams.dtype")


def test_an_error_in_a_top_level_list_is_keyed_by_the_index_alone():
    with pytest.raises(RecordError) as info:
        decode_value([1, {TAG: "frobnicate"}], "ck.mpk")
    assert info.value.key == "[1]"
    assert str(info.value) == "ck.mpk: at '[1]': unknown tagged value 'frobnicate'"
