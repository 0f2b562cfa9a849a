"""`.to()` and `.pin_memory()` for batch dataclasses, so Lightning and the DataLoader move and pin
them like tensors (fields that aren't tensors, such as file paths, ride along)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from torch import Tensor

B = TypeVar("B", bound="TensorBatch")

__all__ = ["TensorBatch"]


class TensorBatch:
    """Mixin for a dataclass batch: every `Tensor` field is moved or pinned, the rest copied as is."""

    def _map(self: B, fn: Any) -> B:
        changes = {f.name: fn(getattr(self, f.name)) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                   if isinstance(getattr(self, f.name), Tensor)}
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to(self: B, device: Any, non_blocking: bool = False) -> B:
        """A copy with every tensor on `device` (what Lightning calls to move a batch).

        Args:
            device: The device.
            non_blocking: Copy asynchronously where the source is pinned.
        """
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self: B) -> B:
        """A copy with every tensor in page-locked memory (what a pinning DataLoader calls)."""
        return self._map(lambda t: t.pin_memory())
