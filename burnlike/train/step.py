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

__all__ = ["Gradients", "InferenceStep", "TrainOutput", "TrainStep", "ValidStep", "backward", "implements",
           "inference_fn", "missing_step"]


@dataclass
class TrainOutput(Generic[T]):
    """What `train_step` returns: the model, its lazy gradients and the output item for metrics."""

    model: Any  # the model the step ran (Burn returns it: a step may replace it)
    grads: Gradients  # `backward(loss)`: the Learner runs the backward pass inside Lightning
    item: T  # the output the metrics read (`ClassificationOutput`, ...)


@runtime_checkable
class TrainStep(Protocol[B, T]):  # T, not O: TrainOutput (a mutable dataclass) is invariant in its item
    """Burn's `TrainStep<B, T>`: a model that trains on batches of `B` with outputs `T` (derive from
    it, `class Model(Module, TrainStep[MnistBatch, ClassificationOutput])`, or just define the method)."""

    def train_step(self, batch: B) -> TrainOutput[T]:
        """One training step: the forward pass and the loss, no optimizer step.

        Args:
            batch: What the training loader's batcher made.

        Returns:
            `TrainOutput(self, backward(loss), item)`.
        """
        ...


@runtime_checkable
class ValidStep(Protocol[B, O]):
    """Burn's `ValidStep<B, O>`: a model that validates on batches of `B` with outputs `O`."""

    def valid_step(self, batch: B) -> O:
        """One validation step, run in eval mode without gradients.

        Args:
            batch: What the validation loader's batcher made.

        Returns:
            The output item the validation metrics read.
        """
        ...


@runtime_checkable
class InferenceStep(Protocol[B, O]):
    """Burn 0.20's name for `ValidStep` (also used by the evaluator): `inference_step(batch) -> O`."""

    def inference_step(self, batch: B) -> O:
        """One inference step, as `ValidStep.valid_step`.

        Args:
            batch: What the loader's batcher made.

        Returns:
            The output item the metrics read.
        """
        ...


def implements(model: Any, name: str) -> bool:
    """Whether `model` has its own `name` step, not just the stub of the Protocol it derives from
    (`class Model(Module, TrainStep[B, O])` inherits a `train_step` that returns None).

    Args:
        model: The model.
        name: `"train_step"`, `"valid_step"` or `"inference_step"`.
    """
    fn = getattr(model, name, None)
    return callable(fn) and getattr(fn, "__func__", fn) is not _STUBS.get(name)


def missing_step(model: Any, *names: str) -> TypeError:
    """The error for a model without any of the steps `names`; it names the fix when the model
    defines Burn 0.21's `step` (Rust's `TrainStep::step` / `InferenceStep::step`).

    Args:
        model: The model that lacks them.
        *names: The step methods any one of which would do.

    Returns:
        The error to raise.
    """
    cls = type(model).__name__
    if callable(getattr(model, "step", None)):
        fix = " or ".join(f"{n}(batch) (Burn's {_TRAITS[n]}::step)" for n in names)
        return TypeError(f"{cls} defines step(batch), Burn 0.21's method name: define {fix} instead "
                         "(a Python class can't have a train and an inference `step`)")
    wanted = " or ".join(f"{n}(batch) (burnlike.train.{_TRAITS[n]})" for n in names)
    return TypeError(f"{cls} must implement {wanted}")


def inference_fn(model: Any) -> Callable[[Any], Any]:
    """The model's inference step: `valid_step` (ValidStep) or `inference_step` (InferenceStep).

    Args:
        model: The model.

    Raises:
        TypeError: It has neither (naming the fix when it defines Burn 0.21's `step`).
    """
    for name in ("valid_step", "inference_step"):
        if implements(model, name):
            step: Callable[[Any], Any] = getattr(model, name)
            return step
    raise missing_step(model, "valid_step", "inference_step")


_STUBS = {"train_step": TrainStep.train_step, "valid_step": ValidStep.valid_step,
          "inference_step": InferenceStep.inference_step}
_TRAITS = {"train_step": "TrainStep", "valid_step": "ValidStep", "inference_step": "InferenceStep"}
