"""`nn.Module` ⇄ Burn module record item (nested maps and lists with `ParamSerde` leaves): the
named form MessagePack and JSON store, and bincode decodes to.

Loading checks the whole item against the module before any parameter changes, then moves the
tensors (`Transfers`); a ParamId read from a file is kept on the module so a load→save writes it
back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

import torch
from torch import nn

from burnlike.record.error import RecordError, RecordPath, quote
from burnlike.record.format.walker import Field, ModuleArray, Visitor, walk
from burnlike.record.tensor.precision import (
    PrecisionSettings,
    SettingsLike,
    as_settings,
    storage_dtype,
    target_dtype,
)
from burnlike.record.tensor.tensor_data import check_data, tensor_to_data
from burnlike.record.tensor.transfer import Transfers
from burnlike.record.tensor.version import DEFAULT_VERSION

IDS_ATTR = "_burn_param_ids"


def new_param_id() -> str:
    """Burn's ParamId text: base32hex of a random u64's 8 little-endian bytes, lowercase, unpadded."""
    return base64.b32hexencode(os.urandom(8)).decode().lower().rstrip("=")


def check_param_id(value: Any, path: RecordPath, key: str) -> str:
    if not isinstance(value, str) or len(value) not in (10, 13):
        raise RecordError(f"ParamId must be a 10- or 13-char string, got {quote(value)}", path, key)
    try:
        base64.b32hexdecode(value.upper() + "=" * ((8 - len(value) % 8) % 8))
    except (ValueError, binascii.Error):
        raise RecordError(f"ParamId {value!r} is not base32hex", path, key) from None
    return value


def param_ids(root: nn.Module) -> dict[str, str]:
    """ParamIds by record key path ("block.conv.weight"), kept on the module so a load→save keeps
    Burn's ids (byte-identical write-back) and survive `.to()`/`.double()`, which swap tensors."""
    ids = root.__dict__.get(IDS_ATTR)
    if not isinstance(ids, dict):
        ids = {}
        root.__dict__[IDS_ATTR] = ids
    return ids


def param_tensor(field: Field) -> torch.Tensor:
    tensor: torch.Tensor = getattr(field.module, field.attr)  # type: ignore[arg-type]
    return tensor


class _ToRecord(Visitor[None]):
    def __init__(self, ids: dict[str, str], settings: PrecisionSettings | None, version: str, lazy: bool) -> None:
        self.ids, self.settings, self.version, self.lazy = ids, settings, version, lazy

    def decide(self, t: torch.Tensor, peak: int | None) -> torch.dtype:
        return storage_dtype(t, self.settings, peak)

    def leaf(self, node: None, key: str, field: Field) -> Any:
        if field.kind == "param":
            t = param_tensor(field).detach()
            transpose = field.transpose and t.dim() == 2
            target = target_dtype(t, self.settings)
            # narrower than the tensor: `storage_dtype`'s guards decide (lazy: on a save worker)
            decide = self.decide if target != t.dtype else None
            data = tensor_to_data(t, target, self.version, transpose=transpose, lazy=self.lazy, decide=decide)
            return {"id": self.ids.setdefault(key, new_param_id()), "param": data}
        return [None] * field.width if field.kind == "nils" else None


def module_to_record(module: nn.Module, settings: SettingsLike = None, version: str = DEFAULT_VERSION,
                     lazy: bool = False) -> Any:
    """The record item of `module` (nested maps/lists/None, ParamSerde leaves).

    Args:
        module: Any torch module; its fields are walked in Burn's order.
        settings: The precision to record floats and ints at; the tensors' own dtypes when None.
        version: The Burn version whose record layout is written.
        lazy: Leave tensor bytes as `TensorBytes` for the streaming writers (no copy of the
            weights is held in memory); the default materialises them, for `into_record()` users.
    """
    resolved = as_settings(settings) if settings is not None else None
    return walk(module, _ToRecord(param_ids(module), resolved, version, lazy), None, version)


class _Load(Visitor[Any]):
    """Checks an item against the module; collects the copies and the ParamIds found."""

    def __init__(self, path: RecordPath, strict: bool) -> None:
        self.path, self.strict = path, strict
        self.transfers = Transfers()
        self.found: dict[str, str] = {}

    def sequence(self, node: Any, key: str, m: ModuleArray) -> None:
        if not isinstance(node, list) or len(node) != len(m):
            raise RecordError(f"expected a list of {len(m)} module records for {type(m).__name__}", self.path, key)

    def entry(self, node: Any, index: int) -> Any:
        return node[index]

    def struct(self, node: Any, key: str, m: nn.Module) -> None:
        if not isinstance(node, dict):
            raise RecordError(f"expected a map for {type(m).__name__}, got {type(node).__name__}", self.path, key)

    def child(self, node: Any, key: str, field: Field) -> Any:
        if field.name not in node:
            raise RecordError(f"missing module record for {type(field.module).__name__}", self.path, key)
        return node[field.name]

    def leaf(self, node: Any, key: str, field: Field) -> None:
        if field.kind != "param":
            return
        param = node.get(field.name)
        if param is None:
            if self.strict:
                raise RecordError(f"missing parameter for {type(field.module).__name__}.{field.attr}", self.path, key)
            return
        if not isinstance(param, dict) or "param" not in param:
            raise RecordError("expected ParamSerde {id, param}", self.path, key)
        pid = check_param_id(param["id"], self.path, key) if "id" in param else None
        raw, dtype, recorded = check_data(param["param"], key, self.path)
        target = param_tensor(field)
        transpose = field.transpose and len(recorded) == 2
        shape = tuple(recorded[::-1]) if transpose else tuple(recorded)
        if shape != tuple(target.shape):
            raise RecordError(f"shape {list(shape)} in the record, model has {list(target.shape)}"
                              + (" (Linear weights are stored [d_in, d_out])" if field.transpose else ""),
                              self.path, key)
        self.transfers.add(target, raw, dtype, recorded, transpose)
        if pid is not None:
            self.found[key] = pid


def load_module_record(module: nn.Module, record: Any, path: RecordPath = None, strict: bool = True) -> None:
    """Copy a record item's tensors into `module` (cast to each parameter's dtype and device).

    Checks every key and shape first-come and names the parameter in the RecordError; nothing in
    `module` changes unless the whole record checks out.

    Args:
        module: The module to load into.
        record: A record item (a recorder's `load`, `into_record()`), at any precision.
        path: The file the item came from, for the errors to name.
        strict: Refuse a record that lacks one of the module's parameters; False leaves such a
            parameter as it is.

    Raises:
        RecordError: A missing entry, a shape that differs, or a value that is not a tensor record.
    """
    load = _Load(path, strict)
    walk(module, load, record)
    load.transfers.run()
    param_ids(module).update(load.found)
