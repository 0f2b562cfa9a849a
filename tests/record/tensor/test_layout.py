"""`burnlike.record.tensor.layout`: the transpose between PyTorch's `[d_out, d_in]` Linear weights
and Burn's `[d_in, d_out]` with its cast, and `TensorBytes`, a tensor's record bytes made on demand.

Every transpose-and-cast is bit for bit torch's own (all f16 patterns, rounding ties, NaN, odd
offsets, strided sources and targets), whichever fast path it takes. `TensorBytes` cuts a big
tensor into row parts covering every row once; its dtype is settled from the parts' peaks only
when every part was made, and a tensor made at f16 first is made again when it keeps f32."""

from __future__ import annotations

import pytest
import torch

from burnlike.record import HalfPrecisionSettings
from burnlike.record.tensor.buffers import Scratch
from burnlike.record.tensor.dtypes import INTS
from burnlike.record.tensor.layout import PAIRS_SLOT, TensorBytes, transpose_into, transposed_cast
from burnlike.record.tensor.precision import storage_dtype


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(INTS[t.element_size()])


def decide_half(t: torch.Tensor, peak: float | None) -> torch.dtype:
    return storage_dtype(t, HalfPrecisionSettings(), peak)


# --- transposes and casts ---


@pytest.mark.parametrize("shape", [(3, 5), (300, 700), (513, 1030), (1024, 256)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool])
def test_transpose_into_equals_a_plain_transpose(shape, dtype):
    src = (torch.randn(shape[::-1]) * 100).to(dtype)
    dst = torch.empty(shape, dtype=dtype)
    assert torch.equal(transpose_into(dst, src), src.t())


@pytest.mark.parametrize("shape", [(1, 1), (7, 9), (8, 8), (9, 17), (256, 16), (300, 700), (1030, 513), (1056, 523)])
@pytest.mark.parametrize(("src_dtype", "dst_dtype"), [
    (torch.float16, torch.float32), (torch.float32, torch.float16), (torch.float32, torch.float32),
    (torch.float16, torch.float16), (torch.bfloat16, torch.bfloat16), (torch.int32, torch.int32),
    (torch.int16, torch.int16), (torch.bfloat16, torch.float32), (torch.int16, torch.int64)])
def test_transposed_cast_equals_torch_bit_for_bit(shape, src_dtype, dst_dtype):
    src = (torch.randn(shape, dtype=torch.float64) * 1000).to(src_dtype)
    n = src.numel()
    odd = torch.zeros(n + 1, dtype=src_dtype)[1:].view(shape).copy_(src)  # an odd offset: no 4-byte words
    for dst in (torch.full(shape[::-1], 7, dtype=dst_dtype),
                torch.full((n + 1,), 7, dtype=dst_dtype)[1:].view(shape[::-1])):  # a target not at its buffer's start
        for source in (src, odd):
            dst.fill_(7)
            transposed_cast(dst, source, Scratch(), 0)
            assert torch.equal(bits(dst), bits(src.t().to(dst_dtype)))


def test_transposed_casts_round_like_torch_on_every_kind_of_value():
    """Every f16 bit pattern widened, and f32 patterns around every f16 rounding boundary
    (subnormals, halfway ties, overflow to inf, NaN) narrowed: same bits as torch's own cast."""
    every_half = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16).view(256, 256)
    wide = torch.empty(256, 256)
    transposed_cast(wide, every_half, Scratch(), 0)
    expected = every_half.t().float()
    nan = expected.isnan()
    assert torch.equal(wide.isnan(), nan)
    assert torch.equal(bits(wide)[~nan], bits(expected)[~nan])

    gen = torch.Generator().manual_seed(0)
    # f16 keeps 10 of f32's 23 mantissa bits: +4096 is a tie, ±1 around it and around each f16 value
    offsets = torch.tensor([-1, 0, 1, 4095, 4096, 4097])
    edges = every_half.float().view(torch.int32).reshape(-1, 1).long() + offsets
    noise = torch.randint(-2**31, 2**31, (65536 * 2,), generator=gen, dtype=torch.int64)
    f32 = torch.cat([edges.reshape(-1), noise]).to(torch.int32).view(torch.float32).view(512, 1024)
    narrow = torch.empty(1024, 512, dtype=torch.float16)
    transposed_cast(narrow, f32, Scratch(), 0)
    expected = f32.t().half()
    nan = expected.isnan()
    assert torch.equal(narrow.isnan(), nan)
    assert torch.equal(bits(narrow)[~nan], bits(expected)[~nan])


@pytest.mark.parametrize(("src_dtype", "dst_dtype"), [(torch.float32, torch.float16), (torch.float16, torch.float32),
                                                      (torch.float64, torch.bfloat16), (torch.float16, torch.float64)])
@pytest.mark.parametrize("contiguous_src", [True, False])
def test_transposed_cast_narrows_or_widens_from_strided_sources_and_into_strided_targets(src_dtype, dst_dtype, contiguous_src):
    src = torch.randn(700, 600, dtype=torch.float64).to(src_dtype)
    if not contiguous_src:  # e.g. a parameter someone replaced by a transposed view
        src = src.t().contiguous().t()
    dst = torch.empty(600, 700, dtype=dst_dtype)
    transposed_cast(dst, src, Scratch(), 0)
    assert torch.equal(dst, src.t().to(dst_dtype))
    strided = torch.empty(700, 600, dtype=dst_dtype).t()  # a non-contiguous target takes the plain path
    transposed_cast(strided, src, Scratch(), 0)
    assert torch.equal(strided, src.t().to(dst_dtype))


@pytest.mark.parametrize(("shape", "even"), [((300, 700), True), ((9, 17), False), ((1, 1), False)])
@pytest.mark.parametrize(("src_dtype", "dst_dtype", "widens"), [
    (torch.float16, torch.float32, True), (torch.int16, torch.int64, True), (torch.float32, torch.float16, False),
    (torch.float16, torch.float16, False)])
def test_widening_two_byte_transposes_move_pairs_of_elements_as_words(shape, even, src_dtype, dst_dtype, widens):
    """The fast path of loading Burn's Linear weights: f16 (or any 2-byte) values transposed and
    widened go in 4-byte pairs whenever the row length is even; odd rows, saves and same-dtype
    transposes take torch's plain transpose."""
    src = (torch.randn(shape, dtype=torch.float64) * 1000).to(src_dtype)
    scratch = Scratch()
    dst = torch.empty(shape[::-1], dtype=dst_dtype)
    transposed_cast(dst, src, scratch, 0)
    assert torch.equal(dst, src.t().to(dst_dtype))
    assert (PAIRS_SLOT in scratch._bufs) == (even and widens)


def test_a_2_byte_transpose_from_an_odd_storage_offset_is_exact():
    """Pairs of 2-byte values move as 4-byte words only from an even offset (aligned words)."""
    base = torch.randn(3 + 8 * 6).half()
    for offset in (2, 3):
        src = base[offset:offset + 48].view(8, 6)
        assert src.storage_offset() == offset
        out = transposed_cast(torch.empty(6, 8), src, Scratch(), 0)
        assert torch.equal(out, src.t().float())


# --- TensorBytes: parts and the dtype decision ---


def test_a_tensor_is_one_part_up_to_two_parts_worth_and_parts_of_about_part_bytes_beyond():
    """Up to two parts' worth a tensor is made whole (its f16 check settles on its own bytes); beyond,
    it is cut into row ranges of about `part_bytes` at the likely dtype, covering every row once."""
    part = 64 * 1024
    for rows, expected_parts in [(64, 1), (128, 1), (129, 3), (300, 5)]:  # 1 KiB rows in f16
        tb = TensorBytes(torch.zeros(512, rows), torch.float16, transpose=True)
        ranges = tb.row_parts(part)
        assert len(ranges) == expected_parts, (rows, ranges)
        assert ranges[0][0] == 0 and ranges[-1][1] == rows
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        if expected_parts > 1:
            assert all(stop - start <= part // 1024 for start, stop in ranges)


def test_a_big_tensor_of_two_rows_is_cut_in_two_parts():
    tb = TensorBytes(torch.zeros(2, 100_000), torch.float16)  # 400 KB at f16, over two parts of 64 KiB
    assert tb.row_parts(64 * 1024) == [(0, 1), (1, 2)]
    assert TensorBytes(torch.zeros(1, 100_000), torch.float16).row_parts(64 * 1024) == [(0, 1)]


def test_settle_uses_the_parts_peaks_only_when_every_row_was_made():
    """A tensor whose parts weren't all made tentatively is decided by the exact pass: the peak of
    the parts seen would miss a value beyond f16 in a part not seen."""
    w = torch.randn(64, 32) * 0.1
    w[-1, 3] = 1e5
    tb = TensorBytes(w, torch.float16, decide=decide_half)
    parts = tb.row_parts(512)
    assert len(parts) > 2
    first = bytes(tb.part(Scratch(), parts[0], tentative=True))
    assert first == w[parts[0][0]:parts[0][1]].half().numpy().tobytes()  # made at f16, not decided
    assert tb.likely_nbytes == w.numel() * 2
    assert tb.settle() is False and tb.dtype == torch.float32
    assert tb.settle() is True  # settled once: nothing tentative is left


@pytest.mark.parametrize("value", [1e5, 1e-8])
def test_a_whole_tensor_made_at_f16_first_is_made_again_when_it_keeps_f32(value):
    """Produced whole, a weight's bytes are made at f16 first and handed to the decision; a weight
    that keeps f32 (beyond f16, or all below its normal range) is made again at f32: the bytes
    are the f32 transpose, not the f16 attempt."""
    torch.manual_seed(9)
    weight = torch.full((30, 20), value)
    weight[3, 4] = value * 0.5
    tb = TensorBytes(weight, torch.float16, transpose=True, decide=decide_half)
    raw = bytes(tb)
    assert tb.dtype == torch.float32
    assert raw == weight.t().contiguous().numpy().tobytes()
