"""`Module`: Burn's `Module` trait as a mixin for `torch.nn.Module`.

Mix it in first (`class Model(Module, nn.Module)` or simply `class Model(Module)`, since `Module`
already derives from `nn.Module`) to get Burn's module API: `save_file`/`load_file` with Burn's
recorders, `into_record`/`load_record`, `map(mapper)` and `visit(visitor)` over the parameters
(`ModuleMapper`, `ModuleVisitor`, `Param`), `valid()`, `no_grad()`, `num_params()`, `devices()`,
`fork(device)` and `to_device(device)`. `map_module` and `visit_module` do the same for any
`nn.Module`.

`map` and `visit` go through the module's record fields in Burn's order (the one walk the
recorders use, `burnlike.record.format.walker`): Burn's field names (a norm layer's `gamma`/`beta`),
its running statistics as float parameters (Burn's `RunningState`), each `Param` with the ParamId
its record has. The tensor handed over is the module's own, in torch's layout (`nn.Linear`'s weight
is `[out, in]`; Burn's record transposes it, the mapper does not see that).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
from torch import nn

if TYPE_CHECKING:
    from burnlike.record.format.location import AnyPath
    from burnlike.record.format.recorder import Recorder
    from burnlike.record.format.walker import Field, ModuleArray, Visitor
    from burnlike.record.tensor.precision import SettingsLike

_M = TypeVar("_M", bound="Module")
_N = TypeVar("_N", bound=nn.Module)

@dataclass(frozen=True)
class ParamMapper:
    """Burn's `ParamMapper` (the load/save transforms a `Param` carries): burnlike's parameters have
    none; it is here so `param.consume()` and `Param.from_mapped_value(id, tensor, mapper)` port."""


@dataclass
class Param:
    """Burn's `Param<Tensor>` as a mapper or visitor gets it: `id` (the ParamId, as the module's
    record writes it) and the tensor (`val()`)."""

    id: str  # the ParamId the module's record writes for this tensor
    tensor: torch.Tensor  # the module's own tensor, in torch's layout
    mapper: ParamMapper = field(default_factory=ParamMapper)  # Burn's load/save transforms: none here

    @classmethod
    def initialized(cls, id: str, value: torch.Tensor) -> Param:  # noqa: A002 - Burn's argument name
        """Burn's `Param::initialized(id, value)`: a parameter with no mapper.

        Args:
            id: The ParamId.
            value: The tensor.
        """
        return cls(id, value)

    @classmethod
    def from_mapped_value(cls, id: str, value: torch.Tensor, param_mapper: ParamMapper | None = None) -> Param:  # noqa: A002
        """What a mapper returns: the same id with the new tensor (whose `requires_grad` the
        parameter takes, as Burn's `require_grad` follows the value).

        Args:
            id: The id of the parameter handed to the mapper.
            value: The tensor to put in its place.
            param_mapper: The mapper `consume()` returned, if any.
        """
        return cls(id, value, param_mapper or ParamMapper())

    def val(self) -> torch.Tensor:
        """The tensor (Burn's `Param::val`)."""
        return self.tensor

    def consume(self) -> tuple[str, torch.Tensor, ParamMapper]:
        """`(id, tensor, mapper)`, Burn's `Param::consume`."""
        return self.id, self.tensor, self.mapper

    def map(self, func: Callable[[torch.Tensor], torch.Tensor]) -> Param:
        """Burn's `Param::map`: the same parameter with `func(tensor)`.

        Args:
            func: The new tensor from the old one.
        """
        return Param(self.id, func(self.tensor), self.mapper)

    def is_require_grad(self) -> bool:
        """Whether the tensor requires a gradient (Burn's `Param::is_require_grad`)."""
        return self.tensor.requires_grad


class ModuleVisitor:
    """Burn's `ModuleVisitor`: override what you need. `visit(visitor)` calls `enter_module(name,
    container_type)` before each field that holds parameters (`container_type` is
    `"Struct:<the struct's type>"`, or `"Vec"` with the index as name for a `ModuleList`/`Sequential`
    entry), `visit_float`/`visit_int`/`visit_bool(param)` for each tensor by its dtype, and
    `exit_module(name, container_type)` after."""

    def visit_float(self, param: Param) -> None:
        """A float parameter (or running statistic).

        Args:
            param: Its id and the module's tensor (read it; changing it in place changes the module).
        """

    def visit_int(self, param: Param) -> None:
        """An integer tensor of the record.

        Args:
            param: Its id and the module's tensor.
        """

    def visit_bool(self, param: Param) -> None:
        """A boolean tensor of the record.

        Args:
            param: Its id and the module's tensor.
        """

    def enter_module(self, name: str, container_type: str) -> None:
        """Before a field (or a list entry).

        Args:
            name: The field's name in Burn's record, or the entry's index.
            container_type: `"Struct:<type of the module holding it>"`, or `"Vec"` for a list entry.
        """

    def exit_module(self, name: str, container_type: str) -> None:
        """After that field.

        Args:
            name: As `enter_module` got it.
            container_type: As `enter_module` got it.
        """


class ModuleMapper:
    """Burn's `ModuleMapper`: `map(mapper)` calls `map_float`/`map_int`/`map_bool(param)` for each
    tensor (by dtype) and puts the returned `Param`'s tensor in its place, with `enter_module` /
    `exit_module` around each field as `ModuleVisitor` has them. The defaults return the parameter
    unchanged.

    The new value is copied into the parameter's storage when its shape, dtype and device are the
    same (an optimizer holding the parameter keeps working, as Burn's does by ParamId), else it
    replaces the parameter's data; `requires_grad` follows the returned tensor (Burn's
    `Param::from_mapped_value`)."""

    def map_float(self, param: Param) -> Param:
        """A float parameter (or running statistic) and what to put in its place.

        Args:
            param: Its id and the module's tensor.

        Returns:
            `Param.from_mapped_value(param.id, new_tensor)`, or `param` to leave it.
        """
        return param

    def map_int(self, param: Param) -> Param:
        """An integer tensor of the record and what to put in its place.

        Args:
            param: Its id and the module's tensor.

        Returns:
            The parameter to put in its place (`param` to leave it).
        """
        return param

    def map_bool(self, param: Param) -> Param:
        """A boolean tensor of the record and what to put in its place.

        Args:
            param: Its id and the module's tensor.

        Returns:
            The parameter to put in its place (`param` to leave it).
        """
        return param

    def enter_module(self, name: str, container_type: str) -> None:
        """Before a field (or a list entry).

        Args:
            name: The field's name in Burn's record, or the entry's index.
            container_type: `"Struct:<type of the module holding it>"`, or `"Vec"` for a list entry.
        """

    def exit_module(self, name: str, container_type: str) -> None:
        """After that field.

        Args:
            name: As `enter_module` got it.
            container_type: As `enter_module` got it.
        """


def visit_module(module: nn.Module, visitor: ModuleVisitor) -> None:
    """Burn's `module.visit(&mut visitor)`, for any `nn.Module`.

    Args:
        module: Any torch module; its record fields are walked in Burn's order.
        visitor: Gets each tensor and each field's enter/exit.
    """
    _walk(module, visitor, None)


def map_module(module: _N, mapper: ModuleMapper) -> _N:
    """Burn's `module.map(&mut mapper)`, for any `nn.Module`: the module, its tensors mapped in place.

    Args:
        module: Any torch module; its record fields are walked in Burn's order.
        mapper: Returns each tensor's replacement.

    Raises:
        TypeError: A `map_*` method returned something other than a `Param` holding a tensor.
    """
    _walk(module, mapper, mapper)
    return module


class Module(nn.Module):
    """An `nn.Module` with Burn's `Module` trait: records, mappers and visitors, inference helpers."""

    def visit(self, visitor: ModuleVisitor) -> None:
        """Visit each tensor of the module's record (Burn's `Module::visit`).

        Args:
            visitor: Gets each tensor and each field's enter/exit.
        """
        visit_module(self, visitor)

    def map(self: _M, mapper: ModuleMapper) -> _M:
        """Map each tensor of the module's record in place and return the module (Burn's
        `Module::map`, which consumes and returns it: `critic = critic.map(clip)` ports as is).

        Args:
            mapper: Returns each tensor's replacement.
        """
        return map_module(self, mapper)

    def num_params(self) -> int:
        """Burn's `Module::num_params`: the elements of every float tensor its record holds, running
        statistics included as Burn counts them (torch's `parameters()` leaves those out)."""
        counter = _CountFloats()
        self.visit(counter)
        return counter.count

    def no_grad(self: _M) -> _M:
        """Burn's `Module::no_grad`: no parameter requires a gradient any more (kept through
        `valid()`); the module itself, for partial fine-tuning."""
        self.requires_grad_(False)
        return self

    def valid(self: _M) -> _M:
        """A detached inference copy: eval mode (dropout off, batch norm on its running statistics),
        no autograd (Burn's `AutodiffModule::valid`).

        A copy, not `self.eval()`, so a custom loop that keeps training `self` afterwards keeps its
        dropout and batch-norm in training mode, exactly as in Burn.
        """
        clone = copy.deepcopy(self)
        clone.eval()
        clone.requires_grad_(False)
        return clone

    def devices(self) -> list[torch.device]:
        """Burn's `Module::devices`: every device the module's tensors are on, without duplicates."""
        seen: list[torch.device] = []
        for t in list(self.parameters()) + list(self.buffers()):
            if t.device not in seen:
                seen.append(t.device)
        return seen

    def fork(self: _M, device: torch.device | str | int) -> _M:
        """Burn's `Module::fork`: the module on `device`, its parameters leaves of their own graph
        (torch moves them in place, the module is returned).

        Args:
            device: A torch device, its name (`"cuda:0"`) or a CUDA index.
        """
        return self.to(device)

    def to_device(self: _M, device: torch.device | str | int) -> _M:
        """Burn's `Module::to_device`. Burn keeps the move on the autodiff graph; a torch module's
        parameters are always leaves, so this is `fork`: `module.to(device)`.

        Args:
            device: A torch device, its name (`"cuda:0"`) or a CUDA index.
        """
        return self.to(device)

    # Records -----------------------------------------------------------------------------------
    def save_file(self, path: str | Path, recorder: Recorder | None = None, *, durable: bool = False) -> AnyPath:
        """Save the weights with `recorder` (default `DefaultRecorder`); the extension is replaced
        by the recorder's, like Burn's `FileRecorder`. Returns the path written (`path` may be an
        fsspec URL such as `s3://bucket/model`: a `RemotePath` then). Always atomic (temp file,
        rename); `durable=True` also waits until the file is on the disk (fsync), as checkpoints do.

        Args:
            path: Where to write, a local path or an fsspec URL; its extension is replaced.
            recorder: The format and precision; `DefaultRecorder()` (full-precision named MessagePack)
                when None.
            durable: fsync the file before the rename and its folder after.

        Returns:
            The path written, with the recorder's extension.
        """
        from burnlike.record import DefaultRecorder

        return (recorder or DefaultRecorder()).save_module(self, path, durable=durable)

    def load_file(
        self: _M, path: str | Path, recorder: Recorder | None = None, device: torch.device | str | None = None
    ) -> _M:
        """Load weights in place from a record or a burnlike training checkpoint and return self
        (`recorder` None: the format is told from the file).

        Args:
            path: A record Burn or burnlike wrote (with or without its extension), or a training
                checkpoint (`trainer-N`, a Lightning `.ckpt`).
            recorder: The recorder that wrote it, to read only that format; None tells the format
                from the file's bytes.
            device: Move the module there once loaded; None leaves it where it is (each tensor is
                loaded onto its parameter's device).

        Raises:
            RecordError: The file is not a record of this module (a missing or extra field, a
                shape that differs), naming the file and the key.
        """
        from burnlike.record.checkpoint.weights import load_weights

        load_weights(self, path, recorder, device)
        return self

    def into_record(self, settings: SettingsLike = None) -> dict[str, Any]:
        """The module's Burn record item (nested dict of `ParamSerde`/`TensorData`).

        Args:
            settings: The precision to record floats at (Burn's `PrecisionSettings`, a class or an
                instance); full precision when None.
        """
        from burnlike.record.format.module_record import module_to_record

        record: dict[str, Any] = module_to_record(self, settings)
        return record

    def load_record(self: _M, record: dict[str, Any]) -> _M:
        """Load a record item (what `into_record` or a recorder's `load` returns) in place and return
        the module (Burn's `Module::load_record`).

        Args:
            record: The record item, at any precision.

        Raises:
            RecordError: The record does not fit the module, naming the key.
        """
        from burnlike.record.format.module_record import load_module_record

        load_module_record(self, record)
        return self


class _CountFloats(ModuleVisitor):
    def __init__(self) -> None:
        self.count = 0

    def visit_float(self, param: Param) -> None:
        self.count += param.tensor.numel()


def _walk(module: nn.Module, visitor: ModuleVisitor | ModuleMapper, mapper: ModuleMapper | None) -> None:
    """Drive `visitor` (or `mapper`) through the record walk, with Burn's enter/exit calls. (The
    record modules load here, on first use: importing `burnlike.module` stays light.)"""
    from burnlike.record.format.module_record import param_ids
    from burnlike.record.format.walker import walk

    tour = _Tour(visitor, mapper, param_ids(module))
    walk(module, cast("Visitor[str]", tour), "")
    tour.close("")


def _kind(t: torch.Tensor) -> str:
    if t.is_floating_point() or t.is_complex():
        return "float"
    return "bool" if t.dtype == torch.bool else "int"


class _Tour:
    """The record walk's visitor (`walker.Visitor[str]`, all its methods) whose node is the record key
    path of the place being walked; it opens a Burn scope (`enter_module`) at each field or list entry
    and closes the scopes that the next place is not inside of (`exit_module`)."""

    def __init__(self, visitor: ModuleVisitor | ModuleMapper, mapper: ModuleMapper | None,
                 ids: dict[str, str]) -> None:
        self.visitor, self.mapper, self.ids = visitor, mapper, ids
        self.types: dict[str, str] = {}  # struct key path -> its type name
        self.open: list[tuple[str, str, str]] = []  # (key path, name, container type)

    def close(self, key: str) -> None:
        """Exit every open scope `key` is not inside of."""
        while self.open and not key.startswith(self.open[-1][0] + "."):
            _, name, container = self.open.pop()
            self.visitor.exit_module(name, container)

    def enter(self, key: str, name: str, container: str) -> None:
        self.close(key)
        self.open.append((key, name, container))
        self.visitor.enter_module(name, container)

    def sequence(self, node: str, key: str, m: ModuleArray) -> None:
        """Before a list's entries: each entry is entered on its own."""

    def stateless(self, node: str, key: str) -> Any:
        return None

    def struct(self, node: str, key: str, m: nn.Module) -> None:
        self.types[key] = type(m).__name__

    def entry(self, node: str, index: int) -> str:
        key = f"{node}.{index}" if node else str(index)
        self.enter(key, str(index), "Vec")
        return key

    def child(self, node: str, key: str, field: Field) -> str:
        self.enter(key, field.name, f"Struct:{self.types.get(node, '')}")
        return key

    def leaf(self, node: str, key: str, field: Field) -> Any:
        if field.kind not in ("param", "none"):
            return None  # a config field or stateless module: Burn visits nothing there
        self.enter(key, field.name, f"Struct:{self.types.get(node, '')}")
        if field.kind == "none":  # an absent Option<Param>: entered and left, nothing visited
            return None
        tensor: torch.Tensor = getattr(field.module, field.attr)  # type: ignore[arg-type]
        param = Param(self.ids.setdefault(key, _new_param_id()), tensor)
        kind = _kind(tensor)
        if self.mapper is None:
            getattr(self.visitor, f"visit_{kind}")(param)
            return None
        out = getattr(self.mapper, f"map_{kind}")(param)
        if not isinstance(out, Param):
            raise TypeError(f"{type(self.mapper).__name__}.map_{kind} must return a Param "
                            f"(Param.from_mapped_value(id, tensor, mapper)), got {type(out).__name__} for {key!r}")
        _put(field.module, field.attr, tensor, out.tensor)  # type: ignore[arg-type]
        return None


def _new_param_id() -> str:
    from burnlike.record.format.module_record import new_param_id

    return new_param_id()


def _put(module: nn.Module, attr: str, old: torch.Tensor, new: torch.Tensor) -> None:
    """Put a mapped value in place of `module.<attr>`: into its storage when it fits, else as its data."""
    if not isinstance(new, torch.Tensor):
        raise TypeError(f"a mapped parameter must hold a tensor, got {type(new).__name__} for {attr!r}")
    if new is not old:
        with torch.no_grad():
            if new.shape == old.shape and new.dtype == old.dtype and new.device == old.device:
                old.copy_(new)
            elif attr in module._parameters:
                old.data = new.detach()
            else:
                module._buffers[attr] = new.detach()
    if attr in module._parameters and old.is_floating_point():
        old.requires_grad_(new.requires_grad)
