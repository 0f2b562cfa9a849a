"""Burn's optimizer records ⇄ torch optimizer states.

Burn's `OptimizerAdaptor` records a map from ParamId to `AdaptorRecordItem::V1(AdaptorRecordItemV1::
Rank<D>(state))` (burn-optim `optim/simple/adaptor.rs`, `optim/simple/record/{base,v1}.rs`; the map's
`Record` impl in burn-core `record/primitive.rs` writes each ParamId as its string). serde tags an
enum variant by name, so NamedMpk and JSON hold `{"<id>": {"V1": {"Rank2": <state>}}}`, D being the
parameter's rank (0 to 8). Each state is its optimizer's `#[derive(Record)]` struct, a map of its
fields in declaration order: a tensor is a TensorData, an `Option` nil or its value, a `usize` an
int. Burn keeps a Linear weight as `[d_in, d_out]` (module records), so its state tensors are
transposed the same way here.

The torch optimizers burnlike's configs build map onto Burn's five simple optimizers (`STATES`).
Optimizer state is always written at its own precision (full), whatever the recorder's settings:
a resumed run must step exactly as the uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from burnlike.record.error import RecordError, RecordPath, quote
from burnlike.record.format.module_record import check_param_id, new_param_id, param_ids, param_tensor
from burnlike.record.format.walker import Field, Visitor, walk
from burnlike.record.tensor.tensor_data import data_to_tensor, tensor_to_data
from burnlike.record.tensor.version import DEFAULT_VERSION, is_0_19

MAX_RANK = 8  # AdaptorRecordItemV1 has Rank0 … Rank8

TorchState = dict[str, Any]  # one parameter's entry of `optimizer.state_dict()["state"]`
Encode = Callable[[torch.Tensor], Any]  # a state tensor → its TensorData (in Burn's layout)


class Decode:
    """Reads one Burn state struct back: each field checked, errors naming the file and key path."""

    def __init__(self, path: RecordPath, key: str, transposed: bool) -> None:
        self.path, self.key, self.transposed = path, key, transposed

    def fail(self, message: str, field: str = "") -> RecordError:
        return RecordError(message, self.path, f"{self.key}.{field}" if field else self.key)

    def struct(self, node: Any, name: str, fields: Iterable[str], key: str = "") -> dict[str, Any]:
        if not isinstance(node, dict) or not set(fields) <= set(node):
            missing = sorted(set(fields) - set(node)) if isinstance(node, dict) else sorted(fields)
            raise self.fail(f"expected Burn's {name} with fields {list(fields)} (missing {missing})", key)
        return node

    def tensor(self, node: dict[str, Any], field: str, key: str = "") -> torch.Tensor:
        where = f"{key}.{field}" if key else field
        t = data_to_tensor(node[field], f"{self.key}.{where}", self.path)
        if self.transposed:
            if t.dim() != 2:
                raise self.fail(f"a Linear weight's state is 2-D, got shape {list(t.shape)}", where)
            t = t.t().contiguous()
        return t

    def option(self, node: dict[str, Any], field: str, key: str = "") -> torch.Tensor | None:
        return None if node[field] is None else self.tensor(node, field, key)

    def time(self, node: dict[str, Any], field: str, key: str = "") -> int:
        value = node[field]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            raise self.fail(f"expected a usize, got {quote(value)}", f"{key}.{field}" if key else field)
        return value


def _time(step: Any) -> int:
    """torch's step counter (a float tensor for torch's own optimizers, an int for burnlike's) as
    Burn's `usize`."""
    return int(step.item()) if isinstance(step, torch.Tensor) else int(step)


@dataclass(frozen=True)
class StateCodec:
    """One Burn optimizer's state struct ⇄ the torch optimizer state it stands for.

    `extra`: torch state keys Burn's struct has no field for; burnlike keeps them beside the record
    (in `trainer-N`), and a record Burn wrote leaves them at `missing`'s values."""

    name: str  # Burn's optimizer (and state struct, without `State`)
    to_burn: Callable[[TorchState, Encode, str], dict[str, Any]]  # (state, encode, Burn version)
    to_torch: Callable[[Any, Decode, Mapping[str, Any]], TorchState]
    extra: tuple[str, ...] = ()
    missing: Callable[[torch.Tensor, Mapping[str, Any]], TorchState] | None = None  # state of a never-stepped param


# Adam and AdamW (burn-optim optim/adam.rs, optim/adamw.rs): `AdamState { momentum:
# AdaptiveMomentumState { time: usize, moment_1, moment_2, max_moment_2: Option<Tensor> } }`;
# `max_moment_2` (AMSGrad) is new in 0.21.
def _adam_to_burn(state: TorchState, encode: Encode, version: str) -> dict[str, Any]:
    momentum = {"time": _time(state["step"]), "moment_1": encode(state["exp_avg"]),
                "moment_2": encode(state["exp_avg_sq"])}
    if not (is_0_19(version) or version.startswith("0.20")):
        most = state.get("max_exp_avg_sq")
        momentum["max_moment_2"] = None if most is None else encode(most)
    return {"momentum": momentum}


def _adam_to_torch(node: Any, d: Decode, group: Mapping[str, Any]) -> TorchState:
    momentum = d.struct(d.struct(node, "AdamState", ["momentum"])["momentum"], "AdaptiveMomentumState",
                        ["time", "moment_1", "moment_2"], "momentum")
    out: TorchState = {"step": d.time(momentum, "time", "momentum"),
                       "exp_avg": d.tensor(momentum, "moment_1", "momentum"),
                       "exp_avg_sq": d.tensor(momentum, "moment_2", "momentum")}
    if group.get("amsgrad"):
        most = d.option(momentum, "max_moment_2", "momentum") if "max_moment_2" in momentum else None
        # Burn takes moment_2 when it has no max yet; torch's max(0, v) is the same (v >= 0)
        out["max_exp_avg_sq"] = torch.zeros_like(out["exp_avg_sq"]) if most is None else most
    return out


# SGD (optim/sgd.rs, optim/momentum.rs): `SgdState { momentum: Option<MomentumState { velocity }> }`.
def _sgd_to_burn(state: TorchState, encode: Encode, version: str) -> dict[str, Any]:
    velocity = state.get("momentum_buffer")
    return {"momentum": None if velocity is None else {"velocity": encode(velocity)}}


def _sgd_to_torch(node: Any, d: Decode, group: Mapping[str, Any]) -> TorchState:
    momentum = d.struct(node, "SgdState", ["momentum"])["momentum"]
    if momentum is None:
        return {}
    return {"momentum_buffer": d.tensor(d.struct(momentum, "MomentumState", ["velocity"], "momentum"),
                                        "velocity", "momentum")}


# RMSProp (optim/rmsprop.rs): `RmsPropState { square_avg: SquareAvgState { square_avg },
# centered: CenteredState { grad_avg: Option<Tensor>, avg }, momentum: Option<RmsPropMomentumState { buf }> }`;
# `avg` is square_avg − grad_avg² when centered, else square_avg (Burn recomputes it every step).
def _rmsprop_to_burn(state: TorchState, encode: Encode, version: str) -> dict[str, Any]:
    square_avg, grad_avg, buf = state["square_avg"], state.get("grad_avg"), state.get("momentum_buffer")
    avg = square_avg if grad_avg is None else square_avg.addcmul(grad_avg, grad_avg, value=-1)
    return {"square_avg": {"square_avg": encode(square_avg)},
            "centered": {"grad_avg": None if grad_avg is None else encode(grad_avg), "avg": encode(avg)},
            "momentum": None if buf is None else {"buf": encode(buf)}}


def _rmsprop_to_torch(node: Any, d: Decode, group: Mapping[str, Any]) -> TorchState:
    node = d.struct(node, "RmsPropState", ["square_avg", "centered", "momentum"])
    square = d.struct(node["square_avg"], "SquareAvgState", ["square_avg"], "square_avg")
    centered = d.struct(node["centered"], "CenteredState", ["grad_avg", "avg"], "centered")
    out: TorchState = {"step": 0, "square_avg": d.tensor(square, "square_avg", "square_avg")}
    if node["momentum"] is not None:
        out["momentum_buffer"] = d.tensor(d.struct(node["momentum"], "RmsPropMomentumState", ["buf"], "momentum"),
                                          "buf", "momentum")
    elif group.get("momentum", 0) > 0:  # zeros: μ·0 + g' is Burn's first momentum step
        out["momentum_buffer"] = torch.zeros_like(out["square_avg"])
    grad_avg = d.option(centered, "grad_avg", "centered")
    if grad_avg is not None:
        out["grad_avg"] = grad_avg
    elif group.get("centered"):
        out["grad_avg"] = torch.zeros_like(out["square_avg"])
    return out


# AdaGrad (optim/adagrad.rs): `AdaGradState { lr_decay: LrDecayState { time: usize, sum } }`.
def _adagrad_to_burn(state: TorchState, encode: Encode, version: str) -> dict[str, Any]:
    return {"lr_decay": {"time": _time(state["step"]), "sum": encode(state["sum"])}}


def _adagrad_to_torch(node: Any, d: Decode, group: Mapping[str, Any]) -> TorchState:
    decay = d.struct(d.struct(node, "AdaGradState", ["lr_decay"])["lr_decay"], "LrDecayState", ["time", "sum"],
                     "lr_decay")
    return {"step": d.time(decay, "time", "lr_decay"), "sum": d.tensor(decay, "sum", "lr_decay")}


def _adagrad_missing(param: torch.Tensor, group: Mapping[str, Any]) -> TorchState:
    """torch's Adagrad holds a state for every parameter from the start: step 0, the initial sum."""
    return {"step": 0, "sum": torch.full_like(param, float(group.get("initial_accumulator_value", 0.0)))}


STATES: dict[str, StateCodec] = {
    "Adam": StateCodec("Adam", _adam_to_burn, _adam_to_torch),
    "AdamW": StateCodec("AdamW", _adam_to_burn, _adam_to_torch),
    "Sgd": StateCodec("Sgd", _sgd_to_burn, _sgd_to_torch),
    "RmsProp": StateCodec("RmsProp", _rmsprop_to_burn, _rmsprop_to_torch, extra=("step",)),
    "AdaGrad": StateCodec("AdaGrad", _adagrad_to_burn, _adagrad_to_torch, missing=_adagrad_missing),
}

_TORCH_CLASSES: dict[type[torch.optim.Optimizer], str] = {
    torch.optim.AdamW: "AdamW", torch.optim.Adam: "Adam", torch.optim.SGD: "Sgd", torch.optim.RMSprop: "RmsProp",
    torch.optim.Adagrad: "AdaGrad",
}


def burn_optimizer(optimizer: torch.optim.Optimizer) -> str | None:
    """The Burn optimizer whose record `optimizer`'s state is (a key of `STATES`), or None: a class
    may say so with a `burn_optimizer` attribute; torch's Adam, AdamW, SGD, RMSprop and Adagrad (and
    their subclasses) are Burn's Adam, AdamW, Sgd, RmsProp and AdaGrad."""
    declared = getattr(type(optimizer), "burn_optimizer", None)
    if isinstance(declared, str):
        return declared if declared in STATES else None
    for cls in type(optimizer).__mro__:
        if cls in _TORCH_CLASSES:
            return _TORCH_CLASSES[cls]
    return None


@dataclass(frozen=True)
class ParamEntry:
    """An optimizer parameter as Burn's record knows it: its ParamId, its (torch) shape, and whether
    Burn keeps it transposed (a Linear weight)."""

    id: str
    shape: tuple[int, ...]
    transposed: bool

    def as_list(self) -> list[Any]:
        return [self.id, list(self.shape), self.transposed]

    @classmethod
    def from_list(cls, value: Any, path: RecordPath, key: str) -> ParamEntry:
        if not (isinstance(value, list) and len(value) == 3 and isinstance(value[1], list)
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value[1])
                and isinstance(value[2], bool)):
            raise RecordError(f"expected [ParamId, shape, transposed], got {quote(value)}", path, key)
        return cls(check_param_id(value[0], path, key), tuple(value[1]), value[2])


class _Fields(Visitor[None]):
    """Each parameter tensor of a module record: its record key path and whether it is transposed."""

    def __init__(self) -> None:
        self.found: dict[int, tuple[str, bool]] = {}

    def leaf(self, node: None, key: str, field: Field) -> None:
        if field.kind == "param":
            t = param_tensor(field)
            self.found.setdefault(id(t), (key, field.transpose and t.dim() == 2))


def param_table(model: nn.Module, params: Iterable[torch.Tensor], version: str = DEFAULT_VERSION
                ) -> list[ParamEntry] | None:
    """`params` (an optimizer's, in its state_dict's index order) as Burn's record names them: the
    ParamIds `model`'s module record has (or will have: new ones are kept on `model`). None when a
    parameter is not in the module record, or its rank is over Burn's 8."""
    fields = _Fields()
    walk(model, fields, None, version)
    ids = param_ids(model)
    table = []
    for p in params:
        found = fields.found.get(id(p))
        if found is None or p.dim() > MAX_RANK:
            return None
        key, transposed = found
        table.append(ParamEntry(ids.setdefault(key, new_param_id()), tuple(p.shape), transposed))
    return table


def optimizer_params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The parameters in the index order of `optimizer.state_dict()` (groups in order)."""
    return [p for group in optimizer.param_groups for p in group["params"]]


def state_to_record(state: Mapping[Any, TorchState], name: str, table: list[ParamEntry],
                    version: str = DEFAULT_VERSION, lazy: bool = False) -> tuple[dict[str, Any], dict[str, TorchState]]:
    """A torch optimizer's `state_dict()["state"]` as Burn's record item, and what of it Burn's
    struct has no field for (by ParamId; empty for all but RMSProp's step counts)."""
    codec = STATES[name]
    item: dict[str, Any] = {}
    extra: dict[str, TorchState] = {}
    for index, torch_state in state.items():
        entry = table[index]
        if not torch_state:
            continue

        def encode(t: torch.Tensor, entry: ParamEntry = entry) -> Any:
            t = t.detach()
            return tensor_to_data(t, t.dtype, version, transpose=entry.transposed and t.dim() == 2, lazy=lazy)

        item[entry.id] = {"V1": {f"Rank{len(entry.shape)}": codec.to_burn(torch_state, encode, version)}}
        kept = {k: torch_state[k] for k in codec.extra if k in torch_state}
        if kept:
            extra[entry.id] = kept
    return item, extra


def record_to_state(item: Any, name: str, table: list[ParamEntry], groups: list[Mapping[str, Any]],
                    path: RecordPath = None, params: list[torch.Tensor] | None = None) -> dict[int, TorchState]:
    """Burn's record item as a torch optimizer's `state_dict()["state"]` (by index, as `table`).

    `groups`: the optimizer's param_groups (with their `params` indices), for the options a state
    depends on (amsgrad, centered, momentum). `params`: the parameters, for the state torch needs of
    one Burn has not stepped yet (AdaGrad). Raises RecordError naming the file and key."""
    codec = STATES[name]
    if not isinstance(item, dict):
        raise RecordError(f"expected Burn's optimizer record (a map from ParamId), got {type(item).__name__}", path)
    group_of = {i: g for g in groups for i in g.get("params", [])}
    index_of = {entry.id: i for i, entry in enumerate(table)}
    unknown = [k for k in item if k not in index_of]
    if unknown:
        raise RecordError("this ParamId is not one of the optimizer's parameters (load the model record saved "
                          "with the optimizer's first, so the model has its ParamIds)", path, str(unknown[0]))
    state: dict[int, TorchState] = {}
    for i, entry in enumerate(table):
        group = group_of.get(i, {})
        if entry.id not in item:
            if codec.missing is not None and params is not None:
                state[i] = codec.missing(params[i].detach(), group)
            continue
        rank = f"Rank{len(entry.shape)}"
        node = item[entry.id]
        if not isinstance(node, dict) or list(node) != ["V1"]:
            raise RecordError(f"expected AdaptorRecordItem {{'V1': …}}, got {quote(node)}", path, entry.id)
        node = node["V1"]
        if not isinstance(node, dict) or len(node) != 1 or next(iter(node)) not in _RANKS:
            raise RecordError(f"expected AdaptorRecordItemV1 {{'Rank0'…'Rank8': state}}, got {quote(node)}",
                              path, f"{entry.id}.V1")
        if rank not in node:
            raise RecordError(f"the parameter has rank {len(entry.shape)}, the record {next(iter(node))}", path,
                              f"{entry.id}.V1")
        torch_state = codec.to_torch(node[rank], Decode(path, f"{entry.id}.V1.{rank}", entry.transposed), group)
        for k, v in torch_state.items():
            if isinstance(v, torch.Tensor) and tuple(v.shape) != entry.shape:
                raise RecordError(f"state '{k}' has shape {list(v.shape)}, the parameter {list(entry.shape)}", path,
                                  f"{entry.id}.V1.{rank}")
        if torch_state:
            state[i] = torch_state
    return state


_RANKS = {f"Rank{d}" for d in range(MAX_RANK + 1)}


def _burn_name(optimizer: torch.optim.Optimizer) -> str:
    name = burn_optimizer(optimizer)
    if name is None:
        raise TypeError(f"{type(optimizer).__name__} has no Burn optimizer record (Burn's are {sorted(STATES)})")
    return name


def _table(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[ParamEntry]:
    table = param_table(model, optimizer_params(optimizer))
    if table is None:
        raise RecordError("an optimizer parameter is not in the model's record (or has a rank over 8)")
    return table


def optimizer_to_record(optimizer: torch.optim.Optimizer, model: nn.Module, version: str = DEFAULT_VERSION
                        ) -> dict[str, Any]:
    """Burn's `optim.to_record()` item for a torch optimizer over `model`'s parameters, keyed by
    the ParamIds `model`'s module record has: `recorder.record(item, "optim")` writes Burn's file."""
    item, _ = state_to_record(optimizer.state_dict()["state"], _burn_name(optimizer), _table(model, optimizer),
                              version)
    return item


def load_optimizer_record(optimizer: torch.optim.Optimizer, model: nn.Module, item: Any,
                          path: RecordPath = None) -> torch.optim.Optimizer:
    """Burn's `optim.load_record(record)`: a record item (`recorder.load(path)`), as Burn writes it,
    into a torch optimizer over `model`'s parameters; `model` holds the ParamIds of the module record
    saved with it (`load_file` keeps them). Nothing changes unless the whole record checks out."""
    name, table = _burn_name(optimizer), _table(model, optimizer)
    current = optimizer.state_dict()
    state = record_to_state(item, name, table, current["param_groups"], path, optimizer_params(optimizer))
    optimizer.load_state_dict({"state": state, "param_groups": current["param_groups"]})
    return optimizer
