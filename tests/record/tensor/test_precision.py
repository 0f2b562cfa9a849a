"""`burnlike.record.tensor.precision`: Burn's precision settings and the f16/i16 policy of
`storage_dtype`. Under half precision a tensor keeps a wider type where f16 or i16 would corrupt
it (values beyond f16's range, a tensor all below its normal range, ints beyond i16), exactly at
the boundaries; the f16 cast a save makes anyway settles the dtype as the exact pass over the
source would, and spares that pass when it can. Records of every half-precision format read such
tensors back exactly."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from burnlike.module import Module
from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    PrettyJsonFileRecorder,
)
from burnlike.record.tensor.precision import f16_peak, storage_dtype
from tests.record.helpers import unpack
from tests.record.tensor.helpers import count_exact_passes


class Counts(Module):
    """One int64 buffer, `counts`."""

    def __init__(self, values: list[int]) -> None:
        super().__init__()
        self.register_buffer("counts", torch.tensor(values, dtype=torch.int64))


F16_EDGES = [65504.0, 65505.0, 65519.0, 65520.0, 1e5, 2.0**-14, 2.0**-14 * (1 - 2.0**-12), 2.0**-14 * (1 + 2.0**-10),
             1e-8, 0.0, float("inf"), float("nan")]


# --- settings ---


def test_precision_settings_are_equal_by_kind_and_hash_alike():
    assert FullPrecisionSettings() != HalfPrecisionSettings() and HalfPrecisionSettings() == HalfPrecisionSettings()
    assert hash(HalfPrecisionSettings()) == hash(HalfPrecisionSettings())
    settings = {FullPrecisionSettings(), HalfPrecisionSettings(), DoublePrecisionSettings(), HalfPrecisionSettings()}
    assert len(settings) == 3 and len({hash(s) for s in settings}) == 3


# --- the f16/i16 policy ---


def test_half_precision_keeps_a_wider_type_for_values_beyond_f16_or_i16():
    settings = HalfPrecisionSettings()
    assert storage_dtype(torch.tensor([1.0, 70000.0]), settings) == torch.float32
    assert storage_dtype(torch.tensor([1.0, float("inf")]), settings) == torch.float16  # inf stays inf
    assert storage_dtype(torch.tensor([1, 40000]), settings) == torch.int32
    assert storage_dtype(torch.tensor([1, 2**40]), settings) == torch.int64
    assert storage_dtype(torch.tensor([1, 2]), settings) == torch.int16


def test_a_tensor_with_no_finite_value_takes_the_half_precision_dtype():
    t = torch.tensor([float("inf"), float("-inf"), float("nan")])
    assert storage_dtype(t, HalfPrecisionSettings()) == torch.float16  # f16 holds inf and nan


def test_storage_dtype_decides_exactly_at_the_f16_and_int_range_boundaries():
    half, full = HalfPrecisionSettings(), FullPrecisionSettings()
    # f16's smallest normal value is f16 (its cast can't settle it: the exact pass does)
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


def test_f16_policy_keeps_tensors_that_would_vanish_or_overflow(tmp_path):
    half = HalfPrecisionSettings()
    assert storage_dtype(torch.tensor([1e-8, -3e-8]), half) == torch.float32  # all would flush to 0
    assert storage_dtype(torch.tensor([1e-8, 1.0]), half) == torch.float16  # rounding at the tensor's scale
    assert storage_dtype(torch.zeros(3), half) == torch.float16
    assert storage_dtype(torch.tensor([1.0, float("nan")]), half) == torch.float16
    assert storage_dtype(torch.tensor([-70000.0, float("-inf")]), half) == torch.float32
    assert storage_dtype(torch.tensor([1.0, 70000.0], dtype=torch.float64), half) == torch.float64
    m, back = nn.Linear(2, 1), nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[1e-8, 3e-8]]))
    path = CompactRecorder().save_module(m, tmp_path / "tiny")
    CompactRecorder().load_module(back, path)
    assert torch.equal(back.weight, m.weight)


def test_big_values_keep_their_value_in_a_compact_file(tmp_path):
    m = nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[1e6, 2049.0]]))
    m2 = nn.Linear(2, 1)
    recorder = CompactRecorder()
    path = recorder.save_module(m, tmp_path / "m")
    recorder.load_module(m2, path)
    assert m2.weight.tolist() == [[1e6, 2049.0]]  # kept at f32: no inf, no rounding


@pytest.mark.parametrize(("values", "stored"), [([-40000, 7], "I32"), ([-32769], "I32"), ([32768], "I32"),
                                                ([-32768, 32767], "I16"), ([-(2**31) - 1, 1], "I64")])
def test_ints_beyond_i16_widen_under_half_precision(tmp_path, values, stored):
    path = Counts(values).save_file(tmp_path / "c", CompactRecorder())
    assert unpack(path)["item"]["counts"]["param"]["dtype"] == stored
    back = Counts([0] * len(values)).load_file(path, CompactRecorder())
    assert back.counts.tolist() == values


@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder(HalfPrecisionSettings), BinFileRecorder(HalfPrecisionSettings),
                                      PrettyJsonFileRecorder(HalfPrecisionSettings)], ids=lambda r: r.extension)
def test_ints_beyond_i16_read_back_exactly_in_every_half_format(tmp_path, recorder):
    path = Counts([-40000, 5, -5]).save_file(tmp_path / "c", recorder)
    assert Counts([0, 0, 0]).load_file(path, recorder).counts.tolist() == [-40000, 5, -5]


# --- settling the dtype from the f16 cast ---


@pytest.mark.parametrize("peak", F16_EDGES + [-v for v in F16_EDGES])
@pytest.mark.parametrize("rest", ["zeros", "small", "mixed"])
def test_the_f16_cast_settles_the_dtype_exactly_as_the_pass_over_the_source(peak, rest):
    """`storage_dtype(t, half, f16_peak(t.half()))` must pick what the exact pass over `t` picks, at
    every edge of f16's range (65504, 65520's rounding to inf, 2**-14 and the values rounding onto
    it, NaN, inf), on either sign and beside other values, whatever the cast's order, and from the
    largest peak of its parts wherever the peak lies."""
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
    that can't (a value at 65504) gets the exact pass."""
    passes = count_exact_passes(monkeypatch)
    half = HalfPrecisionSettings()
    torch.manual_seed(8)
    weight = torch.randn(300, 200) * 0.05
    assert storage_dtype(weight, half, f16_peak(weight.t().contiguous().half())) == torch.float16
    assert passes == []
    weight[5, 5] = 65504.0
    assert storage_dtype(weight, half, f16_peak(weight.half())) == torch.float16
    assert passes == [weight.numel()]
    assert storage_dtype(weight, half) == torch.float16 and len(passes) == 2
