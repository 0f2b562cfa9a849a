"""Burn's step traits as Protocols: a model implements `train_step`/`valid_step`.

(Rust's two `step` methods become two names; Python has no overloading by trait.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from burnlike.autodiff import Gradients, backward

B = TypeVar("B", contravariant=True)
O = TypeVar("O", covariant=True)  # noqa: E741
T = TypeVar("T")

__all__ = ["Gradients", "TrainOutput", "TrainStep", "ValidStep", "backward"]


@dataclass
class TrainOutput(Generic[T]):
    """What `train_step` returns: the model, its lazy gradients and the output item for metrics."""

    model: Any
    grads: Gradients
    item: T


@runtime_checkable
class TrainStep(Protocol[B, O]):
    def train_step(self, batch: B) -> TrainOutput[O]: ...


@runtime_checkable
class ValidStep(Protocol[B, O]):
    def valid_step(self, batch: B) -> O: ...
