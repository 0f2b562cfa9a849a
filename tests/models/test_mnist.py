"""`burnlike.models.mnist`: the book guide's model (Burn's `examples/guide/src/model.rs`, v0.21.0)
field for field: its record is Burn's struct, and a record laid out as Burn writes it loads."""

from __future__ import annotations

import msgpack
import numpy as np
import torch

from burnlike.models.mnist import Model, ModelConfig
from burnlike.record import CompactRecorder
from tests.nn.helpers import burn_file, layout, param, saved_item

CONV = {"stride": None, "kernel_size": None, "dilation": None, "groups": None, "padding": None}


def test_record_is_the_guides_struct(tmp_path):
    """`struct Model { conv1, conv2, pool, dropout, linear1, linear2, activation }`, Conv2d 1→8 and
    8→16 3×3, Linear 1024→512→10 stored [d_input, d_output], stateless fields nil."""
    assert ModelConfig(10, 512).dropout == 0.5
    item = layout(saved_item(ModelConfig(10, 512).init(), tmp_path))
    assert item == {
        "conv1": {"weight": (8, 1, 3, 3), "bias": (8,), **CONV},
        "conv2": {"weight": (16, 8, 3, 3), "bias": (16,), **CONV},
        "pool": None, "dropout": None,
        "linear1": {"weight": (1024, 512), "bias": (512,)},
        "linear2": {"weight": (512, 10), "bias": (10,)},
        "activation": None,
    }
    path = Model(10, 512, 0.5).save_file(tmp_path / "compact", CompactRecorder())
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    assert record["item"]["linear2"]["weight"]["param"]["dtype"] == "F16"


def test_a_record_laid_out_as_burn_writes_it_loads_and_predicts(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"conv1": rng.normal(size=(8, 1, 3, 3)), "conv2": rng.normal(size=(16, 8, 3, 3)) / 8,
              "linear1": rng.normal(size=(1024, 4)) / 32, "linear2": rng.normal(size=(4, 3))}
    item = {"conv1": {"weight": param(arrays["conv1"]), "bias": param(np.zeros(8)), **CONV},
            "conv2": {"weight": param(arrays["conv2"]), "bias": param(np.zeros(16)), **CONV},
            "pool": None, "dropout": None,
            "linear1": {"weight": param(arrays["linear1"]), "bias": param(np.zeros(4))},
            "linear2": {"weight": param(arrays["linear2"]), "bias": param(np.zeros(3))},
            "activation": None}
    model = ModelConfig(3, 4).init().load_file(burn_file(tmp_path / "guide.mpk", item)).eval()
    assert np.allclose(model.linear1.weight.detach().numpy(), arrays["linear1"].T.astype(np.float32))
    images = torch.from_numpy(rng.normal(size=(2, 28, 28)).astype(np.float32))
    x = torch.nn.functional.conv2d(images.unsqueeze(1), torch.from_numpy(arrays["conv1"]).float())
    x = torch.relu(torch.nn.functional.conv2d(x, torch.from_numpy(arrays["conv2"]).float()))
    x = torch.nn.functional.adaptive_avg_pool2d(x, (8, 8)).flatten(1)
    x = torch.relu(x @ torch.from_numpy(arrays["linear1"]).float())
    expected = x @ torch.from_numpy(arrays["linear2"]).float()  # Burn's forward, O = I·W + b
    torch.testing.assert_close(model(images), expected, atol=1e-4, rtol=1e-4)
