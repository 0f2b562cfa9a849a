"""Burn's per-epoch checkpoint files (Burn 0.20+): `checkpoint/model-N.<ext>` a plain module record
(what Burn's recorder and `Module.load_file` load), `optim-N` and `scheduler-N` beside it, and
`trainer-N` with the rest of the Lightning checkpoint (loops, callbacks, metric store) so
Lightning can resume. `trainer-N` is written last: its presence marks a complete epoch.

`scheduler-N` is Burn's LR scheduler record (burn-optim `LrScheduler::Record`: nil for a constant
rate, Noam's step count, ...; `optim.lr_scheduler`), `trainer-N` keeping torch's LambdaLR state.
`optim-N` is Burn's optimizer record (`format.optimizer_record`: ParamId → `{"V1": {"Rank<D>":
state}}`, the ParamIds of `model-N`) when the run has one optimizer Burn has a record for (Adam,
AdamW, SGD, RMSProp, AdaGrad); `trainer-N` then keeps the rest of the torch optimizer's state (its
param_groups, the parameters' ParamIds in the optimizer's order, the counters Burn's structs lack).
Any other optimizer's state is written as a Lightning checkpoint part `{"optimizer_states": [...]}`.

Resuming reads `trainer-N` through the plugin, which puts the optimizer and scheduler states back
(`join_parts`) and names `model-N` under `MODEL_FILE`; the module's `on_load_checkpoint` loads the
weights from there (only it knows the module tree a Burn record needs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from burnlike.optim.lr_scheduler import BURN_RECORD, RECORD_FILE
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.error import RecordError
from burnlike.record.format import registry
from burnlike.record.format.location import AnyPath
from burnlike.record.format.optimizer_record import (
    STATES,
    ParamEntry,
    burn_optimizer,
    optimizer_params,
    param_table,
    record_to_state,
    state_to_record,
)
from burnlike.record.format.recorder import Recorder

# file kind → the Lightning checkpoint key it holds
PARTS = {"optim": "optimizer_states", "scheduler": "lr_schedulers"}
KINDS = ("model", *PARTS, "trainer")
FILES_KEY = "burn_epoch_files"  # in trainer-N: {kind: file name} of its epoch's other files
MODEL_FILE = "burn_model_file"  # set at load: where the weights are (`StepModule.on_load_checkpoint`)
BURN_OPTIM = "burn_optim_record"  # in trainer-N's optimizer state: optim-N is Burn's record of it


def epoch_file(folder: AnyPath, kind: str, epoch: int, extension: str) -> AnyPath:
    return folder / f"{kind}-{epoch}.{extension}"


def epoch_of(name: str, kind: str, extension: str) -> int | None:
    """N when `name` is `epoch_file`'s `<kind>-N.<extension>`, else None."""
    number = name.removeprefix(f"{kind}-").removesuffix(f".{extension}")
    if name != f"{kind}-{number}.{extension}" or not number.isdigit():
        return None
    return int(number)


def save_parts(checkpoint: dict[str, Any], model: nn.Module, folder: AnyPath, epoch: int, recorder: Recorder,
               write: bool = True, optimizers: Sequence[torch.optim.Optimizer] | None = None) -> None:
    """Move the weights, optimizer and scheduler states out of `checkpoint` into their own files
    (written when `write`: rank 0); what stays is `trainer-N`'s content. `optimizers`: the run's,
    whose states `checkpoint` holds (`optim-N` is Burn's optimizer record when it can be,
    `scheduler-N` Burn's LR scheduler record)."""
    ext = recorder.file_extension()
    parts = {kind: checkpoint.pop(key, []) for kind, key in PARTS.items()}
    burn = burn_optimizer_record(parts["optim"], optimizers or (), model, recorder.burn_version)
    if burn is not None:
        checkpoint[PARTS["optim"]] = [burn[1]]
    schedule = burn_scheduler_record(parts["scheduler"])
    if schedule is not None:
        checkpoint[PARTS["scheduler"]] = schedule[1]
    checkpoint["state_dict"] = {}  # the weights are in model-N
    checkpoint[FILES_KEY] = {kind: epoch_file(folder, kind, epoch, ext).name for kind in ("model", *PARTS)}
    if not write:
        return
    recorder.save_module(model, epoch_file(folder, "model", epoch, ext), exact_path=True, durable=True)
    for kind, value in parts.items():
        if kind == "optim" and burn is not None:
            item = burn[0]
        elif kind == "scheduler" and schedule is not None:
            item = schedule[0]
        else:
            item = encode_checkpoint({PARTS[kind]: value}, recorder)
        recorder.record(item, epoch_file(folder, kind, epoch, ext), exact_path=True, durable=True)


def burn_optimizer_record(states: list[dict[str, Any]], optimizers: Sequence[torch.optim.Optimizer],
                          model: nn.Module, version: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """`(Burn's optimizer record item, what trainer-N keeps of the state)` for a run with one
    optimizer Burn has a record for, over `model`'s parameters; else None."""
    if len(states) != 1 or len(optimizers) != 1 or not isinstance(states[0], dict):
        return None
    name = burn_optimizer(optimizers[0])
    table = param_table(model, optimizer_params(optimizers[0]), version) if name is not None else None
    state, groups = states[0].get("state"), states[0].get("param_groups")
    if name is None or table is None or not isinstance(state, dict) or not isinstance(groups, list) \
            or sorted(i for g in groups for i in g.get("params", [])) != list(range(len(table))):
        return None
    item, extra = state_to_record(state, name, table, version, lazy=True)
    rest = {k: v for k, v in states[0].items() if k != "state"}
    return item, {"state": extra, **rest, BURN_OPTIM: {"optimizer": name, "params": [e.as_list() for e in table]}}


def burn_scheduler_record(states: Any) -> tuple[Any, list[dict[str, Any]]] | None:
    """`(Burn's LR scheduler record item, what trainer-N keeps)` for a run with a constant rate (Burn's
    `()` record: nil) or one Burn schedule (`BurnLambdaLR`'s state carries its record); else None."""
    if states == []:
        return None, []
    if isinstance(states, list) and len(states) == 1 and isinstance(states[0], dict) and BURN_RECORD in states[0]:
        return states[0][BURN_RECORD], [{k: v for k, v in states[0].items() if k != BURN_RECORD}]
    return None


def join_optimizer_state(kept: dict[str, Any], item: Any, path: AnyPath, trainer: AnyPath) -> dict[str, Any]:
    """The torch optimizer state from Burn's record `item` (read from `path`) and what trainer-N
    kept of it (`kept`, read from `trainer`)."""
    meta = kept[BURN_OPTIM]
    name = meta.get("optimizer") if isinstance(meta, dict) else None
    params = meta.get("params") if isinstance(meta, dict) else None
    if name not in STATES or not isinstance(params, list):
        raise RecordError(f"expected {{'optimizer': one of {sorted(STATES)}, 'params': [...]}}", str(trainer),
                          f"optimizer_states.0.{BURN_OPTIM}")
    table = [ParamEntry.from_list(p, str(trainer), f"optimizer_states.0.{BURN_OPTIM}.params.{i}")
             for i, p in enumerate(params)]
    groups = kept.get("param_groups")
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise RecordError("expected a list of param groups", str(trainer), "optimizer_states.0.param_groups")
    state = record_to_state(item, name, table, groups, str(path))
    extra = kept.get("state") or {}  # by ParamId: what Burn's state struct has no field for
    for index, entry in enumerate(table):
        values = extra.get(entry.id) if isinstance(extra, dict) else None
        if isinstance(values, dict) and index in state:
            state[index].update(values)
    rest = {k: v for k, v in kept.items() if k not in ("state", BURN_OPTIM)}
    return {"state": state, **rest}


def join_parts(checkpoint: dict[str, Any], path: AnyPath) -> dict[str, Any]:
    """`trainer-N`'s content plus its epoch's optimizer and scheduler states, with `MODEL_FILE`
    naming the weights file; any other checkpoint is returned unchanged."""
    names = checkpoint.pop(FILES_KEY, None)
    if not isinstance(names, dict):
        return checkpoint
    for kind, key in PARTS.items():
        part = path.parent / str(names.get(kind))
        if not part.exists():
            raise RecordError(f"the epoch's {kind} file {part.name} is missing beside it", str(path))
        kept = checkpoint.get(key)
        if kind == "optim" and isinstance(kept, list) and len(kept) == 1 and isinstance(kept[0], dict) \
                and BURN_OPTIM in kept[0]:  # Burn's optimizer record
            checkpoint[key] = [join_optimizer_state(kept[0], registry.sniff(part).load(part), part, path)]
            continue
        if kind == "scheduler" and isinstance(kept, list):  # Burn's LR scheduler record
            record = registry.sniff(part).load(part)
            checkpoint[key] = [{**state, BURN_RECORD: record, RECORD_FILE: str(part)} for state in kept]
            continue
        value = decode_value(registry.sniff(part).load(part), str(part))
        if not isinstance(value, dict) or key not in value:
            raise RecordError(f"expected a map with '{key}'", str(part))
        checkpoint[key] = value[key]
    checkpoint[MODEL_FILE] = str(model_file(names, path))
    return checkpoint


def model_file(names: Any, path: AnyPath) -> AnyPath:
    """The `model-N` beside `path` (a `trainer-N`) that its `FILES_KEY` map `names` lists."""
    model = names.get("model") if isinstance(names, dict) else None
    if not isinstance(model, str) or not model or "/" in model:
        raise RecordError("expected {'model': a file name, ...}", str(path), FILES_KEY)
    found = path.parent / model
    if not found.exists():
        raise RecordError(f"the epoch's model file {model} is missing beside it", str(path))
    return found
