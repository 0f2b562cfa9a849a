"""Datasets from files: CSV, JSON lines, SQLite (Burn's table-per-split layout), text folders and
CSVs, numeric tables; the text and table batchers; and the errors for bad input."""

import dataclasses
import os
import pickle
import sqlite3

import msgpack
import pytest
import torch

from burnlike.data import (
    ByteTokenizer,
    CharTokenizer,
    DataLoaderBuilder,
    SeqLengthOption,
    TabularBatcher,
    TextClassificationBatch,
    TextClassificationBatcher,
    TextClassificationInferenceBatch,
)
from burnlike.data.dataset import (
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    InMemDataset,
    MissingColumnError,
    ShuffledDataset,
    SqliteDataset,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
    TabularDataset,
    TextClassificationItem,
    TextCsvDataset,
    TextFolderDataset,
    column,
)
from burnlike.data.text import generate_padding_mask


@dataclasses.dataclass
class House:
    income: float = column("MedInc")
    age: int = column("HouseAge")
    name: str = "?"
    note: str | None = None


# --- InMemDataset from CSV and JSON lines -------------------------------------------------------

def test_csv_rows_become_typed_items(tmp_path):
    path = tmp_path / "houses.csv"
    path.write_text("HouseAge,MedInc,name,note\n12,3.5,a,\n40, 1.25 ,b,old\n")
    ds = InMemDataset.from_csv(path, House)
    assert ds.items == [House(3.5, 12, "a", None), House(1.25, 40, "b", "old")]
    assert InMemDataset.from_csv(path).items[1] == {"HouseAge": "40", "MedInc": " 1.25 ", "name": "b", "note": "old"}
    tsv = tmp_path / "h.tsv"
    tsv.write_text("12\t3.5\n")
    assert InMemDataset.from_csv(tsv, has_headers=False, delimiter="\t").items == [["12", "3.5"]]


def test_csv_errors_name_the_file_line_and_column(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("MedInc,name\n3.5,a\n")
    with pytest.raises(MissingColumnError, match=r"h\.csv: column 'HouseAge' \(field age\) not found.*MedInc"):
        InMemDataset.from_csv(path, House)
    path.write_text("MedInc,HouseAge\n3.5,12\n2.0,old\n")
    with pytest.raises(DatasetError, match=r"h\.csv line 3: column 'HouseAge': 'old' is not a valid int"):
        InMemDataset.from_csv(path, House)
    path.write_text("MedInc,HouseAge\n3.5\n")
    with pytest.raises(DatasetError, match="line 2: 1 values, expected 2"):
        InMemDataset.from_csv(path, House)
    path.write_text("")
    with pytest.raises(EmptySplitError, match="empty file"):
        InMemDataset.from_csv(path, House)
    with pytest.raises(DatasetNotFoundError, match="CSV file .*nope.csv not found"):
        InMemDataset.from_csv(tmp_path / "nope.csv")
    assert isinstance(DatasetNotFoundError("x"), FileNotFoundError)


def test_json_rows(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"MedInc": 2, "HouseAge": 3}\n\n{"MedInc": 1.5, "HouseAge": 4.0, "extra": 1}\n')
    assert InMemDataset.from_json_rows(path, House).items == [House(2.0, 3), House(1.5, 4)]
    assert InMemDataset.from_json_rows(path).items[0] == {"MedInc": 2, "HouseAge": 3}
    path.write_text('{"MedInc": 2}\n[1, 2]\n')
    with pytest.raises(MissingColumnError, match="line 1: column 'HouseAge'"):
        InMemDataset.from_json_rows(path, House)
    path.write_text('{"MedInc": 2, "HouseAge": 1}\n{oops\n')
    with pytest.raises(DatasetError, match="line 2: not valid JSON"):
        InMemDataset.from_json_rows(path, House)


# --- SQLite: Burn's layout -----------------------------------------------------------------------

def test_writer_and_reader_round_trip_per_split(tmp_path):
    db = tmp_path / "houses.db"
    with SqliteDatasetWriter(db) as writer:
        assert [writer.write("train", House(float(i), i, f"h{i}")) for i in range(5)] == [0, 1, 2, 3, 4]
        assert writer.write("test", {"income": 9.0, "age": 1}) == 0
        assert not db.exists()  # written to <db>.tmp until completed
    assert db.exists() and not (tmp_path / "houses.db.tmp").exists()
    train = SqliteDataset(db, "train", House)
    assert train.row_serialized and train.len() == 5
    assert train.get(3) == House(3.0, 3, "h3") and train.get(5) is None
    assert train.__getitems__([4, 0, 4]) == [House(4.0, 4, "h4"), House(0.0, 0, "h0"), House(4.0, 4, "h4")]
    assert SqliteDataset.from_db_file(db, "test").get(0) == {"income": 9.0, "age": 1}
    again = pickle.loads(pickle.dumps(train))  # what DataLoader workers get: reopens its own connection
    assert again.get(1) == House(1.0, 1, "h1")
    with pytest.raises(FileExistsError):
        SqliteDatasetWriter(db)
    SqliteDatasetWriter(db, overwrite=True).abort()


def test_reads_burns_array_encoded_items_and_column_tables(tmp_path):
    """Burn's writer stores `rmp_serde::to_vec(item)`: a struct as an array, fields in order. A table
    can also have a column per field (then `row_id` is the only extra column)."""
    db = tmp_path / "burn.db"
    conn = sqlite3.connect(db)
    conn.execute("create table train (row_id integer primary key autoincrement not null, item blob not null)")
    conn.execute("insert into train (item) values (?)", (msgpack.packb([3.25, 7, "x", None]),))
    conn.execute("create table valid (row_id integer primary key, MedInc real, HouseAge integer, name text)")
    conn.executemany("insert into valid (MedInc, HouseAge, name) values (?, ?, ?)", [(1.5, 2, "a"), (2.5, 3, "b")])
    conn.execute("create table bad (row_id integer primary key, MedInc real)")
    conn.execute("create table blobs (row_id integer primary key, item blob)")
    conn.execute("insert into blobs (item) values (?)", (b"\xc1",))  # 0xc1 is never valid MessagePack
    conn.commit()
    conn.close()
    assert SqliteDataset(db, "train", House).get(0) == House(3.25, 7, "x", None)
    valid = SqliteDataset(db, "valid", House)
    assert not valid.row_serialized and list(valid.iter()) == [House(1.5, 2, "a"), House(2.5, 3, "b")]
    assert SqliteDataset(db, "valid").get(1) == {"MedInc": 2.5, "HouseAge": 3, "name": "b"}
    with pytest.raises(DatasetNotFoundError, match=r"no split 'test' \(no such table\); the splits are \['bad', 'blobs'"):
        SqliteDataset(db, "test")
    with pytest.raises(MissingColumnError, match="split 'bad': column 'HouseAge'"):
        SqliteDataset(db, "bad", House)
    with pytest.raises(DatasetError, match="row_id 1: item is not valid MessagePack"):
        SqliteDataset(db, "blobs").get(0)
    with pytest.raises(DatasetNotFoundError, match="SQLite database .*missing.db not found"):
        SqliteDataset(tmp_path / "missing.db", "train")


def test_storage_names_the_file_like_burn(tmp_path):
    storage = SqliteDatasetStorage.from_name("ag/news").with_base_dir(tmp_path)
    assert storage.db_file() == tmp_path / "agnews.db" and not storage.exists()
    with storage.writer() as writer:
        writer.write("train", {"text": "hi", "label": 1})
    assert storage.exists() and storage.reader("train").get(0) == {"text": "hi", "label": 1}
    assert SqliteDatasetStorage.from_file(tmp_path / "x.db").db_file() == tmp_path / "x.db"


def test_sqlite_dataset_in_a_loader_with_workers(tmp_path):
    db = tmp_path / "n.db"
    with SqliteDatasetWriter(db) as writer:
        for i in range(40):
            writer.write("train", {"x": i})

    class Sum:
        def batch(self, items, device=None):
            return [item["x"] for item in items]

    loader = DataLoaderBuilder(Sum()).batch_size(8).num_workers(2).build(ShuffledDataset(SqliteDataset(db, "train"), 1))
    seen = [x for batch in loader for x in batch]
    assert sorted(seen) == list(range(40)) and seen == ShuffledDataset(InMemDataset(range(40)), 1).indices.tolist()

    class Owner(SqliteDataset):
        def __getitems__(self, indices):  # which process opened the connection this read went through
            return [{**item, "own": self._opened_in == os.getpid()} for item in super().__getitems__(indices)]

    forked = torch.utils.data.DataLoader(Owner(db, "train"), batch_size=20, num_workers=2,
                                         multiprocessing_context="fork", collate_fn=list)
    assert [item["own"] for batch in forked for item in batch] == [True] * 40  # never the parent's connection


# --- text ----------------------------------------------------------------------------------------

def test_text_folder_labels_by_folder_and_detects_encodings(tmp_path):
    (tmp_path / "pos").mkdir()
    (tmp_path / "neg").mkdir()
    (tmp_path / "pos" / "a.txt").write_bytes("très bien".encode())
    (tmp_path / "neg" / "b.txt").write_bytes(b"\xff\xfe" + "nul".encode("utf-16-le"))
    (tmp_path / "neg" / "c.txt").write_bytes("\ufeffbad".encode("utf-8"))
    (tmp_path / "neg" / "d.md").write_text("ignored")
    ds = TextFolderDataset.new_classification(tmp_path)
    assert ds.classes == ["neg", "pos"] and ds.len() == 3
    got = [(item.text.text, item.label, item.text.text_path.endswith(name)) for item, name in
           zip(ds.iter(), ["b.txt", "c.txt", "a.txt"])]
    assert got == [("nul", 0, True), ("bad", 0, True), ("très bien", 1, True)]
    with pytest.raises(DatasetNotFoundError, match="text folder .*nowhere not found"):
        TextFolderDataset.new_classification(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptySplitError, match=r"no text files \(\*\.txt\) under .*empty"):
        TextFolderDataset.new_classification(tmp_path / "empty")


def test_text_csv_labels(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('review,sentiment\n"good, really",positive\nawful,negative\nmeh,positive\n')
    ds = TextCsvDataset.from_csv(path, "review", "sentiment")
    assert ds.classes == ["negative", "positive"]
    assert ds.items == [TextClassificationItem("good, really", 1), TextClassificationItem("awful", 0),
                        TextClassificationItem("meh", 1)]
    path.write_text("text,label\na,2\nb,0\n")
    assert [i.label for i in TextCsvDataset.from_csv(path).items] == [2, 0]
    assert TextCsvDataset.from_csv(path).classes == ["0", "1", "2"]
    with pytest.raises(DatasetError, match=r"line 2: label '2' is not one of the classes \['0', '1'\]"):
        TextCsvDataset.from_csv(path, classes=["0", "1"])
    with pytest.raises(MissingColumnError, match="column 'body' not found"):
        TextCsvDataset.from_csv(path, text_column="body")
    path.write_text("text,label\n")
    with pytest.raises(EmptySplitError, match="no rows"):
        TextCsvDataset.from_csv(path)


def test_tokenizers():
    byte = ByteTokenizer()
    assert byte.encode("hé") == [1, ord("h") + 3, 0xC3 + 3, 0xA9 + 3] and byte.decode(byte.encode("hé")) == "hé"
    assert byte.vocab_size() == 259 and byte.pad_token() == 0
    chars = CharTokenizer.from_texts(["abba", "cab"])
    assert chars.alphabet == ["a", "b", "c"] and chars.encode("cz") == [1, 5, 2] and chars.decode([1, 5, 3]) == "ca"
    assert chars.vocab_size() == 6


def test_padding_mask_follows_burns_seq_length_options():
    seqs = [[5, 6, 7], [8]]
    tokens, mask = generate_padding_mask(0, seqs, SeqLengthOption.NoMax())
    assert tokens.tolist() == [[5, 6, 7], [8, 0, 0]] and mask.tolist() == [[False] * 3, [False, True, True]]
    assert generate_padding_mask(0, seqs, SeqLengthOption.Max(2))[0].tolist() == [[5, 6], [8, 0]]
    assert generate_padding_mask(0, seqs, SeqLengthOption.Max(9))[0].shape == (2, 3)
    assert generate_padding_mask(9, seqs, SeqLengthOption.Fixed(5))[0].tolist() == [[5, 6, 7, 9, 9], [8, 9, 9, 9, 9]]
    assert generate_padding_mask(0, seqs, 2)[0].shape == (2, 2)  # an int is Max(n), as Burn's From<Option<usize>>
    assert generate_padding_mask(0, [], None)[0].shape == (0, 1)
    with pytest.raises(ValueError):
        SeqLengthOption.Fixed(0)


def test_text_batcher_takes_any_tokenizer():
    items = [TextClassificationItem("ab", 1), TextClassificationItem("abcd", 0)]
    batch = TextClassificationBatcher(ByteTokenizer(), SeqLengthOption.Fixed(4)).batch(items)
    assert isinstance(batch, TextClassificationBatch) and batch.labels.tolist() == [1, 0]
    assert batch.tokens.tolist() == [[1, 100, 101, 0], [1, 100, 101, 102]]
    assert batch.mask_pad.tolist() == [[False, False, False, True], [False] * 4]
    words = TextClassificationBatcher(lambda s: [len(w) for w in s.split()], pad_token=-1).batch(["a bb", "ccc"])
    assert isinstance(words, TextClassificationInferenceBatch) and words.tokens.tolist() == [[1, 2], [3, -1]]
    assert words.mask_pad.tolist() == [[False, False], [False, True]]
    moved = TextClassificationBatcher(ByteTokenizer()).batch(items, device="meta")
    assert moved.tokens.device.type == "meta" and moved.mask_pad.device.type == "meta"
    with pytest.raises(TypeError, match="tokenizer"):
        TextClassificationBatcher(3)


# --- numeric tables ------------------------------------------------------------------------------

def test_tabular_csv_and_batcher(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,10,cat\n3,10,dog\n5,10,cat\n")
    ds = TabularDataset.from_csv(path, "y")
    assert ds.feature_names == ["a", "b"] and ds.classes == ["cat", "dog"] and ds.task == "classification"
    assert ds.features.tolist() == [[1, 10], [3, 10], [5, 10]] and ds.targets.tolist() == [0, 1, 0]
    batcher = TabularBatcher.fit(ds)
    batch = batcher.batch(ds.__getitems__([2, 0]))
    assert torch.allclose(batch.inputs, torch.tensor([[1.2247, 0.0], [-1.2247, 0.0]]), atol=1e-4)  # b constant: scale 1
    assert batch.targets.tolist() == [0, 0]
    slow = batcher.batch([ds[2], ds[0]])
    assert torch.equal(slow.inputs, batch.inputs) and torch.equal(slow.targets, batch.targets)
    reg = TabularDataset.from_csv(path, ["a"], ["b"], task="regression")
    assert reg.task == "regression" and reg.targets.tolist() == [[1.0], [3.0], [5.0]]
    minmax = TabularBatcher.fit(reg.features.new_tensor([[0.0], [4.0]]), "min_max").batch(reg.__getitems__([0]))
    assert minmax.inputs.tolist() == [[2.5]]


def test_tabular_errors(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,y\n1,0\nx,1\n")
    with pytest.raises(DatasetError, match=r"t\.csv line 3: column 'a': 'x' is not a number"):
        TabularDataset.from_csv(path, "y")
    with pytest.raises(MissingColumnError, match="column 'label' not found; the columns are \\['a', 'y'\\]"):
        TabularDataset.from_csv(path, "label")
    path.write_text("a,y\n")
    with pytest.raises(EmptySplitError, match="no rows after the header"):
        TabularDataset.from_csv(path, "y")
    with pytest.raises(ValueError, match="task"):
        TabularDataset.from_csv(path, "y", task="ranking")

