"""`burnlike.data.dataset.rows`: how a row becomes an item and an item a row. `ItemReader` fills a
dataclass's `__init__` fields from a mapping or a sequence, converting each value to the field's type
(bools as serde reads them: true/false spellings, 0 and 1; optional and union types; bytes as
UTF-8) and naming the source, row and column of a value it cannot convert; `to_row` stores nested
dataclasses as maps under their `column` names; `encode_labels` numbers labels by class."""

from __future__ import annotations

import dataclasses
import json

import pytest

from burnlike.data import InMemDataset
from burnlike.data.dataset import DatasetError
from burnlike.data.dataset.rows import ItemReader, column, encode_labels, to_row
from tests.data.dataset.helpers import Flagged, Pair
from tests.helpers.expect import raises_exactly


@dataclasses.dataclass
class Named:
    name: str
    ok: bool


@dataclasses.dataclass
class Mixed:
    n: int | None
    u: int | str
    skipped: int = dataclasses.field(default=0, init=False)
    s: str = ""


# --- items to rows ------------------------------------------------------------------------------------------
def test_rows_of_dataclass_items_store_nested_dataclasses_as_maps():
    @dataclasses.dataclass
    class Inner:
        v: int

    @dataclasses.dataclass
    class Outer:
        name: str = column("Name")
        inner: Inner = dataclasses.field(default_factory=lambda: Inner(3))
        kind: type = int

    assert to_row(Outer("x")) == {"Name": "x", "inner": {"v": 3}, "kind": int}
    assert to_row(Outer) is Outer and to_row({"a": 1}) == {"a": 1}
    assert column("Name", default="d").default == "d"


# --- rows to items ------------------------------------------------------------------------------------------
def test_item_reader_field_types_and_messages():
    reader = ItemReader(Mixed, "src")
    assert [f.name for f in reader.fields] == ["n", "u", "s"]  # a field outside __init__ doesn't end the list
    item = reader.from_mapping({"n": "5", "u": "abc", "s": b"caf\xc3\xa9"})
    assert item.n == 5 and item.u == "abc" and item.s == "café"
    assert reader.from_mapping({"n": "", "u": 3}).n is None
    with pytest.raises(DatasetError, match=r"^src: column 'u' is empty; expected a int \| str \(declare it"):
        reader.from_mapping({"n": 1, "u": None})
    pairs = ItemReader(Pair, "src")
    with pytest.raises(DatasetError, match=r"^src: column 'a': 'x' is not a valid int$"):
        pairs.from_mapping({"a": "x", "b": "y"})
    with pytest.raises(DatasetError, match=r"^src row 4: column 'a': 'x' is not a valid int$"):
        pairs.from_sequence(["x", "y"], " row 4")
    with pytest.raises(DatasetError, match=r"^src: 3 values for the 2 fields of Pair \(a, b\)$"):
        pairs.from_sequence([1, "y", 3])
    with pytest.raises(DatasetError, match=r"^src: 1 values for the 2 fields of Pair \(a, b\)$"):
        pairs.from_sequence([1])


# --- booleans -----------------------------------------------------------------------------------------------
def test_bool_columns_are_read_as_serde_would(tmp_path):
    path = tmp_path / "flags.jsonl"
    rows = [("a", True), ("b", 0), ("c", 1), ("d", " Yes "), ("e", "f"), ("f", "T"), ("g", "no")]
    path.write_text("\n".join(f'{{"name": "{n}", "active": {json.dumps(v)}}}' for n, v in rows) + "\n\n")
    items = InMemDataset.from_json_rows(path, Flagged).items
    assert [(i.name, i.active) for i in items] == [("a", True), ("b", False), ("c", True), ("d", True), ("e", False),
                                                   ("f", True), ("g", False)]
    assert all(type(i.active) is bool for i in items)
    for bad, shown in ((2, "2"), ("maybe", "'maybe'"), (1.0, "1.0")):
        path.write_text(f'{{"name": "x", "active": {json.dumps(bad)}}}\n')
        with raises_exactly(DatasetError, f"{path} line 1: column 'active': {shown} is not a valid bool"):
            InMemDataset.from_json_rows(path, Flagged)
    path.write_text('{"name": "a", "active": true}\n{"name": "b", "active": 0}\n{"name": "c", "active": 1}\n'
                    '{"name": "d", "active": 2}\n')
    with pytest.raises(DatasetError, match="line 4: column 'active': 2 is not a valid bool"):  # the bad row's line
        InMemDataset.from_json_rows(path, Flagged)


@pytest.mark.parametrize(("text", "value"), [("true", True), ("True", True), (" YES ", True), ("y", True), ("t", True),
                                             ("1", True), ("false", False), ("No", False), ("n", False),
                                             ("f", False), ("0", False)])
def test_csv_boolean_spellings_read_as_bools(tmp_path, text, value):
    path = tmp_path / "rows.csv"
    path.write_text(f"name,ok\na,{text}\n")
    assert InMemDataset.from_csv(path, Named).get(0) == Named("a", value)


@pytest.mark.parametrize("text", ["maybe", "2", "tru"])
def test_csv_value_that_is_not_a_boolean_is_named(tmp_path, text):
    path = tmp_path / "rows.csv"
    path.write_text(f"name,ok\na,{text}\n")
    with pytest.raises(DatasetError, match=rf"rows.csv line 2: column 'ok': '{text}' is not a valid bool"):
        InMemDataset.from_csv(path, Named)


# --- labels -------------------------------------------------------------------------------------------------
def test_encode_labels_without_line_numbers():
    assert encode_labels(["b", "a"], None, "src") == ([1, 0], ["a", "b"])
    with pytest.raises(DatasetError, match=r"^src: label 'z' is not one of the classes \['a'\]$"):
        encode_labels(["a", "z"], ["a"], "src")
