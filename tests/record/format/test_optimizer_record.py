"""`burnlike.record.format.optimizer_record`: the torch optimizers burnlike's configs build, as
Burn's optimizer records (burn-optim `optim/simple/adaptor.rs`: a map ParamId →
`AdaptorRecordItem::V1(Rank<D>(state))`, each state its optimizer's `#[derive(Record)]` struct).

For Adam, AdamW, SGD with momentum, RMSProp and AdaGrad: the record's fields are Burn's, in Burn's
declaration order, keyed by the ParamIds of the model's own record; its tensors keep full precision
and Burn's Linear layout (`[d_in, d_out]`); it loads back into a fresh torch optimizer with the same
state, which then steps exactly as the original. A record written by hand from Burn's struct
definitions loads too, and a malformed one is refused naming the file and the key."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest
import torch
from torch import nn

from burnlike.module import Module
from burnlike.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    MomentumConfig,
    OptimizerConfig,
    RmsPropConfig,
    SgdConfig,
)
from burnlike.record import CompactRecorder, DefaultRecorder, PrettyJsonFileRecorder, RecordError
from burnlike.record.format.module_record import param_ids
from burnlike.record.format.optimizer_record import (
    ParamEntry,
    burn_optimizer,
    load_optimizer_record,
    optimizer_to_record,
    state_to_record,
)
from tests.record.helpers import unpack


class Small(Module):
    """A Linear (stored transposed by Burn), a Conv1d (a rank-3 weight) and a LayerNorm (gamma/beta)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.conv = nn.Conv1d(1, 2, 3)
        self.norm = nn.LayerNorm(2)


# Burn's state structs, field names in declaration order (burn-optim v0.21.0, optim/*.rs).
ADAM = {"momentum": {"time": None, "moment_1": None, "moment_2": None, "max_moment_2": None}}
BURN_FIELDS: dict[str, dict[str, Any]] = {
    "Adam": ADAM,  # adam.rs: AdamState { momentum: AdaptiveMomentumState }
    "AdamW": ADAM,  # adamw.rs: AdamWState { momentum: AdaptiveMomentumState }
    "Sgd": {"momentum": {"velocity": None}},  # sgd.rs, momentum.rs: SgdState { momentum: Option<MomentumState> }
    "RmsProp": {"square_avg": {"square_avg": None}, "centered": {"grad_avg": None, "avg": None},
                "momentum": {"buf": None}},  # rmsprop.rs: RmsPropState
    "AdaGrad": {"lr_decay": {"time": None, "sum": None}},  # adagrad.rs: AdaGradState { lr_decay: LrDecayState }
}

CONFIGS: dict[str, OptimizerConfig] = {
    "Adam": AdamConfig(amsgrad=True),
    "AdamW": AdamWConfig(),
    "AdamW-cautious": AdamWConfig(cautious_weight_decay=True),  # burnlike's BurnAdamW
    "Sgd": SgdConfig(momentum=MomentumConfig(nesterov=True)),
    "RmsProp": RmsPropConfig(centered=True),
    "AdaGrad": AdaGradConfig(lr_decay=0.01),
}


def stepped(config: OptimizerConfig, steps: int = 2) -> tuple[Small, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = Small()
    optimizer = config.torch_optimizer(list(model.parameters()), 0.05)
    step(model, optimizer, steps)
    return model, optimizer


def step(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int, seed: int = 1) -> None:
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        for p in model.parameters():
            p.grad = torch.randn(p.shape, generator=g)
        optimizer.step()


def twin(model: Small, config: OptimizerConfig, folder: Path) -> tuple[Small, torch.optim.Optimizer]:
    """`model` as Burn's model-N would restore it (weights and ParamIds), with a fresh optimizer."""
    model.save_file(folder / "model", DefaultRecorder())
    other = Small().load_file(folder / "model.mpk", DefaultRecorder())
    return other, config.torch_optimizer(list(other.parameters()), 0.05)


def fields_of(node: Any, like: dict[str, Any]) -> dict[str, Any]:
    """`node`'s field names (nested as `like`), in the file's order."""
    return {k: fields_of(node[k], like[k]) if isinstance(like[k], dict) and isinstance(node[k], dict) else None
            for k in node}


def assert_same_state(a: dict[str, Any], b: dict[str, Any], skip: tuple[str, ...] = ()) -> None:
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for index, state in a["state"].items():
        assert state.keys() == b["state"][index].keys(), index
        for k, v in state.items():
            if k not in skip:
                assert type(v) is type(b["state"][index][k]) and torch.equal(torch.as_tensor(v),
                                                                             torch.as_tensor(b["state"][index][k])), k


# --- which torch optimizers are which Burn optimizer ---


def test_torch_optimizers_are_named_as_burns():
    """Burn's record is its optimizer's: the torch classes the configs build, subclasses included."""
    params = [nn.Parameter(torch.zeros(2))]
    assert {name: burn_optimizer(config.torch_optimizer(params, 0.1)) for name, config in CONFIGS.items()} == {
        "Adam": "Adam", "AdamW": "AdamW", "AdamW-cautious": "AdamW", "Sgd": "Sgd", "RmsProp": "RmsProp",
        "AdaGrad": "AdaGrad"}
    assert burn_optimizer(AdanConfig().torch_optimizer(params, 0.1)) is None  # no record converter for it
    assert burn_optimizer(torch.optim.Adadelta(params)) is None


# --- Burn's structure ---


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_record_has_burns_fields_keyed_by_the_model_records_param_ids(tmp_path, name):
    """Burn loads the record by field name and ParamId: both must be Burn's, ids those of model-N."""
    burn = name.partition("-")[0]
    model, optimizer = stepped(CONFIGS[name])
    model_record = unpack(model.save_file(tmp_path / "model", DefaultRecorder()))["item"]
    record = unpack(DefaultRecorder().record(optimizer_to_record(optimizer, model), tmp_path / "optim"))
    item = record["item"]
    assert set(item) == {p["id"] for layer in model_record.values() for p in layer.values() if isinstance(p, dict)}
    ranks = {model_record["linear"]["weight"]["id"]: "Rank2", model_record["conv"]["weight"]["id"]: "Rank3",
             model_record["linear"]["bias"]["id"]: "Rank1"}
    for pid, rank in ranks.items():
        assert list(item[pid]) == ["V1"] and list(item[pid]["V1"]) == [rank]
    state = item[model_record["linear"]["weight"]["id"]]["V1"]["Rank2"]
    assert fields_of(state, BURN_FIELDS[burn]) == BURN_FIELDS[burn]
    tensors = [leaf for part in state.values() for leaf in part.values() if isinstance(leaf, dict)]
    assert tensors and all(t["shape"] == [3, 2] and t["dtype"] == "F32" for t in tensors)  # Burn's [d_in, d_out]
    if "time" in next(iter(state.values())):
        assert next(iter(state.values()))["time"] == 2  # a usize: the steps taken


def test_optimizer_state_keeps_full_precision_under_a_half_precision_recorder(tmp_path):
    """f16 would round the moments, and a resumed run would no longer step as the uninterrupted one."""
    model, optimizer = stepped(AdamConfig())
    item = unpack(CompactRecorder().record(optimizer_to_record(optimizer, model), tmp_path / "optim"))["item"]
    dtypes = {t["dtype"] for entry in item.values() for state in entry["V1"].values()
              for t in state["momentum"].values() if isinstance(t, dict)}
    assert dtypes == {"F32"}


def test_a_0_19_record_has_0_19s_adam_state_without_max_moment_2(tmp_path):
    """`max_moment_2` (AMSGrad) came with Burn 0.21: a record for Burn 0.19 or 0.20 has their struct."""
    model, optimizer = stepped(AdamConfig())
    recorder = DefaultRecorder(burn_version="0.19.0")
    path = recorder.record(optimizer_to_record(optimizer, model, version="0.19.0"), tmp_path / "optim")
    item = unpack(path)["item"]
    assert {tuple(e["V1"][r]["momentum"]) for e in item.values() for r in e["V1"]} == {
        ("time", "moment_1", "moment_2")}
    other, restored = twin(model, AdamConfig(), tmp_path)
    load_optimizer_record(restored, other, recorder.load(path), path)
    assert_same_state(optimizer.state_dict(), restored.state_dict())


# --- round trips ---


@pytest.mark.parametrize("recorder", [DefaultRecorder(), PrettyJsonFileRecorder()], ids=["mpk", "json"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_state_round_trips_and_the_restored_optimizer_steps_identically(tmp_path, name, recorder):
    """What resuming from model-N and optim-N needs: the same state, then bit-identical steps.
    (Burn's RmsProp has no step count: torch's, unused by its update, restarts at 0.)"""
    model, optimizer = stepped(CONFIGS[name])
    path = recorder.record(optimizer_to_record(optimizer, model), tmp_path / "optim")
    other, restored = twin(model, CONFIGS[name], tmp_path)
    load_optimizer_record(restored, other, recorder.load(path), path)
    assert_same_state(optimizer.state_dict(), restored.state_dict(), skip=("step",) if name == "RmsProp" else ())
    step(model, optimizer, 2, seed=7)
    step(other, restored, 2, seed=7)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other.parameters()))


def test_sgd_without_momentum_has_no_state_to_record(tmp_path):
    model, optimizer = stepped(SgdConfig())
    assert optimizer_to_record(optimizer, model) == {}
    other, restored = twin(model, SgdConfig(), tmp_path)
    load_optimizer_record(restored, other, {})
    assert restored.state_dict()["state"] == {}


# --- a record as Burn writes it ---


def tensor_data(values: list[list[float]] | list[float], dtype: str = "F32") -> dict[str, Any]:
    """Burn's TensorData (burn-tensor `tensor/data.rs`): little-endian bytes, shape, dtype name."""
    rows = values if isinstance(values[0], list) else [values]
    flat = [v for row in rows for v in row]  # type: ignore[union-attr]
    shape = [len(rows), len(rows[0])] if isinstance(values[0], list) else [len(values)]  # type: ignore[arg-type]
    fmt = {"F32": "f", "F16": "e"}[dtype]
    return {"bytes": struct.pack(f"<{len(flat)}{fmt}", *flat), "shape": shape, "dtype": dtype}


def burn_file(path: Path, item: dict[str, Any], settings: str = "FullPrecisionSettings") -> Path:
    """`BurnRecord { metadata, item, _b }` as `NamedMpkFileRecorder` writes it (rmp_serde write_named)."""
    half = settings == "HalfPrecisionSettings"
    metadata = {"float": "half::binary16::f16" if half else "f32", "int": "i16" if half else "i32",
                "format": f"burn_core::record::file::NamedMpkFileRecorder<burn_core::record::settings::{settings}>",
                "version": "0.21.0", "settings": settings}
    path.write_bytes(msgpack.packb({"metadata": metadata, "item": item, "_b": []}, use_bin_type=True))
    return path


class Line(Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 3)


def line_with_ids() -> tuple[Line, str, str]:
    model = Line()
    param_ids(model).update({"linear.weight": "72d17eukbtkma", "linear.bias": "0a1b2c3d4e5f6"})
    return model, "72d17eukbtkma", "0a1b2c3d4e5f6"


@pytest.mark.parametrize("dtype", ["F32", "F16"])
def test_an_adam_record_as_burn_writes_it_loads_into_torch_adam(tmp_path, dtype):
    """Written from Burn's structs (burn-optim v0.21.0 `optim/adam.rs` AdamState/AdaptiveMomentumState,
    `optim/simple/record/v1.rs` AdaptorRecordItemV1::Rank<D>, `optim/simple/adaptor.rs` the ParamId
    map; burn-core `record/primitive.rs` HashMap<ParamId, _> as string keys): a Linear(2, 3)'s weight
    state is `[d_in, d_out] = [2, 3]`; under half precision (CompactRecorder) Burn writes f16."""
    model, weight, bias = line_with_ids()
    m1 = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    m2 = [[0.5, 0.25, 0.125], [1.0, 2.0, 4.0]]
    item = {
        weight: {"V1": {"Rank2": {"momentum": {"time": 3, "moment_1": tensor_data(m1, dtype),
                                               "moment_2": tensor_data(m2, dtype), "max_moment_2": None}}}},
        bias: {"V1": {"Rank1": {"momentum": {"time": 3, "moment_1": tensor_data([0.5, -0.5, 1.5], dtype),
                                             "moment_2": tensor_data([1.0, 1.0, 2.0], dtype),
                                             "max_moment_2": None}}}},
    }
    path = burn_file(tmp_path / "optim-1.mpk", item,
                     "HalfPrecisionSettings" if dtype == "F16" else "FullPrecisionSettings")
    optimizer = AdamConfig().torch_optimizer(list(model.parameters()), 1e-3)
    load_optimizer_record(optimizer, model, DefaultRecorder().load(path), path)
    state = optimizer.state[model.linear.weight]
    assert torch.equal(state["exp_avg"], torch.tensor(m1).t()) and torch.equal(state["exp_avg_sq"], torch.tensor(m2).t())
    assert state["exp_avg"].dtype == torch.float32 and state["exp_avg"].shape == (3, 2)
    assert state["step"].item() == 3.0 and torch.is_tensor(state["step"])
    assert torch.equal(optimizer.state[model.linear.bias]["exp_avg"], torch.tensor([0.5, -0.5, 1.5]))
    step(model, optimizer, 1)  # torch steps from it


def test_an_rmsprop_and_an_adagrad_record_as_burn_writes_them_load_into_torch(tmp_path):
    """burn-optim v0.21.0 `optim/rmsprop.rs` (RmsPropState: SquareAvgState, CenteredState with
    `grad_avg: None` when not centered, Option<RmsPropMomentumState>) and `optim/adagrad.rs`
    (AdaGradState { lr_decay: LrDecayState { time, sum } }). Burn writes no state for a parameter
    it never stepped; torch's Adagrad needs one: its initial state."""
    model, weight, bias = line_with_ids()
    sq = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    buf = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    rms = {weight: {"V1": {"Rank2": {"square_avg": {"square_avg": tensor_data(sq)},
                                     "centered": {"grad_avg": None, "avg": tensor_data(sq)},
                                     "momentum": {"buf": tensor_data(buf)}}}}}
    optimizer = RmsPropConfig().torch_optimizer(list(model.parameters()), 1e-3)
    load_optimizer_record(optimizer, model, DefaultRecorder().load(burn_file(tmp_path / "rms.mpk", rms)))
    state = optimizer.state[model.linear.weight]
    assert torch.equal(state["square_avg"], torch.tensor(sq).t()) and torch.equal(state["momentum_buffer"],
                                                                                   torch.tensor(buf).t())
    assert model.linear.bias not in optimizer.state  # torch's RMSprop starts it at its first step, as Burn
    step(model, optimizer, 1)

    model, weight, bias = line_with_ids()
    ada = {bias: {"V1": {"Rank1": {"lr_decay": {"time": 4, "sum": tensor_data([1.0, 2.0, 3.0])}}}}}
    optimizer = AdaGradConfig().torch_optimizer(list(model.parameters()), 1e-3)
    load_optimizer_record(optimizer, model, DefaultRecorder().load(burn_file(tmp_path / "ada.mpk", ada)))
    assert optimizer.state[model.linear.bias]["step"].item() == 4.0
    assert torch.equal(optimizer.state[model.linear.bias]["sum"], torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(optimizer.state[model.linear.weight]["sum"], torch.zeros(3, 2))
    step(model, optimizer, 1)


# --- malformed records ---


def adam_item(weight: str, state: Any, rank: str = "Rank2") -> dict[str, Any]:
    return {weight: {"V1": {rank: state}}}


GOOD = {"momentum": {"time": 1, "moment_1": tensor_data([[1.0] * 3] * 2), "moment_2": tensor_data([[1.0] * 3] * 2),
                     "max_moment_2": None}}


@pytest.mark.parametrize(("item", "key", "message"), [
    (lambda w: adam_item(w, {"momentum": {"time": 1, "moment_1": GOOD["momentum"]["moment_1"]}}),
     "{w}.V1.Rank2.momentum", "expected Burn's AdaptiveMomentumState"),
    (lambda w: adam_item(w, {"moment": {}}), "{w}.V1.Rank2", "expected Burn's AdamState"),
    (lambda w: adam_item(w, GOOD, "Rank1"), "{w}.V1", "the parameter has rank 2, the record Rank1"),
    (lambda w: adam_item(w, GOOD, "Rank9"), "{w}.V1", "expected AdaptorRecordItemV1"),
    (lambda w: {w: {"V2": {"Rank2": GOOD}}}, "{w}", "expected AdaptorRecordItem"),
    (lambda w: adam_item(w, {"momentum": {**GOOD["momentum"], "time": -1}}), "{w}.V1.Rank2.momentum.time",
     "expected a usize"),
    (lambda w: adam_item(w, {"momentum": {**GOOD["momentum"], "moment_2": tensor_data([1.0, 2.0])}}),
     "{w}.V1.Rank2.momentum.moment_2", "a Linear weight's state is 2-D"),
    (lambda w: adam_item(w, {"momentum": {**GOOD["momentum"], "moment_1": {"bytes": b"", "shape": [2], "dtype": "F32"}}}),
     "{w}.V1.Rank2.momentum.moment_1", "bytes don't hold shape"),
    (lambda w: {"0123456789abc": {"V1": {"Rank1": GOOD}}}, "0123456789abc", "not one of the optimizer's parameters"),
], ids=["missing-field", "wrong-struct", "wrong-rank", "no-such-rank", "unknown-version", "negative-time",
        "wrong-dims", "short-bytes", "unknown-param-id"])
def test_a_malformed_record_is_refused_naming_the_file_and_key(tmp_path, item, key, message):
    """And the optimizer keeps its state: nothing is loaded unless the whole record checks out."""
    model, weight, _ = line_with_ids()
    optimizer = AdamConfig().torch_optimizer(list(model.parameters()), 1e-3)
    path = burn_file(tmp_path / "optim-3.mpk", item(weight))
    with pytest.raises(RecordError) as error:
        load_optimizer_record(optimizer, model, DefaultRecorder().load(path), path)
    assert error.value.path == str(path) and error.value.key == key.format(w=weight)
    assert message in str(error.value)
    assert optimizer.state_dict()["state"] == {}


def test_a_parameter_outside_the_model_record_is_refused():
    """Burn's record names parameters by the model's ParamIds: one the model doesn't hold has none."""
    model, _, _ = line_with_ids()
    stray = nn.Parameter(torch.zeros(2))
    optimizer = AdamConfig().torch_optimizer([*model.parameters(), stray], 1e-3)
    with pytest.raises(RecordError, match="not in the model's record"):
        optimizer_to_record(optimizer, model)
    with pytest.raises(TypeError, match="Adadelta has no Burn optimizer record"):
        optimizer_to_record(torch.optim.Adadelta(model.parameters()), model)


def test_an_adagrad_state_without_lr_decay_is_refused_naming_burns_struct(tmp_path):
    model, _, bias = line_with_ids()
    optimizer = AdaGradConfig().torch_optimizer(list(model.parameters()), 1e-3)
    path = burn_file(tmp_path / "optim-1.mpk", {bias: {"V1": {"Rank1": {"decay": {}}}}})
    with pytest.raises(RecordError) as error:
        load_optimizer_record(optimizer, model, DefaultRecorder().load(path), path)
    assert error.value.detail == "expected Burn's AdaGradState with fields ['lr_decay'] (missing ['lr_decay'])"


def test_an_unknown_param_id_says_to_load_the_model_record_first(tmp_path):
    model, _, _ = line_with_ids()
    optimizer = AdamConfig().torch_optimizer(list(model.parameters()), 1e-3)
    path = burn_file(tmp_path / "optim-1.mpk", {"0123456789abc": {"V1": {"Rank1": GOOD}}})
    with pytest.raises(RecordError) as error:
        load_optimizer_record(optimizer, model, DefaultRecorder().load(path), path)
    assert error.value.detail == ("this ParamId is not one of the optimizer's parameters (load the model record saved "
                                  "with the optimizer's first, so the model has its ParamIds)")


@pytest.mark.parametrize(("version", "dtype"), [("0.19.0", "Bool"), ("0.21.0", {"Bool": "Native"})])
def test_a_state_tensors_dtype_is_written_as_the_records_burn_version_spells_it(version, dtype):
    """Bool is the one dtype whose spelling changed (0.20); the state's tensors follow the record's version."""
    table = [ParamEntry("0123456789abc", (2,), transposed=False)]
    item, _ = state_to_record({0: {"momentum_buffer": torch.tensor([True, False])}}, "Sgd", table, version)
    assert item["0123456789abc"]["V1"]["Rank1"]["momentum"]["velocity"]["dtype"] == dtype
