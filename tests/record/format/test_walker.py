"""`burnlike.record.format.walker`: the one walk of a module tree in Burn's record order, which
decides the record's structure for every format. Fields in declaration order, Linear weights
transposed, norms' `gamma`/`beta`, config fields and stateless modules as nil, empty slots
skipped, custom parameters under their names; Burn 0.19's layout where it differs (conv geometry
as nil pairs, optional stateless children as `Some`)."""

from __future__ import annotations

import base64
import struct

import msgpack
import pytest
import torch
from torch import nn

from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    NamedMpkFileRecorder,
)
from burnlike.record.error import RecordError
from burnlike.record.format.module_record import module_to_record
from burnlike.record.format.walker import Field, Visitor, fields, walk
from tests.helpers.records import Net, randomised


class Scaled(nn.Module):
    """A custom module with a parameter of its own (no standard layer)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([2.0, 3.0]))


class WithEmptySlot(nn.Module):
    """A module whose first submodule slot is empty (`None`), as optional layers often are."""

    def __init__(self) -> None:
        super().__init__()
        self.register_module("skip", None)
        self.head = nn.Linear(3, 2)


# --- the record's structure ---


def test_compact_file_has_burns_record_structure_field_by_field(tmp_path):
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


def test_group_norm_records_its_affine_params_then_its_config():
    norm = nn.GroupNorm(2, 4)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    item = module_to_record(norm)
    assert list(item) == ["gamma", "beta", "num_groups", "num_channels", "epsilon", "affine"]  # Burn's GroupNorm
    assert bytes(item["gamma"]["param"]["bytes"]) == norm.weight.detach().numpy().tobytes()


def test_a_custom_modules_own_parameter_is_recorded_under_its_name(tmp_path):
    item = module_to_record(Scaled())
    assert list(item) == ["scale"]
    assert bytes(item["scale"]["param"]["bytes"]) == torch.tensor([2.0, 3.0]).numpy().tobytes()
    path = DefaultRecorder().save_module(Scaled(), tmp_path / "s")
    loaded = Scaled()
    with torch.no_grad():
        loaded.scale.zero_()
    DefaultRecorder().load_module(loaded, path)
    assert loaded.scale.tolist() == [2.0, 3.0]


def test_an_empty_module_slot_is_skipped_and_the_next_submodules_are_recorded(tmp_path):
    model = WithEmptySlot()
    assert set(module_to_record(model)) == {"head"}
    path = CompactRecorder().save_module(model, tmp_path / "m")
    loaded = WithEmptySlot()
    nn.init.zeros_(loaded.head.weight)
    CompactRecorder().load_module(loaded, path)
    assert torch.equal(loaded.head.weight, model.head.weight.half().float())


def test_a_stateless_module_records_as_nil_and_loads_back(tmp_path):
    path = DefaultRecorder().save_module(nn.ReLU(), tmp_path / "relu")
    metadata, item = DefaultRecorder().read_record(path)
    assert item is None
    DefaultRecorder().load_module(nn.ReLU(), path)


@pytest.mark.parametrize("conv", ["ConvTranspose1d", "ConvTranspose2d"])
def test_a_transposed_conv_records_its_padding_out(tmp_path, conv):
    torch.manual_seed(4)
    model = getattr(nn, conv)(3, 5, 3)
    path = NamedMpkFileRecorder().save_module(model, tmp_path / "conv")
    item = msgpack.unpackb(path.read_bytes())["item"]
    assert "padding_out" in item and item["padding_out"] is None
    loaded = getattr(nn, conv)(3, 5, 3)
    NamedMpkFileRecorder().load_module(loaded, path)
    assert torch.equal(loaded.weight, model.weight)


# --- Burn 0.19's layout ---


def test_burn_0_19_layout_writes_conv_geometry_as_nil_pairs(tmp_path):
    path = randomised(Net()).save_file(tmp_path / "m", NamedMpkFileRecorder(burn_version="0.19.0"))
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    assert record["metadata"]["version"] == "0.19.0"
    assert record["item"]["block"]["conv"]["stride"] == [None, None]


def test_burn_0_19_records_an_optional_stateless_child_as_some(tmp_path):
    """`__burn_optional__` names children Burn declares `Option<…>` (the book's `pool:
    Option<MaxPool2d>`): Burn 0.19's bincode records them as Some(()), a tag byte a plain stateless
    child doesn't have (MessagePack writes both as nil)."""

    class WithPool(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear, self.pool = nn.Linear(2, 2), nn.MaxPool2d(2)

    class WithOptionalPool(WithPool):
        __burn_optional__ = ("pool",)

    def size(model: nn.Module, version: str) -> int:
        torch.manual_seed(5)
        model.linear.reset_parameters()
        path = BinFileRecorder(burn_version=version).save_module(model, tmp_path / f"{version}-{type(model).__name__}")
        return path.stat().st_size

    assert size(WithOptionalPool(), "0.19.0") == size(WithPool(), "0.19.0") + 1
    assert size(WithOptionalPool(), "0.21.0") == size(WithPool(), "0.21.0")


def test_a_stateless_list_inside_a_list_records_as_one_nil():
    """Burn's unit value for the whole inner list, not a list of nils."""
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.ReLU()))
    item = module_to_record(model)
    assert len(item) == 2 and item[1] is None


def test_a_stateless_child_is_a_nil_field():
    model = nn.Sequential(nn.Linear(2, 2))
    holder = nn.Module()
    holder.act, holder.body = nn.ReLU(), model
    assert fields(holder) == [Field("act", "nil"), Field("body", "module", model)]


def kinds(m: nn.Module, version: str = "0.21.0") -> list[tuple[str, str]]:
    return [(f.name, f.kind) for f in fields(m, version)]


@pytest.mark.parametrize(("layer", "expected"), [
    (nn.Conv2d(2, 4, 3), [("weight", "param"), ("bias", "param"), ("stride", "nil"), ("kernel_size", "nil"),
                          ("dilation", "nil"), ("groups", "nil"), ("padding", "nil")]),
    (nn.Conv1d(2, 4, 3, bias=False), [("weight", "param"), ("bias", "none"), ("stride", "nil"),
                                      ("kernel_size", "nil"), ("dilation", "nil"), ("groups", "nil"),
                                      ("padding", "nil")]),
    (nn.GroupNorm(2, 4), [("gamma", "param"), ("beta", "param"), ("num_groups", "nil"), ("num_channels", "nil"),
                          ("epsilon", "nil"), ("affine", "nil")]),
    (nn.GroupNorm(2, 4, affine=False), [("gamma", "none"), ("beta", "none"), ("num_groups", "nil"),
                                        ("num_channels", "nil"), ("epsilon", "nil"), ("affine", "nil")]),
    (nn.BatchNorm1d(3), [("gamma", "param"), ("beta", "param"), ("running_mean", "param"),
                         ("running_var", "param"), ("momentum", "nil"), ("epsilon", "nil")]),
    (nn.LayerNorm(3, elementwise_affine=False), [("epsilon", "nil")]),
], ids=["conv2d", "conv1d-no-bias", "group-norm", "group-norm-no-affine", "batch-norm", "layer-norm-no-affine"])
def test_standard_layers_have_burns_fields_with_config_fields_as_nil(layer, expected):
    """A config field is `nil` (Burn's `Ignored`/constant fields), which every codec writes as nil."""
    assert kinds(layer) == expected


def test_norms_optional_params_are_tagged_in_bincode_as_burns_options(tmp_path):
    """Burn's GroupNorm has `Option<Param>` gamma and beta, 0.21's LayerNorm an optional beta (0.19's
    a plain one): bincode writes a Some tag before each, so the files differ by those bytes."""
    assert [f.optional for f in fields(nn.GroupNorm(2, 4))[:2]] == [True, True]
    assert [f.optional for f in fields(nn.LayerNorm(4))[:2]] == [False, True]
    assert [f.optional for f in fields(nn.LayerNorm(4), "0.19.0")[:2]] == [False, False]
    norm = nn.LayerNorm(4)
    paths = [BinFileRecorder(burn_version=v).save_module(norm, tmp_path / f"v{v[2:4]}") for v in ("0.21.0", "0.19.0")]
    assert paths[0].stat().st_size == paths[1].stat().st_size + 1
    for path in paths:
        loaded = nn.LayerNorm(4)
        BinFileRecorder().load_module(loaded, path)
        assert torch.equal(loaded.bias, norm.bias)


def test_burn_0_19_conv2d_geometry_fields_are_nil_pairs():
    assert kinds(nn.Conv2d(2, 4, 3), "0.19.0")[2:5] == [("stride", "nils"), ("kernel_size", "nils"),
                                                         ("dilation", "nils")]


class Cursor(Visitor[str]):
    """Records which node (a path string standing for the codec's cursor) each stateless module gets."""

    def __init__(self) -> None:
        self.stateless_at: list[tuple[str, str]] = []

    def entry(self, node: str, index: int) -> str:
        return f"{node}[{index}]"

    def stateless(self, node: str, key: str) -> None:
        self.stateless_at.append((node, key))


def test_a_visitor_gets_a_list_entrys_own_node_for_a_stateless_entry():
    """A codec reading a list's stateless entry must be at that entry (e.g. to check it is nil there)."""
    visitor = Cursor()
    walk(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), visitor, "item")
    walk(nn.ReLU(), visitor, "root")  # the root's key is the empty path
    assert visitor.stateless_at == [("item[1]", "1"), ("root", "")]


# --- a module's own declaration of its record ---


class Declared(nn.Module):
    """A Burn struct ported field for field: `struct Model { embed, vocab_size: usize, head, dropout,
    reverse: Option<Linear> }` — `__burn_fields__` gives Burn's order, config values are nil."""

    __burn_fields__ = ("embed", "vocab_size", "head", "dropout", "reverse")
    __burn_optional__ = ("reverse",)

    def __init__(self, reverse: bool) -> None:
        super().__init__()
        self.head = nn.Linear(2, 3)  # assigned before `embed`: the declared order wins
        self.embed = nn.Embedding(4, 2)
        self.vocab_size = 4
        self.dropout = nn.Dropout(0.1)
        self.register_module("reverse", nn.Linear(3, 3) if reverse else None)


def test_declared_fields_follow_burns_order_with_config_values_as_nil():
    assert kinds(Declared(True)) == [("embed", "module"), ("vocab_size", "nil"), ("head", "module"),
                                     ("dropout", "nil"), ("reverse", "module")]
    assert kinds(Declared(False))[-1] == ("reverse", "none")
    assert list(module_to_record(Declared(False))) == ["embed", "vocab_size", "head", "dropout", "reverse"]


def test_declared_fields_must_name_every_tensor():
    class Forgetful(Declared):
        __burn_fields__ = ("embed", "head")

    with pytest.raises(ValueError, match=r"Forgetful.__burn_fields__ leaves out \['reverse'\]"):
        fields(Forgetful(True))


def test_an_optional_submodule_is_tagged_in_bincode(tmp_path):
    """Burn's `Option<Linear<B>>` record: bincode `0x01` + the record when present, `0x00` when not;
    MessagePack writes the record or nil. Each loads back only into a model of the same shape."""
    torch.manual_seed(0)
    present, absent = Declared(True), Declared(False)
    sizes = {}
    for model in (present, absent):
        path = BinFileRecorder().save_module(model, tmp_path / f"{model.reverse is not None}")
        sizes[model.reverse is not None] = path.stat().st_size
        copy = Declared(model.reverse is not None)
        BinFileRecorder().load_module(copy, path)
        assert torch.equal(copy.head.weight, model.head.weight)
    weight = (1 + 13) + (1 + 36) + (1 + 2) + 1  # ParamSerde: id, bytes, shape, dtype
    bias = 1 + (1 + 13) + (1 + 12) + (1 + 1) + 1  # Some tag, then the same
    assert sizes[True] - sizes[False] == (1 + weight + bias) - 1  # 0x01 + the Linear record, for 0x00
    with pytest.raises(RecordError, match="the record has no reverse"):
        BinFileRecorder().load_module(Declared(True), tmp_path / "False.bin")
    assert module_to_record(absent)["reverse"] is None


class Wrapped(nn.Module):
    """A module whose record is a Burn enum's: one variant (index 2) holding a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(1, 1, bias=False)

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("Third", "module", self.inner, variant=2)]


def test_an_enum_variant_is_a_one_key_map_and_a_bincode_index(tmp_path):
    """serde's externally tagged enum: `{"Third": {...}}` in MessagePack; in bincode the variant's
    u32 index (varint) before the value, as laid out here by hand."""
    model = Wrapped()
    with torch.no_grad():
        model.inner.weight.fill_(1.5)
    assert list(module_to_record(model)) == ["Third"]
    path = BinFileRecorder().save_module(model, tmp_path / "enum")
    body = path.read_bytes()
    pid = module_to_record(model)["Third"]["weight"]["id"].encode()
    weight = struct.pack("<f", 1.5)
    assert body.endswith(b"\x02" + bytes([len(pid)]) + pid + b"\x04" + weight + b"\x02\x01\x01\x01" + b"\x00")
    loaded = Wrapped()
    BinFileRecorder().load_module(loaded, path)
    assert loaded.inner.weight.item() == 1.5
    path.write_bytes(body.replace(b"\x02" + bytes([len(pid)]) + pid, b"\x01" + bytes([len(pid)]) + pid))
    with pytest.raises(RecordError, match="enum variant 1 for Third, the model variant 2"):
        BinFileRecorder().load_module(Wrapped(), path)
