"""`burnlike.record.tensor.ahead`: `ViewsAhead`, which prepares a save's big tensors (decide f16
or wider, cast, transpose) on worker threads while the writer writes earlier ones.

Whatever the threads do, the file is byte-identical to a one-thread save and parts come out in
order: a request out of order drops the workers, an error stops them, and the writer makes a job
itself rather than wait for a busy worker. Big tensors are made in parts with bounded scratch;
each tensor's dtype is decided once, on a worker, and a tensor in parts found to need f32 after
its f16 parts were written is written again (a gzip stream, which can't go back, decides first)."""

from __future__ import annotations

import gzip
import threading

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
)
from burnlike.record.format import module_record
from burnlike.record.tensor import ahead
from burnlike.record.tensor.ahead import _AHEAD_BYTES, ViewsAhead
from burnlike.record.tensor.buffers import Scratch
from burnlike.record.tensor.layout import TensorBytes
from burnlike.record.tensor.precision import PrecisionSettings, storage_dtype
from tests.record.tensor.helpers import count_exact_passes, count_ops, needs_omp


def big(n: int = 1, extra: int = 0) -> list[TensorBytes]:
    """Tensors whose record bytes (an f16 cast) are `_AHEAD_BYTES` + `extra` each: prepared ahead."""
    return [TensorBytes(torch.full(((_AHEAD_BYTES + extra) // 2,), float(i)), torch.float16) for i in range(n)]


def expected_bytes(tb: TensorBytes) -> bytes:
    return bytes(tb.view(Scratch()))


def save_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("burnlike-save_")]


def record_views(monkeypatch: pytest.MonkeyPatch) -> list[ViewsAhead]:
    """Every `ViewsAhead` a save enters from here on, appended as it is entered."""
    used: list[ViewsAhead] = []
    original = ViewsAhead.__enter__

    def spy(self: ViewsAhead) -> ViewsAhead:
        used.append(self)
        return original(self)

    monkeypatch.setattr(ViewsAhead, "__enter__", spy)
    return used


class BigLinears(nn.Module):
    """Four Linear weights of 1 MiB or more in f16 (transposed in Burn's layout), plus small ones."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(3)])
        self.head = nn.Linear(1024, 512)
        self.norm = nn.LayerNorm(512)


class EmbeddingAndHead(nn.Module):
    """A token embedding and a head whose bytes are several parts each when PART_BYTES is small."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.embedding = nn.Embedding(3000, 96)  # 576 KiB in f16, untransposed
        self.head = nn.Linear(96, 3000)  # transposed in Burn's layout
        with torch.no_grad():
            self.head.weight[7, 2] = 1e5  # beyond f16: this weight stays f32, decided once


def embedding_and_head_with(value: float, where: str) -> nn.Module:
    """An embedding of 3000x96 (about 9 parts of 64 KiB in f16) and a Linear head (transposed), with
    `value` put at `where`: "last" (one value in the last part), "all" (every value), "middle"."""
    model = EmbeddingAndHead()
    with torch.no_grad():
        model.head.weight.normal_(0, 0.02)
        for w in (model.embedding.weight, model.head.weight.t()):  # rows as recorded
            if where == "all":
                w.fill_(value)
            else:
                w[-1 if where == "last" else w.shape[0] // 2, 5] = value
    return model


def use_small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of 64 KiB, prepared ahead from 64 KiB on, by one worker."""
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "WORKERS", 1)


# --- preparing views ahead ---


@pytest.mark.parametrize(("workers", "n", "ahead"), [(0, 3, 0), (1, 1, 0), (1, 2, 2), (1, 3, 3), (2, 3, 3)])
def test_views_are_prepared_ahead_only_with_a_worker_and_two_big_tensors(workers, n, ahead):
    order = big(n)
    with ViewsAhead(order, workers=workers) as views:
        assert (views.pool is not None) == bool(ahead)
        assert [bytes(views.view(tb)) for tb in order] == [expected_bytes(tb) for tb in order]
        assert views.prepared + views.stolen == ahead  # by a worker, or by the writer when no worker had started it


def test_save_workers_are_named_and_gone_once_closed():
    order = big(3)
    views = ViewsAhead(order, workers=2)
    assert len(save_threads()) >= 1
    views.close()
    assert save_threads() == []


def test_a_big_tensor_asked_out_of_order_stops_preparing_ahead():
    order = big(3)  # each exactly _AHEAD_BYTES
    with ViewsAhead(order, workers=2) as views:
        assert bytes(views.view(order[1])) == expected_bytes(order[1])
        assert views.pool is None
        assert [bytes(views.view(tb)) for tb in (order[0], order[2])] == [expected_bytes(order[0]),
                                                                          expected_bytes(order[2])]
        assert views.prepared == 0 and views.stolen == 0


def test_out_of_order_requests_fall_back_inline_with_the_right_bytes():
    torch.manual_seed(1)
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16, transpose=True) for _ in range(4)]
    expected = [bytes(tb) for tb in tbs]
    with ViewsAhead(tbs, workers=2) as views:
        assert bytes(views.view(tbs[0])) == expected[0]
        assert bytes(views.view(tbs[2])) == expected[2]  # skips one: falls back to inline work
        assert views.pool is None
        assert bytes(views.view(tbs[1])) == expected[1]
        assert bytes(views.view(tbs[3])) == expected[3]


def test_an_error_while_writing_stops_the_workers():
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16) for _ in range(5)]
    views = ViewsAhead(tbs, workers=2)
    with pytest.raises(RuntimeError), views:
        views.view(tbs[0])
        raise RuntimeError("disk full")
    assert views.pool is None and not views.futures


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
        with ViewsAhead(tbs, workers=2) as views:
            assert [bytes(views.view(tb)) for tb in tbs] == expected
            stolen, prepared = views.stolen, views.prepared
            release.set()  # before the workers are joined on leaving the `with`
    finally:
        release.set()
    assert (stolen, prepared) == (4, 0)


@pytest.mark.parametrize("recorder", [CompactRecorder(), NamedMpkFileRecorder(), BinFileRecorder()],
                         ids=lambda r: type(r).__name__)
def test_save_with_workers_is_byte_identical_and_in_order(tmp_path, monkeypatch, recorder):
    model = BigLinears()
    used = record_views(monkeypatch)
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


# --- tensors in parts ---


def test_views_ahead_joins_a_tensors_parts_for_view(monkeypatch):
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    torch.manual_seed(5)
    tbs = [TensorBytes(torch.randn(600, 200), torch.float16, transpose=True) for _ in range(2)]
    expected = [bytes(TensorBytes(tb.tensor, torch.float16, transpose=True)) for tb in tbs]
    with ViewsAhead(tbs, workers=2) as views:
        assert len(views.queue) > 2  # parts
        assert [bytes(views.view(tb)) for tb in tbs] == expected


def test_view_of_a_tensor_in_tentative_parts_found_wider_is_made_again_at_its_dtype(monkeypatch):
    """With `rewind`, a big tensor's parts come at the likely f16; a value beyond f16 in its last part
    keeps it f32, and `view` (all the bytes at once) then gives the f32 bytes, as a whole-tensor view."""
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    torch.manual_seed(6)
    weights = [torch.randn(600, 200) for _ in range(2)]
    weights[0][-1, 3] = 1e5

    def make() -> list[TensorBytes]:
        return [TensorBytes(w, torch.float16, decide=lambda t, peak: storage_dtype(t, HalfPrecisionSettings(), peak))
                for w in weights]

    expected = [expected_bytes(tb) for tb in make()]
    tbs = make()
    with ViewsAhead(tbs, workers=1, rewind=True) as views:
        assert len(views.queue) > 2  # parts
        assert [bytes(views.view(tb)) for tb in tbs] == expected
    assert [tb.dtype for tb in tbs] == [torch.float32, torch.float16]
    assert len(expected[0]) == 600 * 200 * 4


def test_the_writer_makes_later_queued_parts_while_the_one_it_needs_is_being_made(monkeypatch):
    """With the worker busy on the part the writer needs, the writer makes the queued later parts
    itself (into their own slots) instead of waiting; every part comes out right, in order."""
    torch.manual_seed(5)
    tbs = [TensorBytes(torch.randn(1024, 1024), torch.float16, transpose=True) for _ in range(5)]
    expected = [bytes(tb) for tb in tbs]
    started, release = threading.Event(), threading.Event()
    makers: list[tuple[int, str]] = []
    original = ahead._produce

    def produce(job: ahead.Job, scratch: ahead.Scratch, temps: ahead.Temps, tentative: bool = False) -> memoryview:
        index = next(i for i, tb in enumerate(tbs) if tb is job[0])
        makers.append((index, threading.current_thread().name))
        if index == 0 and threading.current_thread() is not threading.main_thread():
            started.set()
            release.wait(10)  # bounded: without the help this times out and the asserts fail
        out = original(job, scratch, temps, tentative)
        if index == 2 and threading.current_thread() is threading.main_thread():
            release.set()  # the writer has made both queued parts: let the worker finish part 0
        return out

    monkeypatch.setattr(ahead, "_produce", produce)
    try:
        with ViewsAhead(tbs, workers=1) as views:
            assert started.wait(60)
            got = [bytes(views.view(tb)) for tb in tbs]
            helped = views.helped
    finally:
        release.set()
    assert got == expected
    assert helped == 2
    main = threading.main_thread().name
    assert (1, main) in makers and (2, main) in makers and (0, main) not in makers


@needs_omp
def test_a_saves_part_is_made_with_whole_casts():
    """A save's job (cast, check, transpose of a 1024x1024 Linear weight) makes two copies, not one
    per 32K piece of the cast."""
    w = torch.randn(1024, 1024)
    tb = TensorBytes(w, torch.float16, transpose=True,
                     decide=lambda t, peak: storage_dtype(t, HalfPrecisionSettings(), peak))
    made: list[bytes] = []
    ops = count_ops(lambda: made.append(bytes(ahead._produce((tb, (0, tb.rows)), Scratch(), ahead.Temps()))))
    assert ops.copies == 2
    assert made[0] == w.t().contiguous().half().numpy().tobytes()


@pytest.mark.parametrize(("recorder", "half"), [(CompactRecorder(), True), (NamedMpkFileRecorder(), False),
                                               (BinFileRecorder(HalfPrecisionSettings), True)],
                         ids=["CompactRecorder", "NamedMpkFileRecorder", "BinFileRecorder-half"])
def test_big_tensors_are_produced_in_parts_with_the_same_bytes_and_bounded_scratch(tmp_path, monkeypatch, recorder, half):
    """A save produces a big tensor's bytes in parts of about PART_BYTES (rows of the recorded
    tensor), shared out to the workers: the file is byte-identical to a whole-tensor save, each
    tensor's dtype is decided once, and no scratch buffer grows past a part."""
    model = EmbeddingAndHead()
    monkeypatch.setattr(ahead, "WORKERS", 0)
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 30)  # whole tensors
    whole = recorder.save_module(model, tmp_path / "whole").read_bytes()

    used = record_views(monkeypatch)
    decided: list[tuple[int, ...]] = []
    original_decide = module_record.storage_dtype

    def counting(t: torch.Tensor, settings: PrecisionSettings | None, peak: int | None = None) -> torch.dtype:
        decided.append(tuple(t.shape))
        return original_decide(t, settings, peak)

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
    loaded = EmbeddingAndHead()
    nn.init.zeros_(loaded.head.weight)
    recorder.load_module(loaded, tmp_path / "parts")
    assert loaded.head.weight[7, 2].item() == 1e5 and torch.equal(loaded.head.weight, model.head.weight)


# --- deciding each tensor's dtype ---


@pytest.mark.parametrize("recorder", [CompactRecorder(), BinFileRecorder(HalfPrecisionSettings)],
                         ids=lambda r: type(r).__name__)
def test_the_f16_range_check_runs_on_the_save_workers_and_keeps_f32_beyond_f16(tmp_path, monkeypatch, recorder):
    """Which dtype a big weight is stored at is decided while its bytes are produced, on a worker
    (Burn writes a TensorData's bytes before its dtype): the main thread doesn't spend a pass over
    the weights before the first byte. The guard holds all the same: a weight beyond f16 stays f32."""
    model = BigLinears()
    with torch.no_grad():
        model.layers[1].weight[3, 5] = 1e5  # beyond f16's 65504
    deciders: list[str] = []
    original = module_record.storage_dtype

    def spy(t: torch.Tensor, settings: PrecisionSettings | None, peak: int | None = None) -> torch.dtype:
        if t.numel() >= 1024 * 1024:
            deciders.append(threading.current_thread().name)
        return original(t, settings, peak)

    monkeypatch.setattr(module_record, "storage_dtype", spy)
    monkeypatch.setattr(ahead, "WORKERS", 2)
    module_record.module_to_record(model, HalfPrecisionSettings, lazy=True)
    assert deciders == []  # building the record decides nothing: the writers' workers do
    path = recorder.save_module(model, tmp_path / "m")
    # once per big weight, while its bytes are produced: on a worker (or by the writer, for a job no
    # worker had started yet)
    assert len(deciders) == 3 and any(name.startswith("burnlike-save") for name in deciders), deciders
    loaded = BigLinears()
    recorder.load_module(loaded, path)
    assert loaded.layers[1].weight[3, 5].item() == 1e5
    assert torch.equal(loaded.layers[1].weight, model.layers[1].weight)  # f32: exact
    assert not torch.equal(loaded.layers[0].weight, model.layers[0].weight)  # f16: rounded
    assert torch.equal(loaded.layers[0].weight, model.layers[0].weight.half().float())


def test_a_dtype_decided_wider_after_planning_keeps_the_plan(monkeypatch):
    """The parts are planned when the save starts, at the likely dtype. A tensor decided wider
    before the writer reaches it (here: a weight beyond f16 that stays f32, which then needs no
    cast at all) must be served from the queue all the same, part by part, and not make the
    writer drop the workers as if it had asked out of order."""
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    torch.manual_seed(4)
    wide, other = torch.randn(3000, 96), torch.randn(3000, 96)

    def make() -> list[TensorBytes]:
        return [TensorBytes(wide, torch.float16, decide=lambda t, peak: torch.float32),
                TensorBytes(other, torch.float16, transpose=True)]

    expected = [bytes(tb) for tb in make()]
    tbs = make()
    with ViewsAhead(tbs, workers=2) as views:
        assert [tb.dtype for tb in tbs] == [torch.float32, torch.float16]  # decided before the writer asks
        got = [b"".join(bytes(part) for part in views.parts(tb)) for tb in tbs]
        assert views.pool is not None  # preparing ahead throughout: nothing was out of order
        assert views.prepared + views.stolen == len(views.queue) > 2
    assert got == expected


@pytest.mark.parametrize("recorder", [CompactRecorder(), BinFileRecorder(HalfPrecisionSettings)],
                         ids=lambda r: type(r).__name__)
@pytest.mark.parametrize(("value", "where", "kept"), [
    (1e5, "last", torch.float32),  # beyond f16, in the last part only: found after the other parts are out
    (1e-8, "all", torch.float32),  # all below f16's normal range
    (65504.0, "middle", torch.float16),  # f16's largest: the parts' casts can't tell, the exact pass keeps f16
    (0.5, "middle", torch.float16),  # ordinary: settled by the casts
])
def test_a_tensor_in_parts_is_decided_after_its_parts_and_written_again_when_wider(
        tmp_path, monkeypatch, recorder, value, where, kept):
    """Saved to a file, a big tensor's parts are made at f16 tentatively; its dtype is decided after
    the last part, from the parts' peaks. When it keeps f32, the writer goes back and writes it
    again: the file is byte-identical to a whole-tensor save either way, and loads the exact values.
    The exact pass runs only when the casts can't settle it, whether the tensor is made whole or in parts."""
    model = embedding_and_head_with(value, where)
    monkeypatch.setattr(ahead, "WORKERS", 0)
    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 30)
    passes = count_exact_passes(monkeypatch, min_numel=1 << 15)
    whole = recorder.save_module(model, tmp_path / "whole").read_bytes()
    expected = 2 if (value, where) != (0.5, "middle") else 0  # embedding and head; made whole, the same
    assert len(passes) == expected
    use_small_parts(monkeypatch)
    passes.clear()
    saved = recorder.save_module(model, tmp_path / "parts")
    assert saved.read_bytes() == whole
    assert len(passes) == expected
    loaded = EmbeddingAndHead()
    recorder.load_module(loaded, saved)
    for got, want in ((loaded.embedding.weight, model.embedding.weight), (loaded.head.weight, model.head.weight)):
        assert torch.equal(got, want.to(kept).float())


def test_a_gzipped_save_decides_before_the_first_part_and_needs_no_going_back(tmp_path, monkeypatch):
    """A gzip stream can't go back: there each big tensor in parts gets the exact pass before its
    first part, and the file inflates to the plain save's record (the metadata names the recorder)."""
    model = embedding_and_head_with(1e5, "last")
    use_small_parts(monkeypatch)
    plain = NamedMpkFileRecorder(HalfPrecisionSettings).save_module(model, tmp_path / "plain").read_bytes()
    passes = count_exact_passes(monkeypatch, min_numel=1 << 15)
    gz = NamedMpkGzFileRecorder(HalfPrecisionSettings).save_module(model, tmp_path / "gz")
    item = msgpack.unpackb(gzip.decompress(gz.read_bytes()))["item"]
    assert item == msgpack.unpackb(plain)["item"]
    assert item["embedding"]["weight"]["param"]["dtype"] == "F32"  # the 1e5 in its last part kept it wide
    assert len(passes) == 2
