"""Saves prepare big tensors' bytes ahead on worker threads (burnlike.record.tensor.ahead): the
files must be byte-identical to a one-thread save, and the writers must ask in the prepared order."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from burnlike.record import BinFileRecorder, CompactRecorder, NamedMpkFileRecorder
from burnlike.record.tensor import ahead
from burnlike.record.tensor.layout import TensorBytes


class Wide(nn.Module):
    """Four Linear weights of 1 MiB or more in f16 (transposed in Burn's layout), plus small ones."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(3)])
        self.head = nn.Linear(1024, 512)
        self.norm = nn.LayerNorm(512)


@pytest.mark.parametrize("recorder", [CompactRecorder(), NamedMpkFileRecorder(), BinFileRecorder()],
                         ids=lambda r: type(r).__name__)
def test_save_with_workers_is_byte_identical_and_in_order(tmp_path, monkeypatch, recorder):
    model = Wide()
    used: list[ahead.ViewsAhead] = []
    original = ahead.ViewsAhead.__enter__

    def spy(self: ahead.ViewsAhead) -> ahead.ViewsAhead:
        used.append(self)
        return original(self)

    monkeypatch.setattr(ahead.ViewsAhead, "__enter__", spy)
    monkeypatch.setattr(ahead, "WORKERS", 1)
    one = recorder.save_module(model, tmp_path / "one").read_bytes()
    monkeypatch.setattr(ahead, "WORKERS", 2)
    two = recorder.save_module(model, tmp_path / "two").read_bytes()
    assert one == two
    threaded = used[-1]
    assert len(threaded.queue) == 4  # the four big weights; biases and the norm are written inline
    assert threaded.prepared == 4  # every big one came from a worker: the writer asked in order
    assert threaded.pool is None  # workers stopped


def test_out_of_order_requests_still_get_the_right_bytes():
    torch.manual_seed(1)
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16, transpose=True) for _ in range(4)]
    expected = [bytes(tb) for tb in tbs]
    with ahead.ViewsAhead(tbs, workers=2) as views:
        assert bytes(views.view(tbs[0])) == expected[0]
        assert bytes(views.view(tbs[2])) == expected[2]  # skips one: falls back to inline work
        assert views.pool is None
        assert bytes(views.view(tbs[1])) == expected[1]
        assert bytes(views.view(tbs[3])) == expected[3]


def test_an_error_while_writing_stops_the_workers():
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16) for _ in range(5)]
    views = ahead.ViewsAhead(tbs, workers=2)
    with pytest.raises(RuntimeError), views:
        views.view(tbs[0])
        raise RuntimeError("disk full")
    assert views.pool is None and not views.futures
