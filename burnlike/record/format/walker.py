"""The one walk of an `nn.Module` tree in Burn's record order, with burn-import's conventions.

A module is a struct of its fields in declaration order; parameters are `ParamSerde{id, param}`;
`nn.Linear` weights are stored transposed (`[d_in, d_out]`); norm layers' `weight/bias` are
`gamma/beta`; stateless modules and config fields are nil; `ModuleList`/`Sequential` are arrays.
Every codec (named MessagePack/JSON items both ways, bincode both ways) is a `Visitor` of this walk,
so those cases are decided here once.
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

FieldKind = Literal["param", "none", "nil", "nil2", "some_nil", "module"]


@dataclass
class Field:
    """One field of a module record, in Burn's declaration order.

    `kind`: "param" (a ParamSerde), "none" (an absent Option param, e.g. Linear without bias),
    "nil" (stateless / config), "nil2" (a `[nil, nil]` array: 0.19's Conv2d stride/kernel/dilation),
    "some_nil" (0.19's `Option<Stateless>` = Some(())), or "module".
    """

    name: str
    kind: FieldKind
    module: nn.Module | None = None  # the module holding the tensor, or the child module
    attr: str | None = None  # torch attribute holding the tensor
    transpose: bool = False
    optional: bool = False  # an `Option<Param>` in Burn (Linear/Conv bias)


def is_stateless(m: nn.Module) -> bool:
    return not any(True for _ in m.parameters()) and not any(True for _ in m.buffers())


def fields(m: nn.Module, version: str = DEFAULT_VERSION) -> list[Field]:
    """The record fields of a (stateful, non-list) module in order, standard layers as Burn's structs."""
    v19 = is_0_19(version)
    if isinstance(m, nn.Linear):
        return [Field("weight", "param", m, "weight", transpose=True),
                Field("bias", "param" if m.bias is not None else "none", m, "bias", optional=True)]
    if isinstance(m, nn.Embedding):
        return [Field("weight", "param", m, "weight")]
    if isinstance(m, CONVS):
        geometry: FieldKind = "nil2" if (v19 and isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))) else "nil"
        out = [Field("weight", "param", m, "weight"),
               Field("bias", "param" if m.bias is not None else "none", m, "bias", optional=True),
               Field("stride", geometry), Field("kernel_size", geometry), Field("dilation", geometry),
               Field("groups", "nil"), Field("padding", "nil")]
        if isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            out.insert(6, Field("padding_out", "nil"))
        return out
    if isinstance(m, NORMS):
        out = []
        if getattr(m, "weight", None) is not None:  # beta: an Option in Burn's LayerNorm(bias: false)
            out += [Field("gamma", "param", m, "weight"),
                    Field("beta", "param" if m.bias is not None else "none", m, "bias", optional=True)]
        if getattr(m, "running_mean", None) is not None:
            out += [Field("running_mean", "param", m, "running_mean"), Field("running_var", "param", m, "running_var")]
        if isinstance(m, nn.GroupNorm):
            out += [Field("num_groups", "nil"), Field("num_channels", "nil")]
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            out += [Field("momentum", "nil")]
        out += [Field("epsilon", "nil")]
        return out
    out = [Field(name, "param", m, name) for name, p in m._parameters.items() if p is not None]
    out += [Field(name, "param", m, name) for name, b in m._buffers.items()
            if b is not None and name not in m._non_persistent_buffers_set and name != "num_batches_tracked"]
    for name, child in m._modules.items():
        if child is None:
            continue
        if is_stateless(child) and not isinstance(child, LISTS):
            optional = getattr(m, "__burn_optional__", ())
            out.append(Field(name, "some_nil" if (v19 and name in optional) else "nil"))
        else:
            out.append(Field(name, "module", child))
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
