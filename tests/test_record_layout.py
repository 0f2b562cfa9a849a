"""The fast paths of records: tiled transposes, casts in either direction, threaded loads."""

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    NamedMpkFileRecorder,
    RecordError,
)
from burnlike.record.tensor import transfer
from burnlike.record.tensor.buffers import Scratch
from burnlike.record.tensor.dtypes import INTS
from burnlike.record.tensor.layout import PAIRS_SLOT, transpose_into, transposed_cast


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(INTS[t.element_size()])


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


@pytest.mark.parametrize("shape", [(3, 5), (300, 700), (513, 1030), (1024, 256)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool])
def test_transpose_into_equals_a_plain_transpose(shape, dtype):
    src = (torch.randn(shape[::-1]) * 100).to(dtype)
    dst = torch.empty(shape, dtype=dtype)
    assert torch.equal(transpose_into(dst, src), src.t())


@pytest.mark.parametrize(("src_dtype", "dst_dtype"), [(torch.float32, torch.float16), (torch.float16, torch.float32),
                                                      (torch.float64, torch.bfloat16), (torch.float16, torch.float64)])
@pytest.mark.parametrize("contiguous_src", [True, False])
def test_transposed_cast_either_direction(src_dtype, dst_dtype, contiguous_src):
    src = torch.randn(700, 600, dtype=torch.float64).to(src_dtype)
    if not contiguous_src:  # e.g. a parameter someone replaced by a transposed view
        src = src.t().contiguous().t()
    dst = torch.empty(600, 700, dtype=dst_dtype)
    transposed_cast(dst, src, Scratch(), 0)
    assert torch.equal(dst, src.t().to(dst_dtype))
    strided = torch.empty(700, 600, dtype=dst_dtype).t()  # a non-contiguous target takes the plain path
    transposed_cast(strided, src, Scratch(), 0)
    assert torch.equal(strided, src.t().to(dst_dtype))


class Wide(nn.Module):
    """Several weights above the threaded-load threshold (1 MiB), of uneven sizes."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.a = nn.Linear(1024, 768)
        self.b = nn.Linear(768, 1000, bias=False)
        self.emb = nn.Embedding(2000, 300)
        self.c = nn.Linear(300, 4)
        self.to(dtype)


@pytest.mark.parametrize("recorder", [CompactRecorder(), DefaultRecorder(), NamedMpkFileRecorder(DoublePrecisionSettings),
                                      BinFileRecorder()], ids=lambda r: type(r).__name__ + r.settings.float_dtype.__repr__())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_threaded_load_equals_the_saved_weights(tmp_path, recorder, dtype, monkeypatch):
    monkeypatch.setattr(transfer, "THREADS", 2)  # even on a one-core runner
    torch.manual_seed(0)
    saved = Wide()
    path = recorder.save_module(saved, tmp_path / "wide")
    stored = recorder.settings.float_dtype
    loaded = Wide(dtype)
    recorder.load_module(loaded, path)
    for (name, want), got in zip(saved.state_dict().items(), loaded.state_dict().values()):
        assert got.dtype == dtype and got.is_contiguous(), name
        assert torch.equal(got, want.to(stored).to(dtype)), name


@pytest.mark.parametrize("recorder", [CompactRecorder(), DefaultRecorder()], ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_big_untransposed_tensor_loads_in_parts_on_both_threads(tmp_path, recorder, dtype, monkeypatch):
    """An embedding bigger than PART_BYTES is read in parts, shared out to the load threads; the parts
    (the last one short) put every value where a whole read would."""
    monkeypatch.setattr(transfer, "THREADS", 2)
    monkeypatch.setattr(transfer, "_PARALLEL_BYTES", 1 << 14)
    monkeypatch.setattr(transfer, "PART_BYTES", 1 << 16)
    torch.manual_seed(0)
    saved = nn.Embedding(2003, 77)  # 154,231 values: 3 or 5 parts, the last short
    path = recorder.save_module(saved, tmp_path / "emb")
    loaded = nn.Embedding(2003, 77).to(dtype)
    groups: list[list[int]] = []
    run_all = transfer._run_all

    def spy(copies):
        groups.append([c.target.numel() for c in copies])
        run_all(copies)

    monkeypatch.setattr(transfer, "_run_all", spy)
    recorder.load_module(loaded, path)
    assert torch.equal(loaded.weight, saved.weight.to(recorder.settings.float_dtype).to(dtype))
    step = (1 << 16) // recorder.settings.float_dtype.itemsize
    parts = [step] * (2003 * 77 // step) + [2003 * 77 % step]
    assert sorted(n for g in groups for n in g) == sorted(parts)
    assert len([g for g in groups if g]) == 2  # both load threads got parts


def test_a_bad_record_leaves_the_module_untouched(tmp_path):
    torch.manual_seed(0)
    path = DefaultRecorder().save_module(Wide(), tmp_path / "wide")
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    record["item"]["c"]["weight"]["param"]["shape"] = [4, 300]  # the last weight is wrong
    path.write_bytes(msgpack.packb(record, use_bin_type=True))
    model = Wide()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RecordError, match=r"c\.weight"):
        DefaultRecorder().load_module(model, path)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_truncated_file_during_a_threaded_load_is_a_record_error(tmp_path, monkeypatch):
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


class Tied(nn.Module):
    """A language-model head sharing the embedding matrix (GPT-2 style)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(1024, 768)
        self.head = nn.Linear(768, 1024, bias=False)
        self.head.weight = self.emb.weight


def test_tied_weights_load_once_from_the_last_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "THREADS", 2)
    torch.manual_seed(0)
    saved = Tied()
    path = DefaultRecorder().save_module(saved, tmp_path / "tied")
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    head = record["item"]["head"]["weight"]["param"]  # stored [d_in, d_out]: the transpose of emb
    head["bytes"] = (torch.frombuffer(bytearray(head["bytes"]), dtype=torch.float32) + 1).numpy().tobytes()
    path.write_bytes(msgpack.packb(record, use_bin_type=True))
    loaded = Tied()
    DefaultRecorder().load_module(loaded, path)
    assert loaded.head.weight is loaded.emb.weight
    assert torch.equal(loaded.emb.weight, saved.emb.weight + 1)  # the head entry came last and won


def test_serial_ops_equal_torchs_on_big_tensors():
    """Big tensors go piece by piece (no intra-op threads): same results as torch's whole-tensor ops,
    a NaN or an out-of-range value anywhere included."""
    from burnlike.record.tensor import serial
    from burnlike.record.tensor.precision import HalfPrecisionSettings, storage_dtype

    n = 5 * serial.CHUNK + 7
    t = torch.randn(n)
    assert [float(v) for v in serial.aminmax(t)] == [float(v) for v in t.aminmax()]
    for where in (0, n // 2, n - 1):  # first, middle and last piece
        wide = t.clone()
        wide[where] = 70000.0
        assert storage_dtype(wide, HalfPrecisionSettings()) == torch.float32
        wide[where] = float("nan")
        assert serial.aminmax(wide)[0].isnan() and serial.aminmax(wide)[1].isnan()
    ints = torch.arange(n, dtype=torch.int64) - 2**40  # beyond what a float64 holds exactly once offset
    ints[-1] = 2**62 + 1
    assert [int(v) for v in serial.aminmax(ints)] == [-(2**40), 2**62 + 1]
    assert storage_dtype(ints, HalfPrecisionSettings()) == torch.int64
    for src_dtype, dst_dtype in [(torch.float32, torch.float16), (torch.float16, torch.float32), (torch.int64, torch.int16)]:
        src = (torch.randn(n) * 1000).to(src_dtype)
        assert torch.equal(serial.copy_(torch.empty(n, dtype=dst_dtype), src), src.to(dst_dtype))



@pytest.mark.parametrize("alone", [False, True])
def test_serial_min_max_alone_or_not(alone):
    """`serial.aminmax` gives torch's whole-tensor result inside `alone()` (one torch pass) and out
    of it (numpy, or pieces), NaN and int64 extremes included."""
    import contextlib

    from burnlike.record.tensor import serial

    n = 5 * serial.CHUNK + 7
    cases = [torch.randn(n), torch.randn(n, dtype=torch.float64), torch.randn(n).half(), torch.randn(n).bfloat16(),
             torch.arange(n, dtype=torch.int64) - 2**40]
    cases[0][n // 3] = float("nan")
    with serial.alone() if alone else contextlib.nullcontext():
        for t in cases:
            lo, hi = serial.aminmax(t)
            want_lo, want_hi = t.aminmax()
            assert torch.equal(lo, want_lo) or lo.isnan() and want_lo.isnan()
            assert torch.equal(hi, want_hi) or hi.isnan() and want_hi.isnan()


F16_EDGES = [65504.0, 65505.0, 65519.0, 65520.0, 1e5, 2.0**-14, 2.0**-14 * (1 - 2.0**-12), 2.0**-14 * (1 + 2.0**-10),
             1e-8, 0.0, float("inf"), float("nan")]


@pytest.mark.parametrize("peak", F16_EDGES + [-v for v in F16_EDGES])
@pytest.mark.parametrize("rest", ["zeros", "small", "mixed"])
def test_the_f16_cast_settles_the_dtype_exactly_as_the_pass_over_the_source(peak, rest):
    """`storage_dtype(t, half, f16_peak(t.half()))` must pick what the exact pass over `t` picks, at
    every edge of f16's range (65504, 65520's rounding to inf, 2**-14 and the values rounding onto
    it, NaN, inf), on either sign and beside other values, whatever the cast's order, and from the
    largest peak of its parts wherever the peak lies."""
    from burnlike.record.tensor.precision import HalfPrecisionSettings, f16_peak, storage_dtype

    torch.manual_seed(7)
    others = {"zeros": torch.zeros(40), "small": torch.full((40,), 2.0**-20),
              "mixed": torch.randn(40) * 0.01}[rest]
    t = torch.cat([others[:17], torch.tensor([peak]), others[17:]])
    half = HalfPrecisionSettings()
    exact = storage_dtype(t, half)
    assert storage_dtype(t, half, f16_peak(t.half())) == exact
    assert storage_dtype(t, half, f16_peak(t.flip(0).half())) == exact
    parts = [f16_peak(p.half()) for p in t.split(7)]
    assert storage_dtype(t, half, max(p for p in parts if p is not None)) == exact


def test_a_settling_f16_cast_spares_the_pass_over_the_source(monkeypatch):
    """An ordinary weight's cast settles f16 on its own: no min/max pass over the f32 tensor. A cast
    that can't (a value at 65504) still gets the exact pass."""
    from burnlike.record.tensor import precision

    passes: list[int] = []
    original = precision.serial.aminmax

    def counting(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        passes.append(t.numel())
        return original(t)

    monkeypatch.setattr(precision.serial, "aminmax", counting)
    half = precision.HalfPrecisionSettings()
    torch.manual_seed(8)
    weight = torch.randn(300, 200) * 0.05
    assert precision.storage_dtype(weight, half, precision.f16_peak(weight.t().contiguous().half())) == torch.float16
    assert passes == []
    weight[5, 5] = 65504.0
    assert precision.storage_dtype(weight, half, precision.f16_peak(weight.half())) == torch.float16
    assert passes == [weight.numel()]
    assert precision.storage_dtype(weight, half) == torch.float16 and len(passes) == 2


@pytest.mark.parametrize("value", [1e5, 1e-8])
def test_a_whole_tensor_made_at_f16_first_is_made_again_when_it_keeps_f32(value):
    """Produced whole, a weight's bytes are made at f16 first and handed to the decision; a weight
    that keeps f32 (beyond f16, or all below its normal range) is made again at f32: the bytes
    are the f32 transpose, not the f16 attempt."""
    from burnlike.record.tensor.layout import TensorBytes
    from burnlike.record.tensor.precision import HalfPrecisionSettings, storage_dtype

    torch.manual_seed(9)
    weight = torch.full((30, 20), value)
    weight[3, 4] = value * 0.5
    tb = TensorBytes(weight, torch.float16, transpose=True,
                     decide=lambda t, peak: storage_dtype(t, HalfPrecisionSettings(), peak))
    raw = bytes(tb)
    assert tb.dtype == torch.float32
    assert raw == weight.t().contiguous().numpy().tobytes()


def test_a_tensor_is_one_part_up_to_two_parts_worth_and_parts_of_about_part_bytes_beyond():
    """Up to two parts' worth a tensor is made whole (its f16 check settles on its own bytes); beyond,
    it is cut into row ranges of about `part_bytes` at the likely dtype, covering every row once."""
    from burnlike.record.tensor.layout import TensorBytes

    part = 64 * 1024
    for rows, expected_parts in [(64, 1), (128, 1), (129, 3), (300, 5)]:  # 1 KiB rows in f16
        tb = TensorBytes(torch.zeros(512, rows), torch.float16, transpose=True)
        ranges = tb.row_parts(part)
        assert len(ranges) == expected_parts, (rows, ranges)
        assert ranges[0][0] == 0 and ranges[-1][1] == rows
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        if expected_parts > 1:
            assert all(stop - start <= part // 1024 for start, stop in ranges)


class OpCounts(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the aten copies and min/max ops made on this thread (dispatch modes are per thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies = 0
        self.aminmax = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.copy_.default:
            self.copies += 1
        elif func is torch.ops.aten.aminmax.default:
            self.aminmax += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn) -> OpCounts:
    """The ops `fn()` makes on this thread."""
    with OpCounts() as ops:
        fn()
    return ops


def _copies(fn) -> int:
    return count_ops(fn).copies


needs_omp = pytest.mark.skipif(__import__("burnlike.record.tensor.serial", fromlist=["_"])._OMP_SET is None,
                               reason="torch's OpenMP is not reachable here: copies stay in pieces")


@needs_omp
def test_alone_keeps_torch_ops_on_this_thread_and_restores_its_team_after():
    """Inside `alone()` torch sees one thread on this thread only; the team size comes back after,
    also after an error, and other threads never see the change."""
    import threading

    from burnlike.record.tensor import serial

    before = torch.get_num_threads()
    seen: list[int] = []
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(10)
        seen.append(torch.get_num_threads())
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with serial.alone():
        assert torch.get_num_threads() == 1
        with serial.alone():  # nested: still one, and the outer one restores
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
        inside.set()
        assert done.wait(10)
    thread.join()
    assert seen == [before] and torch.get_num_threads() == before
    with pytest.raises(ValueError), serial.alone():
        raise ValueError
    assert torch.get_num_threads() == before


@needs_omp
def test_copy_is_one_call_alone_and_in_pieces_otherwise(monkeypatch):
    """A big cast is one torch call inside `alone()` (one op's set-up instead of one per 32K piece),
    else in pieces; where torch's OpenMP isn't reachable, in pieces even inside `alone()`. The bytes
    are torch's own cast's either way."""
    from burnlike.record.tensor import serial

    n = 5 * serial.CHUNK + 7
    src = torch.randn(n) * 1000
    dst = torch.empty(n, dtype=torch.float16)

    def cast() -> None:
        serial.copy_(dst, src)

    def cast_alone() -> None:
        with serial.alone():
            serial.copy_(dst, src)

    assert _copies(cast_alone) == 1 and torch.equal(dst, src.half())
    dst.zero_()
    assert _copies(cast) == 6 and torch.equal(dst, src.half())
    monkeypatch.setattr(serial, "_OMP_SET", None)
    dst.zero_()
    assert _copies(cast_alone) == 6 and torch.equal(dst, src.half())


@needs_omp
def test_a_saves_part_is_made_with_whole_casts():
    """A save's job (cast, check, transpose of a 1024x1024 Linear weight) makes two copies, not one
    per 32K piece of the cast."""
    from burnlike.record.tensor import ahead
    from burnlike.record.tensor.layout import TensorBytes
    from burnlike.record.tensor.precision import HalfPrecisionSettings, storage_dtype

    w = torch.randn(1024, 1024)
    tb = TensorBytes(w, torch.float16, transpose=True,
                     decide=lambda t, peak: storage_dtype(t, HalfPrecisionSettings(), peak))
    made: list[bytes] = []
    n = _copies(lambda: made.append(bytes(ahead._produce((tb, (0, tb.rows)), Scratch(), ahead.Temps()))))
    assert n == 2
    assert made[0] == w.t().contiguous().half().numpy().tobytes()
