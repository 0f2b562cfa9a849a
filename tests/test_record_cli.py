"""`burnlike inspect` / `burnlike convert` on every kind of input the CLI promises."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from test_record import Net, randomised

from burnlike.cli import main
from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    RecorderCheckpointIO,
    load_checkpoint,
)


def checkpoint(tmp_path, net):
    path = tmp_path / "epoch=0-step=1.ckpt"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": {f"model.{k}": v for k, v in net.state_dict().items()}, "pytorch-lightning_version": "2.6.6",
         "optimizer_states": [{"state": {0: {"exp_avg_sq": torch.tensor([1e-8, 2049.0])}}}]}, path)
    return path


@pytest.mark.slow
def test_help_is_useful():
    out = subprocess.run([sys.executable, "-m", "burnlike.cli", "--help"], capture_output=True, text=True, check=True)
    assert "inspect" in out.stdout and "convert" in out.stdout and "Examples" in out.stdout
    out = subprocess.run([sys.executable, "-m", "burnlike.cli", "convert", "--help"], capture_output=True, text=True,
                         check=True)
    assert "--precision" in out.stdout and "--burn-version" in out.stdout and "--recorder" in out.stdout


def test_inspect_bin_without_model_prints_metadata(tmp_path, capsys):
    path = randomised(Net()).save_file(tmp_path / "m", BinFileRecorder(burn_version="0.19.0"))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0.19.0" in out and "--model" in out
    assert main(["inspect", str(path), "--model", "test_record:Net"]) == 0
    assert "layers.0.weight" in capsys.readouterr().out


def test_inspect_checkpoints(tmp_path, capsys):
    net = randomised(Net())
    assert main(["inspect", str(checkpoint(tmp_path, net))]) == 0
    out = capsys.readouterr().out
    assert "training checkpoint" in out and "state_dict.model.embed.weight" in out
    torch.save({"state_dict": net.state_dict()}, tmp_path / "torch.ckpt")
    assert main(["inspect", str(tmp_path / "torch.ckpt")]) == 0
    assert "weights_only" in capsys.readouterr().out


def test_convert_checkpoint_to_compact_checkpoint_keeps_the_policy(tmp_path):
    src = checkpoint(tmp_path, randomised(Net()))
    assert main(["convert", str(src), str(tmp_path / "small.mpk"), "--precision", "half"]) == 0
    back = load_checkpoint(tmp_path / "small.mpk")
    assert back["state_dict"]["model.embed.weight"].dtype == torch.float16
    assert back["optimizer_states"][0]["state"][0]["exp_avg_sq"].tolist() == pytest.approx([1e-8, 2049.0])


def test_convert_checkpoint_record_ckpt_round_trip(tmp_path):
    net = randomised(Net())
    src = checkpoint(tmp_path, net)
    assert main(["convert", str(src), str(tmp_path / "out"), "--recorder", "CompactRecorder",
                 "--model", "test_record:Net"]) == 0
    half = Net().load_file(tmp_path / "out.mpk", CompactRecorder())
    assert torch.equal(half.embed.weight, net.embed.weight.half().float())
    assert main(["convert", str(src), str(tmp_path / "w.ckpt"), "--model", "test_record:Net"]) == 0
    state = torch.load(tmp_path / "w.ckpt", weights_only=True)["state_dict"]
    assert torch.equal(state["model.embed.weight"], net.embed.weight)
    assert main(["convert", str(tmp_path / "w.ckpt"), str(tmp_path / "w.bin"), "--model", "test_record:Net"]) == 0
    assert torch.equal(Net().load_file(tmp_path / "w.bin", BinFileRecorder()).embed.weight, net.embed.weight)


def test_convert_refuses_unsafe_pickles_and_bad_files(tmp_path, capsys):
    torch.save({"state_dict": {}, "obj": Net()}, tmp_path / "evil.ckpt")
    assert main(["convert", str(tmp_path / "evil.ckpt"), str(tmp_path / "x.mpk"), "--model", "test_record:Net"]) == 2
    assert "weights_only" in capsys.readouterr().err
    (tmp_path / "bad.mpk").write_bytes(b"\x83\xa1a")
    assert main(["convert", str(tmp_path / "bad.mpk"), str(tmp_path / "y.json")]) == 2
    assert "bad.mpk" in capsys.readouterr().err


@pytest.mark.slow
def test_inspect_and_checkpoint_weights_never_import_lightning(tmp_path):
    """Lightning takes seconds to import; looking at a file or loading weights shouldn't pay it."""
    net = torch.nn.Linear(4, 5)
    ckpt = checkpoint(tmp_path, net)
    record = DefaultRecorder().save_module(net, tmp_path / "m")
    code = (f"import sys, torch\nfrom burnlike.cli import main\n"
            f"assert main(['inspect', {str(ckpt)!r}]) == 0 and main(['inspect', {str(record)!r}]) == 0\n"
            f"from burnlike.record import DefaultRecorder, load_checkpoint, load_weights\n"
            f"load_weights(torch.nn.Linear(4, 5), {str(ckpt)!r}, DefaultRecorder())\n"
            f"assert load_checkpoint({str(ckpt)!r})['state_dict']['model.weight'].shape == (5, 4)\n"
            f"print('lightning imported:', 'lightning' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "kind: burnlike training checkpoint" in out.stdout
    assert out.stdout.strip().endswith("lightning imported: False")


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
