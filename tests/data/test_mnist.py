"""`burnlike.data.mnist`: `MnistDataset` reads the four IDX files (gzip or raw) from the root given,
then `BURNLIKE_DATA`, then ./data; it names the file and the fault for every malformed file and the
folder, the files and the fixes for missing ones, downloads through torchvision only when allowed
(argument, then `BURNLIKE_DOWNLOAD`), and says why a download failed. Its items are small copies,
its batched fetch (`__getitems__`) equals fetching item by item, and `MnistBatcher` normalises a
whole batch at once, on the CPU or where the images are; `MnistBatch` moves and pins like a tensor."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import pickle
import socket
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import burnlike.data.mnist as mnist_module
from burnlike.data import (
    Batcher,
    DataLoaderBuilder,
    MnistBatch,
    MnistBatcher,
    MnistDataset,
    MnistFormatError,
    MnistItem,
    MnistItems,
    MnistNotFoundError,
)
from tests.data.helpers import TorchCalls
from tests.helpers.idx import MALFORMED, NAMES, digits, idx_bytes, write_malformed, write_mnist_idx

FOUR = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def normalised(images: torch.Tensor) -> torch.Tensor:
    return (images.double() / 255 - 0.1307) / 0.3081


def idx_file(magic: int, dims: list[int], data: bytes) -> bytes:
    """An IDX file's bytes with any magic number and dimensions, matching the data or not."""
    return magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims) + data


def write_random_split(raw: Path, split: str, n: int, seed: int, gz: bool = False,
                       labels_n: int | None = None) -> np.ndarray:
    """Writes `split`'s two IDX files of `n` random digits (`labels_n` labels); returns the images."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, labels_n if labels_n is not None else n, dtype=np.uint8)
    raw.mkdir(parents=True, exist_ok=True)
    image_name, label_name = mnist_module.FILES[split]
    for name, blob in ((image_name, idx_file(2051, [n, 28, 28], images.tobytes())),
                       (label_name, idx_file(2049, [len(labels)], labels.tobytes()))):
        if gz:
            (raw / f"{name}.gz").write_bytes(gzip.compress(blob))
        else:
            (raw / name).write_bytes(blob)
    return images


def write_split(root: Path, images: np.ndarray, labels: np.ndarray, split: str = "train") -> Path:
    """Writes the given images and labels as `split`'s two raw IDX files; returns the raw folder."""
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    image_name, label_name = NAMES[split]
    (raw / image_name).write_bytes(idx_bytes(images))
    (raw / label_name).write_bytes(idx_bytes(labels))
    return raw


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mnist_server(tmp_path):
    """A local HTTP server holding four tiny gzip IDX files, as torchvision's MNIST mirrors do."""
    served = tmp_path / "served"
    write_random_split(served, "train", 3, seed=5, gz=True)
    write_random_split(served, "test", 2, seed=6, gz=True)
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


@pytest.fixture
def download_calls(monkeypatch) -> list[Path]:
    """Stands in for torchvision's download (no network in tests): records each root asked for and
    writes 12 train and 6 test digits there."""
    calls: list[Path] = []

    def fake_download(root: Path) -> None:
        calls.append(root)
        write_mnist_idx(root, 12, 6)

    monkeypatch.setattr(mnist_module, "_download", fake_download)
    return calls


# --- reading the IDX files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("gz", [True, False])
def test_reads_gz_and_raw_idx_files_into_uint8_images_and_int_labels(tmp_path, gz):
    write_mnist_idx(tmp_path, 40, 20, gz=gz, seed=3)
    raw = tmp_path / "MNIST" / "raw"
    assert (raw / "train-images-idx3-ubyte.gz").exists() == gz and (raw / "train-images-idx3-ubyte").exists() != gz
    train, test = MnistDataset.train(tmp_path), MnistDataset.test(tmp_path)
    assert (len(train), len(test)) == (40, 20)
    images, labels = digits(40, 3)
    assert train.images.shape == (40, 28, 28) and train.images.dtype == torch.uint8
    assert train.labels.dtype == torch.int64
    assert torch.equal(train.images, torch.from_numpy(images)) and train.labels.tolist() == labels.tolist()
    assert torch.equal(test.images, torch.from_numpy(digits(20, 4)[0]))
    item = train[3]
    assert isinstance(item, MnistItem) and isinstance(item.label, int) and item.label == int(labels[3])
    assert item.image.dtype == torch.uint8 and item.image.shape == (28, 28)
    assert torch.equal(item.image, torch.from_numpy(images[3]))


def test_labels_zero_to_nine_are_all_accepted(tmp_path):
    images, _ = digits(10, 0)
    write_split(tmp_path, images, np.arange(10, dtype=np.uint8))
    assert MnistDataset.train(tmp_path).labels.tolist() == list(range(10))


def test_read_idx_reads_all_four_bytes_of_every_dimension(tmp_path):
    path = tmp_path / "big-dims"
    path.write_bytes(idx_file(2051, [0, 2**24 + 5, 2**16 + 7], b""))
    assert mnist_module._read_idx(path, 2051, 3).shape == (0, 2**24 + 5, 2**16 + 7)


def test_root_is_the_argument_then_burnlike_data_then_dot_data(tmp_path, monkeypatch):
    write_mnist_idx(tmp_path / "env", 12, 8)
    write_mnist_idx(tmp_path / "data", 14, 9)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BURNLIKE_DATA", str(tmp_path / "env"))
    assert (len(MnistDataset.train()), len(MnistDataset.test())) == (12, 8)
    assert len(MnistDataset.test(tmp_path / "data")) == 9  # an explicit root beats the env var
    monkeypatch.delenv("BURNLIKE_DATA")
    assert len(MnistDataset.test()) == 9  # ./data


# --- items and the batched fetch ----------------------------------------------------------------------------
def test_item_is_a_small_copy_not_a_view_of_the_whole_dataset(mnist_root):
    item = MnistDataset.train(mnist_root)[0]
    assert item.image.untyped_storage().nbytes() == 784  # pickling it won't drag the whole dataset along
    assert pickle.loads(pickle.dumps(item)).label == item.label


def test_batched_fetch_equals_per_item_fetch(mnist_root):
    ds = MnistDataset.train(mnist_root)
    idx = [5, 0, 99, 42, 5]
    fast_items = ds.__getitems__(idx)
    assert fast_items.images.dtype == torch.uint8  # uint8 until the batcher
    for fast in (MnistBatcher().batch(fast_items), MnistBatcher().batch(ds.__getitems__(torch.tensor(idx)))):
        slow = MnistBatcher().batch([ds[i] for i in idx])
        assert torch.equal(fast.images, slow.images) and torch.equal(fast.targets, slow.targets)


def test_loader_batches_through_getitems_match_per_item_batches(mnist_root):
    """The DataLoader uses __getitems__; the result equals batching the same indices item by item."""
    ds = MnistDataset.train(mnist_root)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(5).build(ds)
    order = list(iter(loader.sampler))  # the sampler's generator is fresh: this is the first epoch's order
    fresh = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(5).build(ds)
    for n, batch in enumerate(fresh):
        idx = order[16 * n : 16 * (n + 1)]
        slow = MnistBatcher().batch([ds[i] for i in idx])
        assert torch.equal(batch.images, slow.images) and torch.equal(batch.targets, slow.targets)
    assert n == 6


def test_torch_subset_of_mnist_keeps_batched_fetching(mnist_root):
    ds = MnistDataset.train(mnist_root)
    subset = torch.utils.data.Subset(ds, range(10, 42))
    batches = list(DataLoaderBuilder(MnistBatcher()).batch_size(8).build(subset))
    assert len(batches) == 4 and torch.cat([b.targets for b in batches]).tolist() == ds.labels[10:42].tolist()


def test_mnist_dataset_and_batch_survive_pickling(mnist_root):
    """What ddp_spawn and DataLoader workers do to them."""
    ds = MnistDataset.train(mnist_root)
    again = pickle.loads(pickle.dumps(ds))
    assert torch.equal(again.__getitems__([3, 1]).images, ds.images[[3, 1]])
    batch = pickle.loads(pickle.dumps(MnistBatcher().batch(ds.__getitems__([0, 1]))))
    assert isinstance(batch, MnistBatch) and batch.images.shape == (2, 28, 28)


# --- the batcher and its batches ----------------------------------------------------------------------------
def test_batcher_normalises_the_whole_batch_and_moves_it_to_the_device(mnist_root):
    ds = MnistDataset.train(mnist_root)
    batch = MnistBatcher().batch([ds[0], ds[1], ds[7]])
    assert isinstance(batch, MnistBatch) and isinstance(MnistBatcher(), Batcher)
    assert batch.images.dtype == torch.float32 and batch.images.shape == (3, 28, 28)
    expected = normalised(ds.images[[0, 1, 7]])
    assert torch.allclose(batch.images.double(), expected, atol=1e-5)
    assert batch.images.min().item() == pytest.approx(-0.1307 / 0.3081, abs=1e-5)  # pixel 0
    assert batch.images.max().item() == pytest.approx((230 / 255 - 0.1307) / 0.3081, abs=1e-5)  # the bar
    assert batch.targets.dtype == torch.int64 and batch.targets.tolist() == ds.labels[[0, 1, 7]].tolist()
    moved = MnistBatcher().batch([ds[0]], device="meta")
    assert moved.images.device.type == "meta" and moved.targets.device.type == "meta"


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



def test_mnist_batches_are_contiguous_whatever_the_images_strides():
    """Broadcast or transposed image tensors still give a row-major batch, so `x.view(B, -1)` (an MLP's
    first line) works on it."""
    digit = torch.arange(28 * 28, dtype=torch.int64).to(torch.uint8).reshape(1, 28, 28)
    for images in (digit.expand(3, 28, 28), digit.repeat(3, 1, 1).transpose(1, 2)):
        batch = MnistBatcher().batch(MnistItems(images, torch.tensor([1, 2, 3])))
        assert batch.images.is_contiguous() and batch.images.view(3, -1).shape == (3, 784)
        expected = (images.double() / 255 - mnist_module.MEAN) / mnist_module.STD
        assert torch.allclose(batch.images.double(), expected, atol=1e-5)


def test_mnist_items_with_numpy_labels_give_int64_targets():
    """IDX labels are uint8: items built from such an array still batch into int64 targets."""
    labels = np.array([7, 2], dtype=np.uint8)
    items = [MnistItem(torch.zeros(28, 28, dtype=torch.uint8), label) for label in labels]
    targets = MnistBatcher().batch(items).targets
    assert targets.dtype == torch.int64 and targets.tolist() == [7, 2]


def test_a_float_index_tensor_is_refused_not_truncated(mnist_root):
    """A batched fetch takes integer indices: 1.7 is not an index (not silently item 1)."""
    with pytest.raises(TypeError):
        MnistDataset.train(mnist_root).__getitems__(torch.tensor([1.7, 0.0]))


def test_batch_moves_with_lightnings_move_data_to_device():
    from lightning.fabric.utilities.apply_func import move_data_to_device

    batch = MnistBatch(torch.zeros(2, 28, 28), torch.zeros(2, dtype=torch.long))
    moved = move_data_to_device(batch, torch.device("meta"))
    assert isinstance(moved, MnistBatch) and moved.images.device.type == "meta"
    assert moved.targets.device.type == "meta" and batch.images.device.type == "cpu"
    assert batch.to("meta").images.device.type == "meta"


def test_mnist_batch_moves_blocking_unless_asked_and_pins_both_tensors():
    mnist = MnistBatch(torch.zeros(1, 28, 28), torch.zeros(1, dtype=torch.int64))
    with TorchCalls() as calls:
        mnist.to("cpu")
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [False] * 2
    with TorchCalls() as calls:
        mnist.to("cpu", non_blocking=True)
    assert [k.get("non_blocking") for _, k in calls.named("to")] == [True] * 2
    with TorchCalls() as calls:
        pinned_mnist = mnist.pin_memory()
    assert len(calls.pinned) == 2
    assert pinned_mnist.images is calls.pinned[0] and pinned_mnist.targets is calls.pinned[1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning host memory needs a CUDA device")
def test_mnist_batch_pin_memory_pins_images_and_targets():
    mnist = MnistBatch(torch.randn(2, 1, 28, 28), torch.tensor([3, 4])).pin_memory()
    assert mnist.images.is_pinned() and mnist.targets.is_pinned() and mnist.targets.tolist() == [3, 4]


# --- malformed files and tensors ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("bad_magic", r"magic number 305419896; expected 2051"),
        ("swapped", r"magic number 2049, which marks IDX labels"),
        ("truncated", r"data bytes, expected 6272 .*truncated"),
        ("trailing", r"6279 data bytes, expected 6272 .*trailing"),
        ("short_header", r"6 bytes, too short for an IDX header"),
        ("count_mismatch", r"8 images but .*train-labels-idx1-ubyte has 7 labels"),
        ("bad_label", r"label 11 found, expected digits 0-9"),
        ("bad_gzip", r"not a readable gzip file"),
        ("truncated_gzip", r"not a readable gzip file"),
    ],
)
def test_malformed_idx_file_error_names_the_file_and_the_fault(tmp_path, kind, needle):
    assert kind in MALFORMED
    write_mnist_idx(tmp_path, 4, 4)
    bad = write_malformed(tmp_path, kind)
    with pytest.raises(MnistFormatError, match=needle) as err:
        MnistDataset.train(tmp_path)
    assert str(bad) in str(err.value) and isinstance(err.value, ValueError)
    assert len(MnistDataset.test(tmp_path)) == 4  # the other split is untouched


def test_malformed_test_split_error_names_its_file(tmp_path):
    bad = write_malformed(tmp_path, "truncated", split="test")
    assert bad.name == NAMES["test"][0]
    with pytest.raises(MnistFormatError, match="t10k-images-idx3-ubyte"):
        MnistDataset.test(tmp_path)


@pytest.mark.parametrize("label", [10, 11, 255])
def test_label_above_nine_is_refused_naming_the_file(tmp_path, label):
    images, labels = digits(6, 0)
    labels[4] = label
    raw = write_split(tmp_path, images, labels)
    with pytest.raises(MnistFormatError, match=rf"label {label} found, expected digits 0-9") as err:
        MnistDataset.train(tmp_path)
    assert str(raw / NAMES["train"][1]) in str(err.value)


@pytest.mark.parametrize("shape", [(28, 27), (27, 28), (32, 32), (14, 56)])
def test_images_that_are_not_28_by_28_are_refused(tmp_path, shape):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (5, *shape)).astype(np.uint8)
    raw = write_split(tmp_path, images, np.zeros(5, dtype=np.uint8))
    with pytest.raises(MnistFormatError, match=r"images of shape \(\d+, \d+\), expected \(28, 28\)") as err:
        MnistDataset.train(tmp_path)
    assert str(raw / NAMES["train"][0]) in str(err.value) and str(shape) in str(err.value)


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


# --- missing files ------------------------------------------------------------------------------------------
def test_missing_files_error_names_the_folder_the_files_and_the_fixes(tmp_path, monkeypatch):
    monkeypatch.delenv("BURNLIKE_DOWNLOAD", raising=False)
    monkeypatch.setattr(mnist_module, "_download", lambda root: pytest.fail("downloaded without permission"))
    with pytest.raises(MnistNotFoundError) as err:
        MnistDataset.train(tmp_path)
    text = str(err.value)
    assert str((tmp_path / "MNIST" / "raw").resolve()) in text
    for name in FOUR:
        assert f"{name}[.gz]" in text
    assert "BURNLIKE_DATA" in text and "data.root" in text and "download=True" in text
    assert isinstance(err.value, FileNotFoundError)


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
    write_random_split(tmp_path / "MNIST" / "raw", "test", 3, seed=1, labels_n=2)
    images, labels = (str(tmp_path / "MNIST" / "raw" / n) for n in mnist_module.FILES["test"])
    with pytest.raises(MnistFormatError) as counts:
        MnistDataset.load("test", tmp_path)
    assert str(counts.value) == (f"{images} has 3 images but {labels} has 2 labels; "
                                 "expected the same count (files from different splits or downloads?)")


def test_half_present_split_is_missing_naming_the_absent_file(tmp_path, monkeypatch):
    monkeypatch.delenv("BURNLIKE_DOWNLOAD", raising=False)
    write_mnist_idx(tmp_path, 10, 10)
    (tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").unlink()
    assert len(MnistDataset.train(tmp_path)) == 10
    with pytest.raises(MnistNotFoundError, match="t10k-labels-idx1-ubyte"):
        MnistDataset.test(tmp_path)


# --- downloads ----------------------------------------------------------------------------------------------
def test_download_only_when_allowed_and_never_refetched(tmp_path, monkeypatch, download_calls):
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", "1")
    with pytest.raises(MnistNotFoundError):
        MnistDataset.train(tmp_path / "a", download=False)  # the explicit argument wins over the env var
    assert download_calls == [] and len(MnistDataset.train(tmp_path / "a")) == 12
    assert download_calls == [tmp_path / "a"]
    monkeypatch.delenv("BURNLIKE_DOWNLOAD")
    with pytest.raises(MnistNotFoundError):
        MnistDataset.test(tmp_path / "b")
    assert len(MnistDataset.test(tmp_path / "b", download=True)) == 6 and len(download_calls) == 2
    assert len(MnistDataset.test(tmp_path / "b", download=True)) == 6 and len(download_calls) == 2  # present: no refetch


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE", " Yes "])
def test_burnlike_download_truthy_values_enable_the_download(tmp_path, monkeypatch, download_calls, value):
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", value)
    assert len(MnistDataset.train(tmp_path)) == 12 and download_calls == [tmp_path]


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "2", "y"])
def test_other_burnlike_download_values_do_not_download(tmp_path, monkeypatch, download_calls, value):
    monkeypatch.setenv("BURNLIKE_DOWNLOAD", value)
    with pytest.raises(MnistNotFoundError):
        MnistDataset.train(tmp_path)
    assert download_calls == []


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


def test_failed_download_keeps_the_advice(tmp_path, monkeypatch):
    def offline(root: Path) -> None:
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz")

    monkeypatch.setattr(mnist_module, "_download", offline)
    with pytest.raises(MnistNotFoundError, match="(?s)BURNLIKE_DATA.*Downloading through torchvision failed"):
        MnistDataset.train(tmp_path, download=True)


def test_mnist_says_why_a_download_failed(tmp_path, monkeypatch, mnist_server):
    from torchvision.datasets import MNIST

    _, url = mnist_server
    monkeypatch.setattr(MNIST, "mirrors", [url + "nothing-here/"])
    with pytest.raises(MnistNotFoundError) as failed:
        MnistDataset.train(tmp_path, download=True)
    message = str(failed.value)
    assert message.startswith("MNIST not found in ")
    assert "download them.\nDownloading through torchvision failed: RuntimeError: Error downloading " in message


def test_allowed_download_without_a_network_keeps_the_advice_and_says_why(tmp_path, monkeypatch):
    """The real downloader (torchvision), offline: the error keeps the advice and says why it failed."""
    tried = []

    def offline(*args, **kwargs):
        tried.append(args[0] if args else None)
        raise socket.gaierror("no network in tests")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.setattr(socket.socket, "connect", offline)
    with pytest.raises(MnistNotFoundError) as err:
        MnistDataset.train(tmp_path, download=True)
    message = str(err.value)
    assert f"MNIST not found in {(tmp_path / 'MNIST' / 'raw').resolve()}" in message
    assert "Downloading through torchvision failed: RuntimeError" in message
    assert tried  # torchvision did try its mirrors
    assert not list((tmp_path / "MNIST" / "raw").glob("*-ubyte"))  # nothing half-written was left as data


# --- the IDX writer these tests use -------------------------------------------------------------------------
def test_idx_test_helper_writes_learnable_valid_idx_digits():
    """`tests.helpers.idx.digits` gives learnable classes and `idx_bytes` a valid IDX header: the
    training tests that read these files rely on both."""
    images, labels = digits(200, 0)
    assert set(labels.tolist()) == set(range(10))
    # a nearest-class-mean classifier on row sums separates the classes: the content is learnable
    rows = images.astype(np.float64).sum(axis=2)
    means = np.stack([rows[labels == c].mean(axis=0) for c in range(10)])
    predicted = ((rows[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    assert (predicted == labels).mean() > 0.99
    data = idx_bytes(images)
    assert int.from_bytes(data[:4], "big") == 2051 and len(data) == 16 + 200 * 784


def test_a_batcher_that_iterates_gets_mnist_items(mnist_root):
    """The batched fetch is also the list of `MnistItem`s a Burn batcher iterates
    (burn-core/src/data/dataloader/batcher.rs, v0.21.0: `batch(items: Vec<I>, device)`)."""
    ds = MnistDataset.train(mnist_root)
    fetched = ds.__getitems__([4, 0, 2])
    assert isinstance(fetched, MnistItems) and len(fetched) == 3
    items = list(fetched)
    assert all(isinstance(i, MnistItem) for i in items) and [i.label for i in items] == [ds[k].label for k in (4, 0, 2)]
    assert torch.equal(items[0].image, ds[4].image)

    class Labels:
        def batch(self, items, device):
            return torch.tensor([item.label for item in items], device=device)

    labels = next(iter(DataLoaderBuilder(Labels()).batch_size(5).build(ds)))
    assert labels.tolist() == [ds[k].label for k in range(5)]
