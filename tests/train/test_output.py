"""`burnlike.train.output`: which metrics each output item can feed. A sequence output feeds token
accuracy and top-k accuracy over all its positions, its predictions defaulting to the logits'
argmax (for CER/WER); a single-label classification output cannot feed the Hamming score, which
needs multilabel targets."""

import pytest
import torch
import torchmetrics.functional.classification as tmc

from burnlike.train import ClassificationOutput, MetricInputError, SequenceOutput
from burnlike.train.metric import AccuracyMetric, CharErrorRate, HammingScore, TopKAccuracyMetric
from burnlike.train.module import check_metrics
from tests.train.helpers import feed_epoch


def test_sequence_output_predictions_default_to_argmax():
    logits = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(0))
    item = SequenceOutput(torch.tensor(1.0), logits, None, logits.argmax(-1))
    assert feed_epoch(CharErrorRate(), item)[0] == 0.0  # predictions are the argmax, equal to the targets


def test_sequence_output_feeds_token_accuracy():
    g = torch.Generator().manual_seed(2)
    logits, targets = torch.randn(4, 5, 6, generator=g), torch.randint(0, 6, (4, 5), generator=g)
    item = SequenceOutput(torch.tensor(0.0), logits, None, targets)
    acc = tmc.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro")
    assert feed_epoch(AccuracyMetric(), item)[0] == pytest.approx(100 * float(acc))
    top2 = tmc.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro", top_k=2)
    assert feed_epoch(TopKAccuracyMetric(2), item)[0] == pytest.approx(100 * float(top2))


def test_a_classification_output_cannot_feed_the_hamming_score():
    with pytest.raises(MetricInputError, match="hamming"):
        check_metrics(ClassificationOutput, [HammingScore()], "valid")
