"""`burnlike.record.tensor.tensor_data`: tensors to and from Burn's `TensorData{bytes, shape,
dtype}`. Decoding checks every field (dtype name, shape, byte count, the kind of the bytes) before
it builds a tensor, naming the key and file of what is wrong, and gives a tensor that owns its
memory (writing into it leaves the record's bytes alone). Bool dtypes take the spelling of the
Burn version written for."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from burnlike.record import DefaultRecorder, RecordError
from burnlike.record.format.module_record import module_to_record
from burnlike.record.tensor.tensor_data import (
    bytes_to_tensor,
    check_data,
    data_to_tensor,
    dtype_field,
    tensor_to_data,
)
from tests.record.helpers import Tiny, randomised_params, repack, unpack


class BoolMask(nn.Module):
    """One bool buffer, `mask`."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask", torch.tensor([True, False]))


# --- encoding ---


@pytest.mark.parametrize(("version", "spelling"), [("0.19.0", "Bool"), ("0.20.0", {"Bool": "Native"}),
                                                   ("0.21.0", {"Bool": "Native"})])
def test_bool_tensors_take_the_burn_versions_spelling(version, spelling):
    """Burn 0.19 names the bool dtype `Bool`; from 0.20 it is `{"Bool": "Native"}` (a BoolStore
    variant). The dtype field, TensorData made at once or streamed by the writer, and a module's
    record all agree."""
    assert dtype_field(torch.bool, version) == spelling
    flags = torch.tensor([True, False])
    for lazy in (False, True):  # bytes at once, or streamed by the writer
        assert tensor_to_data(flags, burn_version=version, lazy=lazy)["dtype"] == spelling
    assert module_to_record(BoolMask(), version=version)["mask"]["param"]["dtype"] == spelling


# --- decoding ---


def test_bf16_bytes_decode_as_bf16_values():
    source = torch.tensor([[1.5, -2.25], [3.0e38, 2.0**-100]], dtype=torch.bfloat16)
    raw = source.view(torch.int16).numpy().tobytes()
    out = bytes_to_tensor(raw, torch.bfloat16, [2, 2])
    assert out.dtype == torch.bfloat16 and torch.equal(out, source)


def test_check_data_reads_burn_0_21_bool_and_refuses_a_shape_that_is_not_a_list():
    raw, dtype, shape = check_data({"bytes": b"\x01\x00\x01", "shape": [3], "dtype": {"Bool": "Native"}})
    assert dtype == torch.bool and shape == [3]
    for bad in (3, "3", {"0": 3}):
        with pytest.raises(RecordError, match="shape"):
            data_to_tensor({"bytes": b"\0" * 12, "shape": bad, "dtype": "F32"})


def test_read_only_bytes_are_copied_by_default_into_a_writable_tensor_of_its_own():
    raw = torch.arange(6, dtype=torch.float32).numpy().tobytes()  # bytes: read-only
    out = bytes_to_tensor(raw, torch.float32, [2, 3])  # copy=True is the default
    out[0, 0] = 7.0  # would fail (or write into the bytes object) without the copy
    assert out[0, 0].item() == 7.0 and raw[:4] == b"\x00\x00\x00\x00"


def test_a_decoded_tensor_data_owns_its_memory_by_default():
    """`data_to_tensor` makes read-only record bytes into a tensor of its own unless told not to:
    writing into it leaves the record's bytes as they were."""
    raw = torch.arange(4, dtype=torch.float32).numpy().tobytes()  # bytes: read-only
    out = data_to_tensor({"bytes": raw, "shape": [2, 2], "dtype": "F32"})
    out.fill_(9.0)  # would write into the bytes object without the copy
    assert raw == torch.arange(4, dtype=torch.float32).numpy().tobytes()
    assert torch.equal(out, torch.full((2, 2), 9.0))


# --- malformed TensorData ---


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"bytes": b"\0" * 3, "shape": [2], "dtype": "F32"}, "don't hold"),
        ({"bytes": b"\0" * 4, "shape": [1], "dtype": "F17"}, "unknown dtype"),
        ({"bytes": b"\0" * 4, "shape": [-1], "dtype": "F32"}, "non-negative"),
        ({"bytes": "text", "shape": [1], "dtype": "F32"}, "binary"),
        ({"bytes": b"", "shape": [2**40, 2**40], "dtype": "F64"}, "don't hold"),
    ],
)
def test_bad_tensor_data_is_a_record_error(data, needle):
    with pytest.raises(RecordError, match=needle):
        data_to_tensor(data, "x.weight", "f.mpk")


def test_tensor_bytes_of_the_wrong_kind_are_named_by_their_type():
    with pytest.raises(RecordError) as error:
        check_data({"bytes": "AAAA", "shape": [1], "dtype": "F32"}, "layer.weight")
    assert "bytes must be binary, got str" in str(error.value)


@pytest.mark.parametrize("raw", [[0, 0, 300, 0], [0, 0, 0], [0, 0, -1, 0]], ids=["over-255", "short", "negative"])
def test_json_bytes_must_be_exactly_the_tensors_u8s(raw):
    with pytest.raises(RecordError, match=r"bytes must be a list of 4 u8 for shape \[1\] of F32"):
        check_data({"bytes": raw, "shape": [1], "dtype": "F32"}, "w", "m.json")


@pytest.mark.parametrize("dim", [2**63, 2**64 - 1])
def test_a_shape_beyond_i64_is_refused_as_a_shape(dim):
    with pytest.raises(RecordError, match=r"shape must be a list of at most 64 non-negative ints, got \["):
        check_data({"bytes": b"", "shape": [dim], "dtype": "F32"}, "w", "f.mpk")


def test_quantized_tensors_are_refused_by_name():
    with pytest.raises(RecordError) as error:
        check_data({"bytes": b"", "shape": [0], "dtype": {"QFloat": "Q8S"}}, "w", "f.mpk")
    assert str(error.value) == "f.mpk: at 'w': quantized (QFloat) tensors are not supported"


@pytest.mark.parametrize("width", [3, 128], ids=["small", "streamed"])  # 128x128 f32 = 64 KiB: read lazily
@pytest.mark.parametrize("extra", [4, -4, 1])
def test_tensor_bytes_that_do_not_match_the_shape_are_refused(tmp_path, width, extra):
    path = randomised_params(Tiny(width)).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    data = record["item"]["linear"]["weight"]["param"]
    data["bytes"] = data["bytes"] + b"\0" * extra if extra > 0 else data["bytes"][:extra]
    repack(path, record)
    got, expected = width * width * 4 + extra, width * width * 4
    with pytest.raises(RecordError, match=rf"at 'linear\.weight'.*{got} bytes don't hold shape \[{width}, {width}\] "
                                          rf"of F32 \({expected} bytes\)"):
        Tiny(width).load_file(path, DefaultRecorder())


def test_check_data_without_a_key_names_no_place_in_its_error():
    with pytest.raises(RecordError) as caught:
        check_data({"bytes": b""})
    assert str(caught.value) == "expected TensorData {bytes, shape, dtype}"
