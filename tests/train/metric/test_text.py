"""`burnlike.train.metric.text`: CER, WER and perplexity, against torchmetrics on the same tokens.
Checked: Burn's pad handling (CER keeps each sequence's first n tokens, n its count of non-pad
tokens; WER ends a sequence at its first pad; perplexity leaves pad positions out), Burn's log
lines (CER/WER per batch weighted by batch size, perplexity's running value weighted by tokens),
Burn's perplexity epoch value (the aggregate of its lines) beside the exact corpus perplexity,
the edit distance underneath, empty targets and mismatched shapes, and a sequence model's fit
logging all three per batch and per epoch."""

import math

import pytest
import torch
import torchmetrics.functional.text as tmt
from torch import nn
from torch.utils.data import DataLoader
from torchmetrics.functional.text import char_error_rate, word_error_rate

from burnlike.optim import AdamConfig
from burnlike.train import ClassificationOutput, LearnerBuilder, SequenceOutput
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import (
    CharErrorRate,
    CorpusPerplexityMetric,
    LossMetric,
    MetricContext,
    PerplexityMetric,
    WordErrorRate,
)
from burnlike.train.metric.text import edit_distance
from burnlike.train.module import check_metrics
from tests.train.helpers import SEQ_LEN, VOCAB, Successor, TokenBatch, feed_epoch
from tests.train.metric.helpers import LOSS


def sequences(seed=1):
    """Two batches (3 and 2 sequences of 4 tokens, vocabulary 6) of random logits and targets."""
    g = torch.Generator().manual_seed(seed)
    return [SequenceOutput(LOSS, torch.randn(b, 4, 6, generator=g), None, torch.randint(0, 6, (b, 4), generator=g))
            for b in (3, 2)]


def seq(predictions, targets, logits=None):
    """A sequence output of given predictions and targets (token ids)."""
    targets = torch.tensor(targets)
    logits = logits if logits is not None else torch.zeros(*targets.shape, 10)
    return SequenceOutput(torch.tensor(0.0), logits, torch.tensor(predictions), targets)


PRED = [[1, 2, 3, 4, 0, 0], [5, 5, 6, 7, 8, 9], [1, 0, 1, 2, 2, 3]]  # pad (0) at the end and in the middle
TARG = [[1, 3, 3, 4, 5, 0], [5, 6, 7, 8, 9, 9], [2, 1, 0, 2, 3, 0]]


def text(rows):
    """Token ids as characters, for torchmetrics' string-based CER."""
    return ["".join(chr(ord("a") + t) for t in row) for row in rows]


def token_loader(n, seed, batch_size=32):
    """`n` random token sequences, each paired with its successor sequence (the `Successor` task)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (n, SEQ_LEN), generator=g)
    pairs = list(zip(tokens, (tokens + 1) % VOCAB))
    return DataLoader(pairs, batch_size=batch_size, collate_fn=lambda b: TokenBatch(*map(torch.stack, zip(*b))))


# --- edit distance, CER and WER ------------------------------------------------------------------
def test_edit_distance_counts_insertions_deletions_and_substitutions():
    assert edit_distance([], [1, 2]) == 2
    assert edit_distance([1, 2], []) == 2
    assert edit_distance([1, 2, 3], [1, 3]) == 1
    assert edit_distance([1, 3], [1, 2, 3]) == 1
    kitten, sitting = [ord(c) for c in "kitten"], [ord(c) for c in "sitting"]
    assert edit_distance(kitten, sitting) == 3


def test_cer_equals_torchmetrics_on_characters():
    value, lines = feed_epoch(CharErrorRate(), seq(PRED, TARG), seq(PRED[:1], TARG[:1]))
    batch1 = 100 * float(char_error_rate(text(PRED), text(TARG)))
    batch2 = 100 * float(char_error_rate(text(PRED[:1]), text(TARG[:1])))
    assert lines == [pytest.approx((batch1, 3)), pytest.approx((batch2, 1))]  # Burn: value, batch size
    assert value == pytest.approx((3 * batch1 + batch2) / 4)
    # with a pad token (0), Burn keeps each sequence's first n tokens, n = its count of non-pad tokens
    value, _ = feed_epoch(CharErrorRate(pad_token=0), seq(PRED, TARG))
    cut = [(p[: sum(t != 0 for t in p)], t[: sum(x != 0 for x in t)]) for p, t in zip(PRED, TARG)]
    want = 100 * float(char_error_rate(text([p for p, _ in cut]), text([t for _, t in cut])))
    assert value == pytest.approx(want)
    assert CharErrorRate().name == "CER" and CharErrorRate().unit == "%" and CharErrorRate.higher_is_better is False


def test_wer_equals_torchmetrics_on_words():
    words = lambda rows: [" ".join(f"w{t}" for t in row) for row in rows]  # noqa: E731
    value, _ = feed_epoch(WordErrorRate(), seq(PRED, TARG))
    assert value == pytest.approx(100 * float(word_error_rate(words(PRED), words(TARG))))
    # with a pad token, each sequence ends at its first pad (Burn's WER)
    value, _ = feed_epoch(WordErrorRate().with_pad_token(0), seq(PRED, TARG))
    cut = lambda rows: [r[: r.index(0)] if 0 in r else r for r in rows]  # noqa: E731
    assert value == pytest.approx(100 * float(word_error_rate(words(cut(PRED)), words(cut(TARG)))))
    assert WordErrorRate().name == "WER" and WordErrorRate.higher_is_better is False


def test_error_rates_of_empty_targets_are_zero():
    empty = SequenceOutput(LOSS, torch.zeros(2, 0, 4), torch.zeros(2, 0, dtype=torch.long),
                           torch.zeros(2, 0, dtype=torch.long))
    assert feed_epoch(CharErrorRate(), empty) == (0.0, [(0.0, 2.0)])
    padded = SequenceOutput(LOSS, torch.zeros(2, 3, 4), torch.ones(2, 3, dtype=torch.long),
                            torch.zeros(2, 3, dtype=torch.long))  # all targets are the pad token
    assert feed_epoch(WordErrorRate(pad_token=0), padded)[0] == 0.0


def test_error_rates_name_the_expected_shapes():
    item = SequenceOutput(LOSS, torch.zeros(2, 3, 4), torch.zeros(2, 3, dtype=torch.long),
                          torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^CER: predictions \(2, 3\) and targets \(2, 4\) must both be "
                                         r"\[batch, sequence\]$"):
        feed_epoch(CharErrorRate(), item)


# --- perplexity -----------------------------------------------------------------------------------
def burn_value(lines):
    """Burn's epoch value of logged `value,count` lines (burn-train/src/metric/store/aggregate.rs):
    Σ value·count / Σ count."""
    return sum(v * c for v, c in lines) / sum(c for _, c in lines)


def test_perplexity_logs_burns_running_lines_and_reports_their_aggregate():
    """burn-train/src/metric/perplexity.rs (v0.21.0): each update serializes `Aggregated{epoch
    perplexity so far, tokens so far}`; the epoch value (summary, early stopping, checkpoints) is
    store/aggregate.rs's mean of those entries weighted by their counts, not the perplexity of the
    epoch's tokens (that one is `CorpusPerplexityMetric`, equal to torchmetrics' perplexity)."""
    items = sequences()
    value, lines = feed_epoch(PerplexityMetric(), *items)
    logits = torch.cat([i.logits for i in items])
    targets = torch.cat([i.targets for i in items])
    first = float(tmt.perplexity(items[0].logits, items[0].targets))
    exact = float(tmt.perplexity(logits, targets))
    assert lines[0] == pytest.approx((first, 12)) and lines[1] == pytest.approx((exact, 20), rel=1e-5)
    assert value == pytest.approx((first * 12 + exact * 20) / 32, rel=1e-5) == burn_value(lines)
    corpus, corpus_lines = feed_epoch(CorpusPerplexityMetric(), *items)
    assert corpus == pytest.approx(exact, rel=1e-5) and corpus_lines == lines
    # pad tokens are left out
    items[1].targets[0, :2] = 5
    value, lines = feed_epoch(CorpusPerplexityMetric(pad_token=5), *items)
    want = tmt.perplexity(logits, torch.cat([i.targets for i in items]), ignore_index=5)
    assert value == pytest.approx(float(want), rel=1e-5)
    assert feed_epoch(PerplexityMetric(pad_token=5), *items)[0] == pytest.approx(burn_value(lines), rel=1e-12)
    assert PerplexityMetric.higher_is_better is False and CorpusPerplexityMetric.higher_is_better is False
    assert CorpusPerplexityMetric().name == "Corpus Perplexity" and PerplexityMetric().name == "Perplexity"


def test_perplexity_epoch_value_weighs_the_running_lines_as_burn_does():
    """burn-train/src/metric/perplexity.rs + store/aggregate.rs (v0.21.0): a batch of 1 token at
    perplexity 2, then 1 more token bringing the epoch's perplexity to 4, log (2, 1) and (4, 2); Burn's
    epoch value is (2·1 + 4·2) / 3 = 10/3, the exact perplexity of the epoch 4."""
    def token(nll):  # one token whose negative log-likelihood is `nll` (two classes, target 0)
        p = math.exp(-nll)
        logits = torch.tensor([[[math.log(p), math.log(1 - p)]]], dtype=torch.float64)
        return SequenceOutput(LOSS, logits, None, torch.tensor([[0]]))

    first, second = token(math.log(2)), token(2 * math.log(4) - math.log(2))  # exp((ln 2 + x) / 2) = 4
    value, lines = feed_epoch(PerplexityMetric(), first, second)
    assert [v for v, _ in lines] == pytest.approx([2.0, 4.0]) and [c for _, c in lines] == [1.0, 2.0]
    assert value == pytest.approx(10 / 3)
    assert feed_epoch(CorpusPerplexityMetric(), first, second)[0] == pytest.approx(4.0)


def test_perplexity_running_is_the_perplexity_so_far():
    first, second = sequences()
    for metric in (PerplexityMetric(), CorpusPerplexityMetric()):
        assert math.isnan(metric.running())  # nothing seen yet
        metric.update(first, MetricContext())
        once = float(tmt.perplexity(first.logits, first.targets))
        assert metric.running() == pytest.approx(once, rel=1e-5)
        metric.update(second, MetricContext())
        both = tmt.perplexity(torch.cat([first.logits, second.logits]), torch.cat([first.targets, second.targets]))
        assert metric.running() == pytest.approx(float(both), rel=1e-5)
        expected = float(both) if isinstance(metric, CorpusPerplexityMetric) else (once * 12 + float(both) * 20) / 32
        assert metric.finish_epoch()[0] == pytest.approx(expected, rel=1e-5)


def test_perplexity_with_pad_token_ignores_pad_positions():
    first, second = sequences(2)
    second.targets[0, :3] = 4
    metric = CorpusPerplexityMetric()
    assert metric.with_pad_token(4) is metric and metric.pad_token == 4
    value, lines = feed_epoch(metric, first, second)
    logits = torch.cat([first.logits, second.logits])
    targets = torch.cat([first.targets, second.targets])
    assert value == pytest.approx(float(tmt.perplexity(logits, targets, ignore_index=4)), rel=1e-5)
    assert lines[-1][1] == int((targets != 4).sum())  # tokens counted without the pads
    assert value != pytest.approx(float(tmt.perplexity(logits, targets)), rel=1e-3)
    burn, burn_lines = feed_epoch(PerplexityMetric().with_pad_token(4), first, second)
    assert burn_lines == lines and burn == pytest.approx(burn_value(lines), rel=1e-12)


def test_perplexity_of_one_kept_token_and_of_an_all_pad_batch():
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(1, 3, 5, generator=g)
    targets = torch.tensor([[2, 0, 0]])  # one token, then padding
    for metric in (PerplexityMetric(pad_token=0), CorpusPerplexityMetric(pad_token=0)):
        value, lines = feed_epoch(metric, SequenceOutput(LOSS, logits, None, targets))
        assert value == pytest.approx(float(tmt.perplexity(logits, targets, ignore_index=0)), rel=1e-5)
        assert lines == [pytest.approx((value, 1.0))]
    # a first batch of padding only: its running line is infinite (no token yet), the next one counts
    all_pad = SequenceOutput(LOSS, logits, None, torch.zeros(1, 3, dtype=torch.long))
    value, lines = feed_epoch(CorpusPerplexityMetric(pad_token=0), all_pad, SequenceOutput(LOSS, logits, None, targets))
    assert lines[0] == (math.inf, 0.0) and lines[1] == pytest.approx((value, 1.0))
    # Burn's aggregate of those lines multiplies inf by its count 0 (store/aggregate.rs): NaN
    burn, burn_lines = feed_epoch(PerplexityMetric(pad_token=0), all_pad, SequenceOutput(LOSS, logits, None, targets))
    assert burn_lines == lines and math.isnan(burn)


def test_a_classification_output_feeds_perplexity_as_in_burn():
    """burn-train/src/learner/classification.rs (v0.21.0): `Adaptor<PerplexityInput> for
    ClassificationOutput` (logits [B, C], targets [B])."""
    logits = torch.randn(6, 4, generator=torch.Generator().manual_seed(5))
    targets = torch.tensor([0, 3, 1, 1, 2, 0])
    check_metrics(ClassificationOutput, [PerplexityMetric(), CorpusPerplexityMetric()], "train")
    value, _ = feed_epoch(CorpusPerplexityMetric(), ClassificationOutput(LOSS, logits, targets))
    assert value == pytest.approx(float(tmt.perplexity(logits.unsqueeze(0), targets.unsqueeze(0))), rel=1e-5)


# --- in a fit -------------------------------------------------------------------------------------
def test_sequence_model_fit_logs_perplexity_cer_and_wer_per_batch_and_epoch(tmp_path):
    torch.manual_seed(0)
    learner = (LearnerBuilder(tmp_path).metrics((PerplexityMetric(), CorpusPerplexityMetric(), CharErrorRate(),
                                                 WordErrorRate(), LossMetric()))
               .devices(["cpu"]).num_epochs(1).progress_bar(False).with_application_logger(False)
               .build(Successor(), AdamConfig(), 5e-2))
    valid = token_loader(64, 1)
    result = learner.fit(token_loader(256, 0), valid)
    for split, batches in (("train", 8), ("valid", 2)):
        for name in ("Perplexity", "Corpus_Perplexity", "CER", "WER", "Loss"):
            lines = (tmp_path / split / "epoch-1" / f"{name}.log").read_text().splitlines()
            assert len(lines) == batches, (split, name)
    logged = result.trainer.callback_metrics
    # the valid epoch ran with the final weights: recompute its perplexity and CER by hand
    model = result.model
    nll, tokens, cer, lines = 0.0, 0, [], []
    with torch.no_grad():
        for batch in valid:
            logits = model.forward_sequence(batch).logits
            nll += float(nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch.targets.reshape(-1), reduction="sum"))
            tokens += batch.targets.numel()
            lines.append((math.exp(nll / tokens), tokens))  # Burn's running perplexity line
            rate = char_error_rate(text(logits.argmax(-1).tolist()), text(batch.targets.tolist()))
            cer.append((100 * float(rate), len(batch.targets)))
    assert float(logged["valid/Corpus Perplexity"]) == pytest.approx(math.exp(nll / tokens), rel=1e-4)
    assert float(logged["valid/Perplexity"]) == pytest.approx(burn_value(lines), rel=1e-4)
    assert float(logged["valid/CER"]) == pytest.approx(sum(v * c for v, c in cer) / 64, abs=1e-4)
    assert float(logged["valid/Perplexity"]) < 0.5 * read_metric_log(tmp_path / "train" / "epoch-1" / "Perplexity.log")
    assert float(logged["valid/CER"]) < 50 and float(logged["valid/WER"]) == pytest.approx(float(logged["valid/CER"]))
