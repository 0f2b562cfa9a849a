"""What the mutation samples of 2026-11-25 found unguarded (issue 17), one behaviour per test:
the record walker past an empty module slot, the decoding budget's allowance for stateless modules,
errors that name the file or the offending type, `is_url` on local paths, hparams from OmegaConf
with objects in them, Rust's spelling of infinities in the metric logs, and a text folder read
into a CSV-style dataset keeping its labels."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from burnlike.record import CompactRecorder, NamedMpkGzFileRecorder, RecordError
from burnlike.record.checkpoint.value import encode_value
from burnlike.record.format.location import is_url
from burnlike.record.format.module_record import module_to_record
from burnlike.record.tensor.tensor_data import check_data
from burnlike.train.logger import rust_f64


class WithEmptySlot(nn.Module):
    """A module whose first submodule slot is empty (`None`), as optional layers often are."""

    def __init__(self) -> None:
        super().__init__()
        self.register_module("skip", None)
        self.head = nn.Linear(3, 2)


def test_an_empty_module_slot_is_skipped_and_the_next_submodules_are_recorded(tmp_path):
    model = WithEmptySlot()
    assert set(module_to_record(model)) == {"head"}
    path = CompactRecorder().save_module(model, tmp_path / "m")
    loaded = WithEmptySlot()
    nn.init.zeros_(loaded.head.weight)
    CompactRecorder().load_module(loaded, path)
    assert torch.equal(loaded.head.weight, model.head.weight.half().float())


def test_many_stateless_modules_are_allowed_for_in_the_decoding_budget(tmp_path):
    """Each stateless module is a value in the record (Burn's nil): a module of 6,000 of them must
    load, however small its tensor count makes the budget."""
    model = nn.Sequential(nn.Linear(2, 2), *[nn.ReLU() for _ in range(6000)])
    path = CompactRecorder().save_module(model, tmp_path / "relus")
    loaded = nn.Sequential(nn.Linear(2, 2), *[nn.ReLU() for _ in range(6000)])
    CompactRecorder().load_module(loaded, path)
    assert torch.equal(loaded[0].weight, model[0].weight.half().float())


def test_a_corrupt_gzip_record_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "broken.mpk.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"not a deflate stream" * 4)
    with pytest.raises(RecordError) as error:
        NamedMpkGzFileRecorder().load_module(nn.Linear(2, 2), path)
    assert str(path) in str(error.value) and "gzip" in str(error.value)


def test_tensor_bytes_of_the_wrong_kind_are_named_by_their_type():
    with pytest.raises(RecordError) as error:
        check_data({"bytes": "AAAA", "shape": [1], "dtype": "F32"}, "layer.weight")
    assert "bytes must be binary, got str" in str(error.value)


@pytest.mark.parametrize("text", ["runs/a://b", "out/s3://bucket/model.mpk"])
def test_a_local_path_with_a_url_inside_it_is_not_a_url(text):
    assert not is_url(text)
    assert is_url("s3://bucket/model.mpk")


def test_an_object_inside_an_omegaconf_hparam_goes_to_the_callers_handler():
    class Opaque:
        pass

    cfg = OmegaConf.create({"opt": {"thing": Opaque()}}, flags={"allow_objects": True})
    seen: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the handler is told instead of a warning
        encoded = encode_value(cfg, lambda key, t: t.dtype, "hparams", lambda key, kind: seen.append((key, kind)))
    assert seen == [("hparams.opt.thing", f"{__name__}.{Opaque.__qualname__}")]
    assert encoded["opt"]["thing"]["__burnlike__"] == "unstorable"


@pytest.mark.parametrize(("value", "text"), [(math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "NaN")])
def test_infinities_are_spelled_as_rust_prints_them(value, text):
    assert rust_f64(value) == text


def test_a_batcher_without_batch_is_named_by_its_type():
    from burnlike.data import DataLoaderBuilder

    with pytest.raises(TypeError) as error:
        DataLoaderBuilder([1, 2, 3])  # type: ignore[arg-type]
    assert str(error.value).endswith("got list")


def test_a_text_folder_read_as_a_csv_dataset_keeps_each_files_label(tmp_path):
    from burnlike.data.dataset import TextCsvDataset

    for label, texts in {"neg": ["bad", "awful"], "pos": ["good"]}.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text)
    data = TextCsvDataset.from_folder(tmp_path)
    items = sorted((data.get(i).text, data.get(i).label) for i in range(len(data)))
    classes = list(data.classes)
    assert sorted(classes) == ["neg", "pos"]
    assert items == sorted([("bad", classes.index("neg")), ("awful", classes.index("neg")),
                            ("good", classes.index("pos"))])


# --- the record sample of 2026-11-25 (second draw, after the save's parts) -------------------------------

def _bin_item(blob: bytes) -> bytes:
    """A bincode record holding a non-module item (a training checkpoint's layout): Burn's five
    metadata strings, then the MessagePack item as one length-prefixed blob."""
    from burnlike.record.format.bincode import ITEM_FORMAT

    def string(s: str) -> bytes:
        return bytes([len(s)]) + s.encode()

    return b"".join(string(s) for s in ("f32", "i64", ITEM_FORMAT + "checkpoint", "0.1.0", "Full")) + \
        bytes([len(blob)]) + blob


def test_a_bincode_item_is_decoded_within_the_callers_budget_and_as_a_burn_record(tmp_path):
    import msgpack

    from burnlike.record.format.bincode import decode
    from burnlike.record.format.budget import Budget

    data = _bin_item(msgpack.packb({"epoch": [1, 2, 3, 4, 5]}))
    record = decode(data, tmp_path / "c.bin", None)
    assert set(record) == {"metadata", "item", "_b"} and record["_b"] == []  # BurnRecord's fields
    assert record["item"] == {"epoch": [1, 2, 3, 4, 5]}
    with pytest.raises(RecordError, match="more than 4 values"):
        decode(data, tmp_path / "c.bin", None, Budget(4, tmp_path / "c.bin"))


def test_what_a_map_and_an_array_cost_in_the_budget():
    """A container is charged 1 + its entries (a map: 1 + keys + values) when its header is read."""
    import io

    import msgpack

    from burnlike.record.format.budget import Budget
    from burnlike.record.format.messagepack import read_msgpack

    for doc, cost in (([1, 2, 3], 4), ({"a": 1, "b": 2}, 5), ([[1], []], 3 + 2 + 1)):
        data = msgpack.packb(doc)
        budget = Budget(100)
        assert read_msgpack(io.BytesIO(data), len(data), None, budget=budget) == doc
        assert budget.used == cost, doc


@pytest.mark.parametrize("n", [251, 300, 2**16 - 1])
def test_bincode_writes_251_to_65535_as_a_3_byte_varint(n):
    import io

    from burnlike.record.format.bincode import _Writer
    from burnlike.record.tensor.ahead import ViewsAhead

    with ViewsAhead(()) as views:
        writer = _Writer(io.BytesIO(), views)
        writer.varint(n)
    assert writer.parts == [b"\xfb" + n.to_bytes(2, "little")]


def test_a_temp_file_of_another_users_live_process_is_kept(tmp_path, monkeypatch):
    from burnlike.record.format import files

    def not_permitted(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(files.os, "kill", not_permitted)
    theirs = tmp_path / f".m.mpk.burnlike.{files._HOST}.4242.abcd.tmp"
    theirs.write_bytes(b"half a save")
    assert files._alive(4242)
    assert files.remove_stale_temps(tmp_path) == [] and theirs.exists()


def test_load_weights_names_the_file_when_the_record_does_not_fit(tmp_path):
    from burnlike.record import load_weights

    path = CompactRecorder().save_module(nn.Linear(3, 2), tmp_path / "small")
    with pytest.raises(RecordError) as error:
        load_weights(nn.Linear(4, 2), path)
    assert str(path) in str(error.value)


def test_an_object_in_a_list_goes_to_the_handler_under_its_index():
    class Opaque:
        pass

    seen: list[tuple[str, str]] = []
    encoded = encode_value([1, Opaque()], lambda key, t: t.dtype, "hp", lambda key, kind: seen.append((key, kind)))
    assert seen == [("hp[1]", f"{__name__}.{Opaque.__qualname__}")]
    assert encoded[0] == 1 and encoded[1]["__burnlike__"] == "unstorable"


@pytest.mark.parametrize("item", [[1, 2, 3], [1], "ab"])
def test_a_tagged_dict_entry_that_is_not_a_pair_is_refused_by_name(item):
    from burnlike.record.checkpoint.value import decode_value

    with pytest.raises(RecordError) as error:
        decode_value({"__burnlike__": "dict", "items": [item]}, "f.ckpt", "hparams")
    assert "malformed 'dict' value ('expected a [key, value] pair')" in str(error.value)


def test_views_ahead_joins_a_tensors_parts_for_view(monkeypatch):
    from burnlike.record.tensor import ahead
    from burnlike.record.tensor.layout import TensorBytes

    monkeypatch.setattr(ahead, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(ahead, "_AHEAD_BYTES", 1 << 16)
    torch.manual_seed(5)
    tbs = [TensorBytes(torch.randn(600, 200), torch.float16, transpose=True) for _ in range(2)]
    expected = [bytes(TensorBytes(tb.tensor, torch.float16, transpose=True)) for tb in tbs]
    with ahead.ViewsAhead(tbs, workers=2) as views:
        assert len(views.queue) > 2  # parts
        assert [bytes(views.view(tb)) for tb in tbs] == expected
