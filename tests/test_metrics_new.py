"""Metrics added for Burn 0.19-0.21 against torchmetrics or a hand computation on fixed inputs, and a
small sequence model that trains one epoch with SequenceOutput and logs Perplexity, CER and WER."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torchmetrics.functional as tmf
import torchmetrics.functional.segmentation as tm_seg
from torch import nn
from torch.utils.data import DataLoader
from torchmetrics.functional.text import char_error_rate, word_error_rate

from burnlike.module import Module
from burnlike.train import (
    InferenceStep,
    LearnerBuilder,
    MetricInputError,
    SequenceOutput,
    TrainOutput,
    TrainStep,
    backward,
)
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import (
    AccuracyMetric,
    CharErrorRate,
    CpuTemperature,
    CudaMetric,
    DiceMetric,
    DiceMetricConfig,
    LossMetric,
    MsSsimMetric,
    MsSsimMetricConfig,
    PerplexityMetric,
    PsnrMetric,
    PsnrMetricConfig,
    SsimMetric,
    SsimMetricConfig,
    TopKAccuracyMetric,
    WordErrorRate,
)
from burnlike.train.metric.base import MetricContext
from burnlike.train.output import DICE, IMAGE, Adaptor


def epoch(metric, *items):
    """Feed items as one epoch; return (epoch value, log lines)."""
    for item in items:
        metric.update(item, MetricContext())
    return metric.finish_epoch()


def seq(predictions, targets, logits=None):
    targets = torch.tensor(targets)
    logits = logits if logits is not None else torch.zeros(*targets.shape, 10)
    return SequenceOutput(torch.tensor(0.0), logits, torch.tensor(predictions), targets)


PRED = [[1, 2, 3, 4, 0, 0], [5, 5, 6, 7, 8, 9], [1, 0, 1, 2, 2, 3]]  # pad (0) at the end and in the middle
TARG = [[1, 3, 3, 4, 5, 0], [5, 6, 7, 8, 9, 9], [2, 1, 0, 2, 3, 0]]


def text(rows):
    """Token ids as characters, for torchmetrics' string-based CER."""
    return ["".join(chr(ord("a") + t) for t in row) for row in rows]


def test_cer_equals_torchmetrics_on_characters():
    value, lines = epoch(CharErrorRate(), seq(PRED, TARG), seq(PRED[:1], TARG[:1]))
    batch1 = 100 * float(char_error_rate(text(PRED), text(TARG)))
    batch2 = 100 * float(char_error_rate(text(PRED[:1]), text(TARG[:1])))
    assert lines == [pytest.approx((batch1, 3)), pytest.approx((batch2, 1))]  # Burn: value, batch size
    assert value == pytest.approx((3 * batch1 + batch2) / 4)
    # with a pad token (0), Burn keeps each sequence's first n tokens, n = its count of non-pad tokens
    value, _ = epoch(CharErrorRate(pad_token=0), seq(PRED, TARG))
    cut = [(p[: sum(t != 0 for t in p)], t[: sum(x != 0 for x in t)]) for p, t in zip(PRED, TARG)]
    want = 100 * float(char_error_rate(text([p for p, _ in cut]), text([t for _, t in cut])))
    assert value == pytest.approx(want)
    assert CharErrorRate().name == "CER" and CharErrorRate().unit == "%" and CharErrorRate.higher_is_better is False


def test_wer_equals_torchmetrics_on_words():
    words = lambda rows: [" ".join(f"w{t}" for t in row) for row in rows]  # noqa: E731
    value, _ = epoch(WordErrorRate(), seq(PRED, TARG))
    assert value == pytest.approx(100 * float(word_error_rate(words(PRED), words(TARG))))
    # with a pad token, each sequence ends at its first pad (Burn's WER)
    value, _ = epoch(WordErrorRate().with_pad_token(0), seq(PRED, TARG))
    cut = lambda rows: [r[: r.index(0)] if 0 in r else r for r in rows]  # noqa: E731
    assert value == pytest.approx(100 * float(word_error_rate(words(cut(PRED)), words(cut(TARG)))))
    assert WordErrorRate().name == "WER" and WordErrorRate.higher_is_better is False


def test_sequence_output_predictions_default_to_argmax():
    logits = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(0))
    item = SequenceOutput(torch.tensor(1.0), logits, None, logits.argmax(-1))
    assert epoch(CharErrorRate(), item)[0] == 0.0  # predictions are the argmax, equal to the targets


def test_perplexity_equals_torchmetrics_and_logs_burns_running_lines():
    g = torch.Generator().manual_seed(1)
    items = [SequenceOutput(torch.tensor(0.0), torch.randn(b, 4, 6, generator=g), None,
                            torch.randint(0, 6, (b, 4), generator=g)) for b in (3, 2)]
    value, lines = epoch(PerplexityMetric(), *items)
    logits = torch.cat([i.logits for i in items])
    targets = torch.cat([i.targets for i in items])
    assert value == pytest.approx(float(tmf.text.perplexity(logits, targets)), rel=1e-5)
    first = float(tmf.text.perplexity(items[0].logits, items[0].targets))
    assert lines[0] == pytest.approx((first, 12)) and lines[1] == pytest.approx((value, 20), rel=1e-5)
    # pad tokens are left out
    items[1].targets[0, :2] = 5
    value, _ = epoch(PerplexityMetric(pad_token=5), *items)
    want = tmf.text.perplexity(logits, torch.cat([i.targets for i in items]), ignore_index=5)
    assert value == pytest.approx(float(want), rel=1e-5)
    assert PerplexityMetric.higher_is_better is False


def test_sequence_output_feeds_token_accuracy():
    g = torch.Generator().manual_seed(2)
    logits, targets = torch.randn(4, 5, 6, generator=g), torch.randint(0, 6, (4, 5), generator=g)
    item = SequenceOutput(torch.tensor(0.0), logits, None, targets)
    acc = tmf.classification.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro")
    assert epoch(AccuracyMetric(), item)[0] == pytest.approx(100 * float(acc))
    top2 = tmf.classification.multiclass_accuracy(logits.reshape(-1, 6), targets.reshape(-1), 6, average="micro",
                                                  top_k=2)
    assert epoch(TopKAccuracyMetric(2), item)[0] == pytest.approx(100 * float(top2))


@dataclass
class Images(Adaptor):
    output: torch.Tensor
    targets: torch.Tensor
    provides = frozenset({IMAGE, DICE})


def masks(seed, shape=(2, 3, 8, 8)):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g) > 0.5).long()


def test_dice_by_hand_and_against_torchmetrics():
    out, tgt = masks(0), masks(1)
    value, lines = epoch(DiceMetric(), Images(out, tgt))
    o, t = out[:, 1:].double(), tgt[:, 1:].double()  # background channel left out
    assert value == pytest.approx(float((2 * (o * t).sum() + 1e-7) / (o.sum() + t.sum() + 1e-7)))
    assert lines[0][1] == 2 and DiceMetric().name == "4D Dice Metric" and DiceMetric.higher_is_better is True
    with_bg, _ = epoch(DiceMetric(DiceMetricConfig(include_background=True)), Images(out, tgt))
    o, t = out.double(), tgt.double()
    assert with_bg == pytest.approx(float(2 * (o * t).sum() / (o.sum() + t.sum())))
    # one image: Burn's micro Dice is torchmetrics' micro Dice score
    single, _ = epoch(DiceMetric(), Images(out[:1], tgt[:1]))
    want = tm_seg.dice_score(out[:1], tgt[:1], num_classes=3, include_background=False, average="micro",
                                       input_format="one-hot")
    assert single == pytest.approx(float(want), rel=1e-6)
    with pytest.raises(ValueError, match="rank 3"):
        epoch(DiceMetric(dims=3), Images(out, tgt))


def images(seed, shape=(2, 3, 16, 16)):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g)
    return x, (x + 0.1 * torch.randn(shape, generator=g)).clamp(0, 1)


def test_psnr_equals_torchmetrics():
    x, y = (2 * t for t in images(0))  # pixel values in [0, 2]
    value, _ = epoch(PsnrMetric(PsnrMetricConfig(2.0)), Images(x, y))
    want = tmf.image.peak_signal_noise_ratio(x, y, data_range=2.0, dim=(1, 2, 3), reduction="elementwise_mean")
    assert value == pytest.approx(float(want), rel=1e-5)
    assert PsnrMetric(PsnrMetricConfig(255.0)).name == "PSNR@255" and PsnrMetric(PsnrMetricConfig(1.0)).unit == "dB"
    # identical images: Burn clamps the error at ε instead of reporting infinity
    assert epoch(PsnrMetric(PsnrMetricConfig(1.0)), Images(x, x))[0] == pytest.approx(100.0)
    assert PsnrMetric.higher_is_better is True


def gaussian(size, sigma):
    x = np.arange(size) - size // 2
    k = np.exp(-(x**2) / (2 * sigma**2))
    return k / k.sum()


def window_mean(img, kernel, mode):
    """Gaussian-weighted mean around every pixel, by explicit sums over the padded image."""
    r = len(kernel) // 2
    padded = np.pad(img, r, mode="constant" if mode == "zero" else "reflect")
    w = np.outer(kernel, kernel)
    out = np.zeros_like(img)
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            out[i, j] = (padded[i : i + len(kernel), j : j + len(kernel)] * w).sum()
    return out


def ssim_maps(x, y, kernel, c1, c2, mode):
    mx, my = window_mean(x, kernel, mode), window_mean(y, kernel, mode)
    vx = np.maximum(window_mean(x * x, kernel, mode) - mx * mx, 0)
    vy = np.maximum(window_mean(y * y, kernel, mode) - my * my, 0)
    cov = window_mean(x * y, kernel, mode) - mx * my
    return (2 * mx * my + c1) / (mx**2 + my**2 + c1), (2 * cov + c2) / (vx + vy + c2)


def test_ssim_by_hand():
    x, y = images(3, (2, 2, 12, 12))
    cfg = SsimMetricConfig(1.0).with_kernel_size(5).with_sigma(1.2)
    value, _ = epoch(SsimMetric(cfg), Images(x, y))
    k, c1, c2 = gaussian(5, 1.2), 0.01**2, 0.03**2
    per_image = [np.mean([np.mean(np.multiply(*ssim_maps(x[b, c].double().numpy(), y[b, c].double().numpy(),
                                                          k, c1, c2, "zero"))) for c in range(2)]) for b in range(2)]
    assert value == pytest.approx(np.mean(per_image), abs=1e-5)
    assert SsimMetric(SsimMetricConfig(1.0)).name == "SSIM (dr=1, w=11, σ=1.5)"
    with pytest.raises(ValueError, match="kernel_size"):
        SsimMetricConfig(1.0, kernel_size=4)


def test_ms_ssim_by_hand():
    x, y = images(4, (2, 2, 16, 16))
    betas = [0.3, 0.3, 0.4]
    cfg = MsSsimMetricConfig(1.0).with_kernel_size(3).with_channels(2).with_betas(betas)
    value, _ = epoch(MsSsimMetric(cfg), Images(x, y))
    k, c1, c2 = gaussian(3, 1.5), 0.01**2, 0.03**2
    scores = []
    for b in range(2):
        per_channel = []
        for c in range(2):
            xs, ys, score = x[b, c].double().numpy(), y[b, c].double().numpy(), 1.0
            for j, beta in enumerate(betas):
                lum, cs = ssim_maps(xs, ys, k, c1, c2, "reflect")
                term = lum * cs if j == len(betas) - 1 else cs
                score *= max(term.mean(), 0.0) ** beta
                h, w = xs.shape[0] // 2 * 2, xs.shape[1] // 2 * 2
                xs = xs[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
                ys = ys[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
            per_channel.append(score)
        scores.append(np.mean(per_channel))
    assert value == pytest.approx(np.mean(scores), abs=1e-5)
    with pytest.raises(ValueError, match="at least 12 pixels"):
        epoch(MsSsimMetric(cfg), Images(x[..., :8, :8], y[..., :8, :8]))
    with pytest.raises(ValueError, match="configured for 3"):
        epoch(MsSsimMetric(MsSsimMetricConfig(1.0).with_kernel_size(3).with_betas(betas)), Images(x, y))


def test_machine_metrics(tmp_path):
    cuda = CudaMetric()
    value, lines = epoch(cuda, None, None)
    if torch.cuda.is_available():
        assert len(lines) == 2 and value > 0
    else:
        assert lines == [] and math.isnan(value)  # no CUDA: nothing recorded
    # CPU temperature from sysfs: a coretemp hwmon wins, else a CPU thermal zone, else NaN
    assert math.isnan(epoch(CpuTemperature(tmp_path), None)[0])
    zone = tmp_path / "class" / "thermal" / "thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "type").write_text("x86_pkg_temp\n")
    (zone / "temp").write_text("47000\n")
    assert epoch(CpuTemperature(tmp_path), None)[0] == 47.0
    hwmon = tmp_path / "class" / "hwmon" / "hwmon3"
    hwmon.mkdir(parents=True)
    (hwmon / "name").write_text("coretemp\n")
    (hwmon / "temp1_input").write_text("52500\n")
    assert epoch(CpuTemperature(tmp_path), None)[0] == 52.5
    assert CpuTemperature().name == "CPU Temperature" and CpuTemperature().unit == "°C"


# A small sequence model: predict each token's successor (mod V) --------------------------------
V, S = 8, 6


@dataclass
class TokenBatch:
    tokens: torch.Tensor
    targets: torch.Tensor


def token_loader(n, seed, batch_size=32):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, V, (n, S), generator=g)
    pairs = list(zip(tokens, (tokens + 1) % V))
    return DataLoader(pairs, batch_size=batch_size, collate_fn=lambda b: TokenBatch(*map(torch.stack, zip(*b))))


class Successor(Module, TrainStep[TokenBatch, SequenceOutput], InferenceStep[TokenBatch, SequenceOutput]):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, 16)
        self.head = nn.Linear(16, V)

    def forward_sequence(self, batch: TokenBatch) -> SequenceOutput:
        logits = self.head(self.embed(batch.tokens))
        loss = nn.functional.cross_entropy(logits.reshape(-1, V), batch.targets.reshape(-1))
        return SequenceOutput(loss, logits, None, batch.targets)

    def train_step(self, batch: TokenBatch) -> TrainOutput[SequenceOutput]:
        item = self.forward_sequence(batch)
        return TrainOutput(self, backward(item.loss), item)

    def inference_step(self, batch: TokenBatch) -> SequenceOutput:
        return self.forward_sequence(batch)


def test_sequence_model_trains_and_logs_perplexity_cer_wer(tmp_path):
    torch.manual_seed(0)
    from burnlike.optim import AdamConfig

    learner = (LearnerBuilder(tmp_path).metrics((PerplexityMetric(), CharErrorRate(), WordErrorRate(), LossMetric()))
               .devices(["cpu"]).num_epochs(1).progress_bar(False).with_application_logger(False)
               .build(Successor(), AdamConfig(), 5e-2))
    valid = token_loader(64, 1)
    result = learner.fit(token_loader(256, 0), valid)
    for split, batches in (("train", 8), ("valid", 2)):
        for name in ("Perplexity", "CER", "WER", "Loss"):
            lines = (tmp_path / split / "epoch-1" / f"{name}.log").read_text().splitlines()
            assert len(lines) == batches, (split, name)
    logged = result.trainer.callback_metrics
    # the valid epoch ran with the final weights: recompute its perplexity and CER by hand
    model = result.model
    nll, tokens, cer = 0.0, 0, []
    with torch.no_grad():
        for batch in valid:
            logits = model.forward_sequence(batch).logits
            nll += float(nn.functional.cross_entropy(logits.reshape(-1, V), batch.targets.reshape(-1), reduction="sum"))
            tokens += batch.targets.numel()
            rate = char_error_rate(text(logits.argmax(-1).tolist()), text(batch.targets.tolist()))
            cer.append((100 * float(rate), len(batch.targets)))
    assert float(logged["valid/Perplexity"]) == pytest.approx(math.exp(nll / tokens), rel=1e-4)
    assert float(logged["valid/CER"]) == pytest.approx(sum(v * c for v, c in cer) / 64, abs=1e-4)
    assert float(logged["valid/Perplexity"]) < 0.5 * read_metric_log(tmp_path / "train" / "epoch-1" / "Perplexity.log")
    assert float(logged["valid/CER"]) < 50 and float(logged["valid/WER"]) == pytest.approx(float(logged["valid/CER"]))


def test_sequence_output_cannot_feed_vision_metrics(tmp_path):
    with pytest.raises(MetricInputError, match="SequenceOutput"):
        from burnlike.optim import AdamConfig

        LearnerBuilder(tmp_path).metric_valid(PsnrMetric(PsnrMetricConfig(1.0))).build(Successor(), AdamConfig(), 1e-3)
