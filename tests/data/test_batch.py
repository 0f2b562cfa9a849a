"""TODO: docstring."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from burnlike.data import (
    ByteTokenizer,
    MnistBatch,
    TextClassificationBatcher,
)
from burnlike.data.batch import TensorBatch
from tests.data.helpers import TorchCalls


@dataclasses.dataclass
class Tagged(TensorBatch):
    x: torch.Tensor
    y: torch.Tensor
    name: str


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning host memory needs a CUDA device")
def test_pin_memory_pins_every_tensor_and_keeps_the_rest():
    batch = Tagged(torch.randn(2, 3), torch.arange(2), "files 1-2")
    pinned = batch.pin_memory()
    assert pinned.x.is_pinned() and pinned.y.is_pinned() and pinned.name == "files 1-2"
    assert torch.equal(pinned.x, batch.x) and not batch.x.is_pinned()
    mnist = MnistBatch(torch.randn(2, 1, 28, 28), torch.tensor([3, 4])).pin_memory()
    assert mnist.images.is_pinned() and mnist.targets.is_pinned() and mnist.targets.tolist() == [3, 4]


def test_batches_move_blocking_unless_asked_and_pin_every_tensor():
    tokens = TextClassificationBatcher(ByteTokenizer()).batch(["ab", "c"])
    mnist = MnistBatch(torch.zeros(1, 28, 28), torch.zeros(1, dtype=torch.int64))
    with TorchCalls() as calls:
        tokens.to("cpu")
        mnist.to("cpu")
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [False] * 4
    with TorchCalls() as calls:
        tokens.to("cpu", non_blocking=True)
        mnist.to("cpu", non_blocking=True)
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [True] * 4
    with TorchCalls() as calls:
        pinned_tokens = tokens.pin_memory()
        pinned_mnist = mnist.pin_memory()
    assert len(calls.pinned) == 4
    assert pinned_tokens.tokens is calls.pinned[0] and pinned_tokens.mask_pad is calls.pinned[1]
    assert pinned_mnist.images is calls.pinned[2] and pinned_mnist.targets is calls.pinned[3]
