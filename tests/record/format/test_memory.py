"""`burnlike.record.format.memory`: Burn's in-memory recorders (`burn_core::record::memory`,
crates/burn-core/src/record/memory.rs at v0.21.0). Every recorder and precision round-trips through
bytes; the bytes are the matching file recorder's file but for `metadata.format`, which names the
bytes recorder as Rust's `type_name` does; Burn's own `.bin` loads through `NoStdInferenceRecorder`
(crates/burn-core/src/record/recorder.rs: `BinBytesRecorder<FullPrecisionSettings, &'static [u8]>`)
as its mnist-inference-web example loads it; malformed bytes raise RecordError."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import msgpack
import pytest
import torch

from burnlike.record import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    BytesRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkBytesRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    NoStdInferenceRecorder,
    NoStdTrainingRecorder,
    RecordError,
)
from burnlike.record.format import registry
from tests.helpers.burn_mnist_model import BurnMnist
from tests.helpers.expect import raises_exactly
from tests.helpers.records import FILES, Net, randomised

SETTINGS = [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings]
BYTES_RECORDERS = [BinBytesRecorder, NamedMpkBytesRecorder]
have_burn_files = pytest.mark.skipif(not FILES["0.21.0"].is_file(), reason="Burn's record files not present")


def bincode_string(s: str) -> bytes:
    assert len(s) < 251  # a one-byte varint length
    return bytes([len(s)]) + s.encode()


def msgpack_string(s: str) -> bytes:
    packed: bytes = msgpack.packb(s)
    return packed


# each bytes recorder, its file recorder, and how its format writes a string
PAIRS: list[tuple[type[BytesRecorder], type, Callable[[str], bytes]]] = [
    (BinBytesRecorder, BinFileRecorder, bincode_string),
    (NamedMpkBytesRecorder, NamedMpkFileRecorder, msgpack_string),
]


def settings_name(settings: type) -> str:
    return f"burn_core::record::settings::{settings.__name__}"


# --- round trips ---


@pytest.mark.parametrize("recorder_cls", BYTES_RECORDERS)
@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("version", ["0.19.0", "0.21.0"])
def test_every_bytes_recorder_round_trips_every_precision_and_burn_version(recorder_cls, settings, version):
    src, dst = randomised(Net()), Net()
    data = recorder_cls(settings, burn_version=version).save_module(src)
    assert isinstance(data, bytes)
    recorder_cls().load_module(dst, data)  # any precision loads, the version comes from the bytes
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        if not name.endswith("num_batches_tracked"):
            expected = a.half().float() if settings is HalfPrecisionSettings else a
            assert torch.equal(expected, b), name


@pytest.mark.parametrize("recorder_cls", BYTES_RECORDERS)
def test_bytes_recorders_take_burns_into_record_and_load_record_spelling(recorder_cls):
    """Burn: `recorder.record(model.into_record(), ())`, `model.load_record(recorder.load(bytes, &device))`;
    bincode needs the module beside the item (`module=`)."""
    recorder = recorder_cls[HalfPrecisionSettings]()
    src = randomised(Net())
    data = recorder.record(src.into_record(recorder.settings), module=src)
    assert data == recorder.save_module(src)
    dst = Net().load_record(recorder.load(data, "cpu", module=Net()))
    assert torch.equal(dst.embed.weight, src.embed.weight.half().float())


def test_named_mpk_bytes_hold_any_item():
    recorder = NamedMpkBytesRecorder()
    data = recorder.record({"epoch": 3, "lr": [1e-3, 5e-4]})
    metadata, item = recorder.read_record(data)
    assert item == {"epoch": 3, "lr": [1e-3, 5e-4]}
    assert metadata == recorder.metadata()


def test_load_module_moves_the_module_to_the_device():
    recorder = NamedMpkBytesRecorder()
    dst = Net()
    recorder.load_module(dst, recorder.save_module(randomised(Net())), device="meta")
    assert dst.embed.weight.device.type == "meta"


# --- the bytes are the file recorder's ---


@pytest.mark.parametrize(("bytes_cls", "file_cls", "string"), PAIRS)
@pytest.mark.parametrize("settings", SETTINGS)
def test_the_bytes_are_the_file_recorders_file_but_for_the_format_name(tmp_path, bytes_cls, file_cls, string,
                                                                       settings):
    net = randomised(Net())
    recorder, file_recorder = bytes_cls(settings), file_cls(settings)
    path = file_recorder.save_module(net, tmp_path / "m")  # the same module: the same ParamIds
    data = recorder.save_module(net)
    file_format, own_format = file_recorder.metadata()["format"], recorder.metadata()["format"]
    assert data == path.read_bytes().replace(string(file_format), string(own_format), 1)
    assert own_format.startswith(f"burn_core::record::memory::{bytes_cls.__name__}<{settings_name(settings)}")
    copy = tmp_path / f"from-bytes.{file_cls.extension}"
    copy.write_bytes(data)  # the bytes written to a file load as a record
    loaded = Net().load_file(copy, file_cls())
    assert torch.equal(loaded.layers[0].weight, Net().load_file(path, file_cls()).layers[0].weight)


def test_the_format_names_are_rusts_type_names():
    """`type_name::<R>()` spells the default `L = Vec<u8>` of `BinBytesRecorder<S, L>`, and
    `&'static [u8]` without its lifetime."""
    assert BinBytesRecorder().metadata()["format"] == \
        "burn_core::record::memory::BinBytesRecorder<burn_core::record::settings::FullPrecisionSettings, " \
        "alloc::vec::Vec<u8>>"
    assert NamedMpkBytesRecorder(HalfPrecisionSettings).metadata() == {
        "float": "half::binary16::f16", "int": "i16",
        "format": "burn_core::record::memory::NamedMpkBytesRecorder<burn_core::record::settings::HalfPrecisionSettings>",
        "version": "0.21.0", "settings": "HalfPrecisionSettings"}


# --- the alias ---


def test_no_std_inference_recorder_is_burns_alias():
    """crates/burn-core/src/record/recorder.rs (v0.21.0):
    `pub type NoStdInferenceRecorder = BinBytesRecorder<FullPrecisionSettings, &'static [u8]>;`"""
    recorder = NoStdInferenceRecorder("0.19.0")
    assert isinstance(recorder, BinBytesRecorder)
    assert recorder.settings == FullPrecisionSettings() and recorder.burn_version == "0.19.0"
    assert recorder.metadata()["format"] == \
        f"burn_core::record::memory::BinBytesRecorder<{settings_name(FullPrecisionSettings)}, &[u8]>"
    assert recorder != BinBytesRecorder()  # another type name, other bytes
    assert BinBytesRecorder() == BinBytesRecorder[FullPrecisionSettings]()
    assert len({BinBytesRecorder(), BinBytesRecorder(FullPrecisionSettings), NoStdInferenceRecorder()}) == 2
    assert repr(recorder) == "NoStdInferenceRecorder(FullPrecisionSettings, burn_version='0.19.0')"


def test_the_registry_names_no_bytes_recorder():
    """The registry picks recorders for paths; a bytes recorder has none."""
    for name in ("BinBytesRecorder", "NamedMpkBytesRecorder", "NoStdInferenceRecorder"):
        with pytest.raises(ValueError, match="unknown recorder"):
            registry.by_name(name)


@have_burn_files
@pytest.mark.parametrize("version", ["0.19.0", "0.21.0"])
def test_burns_mnist_bin_loads_through_no_std_inference_recorder_as_burns_example_does(tmp_path, version):
    """Burn's examples/mnist-inference-web: `BinBytesRecorder::<FullPrecisionSettings, &'static [u8]>
    ::default().load(STATE_ENCODED, &device)` over the `.bin` that `NoStdTrainingRecorder` wrote."""
    data = FILES[version].read_bytes()
    from_bytes = BurnMnist()
    NoStdInferenceRecorder().load_module(from_bytes, data)
    from_file = BurnMnist().load_file(FILES[version], NoStdTrainingRecorder())
    for (name, a), b in zip(from_file.state_dict().items(), from_bytes.state_dict().values()):
        assert torch.equal(a, b), name
    written = NoStdTrainingRecorder(burn_version=version).save_module(from_bytes, tmp_path / "model")
    assert written.read_bytes() == data  # and written back as Burn wrote it


# --- malformed bytes: each error says which in-memory call expected what ---

ALL_BYTES_RECORDERS = [*BYTES_RECORDERS, NoStdInferenceRecorder]
FORMAT_NAMES = {BinBytesRecorder: ("bincode", "BinFileRecorder"), NamedMpkBytesRecorder: ("named MessagePack",
                                                                                        "NamedMpkFileRecorder"),
                NoStdInferenceRecorder: ("bincode", "BinFileRecorder")}
FILE_CALL_HINTS = ("load_file", "save_file", "(path")


def expected_by(recorder_cls: type[BytesRecorder], method: str = "load") -> str:
    """What a bytes recorder's error says it expected."""
    name = recorder_cls.__name__
    fmt, file_recorder = FORMAT_NAMES[recorder_cls]
    return f"{name}.{method}: expected the bytes {name}.record/save_module write ({fmt}, as a {file_recorder} file holds them)"


def assert_a_bytes_error(message: str, recorder_cls: type[BytesRecorder], got: str, method: str = "load") -> None:
    """Names `<bytes>` once, the recorder and call and what it expected, what it got, and no file call."""
    assert message.startswith("<bytes>: ") and message.count("<bytes>") == 1, message
    assert f"{expected_by(recorder_cls, method)}; got {got}" in message, message
    assert not any(hint in message for hint in FILE_CALL_HINTS), message


@pytest.mark.parametrize("recorder_cls", ALL_BYTES_RECORDERS)
@pytest.mark.parametrize("method", ["load", "load_module", "read_record"])
def test_empty_bytes_say_what_the_recorder_expected(recorder_cls, method):
    with pytest.raises(RecordError) as e:
        if method == "load_module":
            recorder_cls().load_module(Net(), b"")
        else:
            getattr(recorder_cls(), method)(b"", module=Net())
    assert str(e.value) == f"<bytes>: {expected_by(recorder_cls, method)}; got no bytes"
    assert e.value.path == "<bytes>"


@pytest.mark.parametrize("recorder_cls", ALL_BYTES_RECORDERS)
def test_truncated_bytes_say_what_was_expected_and_where_they_end(recorder_cls):
    recorder = recorder_cls()
    data = recorder.save_module(randomised(Net()))
    for cut in (1, len(data) // 2, len(data) - 1):
        with pytest.raises(RecordError) as e:
            recorder.load(data[:cut], module=Net())
        assert_a_bytes_error(str(e.value), recorder_cls, f"{cut:,} byte{'s' if cut > 1 else ''}")
        assert " left" in str(e.value).split("; got ", 1)[1]  # the decoder's own account of the cut
    with pytest.raises(RecordError) as e:
        recorder.load(data[: len(data) // 2], module=Net())
    assert e.value.key and str(e.value).startswith(f"<bytes>: at '{e.value.key}': {recorder_cls.__name__}.load: ")


@pytest.mark.parametrize(("recorder_cls", "writer_cls", "reads_them"), [
    (BinBytesRecorder, NamedMpkBytesRecorder, "named MessagePack: NamedMpkBytesRecorder reads them"),
    (NoStdInferenceRecorder, NamedMpkBytesRecorder, "named MessagePack: NamedMpkBytesRecorder reads them"),
    (NamedMpkBytesRecorder, BinBytesRecorder, "bincode: BinBytesRecorder reads them"),
])
def test_another_recorders_bytes_name_the_recorder_that_reads_them(recorder_cls, writer_cls, reads_them):
    data = writer_cls().save_module(Net())
    with pytest.raises(RecordError) as e:
        recorder_cls().load_module(Net(), data)
    writer = writer_cls().metadata()["format"]
    assert_a_bytes_error(str(e.value), recorder_cls, f"{len(data):,} bytes whose metadata names '{writer}' "
                                                     f"({reads_them}): ", method="load_module")


@pytest.mark.parametrize(("bytes_cls", "file_cls"), [(BinBytesRecorder, BinGzFileRecorder),
                                                     (NamedMpkBytesRecorder, NamedMpkGzFileRecorder)])
def test_a_gzipped_files_bytes_say_to_decompress_them(tmp_path, bytes_cls, file_cls):
    net = randomised(Net())
    data = file_cls().save_module(net, tmp_path / "m").read_bytes()
    with pytest.raises(RecordError) as e:
        bytes_cls().load_module(Net(), data)
    assert_a_bytes_error(str(e.value), bytes_cls, f"{len(data):,} bytes of gzip (a *GzFileRecorder file; "
                                                  "gzip.decompress them first): ", method="load_module")
    loaded = Net()
    bytes_cls().load_module(loaded, gzip.decompress(data))  # the hint is right
    assert torch.equal(loaded.embed.weight, net.embed.weight)


@pytest.mark.parametrize("recorder_cls", ALL_BYTES_RECORDERS)
@pytest.mark.parametrize(("path", "reader"), [
    ("model.mpk", "NamedMpkFileRecorder"), (Path("/runs/model.bin.gz"), "BinGzFileRecorder"),
    ("checkpoints/model", None),  # no extension: the recorder's own file format
])
def test_a_path_given_for_the_bytes_names_the_file_recorder_that_reads_it(recorder_cls, path, reader):
    reader = reader or FORMAT_NAMES[recorder_cls][1]
    with raises_exactly(TypeError, f"{expected_by(recorder_cls)}; got {type(path).__name__} {str(path)!r}, a path: "
                                   f"a file is read by the file recorder, {reader}().load(path) or "
                                   f"module.load_file(path, {reader}())"):
        recorder_cls().load(path, module=Net())  # type: ignore[arg-type]


def test_other_values_given_for_the_bytes_are_named_by_type():
    with raises_exactly(TypeError, f"{expected_by(NamedMpkBytesRecorder, 'read_record')}; got int"):
        NamedMpkBytesRecorder().read_record(3)  # type: ignore[arg-type]
    text = "\x83\xa8metadata\n..."
    with raises_exactly(TypeError, f"{expected_by(BinBytesRecorder, 'load_module')}; got str of {len(text)} "
                                   "characters: text, not bytes (a file's bytes are read with open(path, 'rb'))"):
        BinBytesRecorder().load_module(Net(), text)  # type: ignore[arg-type]


@pytest.mark.parametrize("recorder_cls", [BinBytesRecorder, NoStdInferenceRecorder])
def test_bincode_bytes_without_their_module_say_how_to_pass_it(recorder_cls):
    name = recorder_cls.__name__
    with raises_exactly(RecordError, f"<bytes>: {name}.load: expected the module the bytes were written from (bincode "
                                     "has no field names; the record is read along the module's fields): "
                                     f"{name}().load_module(module, data) or {name}().load(data, module=module)"):
        recorder_cls().load(recorder_cls().save_module(Net()))
    assert recorder_cls().load(recorder_cls().record({"epoch": 3})) == {"epoch": 3}  # a non-module item needs none


def test_malformed_bytes_say_what_is_wrong():
    data = BinBytesRecorder().save_module(Net())
    with pytest.raises(RecordError) as e:
        BinBytesRecorder().load(data + b"\x00", module=Net())
    assert_a_bytes_error(str(e.value), BinBytesRecorder, f"{len(data) + 1:,} bytes whose metadata names "
                                                         f"'{BinBytesRecorder().metadata()['format']}': ")
    assert str(e.value).endswith(": 1 bytes left after the record: the model doesn't match the record")
    for packed, detail in [
        (msgpack.packb([1, 2, 3]), "not a Burn record"),
        (msgpack.packb({"metadata": {"float": 1}, "item": None}), "metadata must be a map of strings"),
        (msgpack.packb({"metadata": {}, "item": [[]] * 100_000}), "more than"),  # bounded decoding
    ]:
        with pytest.raises(RecordError, match=detail) as e:
            NamedMpkBytesRecorder().load(packed)
        assert_a_bytes_error(str(e.value), NamedMpkBytesRecorder, f"{len(packed):,} bytes")


def test_bytes_for_another_model_name_the_parameter():
    data = NamedMpkBytesRecorder().save_module(Net())
    wrong = Net()
    wrong.layers[0] = torch.nn.Linear(4, 6)
    with pytest.raises(RecordError, match=r"<bytes>: at 'layers\.0\.weight'"):
        NamedMpkBytesRecorder().load_module(wrong, data)


def test_text_with_a_nul_but_no_newline_given_for_the_bytes_is_named_as_text_not_a_path():
    text = "\x83\xa4item\0\x90"
    with raises_exactly(TypeError, f"{expected_by(NamedMpkBytesRecorder, 'read_record')}; got str of {len(text)} "
                                   "characters: text, not bytes (a file's bytes are read with open(path, 'rb'))"):
        NamedMpkBytesRecorder().read_record(text)  # type: ignore[arg-type]
