"""`burnlike.record.tensor.transfer`: moving a checked record's tensors into a module. Big tensors
load on named load threads, big untransposed ones in parts shared between them; whatever the
threads, the stored dtype, the model's dtype or a strided parameter, each parameter gets exactly
the saved values (cast once), and a tied weight is loaded once, from its last entry."""

from __future__ import annotations

import threading

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    NamedMpkFileRecorder,
)
from burnlike.record.tensor import transfer
from tests.helpers.records import Net, randomised
from tests.record.helpers import Wide


class Tied(nn.Module):
    """A language-model head sharing the embedding matrix (GPT-2 style)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(1024, 768)
        self.head = nn.Linear(768, 1024, bias=False)
        self.head.weight = self.emb.weight


def test_a_compact_record_loads_into_a_float64_model(tmp_path):
    src = randomised(Net())
    path = src.save_file(tmp_path / "m", CompactRecorder())
    dst = Net().double()
    dst.load_file(path, CompactRecorder())
    assert dst.embed.weight.dtype == torch.float64
    assert torch.equal(dst.embed.weight, src.embed.weight.half().double())


@pytest.mark.parametrize("recorder", [CompactRecorder(), DefaultRecorder(), NamedMpkFileRecorder(DoublePrecisionSettings),
                                      BinFileRecorder()], ids=lambda r: type(r).__name__ + r.settings.float_dtype.__repr__())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_threaded_load_equals_the_saved_weights(tmp_path, recorder, dtype, monkeypatch):
    monkeypatch.setattr(transfer, "THREADS", 2)  # even on a one-core runner
    torch.manual_seed(0)
    saved = Wide()
    path = recorder.save_module(saved, tmp_path / "wide")
    stored = recorder.settings.float_dtype
    loaded = Wide(dtype)
    recorder.load_module(loaded, path)
    for (name, want), got in zip(saved.state_dict().items(), loaded.state_dict().values()):
        assert got.dtype == dtype and got.is_contiguous(), name
        assert torch.equal(got, want.to(stored).to(dtype)), name


def test_big_loads_run_on_named_load_threads(tmp_path, monkeypatch):
    model = nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512))
    path = DefaultRecorder().save_module(model, tmp_path / "m")
    names: list[str] = []
    run = transfer.Copy.run

    def spy(self: transfer.Copy, scratch: object) -> None:
        names.append(threading.current_thread().name)
        run(self, scratch)  # type: ignore[arg-type]

    monkeypatch.setattr(transfer.Copy, "run", spy)
    monkeypatch.setattr(transfer, "THREADS", 2)
    DefaultRecorder().load_module(nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512)), path)
    assert sum(n.startswith("burnlike-load") for n in names) == 2, names  # the two 2 MiB weights


@pytest.mark.parametrize("recorder", [CompactRecorder(), DefaultRecorder()], ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_big_untransposed_tensor_loads_in_parts_on_both_threads(tmp_path, recorder, dtype, monkeypatch):
    """An embedding bigger than PART_BYTES is read in parts, shared out to the load threads; the parts
    (the last one short) put every value where a whole read would."""
    monkeypatch.setattr(transfer, "THREADS", 2)
    monkeypatch.setattr(transfer, "_PARALLEL_BYTES", 1 << 14)
    monkeypatch.setattr(transfer, "PART_BYTES", 1 << 16)
    torch.manual_seed(0)
    saved = nn.Embedding(2003, 77)  # 154,231 values: 3 or 5 parts, the last short
    path = recorder.save_module(saved, tmp_path / "emb")
    loaded = nn.Embedding(2003, 77).to(dtype)
    groups: list[list[int]] = []
    run_all = transfer._run_all

    def spy(copies):
        groups.append([c.target.numel() for c in copies])
        run_all(copies)

    monkeypatch.setattr(transfer, "_run_all", spy)
    recorder.load_module(loaded, path)
    assert torch.equal(loaded.weight, saved.weight.to(recorder.settings.float_dtype).to(dtype))
    step = (1 << 16) // recorder.settings.float_dtype.itemsize
    parts = [step] * (2003 * 77 // step) + [2003 * 77 % step]
    assert sorted(n for g in groups for n in g) == sorted(parts)
    assert len([g for g in groups if g]) == 2  # both load threads got parts


def test_big_loads_go_largest_first_to_the_least_loaded_thread(tmp_path, monkeypatch):
    """Greedy largest-first balancing: four tables of 4, 3, 2 and 1 units split 4+1 and 3+2, so
    neither thread waits on the other (smallest first would give 1+3 against 2+4)."""
    monkeypatch.setattr(transfer, "THREADS", 2)
    monkeypatch.setattr(transfer, "_PARALLEL_BYTES", 1 << 16)
    rows = (256, 1024, 512, 768)  # x 128 f32: 128 KiB per unit, each read from the file at transfer time
    model = nn.Sequential(*(nn.Embedding(n, 128) for n in rows))
    path = DefaultRecorder().save_module(model, tmp_path / "tables")
    groups: list[list[int]] = []
    run_all = transfer._run_all

    def spy(copies):
        groups.append([c.target.shape[0] for c in copies])
        run_all(copies)

    monkeypatch.setattr(transfer, "_run_all", spy)
    DefaultRecorder().load_module(nn.Sequential(*(nn.Embedding(n, 128) for n in rows)), path)
    assert sorted(groups) == [[], [768, 512], [1024, 256]]  # the small ones' (none), then each thread's


def test_a_big_tensor_loads_into_a_strided_parameter(tmp_path, monkeypatch):
    """A parameter that is a transposed view (not contiguous) is filled whole, not through flat parts."""
    monkeypatch.setattr(transfer, "PART_BYTES", 256 * 1024)
    torch.manual_seed(3)
    source = nn.Embedding(1024, 512)
    path = DefaultRecorder().save_module(source, tmp_path / "emb")  # 2 MiB of f32: read in place
    target = nn.Embedding(1024, 512)
    target.weight = nn.Parameter(torch.zeros(512, 1024).t())
    assert not target.weight.is_contiguous()
    DefaultRecorder().load_module(target, path)
    assert torch.equal(target.weight, source.weight)


def test_tied_weights_load_once_from_the_last_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "THREADS", 2)
    torch.manual_seed(0)
    saved = Tied()
    path = DefaultRecorder().save_module(saved, tmp_path / "tied")
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    head = record["item"]["head"]["weight"]["param"]  # stored [d_in, d_out]: the transpose of emb
    head["bytes"] = (torch.frombuffer(bytearray(head["bytes"]), dtype=torch.float32) + 1).numpy().tobytes()
    path.write_bytes(msgpack.packb(record, use_bin_type=True))
    loaded = Tied()
    DefaultRecorder().load_module(loaded, path)
    assert loaded.head.weight is loaded.emb.weight
    assert torch.equal(loaded.emb.weight, saved.emb.weight + 1)  # the head entry came last and won


def test_a_parameter_of_the_records_dtype_is_read_straight_from_the_file(tmp_path, monkeypatch):
    """No scratch buffer between the file and a contiguous CPU parameter of the stored dtype; a
    parameter of another dtype goes through one (read, then cast). (A tensor of 64 KiB or more is
    read from the file at transfer time; smaller ones are already in memory.)"""
    from burnlike.record.tensor.buffers import Scratch

    used: list[torch.dtype] = []
    real_get = Scratch.get
    monkeypatch.setattr(Scratch, "get", lambda self, slot, dtype, shape: used.append(dtype) or real_get(self, slot, dtype, shape))
    torch.manual_seed(0)
    saved = nn.Embedding(256, 128)
    path = NamedMpkFileRecorder().save_module(saved, tmp_path / "emb")
    same = nn.Embedding(256, 128)
    NamedMpkFileRecorder().load_module(same, path)
    assert used == [] and torch.equal(same.weight, saved.weight)
    wider = nn.Embedding(256, 128).double()
    NamedMpkFileRecorder().load_module(wider, path)
    assert used == [torch.float32] and torch.equal(wider.weight, saved.weight.double())
