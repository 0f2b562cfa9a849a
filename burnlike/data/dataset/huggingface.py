"""Burn's `HuggingfaceDatasetLoader`: a Hugging Face dataset, imported once into a SQLite database
and read back as a `SqliteDataset`.

Burn's loader runs the `datasets` library in a Python subprocess that writes every split of the
dataset to `<base_dir>/<name>[-<subset>].db` (a table per split), then reads the split it was asked
for with `SqliteDataset`; later calls find the database and never touch Hugging Face again. This one
does the same in the running interpreter, over the real `datasets` package (the `huggingface` extra),
and returns burnlike's `SqliteDataset`, so a Burn user gets what they know: the same file name under
the same base dir (Burn's own databases there are reused), the same column names (nested features
flattened, `.` written `_`: `image_bytes`, `image_path`), images, audio, video and PDFs kept as their encoded
bytes, and a dataset that random-accesses rows from disk in every loader worker without holding the
whole split in memory. Each row is stored as a MessagePack map (Burn's `(row_id, item)` table form,
which Burn's `SqliteDataset` reads too), so list and nested features (token ids, labels per item)
come back as lists, which a column per field can't hold.

Sources, by what `name` is:

- a local path: a folder written by `Dataset.save_to_disk` or `DatasetDict.save_to_disk`, a folder
  of data files `datasets.load_dataset` reads (parquet, csv, json, text, images, optionally with a
  README that declares subsets), or a single `.parquet`, `.csv`, `.json`, `.jsonl`, `.arrow` or
  `.txt` file. The database is named after the folder plus a hash of its absolute path, and is
  imported again when a file under the path is newer than it.
- a Hub name (`"ylecun/mnist"`): loaded through `datasets.load_dataset`, from the Hugging Face cache
  when offline. `HF_DATASETS_OFFLINE=1` (or `HF_HUB_OFFLINE=1`) in the environment is honoured
  even when set after `datasets` was imported (the library reads it once, at import).

A dataset's own loading code runs only with `with_trust_remote_code(True)` (passed to
`datasets` 2.16 to 3.x, where scripts exist; `datasets` 4 runs none at all).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import hashlib
import os
import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import msgpack

from burnlike.data.dataset.errors import DatasetError, DatasetNotFoundError
from burnlike.data.dataset.sqlite import SqliteDataset, SqliteDatasetStorage, _table

T = TypeVar("T")

__all__ = ["HuggingfaceDatasetLoader"]

_EXTRA = "pip install 'burnlike[huggingface]'"
_MIN_VERSION = (2, 16)  # the first `datasets` that asks before running a dataset's own code
_TRUE = {"1", "ON", "YES", "TRUE"}
_FILE_BUILDERS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".arrow": "arrow",
                  ".txt": "text"}
_BATCH = 1000
_offline_lock = threading.Lock()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


def _import_datasets() -> Any:
    """The `datasets` module, or an ImportError naming the extra that installs it."""
    try:
        import datasets
    except ImportError as e:
        raise ImportError(f"HuggingfaceDatasetLoader needs Hugging Face's `datasets` package: {_EXTRA}") from e
    if _version(datasets.__version__) < _MIN_VERSION:
        raise ImportError(f"HuggingfaceDatasetLoader needs datasets>=2.16 (earlier versions run a dataset's "
                          f"own code without asking); found {datasets.__version__}: {_EXTRA}")
    return datasets


def _env_offline() -> bool:
    return any(os.environ.get(v, "").strip().upper() in _TRUE for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"))


@contextlib.contextmanager
def _offline_mode(datasets: Any) -> Iterator[bool]:
    """Offline as the environment says now; yields whether the call runs offline. `datasets` and
    `huggingface_hub` read their offline variables once, at import: a variable set later is applied
    to their flags for the duration of the call."""
    flags = [(datasets.config, "HF_HUB_OFFLINE"), (datasets.config, "HF_DATASETS_OFFLINE"),
             (sys.modules.get("huggingface_hub.constants"), "HF_HUB_OFFLINE")]
    with _offline_lock:
        saved = [(owner, name, getattr(owner, name)) for owner, name in flags if hasattr(owner, name)]
        offline = _env_offline()
        if offline:
            for owner, name, _ in saved:
                setattr(owner, name, True)
        try:
            yield offline or any(value is True for owner, _, value in saved if owner is datasets.config)
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)


def _sanitize(text: str) -> str:
    """A name as a file name (what Burn's `sanitize` leaves of it)."""
    return re.sub(r'[/\\:*?"<>|\x00-\x1f]', "", text).strip(" .") or "dataset"


def _newest_mtime(path: Path) -> float:
    newest = path.stat().st_mtime
    if path.is_dir():
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                with contextlib.suppress(OSError):
                    newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
    return newest


def _plain(value: Any) -> Any:
    """What MessagePack stores for a value `datasets` gives that it has no type for."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, int):  # msgpack hands over the ints it has no 64-bit form for
        raise OverflowError(f"{value} is beyond MessagePack's 64-bit integers")
    raise TypeError(f"a value of type {type(value).__name__} can't be stored as MessagePack")


def _is_media(feature: object) -> bool:
    """A feature `datasets` decodes into an object (Image, Audio, Video, Pdf, Nifti: each a dataclass
    with a `decode` flag). Its column is stored as the encoded file, `<column>_bytes` and
    `<column>_path`, as Burn stores images and audio: no decoder library is needed to import it."""
    return dataclasses.is_dataclass(feature) and isinstance(getattr(feature, "decode", None), bool)


def _packed(packer: msgpack.Packer, item: Mapping[str, Any], where: Callable[[], str], features: object) -> bytes:
    """`item` as MessagePack; a value it can't hold is a DatasetError naming `where()` (the split and
    row: made only then, not for every row) and the dataset's features."""
    try:
        packed: bytes = packer.pack(item)
        return packed
    except (TypeError, ValueError, OverflowError) as e:
        raise DatasetError(f"{where()}: {e} (the features are {features})") from None


class HuggingfaceDatasetLoader:
    """`HuggingfaceDatasetLoader::new(name)`: a Hugging Face dataset (a Hub name or a local path), with
    every split imported into `<base_dir>/<name>[-<subset>].db` the first time, read as a
    `SqliteDataset` of dicts or of `item_type`.

    ```python
    train = HuggingfaceDatasetLoader("ylecun/mnist").dataset("train", MnistItemRaw)  # image_bytes, label
    ```

    The builder methods keep Burn's names and return the loader. The import needs the `datasets`
    package (`pip install 'burnlike[huggingface]'`); reading a database already under the base dir
    doesn't.

    Args:
        name: A Hub dataset name (`"ylecun/mnist"`) or a local path.

    Attributes:
        name: The dataset's name or path.
        subset: Hugging Face's configuration name (None: the default one).
        base_dir: Where the database goes (None: Burn's default).
        huggingface_token: A token for gated datasets (None: none).
        huggingface_cache_dir: Hugging Face's cache folder (None: its default).
        huggingface_data_dir: A folder inside the dataset to load (None: all of it).
        trust_remote_code: Whether a dataset's own loading script may run.
        use_python_venv: Burn's setting, kept for its spelling (the import runs in this interpreter).
    """

    def __init__(self, name: str | os.PathLike[str]) -> None:
        self.name = os.fspath(name)
        self.subset: str | None = None
        self.base_dir: Path | None = None
        self.huggingface_token: str | None = None
        self.huggingface_cache_dir: str | None = None
        self.huggingface_data_dir: str | None = None
        self.trust_remote_code = False
        self.use_python_venv = True

    def with_subset(self, subset: str) -> HuggingfaceDatasetLoader:
        """The subset (Hugging Face's configuration name, `load_dataset(name, subset)`).

        Args:
            subset: The configuration name.
        """
        self.subset = subset
        return self

    def with_base_dir(self, base_dir: str | os.PathLike[str]) -> HuggingfaceDatasetLoader:
        """Where the database goes; by default `<user cache dir>/burn-dataset`, as Burn's.

        Args:
            base_dir: The folder.
        """
        self.base_dir = Path(base_dir)
        return self

    def with_huggingface_token(self, huggingface_token: str) -> HuggingfaceDatasetLoader:
        """A token for datasets behind authentication (`load_dataset(..., token=...)`).

        Args:
            huggingface_token: The token.
        """
        self.huggingface_token = huggingface_token
        return self

    def with_huggingface_cache_dir(self, huggingface_cache_dir: str | os.PathLike[str]) -> HuggingfaceDatasetLoader:
        """Hugging Face's cache folder, where downloads go and offline loads look (`cache_dir=`).

        Args:
            huggingface_cache_dir: The folder.
        """
        self.huggingface_cache_dir = os.fspath(huggingface_cache_dir)
        return self

    def with_huggingface_data_dir(self, huggingface_data_dir: str) -> HuggingfaceDatasetLoader:
        """A folder inside the dataset to load (`load_dataset(..., data_dir=...)`); it is part of
        the database's name.

        Args:
            huggingface_data_dir: The folder, relative to the dataset.
        """
        self.huggingface_data_dir = huggingface_data_dir
        return self

    def with_trust_remote_code(self, trust_remote_code: bool) -> HuggingfaceDatasetLoader:
        """Whether a dataset's own loading script may run; `False` by default (as Burn's code).

        Args:
            trust_remote_code: Whether it may run.
        """
        self.trust_remote_code = bool(trust_remote_code)
        return self

    def with_use_python_venv(self, use_python_venv: bool) -> HuggingfaceDatasetLoader:
        """Kept for Burn's spelling. Burn runs its importer in a virtualenv it installs `datasets`
        into; here the import runs in this interpreter, which needs the `huggingface` extra.

        Args:
            use_python_venv: Burn's setting (no effect here).
        """
        self.use_python_venv = bool(use_python_venv)
        return self

    def dataset(self, split: str, item_type: type[T] | None = None) -> SqliteDataset[T]:
        """The split as a `SqliteDataset`, imported first if the database isn't there. Items are dicts
        keyed by column, or `item_type` (a dataclass whose fields name columns).

        Args:
            split: The split ("train", "test" ...).
            item_type: A dataclass per row (None: dicts).

        Raises:
            DatasetNotFoundError: No such split.
            MissingColumnError: A field the columns don't have.
        """
        dataset: SqliteDataset[T] = SqliteDataset(self.db_file(), split, item_type)
        if item_type is not None and dataset.len() > 0:
            dataset.get(0)  # a field the columns don't have fails here, naming the columns there are
        return dataset

    def db_file(self) -> Path:
        """The database's path, importing the dataset into it if it isn't there (or, for a local
        path, if a file under it is newer than the database)."""
        base_dir = SqliteDatasetStorage.base_dir(self.base_dir)
        base_dir.mkdir(parents=True, exist_ok=True)
        source = self._local_source()
        db_file = base_dir / self._db_file_name(source)
        if not db_file.exists() or (source is not None and _newest_mtime(source) > db_file.stat().st_mtime):
            self._import(db_file, source)
        return db_file

    def _local_source(self) -> Path | None:
        path = Path(self.name).expanduser()
        return path if path.exists() else None

    def _db_file_name(self, source: Path | None) -> str:
        if source is None:
            parts = [_sanitize(self.name)]
        else:
            digest = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:8]
            parts = [f"{_sanitize(source.resolve().name)}-{digest}"]
        parts += [_sanitize(p) for p in (self.subset, self.huggingface_data_dir) if p is not None]
        return "-".join(parts) + ".db"

    def _describe(self) -> str:
        subset = f" (subset {self.subset!r})" if self.subset is not None else ""
        return f"Hugging Face dataset {self.name!r}{subset}"

    def _load_kwargs(self, datasets: Any) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"cache_dir": self.huggingface_cache_dir}
        if self.huggingface_data_dir is not None:
            kwargs["data_dir"] = self.huggingface_data_dir
        if self.huggingface_token is not None:
            kwargs["token"] = self.huggingface_token
        if _version(datasets.__version__) < (4,):  # datasets 4 dropped loading scripts
            kwargs["trust_remote_code"] = self.trust_remote_code
        return kwargs

    def _load(self, datasets: Any, source: Path | None) -> Mapping[str, Any]:
        """Every split of the dataset, by name (`datasets.Dataset` each)."""
        with _offline_mode(datasets) as offline:
            if source is None:
                loaded = self._load_hub(datasets, offline)
            elif source.is_dir() and ((source / "dataset_dict.json").is_file() or (source / "state.json").is_file()):
                self._no_subset(source, "was written by save_to_disk")
                loaded = datasets.load_from_disk(str(source))
            elif source.is_file():
                builder = _FILE_BUILDERS.get(source.suffix.lower())
                if builder is None:
                    raise DatasetError(f"{source}: not a file datasets reads (give one of "
                                       f"{', '.join(_FILE_BUILDERS)}, or a folder)")
                self._no_subset(source, "is a single file")
                kwargs = {k: v for k, v in self._load_kwargs(datasets).items() if k != "data_dir"}
                loaded = datasets.load_dataset(builder, data_files=str(source), **kwargs)
            else:
                loaded = datasets.load_dataset(str(source), self.subset, **self._load_kwargs(datasets))
        if isinstance(loaded, datasets.DatasetDict):
            return dict(loaded)
        return {str(loaded.split or "train"): loaded}

    def _no_subset(self, source: Path, why: str) -> None:
        if self.subset is not None:
            raise ValueError(f"{source} {why} and has no subsets; leave with_subset({self.subset!r}) out")

    def _load_hub(self, datasets: Any, offline: bool) -> Any:
        cache_dir = self.huggingface_cache_dir or datasets.config.HF_DATASETS_CACHE
        hub = ("the Hub is off (offline mode: HF_DATASETS_OFFLINE or HF_HUB_OFFLINE)" if offline
               else "the Hub can't be reached or doesn't have it")
        try:
            return datasets.load_dataset(self.name, self.subset, **self._load_kwargs(datasets))
        except (ConnectionError, FileNotFoundError, ValueError) as e:
            said = "; ".join(line.strip() for line in str(e).splitlines() if line.strip()) or type(e).__name__
            if isinstance(e, ValueError) and "find cache" not in said:
                raise
            raise DatasetNotFoundError(f"{self._describe()} is not in the cache ({cache_dir}) and {hub}: load it "
                                       f"once with the network on, or point with_huggingface_cache_dir at a "
                                       f"cache that has it (datasets said: {said})") from None

    def _import(self, db_file: Path, source: Path | None) -> None:
        """Every split into `db_file`, written to a temporary file first and renamed when complete."""
        datasets = _import_datasets()
        splits = self._load(datasets, source)
        tmp = db_file.with_name(f"{db_file.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("pragma synchronous = off")
            conn.execute("pragma journal_mode = off")
            for split, dataset in splits.items():
                self._write_split(conn, datasets, split, dataset)
            conn.commit()
        except BaseException:
            conn.close()
            tmp.unlink(missing_ok=True)
            raise
        conn.close()
        os.replace(tmp, db_file)

    def _row_name(self, split: str, row: int) -> str:
        return f"{self._describe()} split {split!r} row {row}"

    def _write_split(self, conn: sqlite3.Connection, datasets: Any, split: str, dataset: Any) -> None:
        media = []
        for column, feature in dataset.features.items():
            if _is_media(feature):
                media.append(column.replace(".", "_"))
                if feature.decode:
                    dataset = dataset.cast_column(column, dataclasses.replace(feature, decode=False))
        dataset = dataset.flatten()
        dotted = {c: c.replace(".", "_") for c in dataset.column_names if "." in c}
        if dotted:
            dataset = dataset.rename_columns(dotted)
        dataset = dataset.with_format(None)
        table = _table(split)
        conn.execute(f"create table {table} (row_id integer primary key autoincrement not null, item blob not null)")
        packer = msgpack.Packer(use_bin_type=True, default=_plain)
        columns = dataset.column_names
        row_id = 0
        for batch in dataset.iter(batch_size=_BATCH):
            rows = []
            for values in zip(*(batch[c] for c in columns)):
                row_id += 1
                item = dict(zip(columns, values))
                for column in media:
                    path = item.get(f"{column}_path")
                    if item.get(f"{column}_bytes") is None and isinstance(path, str) and os.path.isfile(path):
                        item[f"{column}_bytes"] = Path(path).read_bytes()
                rows.append((row_id, _packed(packer, item, partial(self._row_name, split, row_id - 1), dataset.features)))
            conn.executemany(f"insert into {table} (row_id, item) values (?, ?)", rows)
