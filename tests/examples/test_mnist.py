"""`examples/mnist.py`, Burn's mnist example: it runs as a script (--help); its `Model` is Burn's
`model.rs` struct — the record Burn itself wrote for this architecture (mnist-inference-web, whose fc
layers are 256 and 128 wide) loads into it and writes back byte for byte; its data pipeline normalises
and transforms as `data.rs` does; the 16 combinations of transforms are Burn's; and a short run on a
few local digits trains, evaluates each combination through one renderer and saves Burn's files."""

import json
import math

import pytest
import torch

from burnlike.nn import LinearConfig
from burnlike.record import BinFileRecorder
from tests.examples.helpers import example, run_with_help
from tests.helpers.idx import write_mnist_idx
from tests.helpers.records import FILES


def test_mnist_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("mnist", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: mnist.py") and "Burn" in out and "--epochs" in out


@pytest.mark.skipif(not FILES["0.21.0"].is_file(), reason="Burn's record files not present")
@pytest.mark.parametrize("version", ["0.21.0", "0.19.0"])
def test_burns_own_record_of_this_model_loads_and_writes_back_byte_for_byte(tmp_path, version):
    mnist = example("mnist")
    model = mnist.Model.new()
    model.fc1, model.fc2 = LinearConfig(1600, 256).init(), LinearConfig(256, 128).init()  # the stored sizes
    model.load_file(FILES[version], BinFileRecorder())
    assert model.conv1.norm.running_var.shape == (64,) and model.conv2.conv.weight.shape == (64, 64, 3, 3)
    out = model.save_file(tmp_path / "model", BinFileRecorder(burn_version=version))
    assert out.read_bytes() == FILES[version].read_bytes()


def test_the_16_combinations_and_their_sample_sizes_are_burns():
    """training.rs `generate_idents`: shear × scale × rotation × translation, each sampled base × its
    number of transforms (the plain one 0 times), named as Burn displays them."""
    mnist = example("mnist")
    idents = mnist.generate_idents(10)
    assert len(idents) == 16
    names = {str(ident): size for ident, size in idents}
    assert names["Plain"] == 0 and names["All"] == 40 and names["Sr Sc Rot"] == 30 and names["Tr"] == 10
    assert all(size is None for _, size in mnist.generate_idents(None))


def test_items_are_normalised_then_transformed():
    mnist = example("mnist")
    item = mnist.MnistItem(torch.full((28, 28), 255, dtype=torch.uint8), 7)
    plain = mnist.prepare_image([], item)
    assert plain.image.shape == (1, 28, 28) and plain.label == 7
    assert torch.allclose(plain.image, torch.full((1, 28, 28), (1 - 0.1307) / 0.3081))
    image = torch.zeros(28, 28, dtype=torch.uint8)
    image[10:18, 10:18] = 255
    moved = mnist.prepare_image([mnist.Transform.Translate, mnist.Transform.Rotation], mnist.MnistItem(image, 1))
    assert moved.image.shape == (1, 28, 28) and not torch.allclose(moved.image, mnist.prepare_image([], mnist.MnistItem(image, 1)).image)
    batch = mnist.MnistBatcher().batch([plain, plain])
    assert batch.images.shape == (2, 28, 28) and batch.targets.tolist() == [7, 7]


@pytest.mark.slow
def test_a_short_run_trains_evaluates_each_combination_and_saves(tmp_path):
    mnist = example("mnist")
    write_mnist_idx(tmp_path, n_train=96, n_test=32)
    run = tmp_path / "run"
    out = mnist.main(["--data", str(tmp_path), "--epochs", "1", "--batch-size", "16", "--num-workers", "0",
                      "--train-items", "64", "--valid-items", "32", "--samples", "2", "--artifact-dir", str(run)])
    assert len(out["evaluations"]) == 16 and len(list((run / "test").iterdir())) == 16
    train_lines = (run / "train" / "epoch-1" / "Accuracy.log").read_text().split()
    assert len(train_lines) == math.ceil(2 * 32 / 16)  # Σ base × transforms over the 16 combinations = 2·32
    config = json.loads((run / "config.json").read_text())
    assert list(config) == ["optimizer", "num_epochs", "batch_size", "num_workers", "seed"]  # Burn's key order
    assert config["optimizer"]["cautious_weight_decay"] is True and config["optimizer"]["weight_decay"] == 5e-5
    saved = mnist.Model.new().load_file(run / "model", BinFileRecorder())
    for a, b in zip(saved.state_dict().values(), out["result"].model.state_dict().values()):
        assert torch.equal(a, b)
