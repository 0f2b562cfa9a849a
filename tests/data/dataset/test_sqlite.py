"""`burnlike.data.dataset.sqlite`: Burn's SQLite dataset layout. `SqliteDatasetWriter` writes each
split to a table through `<db>.tmp` (completed, aborted or refused when the file exists);
`SqliteDataset` reads it back, and Burn's own files (MessagePack items as arrays, or a column per
field), across threads and with its own connection in each loader worker; split names are quoted,
not SQL. `SqliteDatasetStorage` names the file as Burn does and finds Burn's cache folder. Errors
name the database, the split, the row and the column."""

from __future__ import annotations

import dataclasses
import os
import pickle
import sqlite3
import threading

import msgpack
import pytest
import torch

from burnlike.data import DataLoaderBuilder, InMemDataset
from burnlike.data.dataset import (
    DatasetError,
    DatasetNotFoundError,
    MissingColumnError,
    ShuffledDataset,
    SqliteDataset,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
)
from tests.data.dataset.helpers import House, Pair
from tests.helpers.expect import raises_exactly


@dataclasses.dataclass
class Point:
    x: float
    y: int


def write_points(db, split="train", n=3):
    """`n` points `{"x": i / 2, "y": i}` in `split` of a new database `db`."""
    with SqliteDatasetWriter(db) as writer:
        for i in range(n):
            writer.write(split, {"x": i / 2, "y": i})


# --- writing and reading back -------------------------------------------------------------------------------
def test_sqlite_writer_and_reader_round_trip_per_split(tmp_path):
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


def test_sqlite_items_keep_bytes_and_integer_keys_and_connections_cross_threads(tmp_path):
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


def test_sqlite_split_names_are_quoted_not_sql(tmp_path):
    db = tmp_path / "q.db"
    write_points(db, split='my "quoted" split', n=2)
    assert SqliteDataset(db, 'my "quoted" split', Point).get(1) == Point(0.5, 1)
    for bad in ("", "a\x00b"):
        with raises_exactly(ValueError, f"invalid split name {bad!r}"):
            with SqliteDatasetWriter(tmp_path / "bad.db") as writer:
                writer.write(bad, {"x": 1.0})


def test_sqlite_writer_refusals_and_abort(tmp_path):
    db = tmp_path / "w.db"
    writer = SqliteDatasetWriter(db)
    assert writer.write("train", {"a": 1}) == 0
    with pytest.raises(DatasetError, match=r"w\.db split 'train': item \{1, 2\} can't be stored as MessagePack \("):
        writer.write("train", {1, 2})
    writer.abort()
    writer.abort()  # twice is fine: nothing left to remove
    assert not writer.tmp_file.exists() and not db.exists()
    with pytest.raises(DatasetError, match=r"cannot write to a completed dataset writer$"):
        writer.write("train", {"a": 2})


# --- Burn's layouts -----------------------------------------------------------------------------------------
def test_sqlite_reads_burns_array_encoded_items_and_column_tables(tmp_path):
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


# --- storage: where the file is -----------------------------------------------------------------------------
def test_sqlite_storage_base_dir_and_db_file_locations(tmp_path, monkeypatch):
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
    assert SqliteDatasetStorage.from_file(tmp_path / "x.db").db_file() == tmp_path / "x.db"
    with raises_exactly(ValueError, "give exactly one of name and db_file"):
        SqliteDatasetStorage()
    assert not storage.exists()
    with storage.writer() as writer:
        writer.write("train", {"x": 1.0, "y": 2})
    assert storage.exists() and storage.reader("train", Point).get(0) == Point(1.0, 2)
    assert storage.reader("train").get(0) == {"x": 1.0, "y": 2}  # without an item type: the stored map
    with storage.writer(overwrite=True) as writer:
        writer.write("train", {"x": 3.0, "y": 4})
    assert storage.reader("train", Point).get(0) == Point(3.0, 4)


def test_sqlite_storage_names_and_overwrite(tmp_path):
    assert SqliteDatasetStorage(name="", base_dir=tmp_path).db_file() == tmp_path / "dataset.db"
    assert SqliteDatasetStorage(name='a/b:c', base_dir=tmp_path).db_file() == tmp_path / "abc.db"
    storage = SqliteDatasetStorage.from_file(tmp_path / "s.db")
    with storage.writer() as w:
        w.write("train", {"a": 1})
    with pytest.raises(FileExistsError, match=r"already exists and overwrite is False"):
        storage.writer()


# --- errors -------------------------------------------------------------------------------------------------
def test_sqlite_errors_name_the_database_split_and_row(tmp_path):
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


def test_sqlite_column_and_blob_errors_name_the_row(tmp_path):
    db = tmp_path / "d.db"
    conn = sqlite3.connect(db)
    conn.execute("create table cols (row_id integer primary key, a text, b text)")
    conn.executemany("insert into cols values (?, ?, ?)", [(1, "1", "x"), (3, "oops", "y")])
    conn.execute("create table blobs (row_id integer primary key, item blob)")
    conn.executemany("insert into blobs values (?, ?)", [(1, msgpack.packb({"a": "no", "b": "x"})),
                                                          (2, msgpack.packb(["no", "x"]))])
    conn.commit()
    conn.close()
    cols = SqliteDataset(db, "cols", Pair)
    assert cols.get(0) == Pair(1, "x") and cols.get(1) is None  # a gap in row_id is an empty place
    with pytest.raises(DatasetError, match=r"split 'cols' row_id 3: column 'a': 'oops' is not a valid int$"):
        cols.get(2)
    blobs = SqliteDataset(db, "blobs", Pair)
    with pytest.raises(DatasetError, match=r"split 'blobs' row_id 1: column 'a': 'no' is not a valid int$"):
        blobs.get(0)
    with pytest.raises(DatasetError, match=r"split 'blobs' row_id 2: column 'a': 'no' is not a valid int$"):
        blobs.get(1)


# --- loader workers -----------------------------------------------------------------------------------------
def test_sqlite_dataset_opens_its_own_connection_in_each_loader_worker(tmp_path):
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


# --- Burn's reader reads what this writer writes; batches and lengths -----------------------------------------
def test_written_tables_name_their_columns_in_lower_case_as_burns_writer_does(tmp_path):
    """SQLite keeps column names as declared and tools show them so (`select *`'s column names, pandas'
    frame columns): a file from this writer has the same `row_id`, `item` as one from Burn's."""
    db = tmp_path / "burn.db"
    write_points(db, n=1)
    conn = sqlite3.connect(db)
    try:
        names = [d[0] for d in conn.execute('select * from "train"').description]
    finally:
        conn.close()
    assert names == ["row_id", "item"]


def test_a_batch_of_more_indices_than_sqlites_parameter_limit_reads_every_row(tmp_path):
    """`__getitems__` selects in chunks of 900 `?` parameters: a batch of 1,900 takes three selects."""
    db = tmp_path / "many.db"
    with SqliteDatasetWriter(db) as writer:
        for i in range(1900):
            writer.write("train", {"x": i})
    data = SqliteDataset(db, "train")
    assert [item["x"] for item in data.__getitems__(list(range(1900)))] == list(range(1900))


def test_rows_appended_after_opening_stay_outside_the_dataset(tmp_path):
    """The length is read when the dataset opens: `get` at or past it is None even after another program
    has appended a row to the table."""
    db = tmp_path / "grown.db"
    write_points(db, n=3)
    data = SqliteDataset(db, "train", Point)
    conn = sqlite3.connect(db)
    try:
        conn.execute('insert into "train" (item) values (?)', (msgpack.packb({"x": 9.0, "y": 9}),))
        conn.commit()
    finally:
        conn.close()
    assert data.len() == 3 and data.get(3) is None and data.get(2) == Point(1.0, 2)
