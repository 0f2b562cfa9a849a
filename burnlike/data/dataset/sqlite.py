"""Burn's `SqliteDataset` (and its writer and storage): one SQLite table per split.

Burn's layout: table `<split>` with an integer primary key `row_id` starting at 1 (item `i` is row
`i + 1`), and either one column per item field, or exactly `(row_id integer, item blob)` with each
item serialized as MessagePack. Burn's writer emits the blob form with `rmp_serde::to_vec`
(structs as arrays, read back here in field order); this writer emits maps, which both read.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import msgpack

from burnlike.data.dataset.base import Dataset
from burnlike.data.dataset.errors import DatasetError, DatasetNotFoundError
from burnlike.data.dataset.rows import ItemReader, to_row

T = TypeVar("T")

__all__ = ["SqliteDataset", "SqliteDatasetStorage", "SqliteDatasetWriter"]

_MAX_VARIABLES = 900  # SQLite's default limit on `?` parameters is 999


def _table(split: str) -> str:
    """The split's table name, quoted for SQL (a split is a name, never SQL)."""
    if not split or "\x00" in split:
        raise ValueError(f"invalid split name {split!r}")
    return '"' + split.replace('"', '""') + '"'


class SqliteDataset(Dataset[T]):
    """`SqliteDataset::from_db_file(db_file, split)`: rows of table `split`, as `item_type` or dicts.

    Read-only; each process (forked or spawned DataLoader workers included) opens its own connection.
    A batch is one `select ... where row_id in (...)`.

    Args:
        db_file: The database file.
        split: The split: its table's name.
        item_type: A dataclass per row (None: dicts).

    Attributes:
        db_file: The database file.
        split: The split read.
        item_type: The dataclass per row (None: dicts).
        columns: The table's columns.
        row_serialized: Whether rows are Burn's `(row_id, item)` with the item as MessagePack.

    Raises:
        DatasetNotFoundError: No such file, or no such split in it.
        DatasetError: Not an SQLite database, or a table without Burn's `row_id`.
    """

    def __init__(self, db_file: str | os.PathLike[str], split: str, item_type: type[T] | None = None) -> None:
        self.db_file = Path(db_file)
        self.split = split
        self.item_type = item_type
        self._reader = ItemReader(item_type, f"{self.db_file} split {split!r}")
        if not self.db_file.is_file():
            raise DatasetNotFoundError(f"SQLite database {self.db_file} not found")
        self._conn: sqlite3.Connection | None = None
        self._opened_in = 0
        self._lock = threading.Lock()
        conn = self._connection()
        try:
            tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
        except sqlite3.DatabaseError as e:
            raise DatasetError(f"{self.db_file}: not a readable SQLite database ({e})") from None
        if split not in tables:
            splits = sorted(t for t in tables if not t.startswith("sqlite_"))
            raise DatasetNotFoundError(f"{self.db_file}: no split {split!r} (no such table); the splits are {splits}")
        info = [(r[1], str(r[2]).lower()) for r in conn.execute(f"pragma table_info({_table(split)})")]
        self.columns = [name for name, _ in info]
        if "row_id" not in (c.lower() for c in self.columns):
            raise DatasetError(f"{self.db_file} split {split!r}: no row_id column (Burn's layout: an integer "
                               f"primary key row_id from 1); the columns are {self.columns}")
        self.row_serialized = [(n.lower(), t) for n, t in info] == [("row_id", "integer"), ("item", "blob")]
        if not self.row_serialized:
            self._reader.check_columns(self.columns)
        selected = "item" if self.row_serialized else "*"
        self._select = f"select row_id, {selected} from {_table(split)} where row_id"
        self._len = int(conn.execute(f"select coalesce(max(row_id), 0) from {_table(split)}").fetchone()[0])

    @classmethod
    def from_db_file(cls, db_file: str | os.PathLike[str], split: str,
                     item_type: type[T] | None = None) -> SqliteDataset[T]:
        """Burn's constructor: the same as `SqliteDataset(db_file, split, item_type)`.

        Args:
            db_file: The database file.
            split: The split.
            item_type: A dataclass per row (None: dicts).
        """
        return cls(db_file, split, item_type)

    def _connection(self) -> sqlite3.Connection:
        """This process's connection: SQLite connections must not cross a fork (DataLoader workers)."""
        if self._conn is None or self._opened_in != os.getpid():
            uri = f"file:{quote(str(self.db_file.resolve()))}?mode=ro"
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._opened_in = os.getpid()
        return self._conn

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_conn", "_lock")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._conn, self._lock = None, threading.Lock()

    def _item(self, row: Sequence[Any]) -> Any:
        row_id, values = row[0], row[1:]
        where = f" row_id {row_id}"
        if not self.row_serialized:
            named = {c: v for c, v in zip(self.columns, values) if c.lower() != "row_id"}
            return self._reader.from_mapping(named, where)
        try:
            value = msgpack.unpackb(values[0], raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise DatasetError(f"{self._reader.source}{where}: item is not valid MessagePack ({e})") from None
        if isinstance(value, dict):
            return self._reader.from_mapping(value, where)
        if isinstance(value, list):
            return self._reader.from_sequence(value, where)
        if self.item_type is not None:
            raise DatasetError(f"{self._reader.source}{where}: item is a {type(value).__name__}, expected a map or "
                               f"an array for {self.item_type.__name__}")
        return value

    def get(self, index: int) -> T | None:
        if not 0 <= index < self._len:
            return None
        with self._lock:
            row = self._connection().execute(f"{self._select} = ?", (index + 1,)).fetchone()
        return None if row is None else self._item(row)

    def len(self) -> int:
        return self._len

    def __getitems__(self, indices: Sequence[int]) -> list[T]:
        wanted = [i + 1 for i in indices]
        rows: dict[int, Any] = {}
        with self._lock:
            conn = self._connection()
            unique = sorted(set(wanted))
            for start in range(0, len(unique), _MAX_VARIABLES):
                chunk = unique[start:start + _MAX_VARIABLES]
                marks = ",".join("?" * len(chunk))
                rows.update((r[0], r) for r in conn.execute(f"{self._select} in ({marks})", chunk))
        missing = [w - 1 for w in wanted if w not in rows]
        if missing:
            raise IndexError(f"index {missing[0]} is out of range for {self._reader.source} (length {self._len})")
        return [self._item(rows[w]) for w in wanted]


class SqliteDatasetWriter(Generic[T]):
    """Burn's writer: items appended per split into `<db>.db.tmp`, renamed to the database on
    `set_completed()` (or at the end of a `with` block; an exception there removes the temp file).

    Args:
        db_file: The database to write.
        overwrite: Replace an existing database (else refused).

    Attributes:
        db_file: The database to write.
        tmp_file: Where the items go until `set_completed()`.

    Raises:
        FileExistsError: `db_file` exists and `overwrite` is False.
    """

    def __init__(self, db_file: str | os.PathLike[str], overwrite: bool = False) -> None:
        self.db_file = Path(db_file)
        if self.db_file.exists() and not overwrite:
            raise FileExistsError(f"{self.db_file} already exists and overwrite is False")
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        self.tmp_file = self.db_file.with_name(self.db_file.name + ".tmp")
        self.tmp_file.unlink(missing_ok=True)
        self._conn: sqlite3.Connection | None = sqlite3.connect(self.tmp_file, check_same_thread=False)
        self._conn.execute("pragma synchronous = off")
        self._conn.execute("pragma journal_mode = off")
        self._splits: set[str] = set()
        self._lock = threading.Lock()

    def write(self, split: str, item: T) -> int:
        """Append `item` to `split` (creating its table); returns the item's index (`row_id - 1`).

        Args:
            split: The split.
            item: The item: a dataclass (stored as a map of its columns) or a plain value.

        Raises:
            DatasetError: The writer is completed, or the item can't be stored as MessagePack.
        """
        with self._lock:
            if self._conn is None:
                raise DatasetError(f"{self.db_file}: cannot write to a completed dataset writer")
            if split not in self._splits:
                self._conn.execute(f"create table if not exists {_table(split)} "
                                   "(row_id integer primary key autoincrement not null, item blob not null)")
                self._splits.add(split)
            try:
                blob = msgpack.packb(to_row(item), use_bin_type=True)
            except (TypeError, ValueError) as e:
                raise DatasetError(f"{self.db_file} split {split!r}: item {item!r} can't be stored as "
                                   f"MessagePack ({e})") from None
            cursor = self._conn.execute(f"insert into {_table(split)} (item) values (?)", (blob,))
            return int(cursor.lastrowid or 0) - 1

    def set_completed(self) -> None:
        """Commit and rename the temp file to the database (once; later calls do nothing)."""
        with self._lock:
            if self._conn is None:
                return
            self._conn.commit()
            self._conn.close()
            self._conn = None
            os.replace(self.tmp_file, self.db_file)

    def abort(self) -> None:
        """Drop what was written: the temp file is removed and the database left as it was."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self.tmp_file.unlink(missing_ok=True)

    def __enter__(self) -> SqliteDatasetWriter[T]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.set_completed()
        else:
            self.abort()


class SqliteDatasetStorage:
    """Where a dataset's database lives: a file, or `<base_dir>/<name>.db` with Burn's default base
    dir (`<user cache dir>/burn-dataset`).

    Args:
        name: The dataset's name (its file is `<base_dir>/<name>.db`).
        db_file: The database file (instead of a name).
        base_dir: The folder for named datasets (None: Burn's default).

    Attributes:
        name: The dataset's name (None: a file was given).
        base_dir_override: The folder for named datasets (None: Burn's default).

    Raises:
        ValueError: Both or neither of `name` and `db_file`.
    """

    def __init__(self, name: str | None = None, db_file: str | os.PathLike[str] | None = None,
                 base_dir: str | os.PathLike[str] | None = None) -> None:
        if (name is None) == (db_file is None):
            raise ValueError("give exactly one of name and db_file")
        self.name = name
        self._db_file = Path(db_file) if db_file is not None else None
        self.base_dir_override = Path(base_dir) if base_dir is not None else None

    @classmethod
    def from_name(cls, name: str) -> SqliteDatasetStorage:
        """The storage of a named dataset in the base dir.

        Args:
            name: The dataset's name.
        """
        return cls(name=name)

    @classmethod
    def from_file(cls, db_file: str | os.PathLike[str]) -> SqliteDatasetStorage:
        """The storage of a database file.

        Args:
            db_file: The file.
        """
        return cls(db_file=db_file)

    def with_base_dir(self, base_dir: str | os.PathLike[str]) -> SqliteDatasetStorage:
        """This storage with another base dir.

        Args:
            base_dir: The folder for named datasets.
        """
        return SqliteDatasetStorage(self.name, self._db_file, base_dir)

    @staticmethod
    def base_dir(base_dir: str | os.PathLike[str] | None = None) -> Path:
        """`base_dir`, else Burn's default: `$XDG_CACHE_HOME/burn-dataset` (`~/.cache/burn-dataset`).

        Args:
            base_dir: The folder (None: the default).
        """
        if base_dir is not None:
            return Path(base_dir)
        cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(cache) / "burn-dataset"

    def db_file(self) -> Path:
        """The database file (a name's, with characters a file name can't hold removed)."""
        if self._db_file is not None:
            return self._db_file
        safe = re.sub(r'[/\\:*?"<>|\x00-\x1f]', "", self.name or "") or "dataset"
        return self.base_dir(self.base_dir_override) / f"{safe}.db"

    def exists(self) -> bool:
        """Whether the database file exists."""
        return self.db_file().exists()

    def writer(self, overwrite: bool = False) -> SqliteDatasetWriter[Any]:
        """A writer of the database.

        Args:
            overwrite: Replace an existing database.
        """
        return SqliteDatasetWriter(self.db_file(), overwrite)

    def reader(self, split: str, item_type: type[T] | None = None) -> SqliteDataset[T]:
        """The dataset of `split`.

        Args:
            split: The split.
            item_type: A dataclass per row (None: dicts).
        """
        return SqliteDataset(self.db_file(), split, item_type)
