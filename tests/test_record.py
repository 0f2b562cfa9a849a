import base64
import math
import os
import subprocess
import sys
import warnings
from collections import OrderedDict
from functools import partial
from pathlib import Path

import msgpack
import pytest
import torch
from torch import nn

from burnlike.module import Module
from burnlike.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    Unstorable,
)
from burnlike.record.format import registry
from burnlike.record.tensor.precision import storage_dtype
from burnlike.record.tensor.tensor_data import data_to_tensor

RECORDERS = [NamedMpkFileRecorder, NamedMpkGzFileRecorder, PrettyJsonFileRecorder, JsonGzFileRecorder]
SETTINGS = [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings]


class Block(Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.norm = nn.BatchNorm2d(4)
        self.act = nn.ReLU()


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.block = Block()
        self.layers = nn.ModuleList([nn.Linear(4, 5), nn.LayerNorm(5), nn.Linear(5, 2, bias=False)])
        self.dropout = nn.Dropout(0.1)


def randomised(net: nn.Module) -> nn.Module:
    torch.manual_seed(1)
    with torch.no_grad():
        for t in list(net.parameters()) + [b for b in net.buffers() if b.is_floating_point()]:
            t.copy_(torch.randn_like(t))
    return net


@pytest.mark.parametrize("recorder_cls", RECORDERS)
@pytest.mark.parametrize("settings", SETTINGS)
def test_round_trip_every_recorder_and_precision(tmp_path, recorder_cls, settings):
    src, dst = randomised(Net()), Net()
    recorder = recorder_cls(settings)
    path = src.save_file(tmp_path / "model.whatever", recorder)
    assert path.name == f"model.{recorder.file_extension()}"
    dst.load_file(path, recorder)
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        if name.endswith("num_batches_tracked"):
            continue
        if settings is HalfPrecisionSettings:
            assert torch.equal(a.half().float(), b), name  # exactly f16 rounding
        else:
            assert torch.equal(a, b), name


def test_compact_file_is_burns_structure_field_by_field(tmp_path):
    net = randomised(Net())
    path = net.save_file(tmp_path / "model", CompactRecorder())
    raw = path.read_bytes()
    record = msgpack.unpackb(raw, raw=False, strict_map_key=False)
    assert list(record) == ["metadata", "item", "_b"] and record["_b"] == []
    assert record["metadata"] == {
        "float": "half::binary16::f16", "int": "i16",
        "format": "burn_core::record::file::NamedMpkFileRecorder<burn_core::record::settings::HalfPrecisionSettings>",
        "version": "0.21.0", "settings": "HalfPrecisionSettings",
    }
    assert list(record["metadata"]) == ["float", "int", "format", "version", "settings"]
    item = record["item"]
    assert list(item) == ["embed", "block", "layers", "dropout"] and item["dropout"] is None
    conv = item["block"]["conv"]
    assert list(conv) == ["weight", "bias", "stride", "kernel_size", "dilation", "groups", "padding"]
    assert conv["stride"] is None and conv["groups"] is None
    assert list(conv["weight"]) == ["id", "param"] and len(conv["weight"]["id"]) == 13
    base64.b32hexdecode(conv["weight"]["id"].upper() + "===")  # base32hex of 8 bytes
    assert conv["weight"]["param"]["shape"] == [4, 2, 3, 3] and conv["weight"]["param"]["dtype"] == "F16"
    assert list(conv["weight"]["param"]) == ["bytes", "shape", "dtype"] and isinstance(conv["weight"]["param"]["bytes"], bytes)
    norm = item["block"]["norm"]
    assert list(norm) == ["gamma", "beta", "running_mean", "running_var", "momentum", "epsilon"]
    assert item["block"]["act"] is None
    linear = item["layers"][0]
    assert linear["weight"]["param"]["shape"] == [4, 5]  # Linear stored [d_in, d_out]
    expected = net.layers[0].weight.detach().t().contiguous().half().numpy().tobytes()
    assert linear["weight"]["param"]["bytes"] == expected
    assert list(item["layers"][1]) == ["gamma", "beta", "epsilon"]
    assert item["layers"][2]["bias"] is None
    assert msgpack.packb(record, use_bin_type=True) == raw


def test_burn_0_19_layout_and_bool_dtype(tmp_path):
    path = randomised(Net()).save_file(tmp_path / "m", NamedMpkFileRecorder(burn_version="0.19.0"))
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    assert record["metadata"]["version"] == "0.19.0"
    assert record["item"]["block"]["conv"]["stride"] == [None, None]
    from burnlike.record.tensor.tensor_data import dtype_field

    assert dtype_field(torch.bool, "0.19.0") == "Bool" and dtype_field(torch.bool, "0.21.0") == {"Bool": "Native"}


def test_param_ids_survive_load_and_save(tmp_path):
    a = randomised(Net())
    first = msgpack.unpackb(a.save_file(tmp_path / "a", DefaultRecorder()).read_bytes(), raw=False)
    b = Net().load_file(tmp_path / "a.mpk", DefaultRecorder())
    second = msgpack.unpackb(b.save_file(tmp_path / "b", DefaultRecorder()).read_bytes(), raw=False)
    assert first["item"] == second["item"]


def test_ten_char_param_ids_are_read(tmp_path):
    src = randomised(Net())
    path = src.save_file(tmp_path / "m", DefaultRecorder())
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    record["item"]["embed"]["weight"]["id"] = "0123456789"  # older Burn writes 10-char ParamIds
    path.write_bytes(msgpack.packb(record, use_bin_type=True))
    dst = Net().load_file(path, DefaultRecorder())
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), dst.state_dict().values()))
    again = msgpack.unpackb(dst.save_file(tmp_path / "again", DefaultRecorder()).read_bytes(), raw=False)
    assert again["item"]["embed"]["weight"]["id"] == "0123456789"  # the id arrived and is written back
    assert again["item"] == record["item"]  # with every other id and byte


def test_half_precision_never_overflows_silently():
    settings = HalfPrecisionSettings()
    assert storage_dtype(torch.tensor([1.0, 70000.0]), settings) == torch.float32
    assert storage_dtype(torch.tensor([1.0, float("inf")]), settings) == torch.float16  # inf stays inf
    assert storage_dtype(torch.tensor([1, 40000]), settings) == torch.int32
    assert storage_dtype(torch.tensor([1, 2**40]), settings) == torch.int64
    assert storage_dtype(torch.tensor([1, 2]), settings) == torch.int16


def test_big_values_keep_their_value_in_a_compact_file(tmp_path):
    m = nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[1e6, 2049.0]]))
    m2 = nn.Linear(2, 1)
    recorder = CompactRecorder()
    path = recorder.save_module(m, tmp_path / "m")
    recorder.load_module(m2, path)
    assert m2.weight.tolist() == [[1e6, 2049.0]]  # kept at f32: no inf, no rounding


def test_shape_mismatch_names_the_parameter(tmp_path):
    path = randomised(Net()).save_file(tmp_path / "m", DefaultRecorder())
    other = Net()
    other.layers[0] = nn.Linear(4, 6)
    with pytest.raises(RecordError, match=r"layers\.0\.weight"):
        other.load_file(path, DefaultRecorder())


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"bytes": b"\0" * 3, "shape": [2], "dtype": "F32"}, "don't hold"),
        ({"bytes": b"\0" * 4, "shape": [1], "dtype": "F17"}, "unknown dtype"),
        ({"bytes": b"\0" * 4, "shape": [-1], "dtype": "F32"}, "non-negative"),
        ({"bytes": "text", "shape": [1], "dtype": "F32"}, "binary"),
        ({"bytes": b"", "shape": [2**40, 2**40], "dtype": "F64"}, "don't hold"),
    ],
)
def test_bad_tensor_data_is_a_record_error(data, needle):
    with pytest.raises(RecordError, match=needle):
        data_to_tensor(data, "x.weight", "f.mpk")


def test_checkpoint_values_round_trip_without_pickle(tmp_path):
    io = RecorderCheckpointIO(DefaultRecorder())
    ckpt = {
        "epoch": 3, "pytorch-lightning_version": "2.6.6",
        "state_dict": OrderedDict(w=torch.randn(3, 2), n=torch.tensor(7, dtype=torch.int64)),
        "optimizer_states": [{"state": {0: {"step": torch.tensor(5.0), "exp_avg": torch.randn(2)}},
                              "param_groups": [{"betas": (0.9, 0.999), "weight_decay": None, "params": [0, 1],
                                                "lr": float("inf")}]}],
        "loops": {"nan": float("nan"), 1.5: "float key", (1, 2): "tuple key"},
        "hparams": {"path": __import__("pathlib").Path("/x"), "dtype": torch.float16, "dev": torch.device("cpu")},
    }
    path = tmp_path / "epoch=0-step=1.ckpt"
    io.save_checkpoint(ckpt, path)
    assert path.exists() and not list(tmp_path.glob(".*tmp"))
    back = io.load_checkpoint(path)
    assert isinstance(back["state_dict"], OrderedDict) and torch.equal(back["state_dict"]["w"], ckpt["state_dict"]["w"])
    assert back["state_dict"]["n"].dtype == torch.int64
    state = back["optimizer_states"][0]
    assert list(state["state"]) == [0] and state["param_groups"][0]["betas"] == (0.9, 0.999)
    assert state["param_groups"][0]["lr"] == math.inf and state["param_groups"][0]["weight_decay"] is None
    assert math.isnan(back["loops"]["nan"]) and back["loops"][(1, 2)] == "tuple key" and back["loops"][1.5]
    assert back["hparams"] == {"path": "/x", "dtype": torch.float16, "dev": torch.device("cpu")}


def test_compact_checkpoint_keeps_optimizer_state_full_precision(tmp_path):
    io = RecorderCheckpointIO(CompactRecorder())
    tiny = torch.tensor([1e-8, 2049.0])
    io.save_checkpoint({"state_dict": {"w": tiny.clone()}, "optimizer_states": [{"exp_avg_sq": tiny.clone()}],
                        "pytorch-lightning_version": "x"}, tmp_path / "c.ckpt")
    back = io.load_checkpoint(tmp_path / "c.ckpt")
    assert back["state_dict"]["w"].dtype == torch.float16 and back["state_dict"]["w"].tolist() == [0.0, 2048.0]
    assert torch.equal(back["optimizer_states"][0]["exp_avg_sq"], tiny)
    io.save_checkpoint({"state_dict": {"w": tiny.clone()}, "pytorch-lightning_version": "x"}, tmp_path / ".temp.ckpt")
    assert torch.equal(io.load_checkpoint(tmp_path / ".temp.ckpt")["state_dict"]["w"], tiny)  # ddp_spawn transport


def test_unstorable_hparams_become_markers_with_a_warning(tmp_path):
    io = RecorderCheckpointIO(DefaultRecorder())
    ckpt = {"state_dict": {}, "pytorch-lightning_version": "x",
            "hyper_parameters": {"net": nn.Linear(1, 1), "opt": partial(torch.optim.SGD, lr=0.1), "cls": nn.Linear}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        io.save_checkpoint(ckpt, tmp_path / "c.ckpt")
    text = " ".join(str(w.message) for w in caught)
    assert "hyper_parameters.net" in text and "hyper_parameters.opt" in text and "hyper_parameters.cls" in text
    back = io.load_checkpoint(tmp_path / "c.ckpt")["hyper_parameters"]
    assert all(isinstance(v, Unstorable) for v in back.values())


def test_load_errors_are_record_errors(tmp_path):
    recorder = DefaultRecorder()
    with pytest.raises(RecordError, match="no such record"):
        recorder.read_record(tmp_path / "missing.mpk")
    (tmp_path / "bad.mpk").write_bytes(b"\xc1\xc1")
    with pytest.raises(RecordError, match="bad.mpk"):
        recorder.read_record(tmp_path / "bad.mpk")
    (tmp_path / "list.mpk").write_bytes(msgpack.packb([1, 2]))
    with pytest.raises(RecordError, match="not a Burn record"):
        recorder.read_record(tmp_path / "list.mpk")
    import gzip

    (tmp_path / "bomb.mpk.gz").write_bytes(gzip.compress(b"\0" * (1 << 22)))
    from burnlike.record.format.files import gunzip

    with pytest.raises(RecordError, match="inflates past"):
        gunzip((tmp_path / "bomb.mpk.gz").read_bytes(), tmp_path / "bomb.mpk.gz", limit=1 << 20)


SAVER = """
import sys, torch
from burnlike.record import DefaultRecorder
from burnlike.record.tensor.tensor_data import tensor_to_data
r = DefaultRecorder()
print("ready", flush=True)
while True:
    r.record({"w": tensor_to_data(torch.randn(4_000_000))}, sys.argv[1], exact_path=True)
"""


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_sigkill_during_save_never_leaves_a_torn_file(tmp_path):
    from burnlike.record.tensor.tensor_data import tensor_to_data

    target = tmp_path / "model-1.mpk"
    DefaultRecorder().record({"w": tensor_to_data(torch.zeros(4_000_000))}, target, exact_path=True)
    size = target.stat().st_size
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(target)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        while proc.poll() is None and not any(tmp_path.glob(".model-1.mpk.*")):
            pass  # a save is in flight once its temp file exists: kill it mid-write
        proc.kill()
        proc.wait()
        item = DefaultRecorder().load(target)  # always a whole record, old or new
        assert target.stat().st_size == size and len(item["w"]["bytes"]) == 16_000_000


def test_f16_policy_keeps_tensors_that_would_vanish_or_overflow(tmp_path):
    half = HalfPrecisionSettings()
    assert storage_dtype(torch.tensor([1e-8, -3e-8]), half) == torch.float32  # all would flush to 0
    assert storage_dtype(torch.tensor([1e-8, 1.0]), half) == torch.float16  # rounding at the tensor's scale
    assert storage_dtype(torch.zeros(3), half) == torch.float16
    assert storage_dtype(torch.tensor([1.0, float("nan")]), half) == torch.float16
    assert storage_dtype(torch.tensor([-70000.0, float("-inf")]), half) == torch.float32
    assert storage_dtype(torch.tensor([1.0, 70000.0], dtype=torch.float64), half) == torch.float64
    m, back = nn.Linear(2, 1), nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[1e-8, 3e-8]]))
    path = CompactRecorder().save_module(m, tmp_path / "tiny")
    CompactRecorder().load_module(back, path)
    assert torch.equal(back.weight, m.weight)


def test_streamed_bytes_equal_msgpack_packb(tmp_path):
    from burnlike.record.format.messagepack import write_msgpack
    from burnlike.record.format.module_record import module_to_record

    net = nn.Sequential(nn.Linear(300, 200), nn.Embedding(500, 64), nn.Linear(4, 2))  # bins above and below 64 KiB
    import io

    for settings in SETTINGS:
        eager = module_to_record(net, settings)
        lazy = module_to_record(net, settings, lazy=True)
        buf = io.BytesIO()
        write_msgpack({"item": lazy}, buf)
        assert buf.getvalue() == msgpack.packb({"item": eager}, use_bin_type=True)


def test_recorder_spellings_and_equality():
    assert NamedMpkFileRecorder[HalfPrecisionSettings]() == CompactRecorder() == NamedMpkFileRecorder(HalfPrecisionSettings())
    assert DefaultRecorder() == NamedMpkFileRecorder() and isinstance(CompactRecorder(), NamedMpkFileRecorder)
    assert CompactRecorder().metadata()["format"].startswith("burn_core::record::file::NamedMpkFileRecorder<")
    assert NamedMpkGzFileRecorder().path_for("a/model.mpk.gz").name == "model.mpk.gz"
    assert CompactRecorder().path_for("a/model.mpk.gz").name == "model.mpk"
    assert JsonGzFileRecorder().path_for("model").name == "model.json.gz"
    with pytest.raises(TypeError):
        NamedMpkFileRecorder("half")


ALL_RECORDERS = [*RECORDERS, BinFileRecorder, BinGzFileRecorder]


@pytest.mark.parametrize("recorder_cls", ALL_RECORDERS)
def test_the_registry_tells_every_format_from_its_bytes_alone(tmp_path, recorder_cls):
    """What `Module.load_file` without a recorder and `load_checkpoint` rely on (Lightning names
    every checkpoint `.ckpt`, whatever wrote it)."""
    net = randomised(Net())
    written = recorder_cls(HalfPrecisionSettings).save_module(net, tmp_path / "m")
    renamed = written.rename(tmp_path / "m.ckpt")
    assert registry.sniff(renamed) == recorder_cls()
    assert registry.sniff(written) == recorder_cls()  # gone: named by its extension
    loaded = Net().load_file(renamed)
    assert torch.equal(loaded.embed.weight, net.embed.weight.half().float())


def test_the_registry_names_recorders_as_burn_the_cli_and_the_app_do():
    assert registry.by_name("CompactRecorder") == registry.by_name("compact") == CompactRecorder()
    assert registry.by_name("DefaultRecorder") == registry.by_name("default") == DefaultRecorder()
    assert registry.by_name("CompactRecorder", "full") == DefaultRecorder()  # a precision overrides the alias'
    assert registry.by_name("bin_gz") == BinGzFileRecorder(HalfPrecisionSettings)
    assert registry.by_name("mpk_gz") == NamedMpkGzFileRecorder(HalfPrecisionSettings)
    assert registry.by_name("json", burn_version="0.19.0") == PrettyJsonFileRecorder(burn_version="0.19.0")
    assert registry.by_name("BinFileRecorder", "double") == BinFileRecorder(DoublePrecisionSettings)
    assert registry.by_extension("a/model.json.gz", "half") == JsonGzFileRecorder(HalfPrecisionSettings)
    assert registry.by_extension("model.safetensors") is None
    with pytest.raises(ValueError, match="unknown recorder 'pickle'.*compact"):
        registry.by_name("pickle")


def test_param_ids_survive_dtype_conversion(tmp_path):
    a = randomised(Net())
    first = msgpack.unpackb(a.save_file(tmp_path / "a", DefaultRecorder()).read_bytes(), raw=False)
    a.double().float()  # replaces buffers' tensors
    second = msgpack.unpackb(a.save_file(tmp_path / "b", DefaultRecorder()).read_bytes(), raw=False)
    assert first["item"]["block"]["norm"]["running_mean"]["id"] == second["item"]["block"]["norm"]["running_mean"]["id"]


@pytest.mark.parametrize("payload", [b"\x91" * 300 + b"\xc0", b"\x81\xa1k" * 300 + b"\xc0", b"\xdd\xff\xff\xff\xff",
                                     b"\xdf\x7f\xff\xff\xff\xc0", b"\xc7\x01\x05\x00", b"\xc1", b"\x83\xa1a\xc0"])
def test_hostile_msgpack_is_a_record_error(tmp_path, payload):
    path = tmp_path / "x.mpk"
    path.write_bytes(payload)
    with pytest.raises(RecordError, match="x.mpk"):
        DefaultRecorder().load(path)


def test_deep_json_and_gzip_bombs_are_record_errors(tmp_path, monkeypatch):
    import gzip

    from burnlike.record.format import files

    (tmp_path / "deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(RecordError):
        PrettyJsonFileRecorder().load(tmp_path / "deep.json")
    monkeypatch.setattr(files, "MIN_LIMIT", 1 << 16)
    (tmp_path / "bomb.mpk.gz").write_bytes(gzip.compress(b"\0" * (8 << 20)))  # ~1000:1
    with pytest.raises(RecordError, match="inflates past"):
        NamedMpkGzFileRecorder().load(tmp_path / "bomb.mpk.gz")


def test_bin_recorder_stores_training_checkpoints(tmp_path):
    net = randomised(Net())
    ckpt = {"state_dict": {f"model.{k}": v for k, v in net.state_dict().items()}, "pytorch-lightning_version": "2",
            "optimizer_states": [{"state": {0: {"step": torch.tensor(3.0)}}}]}
    for recorder in (BinFileRecorder(HalfPrecisionSettings), BinGzFileRecorder()):
        path = tmp_path / f"model-1.{recorder.file_extension()}"
        RecorderCheckpointIO(recorder).save_checkpoint(ckpt, path)
        back = RecorderCheckpointIO(recorder).load_checkpoint(path)
        assert back["optimizer_states"][0]["state"][0]["step"] == 3.0
        loaded = Net().load_file(path, recorder)
        assert torch.allclose(loaded.embed.weight, net.embed.weight, atol=1e-2)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_overwriting_a_record_releases_the_old_file(tmp_path):
    import threading

    net = randomised(Net())
    path = DefaultRecorder().save_module(net, tmp_path / "m")
    before = len(list(Path("/proc/self/fd").iterdir()))
    for _ in range(5):  # nothing (fd, thread) outlives a save
        DefaultRecorder().save_module(net, tmp_path / "m")
    assert len(list(Path("/proc/self/fd").iterdir())) == before
    assert not [t for t in threading.enumerate() if t.name.startswith("burnlike")]
    assert [p.name for p in tmp_path.iterdir()] == ["m.mpk"] and path.stat().st_nlink == 1
    assert torch.equal(Net().load_file(path, DefaultRecorder()).embed.weight, net.embed.weight)


def _save_twice_in_child(path: str, queue) -> None:
    net = nn.Linear(3, 2)
    DefaultRecorder().save_module(net, path)
    before = len(os.listdir("/proc/self/fd"))
    DefaultRecorder().save_module(net, path)
    queue.put(len(os.listdir("/proc/self/fd")) - before)


@pytest.mark.skipif(not Path("/proc/self/fd").exists() or sys.platform != "linux", reason="needs fork and /proc")
def test_a_forked_child_releases_replaced_files_too(tmp_path):
    import multiprocessing as mp

    DefaultRecorder().save_module(nn.Linear(3, 2), tmp_path / "parent")
    DefaultRecorder().save_module(nn.Linear(3, 2), tmp_path / "parent")
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_save_twice_in_child, args=(str(tmp_path / "child"), queue))
    child.start()
    try:
        assert queue.get(timeout=60) == 0
    finally:
        child.join(timeout=10)
        child.kill()
    assert child.exitcode == 0
