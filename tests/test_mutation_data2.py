"""More behaviours of burnlike.data that mutation testing found unpinned: the tabular CSV reader and
batcher, MNIST's loading, download and batch tensors, moving and pinning batches, the on-device
loader, text batching, rows into items, SQLite datasets and the transforms' edge cases."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import sqlite3
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader

from burnlike.data import (
    ByteTokenizer,
    DataLoaderBuilder,
    MnistBatch,
    MnistBatcher,
    MnistDataset,
    MnistFormatError,
    MnistItems,
    MnistNotFoundError,
    SeqLengthOption,
    TabularBatch,
    TabularBatcher,
    TextClassificationBatcher,
)
from burnlike.data import mnist as mnist_module
from burnlike.data.dataset import (
    Dataset,
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    InMemDataset,
    MissingColumnError,
    SqliteDataset,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
    TabularDataset,
    as_dataset,
)
from burnlike.data.dataset.nlp import TextCsvDataset
from burnlike.data.dataset.rows import ItemReader, encode_labels
from burnlike.data.dataset.transform import (
    PartialDataset,
    SamplerDataset,
    SamplerDatasetOptions,
    SelectionDataset,
)
from burnlike.data.dataset.transform.options import make_rng, resolve_size, shuffle
from burnlike.data.text import generate_padding_mask


class TorchCalls(TorchFunctionMode):
    """Records torch calls (name, args, kwargs); `pin_memory` is answered with a marked copy, since
    pinning needs an accelerator this machine may not have."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple, dict]] = []
        self.pinned: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        self.calls.append((name, args, kwargs))
        if name == "pin_memory":
            out = args[0].clone()
            self.pinned.append(out)
            return out
        return func(*args, **kwargs)

    def named(self, name: str) -> list[tuple[tuple, dict]]:
        return [(a, k) for n, a, k in self.calls if n == name]


# --- TabularDataset.from_csv -----------------------------------------------------------------------


def _csv(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_tabular_csv_reads_features_targets_and_skips_blank_lines(tmp_path):
    path = _csv(tmp_path, "a;b;y\n1;2;cat\n\n3;4.5;dog\n5;6;cat\n")
    ds = TabularDataset.from_csv(path, "y", delimiter=";")
    assert ds.features.tolist() == [[1, 2], [3, 4.5], [5, 6]] and ds.features.dtype == torch.float32
    assert ds.targets.tolist() == [0, 1, 0] and ds.targets.dtype == torch.int64
    assert ds.classes == ["cat", "dog"] and ds.feature_names == ["a", "b"]
    # classes given: numbered in that order
    assert TabularDataset.from_csv(path, "y", classes=["dog", "cat"], delimiter=";").targets.tolist() == [1, 0, 1]
    items = ds.__getitems__([2, 0, 1])
    assert len(items) == 3 and items.targets.tolist() == [0, 0, 1]
    empty = ds.__getitems__([])
    assert len(empty) == 0 and empty.features.shape == (0, 2)


def test_tabular_csv_regression_takes_several_targets(tmp_path):
    path = _csv(tmp_path, "x,u,v\n1,2,3\n4,5,6\n")
    ds = TabularDataset.from_csv(path, ["u", "v"], task="regression")
    assert ds.targets.tolist() == [[2, 3], [5, 6]] and ds.features.tolist() == [[1], [4]]
    with pytest.raises(ValueError, match=r"^classification takes one target column, got \['u', 'v'\]$"):
        TabularDataset.from_csv(path, ["u", "v"])


def test_tabular_csv_errors_name_the_file_line_and_column(tmp_path):
    empty = _csv(tmp_path, "", "empty.csv")
    with pytest.raises(EmptySplitError, match=r"empty\.csv: empty file, expected a header row$"):
        TabularDataset.from_csv(empty, "y")
    two = _csv(tmp_path, "a,y\n1,0\n", "two.csv")
    with pytest.raises(MissingColumnError, match=r"two\.csv: column 'b', 'z' not found; the columns are \['a', 'y'\]"):
        TabularDataset.from_csv(two, "z", features=["b"], task="regression")
    short = _csv(tmp_path, "a,b,y\n1,2,0\n3,4\n", "short.csv")
    with pytest.raises(DatasetError, match=r"short\.csv line 3: 2 values, expected 3$"):
        TabularDataset.from_csv(short, "y")
    bad_target = _csv(tmp_path, "a,y\n1,2\n3,x\n", "bad_target.csv")
    with pytest.raises(DatasetError, match=r"bad_target\.csv line 3: column 'y': 'x' is not a number$"):
        TabularDataset.from_csv(bad_target, "y", task="regression")
    label = _csv(tmp_path, "a,y\n1,cat\n\n3,cow\n", "label.csv")
    with pytest.raises(DatasetError, match=r"^\S*label\.csv line 4: label 'cow' is not one of the classes \['cat'\]$"):
        TabularDataset.from_csv(label, "y", classes=["cat"])


def test_tabular_dataset_checks_its_tensors_and_indices():
    with pytest.raises(ValueError, match=r"^3 feature rows but 4 targets$"):
        TabularDataset(torch.zeros(3, 2), torch.zeros(4), ["a", "b"], ["y"])
    ds = TabularDataset(torch.ones(3, 2, dtype=torch.float64), torch.zeros(3), ["a", "b"], ["y"])
    assert ds.features.dtype == torch.float32
    for bad in ([-1], [3], [0, 3]):
        with pytest.raises(IndexError, match=r"^index out of range for TabularDataset of length 3$"):
            ds.__getitems__(bad)


# --- TabularBatcher -----------------------------------------------------------------------------


def test_tabular_batcher_constants_are_float32_and_positive():
    b = TabularBatcher(shift=torch.tensor([1.0, 2.0], dtype=torch.float64), scale=np.array([2.0, 4.0]))
    assert b.shift.dtype == torch.float32 and b.scale.dtype == torch.float32
    items = TabularDataset(torch.tensor([[3.0, 6.0]]), torch.tensor([1]), ["a", "b"], ["y"]).__getitems__([0])
    out = b.batch(items)
    assert out.inputs.dtype == torch.float32 and out.inputs.tolist() == [[1.0, 1.0]]
    for scale in ([1.0, 0.0], [0.0], [-1.0]):
        with pytest.raises(ValueError, match=r"^scale values must be > 0$"):
            TabularBatcher(scale=scale)


def test_tabular_batcher_fit_min_max_and_small_spreads():
    x = torch.tensor([[1.0, 10.0, 0.1], [3.0, 30.0, 0.3], [2.0, 50.0, 0.2]])
    b = TabularBatcher.fit(x, "min_max")
    assert b.shift.tolist() == pytest.approx([1.0, 10.0, 0.1]) and b.scale.tolist() == pytest.approx([2.0, 40.0, 0.2])
    s = TabularBatcher.fit(x)  # a std below 1 stays itself; only a constant feature gets 1
    assert s.scale.tolist() == pytest.approx(x.std(0, unbiased=False).tolist())
    assert TabularBatcher.fit(torch.ones(4, 1)).scale.tolist() == [1.0]
    with pytest.raises(ValueError, match=r"^how must be 'standard' or 'min_max', got 'z'$"):
        TabularBatcher.fit(x, "z")


def test_tabular_batch_goes_to_the_device_asked_for():
    ds = TabularDataset(torch.ones(2, 1), torch.tensor([0, 1]), ["a"], ["y"])
    batch = TabularBatcher().batch(ds.__getitems__([0, 1]), device="meta")
    assert isinstance(batch, TabularBatch)
    assert batch.inputs.device.type == "meta" and batch.targets.device.type == "meta"
    assert TabularBatcher().batch(ds.__getitems__([0]), device=None).inputs.device.type == "cpu"


# --- MNIST ------------------------------------------------------------------------------------------


def _idx(magic: int, dims: list[int], data: bytes) -> bytes:
    return magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims) + data


def _mnist_files(raw: Path, split: str, n: int, seed: int, gz: bool = False, labels_n: int | None = None) -> np.ndarray:
    """Writes `split`'s two IDX files of `n` random digits; returns the images."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, labels_n if labels_n is not None else n, dtype=np.uint8)
    raw.mkdir(parents=True, exist_ok=True)
    image_name, label_name = mnist_module.FILES[split]
    for name, blob in ((image_name, _idx(2051, [n, 28, 28], images.tobytes())),
                       (label_name, _idx(2049, [len(labels)], labels.tobytes()))):
        if gz:
            (raw / f"{name}.gz").write_bytes(gzip.compress(blob))
        else:
            (raw / name).write_bytes(blob)
    return images


def test_read_idx_reads_all_four_bytes_of_every_dimension(tmp_path):
    path = tmp_path / "big-dims"
    path.write_bytes(_idx(2051, [0, 2**24 + 5, 2**16 + 7], b""))
    assert mnist_module._read_idx(path, 2051, 3).shape == (0, 2**24 + 5, 2**16 + 7)


def test_mnist_dataset_checks_its_tensors():
    with pytest.raises(ValueError, match=r"^images must be a uint8 \[N, 28, 28\] tensor, got torch.float32 \[2, 28, 28\]$"):
        MnistDataset(torch.zeros(2, 28, 28), torch.zeros(2))
    with pytest.raises(ValueError, match=r"got torch.uint8 \[28, 28\]$"):
        MnistDataset(torch.zeros(28, 28, dtype=torch.uint8), torch.zeros(28))
    with pytest.raises(MnistFormatError, match=r"^2 images but 3 labels$"):
        MnistDataset(torch.zeros(2, 28, 28, dtype=torch.uint8), torch.zeros(3))
    ds = MnistDataset(torch.zeros(2, 28, 28, dtype=torch.uint8), torch.tensor([3, 4], dtype=torch.int32))
    assert ds.labels.dtype == torch.int64
    empty = ds.__getitems__([])
    assert empty.images.shape == (0, 28, 28) and empty.labels.shape == (0,)


def test_mnist_load_errors_name_both_files_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("BURNLIKE_DOWNLOAD", raising=False)
    with pytest.raises(ValueError, match=r"^split must be 'train' or 'test', got 'valid'$"):
        MnistDataset.load("valid", tmp_path)
    with pytest.raises(MnistNotFoundError) as missing:
        MnistDataset.load("test", tmp_path)
    raw = (tmp_path / "MNIST" / "raw").resolve()
    assert str(missing.value) == (
        f"MNIST not found in {raw}\n"
        "Expected the four IDX files (gzip or not):\n"
        "  - train-images-idx3-ubyte[.gz]\n  - train-labels-idx1-ubyte[.gz]\n"
        "  - t10k-images-idx3-ubyte[.gz]\n  - t10k-labels-idx1-ubyte[.gz]\n"
        "Put them there, or point burnlike at the folder that holds MNIST/raw with the environment "
        "variable BURNLIKE_DATA=<root>, the Hydra key data.root=<root> or MnistDataset.train(root); "
        "MnistDataset.train(root, download=True) or BURNLIKE_DOWNLOAD=1 lets torchvision download them."
    )
    _mnist_files(tmp_path / "MNIST" / "raw", "test", 3, seed=1, labels_n=2)
    images, labels = (str(tmp_path / "MNIST" / "raw" / n) for n in mnist_module.FILES["test"])
    with pytest.raises(MnistFormatError) as counts:
        MnistDataset.load("test", tmp_path)
    assert str(counts.value) == (f"{images} has 3 images but {labels} has 2 labels; "
                                 "expected the same count (files from different splits or downloads?)")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mnist_server(tmp_path):
    """A local HTTP server holding four tiny gzip IDX files, as torchvision's MNIST mirrors do."""
    served = tmp_path / "served"
    _mnist_files(served, "train", 3, seed=5, gz=True)
    _mnist_files(served, "test", 2, seed=6, gz=True)
    handler = lambda *a, **k: _Quiet(*a, directory=str(served), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_mnist_downloads_through_torchvision_when_allowed(tmp_path, monkeypatch, mnist_server):
    from torchvision.datasets import MNIST

    served, url = mnist_server
    files = sorted(p.name for p in served.iterdir())
    monkeypatch.setattr(MNIST, "mirrors", [url])
    monkeypatch.setattr(MNIST, "resources", [(f, hashlib.md5((served / f).read_bytes()).hexdigest()) for f in files])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", "yes")
    root = tmp_path / "root"
    train = MnistDataset.train(root)
    expected = np.frombuffer(gzip.decompress((served / "train-images-idx3-ubyte.gz").read_bytes())[16:], np.uint8)
    assert train.images.numpy().reshape(-1).tolist() == expected.tolist()
    assert len(MnistDataset.test(root, download=False)) == 2  # one download fetched both splits
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root", "served"]


def test_mnist_says_why_a_download_failed(tmp_path, monkeypatch, mnist_server):
    from torchvision.datasets import MNIST

    _, url = mnist_server
    monkeypatch.setattr(MNIST, "mirrors", [url + "nothing-here/"])
    with pytest.raises(MnistNotFoundError) as failed:
        MnistDataset.train(tmp_path, download=True)
    message = str(failed.value)
    assert message.startswith("MNIST not found in ")
    assert "download them.\nDownloading through torchvision failed: RuntimeError: Error downloading " in message


def test_mnist_batcher_values_dtypes_and_the_non_cpu_route():
    images = torch.tensor([[[0, 255] * 14] * 28, [[128] * 28] * 28], dtype=torch.uint8)
    items = MnistItems(images, torch.tensor([7, 2]))
    batch = MnistBatcher().batch(items)
    expected = (images.double() / 255 - mnist_module.MEAN) / mnist_module.STD
    assert batch.images.dtype == torch.float32 and batch.targets.tolist() == [7, 2]
    assert torch.allclose(batch.images.double(), expected, atol=1e-5)
    # a batch on another device is normalised there (torch ops, not numpy)
    on_meta = MnistBatcher().batch(MnistItems(images.to("meta"), torch.tensor([7, 2], device="meta")))
    assert isinstance(on_meta, MnistBatch)
    assert on_meta.images.device.type == "meta" and on_meta.images.dtype == torch.float32
    assert on_meta.images.shape == (2, 28, 28) and on_meta.targets.shape == (2,)


# --- moving and pinning batches ----------------------------------------------------------------------


def test_batches_move_blocking_unless_asked_and_pin_every_tensor():
    tokens = TextClassificationBatcher(ByteTokenizer()).batch(["ab", "c"])
    mnist = MnistBatch(torch.zeros(1, 28, 28), torch.zeros(1, dtype=torch.int64))
    with TorchCalls() as calls:
        tokens.to("cpu")
        mnist.to("cpu")
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [False] * 4
    with TorchCalls() as calls:
        tokens.to("cpu", non_blocking=True)
        mnist.to("cpu", non_blocking=True)
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [True] * 4
    with TorchCalls() as calls:
        pinned_tokens = tokens.pin_memory()
        pinned_mnist = mnist.pin_memory()
    assert len(calls.pinned) == 4
    assert pinned_tokens.tokens is calls.pinned[0] and pinned_tokens.mask_pad is calls.pinned[1]
    assert pinned_mnist.images is calls.pinned[2] and pinned_mnist.targets is calls.pinned[3]


# --- DataLoaderBuilder and the on-device loader --------------------------------------------------------


def _digits(n: int) -> MnistDataset:
    return MnistDataset(torch.arange(n * 784, dtype=torch.int64).remainder(256).to(torch.uint8).reshape(n, 28, 28),
                        torch.arange(n) % 10)


def test_builder_defaults_and_refusals():
    loader = DataLoaderBuilder(MnistBatcher()).build(_digits(3))
    assert isinstance(loader, DataLoader) and loader.batch_size == 1 and len(loader) == 3
    assert DataLoaderBuilder(MnistBatcher()).batch_size(1).build(_digits(2)).batch_size == 1
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got 0$"):
        DataLoaderBuilder(MnistBatcher()).batch_size(0)
    with pytest.raises(ValueError, match=r"^num_workers must be an integer >= 0, got -1$"):
        DataLoaderBuilder(MnistBatcher()).num_workers(-1)


def test_the_on_device_loader_keeps_data_and_order_on_the_device():
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(2).shuffle(3).on_device("meta").build(_digits(5))
    assert loader.data.images.device.type == "meta" and loader.data.targets.device.type == "meta"
    with TorchCalls() as calls:
        batches = list(loader)
    assert [b.images.shape[0] for b in batches] == [2, 2, 1]
    gathers = calls.named("index_select")
    assert gathers and all(args[2].device.type == "meta" for args, _ in gathers)
    moves = [k for args, k in calls.named("to") if args[0].dtype == torch.long and args[0].device.type == "cpu"]
    assert moves and all(k.get("non_blocking") is True for k in moves)  # the order is copied asynchronously


# --- text batching -------------------------------------------------------------------------------


def test_sequence_lengths_must_be_positive_integers():
    assert SeqLengthOption.Max(1).resolve(5) == 1 and SeqLengthOption.Fixed(1).resolve(0) == 1
    for bad in (0, True, "5", 2.0):
        with pytest.raises(ValueError, match=r"^a sequence length must be an integer >= 1, got "):
            SeqLengthOption.Max(bad)


def test_padding_tokens_are_int64_whatever_the_pad_tokens_type():
    tokens, mask = generate_padding_mask(np.int32(9), [[1, 2, 3], [4]])
    assert tokens.dtype == torch.int64 and tokens.tolist() == [[1, 2, 3], [4, 9, 9]]
    assert mask.tolist() == [[False] * 3, [False, True, True]]


def test_text_batcher_pad_tokens_lengths_and_refusals():
    explicit = TextClassificationBatcher(ByteTokenizer(), pad_token=7)
    assert explicit.pad == 7 and explicit.tokenizer.__class__ is ByteTokenizer
    assert TextClassificationBatcher(ByteTokenizer()).pad == 0
    plain = TextClassificationBatcher(lambda s: [ord(c) for c in s])
    assert plain.pad == 0
    batch = plain.batch(["ab", "c"])
    assert batch.tokens.tolist() == [[97, 98], [99, 0]] and batch.mask_pad.tolist() == [[False, False], [False, True]]
    assert TextClassificationBatcher(lambda s: [ord(c) for c in s], pad_token=5).batch(["ab", "c"]).tokens.tolist() == [
        [97, 98], [99, 5]]
    fixed = TextClassificationBatcher(ByteTokenizer(), seq_length=SeqLengthOption.Fixed(4)).batch(["a", "abcdef"])
    assert fixed.tokens.shape == (2, 4) and fixed.tokens[1].tolist() == [1, 100, 101, 102]
    with pytest.raises(TypeError, match=r"^tokenizer must be a Tokenizer or a callable str -> token ids, got int$"):
        TextClassificationBatcher(3)
    with pytest.raises(ValueError, match=r"^cannot batch zero texts$"):
        plain.batch([])

    class NoText:
        label = 1

    with pytest.raises(TypeError, match=r"^expected items with \.text and \.label \(or strings\), got NoText$"):
        plain.batch([NoText()])


# --- rows into items --------------------------------------------------------------------------------


@dataclasses.dataclass
class Pair:
    a: int
    b: str


@dataclasses.dataclass
class Mixed:
    n: int | None
    u: int | str
    skipped: int = dataclasses.field(default=0, init=False)
    s: str = ""


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


def test_encode_labels_without_line_numbers():
    assert encode_labels(["b", "a"], None, "src") == ([1, 0], ["a", "b"])
    with pytest.raises(DatasetError, match=r"^src: label 'z' is not one of the classes \['a'\]$"):
        encode_labels(["a", "z"], ["a"], "src")


# --- CSV and text files -----------------------------------------------------------------------------


def test_open_text_takes_a_bom_and_keeps_line_breaks_inside_quotes(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b\r\n"x\r\ny",2\r\n')
    assert InMemDataset.from_csv(path).items == [{"a": "x\r\ny", "b": "2"}]
    with pytest.raises(DatasetNotFoundError, match=r"^CSV file \S+ not found \(it is a folder\)$"):
        InMemDataset.from_csv(tmp_path)
    with pytest.raises(DatasetNotFoundError, match=r"^CSV file \S+missing\.csv not found$"):
        TextCsvDataset.from_csv(tmp_path / "missing.csv")


def test_headerless_csv_errors_name_the_line(tmp_path):
    path = _csv(tmp_path, "1,a\nx,b\n")
    with pytest.raises(DatasetError, match=r"t\.csv line 2: column 'a': 'x' is not a valid int$"):
        InMemDataset.from_csv(path, Pair, has_headers=False)


# --- Dataset base -------------------------------------------------------------------------------------


def test_dataset_subclasses_may_write_either_pair():
    class TorchStyle(Dataset[int]):
        def __getitem__(self, index: int) -> int:
            return index * 2

        def __len__(self) -> int:
            return 3

    class BurnStyle(Dataset[int]):
        def get(self, index: int) -> int | None:
            return index if 0 <= index < 2 else None

        def len(self) -> int:
            return 2

    assert list(TorchStyle()) == [0, 2, 4] and list(BurnStyle()) == [0, 1]
    with pytest.raises(TypeError, match=r"must define get\(\) or __getitem__\(\), and len\(\) or __len__\(\)"):
        class OnlyItems(Dataset[int]):
            def __getitem__(self, index: int) -> int:
                return index


def test_as_dataset_needs_both_methods_of_a_pair():
    class OnlyGet:
        def get(self, index: int) -> int:
            return index

    class OnlyGetItem:
        def __getitem__(self, index: int) -> int:
            return index

    for obj in (OnlyGet(), OnlyGetItem()):
        with pytest.raises(TypeError, match=r"^expected a dataset with get\(\)/len\(\) \(Burn\)"):
            as_dataset(obj)


# --- SQLite -------------------------------------------------------------------------------------------


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


def test_sqlite_storage_names_and_overwrite(tmp_path):
    assert SqliteDatasetStorage(name="", base_dir=tmp_path).db_file() == tmp_path / "dataset.db"
    assert SqliteDatasetStorage(name='a/b:c', base_dir=tmp_path).db_file() == tmp_path / "abc.db"
    storage = SqliteDatasetStorage.from_file(tmp_path / "s.db")
    with storage.writer() as w:
        w.write("train", {"a": 1})
    with pytest.raises(FileExistsError, match=r"already exists and overwrite is False"):
        storage.writer()


# --- transforms ------------------------------------------------------------------------------------------


def test_selection_indices_are_flat_int64_and_batches_checked():
    ds = InMemDataset(["a", "b", "c", "d"])
    sel = SelectionDataset(ds, [[3, 2], [1, 0]])
    assert sel.indices.tolist() == [3, 2, 1, 0] and sel.len() == 4
    assert SelectionDataset(ds, []).indices.dtype == np.int64
    assert SelectionDataset(ds, np.array([1], dtype=np.uint8)).indices.dtype == np.int64
    assert sel.__getitems__([]) == [] and sel.__getitems__([0, 3]) == ["d", "a"]
    for bad in ([-1], [4]):
        with pytest.raises(IndexError, match=r"^index out of range for SelectionDataset of length 4$"):
            sel.__getitems__(bad)


def test_partial_dataset_edges():
    ds = InMemDataset(["a", "b", "c"])
    assert PartialDataset(ds, 2, 2).len() == 0
    with pytest.raises(ValueError, match=r"^PartialDataset needs 0 <= start_index <= end_index, got 2\.\.1$"):
        PartialDataset(ds, 2, 1)
    past = PartialDataset(ds, 1, 10)
    with pytest.raises(IndexError, match=r"^index 2 is out of range for PartialDataset of length 3$"):
        past.__getitems__([2])


def test_mapper_dataset_keeps_its_mapper():
    from burnlike.data.dataset.transform import MapperDataset

    def upper(s: str) -> str:
        return s.upper()

    assert MapperDataset(InMemDataset(["a"]), upper).mapper is upper


def test_sizes_and_seeds_are_checked():
    assert resolve_size(0, 10) == 0 and resolve_size(0.0, 10) == 0 and resolve_size(0.55, 10) == 5
    with pytest.raises(ValueError, match=r"^size must be >= 0, got -1$"):
        resolve_size(-1, 10)
    for bad in (True, "3"):
        with pytest.raises(ValueError, match=r"^size must be None, an int or a float ratio, got "):
            resolve_size(bad, 10)
    for bad in (True, 1.5, -1):
        with pytest.raises(ValueError, match=r"^a seed must be an integer >= 0"):
            make_rng(bad)


def test_shuffle_draws_nothing_for_one_element_and_swaps_two():
    rng = np.random.default_rng(0)
    one = np.array([5])
    shuffle(one, rng)
    assert one.tolist() == [5] and rng.integers(0, 1 << 30) == np.random.default_rng(0).integers(0, 1 << 30)
    orders = set()
    for seed in range(8):
        two = np.array([0, 1])
        shuffle(two, np.random.default_rng(seed))
        orders.add(tuple(two.tolist()))
    assert orders == {(0, 1), (1, 0)}


def test_sampler_without_replacement_option_is_false():
    assert SamplerDatasetOptions().without_replacement().replace_samples is False
    assert SamplerDataset.without_replacement(InMemDataset([1, 2]), 2).is_with_replacement() is False


def test_sampler_workers_draw_from_their_own_jumped_streams():
    """Worker k continues the parent's stream jumped k + 1 times (and once only: the jump is made on
    the worker's first draw, not on every draw)."""
    source = InMemDataset(list(range(1000)))
    sampler = SamplerDataset(source, SamplerDatasetOptions().with_fixed_size(8).with_seed(7))
    loader = DataLoader(sampler, batch_size=4, num_workers=2, multiprocessing_context="fork",
                        collate_fn=list)
    got = [batch for batch in loader]
    expected = []
    for worker in range(2):
        rng = np.random.Generator(np.random.default_rng(7).bit_generator.jumped(worker + 1))
        expected.append([int(rng.integers(0, 1000)) for _ in range(4)])
    assert got == expected
    parent = np.random.default_rng(7)  # the parent process keeps the unjumped stream
    assert [sampler.get(i) for i in range(3)] == [int(parent.integers(0, 1000)) for _ in range(3)]
