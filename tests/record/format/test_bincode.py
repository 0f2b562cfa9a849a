"""`burnlike.record.format.bincode`: Burn's `BinFileRecorder`/`BinGzFileRecorder`. Bincode has no
field names, so records follow the module's fields in order, in the layout of the Burn version
written for (0.19 and 0.21 differ for bools): every precision and version round-trips, training
checkpoints too; varints take Burn's widths; a stateless entry is one nil byte; and a record that
doesn't fit the model (layer count, a bias, too few bytes) is refused naming where. Burn's aliases
`SensitiveCompactRecorder` and `NoStdTrainingRecorder` are their recorders with Burn's settings."""

from __future__ import annotations

import io
import re

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NoStdTrainingRecorder,
    RecorderCheckpointIO,
    RecordError,
    SensitiveCompactRecorder,
)
from burnlike.record.format import registry
from burnlike.record.format.bincode import ITEM_FORMAT, _Reader, _Writer, decode
from burnlike.record.format.budget import Budget
from burnlike.record.tensor.ahead import ViewsAhead
from burnlike.record.tensor.dtypes import BINCODE_INDEX
from tests.helpers.records import FILES, Net, needs_burn, randomised
from tests.record.format.helpers import Masked


class LinearStack(nn.Module):
    """`n` Linear layers in an `nn.Sequential`, `layers`."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(2, 2) for _ in range(n)])


def bincode_item(blob: bytes) -> bytes:
    """A bincode record holding a non-module item (a training checkpoint's layout): Burn's five
    metadata strings, then the MessagePack item as one length-prefixed blob."""

    def string(s: str) -> bytes:
        return bytes([len(s)]) + s.encode()

    return b"".join(string(s) for s in ("f32", "i64", ITEM_FORMAT + "checkpoint", "0.1.0", "Full")) + \
        bytes([len(blob)]) + blob


def mlp(stateless: nn.Module) -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, 3), stateless, nn.Linear(3, 1))


# --- round trips ---


@pytest.mark.parametrize("recorder_cls", [BinFileRecorder, BinGzFileRecorder])
@pytest.mark.parametrize("settings", [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings])
@pytest.mark.parametrize("version", ["0.19.0", "0.21.0"])
def test_bincode_round_trips_every_precision_and_burn_version(tmp_path, recorder_cls, settings, version):
    src, dst = randomised(Net()), Net()
    path = src.save_file(tmp_path / "m", recorder_cls(settings, burn_version=version))
    dst.load_file(path, recorder_cls())
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        if not name.endswith("num_batches_tracked"):
            expected = a.half().float() if settings is HalfPrecisionSettings else a
            assert torch.equal(expected, b), name


@pytest.mark.parametrize("version", ["0.21.0", "0.19.0"])
def test_a_bool_param_round_trips_through_bincode_in_both_layouts(tmp_path, version):
    """0.20+ writes a BoolStore variant after the Bool dtype, 0.19 doesn't: reading must match."""
    src = Masked()
    path = src.save_file(tmp_path / "m", BinFileRecorder(burn_version=version))
    dst = Masked()
    dst.mask.fill_(False)
    with torch.no_grad():
        dst.linear.weight.zero_()
    dst.load_file(path, BinFileRecorder(burn_version=version))
    assert dst.mask.tolist() == [True, False, True]
    assert torch.equal(dst.linear.weight, src.linear.weight)


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


def test_a_bincode_item_is_decoded_within_the_callers_budget_and_as_a_burn_record(tmp_path):
    data = bincode_item(msgpack.packb({"epoch": [1, 2, 3, 4, 5]}))
    record = decode(data, tmp_path / "c.bin", None)
    assert set(record) == {"metadata", "item", "_b"} and record["_b"] == []  # BurnRecord's fields
    assert record["item"] == {"epoch": [1, 2, 3, 4, 5]}
    with pytest.raises(RecordError, match="more than 4 values"):
        decode(data, tmp_path / "c.bin", None, Budget(4, tmp_path / "c.bin"))


# --- encoding details ---


@pytest.mark.parametrize("n", [251, 300, 2**16 - 1])
def test_bincode_writes_251_to_65535_as_a_3_byte_varint(n):
    with ViewsAhead(()) as views:
        writer = _Writer(io.BytesIO(), views)
        writer.varint(n)
    assert writer.parts == [b"\xfb" + n.to_bytes(2, "little")]


def test_bincode_writes_a_length_of_2_32_as_an_8_byte_varint():
    with ViewsAhead(()) as views:
        writer = _Writer(io.BytesIO(), views)
        writer.varint(2**32)
    assert writer.parts == [b"\xfd" + (2**32).to_bytes(8, "little")]


def test_a_bincode_varint_of_eight_bytes_reads_as_one_u64(tmp_path):
    value = 2**40 + 5
    reader = _Reader(b"\xfd" + value.to_bytes(8, "little") + b"\xfb" + (300).to_bytes(2, "little"), tmp_path / "m.bin")
    assert reader.varint() == value and reader.varint() == 300


def test_a_stateless_entry_is_one_nil_byte_in_bincode(tmp_path):
    torch.manual_seed(0)
    model = mlp(nn.ReLU())
    path = tmp_path / "with_relu.bin"
    BinFileRecorder().save_module(model, path)
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


# --- records that don't fit the model ---


def test_a_bincode_record_with_another_layer_count_names_the_sequence(tmp_path):
    path = BinFileRecorder().save_module(LinearStack(2), tmp_path / "stack")
    with pytest.raises(RecordError) as e:
        BinFileRecorder().load_module(LinearStack(3), path)
    assert str(e.value).startswith(f"{path}: at 'layers': record has 2 entries, the model's Sequential has 3 (byte ")
    assert e.value.key == "layers"


def test_a_bias_the_model_lacks_is_refused_by_the_bincode_reader(tmp_path):
    path = BinFileRecorder().save_module(nn.Linear(3, 2), tmp_path / "m")
    with pytest.raises(RecordError, match="the record has a bias the model doesn't have"):
        BinFileRecorder().load_module(nn.Linear(3, 2, bias=False), path)


def test_a_short_bincode_record_says_how_many_bytes_are_left(tmp_path):
    path = Masked().save_file(tmp_path / "m", BinFileRecorder())
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(RecordError) as e:
        Masked().load_file(path, BinFileRecorder())
    needs = re.search(r"needs (\d+) more bytes, (\d+) left", str(e.value))
    assert needs is not None, str(e.value)
    assert int(needs.group(1)) > int(needs.group(2)) >= 0 and int(needs.group(2)) < 3


@needs_burn
def test_a_burn_file_loaded_into_the_wrong_model_names_the_file():
    with pytest.raises(RecordError, match="mnist-inference-web"):
        Net().load_file(FILES["0.21.0"], BinFileRecorder())


# --- Burn's aliases ---


def test_the_bincode_aliases_are_burns():
    """crates/burn-core/src/record/recorder.rs (v0.21.0):
    `pub type SensitiveCompactRecorder = BinGzFileRecorder<HalfPrecisionSettings>;` and
    `pub type NoStdTrainingRecorder = BinFileRecorder<FullPrecisionSettings>;`. Like Burn's type
    aliases they write their recorder's metadata, and the registry knows them by name."""
    sensitive, no_std = SensitiveCompactRecorder("0.19.0"), NoStdTrainingRecorder()
    assert isinstance(sensitive, BinGzFileRecorder) and sensitive == BinGzFileRecorder(HalfPrecisionSettings, "0.19.0")
    assert isinstance(no_std, BinFileRecorder) and no_std == BinFileRecorder(FullPrecisionSettings)
    assert sensitive.metadata()["format"] == \
        "burn_core::record::file::BinGzFileRecorder<burn_core::record::settings::HalfPrecisionSettings>"
    assert no_std.metadata()["format"] == \
        "burn_core::record::file::BinFileRecorder<burn_core::record::settings::FullPrecisionSettings>"
    assert (sensitive.file_extension(), no_std.file_extension()) == ("bin.gz", "bin")
    assert registry.by_name("SensitiveCompactRecorder") == SensitiveCompactRecorder()
    assert registry.by_name("NoStdTrainingRecorder", burn_version="0.19.0") == NoStdTrainingRecorder("0.19.0")


def test_the_bincode_aliases_write_their_recorders_bytes(tmp_path):
    net = randomised(Net())
    for alias, same in ((SensitiveCompactRecorder(), BinGzFileRecorder(HalfPrecisionSettings)),
                        (NoStdTrainingRecorder(), BinFileRecorder())):
        a, b = alias.save_module(net, tmp_path / "alias"), same.save_module(net, tmp_path / "same")
        assert a.read_bytes() == b.read_bytes(), type(alias).__name__


def test_a_bool_param_is_written_with_burns_native_bool_store(tmp_path):
    """0.20+ follows the Bool dtype with BoolStore's variant: Native is 0 (burn-std dtype.rs)."""
    path = Masked().save_file(tmp_path / "m", BinFileRecorder())
    # the mask: 3 bytes [1, 0, 1], rank 1, shape [3], dtype Bool, BoolStore::Native
    assert b"\x03\x01\x00\x01\x01\x03" + bytes([BINCODE_INDEX.index("Bool"), 0]) in path.read_bytes()
