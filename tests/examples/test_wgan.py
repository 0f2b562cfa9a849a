"""`examples/wgan.py`, Burn's wgan example: it runs as a script (--help); its models are Burn's
`model.rs` field for field (the records' structure, BatchNorm's epsilon 0.8); `Clip` clamps the critic
as Burn's mapper does; the batcher scales pixels to [-1, 1]; and a short run on a few MNIST digits
keeps the critic's weights within ±clip_value after every step, saves Burn's files and generates."""

import msgpack
import pytest
import torch

from tests.examples.helpers import example, run_with_help
from tests.helpers.idx import write_mnist_idx


def test_wgan_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("wgan", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: wgan.py") and "Burn" in out and "--epochs" in out


def test_the_models_are_burns_structs(tmp_path):
    wgan = example("wgan")
    generator, discriminator = wgan.ModelConfig().init()
    item = msgpack.unpackb(generator.save_file(tmp_path / "g", wgan.CompactRecorder()).read_bytes())["item"]
    assert list(item) == ["layer1", "layer2", "layer3", "layer4", "fc", "tanh"]
    assert list(item["layer1"]) == ["fc", "bn", "leakyrelu"]
    assert item["layer1"]["fc"]["weight"]["param"]["shape"] == [100, 128]
    assert list(item["layer4"]["bn"]) == ["gamma", "beta", "running_mean", "running_var", "momentum", "epsilon"]
    assert item["fc"]["weight"]["param"]["shape"] == [1024, 784]
    item = msgpack.unpackb(discriminator.save_file(tmp_path / "d", wgan.CompactRecorder()).read_bytes())["item"]
    assert list(item) == ["fc1", "leakyrelu1", "fc2", "leakyrelu2", "fc3"] and item["leakyrelu1"] is None
    assert generator.layer1.bn.epsilon == 0.8 and generator.layer1.leakyrelu.negative_slope == 0.2
    assert wgan.TrainingConfig(wgan.ModelConfig(), wgan.RmsPropConfig()).to_dict()["clip_value"] == 0.01


def test_clip_clamps_every_parameter_and_keeps_it_trainable():
    wgan = example("wgan")
    _, discriminator = wgan.ModelConfig().init()
    with torch.no_grad():
        discriminator.fc1.weight.copy_(torch.linspace(-1, 1, discriminator.fc1.weight.numel()).reshape(512, 784))
    expected = discriminator.fc1.weight.detach().clamp(-0.01, 0.01)
    clipped = discriminator.map(wgan.Clip(-0.01, 0.01))
    assert torch.equal(clipped.fc1.weight, expected) and clipped.fc1.weight.requires_grad
    assert max(p.abs().max().item() for p in clipped.parameters()) <= 0.01


def test_the_batcher_scales_pixels_to_minus_one_one():
    wgan = example("wgan")
    item = wgan.MnistItem(torch.tensor([[0, 255] * 14] * 28, dtype=torch.uint8), 3)
    batch = wgan.MnistBatcher().batch([item, item])
    assert batch.images.shape == (2, 1, 28, 28) and batch.images[0, 0, 0, :2].tolist() == [-1.0, 1.0]
    assert batch.targets.tolist() == [3, 3]


@pytest.mark.slow
def test_a_short_run_clips_the_critic_saves_and_generates(tmp_path):
    wgan = example("wgan")
    write_mnist_idx(tmp_path, n_train=64, n_test=16)
    run = tmp_path / "run"
    out = wgan.main(["--data", str(tmp_path), "--epochs", "2", "--batch-size", "16", "--num-workers", "0",
                     "--artifact-dir", str(run)])
    assert max(p.abs().max().item() for p in out["discriminator"].parameters()) <= 0.01
    assert len(out["losses"]["d"]) == 2  # one generator step per 5 critic steps: iteration 0 of each epoch
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "discriminator.mpk", "fake_image.png",
                                                      "generator.mpk", "image-0.png"]
    assert out["generated"].shape == (16, 28, 28, 1) and 0.0 <= out["generated"].min() <= out["generated"].max() <= 1.0
