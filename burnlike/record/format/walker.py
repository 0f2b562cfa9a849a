"""The one walk of an `nn.Module` tree in Burn's record order, with burn-import's conventions.

A module is a struct of its fields in declaration order; parameters are `ParamSerde{id, param}`;
`nn.Linear` weights are stored transposed (`[d_in, d_out]`); norm layers' `weight/bias` are
`gamma/beta`; stateless modules and config fields are nil; `ModuleList`/`Sequential` are arrays.
Every codec (named MessagePack/JSON items both ways, bincode both ways) is a `Visitor` of this walk,
so those cases are decided here once.

A module declares its own record, where torch's attributes don't say it, in one of two ways:
`burn_record_fields(version) -> list[Field]` (burnlike.nn's layers: Linear's layout, BatchNorm's
gamma/beta, an enum's variant), or a class attribute `__burn_fields__`: the field names in Burn's
declaration order, each resolved here (a parameter or persistent buffer, a child module, or nil for
a config value, a stateless module or a non-persistent buffer) — how a model ports a `model.rs`
struct with its `usize` fields. `__burn_optional__` names the `Option<...>` fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from torch import nn

from burnlike.record.tensor.version import DEFAULT_VERSION, is_0_19

NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm1d,
         nn.InstanceNorm2d, nn.InstanceNorm3d)
CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
LISTS = (nn.ModuleList, nn.Sequential)
ModuleArray: TypeAlias = nn.ModuleList | nn.Sequential  # Burn's `Vec<Module>`: a length-prefixed array

FieldKind = Literal["param", "none", "nil", "nils", "some_nil", "module"]


@dataclass
class Field:
    """One field of a module record, in Burn's declaration order.

    `kind`: "param" (a ParamSerde), "none" (an absent Option param or module, e.g. Linear without
    bias), "nil" (stateless / config), "nils" (an array of `width` nils: 0.19's `[usize; N]`, e.g.
    Conv2d stride/kernel/dilation), "some_nil" (0.19's `Option<Stateless>` = Some(())), or "module".
    `variant`: the index of a Burn enum's variant (an `Activation`): named formats write the field as
    a one-key map `{variant name: value}`, which is the field itself; bincode writes the index first.
    """

    name: str
    kind: FieldKind
    module: nn.Module | None = None  # the module holding the tensor, or the child module
    attr: str | None = None  # torch attribute holding the tensor
    transpose: bool = False
    optional: bool = False  # an `Option<...>` in Burn (Linear/Conv bias, an optional submodule)
    variant: int | None = None  # the enum variant's index (bincode's tag)
    width: int = 2  # the number of nils of a "nils" field


def declares_record(m: nn.Module) -> bool:
    """Whether the module says what its record is (`burn_record_fields`), even without a tensor."""
    return callable(getattr(m, "burn_record_fields", None))


def is_stateless(m: nn.Module) -> bool:
    if declares_record(m):
        return False
    return not any(True for _ in m.parameters()) and not any(True for _ in m.buffers())


def named_fields(m: nn.Module, names: tuple[str, ...] | list[str], version: str = DEFAULT_VERSION) -> list[Field]:
    """The fields `names` of `m` in that order: a parameter or persistent buffer is a param, a child
    module its record (nil when stateless; `Some(nil)`/`Option` per `__burn_optional__`), anything
    else (a config value, a non-persistent buffer, an absent attribute) nil."""
    optional = getattr(m, "__burn_optional__", ())
    out = []
    for name in names:
        if m._parameters.get(name) is not None:
            out.append(Field(name, "param", m, name))
        elif m._buffers.get(name) is not None and name not in m._non_persistent_buffers_set:
            out.append(Field(name, "param", m, name))
        elif name in m._modules:
            out.append(_child_field(m, name, m._modules[name], name in optional, version))
        else:
            out.append(Field(name, "nil"))
    return out


def _child_field(m: nn.Module, name: str, child: nn.Module | None, optional: bool, version: str) -> Field:
    if child is None:
        return Field(name, "none", optional=True) if optional else Field(name, "nil")
    if is_stateless(child) and not isinstance(child, LISTS):
        return Field(name, "some_nil" if (optional and is_0_19(version)) else "nil")
    return Field(name, "module", child, optional=optional)


def _undeclared(m: nn.Module, names: tuple[str, ...] | list[str]) -> list[str]:
    """Tensors and stateful children `__burn_fields__` leaves out (they would not be saved)."""
    tensors = [n for n, p in m._parameters.items() if p is not None]
    tensors += [n for n, b in m._buffers.items()
                if b is not None and n not in m._non_persistent_buffers_set and n != "num_batches_tracked"]
    tensors += [n for n, c in m._modules.items() if c is not None and not is_stateless(c)]
    return [n for n in tensors if n not in names]


def fields(m: nn.Module, version: str = DEFAULT_VERSION) -> list[Field]:
    """The record fields of a (stateful, non-list) module in order, standard layers as Burn's structs."""
    declared = getattr(m, "burn_record_fields", None)
    if callable(declared):
        own: list[Field] = declared(version)
        return own
    names = getattr(type(m), "__burn_fields__", None)
    if names is not None:
        missing = _undeclared(m, names)
        if missing:
            raise ValueError(f"{type(m).__name__}.__burn_fields__ leaves out {missing}: list every field of the "
                             "Burn struct, in its order, or those tensors are not saved")
        return named_fields(m, names, version)
    v19 = is_0_19(version)
    if isinstance(m, nn.Linear):
        return [Field("weight", "param", m, "weight", transpose=True),
                Field("bias", "param" if m.bias is not None else "none", m, "bias", optional=True)]
    if isinstance(m, nn.Embedding):
        return [Field("weight", "param", m, "weight")]
    if isinstance(m, CONVS):
        geometry: FieldKind = "nils" if (v19 and isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))) else "nil"
        out = [Field("weight", "param", m, "weight"),
               Field("bias", "param" if m.bias is not None else "none", m, "bias", optional=True),
               Field("stride", geometry), Field("kernel_size", geometry), Field("dilation", geometry),
               Field("groups", "nil"), Field("padding", "nil")]
        if isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            out.insert(6, Field("padding_out", "nil"))
        return out
    if isinstance(m, NORMS):
        # Burn's GroupNorm/InstanceNorm hold `Option<Param>`s (and an `affine` field), 0.21's LayerNorm
        # an optional beta: bincode tags them
        grouped = isinstance(m, (nn.GroupNorm, nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d))
        out = []
        if getattr(m, "weight", None) is not None or grouped:
            beta_optional = grouped or (isinstance(m, nn.LayerNorm) and not v19)
            out += [Field("gamma", "param" if getattr(m, "weight", None) is not None else "none", m, "weight",
                          optional=grouped),
                    Field("beta", "param" if getattr(m, "bias", None) is not None else "none", m, "bias",
                          optional=beta_optional)]
        if getattr(m, "running_mean", None) is not None:
            out += [Field("running_mean", "param", m, "running_mean"), Field("running_var", "param", m, "running_var")]
        if isinstance(m, nn.GroupNorm):
            out += [Field("num_groups", "nil"), Field("num_channels", "nil")]
        elif grouped:
            out += [Field("num_channels", "nil")]
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            out += [Field("momentum", "nil")]
        out += [Field("epsilon", "nil")]
        return out + [Field("affine", "nil")] if grouped else out
    out = [Field(name, "param", m, name) for name, p in m._parameters.items() if p is not None]
    out += [Field(name, "param", m, name) for name, b in m._buffers.items()
            if b is not None and name not in m._non_persistent_buffers_set and name != "num_batches_tracked"]
    optional = getattr(m, "__burn_optional__", ())
    for name, child in m._modules.items():
        if child is None and name not in optional:
            continue  # an empty slot that is no Burn field
        out.append(_child_field(m, name, child, name in optional, version))
    return out


def join(key: str, name: str) -> str:
    """A record key path: "block.conv.weight"."""
    return f"{key}.{name}" if key else name


N = TypeVar("N")  # what a visitor walks beside the module: the record item at this place, or nothing


class Visitor(Generic[N]):
    """What a codec does at each place of the walk. `node` is the codec's own cursor at that place
    (the record item being read from, or None); each method gets the record key path for errors.
    The defaults do nothing and return None."""

    def sequence(self, node: N, key: str, m: ModuleArray) -> None:
        """Before the entries of a `ModuleList`/`Sequential` (a length-prefixed array)."""

    def entry(self, node: N, index: int) -> N:
        """The node of a list's entry `index`."""
        return None  # type: ignore[return-value]

    def stateless(self, node: N, key: str) -> Any:
        """A stateless module as a list entry or the root (Burn's unit value)."""
        return None

    def struct(self, node: N, key: str, m: nn.Module) -> None:
        """Before the fields of a stateful module."""

    def child(self, node: N, key: str, field: Field) -> N:
        """The node of a "module" field."""
        return None  # type: ignore[return-value]

    def leaf(self, node: N, key: str, field: Field) -> Any:
        """A field that is not a module: a param, an absent param, or a nil."""
        return None


def walk(module: nn.Module, visitor: Visitor[N], root: N, version: str = DEFAULT_VERSION) -> Any:
    """Visit `module`'s record in order; returns the item shape (maps, lists, None) filled with what
    the visitor returned for each leaf and stateless module."""
    return _visit(visitor, version, module, root, "")


def _visit(visitor: Visitor[N], version: str, m: nn.Module, node: N, key: str) -> Any:
    """A module-level function, not a closure: a recursive closure is a reference cycle that kept
    each load's whole file buffer alive until the next full garbage collection."""
    if isinstance(m, LISTS):
        visitor.sequence(node, key, m)
        out = []
        for i, c in enumerate(m):  # a stateless entry is nil, even a list of stateless modules
            entry, entry_key = visitor.entry(node, i), join(key, str(i))
            out.append(visitor.stateless(entry, entry_key) if is_stateless(c)
                       else _visit(visitor, version, c, entry, entry_key))
        return out
    if is_stateless(m):
        return visitor.stateless(node, key)
    visitor.struct(node, key, m)
    record: dict[str, Any] = {}
    for f in fields(m, version):
        sub_key = join(key, f.name)
        if f.kind == "module":
            record[f.name] = _visit(visitor, version, f.module, visitor.child(node, sub_key, f), sub_key)  # type: ignore[arg-type]
        else:
            record[f.name] = visitor.leaf(node, sub_key, f)
    return record
