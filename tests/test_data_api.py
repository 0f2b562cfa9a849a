"""burn::data API details pinned for mutation testing (issue 17): the loader builder's switches, the
device loader's description, wrapped datasets (Burn-style and torch-style), the tokenizers' edges and
the text batcher's duck-typed items."""

import dataclasses

import pytest
import torch
from expect import raises_exactly

from burnlike.data import (
    ByteTokenizer,
    CharTokenizer,
    DataLoaderBuilder,
    InMemDataset,
    SeqLengthOption,
    TabularBatcher,
    TextClassificationBatcher,
)
from burnlike.data.dataset import as_dataset
from burnlike.data.dataset.table import TabularDataset, TabularItems


class Stack:
    def batch(self, items, device=None):
        return torch.tensor(items)


# --- DataLoaderBuilder -------------------------------------------------------------------------------


def test_builder_switches_reach_the_dataloader():
    data = InMemDataset([1, 2, 3])
    default = DataLoaderBuilder(Stack()).num_workers(1).build(data)
    assert default.pin_memory is False and default.persistent_workers is True
    loader = DataLoaderBuilder(Stack()).pin_memory().persistent_workers(False).num_workers(1).build(data)
    assert loader.pin_memory is True and loader.persistent_workers is False
    loader = DataLoaderBuilder(Stack()).pin_memory(False).persistent_workers().num_workers(1).build(data)
    assert loader.pin_memory is False and loader.persistent_workers is True


def test_device_loader_describes_itself():
    data = InMemDataset([1, 2, 3, 4, 5])
    plain = DataLoaderBuilder(Stack()).batch_size(2).on_device("cpu").build(data)
    assert repr(plain) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=False, batches=3)"
    shuffled = DataLoaderBuilder(Stack()).batch_size(2).shuffle(0).drop_last().on_device("cpu").build(data)
    assert repr(shuffled) == "DeviceDataLoader(5 items on cpu, batch_size=2, shuffle=True, batches=2)"


# --- datasets ----------------------------------------------------------------------------------------


def test_is_empty():
    assert InMemDataset([]).is_empty() and not InMemDataset([7]).is_empty()


class TorchStyleWithGet:
    """A torch map-style dataset that also has a `get` (as a mapping does) but no Burn `len()`."""

    def __init__(self, values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)

    def get(self, key, default=None):
        return "not an item"


class BurnStyle:
    """Burn's `Dataset` trait only: `get(i)` (None past the end) and `len()` (here a numpy-like int)."""

    def get(self, i):
        return i * 10 if 0 <= i < 3 else None

    def len(self):
        return torch.tensor(3)


class Gathering(TorchStyleWithGet):
    def __getitems__(self, indices):
        return ("gathered", list(indices))


def test_wrapped_datasets_of_each_style():
    torch_style = as_dataset(TorchStyleWithGet(["a", "b"]))
    assert torch_style.len() == 2 and torch_style.get(1) == "b" and torch_style.get(2) is None
    assert torch_style.__getitems__([1, 0]) == ["b", "a"]  # no batched fetch: one item each
    burn_style = as_dataset(BurnStyle())
    assert burn_style.len() == 3 and type(burn_style.len()) is int and len(burn_style) == 3
    assert burn_style.__getitems__([2, 0]) == [20, 0] and list(burn_style.iter()) == [0, 10, 20]
    assert as_dataset(Gathering(["a", "b"])).__getitems__((1, 0)) == ("gathered", [1, 0])  # the inner batched fetch


def test_tabular_rows_and_bounds():
    data = TabularDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 0]), ["x", "y"], ["label"], ["a", "b"])
    assert data.get(3) is None and data.get(-1) is None and data.get(2).features.tolist() == [4.0, 5.0]
    items = data.__getitems__([2, 0])
    assert isinstance(items, TabularItems) and len(items) == 2
    assert TabularBatcher().batch(items).inputs.tolist() == [[4.0, 5.0], [0.0, 1.0]]


# --- tokenizers and the text batcher -------------------------------------------------------------------


def test_byte_tokenizer_decode_edges():
    tok = ByteTokenizer()
    assert tok.decode([3, 3 + ord("a")]) == "\x00a"  # token 3 is byte 0
    assert tok.decode([0, 1, 2, 259, 300, 3 + ord("b")]) == "b"  # special and out-of-range tokens are skipped
    assert tok.decode([3 + 0xFF, 3 + ord("c")]) == "\ufffdc"  # invalid UTF-8 is replaced, not an error
    assert tok.decode(tok.encode("héllo ✓")) == "héllo ✓"


def test_char_tokenizer_order_decode_and_refusal():
    tok = CharTokenizer.from_texts(["bbca"])  # b twice; c and a once each: ties in character order
    assert tok.alphabet == ["b", "a", "c"]
    assert tok.decode([3, 4, 5, 6, 0, 2]) == "bac"  # 6 is past the alphabet: skipped
    assert CharTokenizer.from_texts(["bbca", "a"], min_count=2).alphabet == ["a", "b"]
    with raises_exactly(ValueError, "the alphabet must be single characters"):
        CharTokenizer(["ab", "c"])


def test_seq_length_variants():
    assert SeqLengthOption.NoMax() == SeqLengthOption("no_max") == SeqLengthOption.of(None)
    assert SeqLengthOption.of(4) == SeqLengthOption("max", 4)
    assert SeqLengthOption.Fixed(4) == SeqLengthOption("fixed", 4)


@dataclasses.dataclass
class Review:
    text: str
    label: int


@dataclasses.dataclass
class Scored:
    text: bytes
    label: int


def test_text_batcher_takes_any_item_with_text_and_label():
    batch = TextClassificationBatcher(ByteTokenizer()).batch([Review("ab", 1), Review("c", 0)])
    assert batch.tokens.tolist() == [[1, 3 + ord("a"), 3 + ord("b")], [1, 3 + ord("c"), 0]]
    assert batch.labels.tolist() == [1, 0]
    with raises_exactly(TypeError, "expected items with .text and .label (or strings), got Scored"):
        TextClassificationBatcher(ByteTokenizer()).batch([Scored(b"ab", 1)])


# --- tensor trees, transforms, the device loader -----------------------------------------------------


def test_map_tensors_walks_every_container_kind():
    from collections import namedtuple

    from burnlike.data.tensor_tree import map_tensors, tensors

    Pair = namedtuple("Pair", "left right")
    tree = {"pair": Pair(torch.tensor(1), "path.png"), "list": [torch.tensor(2), 3], "tuple": (torch.tensor(4),),
            "plain": 5}
    doubled = map_tensors(lambda t: t * 2, tree)
    assert type(doubled) is dict and type(doubled["pair"]) is Pair and type(doubled["tuple"]) is tuple
    assert doubled["pair"].left.item() == 2 and doubled["pair"].right == "path.png"
    assert doubled["list"][0].item() == 4 and doubled["list"][1] == 3 and doubled["tuple"][0].item() == 8
    assert doubled["plain"] == 5
    assert [t.item() for t in tensors(tree)] == [1, 2, 4]
    assert map_tensors(lambda t: t + 1, Pair) is Pair  # a class is a leaf, even a dataclass one
    assert map_tensors(lambda t: t + 1, TabularItems) is TabularItems


def test_partial_splits():
    from burnlike.data.dataset import PartialDataset

    data = InMemDataset(range(4))
    assert [list(p.iter()) for p in PartialDataset.split(data, 1)] == [[0, 1, 2, 3]]
    with raises_exactly(ValueError, "num must be >= 1, got 0"):
        PartialDataset.split(data, 0)
    assert [list(p.iter()) for p in PartialDataset.split_chunks(data, 1, 1)] == [[0, 1, 2, 3]]
    # 2 batches of 2 over 3 parts: the third would start at the end, so it is left out
    assert [list(p.iter()) for p in PartialDataset.split_chunks(data, 3, 2)] == [[0, 1], [2, 3]]
    for num, size in ((0, 2), (2, 0)):
        with raises_exactly(ValueError, f"num and batch_size must be >= 1, got {num} and {size}"):
            PartialDataset.split_chunks(data, num, size)


def test_selection_slices_and_splits():
    from burnlike.data.dataset import SelectionDataset

    data = InMemDataset("abcd")
    selection = SelectionDataset(data, [3, 1, 0])
    assert [list(s.iter()) for s in selection.split(1)] == [["d", "b", "a"]]
    with raises_exactly(ValueError, "num must be >= 1, got 0"):
        selection.split(0)
    assert selection.slice(1, 1).len() == 0  # an empty slice is allowed
    with raises_exactly(IndexError, "slice 2..1 is out of range for 3 indices"):
        selection.slice(2, 1)
    unchecked = SelectionDataset.from_indices_unchecked(data, [0, 9])  # Burn: no check of the indices
    assert unchecked.slice(0, 2).get(1) is None and unchecked.slice(0, 2).get(0) == "a"


def test_shuffled_indices_are_iota_shuffled_by_the_rng():
    import numpy as np

    from burnlike.data.dataset.transform.options import shuffle
    from burnlike.data.dataset.transform.selection import iota, shuffled_indices

    got = shuffled_indices(10, np.random.default_rng(3))
    want = iota(10)
    shuffle(want, np.random.default_rng(3))
    assert got.tolist() == want.tolist() and sorted(got.tolist()) == list(range(10)) and got.dtype == np.int64


def test_sampler_batched_fetch_and_copy():
    import copy
    from collections import Counter

    from burnlike.data.dataset import SamplerDataset, SamplerDatasetOptions

    source = InMemDataset(range(5))
    sampler = SamplerDataset(source, SamplerDatasetOptions().without_replacement().with_fixed_size(12).with_seed(1))
    drawn = sampler.__getitems__(list(range(12)))
    counts = Counter(drawn)
    assert sorted(counts) == [0, 1, 2, 3, 4] and sorted(counts.values()) == [2, 2, 2, 3, 3]  # 12 = 2·5 + 2 distinct
    for bad in (-1, 12):
        with raises_exactly(IndexError, f"index {bad} is out of range for SamplerDataset of length 12"):
            sampler.__getitems__([0, bad])
    with_replacement = SamplerDataset(source, SamplerDatasetOptions().with_fixed_size(6).with_seed(2))
    twin = copy.deepcopy(with_replacement)  # what a DataLoader worker gets: the stream state, a new lock
    assert [with_replacement.get(0) for _ in range(6)] == [twin.get(0) for _ in range(6)]
    assert twin.__getitems__([0, 5]) == with_replacement.__getitems__([0, 5])


def test_windows_of_one_and_mapper_refusal():
    from burnlike.data.dataset import MapperDataset
    from burnlike.data.dataset.transform import windows

    assert list(windows(InMemDataset("ab"), 1)) == [["a"], ["b"]]
    with raises_exactly(TypeError, "mapper must have a map(item) method or be callable, got int"):
        MapperDataset(InMemDataset("ab"), 3)


class Gathered:
    """What a dataset's batched fetch returns (as MnistItems): the batcher batches it in one go."""

    def __init__(self, values):
        self.values = values


class GatheringData(InMemDataset):
    def __getitems__(self, indices):
        return Gathered([self.items[i] for i in indices])


class GatherBatcher:
    def batch(self, items, device=None):
        assert isinstance(items, Gathered), "expected the dataset's batched fetch"
        return torch.tensor(items.values)


class NoTensors:
    def batch(self, items, device=None):
        return "text"


def test_device_loader_batches_the_datasets_batched_fetch_and_refuses_batches_without_tensors():
    loader = DataLoaderBuilder(GatherBatcher()).batch_size(2).on_device("cpu").build(GatheringData([5, 6, 7]))
    assert [b.tolist() for b in loader] == [[5, 6], [7]]
    with raises_exactly(TypeError, "on_device: NoTensors.batch(...) returned no tensors (str); nothing to keep on "
                                   "the device"):
        DataLoaderBuilder(NoTensors()).on_device("cpu").build(InMemDataset([1]))


# --- SQLite datasets -------------------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: float
    y: int


def write_points(db, split="train", n=3):
    from burnlike.data.dataset import SqliteDatasetWriter

    with SqliteDatasetWriter(db) as writer:
        for i in range(n):
            writer.write(split, {"x": i / 2, "y": i})


def test_sqlite_errors_name_the_database_split_and_row(tmp_path):
    import sqlite3

    from burnlike.data.dataset import DatasetError, SqliteDataset

    db = tmp_path / "points.db"
    write_points(db)
    with raises_exactly(DatasetError, f"{db}: no split 'valid' (no such table); the splits are ['train']"):
        SqliteDataset(db, "valid")  # the table sqlite_sequence (AUTOINCREMENT's) is not a split
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all, just some bytes" * 100)
    with pytest.raises(DatasetError) as e:
        SqliteDataset(junk, "train")
    assert str(e.value).startswith(f"{junk}: not a readable SQLite database (")
    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("create table train (id integer primary key, x real)")
    conn.execute("create table numbers (row_id integer primary key, item blob)")
    conn.execute("insert into numbers (item) values (?)", (b"\x05",))  # MessagePack 5: neither a map nor an array
    conn.commit()
    conn.close()
    with raises_exactly(DatasetError, f"{tmp_path / 'other.db'} split 'train': no row_id column (Burn's layout: an "
                                      "integer primary key row_id from 1); the columns are ['id', 'x']"):
        SqliteDataset(tmp_path / "other.db", "train")
    with raises_exactly(DatasetError, f"{tmp_path / 'other.db'} split 'numbers' row_id 1: item is a int, expected a "
                                      "map or an array for Point"):
        SqliteDataset(tmp_path / "other.db", "numbers", Point).get(0)
    assert SqliteDataset(tmp_path / "other.db", "numbers").get(0) == 5  # without an item type: the value itself
    data = SqliteDataset.from_db_file(db, "train", Point)
    assert (data.split, data.item_type) == ("train", Point) and data.get(2) == Point(1.0, 2) and data.get(3) is None
    with raises_exactly(IndexError, f"index 3 is out of range for {db} split 'train' (length 3)"):
        data.__getitems__([0, 3, 1])


def test_sqlite_split_names_are_quoted_not_sql(tmp_path):
    from burnlike.data.dataset import SqliteDataset, SqliteDatasetWriter

    db = tmp_path / "q.db"
    write_points(db, split='my "quoted" split', n=2)
    assert SqliteDataset(db, 'my "quoted" split', Point).get(1) == Point(0.5, 1)
    for bad in ("", "a\x00b"):
        with raises_exactly(ValueError, f"invalid split name {bad!r}"):
            with SqliteDatasetWriter(tmp_path / "bad.db") as writer:
                writer.write(bad, {"x": 1.0})


def test_sqlite_items_keep_bytes_and_integer_keys_and_connections_cross_threads(tmp_path):
    import threading

    from burnlike.data.dataset import DatasetError, SqliteDataset, SqliteDatasetWriter

    db = tmp_path / "deep" / "er" / "blobs.db"  # the writer creates the folders
    writer = SqliteDatasetWriter(db)
    assert writer.tmp_file == tmp_path / "deep" / "er" / "blobs.db.tmp" and writer.tmp_file.exists()
    done = []
    thread = threading.Thread(target=lambda: done.append(writer.write("train", {"raw": b"\x00\xff", "ids": {7: "a"}})))
    thread.start()
    thread.join()
    assert done == [0]  # written from another thread than the one that opened the writer
    writer.set_completed()
    with raises_exactly(DatasetError, f"{db}: cannot write to a completed dataset writer"):
        writer.write("train", {"raw": b""})
    with raises_exactly(FileExistsError, f"{db} already exists and overwrite is False"):
        SqliteDatasetWriter(db)
    data = SqliteDataset(db, "train")
    assert data.get(0) == {"raw": b"\x00\xff", "ids": {7: "a"}}
    seen = []
    thread = threading.Thread(target=lambda: seen.append(data.get(0)))  # a DataLoader thread, say
    thread.start()
    thread.join()
    assert seen == [{"raw": b"\x00\xff", "ids": {7: "a"}}]


def test_sqlite_storage_locations(tmp_path, monkeypatch):
    from burnlike.data.dataset import SqliteDatasetStorage

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert SqliteDatasetStorage.base_dir() == tmp_path / "cache" / "burn-dataset"
    assert SqliteDatasetStorage.base_dir(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert SqliteDatasetStorage.base_dir() == tmp_path / "home" / ".cache" / "burn-dataset"
    storage = SqliteDatasetStorage.from_name('a/b:c*"d').with_base_dir(tmp_path / "base")
    assert storage.db_file() == tmp_path / "base" / "abcd.db" and storage.name == 'a/b:c*"d'
    assert SqliteDatasetStorage.from_name("/:").with_base_dir(tmp_path).db_file() == tmp_path / "dataset.db"
    assert SqliteDatasetStorage.from_file(tmp_path / "f.db").with_base_dir(tmp_path / "x").db_file() == tmp_path / "f.db"
    with raises_exactly(ValueError, "give exactly one of name and db_file"):
        SqliteDatasetStorage()
    with storage.writer() as writer:
        writer.write("train", {"x": 1.0, "y": 2})
    assert storage.exists() and storage.reader("train", Point).get(0) == Point(1.0, 2)
    with storage.writer(overwrite=True) as writer:
        writer.write("train", {"x": 3.0, "y": 4})
    assert storage.reader("train", Point).get(0) == Point(3.0, 4)


# --- rows into typed items (CSV, JSON lines) -------------------------------------------------------------


@dataclasses.dataclass
class Flagged:
    name: str
    active: bool
    note: str | None = None
    extra: int = dataclasses.field(default=0, init=False)


def test_booleans_are_read_as_serde_would(tmp_path):
    path = tmp_path / "flags.jsonl"
    rows = [("a", True), ("b", 0), ("c", 1), ("d", " Yes "), ("e", "f"), ("f", "T"), ("g", "no")]
    path.write_text("\n".join(f'{{"name": "{n}", "active": {json_value(v)}}}' for n, v in rows) + "\n\n")
    items = InMemDataset.from_json_rows(path, Flagged).items
    assert [(i.name, i.active) for i in items] == [("a", True), ("b", False), ("c", True), ("d", True), ("e", False),
                                                   ("f", True), ("g", False)]
    assert all(type(i.active) is bool for i in items)
    from burnlike.data.dataset import DatasetError

    for bad, shown in ((2, "2"), ("maybe", "'maybe'"), (1.0, "1.0")):
        path.write_text(f'{{"name": "x", "active": {json_value(bad)}}}\n')
        with raises_exactly(DatasetError, f"{path} line 1: column 'active': {shown} is not a valid bool"):
            InMemDataset.from_json_rows(path, Flagged)


def json_value(v):
    import json

    return json.dumps(v)


def test_json_rows_errors_and_plain_values(tmp_path):
    from burnlike.data.dataset import DatasetError, DatasetNotFoundError

    path = tmp_path / "rows.jsonl"
    path.write_text('{"name": "a", "active": true}\n[1, 2]\n')
    with raises_exactly(DatasetError, f"{path} line 2: expected a JSON object for Flagged, got list"):
        InMemDataset.from_json_rows(path, Flagged)
    assert InMemDataset.from_json_rows(path).items == [{"name": "a", "active": True}, [1, 2]]  # no item type: as is
    with raises_exactly(DatasetNotFoundError, f"JSON lines file {tmp_path / 'none.jsonl'} not found"):
        InMemDataset.from_json_rows(tmp_path / "none.jsonl")
    path.write_text('{"name": "a", "active": null}\n')
    with raises_exactly(DatasetError, f"{path} line 1: column 'active' is empty; expected a bool (declare it `| None` "
                                      "to allow that)"):
        InMemDataset.from_json_rows(path, Flagged)
    path.write_text('{"name": "a", "active": true, "note": null}\n')
    assert InMemDataset.from_json_rows(path, Flagged).items[0].note is None


def test_csv_rows_keep_going_after_blank_lines_and_name_missing_columns(tmp_path):
    from burnlike.data.dataset import MissingColumnError

    path = tmp_path / "f.csv"
    path.write_text("name;active\n'a;b';yes\n\nc;no\n")
    items = InMemDataset.from_csv(path, Flagged, delimiter=";", quotechar="'").items
    assert [(i.name, i.active) for i in items] == [("a;b", True), ("c", False)]
    path.write_text("a,1\n\nb,0\n")
    assert [(i.name, i.active) for i in InMemDataset.from_csv(path, Flagged, has_headers=False).items] == \
        [("a", True), ("b", False)]
    path.write_text("title,other\nx,y\n")
    with raises_exactly(MissingColumnError, f"{path}: column 'name' (field name), 'active' (field active) not found "
                                            "for Flagged; the columns are ['title', 'other']"):
        InMemDataset.from_csv(path, Flagged)
    with raises_exactly(TypeError, "item_type must be a dataclass (or None for dict rows), got <class 'int'>"):
        InMemDataset.from_csv(path, int)
    data = InMemDataset([1, 2])
    with raises_exactly(IndexError, "index 2 is out of range for InMemDataset of length 2"):
        data[2]


def test_rows_of_dataclass_items_store_nested_dataclasses_as_maps():
    from burnlike.data.dataset.rows import column, to_row

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


# --- text datasets -------------------------------------------------------------------------------------


def test_text_decoding_follows_burns_detection_order():
    import codecs

    from burnlike.data.dataset.nlp import decode_text

    assert decode_text(codecs.BOM_UTF8 + "héllo".encode()) == "héllo"
    assert decode_text(codecs.BOM_UTF16_LE + "hé".encode("utf-16-le")) == "hé"
    assert decode_text(codecs.BOM_UTF16_BE + "hé".encode("utf-16-be")) == "hé"
    assert decode_text("中文".encode("gb18030")) == "中文"
    assert decode_text(b"ok \xff") == "ok \ufffd"  # neither UTF-8 nor GB18030: lossy UTF-8


def test_text_folders_and_csv_name_what_is_wrong(tmp_path):
    from burnlike.data.dataset import DatasetError, TextCsvDataset, TextFolderDataset

    (tmp_path / "pos").mkdir()
    (tmp_path / "pos" / "a.txt").write_text("good")
    assert TextFolderDataset.new_classification_with(tmp_path, [".TXT"]).get(0).text.text == "good"
    with raises_exactly(DatasetError, "Invalid file extension in ['.md']: text folders read .txt files"):
        TextFolderDataset.new_classification_with(tmp_path, [".md"])
    items = TextFolderDataset.new_classification_with_items([(tmp_path / "pos" / "a.txt", "pos")], ["neg", "pos"])
    item = items.get(0)
    assert (item.text.text, item.text.text_path, item.label) == ("good", str(tmp_path / "pos" / "a.txt"), 1)
    with raises_exactly(DatasetError, f"{tmp_path / 'pos' / 'a.txt'}: label 'pos' is not one of the classes ['neg']"):
        TextFolderDataset.new_classification_with_items([(tmp_path / "pos" / "a.txt", "pos")], ["neg"])
    path = tmp_path / "t.csv"
    path.write_text("text;label\n;b\nhi;a\n")
    data = TextCsvDataset.from_csv(path, delimiter=";")
    assert [(i.text, i.label) for i in data.items] == [("", 1), ("hi", 0)] and data.classes == ["a", "b"]
    path.write_text("text,label\nx,\ny,a\n")
    with raises_exactly(DatasetError, f"{path} line 2: label '' is not one of the classes ['a']"):
        TextCsvDataset.from_csv(path, classes=["a"])


# --- tables --------------------------------------------------------------------------------------------


def test_tabular_dataset_from_csv_names_what_is_wrong(tmp_path):
    from burnlike.data.dataset import DatasetError, EmptySplitError, MissingColumnError

    path = tmp_path / "t.csv"
    path.write_text("a;b;label\n1;2;y\n\n3;4;x\n")
    data = TabularDataset.from_csv(path, "label", delimiter=";", classes=["y", "x"])
    assert data.features.tolist() == [[1.0, 2.0], [3.0, 4.0]] and data.targets.tolist() == [0, 1]
    assert data.targets.dtype == torch.int64 and data.classes == ["y", "x"]
    reg = TabularDataset.from_csv(path, ["a", "b"], features=[], task="regression", delimiter=";")
    assert reg.targets.tolist() == [[1.0, 2.0], [3.0, 4.0]] and reg.classes is None
    with raises_exactly(ValueError, "classification takes one target column, got ['a', 'b']"):
        TabularDataset.from_csv(path, ["a", "b"], delimiter=";")
    with raises_exactly(DatasetError, f"{path} line 2: label 'y' is not one of the classes ['x']"):
        TabularDataset.from_csv(path, "label", delimiter=";", classes=["x"])
    with raises_exactly(MissingColumnError, f"{path}: column 'c', 'd' not found; the columns are ['a', 'b', 'label']"):
        TabularDataset.from_csv(path, "d", features=["c"], delimiter=";")
    path.write_text("a,label\n1,2,3\n")
    with raises_exactly(DatasetError, f"{path} line 2: 3 values, expected 2"):
        TabularDataset.from_csv(path, "label")
    path.write_text("a,label\nx,1\n")
    with raises_exactly(DatasetError, f"{path} line 2: column 'a': 'x' is not a number"):
        TabularDataset.from_csv(path, "label", task="regression")
    path.write_text("a,label\n1,zz\n")
    with raises_exactly(DatasetError, f"{path} line 2: column 'label': 'zz' is not a number"):
        TabularDataset.from_csv(path, "label", task="regression")
    path.write_text("")
    with raises_exactly(EmptySplitError, f"{path}: empty file, expected a header row"):
        TabularDataset.from_csv(path, "label")
    with raises_exactly(ValueError, "3 feature rows but 2 targets"):
        TabularDataset(torch.zeros(3, 4), torch.zeros(2), ["a"] * 4, ["t"])
    ints = TabularDataset(torch.ones(2, 1, dtype=torch.int64), torch.zeros(2), ["a"], ["t"])
    assert ints.features.dtype == torch.float32
    with raises_exactly(IndexError, "index out of range for TabularDataset of length 2"):
        ints.__getitems__([0, 2])
    with raises_exactly(IndexError, "index out of range for TabularDataset of length 2"):
        ints.__getitems__([-1])


def test_tabular_batcher_constants():
    batcher = TabularBatcher([1, 2], [2, 4])
    assert batcher.shift.dtype == torch.float32 and batcher.scale.dtype == torch.float32
    with raises_exactly(ValueError, "scale values must be > 0"):
        TabularBatcher(scale=[1.0, 0.0])
    x = torch.tensor([[1.0, 5.0, 2.0], [3.0, 5.0, 2.5], [2.0, 5.0, 3.0]])
    fit = TabularBatcher.fit(x, "min_max")
    assert fit.shift.tolist() == [1.0, 5.0, 2.0] and fit.scale.tolist() == [2.0, 1.0, 1.0]  # constant: scale 1
    assert TabularBatcher.fit(torch.tensor([[0.0], [0.5]]), "min_max").scale.tolist() == [0.5]  # ranges below 1 kept
    with raises_exactly(ValueError, "how must be 'standard' or 'min_max', got 'max'"):
        TabularBatcher.fit(x, "max")
    items = TabularItems(torch.ones(2, 2), torch.zeros(2))
    assert TabularBatcher().batch(items, device="meta").inputs.device.type == "meta"
    assert TabularBatcher().batch(items).inputs is items.features  # nothing to do: no copy, no move


# --- the image batcher ------------------------------------------------------------------------------------


def image_item(shape, dtype=torch.uint8, path="a.png", label=0):
    from burnlike.data.dataset.vision import ImageDatasetItem, Label

    return ImageDatasetItem(torch.zeros(shape, dtype=dtype), shape[1], shape[0], Label(label), path)


def test_image_batcher_refusals_name_the_values_and_files():
    from burnlike.data import ImageBatcher
    from burnlike.data.dataset.vision import MultiLabel

    with raises_exactly(ValueError, "mean and std need the same number of values (one, or one per channel), got "
                                    "[0.1, 0.2] and [1.0]"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0,))
    with raises_exactly(ValueError, "std values must be > 0, got [1.0, 0.0]"):
        ImageBatcher(mean=(0.0, 0.0), std=(1.0, 0.0))
    with raises_exactly(ValueError, "mean/std have 2 values but the images have 3 channels"):
        ImageBatcher(mean=(0.0, 0.0), std=(1.0, 1.0)).normalise(torch.zeros(1, 2, 2, 3, dtype=torch.uint8))
    with raises_exactly(ValueError, "images of different sizes in one batch: a.png is 2x3 (1 channels), b.png is "
                                    "2x4 (1 channels); resize them to one size (ImageFolderDataset(..., size=(H, W)), "
                                    "data.size=[H,W] in the app)"):
        ImageBatcher().batch([image_item((3, 2, 1)), image_item((4, 2, 1), path="b.png")])
    with raises_exactly(ValueError, "images of different depths in one batch: a.png is torch.uint8, b.png is "
                                    "torch.float32"):
        ImageBatcher().batch([image_item((3, 2, 1)), image_item((3, 2, 1), torch.float32, "b.png")])
    mixed = [image_item((2, 2, 1)), image_item((2, 2, 1))]
    mixed[1].annotation = MultiLabel([0])
    with raises_exactly(ValueError, "one batch mixes annotation kinds ['Label', 'MultiLabel']"):
        ImageBatcher(num_classes=2).batch(mixed)


def test_float_images_are_already_in_unit_range():
    from burnlike.data import ImageBatcher

    images = torch.tensor([0.0, 0.5, 1.0]).reshape(1, 1, 3, 1)
    assert ImageBatcher(mean=(0.5,), std=(0.25,)).normalise(images).flatten().tolist() == [-2.0, 0.0, 2.0]


def test_images_off_the_cpu_are_normalised_where_they_are():
    """The non-CPU path (a GPU's): shapes and dtype checked on the meta device, which has no values."""
    from burnlike.data import ImageBatcher

    images = torch.empty(2, 4, 5, 3, dtype=torch.uint8, device="meta")
    out = ImageBatcher(mean=(0.1, 0.2, 0.3), std=(0.5, 0.5, 0.5)).normalise(images)
    assert (out.device.type, out.dtype, tuple(out.shape)) == ("meta", torch.float32, (2, 3, 4, 5))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_images_on_a_gpu_are_normalised_there_with_the_cpus_values():
    """Mean and std move to the images' device (the meta device above accepts CPU operands, a GPU doesn't)."""
    from burnlike.data import ImageBatcher

    images = torch.randint(0, 256, (2, 4, 5, 3), dtype=torch.uint8)
    batcher = ImageBatcher(mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 0.125))
    out = batcher.normalise(images.cuda())
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), batcher.normalise(images))
