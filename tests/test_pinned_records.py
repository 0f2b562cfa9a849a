"""Strict loading, `map_location`, int widening and atomic writes of records (issue 17).

Hostile files are built here with msgpack directly from a valid record, so each test changes one
thing: a parameter left out, a byte appended, a tensor's bytes one element too long.
"""

import gzip
import os
from collections import OrderedDict
from pathlib import Path

import msgpack
import pytest
import torch
from torch import nn

from burnlike.module import Module
from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    load_checkpoint,
)
from burnlike.record.format import files


class Tiny(Module):
    def __init__(self, width: int = 3) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)


def randomised(module: nn.Module, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p))
    return module


def unpack(path: Path) -> dict:
    return msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)


def repack(path: Path, record: dict) -> None:
    path.write_bytes(msgpack.packb(record, use_bin_type=True))


def same_weights(a: nn.Module, b: nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# --- strict loading --------------------------------------------------------------------------------

@pytest.mark.parametrize(("module", "field", "how"), [("linear", "bias", "deleted"), ("linear", "bias", "nil"),
                                                      ("norm", "beta", "deleted"), ("linear", "weight", "nil")])
def test_a_record_missing_a_parameter_fails_naming_it_and_loads_nothing(tmp_path, module, field, how):
    path = randomised(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    if how == "deleted":
        del record["item"][module][field]
    else:
        record["item"][module][field] = None
    repack(path, record)
    dst = randomised(Tiny(), seed=1)
    before = {k: v.clone() for k, v in dst.state_dict().items()}
    owner = type(getattr(dst, module)).__name__  # the message names the module's own class
    with pytest.raises(RecordError, match=rf"at '{module}\.{field}'.*missing parameter for {owner}\."):
        dst.load_file(path, DefaultRecorder())
    assert all(torch.equal(before[k], v) for k, v in dst.state_dict().items())  # no partial load


def test_a_record_missing_a_whole_module_fails_naming_it(tmp_path):
    path = randomised(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    del record["item"]["norm"]
    repack(path, record)
    with pytest.raises(RecordError, match=r"at 'norm'.*missing module record for LayerNorm"):
        Tiny().load_file(path, DefaultRecorder())


@pytest.mark.parametrize("trailing", [b"\xc0", b"\x00", b"\x81\xa1a\x01"])
def test_bytes_after_the_messagepack_document_are_refused(tmp_path, trailing):
    path = randomised(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    path.write_bytes(path.read_bytes() + trailing)
    with pytest.raises(RecordError, match=rf"m\.mpk.*{len(trailing)} bytes of extra data"):
        Tiny().load_file(path, DefaultRecorder())
    with pytest.raises(RecordError, match="extra data"):
        DefaultRecorder().read_record(path)


def test_bytes_after_the_document_inside_gzip_are_refused(tmp_path):
    path = randomised(Tiny()).save_file(tmp_path / "m", NamedMpkGzFileRecorder())
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()) + b"\xc0"))
    with pytest.raises(RecordError, match="1 bytes of extra data"):
        Tiny().load_file(path, NamedMpkGzFileRecorder())


def test_bytes_after_a_checkpoint_document_are_refused(tmp_path):
    path = tmp_path / "c.ckpt"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(checkpoint(Tiny()), path)
    path.write_bytes(path.read_bytes() + b"\xc0")
    with pytest.raises(RecordError, match="extra data"):
        load_checkpoint(path)


@pytest.mark.parametrize("width", [3, 128], ids=["small", "streamed"])  # 128x128 f32 = 64 KiB: read lazily
@pytest.mark.parametrize("extra", [4, -4, 1])
def test_tensor_bytes_that_do_not_match_the_shape_are_refused(tmp_path, width, extra):
    path = randomised(Tiny(width)).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    data = record["item"]["linear"]["weight"]["param"]
    data["bytes"] = data["bytes"] + b"\0" * extra if extra > 0 else data["bytes"][:extra]
    repack(path, record)
    got = width * width * 4 + extra
    with pytest.raises(RecordError, match=rf"at 'linear\.weight'.*{got} bytes don't hold shape \[{width}, {width}\]"):
        Tiny(width).load_file(path, DefaultRecorder())


def checkpoint(model: nn.Module, drop: str | None = None) -> dict:
    """What Lightning saves for a StepModule(model): weights under `model.`, optimizer state beside."""
    state = OrderedDict((f"model.{k}", v.clone()) for k, v in model.state_dict().items() if k != drop)
    return {"epoch": 2, "global_step": 6, "pytorch-lightning_version": "2.5.0", "state_dict": state,
            "optimizer_states": [{"state": {0: {"step": torch.tensor(6.0), "exp_avg": torch.randn(3, 3)}},
                                  "param_groups": [{"lr": 0.1, "params": [0, 1, 2, 3]}]}],
            "loops": {"pair": (torch.arange(3), "x")}}


@pytest.mark.parametrize("drop", ["linear.bias", "norm.weight"])
def test_module_load_file_refuses_a_checkpoint_lacking_model_entries(tmp_path, drop):
    src = randomised(Tiny())
    path = tmp_path / "model-2.mpk"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(checkpoint(src, drop=drop), path)
    dst = randomised(Tiny(), seed=1)
    with pytest.raises(RecordError, match=rf"state_dict.*lacks 1 model entries, e.g. '{drop}'"):
        dst.load_file(path, DefaultRecorder())
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(checkpoint(src), path)  # complete: loads
    assert same_weights(dst.load_file(path, DefaultRecorder()), src)


# --- map_location ----------------------------------------------------------------------------------

def tensors(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in tensors(v)]
    return []


def to_meta(t: torch.Tensor, location: str) -> torch.Tensor:
    assert location == "cpu"  # where a decoded tensor is
    return t.to("meta")


MAP_LOCATIONS = {"str": "meta", "device": torch.device("meta"), "dict": {"cpu": "meta"}, "callable": to_meta}


@pytest.mark.parametrize("how", list(MAP_LOCATIONS))
@pytest.mark.parametrize("via", ["load_checkpoint", "plugin"])
def test_map_location_moves_every_tensor(tmp_path, how, via):
    path = tmp_path / "c.ckpt"
    io = RecorderCheckpointIO(CompactRecorder())
    io.save_checkpoint(checkpoint(randomised(Tiny())), path)
    read = load_checkpoint if via == "load_checkpoint" else io.load_checkpoint
    plain = read(path)
    moved = read(path, map_location=MAP_LOCATIONS[how])
    before, after = tensors(plain), tensors(moved)
    assert len(after) == len(before) == 7 and all(t.device.type == "cpu" for t in before)
    assert all(t.device.type == "meta" for t in after)
    assert [(t.shape, t.dtype) for t in after] == [(t.shape, t.dtype) for t in before]
    assert moved["epoch"] == 2 and isinstance(moved["loops"]["pair"], tuple) and moved["loops"]["pair"][1] == "x"


def test_a_map_location_dict_for_another_device_leaves_tensors_in_place(tmp_path):
    path = tmp_path / "c.ckpt"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(checkpoint(Tiny()), path)
    kept = load_checkpoint(path, map_location={"cuda:0": "meta"})
    assert all(t.device.type == "cpu" for t in tensors(kept))


# --- int tensors under half precision --------------------------------------------------------------

class Counts(Module):
    def __init__(self, values: list[int]) -> None:
        super().__init__()
        self.register_buffer("counts", torch.tensor(values, dtype=torch.int64))


@pytest.mark.parametrize(("values", "stored"), [([-40000, 7], "I32"), ([-32769], "I32"), ([32768], "I32"),
                                                ([-32768, 32767], "I16"), ([-(2**31) - 1, 1], "I64")])
def test_ints_beyond_i16_widen_under_half_precision(tmp_path, values, stored):
    path = Counts(values).save_file(tmp_path / "c", CompactRecorder())
    assert unpack(path)["item"]["counts"]["param"]["dtype"] == stored
    back = Counts([0] * len(values)).load_file(path, CompactRecorder())
    assert back.counts.tolist() == values


@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder(HalfPrecisionSettings), BinFileRecorder(HalfPrecisionSettings),
                                      PrettyJsonFileRecorder(HalfPrecisionSettings)], ids=lambda r: r.extension)
def test_ints_below_i16_read_back_exactly_in_every_half_format(tmp_path, recorder):
    path = Counts([-40000, 5, -5]).save_file(tmp_path / "c", recorder)
    assert Counts([0, 0, 0]).load_file(path, recorder).counts.tolist() == [-40000, 5, -5]


# --- atomic writes ---------------------------------------------------------------------------------

def save_module(path: Path, recorder) -> Path:
    return randomised(Tiny()).save_file(path, recorder, durable=True)


def save_checkpoint(path: Path, recorder) -> Path:
    target = path.with_suffix(".ckpt")
    RecorderCheckpointIO(recorder).save_checkpoint(checkpoint(randomised(Tiny())), target)
    return target


@pytest.mark.parametrize("save", [save_module, save_checkpoint])
@pytest.mark.parametrize("recorder", [DefaultRecorder(), NamedMpkGzFileRecorder(), BinFileRecorder()],
                         ids=lambda r: r.extension)
def test_the_file_is_fsynced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch, disk_calls, save,
                                                                     recorder):
    events = disk_calls
    (tmp_path / "m").mkdir()
    target = save(tmp_path / "m" / "model", recorder)
    monkeypatch.undo()
    renames = [i for i, e in enumerate(events) if e[0] == "replace"]
    assert len(renames) == 1 and events[renames[0]][3] == target
    inode = target.stat().st_ino
    assert events[renames[0]][1] == inode  # the temp file renamed is the file now at the target
    synced = [i for i, e in enumerate(events) if e == ("fsync", inode, "file")]
    assert synced and synced[0] < renames[0]  # its data reached the disk before the rename
    folder = (target.parent.stat().st_ino,)
    assert any(e[0] == "fsync" and e[1:] == (*folder, "dir") for e in events[renames[0]:])  # then the rename
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_burns_epoch_files_are_each_fsynced_before_their_rename(tmp_path, monkeypatch, disk_calls):
    """Burn's checkpointer files are deleted as newer epochs arrive, so each must be on the disk."""
    from burnlike.record.checkpoint.epoch_files import save_parts

    model = randomised(Tiny())
    save_parts(checkpoint(model), model, tmp_path, 2, DefaultRecorder())
    monkeypatch.undo()
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["model-2.mpk", "optim-2.mpk", "scheduler-2.mpk"]
    events = [e[:2] for e in disk_calls]  # (call, inode)
    for name in written:
        inode = (tmp_path / name).stat().st_ino
        assert events.index(("fsync", inode)) < events.index(("replace", inode)), name


def test_a_plain_save_is_atomic_without_waiting_for_the_disk(tmp_path, monkeypatch, disk_calls):
    """`save_file` as torch.save and Burn's recorders: no fsync, no writeback hints; still a temp
    file renamed over the target, whose bytes are the durable save's."""
    model = randomised(Tiny())
    durable = model.save_file(tmp_path / "durable", DefaultRecorder(), durable=True)
    disk_calls.clear()  # from here on
    monkeypatch.setattr(files, "_SYNC_FILE_RANGE", lambda *args: disk_calls.append(("writeback",)) or 0)
    monkeypatch.setattr(files, "WRITEBACK_STEP", 1)

    def events() -> list[str]:  # each call, a rename as whether its temp file was beside its target
        return [f"replace {c[2].parent == c[3].parent}" if c[0] == "replace" else c[0] for c in disk_calls]

    plain = model.save_file(tmp_path / "plain", DefaultRecorder())
    assert events() == ["replace True"]
    assert plain.read_bytes() == durable.read_bytes()
    # the same default a level down: Burn's recorder API, and the file writer itself
    DefaultRecorder().save_module(model, tmp_path / "module")
    DefaultRecorder().record({"x": 1}, tmp_path / "item")
    files.atomic_write(tmp_path / "raw", b"x" * 64)
    assert events() == ["replace True"] * 4
    model.save_file(tmp_path / "again", DefaultRecorder(), durable=True)
    assert "writeback" in events() and events().count("fsync") == 2  # the file, then its folder


class Unencodable:
    """Not a record value: the MessagePack writer fails on it after writing what came before."""


def fail_fsync(path: Path, monkeypatch) -> None:
    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    randomised(Tiny(), seed=2).save_file(path, DefaultRecorder(), durable=True)


def fail_mid_record(path: Path, monkeypatch) -> None:
    DefaultRecorder().record({"first": b"x" * (1 << 17), "then": Unencodable()}, path)


def fail_mid_tensor(path: Path, monkeypatch) -> None:
    model = randomised(Tiny(128), seed=2)  # a 64 KiB weight is streamed to the file first
    model.norm.to("meta")  # a tensor whose bytes can't be read
    model.save_file(path, DefaultRecorder())


@pytest.mark.parametrize("failure", [fail_fsync, fail_mid_record, fail_mid_tensor])
def test_a_failed_save_removes_its_temp_file_and_keeps_the_old_one(tmp_path, monkeypatch, failure):
    folder = tmp_path / "m"
    old = randomised(Tiny(128)).save_file(folder / "model", DefaultRecorder())
    content = old.read_bytes()
    with pytest.raises((OSError, RecordError, NotImplementedError, RuntimeError)):
        failure(folder / "model", monkeypatch)
    monkeypatch.undo()
    assert [p.name for p in folder.iterdir()] == ["model.mpk"]
    assert old.read_bytes() == content
