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
