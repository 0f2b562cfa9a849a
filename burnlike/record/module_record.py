"""`nn.Module` ⇄ Burn module record, with burn-import's conventions.

A module becomes a map of its fields in declaration order; parameters are
`ParamSerde{id, param: TensorData}`; `nn.Linear` weights are stored transposed (`[d_in, d_out]`);
norm layers' `weight/bias` are `gamma/beta`; stateless modules and config fields are nil;
`ModuleList`/`Sequential` are arrays. `walk` yields the same fields in the same order for the
bincode codec, which has no names.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import Any

from torch import nn

from burnlike.record.codec import check_data, storage_dtype, tensor_to_data
from burnlike.record.error import RecordError
from burnlike.record.precision import as_settings
from burnlike.record.transfer import Transfers

NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm1d,
         nn.InstanceNorm2d, nn.InstanceNorm3d)
CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
IDS_ATTR = "_burn_param_ids"


def new_param_id() -> str:
    """Burn's ParamId text: base32hex of a random u64's 8 little-endian bytes, lowercase, unpadded."""
    return base64.b32hexencode(os.urandom(8)).decode().lower().rstrip("=")


def check_param_id(value: Any, path: Any, key: str) -> str:
    if not isinstance(value, str) or len(value) not in (10, 13):
        raise RecordError(f"ParamId must be a 10- or 13-char string, got {value!r}", path, key)
    try:
        base64.b32hexdecode(value.upper() + "=" * ((8 - len(value) % 8) % 8))
    except (ValueError, base64.binascii.Error):
        raise RecordError(f"ParamId {value!r} is not base32hex", path, key) from None
    return value


@dataclass
class Field:
    """One field of a module record, in Burn's declaration order.

    `kind`: "param" (a ParamSerde), "nil" (stateless / config), "nil2" (a `[nil, nil]` array: 0.19's
    Conv2d stride/kernel/dilation), "some_nil" (0.19's `Option<Stateless>` = Some(())), "module",
    "list" or "none" (an absent Option param, e.g. Linear without bias).
    """

    name: str
    kind: str
    module: nn.Module | None = None
    attr: str | None = None  # torch attribute holding the tensor
    transpose: bool = False
    optional: bool = False  # an `Option<Param>` in Burn (Linear/Conv bias)


def is_stateless(m: nn.Module) -> bool:
    return not any(True for _ in m.parameters()) and not any(True for _ in m.buffers())


def fields(m: nn.Module, version: str = "0.21.0") -> list[Field]:
    """The record fields of `m` in order (standard layers mapped to Burn's structs)."""
    v19 = version.startswith(("0.14", "0.15", "0.16", "0.17", "0.18", "0.19"))
    if isinstance(m, nn.Linear):
        return [Field("weight", "param", m, "weight", transpose=True),
                Field("bias", "param" if m.bias is not None else "none", m, "bias", optional=True)]
    if isinstance(m, nn.Embedding):
        return [Field("weight", "param", m, "weight")]
    if isinstance(m, CONVS):
        geometry = "nil2" if (v19 and isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))) else "nil"
        out = [Field("weight", "param", m, "weight"),
               Field("bias", "param" if m.bias is not None else "none", m, "bias", optional=True),
               Field("stride", geometry), Field("kernel_size", geometry), Field("dilation", geometry),
               Field("groups", "nil"), Field("padding", "nil")]
        if isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            out.insert(6, Field("padding_out", "nil"))
        return out
    if isinstance(m, NORMS):
        out = []
        if getattr(m, "weight", None) is not None:
            out += [Field("gamma", "param", m, "weight"), Field("beta", "param", m, "bias")]
        if getattr(m, "running_mean", None) is not None:
            out += [Field("running_mean", "param", m, "running_mean"), Field("running_var", "param", m, "running_var")]
        if isinstance(m, nn.GroupNorm):
            out += [Field("num_groups", "nil"), Field("num_channels", "nil")]
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            out += [Field("momentum", "nil")]
        out += [Field("epsilon", "nil")]
        return out
    if isinstance(m, (nn.ModuleList, nn.Sequential)):
        return [Field(str(i), "module", child) for i, child in enumerate(m)]
    out = [Field(name, "param", m, name) for name, p in m._parameters.items() if p is not None]
    out += [Field(name, "param", m, name) for name, b in m._buffers.items()
            if b is not None and name not in m._non_persistent_buffers_set and name != "num_batches_tracked"]
    for name, child in m._modules.items():
        if child is None:
            continue
        if is_stateless(child) and not isinstance(child, (nn.ModuleList, nn.Sequential)):
            optional = getattr(m, "__burn_optional__", ())
            out.append(Field(name, "some_nil" if (v19 and name in optional) else "nil"))
        else:
            out.append(Field(name, "module", child))
    return out


def _param_ids(root: nn.Module) -> dict[str, str]:
    """ParamIds by record key path ("block.conv.weight"), kept on the module so a load→save keeps
    Burn's ids (byte-identical write-back) and survive `.to()`/`.double()`, which swap tensors."""
    ids = root.__dict__.get(IDS_ATTR)
    if not isinstance(ids, dict):
        ids = {}
        root.__dict__[IDS_ATTR] = ids
    return ids


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def module_to_record(module: nn.Module, settings: Any = None, version: str = "0.21.0",
                     lazy: bool = False) -> Any:
    """The record item of `module` (nested maps/lists/None, ParamSerde leaves).

    `lazy` leaves tensor bytes as `TensorBytes` for the streaming writers (no copy of the weights
    is held in memory); the default materialises them, for `into_record()` users.
    """
    ids = _param_ids(module)
    resolved = as_settings(settings) if settings is not None else None

    def encode(m: nn.Module, key: str) -> Any:
        if isinstance(m, (nn.ModuleList, nn.Sequential)):
            return [encode(c, _join(key, str(i))) if not is_stateless(c) else None for i, c in enumerate(m)]
        if is_stateless(m):
            return None
        out: dict[str, Any] = {}
        for f in fields(m, version):
            sub_key = _join(key, f.name)
            if f.kind == "param":
                t = getattr(f.module, f.attr).detach()  # type: ignore[arg-type]
                transpose = f.transpose and t.dim() == 2
                pid = ids.setdefault(sub_key, new_param_id())
                data = tensor_to_data(t, storage_dtype(t, resolved), version, transpose=transpose, lazy=lazy)
                out[f.name] = {"id": pid, "param": data}
            elif f.kind == "module":
                out[f.name] = encode(f.module, sub_key)  # type: ignore[arg-type]
            elif f.kind == "nil2":
                out[f.name] = [None, None]
            else:
                out[f.name] = None
        return out

    return encode(module, "")


def load_module_record(module: nn.Module, record: Any, path: Any = None, strict: bool = True) -> None:
    """Copy a record item's tensors into `module` (cast to each parameter's dtype and device).

    Checks every key and shape first-come and names the parameter in the RecordError; nothing in
    `module` changes unless the whole record checks out.
    """
    ids = _param_ids(module)
    found: dict[str, str] = {}
    transfers = Transfers()

    def load(m: nn.Module, item: Any, key: str) -> None:
        if isinstance(m, (nn.ModuleList, nn.Sequential)):
            if not isinstance(item, list) or len(item) != len(m):
                raise RecordError(f"expected a list of {len(m)} module records for {type(m).__name__}", path, key)
            for i, (child, sub) in enumerate(zip(m, item)):
                if not is_stateless(child):
                    load(child, sub, _join(key, str(i)))
            return
        if is_stateless(m):
            return
        if not isinstance(item, dict):
            raise RecordError(f"expected a map for {type(m).__name__}, got {type(item).__name__}", path, key)
        for f in fields(m):
            sub_key = _join(key, f.name)
            if f.kind == "param":
                param = item.get(f.name)
                if param is None:
                    if strict:
                        raise RecordError(f"missing parameter for {type(m).__name__}.{f.attr}", path, sub_key)
                    continue
                if not isinstance(param, dict) or "param" not in param:
                    raise RecordError("expected ParamSerde {id, param}", path, sub_key)
                pid = check_param_id(param["id"], path, sub_key) if "id" in param else None
                raw, dtype, recorded = check_data(param["param"], sub_key, path)
                target = getattr(f.module, f.attr)  # type: ignore[arg-type]
                transpose = f.transpose and len(recorded) == 2
                shape = tuple(recorded[::-1]) if transpose else tuple(recorded)
                if shape != tuple(target.shape):
                    raise RecordError(f"shape {list(shape)} in the record, model has {list(target.shape)}"
                                      + (" (Linear weights are stored [d_in, d_out])" if f.transpose else ""),
                                      path, sub_key)
                transfers.add(target, raw, dtype, recorded, transpose)
                if pid is not None:
                    found[sub_key] = pid
            elif f.kind == "module":
                if f.name not in item:
                    raise RecordError(f"missing module record for {type(f.module).__name__}", path, sub_key)
                load(f.module, item[f.name], sub_key)  # type: ignore[arg-type]

    load(module, record, "")
    transfers.run()
    ids.update(found)
