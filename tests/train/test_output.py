"""TODO: docstring."""

import pytest
import torch
import torchmetrics.functional as tmf

from burnlike.train import SequenceOutput
from burnlike.train.metric import (
    AccuracyMetric,
    CharErrorRate,
    TopKAccuracyMetric,
)
from tests.train.helpers import epoch


def test_sequence_output_predictions_default_to_argmax():
    logits = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(0))
    item = SequenceOutput(torch.tensor(1.0), logits, None, logits.argmax(-1))
    assert epoch(CharErrorRate(), item)[0] == 0.0  # predictions are the argmax, equal to the targets


def test_sequence_output_feeds_token_accuracy():
    g = torch.Generator().manual_seed(2)
    logits, targets = torch.randn(4, 5, 6, generator=g), torch.randint(0, 6, (4, 5), generator=g)
    item = SequenceOutput(torch.tensor(0.0), logits, None, targets)
    acc = tmf.classification.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro")
    assert epoch(AccuracyMetric(), item)[0] == pytest.approx(100 * float(acc))
    top2 = tmf.classification.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro",
                                                  top_k=2)
    assert epoch(TopKAccuracyMetric(2), item)[0] == pytest.approx(100 * float(top2))
