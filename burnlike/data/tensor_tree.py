"""Walk a batch's tensors: tensors, dataclasses (`MnistBatch`), tuples, lists and dicts of them.

One walker for everything that treats a batch as a tree of tensors: the device-resident loader
(index every tensor of the whole-dataset batch) and the CUDA-graph step (static copies of a batch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from torch import Tensor

B = TypeVar("B")


def map_tensors(fn: Callable[[Tensor], Tensor], batch: B) -> B:
    """`batch` with every tensor replaced by `fn(tensor)`; other leaves (ints, strings) kept."""
    return _map(fn, batch)  # type: ignore[no-any-return]


def tensors(batch: Any) -> list[Tensor]:
    """The tensors of `batch`, in `map_tensors`' order."""
    out: list[Tensor] = []

    def keep(t: Tensor) -> Tensor:
        out.append(t)
        return t

    _map(keep, batch)
    return out


def _map(fn: Callable[[Tensor], Tensor], node: Any) -> Any:
    if isinstance(node, Tensor):
        return fn(node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        fields = [f for f in dataclasses.fields(node) if f.init]
        return dataclasses.replace(node, **{f.name: _map(fn, getattr(node, f.name)) for f in fields})
    if isinstance(node, tuple) and hasattr(node, "_fields"):  # namedtuple
        return type(node)(*(_map(fn, v) for v in node))
    if isinstance(node, (tuple, list)):
        return type(node)(_map(fn, v) for v in node)
    if isinstance(node, dict):
        return type(node)((k, _map(fn, v)) for k, v in node.items())
    return node
