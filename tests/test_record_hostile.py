"""Hostile record files (issue 15): each gets a RecordError (or loads) through every loader, the
decoding budget stops container floods, and `burnlike inspect` answers one line and exit 2."""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import msgpack
import pytest
from test_record import Net

from burnlike.cli import main
from burnlike.record import (
    DefaultRecorder,
    RecorderCheckpointIO,
    RecordError,
    load_checkpoint,
)
from burnlike.record.error import MAX_MESSAGE
from burnlike.record.format import files, registry
from burnlike.record.format.budget import BASE, Budget

META = {"float": "f32", "int": "i32", "format": "burn_core::record::file::NamedMpkFileRecorder<x>",
        "version": "0.21.0", "settings": "FullPrecisionSettings"}


def record(item: object) -> bytes:
    return msgpack.packb({"metadata": META, "item": item, "_b": []}, use_bin_type=True)


def flood(n: int) -> bytes:
    """A Burn record whose item is an array of `n` empty arrays (one byte each)."""
    head = msgpack.packb("metadata") + msgpack.packb(META) + msgpack.packb("item")
    return b"\x83" + head + b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n + msgpack.packb("_b") + b"\x90"


def param(data: object) -> dict[str, object]:
    """A module record for `Net` whose first parameter's TensorData is `data`."""
    return {"embed": {"weight": {"id": "abcdefghij", "param": data}}}


def checkpoint(value: object) -> dict[str, object]:
    return {"state_dict": {"model.w": value}, "pytorch-lightning_version": "2"}


GOOD = {"bytes": b"\0" * 4, "shape": [1], "dtype": "F32"}
BIG_STRING = "F" * 10_000_000


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        path = d / name
        path.write_bytes(data)
        return path
    return make


def _link(name: str) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        path = d / name
        path.symlink_to("/dev/zero")
        return path
    return make


def _dir(d: Path) -> Path:
    path = d / "x.ckpt"
    path.mkdir()
    return path


# name -> (builder, whether the decoding budget is what must refuse it)
CASES: dict[str, tuple[Callable[[Path], Path], bool]] = {
    "32M-empty-arrays.mpk.gz": (_write("flood.mpk.gz", gzip.compress(flood(32 << 20), 9, mtime=0)), True),
    "8MB-empty-arrays.mpk": (_write("flood.mpk", flood(8 << 20)), True),
    "8MB-empty-arrays.json": (_write("flood.json", b'{"metadata":{},"item":[' + b"[]," * (8 << 20) + b"[]]}"),
                              True),
    "100k-empty-gzip-members.mpk.gz": (_write("members.mpk.gz", gzip.compress(b"", mtime=0) * 100_000), False),
    "dev-zero.json": (_link("zero.json"), False),
    "dev-zero.mpk.gz": (_link("zero.mpk.gz"), False),
    "dtype-empty-map.mpk": (_write("a.mpk", record(param({**GOOD, "dtype": {}}))), False),
    "dtype-int.mpk": (_write("b.mpk", record(param({**GOOD, "dtype": 3}))), False),
    "bytes-int.mpk": (_write("c.mpk", record(param({**GOOD, "bytes": 5}))), False),
    "tensor-marker-int-data.mpk": (_write("d.mpk", record(checkpoint({"__burnlike__": "tensor", "data": 5}))),
                                   False),
    "directory.ckpt": (_dir, False),
    "garbage.safetensors": (_write("g.safetensors", b"\xff" * 64), False),
    "negative-shape.mpk": (_write("e.mpk", record(param({**GOOD, "shape": [-1, -4]}))), False),
    "unknown-dtype.mpk": (_write("f.mpk", record(param({**GOOD, "dtype": "F128"}))), False),
    "10MB-dtype.mpk": (_write("h.mpk", record(param({**GOOD, "dtype": BIG_STRING}))), False),
    "10MB-param-id.mpk": (_write("k.mpk", record({"embed": {"weight": {"id": BIG_STRING, "param": GOOD}}})), False),
    "1M-dim-shape.mpk": (_write("i.mpk", record(param({**GOOD, "shape": [1] * 1_000_000}))), True),
    "checkpoint-10MB-torch-dtype.mpk": (_write("j.mpk", record(checkpoint({"__burnlike__": "dtype",
                                                                            "name": BIG_STRING}))), False),
}


INSPECT_LISTS = {"checkpoint-10MB-torch-dtype.mpk", "10MB-param-id.mpk"}  # a bad non-tensor value: inspect doesn't decode it


def _recorder_load(path: Path) -> None:
    registry.sniff(path).load(path)


def _module_load(path: Path) -> None:
    Net().load_file(path)


def _plugin(path: Path) -> None:
    RecorderCheckpointIO(registry.sniff(path)).load_checkpoint(path)


LOADERS: dict[str, Callable[[Path], object]] = {
    "Recorder.load": _recorder_load, "Module.load_file": _module_load, "load_checkpoint": load_checkpoint,
    "plugin": _plugin,
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {name: build(tmp_path_factory.mktemp(name.replace(".", "-"))) for name, (build, _) in CASES.items()}


@pytest.mark.parametrize("loader", list(LOADERS))
@pytest.mark.parametrize("case", list(CASES))
def test_each_loader_refuses_or_loads(hostile: dict[str, Path], case: str, loader: str) -> None:
    try:
        LOADERS[loader](hostile[case])
    except RecordError as e:
        assert len(str(e)) <= MAX_MESSAGE + 50  # never megabytes of the file repeated
        assert "F" * 300 not in str(e)
        if CASES[case][1]:
            assert "refusing to decode" in str(e)  # the budget stopped it, not the end of the file
        if case.startswith(("dev-zero", "directory")):
            assert "only regular files" in str(e)
        if "F" * 100 in str(e):
            assert "(10,000,002 characters)" in str(e)  # quoted ~200 characters, and how long it was
        if "10MB" in case and loader == "Module.load_file":
            assert "(10,000,002 characters)" in str(e)  # the module's record checks reach the big string


@pytest.mark.parametrize("case", list(CASES))
def test_inspect_one_line_exit_2(hostile: dict[str, Path], case: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", str(hostile[case])])
    out, err = capsys.readouterr()
    if case in INSPECT_LISTS:  # no tensor in it is bad: inspect lists it, quoting no more than ~200 chars
        assert code == 0 and len(out) < 2000 and err == ""
        return
    assert code == 2
    assert out == ""  # checks before printing
    assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < MAX_MESSAGE + 100
    assert str(hostile[case]) in err and "TypeError" not in err and "KeyError" not in err  # a checked failure


def test_budget_from_module_is_tighter(hostile: dict[str, Path]) -> None:
    budget = Budget.for_record(8 << 20, Net())
    assert budget.limit < BASE + 10_000 < Budget.for_record(8 << 20).limit
    with pytest.raises(RecordError, match=f"more than {budget.limit:,} values.*Net"):
        Net().load_file(hostile["8MB-empty-arrays.mpk"])


def test_gzip_members_cost_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work counter: input bytes handed to zlib stay a small multiple of the file, however many
    members (copying the rest of the buffer per member made 100,000 of them quadratic)."""
    fed = [0]
    real = files.zlib.decompressobj

    class Counting:
        def __init__(self, **kw: int) -> None:
            self.inner = real(**kw)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            fed[0] += len(data)
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    monkeypatch.setattr(files.zlib, "decompressobj", Counting)
    data = gzip.compress(b"", mtime=0) * 2000 + gzip.compress(b"x" * 100_000, mtime=0)
    assert files.gunzip(data, Path("m.mpk.gz")) == b"x" * 100_000
    assert fed[0] < 16 * len(data)


def test_budget_counts_every_container() -> None:
    budget = Budget(3)
    budget.take(3)
    with pytest.raises(RecordError, match="more than 3 values"):
        budget.take()


def test_a_real_record_fits_its_budget(tmp_path: Path) -> None:
    path = Net().save_file(tmp_path / "m", DefaultRecorder())
    Net().load_file(path)  # the module's budget is far above what its record needs
    assert DefaultRecorder().load(path)


def test_inspect_model_that_does_not_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = Net().save_file(tmp_path / "m", DefaultRecorder())
    for spec in ("nosuch.mod:Cls", "os:getcwd", "nocolon", "burnlike.cli:Nope"):
        assert main(["inspect", str(path), "--model", spec]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: --model") and err.count("\n") == 1


def test_any_unexpected_failure_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import burnlike.cli

    def boom(*_: object) -> list[str]:
        raise RuntimeError("a bug\non two lines")

    monkeypatch.setattr(burnlike.cli, "_record_lines", boom)
    path = Net().save_file(tmp_path / "m", DefaultRecorder())
    assert main(["inspect", str(path)]) == 2
    assert capsys.readouterr().err == "error: RuntimeError: a bug on two lines\n"


def test_weights_only_refusal_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    path = tmp_path / "pickled.ckpt"
    torch.save({"state_dict": {}, "obj": Path("x")}, path)  # a class weights_only refuses
    assert main(["inspect", str(path)]) == 2
    assert "weights_only" in capsys.readouterr().err
    assert main(["convert", str(path), str(tmp_path / "out.mpk")]) == 2


@pytest.mark.parametrize("case", ["32M-empty-arrays.mpk.gz", "dtype-empty-map.mpk", "directory.ckpt",
                                  "garbage.safetensors", "10MB-dtype.mpk"])
def test_convert_one_line_exit_2(hostile: dict[str, Path], case: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(hostile[case]), str(tmp_path / "out.mpk")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and len(err) < MAX_MESSAGE + 100
    assert not (tmp_path / "out.mpk").exists()


@pytest.mark.slow
def test_cli_subprocess_never_tracebacks(hostile: dict[str, Path]) -> None:
    out = subprocess.run([sys.executable, "-m", "burnlike.cli", "inspect", str(hostile["dtype-empty-map.mpk"])],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_inductor_dtype_never_imports_it(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.mpk"
    path.write_bytes(record(checkpoint({"__burnlike__": "dtype", "name": "_inductor"})))
    code = ("import sys\nfrom burnlike.record import load_checkpoint, RecordError\n"
            f"try:\n    load_checkpoint({str(path)!r})\nexcept RecordError as e:\n    print('refused', e)\n"
            "assert 'torch._inductor' not in sys.modules and 'torch._dynamo' not in sys.modules, 'imported'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "refused" in out.stdout and "unknown torch dtype '_inductor'" in out.stdout


def test_checkpoint_dtypes_still_read_back(tmp_path: Path) -> None:
    import torch

    path = tmp_path / "c.mpk"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": {}, "dtypes": [torch.float32, torch.bfloat16, torch.int8, torch.bool, torch.complex64]}, path)
    assert load_checkpoint(path)["dtypes"] == [torch.float32, torch.bfloat16, torch.int8, torch.bool, torch.complex64]
