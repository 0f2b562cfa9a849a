"""Burn's step traits as Protocols: a model implements `train_step` and `valid_step` (or, in Burn
0.20's spelling, `inference_step`).

(Rust's two `step` methods become two names; Python has no overloading by trait.) Burn 0.20's
associated types `Input`/`Output` are the Protocol's parameters: `InferenceStep[MnistBatch,
ClassificationOutput]`, or the step method's annotations; the Learner checks the output type
against the registered metrics before training.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from burnlike.autodiff import Gradients, backward

B = TypeVar("B", contravariant=True)
O = TypeVar("O", covariant=True)  # noqa: E741
T = TypeVar("T")

__all__ = ["Gradients", "InferenceStep", "TrainOutput", "TrainStep", "ValidStep", "backward", "inference_fn"]


@dataclass
class TrainOutput(Generic[T]):
    """What `train_step` returns: the model, its lazy gradients and the output item for metrics."""

    model: Any
    grads: Gradients
    item: T


@runtime_checkable
class TrainStep(Protocol[B, T]):  # T, not O: TrainOutput (a mutable dataclass) is invariant in its item
    def train_step(self, batch: B) -> TrainOutput[T]: ...


@runtime_checkable
class ValidStep(Protocol[B, O]):
    def valid_step(self, batch: B) -> O: ...


@runtime_checkable
class InferenceStep(Protocol[B, O]):
    """Burn 0.20's name for `ValidStep` (also used by the evaluator): `inference_step(batch) -> O`."""

    def inference_step(self, batch: B) -> O: ...


def inference_fn(model: Any) -> Callable[[Any], Any]:
    """The model's inference step: `valid_step` (ValidStep) or `inference_step` (InferenceStep)."""
    for name in ("valid_step", "inference_step"):
        fn = getattr(model, name, None)
        if callable(fn):
            step: Callable[[Any], Any] = fn
            return step
    raise TypeError(
        f"{type(model).__name__} must implement valid_step(batch) (burnlike.train.ValidStep) or "
        "inference_step(batch) (burnlike.train.InferenceStep)"
    )
