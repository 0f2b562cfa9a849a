"""`burnlike.record.tensor.buffers`: `Scratch` hands out views of one buffer per slot, reused
while it is big enough (a fresh multi-MB allocation page-faults on every save), and grown when not."""

from __future__ import annotations

import torch

from burnlike.record.tensor.buffers import Scratch


def test_a_scratch_slot_reuses_its_buffer_for_a_request_that_fits_and_grows_for_one_that_does_not():
    scratch = Scratch()
    first = scratch.get(0, torch.float32, (4, 8))
    smaller = scratch.get(0, torch.float16, [16])
    assert smaller.shape == (16,) and smaller.dtype == torch.float16
    assert smaller.data_ptr() == first.data_ptr()
    other_slot = scratch.get(1, torch.float32, (4, 8))
    assert other_slot.data_ptr() != first.data_ptr()
    grown = scratch.get(0, torch.float64, (4, 8))
    assert grown.shape == (4, 8) and scratch.get(0, torch.uint8, [256]).data_ptr() == grown.data_ptr()
