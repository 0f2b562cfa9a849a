"""`burnlike.record.format.registry`: recorders found by name (Burn's, the CLI's and the app's
spellings), by extension, and by a file's first bytes alone, which `Module.load_file` without a
recorder and `load_checkpoint` rely on (Lightning names every checkpoint `.ckpt`)."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from burnlike.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    RecordError,
)
from burnlike.record.format import registry
from tests.helpers.records import Net, randomised
from tests.record.format.helpers import RECORDERS

ALL_RECORDERS = [*RECORDERS, BinFileRecorder, BinGzFileRecorder]


# --- by name and extension ---


def test_the_registry_names_recorders_as_burn_the_cli_and_the_app_do():
    assert registry.by_name("CompactRecorder") == registry.by_name("compact") == CompactRecorder()
    assert registry.by_name("DefaultRecorder") == registry.by_name("default") == DefaultRecorder()
    assert registry.by_name("CompactRecorder", "full") == DefaultRecorder()  # a precision overrides the alias'
    assert registry.by_name("bin_gz") == BinGzFileRecorder(HalfPrecisionSettings)
    assert registry.by_name("mpk_gz") == NamedMpkGzFileRecorder(HalfPrecisionSettings)
    assert registry.by_name("json", burn_version="0.19.0") == PrettyJsonFileRecorder(burn_version="0.19.0")
    assert registry.by_name("BinFileRecorder", "double") == BinFileRecorder(DoublePrecisionSettings)
    assert registry.by_extension("a/model.json.gz", "half") == JsonGzFileRecorder(HalfPrecisionSettings)
    assert registry.by_extension("model.safetensors") is None
    with pytest.raises(ValueError, match="unknown recorder 'pickle'.*compact"):
        registry.by_name("pickle")


# --- by the file's bytes ---


@pytest.mark.parametrize("recorder_cls", ALL_RECORDERS)
def test_the_registry_tells_every_format_from_its_bytes_alone(tmp_path, recorder_cls):
    """What `Module.load_file` without a recorder and `load_checkpoint` rely on (Lightning names
    every checkpoint `.ckpt`, whatever wrote it)."""
    net = randomised(Net())
    written = recorder_cls(HalfPrecisionSettings).save_module(net, tmp_path / "m")
    renamed = written.rename(tmp_path / "m.ckpt")
    assert registry.sniff(renamed) == recorder_cls()
    assert registry.sniff(written) == recorder_cls()  # gone: named by its extension
    loaded = Net().load_file(renamed)
    assert torch.equal(loaded.embed.weight, net.embed.weight.half().float())


@pytest.mark.parametrize("recorder_cls", [PrettyJsonFileRecorder, JsonGzFileRecorder])
@pytest.mark.parametrize("padding", [3, 64, 65, 3 * 8192 + 1])
def test_a_json_record_after_any_whitespace_is_sniffed_as_json(tmp_path, recorder_cls, padding):
    """However much whitespace comes first (JSON allows any), gzipped or not: the head is read (and
    inflated) up to the first byte that isn't whitespace."""
    net = randomised(Net())
    path = recorder_cls().save_module(net, tmp_path / "m")
    text = gzip.decompress(path.read_bytes()) if recorder_cls.gzip else path.read_bytes()
    padded = tmp_path / "padded.ckpt"  # an extension that says nothing: the head decides
    padded.write_bytes((gzip.compress if recorder_cls.gzip else bytes)(b" \n\t\r" * (padding // 4) + b" " * (padding % 4)
                                                                       + text))
    assert registry.sniff(padded) == recorder_cls()
    assert torch.equal(Net().load_file(padded).embed.weight, net.embed.weight)


def test_files_on_fsspec_are_told_apart_as_local_ones(memory_dir):
    torch.save({"w": torch.ones(2)}, buffer := io.BytesIO())
    (memory_dir / "model.pt").write_bytes(buffer.getvalue())
    assert registry.torch_format(f"{memory_dir}/model.pt") == "zip"  # a URL, as a user passes it
    written = JsonGzFileRecorder().save_module(Net(), memory_dir / "m")
    (memory_dir / "m.ckpt").write_bytes(written.read_bytes())
    assert registry.sniff(f"{memory_dir}/m.ckpt") == JsonGzFileRecorder()


def test_what_holds_no_record_is_named_by_a_recorder_whose_loader_says_so(tmp_path):
    """An empty, missing or unreadable file: the default recorder; whitespace alone: bincode's (no
    `{` came); neither is a torch file."""
    (tmp_path / "empty.ckpt").write_bytes(b"")
    (tmp_path / "blank.ckpt").write_bytes(b" \n" * 5000)
    for path in (tmp_path / "empty.ckpt", tmp_path / "missing.ckpt", tmp_path, tmp_path / "blank.ckpt"):
        assert registry.sniff(path) == (BinFileRecorder() if path.name == "blank.ckpt" else NamedMpkFileRecorder())
        assert registry.torch_format(path) is None
        with pytest.raises(RecordError):
            registry.sniff(path).load(path)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads this process's address space in /proc")
def test_a_checkpoint_larger_than_memory_is_told_from_its_first_bytes(tmp_path):
    """Only the first bytes are read: a 16 GiB checkpoint (sparse: no disk used) is told apart in a
    process that may not allocate 1 GiB more."""
    huge = tmp_path / "huge.ckpt"
    with huge.open("wb") as f:
        f.write(b"PK\x03\x04")
        f.truncate(16 * 2**30)
    with address_space_limited(2**30):
        kind, recorder = registry.torch_format(huge), registry.sniff(huge)
    assert (kind, recorder) == ("zip", BinFileRecorder())


@contextlib.contextmanager
def address_space_limited(headroom: int) -> Iterator[None]:
    """This process may allocate only `headroom` more bytes of address space inside the `with`."""
    resource = pytest.importorskip("resource")
    used = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and hard < used + headroom:
        pytest.skip("the address space is already limited below what the test needs")
    resource.setrlimit(resource.RLIMIT_AS, (used + headroom, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_torch_format_names_a_torch_zip_a_legacy_pickle_and_nothing_else(tmp_path):
    """The kind of torch.save file, by its first bytes: `"zip"` (torch ≥ 1.6), `"pickle"` (the
    legacy format), None for a record."""
    state = {"w": torch.ones(2)}
    torch.save(state, tmp_path / "new.pt")
    torch.save(state, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    record = DefaultRecorder().save_module(Net(), tmp_path / "model")
    assert [registry.torch_format(p) for p in (tmp_path / "new.pt", tmp_path / "old.pt", record)] == \
        ["zip", "pickle", None]
