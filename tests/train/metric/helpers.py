"""TODO: docstring."""

import torch
from torch import nn

from burnlike.train.metric import MetricContext

LOSS = torch.tensor(0.0)


CTX = MetricContext()


def one_hot_logits(predicted: list[int], classes: int = 3) -> torch.Tensor:
    return nn.functional.one_hot(torch.tensor(predicted), classes).float() * 5.0
