"""`burnlike.record.format.recorder`: what every file recorder shares. Recorders compare, hash
and print by format, precision and Burn version (Burn's generic spelling included); paths get the
recorder's extension; every recorder round-trips every precision; a save guesses its file's size
for preallocation; reads refuse what is not a Burn record, naming the file."""

from __future__ import annotations

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    RecordError,
)
from burnlike.record.format import files
from tests.helpers.records import Net, randomised
from tests.record.format.helpers import RECORDERS, SETTINGS

# --- identity: equality, hashing, names ---


def test_recorders_are_equal_only_with_the_same_format_precision_and_version():
    assert DefaultRecorder() == NamedMpkFileRecorder(FullPrecisionSettings)
    assert DefaultRecorder() != CompactRecorder()  # precision
    assert NamedMpkFileRecorder() != BinFileRecorder()  # format
    assert DefaultRecorder() != DefaultRecorder("0.19.0")  # version
    assert CompactRecorder("0.19.0").burn_version == "0.19.0"


def test_recorder_generic_spelling_aliases_equality_and_path_for():
    assert NamedMpkFileRecorder[HalfPrecisionSettings]() == CompactRecorder() == NamedMpkFileRecorder(HalfPrecisionSettings())
    assert DefaultRecorder() == NamedMpkFileRecorder() and isinstance(CompactRecorder(), NamedMpkFileRecorder)
    assert CompactRecorder().metadata()["format"].startswith("burn_core::record::file::NamedMpkFileRecorder<")
    assert NamedMpkGzFileRecorder().path_for("a/model.mpk.gz").name == "model.mpk.gz"
    assert CompactRecorder().path_for("a/model.mpk.gz").name == "model.mpk"
    assert JsonGzFileRecorder().path_for("model").name == "model.json.gz"
    with pytest.raises(TypeError):
        NamedMpkFileRecorder("half")


def test_recorders_are_dict_keys_with_readable_reprs():
    assert NamedMpkFileRecorder() == NamedMpkFileRecorder(FullPrecisionSettings)
    assert hash(NamedMpkFileRecorder()) == hash(NamedMpkFileRecorder(FullPrecisionSettings()))
    distinct = [NamedMpkFileRecorder(), NamedMpkFileRecorder(HalfPrecisionSettings),
                NamedMpkFileRecorder(burn_version="0.19.0"), BinFileRecorder(), BinGzFileRecorder()]
    assert len(set(distinct)) == 5 and len({hash(r) for r in distinct}) == 5
    assert {NamedMpkFileRecorder(HalfPrecisionSettings): "half"}[NamedMpkFileRecorder[HalfPrecisionSettings]()] == "half"
    assert repr(NamedMpkFileRecorder(HalfPrecisionSettings, burn_version="0.19.0")) ==\
        "NamedMpkFileRecorder(HalfPrecisionSettings, burn_version='0.19.0')"
    assert repr(BinGzFileRecorder()).startswith("BinGzFileRecorder(FullPrecisionSettings, burn_version='0.")
    assert repr(DefaultRecorder()).startswith("DefaultRecorder(FullPrecisionSettings, ")


# --- paths ---


def test_resolve_finds_the_file_with_the_recorders_extension(tmp_path):
    path = DefaultRecorder().save_module(nn.Linear(2, 2), tmp_path / "model")
    assert DefaultRecorder().resolve(tmp_path / "model") == path


def test_read_record_can_add_the_recorders_extension(tmp_path):
    DefaultRecorder().record({"x": 3}, tmp_path / "item")
    metadata, item = DefaultRecorder().read_record(tmp_path / "item", exact_path=False)
    assert item == {"x": 3} and "format" in metadata


# --- saving and loading modules ---


@pytest.mark.parametrize("recorder_cls", RECORDERS)
@pytest.mark.parametrize("settings", SETTINGS)
def test_every_recorder_and_precision_round_trips_and_replaces_the_extension(tmp_path, recorder_cls, settings):
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


def test_recorder_load_module_names_the_file_and_moves_to_the_device(tmp_path):
    path = DefaultRecorder().save_module(nn.Linear(2, 2), tmp_path / "m")
    with pytest.raises(RecordError) as e:
        DefaultRecorder().load_module(nn.Linear(3, 2), path)
    assert e.value.path == str(path) and str(e.value).startswith(f"{path}: ")
    module = nn.Linear(2, 2)
    DefaultRecorder().load_module(module, path, device="meta")
    assert module.weight.device.type == "meta"


@pytest.mark.parametrize("gz", [False, True], ids=["mpk", "mpk.gz"])
def test_a_recorder_guesses_its_files_size_from_the_tensors_at_their_likely_dtypes(tmp_path, monkeypatch, gz):
    """The guess is the tensors' bytes at the dtypes they will most likely get (f16 for
    CompactRecorder), which the file can only exceed; gzipped, nothing can be guessed."""
    sizes: list[int] = []
    real = files.atomic_write
    monkeypatch.setattr(files, "atomic_write",
                        lambda path, write, size=0, **kw: sizes.append(size) or real(path, write, size, **kw))
    monkeypatch.setattr("burnlike.record.format.recorder.atomic_write", files.atomic_write)
    model = nn.Sequential(nn.Linear(64, 32), nn.LayerNorm(32))
    recorder = NamedMpkGzFileRecorder() if gz else CompactRecorder()
    path = recorder.save_module(model, tmp_path / "m")
    tensors = 64 * 32 + 32 + 32 + 32
    assert sizes == [0 if gz else tensors * 2]
    assert gz or path.stat().st_size > tensors * 2


# --- reading what is not a record ---


def test_missing_corrupt_and_non_record_files_are_record_errors(tmp_path):
    recorder = DefaultRecorder()
    with pytest.raises(RecordError, match="no such record"):
        recorder.read_record(tmp_path / "missing.mpk")
    (tmp_path / "bad.mpk").write_bytes(b"\xc1\xc1")
    with pytest.raises(RecordError, match="bad.mpk"):
        recorder.read_record(tmp_path / "bad.mpk")
    (tmp_path / "list.mpk").write_bytes(msgpack.packb([1, 2]))
    with pytest.raises(RecordError, match="not a Burn record"):
        recorder.read_record(tmp_path / "list.mpk")


def test_a_msgpack_file_that_is_not_a_burn_record_is_named(tmp_path):
    path = tmp_path / "list.mpk"
    path.write_bytes(msgpack.packb([1, 2, 3]))
    with pytest.raises(RecordError, match="not a Burn record") as info:
        DefaultRecorder().load(path)
    assert info.value.path == str(path)


def test_metadata_that_is_not_strings_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "m.mpk"
    path.write_bytes(msgpack.packb({"metadata": {"format": 1}, "item": {}, "_b": []}))
    with pytest.raises(RecordError) as error:
        DefaultRecorder().load(path)
    assert str(error.value) == f"{path}: at 'metadata': metadata must be a map of strings"


def test_a_record_too_large_to_decode_names_its_file(tmp_path, monkeypatch):
    path = DefaultRecorder().record({"x": 3}, tmp_path / "item")

    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    recorder = DefaultRecorder()
    monkeypatch.setattr(recorder, "read", out_of_memory)
    with pytest.raises(RecordError) as e:
        recorder.load(path)
    assert "record too large to decode" in str(e.value) and str(path) in str(e.value)


def test_load_takes_burns_device_argument_and_adds_the_extension(tmp_path):
    """burn-core/src/record/recorder.rs (v0.21.0): `recorder.load(file_path, &device)`; file.rs's readers
    set the recorder's extension (`str2reader!`), so `load("model", device)` reads `model.mpk`."""
    recorder = CompactRecorder()
    written = recorder.record({"x": 3}, tmp_path / "model")
    assert written == tmp_path / "model.mpk"
    assert recorder.load(tmp_path / "model", torch.device("cpu")) == {"x": 3}
    assert recorder.load(str(tmp_path / "model"), "cpu") == recorder.load(written) == {"x": 3}
    with pytest.raises(RecordError, match="model"):
        recorder.load(tmp_path / "model", "cpu", exact_path=True)  # exactly that path: no such file
