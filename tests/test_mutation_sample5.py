"""Record behaviours a new draw of the mutation sample (2026-11-25 evening) found untested: bf16
decoding, copies of read-only bytes, plain maps staying plain, Burn's lowercase param ids."""

from __future__ import annotations

import re
from collections import OrderedDict

import pytest
import torch

from burnlike.record.checkpoint.value import decode_value, encode_value
from burnlike.record.format.module_record import new_param_id
from burnlike.record.tensor.tensor_data import bytes_to_tensor


def test_bf16_bytes_decode_as_bf16_values():
    source = torch.tensor([[1.5, -2.25], [3.0e38, 2.0**-100]], dtype=torch.bfloat16)
    raw = source.view(torch.int16).numpy().tobytes()
    out = bytes_to_tensor(raw, torch.bfloat16, [2, 2])
    assert out.dtype == torch.bfloat16 and torch.equal(out, source)


def test_a_copy_of_read_only_bytes_is_writable_and_owns_its_memory():
    raw = torch.arange(6, dtype=torch.float32).numpy().tobytes()  # bytes: read-only
    out = bytes_to_tensor(raw, torch.float32, [2, 3], copy=True)
    out[0, 0] = 7.0  # would fail (or write into the bytes object) without the copy
    assert out[0, 0].item() == 7.0 and raw[:4] == b"\x00\x00\x00\x00"


def test_plain_maps_decode_as_plain_dicts_and_ordered_ones_stay_ordered():
    # a tuple key: a map stored tagged, as [key, value] pairs
    encoded = encode_value({"plain": {(1, 2): "a"}, "ordered": OrderedDict([(2, "b")])}, lambda key, t: t.dtype)
    decoded = decode_value(encoded)
    assert type(decoded["plain"]) is dict and decoded["plain"] == {(1, 2): "a"}
    assert type(decoded["ordered"]) is OrderedDict and decoded["ordered"] == OrderedDict([(2, "b")])


def test_param_ids_are_burns_lowercase_unpadded_base32hex():
    ids = {new_param_id() for _ in range(20)}
    assert len(ids) == 20 and all(re.fullmatch(r"[0-9a-v]{13}", i) for i in ids), ids


def test_an_unstorable_objects_marker_keeps_the_first_200_characters_of_its_repr():
    class Long:
        def __repr__(self) -> str:
            return "x" * 300

    marker = encode_value({"thing": Long()}, lambda key, t: t.dtype, on_unstorable=lambda key, kind: None)["thing"]
    assert marker["repr"] == "x" * 200


def test_a_record_nested_150_lists_deep_is_written():
    """The writer's depth bound (budget.MAX_DEPTH, 200) counts one level per list."""
    import io

    from burnlike.record.format.messagepack import write_msgpack

    nested: list[object] = [1]
    for _ in range(149):
        nested = [nested]
    out = io.BytesIO()
    write_msgpack({"item": nested}, out)
    assert out.getvalue().startswith(b"\x81")


def test_an_epoch_part_without_its_state_is_named_with_the_state_it_lacks(tmp_path):
    from burnlike.record import DefaultRecorder
    from burnlike.record.checkpoint.epoch_files import FILES_KEY, join_parts
    from burnlike.record.checkpoint.lightning_dict import encode_checkpoint
    from burnlike.record.error import RecordError

    names = {"model": "model-1.mpk", "optim": "optim-1.mpk", "scheduler": "scheduler-1.mpk"}
    DefaultRecorder().record(encode_checkpoint({"something_else": []}, DefaultRecorder()), tmp_path / names["optim"],
                             exact_path=True)
    with pytest.raises(RecordError) as error:
        join_parts({FILES_KEY: dict(names)}, tmp_path / "trainer-1.mpk")
    assert str(error.value) == f"{tmp_path / 'optim-1.mpk'}: expected a map with 'optimizer_states'"


def test_a_malformed_tagged_value_is_named_by_file_and_key():
    from burnlike.record.checkpoint.value import TAG
    from burnlike.record.error import RecordError

    with pytest.raises(RecordError) as error:
        decode_value({"opt": {"state": {TAG: "tuple", "items": 5}}}, "f.mpk")
    assert "f.mpk" in str(error.value) and "opt.state" in str(error.value) and "malformed" in str(error.value)


def test_a_checkpoint_with_a_malformed_value_is_named_by_its_file(tmp_path):
    from burnlike.record import DefaultRecorder
    from burnlike.record.checkpoint.lightning_dict import load_checkpoint
    from burnlike.record.checkpoint.value import TAG
    from burnlike.record.error import RecordError

    path = DefaultRecorder().record({"state_dict": {}, "loops": {TAG: "tuple", "items": 5}}, tmp_path / "ckpt")
    with pytest.raises(RecordError) as error:
        load_checkpoint(path)
    assert str(error.value).startswith(f"{path}:") and "loops" in str(error.value)


def test_a_module_list_recorded_with_the_wrong_length_is_named_with_its_class(tmp_path):
    from torch import nn

    from burnlike.record import DefaultRecorder
    from burnlike.record.error import RecordError

    class Stack(nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(n)])

    path = DefaultRecorder().save_module(Stack(2), tmp_path / "m")
    with pytest.raises(RecordError) as error:
        DefaultRecorder().load_module(Stack(3), path)
    assert "expected a list of 3 module records for ModuleList" in str(error.value)


def test_values_of_a_tagged_map_go_to_the_callers_handler_for_unstorable_objects():
    seen: list[tuple[str, str]] = []
    encode_value({"opt": {(1, 2): object()}}, lambda key, t: t.dtype, on_unstorable=lambda key, kind: seen.append((key, kind)))
    assert seen and seen[0][1] == "builtins.object"


def test_a_module_recorded_as_something_else_than_a_map_is_named_by_its_class(tmp_path):
    """A Linear whose record is a list, not a map: the error names the Linear (walker passes the
    module to `struct`), not the list."""
    import msgpack
    from torch import nn

    from burnlike.record import NamedMpkFileRecorder, RecordError

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

    path = NamedMpkFileRecorder().save_module(Net(), tmp_path / "m")
    record = msgpack.unpackb(path.read_bytes())
    record["item"]["fc"] = [1, 2]
    path.write_bytes(msgpack.packb(record, use_bin_type=True))
    with pytest.raises(RecordError) as error:
        NamedMpkFileRecorder().load_module(Net(), path)
    assert "expected a map for Linear, got list" in str(error.value)


def test_a_decoded_tensor_data_owns_its_memory_by_default():
    """`data_to_tensor` makes read-only record bytes into a tensor of its own unless told not to:
    writing into it leaves the record's bytes as they were."""
    from burnlike.record.tensor.tensor_data import data_to_tensor

    raw = torch.arange(4, dtype=torch.float32).numpy().tobytes()  # bytes: read-only
    out = data_to_tensor({"bytes": raw, "shape": [2, 2], "dtype": "F32"})
    out.fill_(9.0)  # would write into the bytes object without the copy
    assert raw == torch.arange(4, dtype=torch.float32).numpy().tobytes()
    assert torch.equal(out, torch.full((2, 2), 9.0))
