"""`burnlike.models.cnn`: Burn's custom-image-dataset `Cnn` (`examples/custom-image-dataset/src/model.rs`,
v0.21.0): its record is Burn's struct in Burn's field order."""

from __future__ import annotations

import torch

from burnlike.models.cnn import CnnConfig
from tests.nn.helpers import layout, saved_item


def test_record_is_burns_cnn_struct(tmp_path):
    """`struct Cnn { activation, dropout, pool, conv1..conv6, fc1, fc2 }`: 3×3 `Same` convs, fc1
    2048→128 (at 32×32 RGB); the size-fitting pool is stateless, so not a field."""
    model = CnnConfig(num_classes=10).init()
    item = layout(saved_item(model, tmp_path))
    assert list(item) == ["activation", "dropout", "pool", "conv1", "conv2", "conv3", "conv4", "conv5", "conv6",
                          "fc1", "fc2"]
    assert item["conv1"]["weight"] == (32, 3, 3, 3) and item["conv6"]["weight"] == (128, 128, 3, 3)
    assert item["fc1"] == {"weight": (2048, 128), "bias": (128,)}
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
