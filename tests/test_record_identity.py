"""Records' small contracts: a remote folder listed and globbed on fsspec's memory filesystem, paths,
recorders and precision settings as dict keys (equal ones hash alike) with readable reprs, and
stateless modules (`nn.ReLU` in a `Sequential`) written and read as bincode's one nil byte."""

import uuid

import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    RecordError,
)
from burnlike.record.format.location import RemotePath


@pytest.fixture
def folder():
    root = RemotePath(f"memory://burnlike-tests/{uuid.uuid4().hex}")
    yield root
    if root.exists():
        root.fs.rm(root.fs_path, recursive=True)


def test_a_remote_folder_lists_globs_and_sizes_its_files(folder):
    assert not folder.is_dir() and list(folder.iterdir()) == [] and list(folder.glob("*")) == []
    (folder / "model-1.mpk").write_bytes(b"12345")
    (folder / "model-2.mpk").write_bytes(b"1")
    (folder / "notes.txt").write_text("hello")
    (folder / "sub" / "deep.mpk").write_bytes(b"xyz")
    assert folder.is_dir() and (folder / "sub").is_dir() and not (folder / "notes.txt").is_dir()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["model-1.mpk", "model-2.mpk", "notes.txt", "sub"]
    assert all(p.parent == folder for p in folder.iterdir())
    assert sorted(p.name for p in folder.glob("model-*.mpk")) == ["model-1.mpk", "model-2.mpk"]
    assert [p.name for p in folder.glob("*.txt")] == ["notes.txt"]
    assert list(folder.glob("*.ckpt")) == []
    assert (folder / "model-1.mpk").size() == 5 and (folder / "notes.txt").size() == 5
    assert (folder / "model-2.mpk").size() == 1
    assert list((folder / "notes.txt").iterdir()) == []  # a file has no entries


def test_remote_paths_compare_and_hash_by_url(folder):
    a, b = folder / "x.mpk", RemotePath(str(folder) + "/x.mpk", {"skip_instance_cache": True})
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != folder / "y.mpk" and a != str(a) and len({a, b, folder / "y.mpk"}) == 2
    assert repr(RemotePath("memory://bucket/run/model.mpk")) == "RemotePath('memory://bucket/run/model.mpk')"
    assert repr(RemotePath("s3://bucket/")) == "RemotePath('s3://bucket')"  # one spelling per folder


def test_recorders_and_settings_are_dict_keys_with_readable_reprs():
    assert NamedMpkFileRecorder() == NamedMpkFileRecorder(FullPrecisionSettings)
    assert hash(NamedMpkFileRecorder()) == hash(NamedMpkFileRecorder(FullPrecisionSettings()))
    distinct = [NamedMpkFileRecorder(), NamedMpkFileRecorder(HalfPrecisionSettings),
                NamedMpkFileRecorder(burn_version="0.19.0"), BinFileRecorder(), BinGzFileRecorder()]
    assert len(set(distinct)) == 5 and len({hash(r) for r in distinct}) == 5
    assert {NamedMpkFileRecorder(HalfPrecisionSettings): "half"}[NamedMpkFileRecorder[HalfPrecisionSettings]()] == "half"
    assert repr(NamedMpkFileRecorder(HalfPrecisionSettings, burn_version="0.19.0")) == \
        "NamedMpkFileRecorder(HalfPrecisionSettings, burn_version='0.19.0')"
    assert repr(BinGzFileRecorder()).startswith("BinGzFileRecorder(FullPrecisionSettings, burn_version='0.")
    assert repr(DefaultRecorder()).startswith("DefaultRecorder(FullPrecisionSettings, ")
    assert hash(HalfPrecisionSettings()) == hash(HalfPrecisionSettings())
    settings = {FullPrecisionSettings(), HalfPrecisionSettings(), DoublePrecisionSettings(), HalfPrecisionSettings()}
    assert len(settings) == 3 and len({hash(s) for s in settings}) == 3


def mlp(stateless: nn.Module) -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, 3), stateless, nn.Linear(3, 1))


def test_a_stateless_entry_is_one_nil_byte_in_bincode(tmp_path):
    torch.manual_seed(0)
    model = mlp(nn.ReLU())
    path = model_path = tmp_path / "with_relu.bin"
    BinFileRecorder().save_module(model, model_path)
    twin = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    twin.load_state_dict({k.replace("2.", "1."): v for k, v in model.state_dict().items()})
    BinFileRecorder().save_module(twin, tmp_path / "without.bin")
    # the same record but for the ReLU: one more array entry, written as the nil byte 0x00
    assert path.stat().st_size == (tmp_path / "without.bin").stat().st_size + 1
    loaded = mlp(nn.ReLU())
    BinFileRecorder().load_module(loaded, path)
    assert all(torch.equal(x, y) for x, y in zip(loaded.state_dict().values(), model.state_dict().values()))
    x = torch.randn(4, 2)
    assert torch.equal(loaded(x), model(x))
    # a record whose entry 1 holds parameters is no stateless module: the reader names the entry
    BinFileRecorder().save_module(mlp(nn.Linear(3, 3)), tmp_path / "three.bin")
    with pytest.raises(RecordError, match=r"three.bin: at '1': expected a stateless field \(0x00\)"):
        BinFileRecorder().load_module(mlp(nn.Tanh()), tmp_path / "three.bin")
