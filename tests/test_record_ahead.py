"""Saves prepare big tensors' bytes ahead on worker threads (burnlike.record.tensor.ahead): the
files must be byte-identical to a one-thread save, and the writers must ask in the prepared order."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from burnlike.record import BinFileRecorder, CompactRecorder, HalfPrecisionSettings, NamedMpkFileRecorder
from burnlike.record.format import module_record
from burnlike.record.tensor import ahead
from burnlike.record.tensor.layout import TensorBytes
from burnlike.record.tensor.precision import PrecisionSettings


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
    monkeypatch.setattr(ahead, "WORKERS", 0)
    one = recorder.save_module(model, tmp_path / "one").read_bytes()
    monkeypatch.setattr(ahead, "WORKERS", 2)
    two = recorder.save_module(model, tmp_path / "two").read_bytes()
    assert one == two
    threaded = used[-1]
    assert len(threaded.queue) == 4  # the four big weights; biases and the norm are written inline
    assert threaded.prepared + threaded.stolen == 4  # every big one came from the queue: the writer asked in order
    assert threaded.helped <= threaded.prepared
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


@pytest.mark.parametrize("recorder", [CompactRecorder(), BinFileRecorder(HalfPrecisionSettings)],
                         ids=lambda r: type(r).__name__)
def test_the_f16_range_check_runs_on_the_save_workers_and_still_keeps_f32(tmp_path, monkeypatch, recorder):
    """Which dtype a big weight is stored at is decided while its bytes are produced, on a worker
    (Burn writes a TensorData's bytes before its dtype): the main thread doesn't spend a pass over
    the weights before the first byte. The guard still holds: a weight beyond f16 stays f32."""
    model = Wide()
    with torch.no_grad():
        model.layers[1].weight[3, 5] = 1e5  # beyond f16's 65504
    deciders: list[str] = []
    original = module_record.storage_dtype

    def spy(t: torch.Tensor, settings: PrecisionSettings | None, cast: torch.Tensor | None = None) -> torch.dtype:
        if t.numel() >= 1024 * 1024:
            deciders.append(threading.current_thread().name)
        return original(t, settings, cast)

    monkeypatch.setattr(module_record, "storage_dtype", spy)
    monkeypatch.setattr(ahead, "WORKERS", 2)
    module_record.module_to_record(model, HalfPrecisionSettings, lazy=True)
    assert deciders == []  # building the record decides nothing: the writers' workers do
    path = recorder.save_module(model, tmp_path / "m")
    # once per big weight, while its bytes are produced: on a worker (or by the writer, for a job no
    # worker had started yet)
    assert len(deciders) == 3 and any(name.startswith("burnlike-save") for name in deciders), deciders
    loaded = Wide()
    recorder.load_module(loaded, path)
    assert loaded.layers[1].weight[3, 5].item() == 1e5
    assert torch.equal(loaded.layers[1].weight, model.layers[1].weight)  # f32: exact
    assert not torch.equal(loaded.layers[0].weight, model.layers[0].weight)  # f16: rounded
    assert torch.equal(loaded.layers[0].weight, model.layers[0].weight.half().float())


def test_the_writer_does_a_job_no_worker_has_started_instead_of_waiting(monkeypatch):
    """Workers busy elsewhere (here: held by a job of our own) must not stall the writer: it takes
    the queued jobs back and prepares them itself, with the same bytes."""
    release = threading.Event()

    class BusyPool(ahead.ThreadPoolExecutor):
        def __init__(self, workers: int, **kwargs: str) -> None:
            super().__init__(workers, **kwargs)
            for _ in range(workers):
                self.submit(release.wait, 60)  # bounded: a regression fails the asserts, it doesn't hang

    monkeypatch.setattr(ahead, "ThreadPoolExecutor", BusyPool)
    torch.manual_seed(2)
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16, transpose=True) for _ in range(4)]
    expected = [bytes(tb) for tb in tbs]
    try:
        with ahead.ViewsAhead(tbs, workers=2) as views:
            assert [bytes(views.view(tb)) for tb in tbs] == expected
            stolen, prepared = views.stolen, views.prepared
            release.set()  # before the workers are joined on leaving the `with`
    finally:
        release.set()
    assert (stolen, prepared) == (4, 0)


class Embedded(nn.Module):
    """A token embedding and a head whose bytes are several parts each when PART_BYTES is small."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.embedding = nn.Embedding(3000, 96)  # 576 KiB in f16, untransposed
        self.head = nn.Linear(96, 3000)  # transposed in Burn's layout
        with torch.no_grad():
            self.head.weight[7, 2] = 1e5  # beyond f16: this weight stays f32, decided once


@pytest.mark.parametrize(("recorder", "half"), [(CompactRecorder(), True), (NamedMpkFileRecorder(), False),
                                               (BinFileRecorder(HalfPrecisionSettings), True)],
                         ids=["CompactRecorder", "NamedMpkFileRecorder", "BinFileRecorder-half"])
def test_big_tensors_are_produced_in_parts_with_the_same_bytes_and_bounded_scratch(tmp_path, monkeypatch, recorder, half):
    """A save produces a big tensor's bytes in parts of about PART_BYTES (rows of the recorded
    tensor), shared out to the workers: the file is byte-identical to a whole-tensor save, each
    tensor's dtype is decided once, and no scratch buffer grows past a part."""
    model = Embedded()
    monkeypatch.setattr(ahead, "WORKERS", 0)
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 30)  # whole tensors
    whole = recorder.save_module(model, tmp_path / "whole").read_bytes()

    used: list[ahead.ViewsAhead] = []
    original = ahead.ViewsAhead.__enter__

    def spy(self: ahead.ViewsAhead) -> ahead.ViewsAhead:
        used.append(self)
        return original(self)

    decided: list[tuple[int, ...]] = []
    original_decide = module_record.storage_dtype

    def counting(t: torch.Tensor, settings: PrecisionSettings | None, cast: torch.Tensor | None = None) -> torch.dtype:
        decided.append(tuple(t.shape))
        return original_decide(t, settings, cast)

    monkeypatch.setattr(ahead.ViewsAhead, "__enter__", spy)
    monkeypatch.setattr(module_record, "storage_dtype", counting)
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "WORKERS", 2)
    parts = recorder.save_module(model, tmp_path / "parts").read_bytes()
    assert parts == whole
    views = used[-1]
    assert {id(job[0]) for job in views.queue} and len(views.queue) >= 16  # two tensors, many parts each
    assert views.prepared + views.stolen == len(views.queue)  # every part came from the queue, in order
    # each tensor decided once, though its parts ran on two threads: the embedding, the head's weight and bias
    assert sorted(decided) == ([(3000,), (3000, 96), (3000, 96)] if half else [])
    scratches = [*views.ring, views.inline, *views.temps._by_thread.values()]
    assert len(views.temps._by_thread) >= 2  # the writer's and the worker's: one per thread, not per slot
    biggest = max(buf.numel() for scratch in scratches for buf in scratch._bufs.values())
    assert biggest <= 2 * (1 << 16)  # a part at f32 at most (the head keeps f32), not a whole tensor
    loaded = Embedded()
    nn.init.zeros_(loaded.head.weight)
    recorder.load_module(loaded, tmp_path / "parts")
    assert loaded.head.weight[7, 2].item() == 1e5 and torch.equal(loaded.head.weight, model.head.weight)


def test_a_dtype_decided_wider_after_planning_keeps_the_plan(monkeypatch):
    """The parts are planned when the save starts, at the likely dtype. A tensor decided wider
    before the writer reaches it (here: a weight beyond f16 that stays f32, which then needs no
    cast at all) must still be served from the queue, part by part, and not make the writer drop
    the workers as if it had asked out of order."""
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    torch.manual_seed(4)
    wide, other = torch.randn(3000, 96), torch.randn(3000, 96)

    def make() -> list[TensorBytes]:
        return [TensorBytes(wide, torch.float16, decide=lambda t, cast: torch.float32),
                TensorBytes(other, torch.float16, transpose=True)]

    expected = [bytes(tb) for tb in make()]
    tbs = make()
    with ahead.ViewsAhead(tbs, workers=2) as views:
        assert [tb.dtype for tb in tbs] == [torch.float32, torch.float16]  # decided before the writer asks
        got = [b"".join(bytes(part) for part in views.parts(tb)) for tb in tbs]
        assert views.pool is not None  # still preparing ahead: nothing was out of order
        assert views.prepared + views.stolen == len(views.queue) > 2
    assert got == expected


def test_the_writer_makes_later_queued_parts_while_the_one_it_needs_is_being_made(monkeypatch):
    """With the worker still on the part the writer needs, the writer makes the queued later parts
    itself (into their own slots) instead of waiting; every part still comes out right, in order."""
    torch.manual_seed(5)
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16, transpose=True) for _ in range(5)]
    expected = [bytes(tb) for tb in tbs]
    started, release = threading.Event(), threading.Event()
    makers: list[tuple[int, str]] = []
    original = ahead._produce

    def produce(job: ahead.Job, scratch: ahead.Scratch, temps: ahead.Temps) -> memoryview:
        index = next(i for i, tb in enumerate(tbs) if tb is job[0])
        makers.append((index, threading.current_thread().name))
        if index == 0 and threading.current_thread() is not threading.main_thread():
            started.set()
            release.wait(10)  # bounded: without the help this times out and the asserts fail
        out = original(job, scratch, temps)
        if index == 2 and threading.current_thread() is threading.main_thread():
            release.set()  # the writer has made both queued parts: let the worker finish part 0
        return out

    monkeypatch.setattr(ahead, "_produce", produce)
    try:
        with ahead.ViewsAhead(tbs, workers=1) as views:
            assert started.wait(60)
            got = [bytes(views.view(tb)) for tb in tbs]
            helped = views.helped
    finally:
        release.set()
    assert got == expected
    assert helped == 2
    main = threading.main_thread().name
    assert (1, main) in makers and (2, main) in makers and (0, main) not in makers
