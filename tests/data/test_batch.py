"""`burnlike.data.batch`: `TensorBatch`, the mixin that gives batch dataclasses `.to()` and
`.pin_memory()`. Every tensor field moves or is pinned (blocking unless `non_blocking=True` is asked
for), and the other fields (file paths, names) ride along unchanged, so Lightning and the DataLoader
treat such a batch like a tensor."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from burnlike.data import ByteTokenizer, TextClassificationBatcher
from burnlike.data.batch import TensorBatch
from tests.data.helpers import TorchCalls


@dataclasses.dataclass
class Tagged(TensorBatch):
    x: torch.Tensor
    y: torch.Tensor
    name: str


def test_batches_move_blocking_unless_asked_and_pin_every_tensor():
    tokens = TextClassificationBatcher(ByteTokenizer()).batch(["ab", "c"])  # tokens and mask_pad
    with TorchCalls() as calls:
        tokens.to("cpu")
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [False] * 2
    with TorchCalls() as calls:
        tokens.to("cpu", non_blocking=True)
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [True] * 2
    with TorchCalls() as calls:
        pinned_tokens = tokens.pin_memory()
    assert len(calls.pinned) == 2
    assert pinned_tokens.tokens is calls.pinned[0] and pinned_tokens.mask_pad is calls.pinned[1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning host memory needs a CUDA device")
def test_pin_memory_pins_every_tensor_and_keeps_the_rest():
    batch = Tagged(torch.randn(2, 3), torch.arange(2), "files 1-2")
    pinned = batch.pin_memory()
    assert pinned.x.is_pinned() and pinned.y.is_pinned() and pinned.name == "files 1-2"
    assert torch.equal(pinned.x, batch.x) and not batch.x.is_pinned()
