"""`burnlike.record.format.pretty_json`: Burn's JSON recorders. Records keep Burn's layout
(`metadata`, `item`, `_b` as null), indented or compact and gzipped; finite floats round-trip,
non-finite ones are refused at save (JSON can't hold them); bad or hostile JSON (invalid, deeply
nested, a flood of values) is a `RecordError` naming the file."""

from __future__ import annotations

import gzip
import json

import pytest

from burnlike.record import (
    JsonGzFileRecorder,
    PrettyJsonFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    load_checkpoint,
)
from tests.record.helpers import PL_VERSION, seeded_linear

# --- writing ---


def test_json_records_are_burns_layout_pretty_or_compact(tmp_path):
    module = seeded_linear(0)
    pretty = PrettyJsonFileRecorder().save_module(module, tmp_path / "m").read_text()
    doc = json.loads(pretty)
    assert list(doc) == ["metadata", "item", "_b"] and doc["_b"] is None  # serde_json's PhantomData
    assert pretty == json.dumps(doc, indent=2)
    compact = gzip.decompress(JsonGzFileRecorder().save_module(module, tmp_path / "m").read_bytes()).decode()
    assert compact == json.dumps(json.loads(compact), separators=(",", ":"))
    assert json.loads(compact)["item"] == doc["item"] and json.loads(compact)["_b"] is None


def test_json_checkpoints_keep_finite_floats(tmp_path):
    path = tmp_path / "c.json"
    RecorderCheckpointIO(PrettyJsonFileRecorder()).save_checkpoint(
        {"state_dict": {}, "pytorch-lightning_version": PL_VERSION, "best": 0.25}, path)
    assert load_checkpoint(path)["best"] == 0.25


def test_a_json_recorder_refuses_non_finite_floats_saying_what_to_use(tmp_path):
    with pytest.raises(RecordError) as e:
        RecorderCheckpointIO(PrettyJsonFileRecorder()).save_checkpoint(
            {"state_dict": {}, "pytorch-lightning_version": PL_VERSION, "best": float("inf")}, tmp_path / "c.json")
    assert str(e.value) == "JSON recorders can't store inf; use a MessagePack recorder"


# --- reading bad JSON ---


def test_invalid_json_is_refused_naming_the_file_and_quoting_the_parser(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"metadata": {}, "item": [1, 2')
    with pytest.raises(RecordError) as e:
        PrettyJsonFileRecorder().load(path)
    assert str(e.value) == f"{path}: not valid JSON (\"Expecting ',' delimiter: line 1 column 31 (char 30)\")"
    assert e.value.path == str(path)


def test_deeply_nested_json_is_a_record_error(tmp_path):
    (tmp_path / "deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(RecordError):
        PrettyJsonFileRecorder().load(tmp_path / "deep.json")


def test_a_json_record_of_empty_maps_is_refused_by_the_budget(tmp_path):
    path = tmp_path / "flood.json"
    path.write_text('{"metadata":{},"item":[' + ",".join(["{}"] * 100_000) + '],"_b":null}')
    with pytest.raises(RecordError, match="refusing to decode"):
        PrettyJsonFileRecorder().load(path)
