"""Burn's `examples/text-generation`, in Python: a causal transformer learns to continue texts, one token
at a time.

`TextGenerationModel` is Burn's `src/model.rs` field for field: token and position embeddings averaged,
Burn's `TransformerEncoder` under an autoregressive mask and the padding mask, a Linear to the
vocabulary, cross-entropy that ignores the pad token; its record is Burn's. The batcher, the experiment
config and the training are Burn's `src/data/batcher.rs` and `src/training.rs`: inputs are the tokens
but the last, targets the tokens but the first; `SamplerDataset`s of 10,000 train and 1,000 test items
per epoch, batch 6 with 6 batches of gradient accumulation, Adam (weight decay 1e-6) under a Noam
schedule (0.01/6, 6,000 warmup steps), accuracy and perplexity without pad tokens, the loss, the
learning rate; `config.json` and `model.mpk` written at the end. Burn's example
(`examples/text-generation.rs`) uses d_model 384, d_ff 1536, 12 heads, 6 layers, pre-norm.

Burn trains on DBpedia from the Hugging Face hub with GPT-2's tokenizer; here the texts are the
paragraphs of a local text file (`--data`, default Tiny Shakespeare under $BURNLIKE_DATA) and the
tokenizer is its characters, plus Burn's `[START]`, `[END]` and `[PAD]` tokens: nothing is downloaded.

    python examples/text_generation.py [--data input.txt] [--epochs 50] [--artifact-dir /tmp/text-generation]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, SeqLengthOption, generate_padding_mask
from burnlike.data.batch import TensorBatch
from burnlike.data.dataset import InMemDataset, SamplerDataset
from burnlike.module import Module
from burnlike.nn import (
    CrossEntropyLossConfig,
    EmbeddingConfig,
    LinearConfig,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
)
from burnlike.optim import AdamConfig, NoamLrSchedulerConfig, WeightDecayConfig
from burnlike.record import CompactRecorder, DefaultRecorder
from burnlike.train import (
    ClassificationOutput,
    Learner,
    LearningResult,
    SupervisedTraining,
    TrainOutput,
    backward,
)
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric, PerplexityMetric

# --- src/data/tokenizer.rs -------------------------------------------------------------------------


class CharTokenizer:
    """Burn's `Tokenizer` trait over the characters of a corpus, then `[START]`, `[END]`, `[PAD]` (as
    Burn adds them to GPT-2's vocabulary)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.chars = sorted({c for text in texts for c in text})
        self.ids = {c: i for i, c in enumerate(self.chars)}
        self.specials = ["[START]", "[END]", "[PAD]"]

    def encode(self, value: str, special_tokens: bool) -> list[int]:
        tokens = [self.ids[c] for c in value if c in self.ids]
        return [self.start_token(), *tokens, self.end_token()] if special_tokens else tokens

    def decode(self, tokens: Sequence[int]) -> str:
        return "".join(self.chars[t] if t < len(self.chars) else self.specials[t - len(self.chars)] for t in tokens)

    def vocab_size(self) -> int:
        return len(self.chars) + len(self.specials)

    def start_token(self) -> int:
        return len(self.chars)

    def end_token(self) -> int:
        return len(self.chars) + 1

    def pad_token(self) -> int:
        return len(self.chars) + 2


# --- src/data/dataset.rs ---------------------------------------------------------------------------


@dataclasses.dataclass
class TextGenerationItem:
    text: str


def paragraphs(path: Path) -> list[TextGenerationItem]:
    """The file's blank-line-separated paragraphs (DBpedia's `content` texts in Burn's example)."""
    return [TextGenerationItem(p.strip()) for p in path.read_text().split("\n\n") if p.strip()]


# --- src/data/batcher.rs ---------------------------------------------------------------------------


@dataclasses.dataclass
class TextGenerationBatch(TensorBatch):
    tokens: Tensor
    mask_pad: Tensor


@dataclasses.dataclass
class TrainingTextGenerationBatch(TensorBatch):
    tokens_inputs: Tensor
    targets: Tensor
    mask_pad: Tensor


class TextGenerationBatcher:
    def __init__(self, tokenizer: CharTokenizer, max_seq_length: int) -> None:
        self.tokenizer, self.max_seq_length = tokenizer, max_seq_length

    def batch_texts(self, items: list[TextGenerationItem], device: Any = None) -> TextGenerationBatch:
        tokens_list = [self.tokenizer.encode(item.text, True) for item in items]
        mask = generate_padding_mask(self.tokenizer.pad_token(), tokens_list, SeqLengthOption.Max(self.max_seq_length),
                                     device)
        return TextGenerationBatch(mask.tensor, mask.mask)

    def batch(self, items: list[TextGenerationItem], device: Any = None) -> TrainingTextGenerationBatch:
        item = self.batch_texts(items, device)
        inputs = item.tokens[:, :-1]
        targets = item.tokens[:, 1:]
        mask_pad = item.mask_pad[:, :-1]
        return TrainingTextGenerationBatch(inputs, targets, mask_pad)


# --- src/model.rs ----------------------------------------------------------------------------------


@config
class TextGenerationModelConfig:
    transformer: TransformerEncoderConfig
    vocab_size: int
    pad_token: int
    max_seq_length: int

    def init(self, device: Any = None) -> TextGenerationModel:
        return TextGenerationModel(self, device)


class TextGenerationModel(Module):
    __burn_fields__ = ("transformer", "embedding_token", "embedding_pos", "output", "vocab_size", "pad_token",
                       "max_seq_length")

    def __init__(self, config: TextGenerationModelConfig, device: Any = None) -> None:
        super().__init__()
        d_model = config.transformer.d_model
        self.output = LinearConfig(d_model, config.vocab_size).init(device)
        self.transformer = config.transformer.init(device)
        self.embedding_token = EmbeddingConfig(config.vocab_size, d_model).init(device)
        self.embedding_pos = EmbeddingConfig(config.max_seq_length, d_model).init(device)
        self.vocab_size, self.pad_token, self.max_seq_length = config.vocab_size, config.pad_token, config.max_seq_length

    def forward_training(self, item: TrainingTextGenerationBatch) -> ClassificationOutput:
        batch_size, seq_length = item.tokens_inputs.shape
        device = item.tokens_inputs.device
        index_positions = torch.arange(seq_length, device=device).reshape(1, seq_length).repeat(batch_size, 1)
        embedding_positions = self.embedding_pos(index_positions)
        embedding_tokens = self.embedding_token(item.tokens_inputs)
        embedding = (embedding_positions + embedding_tokens) / 2
        mask_attn = generate_autoregressive_mask(batch_size, seq_length, device)
        encoded = self.transformer(TransformerEncoderInput(embedding).mask_pad(item.mask_pad).mask_attn(mask_attn))
        output = self.output(encoded)
        output_flatten = output.reshape(batch_size * seq_length, self.vocab_size)
        targets_flatten = item.targets.reshape(batch_size * seq_length)
        loss = CrossEntropyLossConfig(pad_tokens=[self.pad_token]).init(output_flatten.device)
        return ClassificationOutput(loss.forward(output_flatten, targets_flatten), output_flatten, targets_flatten)

    def train_step(self, item: TrainingTextGenerationBatch) -> TrainOutput[ClassificationOutput]:
        output = self.forward_training(item)
        return TrainOutput(self, backward(output.loss), output)

    def valid_step(self, item: TrainingTextGenerationBatch) -> ClassificationOutput:
        return self.forward_training(item)


# --- src/training.rs -------------------------------------------------------------------------------


@config
class ExperimentConfig:
    transformer: TransformerEncoderConfig
    optimizer: AdamConfig
    max_seq_length: int = 512
    batch_size: int = 6
    num_epochs: int = 50


def train(dataset_train: Any, dataset_test: Any, config: ExperimentConfig, artifact_dir: str, tokenizer: CharTokenizer,
          samples: tuple[int, int] = (10_000, 1000), accum: int = 6, num_workers: int = 4,
          device: str = "cpu") -> LearningResult:
    shutil.rmtree(artifact_dir, ignore_errors=True)
    batcher = TextGenerationBatcher(tokenizer, config.max_seq_length)
    model = TextGenerationModelConfig(config.transformer, tokenizer.vocab_size(), tokenizer.pad_token(),
                                      config.max_seq_length).init(device)
    dataloader_train = (DataLoaderBuilder(batcher).batch_size(config.batch_size).num_workers(num_workers)
                        .build(SamplerDataset(dataset_train, samples[0])))
    dataloader_test = (DataLoaderBuilder(batcher).batch_size(config.batch_size).num_workers(num_workers)
                       .build(SamplerDataset(dataset_test, samples[1])))
    optim = config.optimizer.init()  # effective batch size: accum x batch_size
    lr_scheduler = NoamLrSchedulerConfig(0.01 / accum, warmup_steps=6000, model_size=config.transformer.d_model).init()
    pad = tokenizer.pad_token()
    training = (SupervisedTraining(artifact_dir, dataloader_train, dataloader_test)
                .metric_train_numeric(AccuracyMetric().with_pad_token(pad))
                .metric_valid_numeric(AccuracyMetric().with_pad_token(pad))
                .metric_train_numeric(PerplexityMetric().with_pad_token(pad))
                .metric_valid_numeric(PerplexityMetric().with_pad_token(pad))
                .metric_train(LossMetric())
                .metric_valid(LossMetric())
                .metric_train_numeric(LearningRateMetric())
                .with_file_checkpointer(CompactRecorder())
                .grads_accumulation(accum)
                .num_epochs(config.num_epochs)
                .summary())
    result = training.launch(Learner(model, optim, lr_scheduler))
    config.save(f"{artifact_dir}/config.json")
    result.model.save_file(f"{artifact_dir}/model", DefaultRecorder())
    return result


def main(argv: list[str] | None = None) -> LearningResult:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = Path(os.environ.get("BURNLIKE_DATA", "data")) / "shakespeare_char" / "input.txt"
    parser.add_argument("--data", type=Path, default=default_data, help="a text file; its paragraphs are the items")
    parser.add_argument("--artifact-dir", default="/tmp/text-generation")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=6)
    parser.add_argument("--accum", type=int, default=6, help="batches of gradients summed per optimizer step")
    parser.add_argument("--max-seq-length", type=int, default=512)
    parser.add_argument("--d-model", type=int, default=384)
    parser.add_argument("--d-ff", type=int, default=1536)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--train-samples", type=int, default=10_000, help="SamplerDataset size per train epoch")
    parser.add_argument("--test-samples", type=int, default=1000, help="SamplerDataset size per test epoch")
    parser.add_argument("--num-workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"{args.data}: no such text file (give --data, or set BURNLIKE_DATA to a folder holding "
                         "shakespeare_char/input.txt)")
    burnlike.seed(args.seed)
    items = paragraphs(args.data)
    split = max(1, len(items) * 9 // 10)
    tokenizer = CharTokenizer([item.text for item in items])
    config = ExperimentConfig(
        TransformerEncoderConfig(args.d_model, args.d_ff, args.heads, args.layers, norm_first=True),
        AdamConfig(weight_decay=WeightDecayConfig(1.0e-6)), max_seq_length=args.max_seq_length,
        batch_size=args.batch_size, num_epochs=args.epochs)
    return train(InMemDataset(items[:split]), InMemDataset(items[split:]), config, args.artifact_dir, tokenizer,
                 (args.train_samples, args.test_samples), args.accum, args.num_workers, args.device)


if __name__ == "__main__":
    main()
