"""`burnlike.cli`: the `burnlike inspect` and `burnlike convert` commands. Inspect shows a record's or
a checkpoint's metadata and tensors; convert changes format, precision and recorder (a training
checkpoint keeps its optimizer state in full precision), reads and writes fsspec URLs, and writes
through a temp file and a rename. Every failure, hostile files included, is one `error:` line and
exit code 2, with no traceback and nothing written."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import fsspec
import pytest
import torch

import burnlike.cli
from burnlike.cli import main
from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    PrettyJsonFileRecorder,
    load_checkpoint,
)
from burnlike.record.error import MAX_MESSAGE
from burnlike.record.format import files
from tests.helpers.hostile import CASES
from tests.helpers.records import Net, randomised, saved_checkpoint

NET = "tests.helpers.records:Net"  # the `--model` spec of the test network
# Hostile files whose only bad value is not a tensor: inspect lists it without decoding it.
LISTED_BY_INSPECT = {"checkpoint-10MB-torch-dtype.mpk", "10MB-param-id.mpk"}


# --- inspect -------------------------------------------------------------------------------------------
def test_version_is_the_packages(capsys):
    import burnlike

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"burnlike {burnlike.__version__}\n"
    from importlib.metadata import version

    assert version("burnlike") == burnlike.__version__  # pyproject reads it: one place


def test_inspect_prints_metadata_and_tensors(tmp_path, capsys):
    path = randomised(Net()).save_file(tmp_path / "m", CompactRecorder())
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "HalfPrecisionSettings" in out and "block.conv.weight" in out and "F16" in out and "[4, 2, 3, 3]" in out


def test_inspect_of_a_bin_record_prints_metadata_and_with_model_its_tensors(tmp_path, capsys):
    path = randomised(Net()).save_file(tmp_path / "m", BinFileRecorder(burn_version="0.19.0"))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0.19.0" in out and "--model" in out
    assert main(["inspect", str(path), "--model", NET]) == 0
    assert "layers.0.weight" in capsys.readouterr().out


def test_inspect_describes_recorder_and_torch_save_checkpoints(tmp_path, capsys):
    net = randomised(Net())
    assert main(["inspect", str(saved_checkpoint(tmp_path, net))]) == 0
    out = capsys.readouterr().out
    assert "training checkpoint" in out and "state_dict.model.embed.weight" in out
    torch.save({"state_dict": net.state_dict()}, tmp_path / "torch.ckpt")
    assert main(["inspect", str(tmp_path / "torch.ckpt")]) == 0
    assert "weights_only" in capsys.readouterr().out


# --- convert -------------------------------------------------------------------------------------------
def test_convert_changes_precision_and_goes_through_safetensors_to_bin(tmp_path):
    net = randomised(Net())
    src = net.save_file(tmp_path / "m", DefaultRecorder())
    assert main(["convert", str(src), str(tmp_path / "half.mpk"), "--precision", "half"]) == 0
    back = Net().load_file(tmp_path / "half.mpk", CompactRecorder())
    assert torch.equal(back.embed.weight, net.embed.weight.half().float())
    assert main(["convert", str(src), str(tmp_path / "m.safetensors"), "--model", NET]) == 0
    assert main(["convert", str(tmp_path / "m.safetensors"), str(tmp_path / "again.bin"), "--model", NET]) == 0
    again = Net().load_file(tmp_path / "again.bin", BinFileRecorder())
    assert torch.equal(again.layers[0].weight, net.layers[0].weight)


def test_convert_torch_lightning_ckpt_to_json_needs_model(tmp_path):
    net = randomised(Net())
    torch.save({"state_dict": {f"model.{k}": v for k, v in net.state_dict().items()}}, tmp_path / "x.ckpt")
    assert main(["convert", str(tmp_path / "x.ckpt"), str(tmp_path / "x.json"), "--model", NET]) == 0
    assert torch.equal(Net().load_file(tmp_path / "x.json", PrettyJsonFileRecorder()).embed.weight, net.embed.weight)
    assert main(["convert", str(tmp_path / "x.ckpt"), str(tmp_path / "y.mpk")]) == 2  # needs --model


def test_convert_checkpoint_to_half_keeps_optimizer_state_full_precision(tmp_path):
    src = saved_checkpoint(tmp_path, randomised(Net()))
    assert main(["convert", str(src), str(tmp_path / "small.mpk"), "--precision", "half"]) == 0
    back = load_checkpoint(tmp_path / "small.mpk")
    assert back["state_dict"]["model.embed.weight"].dtype == torch.float16
    assert back["optimizer_states"][0]["state"][0]["exp_avg_sq"].tolist() == pytest.approx([1e-8, 2049.0])


def test_convert_checkpoint_to_record_and_torch_ckpt_and_back_keeps_the_weights(tmp_path):
    net = randomised(Net())
    src = saved_checkpoint(tmp_path, net)
    assert main(["convert", str(src), str(tmp_path / "out"), "--recorder", "CompactRecorder", "--model", NET]) == 0
    half = Net().load_file(tmp_path / "out.mpk", CompactRecorder())
    assert torch.equal(half.embed.weight, net.embed.weight.half().float())
    assert main(["convert", str(src), str(tmp_path / "w.ckpt"), "--model", NET]) == 0
    state = torch.load(tmp_path / "w.ckpt", weights_only=True)["state_dict"]
    assert torch.equal(state["model.embed.weight"], net.embed.weight)
    assert main(["convert", str(tmp_path / "w.ckpt"), str(tmp_path / "w.bin"), "--model", NET]) == 0
    assert torch.equal(Net().load_file(tmp_path / "w.bin", BinFileRecorder()).embed.weight, net.embed.weight)


def test_convert_checkpoint_to_safetensors_needs_no_model(tmp_path):
    """A checkpoint's `state_dict` is already PyTorch's layout: written as it is, `--prefix` taken off."""
    net = randomised(Net())
    src = saved_checkpoint(tmp_path, net)
    assert main(["convert", str(src), str(tmp_path / "w.safetensors")]) == 0
    from safetensors.torch import load_file

    assert torch.equal(load_file(tmp_path / "w.safetensors")["embed.weight"], net.embed.weight)


@pytest.mark.parametrize("suffix", [".safetensors", ".ckpt", ".mpk", ".json.gz"])
def test_convert_writes_every_format_through_temp_and_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            suffix: str) -> None:
    src = randomised(Net()).save_file(tmp_path / "model", DefaultRecorder())
    renames: list[tuple[str, str]] = []
    real = files.os.replace

    def spy(a: str, b: str) -> None:
        renames.append((Path(a).name, str(b)))
        real(a, b)

    monkeypatch.setattr(files.os, "replace", spy)
    dst = tmp_path / f"out{suffix}"
    assert main(["convert", str(src), str(dst), "--model", NET]) == 0
    assert [b for _, b in renames] == [str(dst)] and files._TEMP.match(renames[0][0])


# --- fsspec URLs ---------------------------------------------------------------------------------------
def test_inspect_and_convert_take_fsspec_urls(tmp_path, capsys):
    """Checkpoints on a cluster live in object stores: the CLI reads and writes them by URL."""
    root = f"memory://cli-{uuid.uuid4().hex}"
    net = randomised(Net())
    src = net.save_file(f"{root}/m", DefaultRecorder())
    assert str(src) == f"{root}/m.mpk"
    assert main(["inspect", f"{root}/m.mpk"]) == 0
    assert "block.conv.weight" in capsys.readouterr().out
    assert main(["convert", f"{root}/m.mpk", f"{root}/half.mpk.gz", "--precision", "half"]) == 0
    assert main(["convert", f"{root}/half.mpk.gz", str(tmp_path / "m.safetensors"), "--model", NET]) == 0
    assert main(["convert", str(tmp_path / "m.safetensors"), f"{root}/net.ckpt", "--model", NET]) == 0
    capsys.readouterr()
    assert main(["inspect", f"{root}/net.ckpt"]) == 0
    assert "PyTorch checkpoint" in capsys.readouterr().out
    fs = fsspec.filesystem("memory")
    assert fs.exists(f"{root}/half.mpk.gz".removeprefix("memory://"))
    back = Net().load_file(f"{root}/half.mpk.gz")
    assert torch.equal(back.embed.weight, net.embed.weight.half().float())
    assert main(["inspect", f"{root}/nothing.mpk"]) == 2
    assert "nothing.mpk" in capsys.readouterr().err


# --- failures: one error line, exit code 2 ---------------------------------------------------------------
def test_inspect_and_convert_of_a_corrupt_record_exit_2_naming_it(tmp_path, capsys):
    (tmp_path / "cut.mpk").write_bytes(b"\x93\x01")  # an array of 3 that ends after its first item
    assert main(["inspect", str(tmp_path / "cut.mpk")]) == 2
    assert "cut.mpk" in capsys.readouterr().err
    (tmp_path / "bad.mpk").write_bytes(b"\x83\xa1a")
    assert main(["convert", str(tmp_path / "bad.mpk"), str(tmp_path / "y.json")]) == 2
    assert "bad.mpk" in capsys.readouterr().err


def test_inspect_and_convert_refuse_a_pickle_that_weights_only_refuses(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A `.ckpt` is read with torch's weights_only loader: a pickled object is refused, never run."""
    path = tmp_path / "pickled.ckpt"
    torch.save({"state_dict": {}, "obj": Path("x")}, path)  # a class weights_only refuses
    assert main(["inspect", str(path)]) == 2
    assert "weights_only" in capsys.readouterr().err
    assert main(["convert", str(path), str(tmp_path / "out.mpk")]) == 2
    assert "weights_only" in capsys.readouterr().err
    torch.save({"state_dict": {}, "obj": Net()}, tmp_path / "evil.ckpt")  # a whole module, pickled
    assert main(["convert", str(tmp_path / "evil.ckpt"), str(tmp_path / "x.mpk"), "--model", NET]) == 2
    assert "weights_only" in capsys.readouterr().err


def test_inspect_with_a_model_that_does_not_import_is_one_error_line(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = Net().save_file(tmp_path / "m", DefaultRecorder())
    for spec in ("nosuch.mod:Cls", "os:getcwd", "nocolon", "burnlike.cli:Nope"):
        assert main(["inspect", str(path), "--model", spec]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: --model") and err.count("\n") == 1


def test_an_unexpected_failure_is_one_error_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    def boom(*_: object) -> list[str]:
        raise RuntimeError("a bug\non two lines")

    monkeypatch.setattr(burnlike.cli, "_record_lines", boom)
    path = Net().save_file(tmp_path / "m", DefaultRecorder())
    assert main(["inspect", str(path)]) == 2
    assert capsys.readouterr().err == "error: RuntimeError: a bug on two lines\n"


@pytest.mark.parametrize("case", list(CASES))
def test_inspect_of_a_hostile_file_is_one_error_line_and_exit_2(hostile: dict[str, Path], case: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", str(hostile[case])])
    out, err = capsys.readouterr()
    if case in LISTED_BY_INSPECT:  # no tensor in it is bad: inspect lists it, quoting no more than ~200 chars
        assert code == 0 and len(out) < 2000 and err == ""
        return
    assert code == 2
    assert out == ""  # checks before printing
    assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < MAX_MESSAGE + 100
    assert str(hostile[case]) in err and "TypeError" not in err and "KeyError" not in err  # a checked failure


@pytest.mark.parametrize("case", ["32M-empty-arrays.mpk.gz", "dtype-empty-map.mpk", "directory.ckpt",
                                  "garbage.safetensors", "10MB-dtype.mpk"])
def test_convert_of_a_hostile_file_is_one_error_line_and_writes_nothing(hostile: dict[str, Path], case: str,
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(hostile[case]), str(tmp_path / "out.mpk")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and len(err) < MAX_MESSAGE + 100
    assert not (tmp_path / "out.mpk").exists()


# --- as a command: `python -m burnlike.cli` ---------------------------------------------------------------
@pytest.mark.slow
def test_help_lists_the_commands_examples_and_convert_options():
    out = subprocess.run([sys.executable, "-m", "burnlike.cli", "--help"], capture_output=True, text=True, check=True)
    assert "inspect" in out.stdout and "convert" in out.stdout and "Examples" in out.stdout
    out = subprocess.run([sys.executable, "-m", "burnlike.cli", "convert", "--help"], capture_output=True, text=True,
                         check=True)
    assert "--precision" in out.stdout and "--burn-version" in out.stdout and "--recorder" in out.stdout


@pytest.mark.slow
def test_cli_subprocess_on_a_hostile_file_prints_no_traceback(hostile: dict[str, Path]) -> None:
    out = subprocess.run([sys.executable, "-m", "burnlike.cli", "inspect", str(hostile["dtype-empty-map.mpk"])],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.slow
def test_inspect_into_a_closed_pipe_exits_without_a_traceback(tmp_path):
    path = DefaultRecorder().save_module(torch.nn.Sequential(*[torch.nn.Linear(1, 1) for _ in range(1500)]),
                                          tmp_path / "many")  # ~3000 rows: more than a pipe buffer
    proc = subprocess.Popen([sys.executable, "-m", "burnlike.cli", "inspect", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip().endswith(b"many.mpk")
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1 and "Traceback" not in err, err
