"""Record behaviours a mutation draw over the save path's newest code (2026-11-26) found untested:
how `serial.copy_` and `serial.aminmax` split their work outside `alone()` (on a thread that never
entered it too), and `storage_dtype` at its exact boundaries."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from test_record_layout import OpCounts, count_ops

from burnlike.record.tensor import serial
from burnlike.record.tensor.precision import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    storage_dtype,
)


def _on_a_new_thread(fn: Callable[[], object]) -> OpCounts:
    """`fn` counted on a thread that has never entered `alone()` (its thread-local state unset)."""
    out: list[OpCounts] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(count_ops(fn))
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    if errors:
        raise errors[0]
    return out[0]


N = 5 * serial.CHUNK + 7  # six 32K pieces


def test_a_thread_that_never_went_alone_casts_in_pieces_and_takes_min_max_from_numpy():
    src = torch.randn(N) * 1000
    dst = torch.empty(N, dtype=torch.float16)
    assert _on_a_new_thread(lambda: serial.copy_(dst, src)).copies == 6
    assert torch.equal(dst, src.half())
    got: list[tuple[torch.Tensor, torch.Tensor]] = []
    assert _on_a_new_thread(lambda: got.append(serial.aminmax(src))).aminmax == 0  # numpy's min and max
    assert [float(v) for v in got[0]] == [float(v) for v in src.aminmax()]


@pytest.mark.skipif(serial._OMP_SET is None, reason="torch's OpenMP is not reachable here")
def test_min_max_is_one_torch_pass_alone_numpy_outside_and_pieces_without_numpy():
    t = torch.randn(N)
    with serial.alone():
        assert count_ops(lambda: serial.aminmax(t)).aminmax == 1
    assert count_ops(lambda: serial.aminmax(t)).aminmax == 0
    bf16 = t.bfloat16()  # numpy has no bf16: one torch call per 32K piece
    got: list[tuple[torch.Tensor, torch.Tensor]] = []
    assert count_ops(lambda: got.append(serial.aminmax(bf16))).aminmax == math.ceil(N / serial.CHUNK)
    assert [float(v) for v in got[0]] == [float(v) for v in bf16.aminmax()]


@pytest.mark.parametrize(("shape", "calls"), [
    ((256, 300), 3),  # rows of 300 values: 109 rows (32,700 values) per call
    ((3, 40000), 3),  # a row longer than a piece: one row per call
    ((1, 40000), 1),
])
def test_a_strided_copy_goes_in_blocks_of_whole_rows(shape, calls):
    """Outside `alone()`, a transposed weight (a save's column slice, a load's transposed target) is
    copied in blocks of whole rows of about 32K values, on the calling thread, into a strided
    destination as well as from a strided source."""
    rows, cols = shape
    src = torch.randn(rows, 2 * cols)[:, ::2]  # rows x cols, every other column: not contiguous
    dst = torch.empty(rows, cols, dtype=torch.float16)
    assert count_ops(lambda: serial.copy_(dst, src)).copies == calls
    assert torch.equal(dst, src.half())
    into = torch.empty(rows, 2 * cols, dtype=torch.float16)[:, ::2]  # a strided destination
    plain = torch.randn(rows, cols)
    assert count_ops(lambda: serial.copy_(into, plain)).copies == calls
    assert torch.equal(into, plain.half())


def test_a_strided_column_of_single_values_goes_in_blocks_of_32k_rows():
    src = torch.randn(2 * 40000)[::2].unsqueeze(1)  # 40000 x 1, every other value: strided
    dst = torch.empty(40000, 1)
    assert count_ops(lambda: serial.copy_(dst, src)).copies == 2
    assert torch.equal(dst, src)


def test_storage_dtype_at_its_exact_boundaries():
    half, full = HalfPrecisionSettings(), FullPrecisionSettings()
    # f16's smallest normal value is still f16 (its cast can't settle it: the exact pass does)
    assert storage_dtype(torch.tensor([2.0**-14, -(2.0**-14)]), half) == torch.float16
    assert storage_dtype(torch.tensor([2.0**-14 * 0.75]), half) == torch.float32
    # empty tensors need no pass, at any precision
    assert storage_dtype(torch.empty(0), half) == torch.float16
    assert storage_dtype(torch.empty(0, dtype=torch.int64), half) == torch.int16
    # the f16 range check is for f16 only: f64 recorded at full precision is f32 whatever its values
    assert storage_dtype(torch.tensor([1e5, 3e-20], dtype=torch.float64), full) == torch.float32
    # ints: widened to the narrowest int that holds them, i32's own extremes included
    assert storage_dtype(torch.tensor([-(2**31), 2**31 - 1]), half) == torch.int32
    assert storage_dtype(torch.tensor([-(2**31) - 1, 5]), half) == torch.int64
    assert storage_dtype(torch.tensor([5, 2**31]), half) == torch.int64
    # a wider int target than the tensor's: no range to check
    assert storage_dtype(torch.tensor([1, 2], dtype=torch.int32), DoublePrecisionSettings()) == torch.int64


def test_the_exit_handler_ends_a_group_without_a_barrier_and_does_nothing_without_one(one_rank_group, monkeypatch):
    """At exit other ranks may be gone: the group ends without waiting at a barrier. With no group
    up (the app's job ended it already, or none was started) it does nothing."""
    from burnlike.train.process_group import end_process_group

    dist = one_rank_group
    barriers: list[int] = []
    original = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: barriers.append(1) or original(*a, **k))
    end_process_group()  # as atexit calls it
    assert not dist.is_initialized() and barriers == []
    end_process_group()  # nothing up: no error
    end_process_group(barrier=True)
    assert barriers == []


# --- a seeded draw of 300 record mutants (2026-11-26): what it found untested ------------------------

def test_a_bincode_varint_of_eight_bytes_reads_as_one_u64(tmp_path):
    from burnlike.record.format.bincode import _Reader

    value = 2**40 + 5
    reader = _Reader(b"\xfd" + value.to_bytes(8, "little") + b"\xfb" + (300).to_bytes(2, "little"), tmp_path / "m.bin")
    assert reader.varint() == value and reader.varint() == 300


def test_gzip_errors_name_the_file(tmp_path):
    import gzip

    from burnlike.record.error import RecordError
    from burnlike.record.format.files import gunzip

    path = tmp_path / "model.mpk.gz"
    packed = gzip.compress(b"\0" * 100_000)
    with pytest.raises(RecordError, match="truncated gzip") as cut:
        gunzip(packed[: len(packed) // 2], path)
    with pytest.raises(RecordError, match="inflates past") as bomb:
        gunzip(packed, path, limit=1000)
    assert cut.value.path == bomb.value.path == str(path)


def test_a_msgpack_file_that_is_not_a_burn_record_is_named(tmp_path):
    import msgpack

    from burnlike.record import DefaultRecorder
    from burnlike.record.error import RecordError

    path = tmp_path / "list.mpk"
    path.write_bytes(msgpack.packb([1, 2, 3]))
    with pytest.raises(RecordError, match="not a Burn record") as info:
        DefaultRecorder().load(path)
    assert info.value.path == str(path)


def test_tensor_data_checks_burn_0_21_bool_and_a_shape_that_is_not_a_list():
    from burnlike.record.error import RecordError
    from burnlike.record.tensor.tensor_data import check_data, data_to_tensor

    raw, dtype, shape = check_data({"bytes": b"\x01\x00\x01", "shape": [3], "dtype": {"Bool": "Native"}})
    assert dtype == torch.bool and shape == [3]
    for bad in (3, "3", {"0": 3}):
        with pytest.raises(RecordError, match="shape"):
            data_to_tensor({"bytes": b"\0" * 12, "shape": bad, "dtype": "F32"})


def test_decoded_tensor_data_owns_its_memory_by_default():
    from burnlike.record.tensor.tensor_data import data_to_tensor

    raw = torch.arange(6, dtype=torch.float32).numpy().tobytes()  # bytes: read-only
    out = data_to_tensor({"bytes": raw, "shape": [2, 3], "dtype": "F32"})
    out[0, 0] = 7.0  # a view of the bytes would be read-only (or would write into them)
    assert out[0, 0].item() == 7.0 and raw[:4] == b"\0\0\0\0"


def test_the_temp_file_is_made_in_the_destination_folder(tmp_path, monkeypatch):
    """Beside the target, so the rename stays on one filesystem (atomic; never EXDEV)."""
    from burnlike.record.format import files

    renamed: list[tuple[str, str]] = []
    real = files.os.replace
    monkeypatch.setattr(files.os, "replace", lambda a, b: renamed.append((a, b)) or real(a, b))
    target = tmp_path / "deep" / "model.bin"
    files.atomic_write(target, b"abc")
    assert [Path(a).parent for a, _ in renamed] == [target.parent] and target.read_bytes() == b"abc"


def test_a_file_slice_reads_on_after_short_reads(tmp_path, monkeypatch):
    """Linux moves at most ~2 GiB per read: each next read starts where the last one ended."""
    from burnlike.record.tensor.file_slice import FileSlice

    data = torch.arange(1000, dtype=torch.int32)
    path = tmp_path / "raw"
    path.write_bytes(b"head" + data.numpy().tobytes())
    real = os.preadv
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, offset: real(fd, [bufs[0][:700]], offset))
    with open(path, "rb") as f:
        out = FileSlice(f, 4, 4000).readinto(torch.empty(1000, dtype=torch.int32))
    assert torch.equal(out, data)


def test_a_big_tensor_of_two_rows_is_still_cut_in_two_parts():
    from burnlike.record.tensor.layout import TensorBytes

    tb = TensorBytes(torch.zeros(2, 100_000), torch.float16)  # 400 KB at f16, over two parts of 64 KiB
    assert tb.row_parts(64 * 1024) == [(0, 1), (1, 2)]
    assert TensorBytes(torch.zeros(1, 100_000), torch.float16).row_parts(64 * 1024) == [(0, 1)]


def test_burn_0_19_records_a_bool_tensor_as_the_plain_name():
    from burnlike.record.tensor.tensor_data import tensor_to_data

    flags = torch.tensor([True, False])
    for lazy in (False, True):  # bytes now, or streamed by the writer
        assert tensor_to_data(flags, burn_version="0.19.0", lazy=lazy)["dtype"] == "Bool"
        assert tensor_to_data(flags, burn_version="0.21.0", lazy=lazy)["dtype"] == {"Bool": "Native"}


def test_a_2_byte_transpose_from_an_odd_storage_offset_is_exact():
    """Pairs of 2-byte values move as 4-byte words only from an even offset (aligned words)."""
    from burnlike.record.tensor.buffers import Scratch
    from burnlike.record.tensor.layout import transposed_cast

    base = torch.randn(3 + 8 * 6).half()
    for offset in (2, 3):
        src = base[offset:offset + 48].view(8, 6)
        assert src.storage_offset() == offset
        out = transposed_cast(torch.empty(6, 8), src, Scratch(), 0)
        assert torch.equal(out, src.t().float())


def test_a_big_tensor_loads_into_a_strided_parameter(tmp_path, monkeypatch):
    """A parameter that is a transposed view (not contiguous) is filled whole, not through flat parts."""
    from torch import nn

    from burnlike.record import DefaultRecorder
    from burnlike.record.tensor import transfer

    monkeypatch.setattr(transfer, "PART_BYTES", 256 * 1024)
    torch.manual_seed(3)
    source = nn.Embedding(1024, 512)
    path = DefaultRecorder().save_module(source, tmp_path / "emb")  # 2 MiB of f32: read in place
    target = nn.Embedding(1024, 512)
    target.weight = nn.Parameter(torch.zeros(512, 1024).t())
    assert not target.weight.is_contiguous()
    DefaultRecorder().load_module(target, path)
    assert torch.equal(target.weight, source.weight)


def test_a_bad_value_inside_a_tagged_map_names_the_file(tmp_path):
    from burnlike.record.checkpoint.value import TAG, decode_value
    from burnlike.record.error import RecordError

    path = tmp_path / "last.ckpt"
    bad_tensor = {TAG: "tensor", "data": {"bytes": b"\0", "shape": [4], "dtype": "F32"}}  # 1 byte for 16
    for pair in ([bad_tensor, 1], [1, bad_tensor]):
        with pytest.raises(RecordError) as info:
            decode_value({TAG: "dict", "items": [pair]}, path, "hparams")
        assert info.value.path == str(path)


@pytest.mark.parametrize("conv", ["ConvTranspose1d", "ConvTranspose2d"])
def test_a_transposed_conv_records_its_padding_out(tmp_path, conv):
    import msgpack
    from torch import nn

    from burnlike.record import NamedMpkFileRecorder

    torch.manual_seed(4)
    model = getattr(nn, conv)(3, 5, 3)
    path = NamedMpkFileRecorder().save_module(model, tmp_path / "conv")
    item = msgpack.unpackb(path.read_bytes())["item"]
    assert "padding_out" in item and item["padding_out"] is None
    loaded = getattr(nn, conv)(3, 5, 3)
    NamedMpkFileRecorder().load_module(loaded, path)
    assert torch.equal(loaded.weight, model.weight)


def test_burn_0_19_records_an_optional_stateless_child_as_some(tmp_path):
    """`__burn_optional__` names children Burn declares `Option<…>` (the book's `pool:
    Option<MaxPool2d>`): Burn 0.19's bincode records them as Some(()), a tag byte a plain stateless
    child doesn't have (MessagePack writes both as nil)."""
    from torch import nn

    from burnlike.record import BinFileRecorder

    class Plain(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear, self.pool = nn.Linear(2, 2), nn.MaxPool2d(2)

    class Optional_(Plain):
        __burn_optional__ = ("pool",)

    def size(model: nn.Module, version: str) -> int:
        torch.manual_seed(5)
        model.linear.reset_parameters()
        path = BinFileRecorder(burn_version=version).save_module(model, tmp_path / f"{version}-{type(model).__name__}")
        return path.stat().st_size

    assert size(Optional_(), "0.19.0") == size(Plain(), "0.19.0") + 1
    assert size(Optional_(), "0.21.0") == size(Plain(), "0.21.0")
