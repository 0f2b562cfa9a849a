"""`burnlike.data.dataset.huggingface`: Burn's `HuggingfaceDatasetLoader` over the real `datasets`
library, with the network off (`HF_DATASETS_OFFLINE=1`, and sockets refused). Local sources (folders
written by `save_to_disk`, data folders with subsets, single files, image folders) and a Hub name
found in a Hugging Face cache built here are imported once into `<base_dir>/<name>.db`, in Burn's
table-per-split layout, and read back as `SqliteDataset`s of dicts or dataclasses. A dataset's own
loading script never runs; a dataset that isn't cached, a missing split or subset, and a missing
`datasets` package are errors that say what to do."""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest

from burnlike.data.dataset import (
    DatasetNotFoundError,
    HuggingfaceDatasetLoader,
    MissingColumnError,
    SqliteDataset,
)
from burnlike.data.dataset import huggingface as hf
from tests.helpers.expect import raises_exactly

datasets = pytest.importorskip("datasets")


@dataclasses.dataclass
class Review:
    text: str
    label: int
    tokens: list[int]


def png(shade: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("L", (2, 2), shade).save(buffer, format="PNG")
    return buffer.getvalue()


def reviews(n: int, offset: int = 0):
    return datasets.Dataset.from_dict(
        {"text": [f"review {offset + i}" for i in range(n)], "label": [(offset + i) % 2 for i in range(n)],
         "tokens": [list(range(i)) for i in range(n)], "meta": [{"stars": i, "lang": "en"} for i in range(n)],
         "image": [{"bytes": png(i), "path": None} for i in range(n)]},
        features=datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"]),
                                    "tokens": datasets.Sequence(datasets.Value("int64")),
                                    "meta": {"stars": datasets.Value("int32"), "lang": datasets.Value("string")},
                                    "image": datasets.Image()}))


@pytest.fixture
def offline(monkeypatch):
    """HF_DATASETS_OFFLINE=1 set now (after `datasets` was imported), and no socket may connect."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")

    def refuse(*args, **kwargs):
        raise OSError("network access in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def saved_dict(tmp_path_factory) -> Path:
    """A DatasetDict (train: 5 rows, test: 2) written by save_to_disk."""
    path = tmp_path_factory.mktemp("hf") / "reviews"
    datasets.DatasetDict({"train": reviews(5), "test": reviews(2, offset=5)}).save_to_disk(str(path))
    return path


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory) -> Path:
    """A Hugging Face cache holding `someone/tiny-reviews` (subset `default`) as a Hub download leaves it."""
    from datasets.packaged_modules.parquet.parquet import Parquet

    root = tmp_path_factory.mktemp("hub")
    for split, n in (("train", 4), ("validation", 2)):
        reviews(n).to_parquet(str(root / f"{split}.parquet"))
    cache = root / "cache"
    builder = Parquet(cache_dir=str(root / "build"), dataset_name="tiny-reviews", config_name="default",
                      hash="0123abcd", data_files={s: [str(root / f"{s}.parquet")] for s in ("train", "validation")})
    builder.download_and_prepare()
    config_dir = Path(builder.cache_dir).parents[1]  # <name>/<config id>/<version>/<hash>
    (cache / "someone___tiny-reviews").mkdir(parents=True)
    shutil.move(str(config_dir), str(cache / "someone___tiny-reviews" / "default"))
    return cache


def test_save_to_disk_folder_offline_every_split_in_one_database(offline, saved_dict, tmp_path):
    loader = HuggingfaceDatasetLoader(saved_dict).with_base_dir(tmp_path / "db")
    train = loader.dataset("train")
    test = HuggingfaceDatasetLoader(str(saved_dict)).with_base_dir(tmp_path / "db").dataset("test")

    assert isinstance(train, SqliteDataset) and (len(train), len(test)) == (5, 2)
    assert train.db_file == test.db_file == loader.db_file()
    assert train.db_file.parent == tmp_path / "db" and train.db_file.name.startswith("reviews-")
    assert sorted(os.listdir(tmp_path / "db")) == [train.db_file.name]
    # Burn's column names: nested features flattened with `_`, images as their encoded bytes
    assert train[3] == {"text": "review 3", "label": 1, "tokens": [0, 1, 2], "meta_stars": 3, "meta_lang": "en",
                        "image_bytes": png(3), "image_path": None}
    assert [item["text"] for item in test.iter()] == ["review 5", "review 6"]
    assert train.get(5) is None
    # Burn's layout: a table per split, `row_id` from 1 and the item as a MessagePack map
    with sqlite3.connect(train.db_file) as conn:
        assert sorted(r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")
                      if not r[0].startswith("sqlite_")) == ["test", "train"]
        row_id, blob = conn.execute('select row_id, item from "train" order by row_id').fetchone()
    assert row_id == 1 and msgpack.unpackb(blob)["text"] == "review 0"


def test_items_as_a_dataclass_and_a_field_the_columns_lack(offline, saved_dict, tmp_path):
    loader = HuggingfaceDatasetLoader(saved_dict).with_base_dir(tmp_path)
    train = loader.dataset("train", Review)
    assert train[2] == Review("review 2", 0, [0, 1])
    assert train.item_type is Review

    @dataclasses.dataclass
    class Wrong:
        text: str
        score: float

    with pytest.raises(MissingColumnError, match="'score'.*the row has"):
        loader.dataset("train", Wrong)


def test_the_database_is_reused_without_datasets(offline, saved_dict, tmp_path, monkeypatch):
    loader = HuggingfaceDatasetLoader(saved_dict).with_base_dir(tmp_path)
    db_file = loader.db_file()
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now fails
    assert loader.dataset("test")[1]["text"] == "review 6"
    assert loader.db_file() == db_file


def test_a_split_that_is_not_there(offline, saved_dict, tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"no split 'validation'.*\['test', 'train'\]"):
        HuggingfaceDatasetLoader(saved_dict).with_base_dir(tmp_path).dataset("validation")


def test_a_single_saved_dataset_is_its_split(offline, tmp_path):
    reviews(3).save_to_disk(str(tmp_path / "plain"))  # no split recorded: "train", as load_dataset names it
    assert len(HuggingfaceDatasetLoader(tmp_path / "plain").with_base_dir(tmp_path / "db").dataset("train")) == 3
    (tmp_path / "valid.csv").write_text("a\n1\n2\n")
    valid = datasets.load_dataset("csv", data_files={"validation": str(tmp_path / "valid.csv")}, split="validation",
                                  cache_dir=str(tmp_path / "c"))
    valid.save_to_disk(str(tmp_path / "named"))
    named = HuggingfaceDatasetLoader(tmp_path / "named").with_base_dir(tmp_path / "db").dataset("validation")
    assert list(named.iter()) == [{"a": 1}, {"a": 2}]


def test_save_to_disk_has_no_subsets(offline, saved_dict, tmp_path):
    with pytest.raises(ValueError, match=r"save_to_disk and has no subsets; leave with_subset\('small'\) out"):
        HuggingfaceDatasetLoader(saved_dict).with_subset("small").with_base_dir(tmp_path).dataset("train")


def test_a_data_folder_with_subsets(offline, tmp_path):
    data = tmp_path / "news"
    for subset, n in (("small", 2), ("large", 4)):
        (data / subset).mkdir(parents=True)
        (data / subset / "train.csv").write_text("title,label\n" + "".join(f"{subset} {i},{i % 3}\n" for i in range(n)))
    (data / "README.md").write_text("---\nconfigs:\n"
                                    "- config_name: small\n  data_files:\n  - split: train\n    path: small/train.csv\n"
                                    "- config_name: large\n  data_files:\n  - split: train\n    path: large/train.csv\n"
                                    "---\n")
    cache = tmp_path / "hf-cache"

    def loader(subset):
        return (HuggingfaceDatasetLoader(data).with_subset(subset).with_base_dir(tmp_path / "db")
                .with_huggingface_cache_dir(cache))

    small, large = loader("small").dataset("train"), loader("large").dataset("train")
    assert [item["title"] for item in small.iter()] == ["small 0", "small 1"]
    assert len(large) == 4 and large[3] == {"title": "large 3", "label": 0}
    assert small.db_file.name.endswith("-small.db") and large.db_file.name.endswith("-large.db")


def test_single_files_and_a_changed_source_is_imported_again(offline, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"x": 1, "y": "a"}\n{"x": 2, "y": "b"}\n')
    loader = HuggingfaceDatasetLoader(rows).with_base_dir(tmp_path / "db").with_huggingface_cache_dir(tmp_path / "c")
    assert list(loader.dataset("train").iter()) == [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]

    rows.write_text('{"x": 3, "y": "c"}\n')
    later = time.time() + 5
    os.utime(rows, (later, later))
    assert list(loader.dataset("train").iter()) == [{"x": 3, "y": "c"}]

    parquet = tmp_path / "part.parquet"
    reviews(2).to_parquet(str(parquet))
    assert HuggingfaceDatasetLoader(parquet).with_base_dir(tmp_path / "db").with_huggingface_cache_dir(
        tmp_path / "c").dataset("train", Review)[1] == Review("review 1", 1, [0])

    (tmp_path / "notes.docx").write_bytes(b"?")
    with pytest.raises(ValueError, match="notes.docx: not a file datasets reads"):
        HuggingfaceDatasetLoader(tmp_path / "notes.docx").with_base_dir(tmp_path / "db").dataset("train")


def test_an_image_folder_keeps_each_file_s_bytes(offline, tmp_path):
    from PIL import Image

    for label in ("cat", "dog"):
        (tmp_path / "pets" / "train" / label).mkdir(parents=True)
        Image.new("RGB", (3, 3), (200 if label == "dog" else 0, 0, 0)).save(tmp_path / "pets" / "train" / label / "a.png")
    train = (HuggingfaceDatasetLoader(tmp_path / "pets").with_base_dir(tmp_path / "db")
             .with_huggingface_cache_dir(tmp_path / "c").dataset("train"))
    items = sorted(train.iter(), key=lambda item: item["label"])
    assert [item["label"] for item in items] == [0, 1]
    assert items[1]["image_bytes"] == (tmp_path / "pets" / "train" / "dog" / "a.png").read_bytes()


def test_a_hub_name_from_the_cache_offline(offline, hub_cache, tmp_path):
    flags = (datasets.config.HF_HUB_OFFLINE, getattr(datasets.config, "HF_DATASETS_OFFLINE", None))
    loader = HuggingfaceDatasetLoader("someone/tiny-reviews").with_huggingface_cache_dir(hub_cache)
    valid = loader.with_base_dir(tmp_path).dataset("validation", Review)
    assert len(valid) == 2 and valid[1] == Review("review 1", 1, [0])
    assert valid.db_file == tmp_path / "someonetiny-reviews.db"  # Burn's name: the name sanitized
    assert len(SqliteDataset(valid.db_file, "train")) == 4
    # the variables set after `datasets` was imported applied to the call only
    assert (datasets.config.HF_HUB_OFFLINE, getattr(datasets.config, "HF_DATASETS_OFFLINE", None)) == flags


def test_a_hub_name_that_is_not_cached(offline, hub_cache, tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"^Hugging Face dataset 'someone/missing' is not in the cache "
                                                   r"\(.*\) and the Hub is off \(offline mode"):
        HuggingfaceDatasetLoader("someone/missing").with_huggingface_cache_dir(hub_cache).with_base_dir(
            tmp_path).dataset("train")
    with pytest.raises(DatasetNotFoundError, match=r"^Hugging Face dataset 'someone/tiny-reviews' \(subset 'other'\) "
                                                   r"is not in the cache .*Available configs in the cache"):
        HuggingfaceDatasetLoader("someone/tiny-reviews").with_subset("other").with_huggingface_cache_dir(
            hub_cache).with_base_dir(tmp_path).dataset("train")
    assert not list(tmp_path.glob("*.db*"))


def test_a_loading_script_never_runs(offline, tmp_path):
    data = tmp_path / "scripted"
    data.mkdir()
    marker = tmp_path / "ran"
    (data / "scripted.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (data / "train.csv").write_text("a\n1\n")
    with pytest.raises((RuntimeError, ValueError)):
        HuggingfaceDatasetLoader(data).with_base_dir(tmp_path / "db").with_huggingface_cache_dir(
            tmp_path / "c").dataset("train")
    assert not marker.exists() and not list((tmp_path / "db").glob("*.db"))


@pytest.mark.parametrize(("version", "passed"), [("3.6.0", {"trust_remote_code": False}), ("4.0.0", {})])
def test_trust_remote_code_goes_to_the_datasets_that_have_scripts(version, passed):
    fake = type("datasets", (), {"__version__": version})
    kwargs = HuggingfaceDatasetLoader("x").with_huggingface_token("hf_t")._load_kwargs(fake)
    assert kwargs == {"cache_dir": None, "token": "hf_t", **passed}
    trusted = HuggingfaceDatasetLoader("x").with_trust_remote_code(True)._load_kwargs(fake)
    assert trusted.get("trust_remote_code", True) is True


def test_without_datasets_the_error_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"pip install 'burnlike\[huggingface\]'"):
        HuggingfaceDatasetLoader("someone/tiny-reviews").with_base_dir(tmp_path).dataset("train")
    monkeypatch.setitem(sys.modules, "datasets", type(sys)("datasets"))
    sys.modules["datasets"].__version__ = "2.14.0"  # type: ignore[attr-defined]
    with pytest.raises(ImportError, match=r"datasets>=2.16.*found 2.14.0"):
        hf._import_datasets()


def test_burn_s_own_database_is_read(tmp_path, monkeypatch):
    """A database Burn's importer wrote (a column per feature) under the base dir is used as it is."""
    monkeypatch.setitem(sys.modules, "datasets", None)
    with sqlite3.connect(tmp_path / "mnist.db") as conn:
        conn.execute('create table "train" (image_bytes blob, label integer, row_id integer primary key)')
        conn.execute('insert into "train" values (?, 7, 1)', (png(1),))
    item = HuggingfaceDatasetLoader("mnist").with_base_dir(tmp_path).with_use_python_venv(False).dataset("train")[0]
    assert item == {"image_bytes": png(1), "label": 7}


@pytest.mark.slow
def test_import_burnlike_data_leaves_datasets_unimported():
    code = "import sys, burnlike.data, burnlike.data.dataset; print('datasets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_single_file_has_no_subsets(offline, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"x": 1}\n')
    with raises_exactly(ValueError, f"{rows} is a single file and has no subsets; leave with_subset('small') out"):
        HuggingfaceDatasetLoader(rows).with_subset("small").with_base_dir(tmp_path / "db").dataset("train")


def test_a_value_messagepack_has_no_type_for_names_its_type():
    """The row's error (which names the split, the row and the features) quotes this message."""
    class Handle:
        pass

    with raises_exactly(TypeError, "a value of type Handle can't be stored as MessagePack"):
        hf._plain(Handle())


@pytest.mark.parametrize("feature", ["Pdf", "Video"])
def test_a_media_column_of_any_kind_keeps_its_file_bytes_without_its_decoder(offline, tmp_path, feature):
    """Like images and audio: a PDF or video column is imported as `<column>_bytes`/`_path`, so no
    decoder library (pdfplumber, torchcodec) is needed, and the bytes are the file's."""
    media = getattr(datasets, feature)
    blobs = [b"%PDF-1.4 first", b"%PDF-1.4 second"]
    plain = datasets.Dataset.from_dict({"doc": [{"bytes": b, "path": None} for b in blobs], "label": [0, 1]},
                                       features=datasets.Features({"doc": media(decode=False),
                                                                   "label": datasets.Value("int64")}))
    plain.cast_column("doc", media()).save_to_disk(str(tmp_path / "docs"))
    train = HuggingfaceDatasetLoader(tmp_path / "docs").with_base_dir(tmp_path / "db").dataset("train")
    assert [(item["doc_bytes"], item["label"]) for item in train.iter()] == [(blobs[0], 0), (blobs[1], 1)]


def test_a_row_messagepack_cannot_hold_is_named_with_its_split_row_and_features():
    packer = msgpack.Packer(use_bin_type=True, default=hf._plain)
    with raises_exactly(hf.DatasetError, "rows.parquet split 'train' row 3: 1180591620717411303424 is beyond MessagePack's 64-bit "
                                         "integers "
                                         "(the features are {'x': Value('int64')})"):
        hf._packed(packer, {"x": 2 ** 70}, lambda: "rows.parquet split 'train' row 3", {"x": datasets.Value("int64")})


def test_numpy_values_are_stored_as_numbers_and_lists():
    """`datasets` can hand numpy scalars and arrays (array features, numpy-typed values): MessagePack
    has no type for them, so they are stored as what `tolist()` gives."""
    import numpy as np

    packer = msgpack.Packer(use_bin_type=True, default=hf._plain)
    item = {"score": np.float32(1.5), "count": np.int64(3), "grid": np.arange(4, dtype=np.uint8).reshape(2, 2)}
    assert msgpack.unpackb(packer.pack(item)) == {"score": 1.5, "count": 3, "grid": [[0, 1], [2, 3]]}


def test_a_one_row_split_checks_the_item_type_when_it_is_opened(offline, tmp_path):
    """A dataclass with a field the columns lack fails at `dataset()`, naming the column, however
    few rows the split has."""
    @dataclasses.dataclass
    class Wrong:
        text: str
        score: float

    reviews(1).save_to_disk(str(tmp_path / "one"))
    with pytest.raises(MissingColumnError, match="'score'.*the row has"):
        HuggingfaceDatasetLoader(tmp_path / "one").with_base_dir(tmp_path / "db").dataset("train", Wrong)


def test_a_media_column_s_own_bytes_win_over_a_file_its_path_names(offline, tmp_path, monkeypatch):
    """A row that holds its image's bytes keeps them, even where its (relative) path names another
    file from the working directory; only a row without bytes is filled from its path."""
    plain = datasets.Dataset.from_dict({"image": [{"bytes": png(1), "path": "a.png"}]},
                                       features=datasets.Features({"image": datasets.Image()}))
    plain.save_to_disk(str(tmp_path / "saved"))
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "a.png").write_bytes(png(200))
    monkeypatch.chdir(tmp_path / "cwd")
    train = HuggingfaceDatasetLoader(tmp_path / "saved").with_base_dir(tmp_path / "db").dataset("train")
    assert train[0] == {"image_bytes": png(1), "image_path": "a.png"}
