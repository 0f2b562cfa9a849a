
import torch
from test_record import Net, randomised

from burnlike.cli import main
from burnlike.record import BinFileRecorder, CompactRecorder, DefaultRecorder


def test_inspect_prints_metadata_and_tensors(tmp_path, capsys):
    path = randomised(Net()).save_file(tmp_path / "m", CompactRecorder())
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "HalfPrecisionSettings" in out and "block.conv.weight" in out and "F16" in out and "[4, 2, 3, 3]" in out


def test_inspect_corrupt_file_is_a_clean_error(tmp_path, capsys):
    (tmp_path / "bad.mpk").write_bytes(b"\x93\x01")
    assert main(["inspect", str(tmp_path / "bad.mpk")]) == 2
    assert "bad.mpk" in capsys.readouterr().err


def test_convert_precision_and_formats(tmp_path):
    net = randomised(Net())
    src = net.save_file(tmp_path / "m", DefaultRecorder())
    assert main(["convert", str(src), str(tmp_path / "half.mpk"), "--precision", "half"]) == 0
    back = Net().load_file(tmp_path / "half.mpk", CompactRecorder())
    assert torch.equal(back.embed.weight, net.embed.weight.half().float())
    assert main(["convert", str(src), str(tmp_path / "m.safetensors"), "--model", "test_record:Net"]) == 0
    assert main(["convert", str(tmp_path / "m.safetensors"), str(tmp_path / "again.bin"),
                 "--model", "test_record:Net"]) == 0
    again = Net().load_file(tmp_path / "again.bin", BinFileRecorder())
    assert torch.equal(again.layers[0].weight, net.layers[0].weight)


def test_convert_lightning_ckpt(tmp_path):
    net = randomised(Net())
    torch.save({"state_dict": {f"model.{k}": v for k, v in net.state_dict().items()}}, tmp_path / "x.ckpt")
    assert main(["convert", str(tmp_path / "x.ckpt"), str(tmp_path / "x.json"), "--model", "test_record:Net"]) == 0
    from burnlike.record import PrettyJsonFileRecorder

    assert torch.equal(Net().load_file(tmp_path / "x.json", PrettyJsonFileRecorder()).embed.weight, net.embed.weight)
    assert main(["convert", str(tmp_path / "x.ckpt"), str(tmp_path / "y.mpk")]) == 2  # needs --model


def test_inspect_and_convert_take_fsspec_urls(tmp_path, capsys):
    """Checkpoints on a cluster live in object stores: the CLI reads and writes them by URL."""
    import uuid

    import fsspec

    root = f"memory://cli-{uuid.uuid4().hex}"
    net = randomised(Net())
    src = net.save_file(f"{root}/m", DefaultRecorder())
    assert str(src) == f"{root}/m.mpk"
    assert main(["inspect", f"{root}/m.mpk"]) == 0
    assert "block.conv.weight" in capsys.readouterr().out
    assert main(["convert", f"{root}/m.mpk", f"{root}/half.mpk.gz", "--precision", "half"]) == 0
    assert main(["convert", f"{root}/half.mpk.gz", str(tmp_path / "m.safetensors"), "--model", "test_record:Net"]) == 0
    assert main(["convert", str(tmp_path / "m.safetensors"), f"{root}/net.ckpt", "--model", "test_record:Net"]) == 0
    capsys.readouterr()
    assert main(["inspect", f"{root}/net.ckpt"]) == 0
    assert "PyTorch checkpoint" in capsys.readouterr().out
    fs = fsspec.filesystem("memory")
    assert fs.exists(f"{root}/half.mpk.gz".removeprefix("memory://"))
    back = Net().load_file(f"{root}/half.mpk.gz")
    assert torch.equal(back.embed.weight, net.embed.weight.half().float())
    assert main(["inspect", f"{root}/nothing.mpk"]) == 2
    assert "nothing.mpk" in capsys.readouterr().err
