"""`burnlike.record.format.registry`: recorders found by name (Burn's, the CLI's and the app's
spellings), by extension, and by a file's first bytes alone, which `Module.load_file` without a
recorder and `load_checkpoint` rely on (Lightning names every checkpoint `.ckpt`)."""

from __future__ import annotations

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
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
)
from burnlike.record.format import registry
from tests.helpers.records import Net, randomised
from tests.record.format.helpers import RECORDERS, Masked

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


def test_a_json_record_with_leading_whitespace_is_sniffed_as_json(tmp_path):
    path = Masked().save_file(tmp_path / "m", PrettyJsonFileRecorder())
    padded = tmp_path / "padded.ckpt"  # an extension that says nothing: the head decides
    padded.write_bytes(b"\n  " + path.read_bytes())
    assert isinstance(registry.sniff(padded), PrettyJsonFileRecorder)


def test_heads_are_the_first_n_bytes_of_local_and_fsspec_files(tmp_path, memory_dir):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(200)))
    assert registry._head(path, 4) == bytes(range(4))
    (memory_dir / "f.bin").write_bytes(bytes(range(200)))
    assert registry._head(f"{memory_dir}/f.bin", 4) == bytes(range(4))  # a URL, as a user passes it


def test_torch_format_names_a_torch_zip_a_legacy_pickle_and_nothing_else(tmp_path):
    """The kind of torch.save file, by its first bytes: `"zip"` (torch ≥ 1.6), `"pickle"` (the
    legacy format), None for a record."""
    state = {"w": torch.ones(2)}
    torch.save(state, tmp_path / "new.pt")
    torch.save(state, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    record = DefaultRecorder().save_module(Net(), tmp_path / "model")
    assert [registry.torch_format(p) for p in (tmp_path / "new.pt", tmp_path / "old.pt", record)] == \
        ["zip", "pickle", None]
