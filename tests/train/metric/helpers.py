"""Inputs shared by the tests of `burnlike.train.metric`: a zero loss, an empty metric context,
confident logits for chosen classes and a classification output from plain lists."""

import torch
from torch import nn

from burnlike.train import ClassificationOutput
from burnlike.train.metric import MetricContext

LOSS = torch.tensor(0.0)
CTX = MetricContext()


def one_hot_logits(predicted: list[int], classes: int = 3) -> torch.Tensor:
    """Logits whose argmax is `predicted` (each row one-hot, scaled by 5)."""
    return nn.functional.one_hot(torch.tensor(predicted), classes).float() * 5.0


def classification_item(logits, targets, loss=0.0) -> ClassificationOutput:
    return ClassificationOutput(torch.as_tensor(loss), torch.as_tensor(logits, dtype=torch.float32),
                                torch.as_tensor(targets))
