"""`burnlike.record.format.location`: `RemotePath`, an fsspec URL used like a `pathlib.Path`,
and `is_url`/`as_path`, which tell a URL from a local path. A URL splits at its first `://` (an
object key may hold one), drops trailing slashes but keeps a root, joins, lists, globs and sizes
like a folder, and compares and hashes by URL; `file://` and `local://` paths, and local paths
with a URL inside them, stay local."""

from __future__ import annotations

from pathlib import Path

import pytest

from burnlike.record.format.location import RemotePath, as_path, is_url

# --- RemotePath: parsing, joining, identity ---


def test_a_url_is_split_at_its_first_scheme_separator():
    p = RemotePath("s3://bucket/mirror/https://site/x")  # an object key may hold '://'
    assert (p.protocol, p.rest, p.name) == ("s3", "bucket/mirror/https://site/x", "x")


@pytest.mark.parametrize("url", ["model.mpk", "://bucket/model.mpk"])
def test_a_path_without_a_protocol_is_not_a_remote_path(url):
    with pytest.raises(ValueError, match=rf"not a filesystem URL: '{url}' \(expected 'protocol://...'\)"):
        RemotePath(url)


@pytest.mark.parametrize(("url", "rest"), [("memory:///", "/"), ("memory://run/", "run"), ("memory://run/MAX/", "run/MAX"),
                                            ("memory://X/", "X"), ("memory://", "")])
def test_trailing_slashes_are_dropped_but_a_root_stays(url, rest):
    assert RemotePath(url).rest == rest and str(RemotePath(url)) == f"memory://{rest}"


def test_remote_paths_join_hash_and_keep_their_storage_options():
    root = RemotePath("memory://", {"skip_instance_cache": True})
    child = root / "run" / "model.mpk"
    assert str(child) == "memory://run/model.mpk" and child == RemotePath("memory://run/model.mpk")
    assert child.storage_options == {"skip_instance_cache": True} == child.parent.storage_options
    assert len({hash(RemotePath(f"memory://run/{i}")) for i in range(20)}) == 20  # not one bucket for all


def test_remote_paths_compare_and_hash_by_url(memory_dir):
    folder = memory_dir
    a, b = folder / "x.mpk", RemotePath(str(folder) + "/x.mpk", {"skip_instance_cache": True})
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != folder / "y.mpk" and a != str(a) and len({a, b, folder / "y.mpk"}) == 2
    assert repr(RemotePath("memory://bucket/run/model.mpk")) == "RemotePath('memory://bucket/run/model.mpk')"
    assert repr(RemotePath("s3://bucket/")) == "RemotePath('s3://bucket')"  # one spelling per folder


# --- RemotePath: files and folders ---


def test_a_remote_folder_lists_globs_and_sizes_its_files(memory_dir):
    folder = memory_dir
    assert not folder.is_dir() and list(folder.iterdir()) == [] and list(folder.glob("*")) == []
    (folder / "model-1.mpk").write_bytes(b"12345")
    (folder / "model-2.mpk").write_bytes(b"1")
    (folder / "notes.txt").write_text("hello")
    (folder / "sub" / "deep.mpk").write_bytes(b"xyz")
    assert folder.is_dir() and (folder / "sub").is_dir() and not (folder / "notes.txt").is_dir()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["model-1.mpk", "model-2.mpk", "notes.txt", "sub"]
    assert all(p.parent == folder for p in folder.iterdir())
    assert sorted(p.name for p in folder.glob("model-*.mpk")) == ["model-1.mpk", "model-2.mpk"]
    assert [p.name for p in folder.glob("*.txt")] == ["notes.txt"]
    assert list(folder.glob("*.ckpt")) == []
    assert (folder / "model-1.mpk").size() == 5 and (folder / "notes.txt").size() == 5
    assert (folder / "model-2.mpk").size() == 1
    assert list((folder / "notes.txt").iterdir()) == []  # a file has no entries


def test_iterdir_yields_each_entry_by_its_exact_name(memory_dir):
    for name in ("MAX", "notes ", "a.mpk", "sub/b.mpk"):
        (memory_dir / name).write_bytes(b"x")
    assert sorted(p.name for p in memory_dir.iterdir()) == ["MAX", "a.mpk", "notes ", "sub"]
    rooted = RemotePath("dir://", {"path": memory_dir.fs_path, "target_protocol": "memory"})  # names without '/'
    assert sorted(str(p) for p in rooted.iterdir()) == ["dir://MAX", "dir://a.mpk", "dir://notes ", "dir://sub"]


def test_unlink_of_a_missing_remote_file_raises_naming_it_unless_missing_ok(memory_dir):
    missing = memory_dir / "gone.mpk"
    with pytest.raises(FileNotFoundError, match=f"^{missing}$"):
        missing.unlink()
    missing.unlink(missing_ok=True)


# --- URL or local path ---


def test_local_and_file_urls_are_paths_other_protocols_are_urls():
    assert not is_url("local://models/m.mpk") and not is_url("file:///tmp/m.mpk")
    assert is_url("s3://bucket/m.mpk") and is_url("memory://m.mpk")


@pytest.mark.parametrize("text", ["runs/a://b", "out/s3://bucket/model.mpk"])
def test_a_local_path_with_a_url_inside_it_is_not_a_url(text):
    assert not is_url(text)
    assert is_url("s3://bucket/model.mpk")


def test_file_urls_are_local_paths():
    assert not is_url("file:///tmp/m.mpk")
    assert as_path("file:///tmp/m.mpk") == Path("/tmp/m.mpk")


def test_as_path_keeps_a_remote_paths_storage_options_unless_given_others():
    remote = RemotePath("memory://bucket/m.mpk", {"skip_instance_cache": True})
    assert as_path(remote).storage_options == {"skip_instance_cache": True}
    assert as_path(remote, {"other": 1}).storage_options == {"other": 1}


def test_a_pattern_with_a_folder_globs_the_files_inside_matching_folders(memory_dir):
    for name in ("epoch-1/train.log", "epoch-2/train.log", "epoch-2/model.mpk", "other/train.log", "top.log"):
        (memory_dir / name).write_bytes(b"x")
    found = list(memory_dir.glob("epoch-*/*.log"))
    assert found == [memory_dir / "epoch-1" / "train.log", memory_dir / "epoch-2" / "train.log"]
