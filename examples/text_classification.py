"""Burn's `examples/text-classification`, in Python: a small transformer encoder classifies texts.

Burn's example trains on AG News (or DBpedia) from the Hugging Face hub with BERT's tokenizer:
token and position embeddings averaged, a `TransformerEncoder` (d_model 256, d_ff 1024, 8 heads,
4 layers, pre-norm, quiet softmax) with a padding mask, the class read from the first position; `SamplerDataset`s
of 50,000 train and 5,000 test samples per epoch, batch 8, Adam (weight decay 5e-5) under a Noam
schedule (1e-2, 1,000 warmup steps). Here the texts come from a folder per class
(`--data DIR` with `train/<class>/*.txt` and `test/<class>/*.txt`, Burn's `TextFolderDataset`) or
from CSVs (`--train-csv`, `--test-csv`, AG News's own format works with `--text-column
description --label-column class`), and the tokenizer is built in (UTF-8 bytes, or `--tokenizer
char`): nothing is downloaded. The model is Burn's `model.rs` field for field, built with
`burnlike.nn` (Burn's encoder: GELU, Burn's attention and its quiet softmax), so its record is Burn's.

    python examples/text_classification.py --data /data/news [--epochs 5] [--artifact-dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import burnlike
from burnlike.config import config
from burnlike.data import (
    ByteTokenizer,
    CharTokenizer,
    DataLoaderBuilder,
    SeqLengthOption,
    TextClassificationBatch,
    TextClassificationBatcher,
    TextClassificationInferenceBatch,
)
from burnlike.data.dataset import SamplerDataset, TextCsvDataset
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig, EmbeddingConfig, LinearConfig
from burnlike.nn.transformer import TransformerEncoderConfig, TransformerEncoderInput
from burnlike.optim import AdamConfig, NoamLrSchedulerConfig, WeightDecayConfig
from burnlike.record import CompactRecorder
from burnlike.train import ClassificationOutput, LearnerBuilder, TrainOutput, TrainStep, ValidStep, backward
from burnlike.train.metric import AccuracyMetric, IterationSpeedMetric, LearningRateMetric, LossMetric


@config
class TextClassificationModelConfig:
    transformer: TransformerEncoderConfig
    n_classes: int
    vocab_size: int
    seq_length: SeqLengthOption

    def init(self, device: Any = None) -> TextClassificationModel:
        return TextClassificationModel(self, device)


class TextClassificationModel(Module, TrainStep[TextClassificationBatch, ClassificationOutput],
                              ValidStep[TextClassificationBatch, ClassificationOutput]):
    __burn_fields__ = ("transformer", "embedding_token", "embedding_pos", "output", "n_classes")

    def __init__(self, config: TextClassificationModelConfig, device: Any = None) -> None:
        super().__init__()
        d_model = config.transformer.d_model
        self.output = LinearConfig(d_model, config.n_classes).init(device)
        self.transformer = config.transformer.init(device)
        self.embedding_token = EmbeddingConfig(config.vocab_size, d_model).init(device)
        if config.seq_length.length is None:
            raise ValueError("Text classification requires a max sequence length because of the embedding strategy.")
        self.embedding_pos = EmbeddingConfig(config.seq_length.length, d_model).init(device)
        self.n_classes = config.n_classes

    def encode(self, tokens: Tensor, mask_pad: Tensor) -> Tensor:
        """Class logits from the encoder's output at the first position."""
        batch_size, seq_length = tokens.shape
        index_positions = torch.arange(seq_length, device=tokens.device).reshape(1, seq_length).repeat(batch_size, 1)
        embedding_positions = self.embedding_pos(index_positions)
        embedding_tokens = self.embedding_token(tokens)
        embedding = (embedding_positions + embedding_tokens) / 2
        encoded = self.transformer(TransformerEncoderInput(embedding).mask_pad(mask_pad))
        output = self.output(encoded)
        return output[:, 0:1].reshape(batch_size, self.n_classes)

    def forward(self, item: TextClassificationBatch) -> ClassificationOutput:
        output_classification = self.encode(item.tokens, item.mask_pad)
        loss = CrossEntropyLossConfig().init(output_classification.device).forward(output_classification, item.labels)
        return ClassificationOutput(loss, output_classification, item.labels)

    def infer(self, item: TextClassificationInferenceBatch) -> Tensor:
        return torch.softmax(self.encode(item.tokens, item.mask_pad), dim=1)

    def train_step(self, item: TextClassificationBatch) -> TrainOutput[ClassificationOutput]:
        output = self.forward(item)
        return TrainOutput(self, backward(output.loss), output)

    def valid_step(self, item: TextClassificationBatch) -> ClassificationOutput:
        return self.forward(item)


@config
class ExperimentConfig:
    transformer: TransformerEncoderConfig
    optimizer: AdamConfig
    seq_length: SeqLengthOption = SeqLengthOption.Fixed(256)
    batch_size: int = 8
    num_epochs: int = 5


def create_artifact_dir(artifact_dir: str) -> None:
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def load(args: argparse.Namespace) -> tuple[TextCsvDataset, TextCsvDataset]:
    """The train and test splits (test numbered with train's classes)."""
    if args.data is not None:
        train = TextCsvDataset.from_folder(args.data / "train")
        test = TextCsvDataset.from_folder(args.data / "test")
        if test.classes != train.classes:
            raise SystemExit(f"{args.data}: test classes {test.classes} differ from train classes {train.classes}")
        return train, test
    if args.train_csv is None or args.test_csv is None:
        raise SystemExit("give --data DIR (train/ and test/ text folders) or --train-csv and --test-csv")
    train = TextCsvDataset.from_csv(args.train_csv, args.text_column, args.label_column)
    test = TextCsvDataset.from_csv(args.test_csv, args.text_column, args.label_column, train.classes)
    return train, test


def train(artifact_dir: str, train_set: TextCsvDataset, test_set: TextCsvDataset, config: ExperimentConfig,
          tokenizer: Any, samples: tuple[int, int], device: str) -> TextClassificationModel:
    create_artifact_dir(artifact_dir)
    batcher = TextClassificationBatcher(tokenizer, config.seq_length)
    model = TextClassificationModelConfig(config.transformer, train_set.num_classes(), tokenizer.vocab_size(),
                                          config.seq_length).init(device)
    dataloader_train = DataLoaderBuilder(batcher).batch_size(config.batch_size).num_workers(1) \
        .build(SamplerDataset(train_set, samples[0]))
    dataloader_test = DataLoaderBuilder(batcher).batch_size(config.batch_size).num_workers(1) \
        .build(SamplerDataset(test_set, samples[1]))
    lr_scheduler = NoamLrSchedulerConfig(1e-2, warmup_steps=1000, model_size=config.transformer.d_model)
    learner = (LearnerBuilder(artifact_dir)
               .metric_train(IterationSpeedMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LearningRateMetric())
               .with_file_checkpointer(CompactRecorder())
               .devices([device]).num_epochs(config.num_epochs).summary()
               .build(model, config.optimizer.init(), lr_scheduler))
    result = learner.fit(dataloader_train, dataloader_test)
    config.save(f"{artifact_dir}/config.json")
    result.model.save_file(f"{artifact_dir}/model", CompactRecorder())
    return result.model


def infer(model: TextClassificationModel, tokenizer: Any, seq_length: SeqLengthOption, classes: Sequence[str],
          samples: Sequence[str]) -> list[str]:
    batcher = TextClassificationBatcher(tokenizer, seq_length)
    device = next(model.parameters()).device
    with torch.no_grad():
        predictions = model.valid().infer(batcher.batch(list(samples), device))
    names = []
    for text, probabilities in zip(samples, predictions):
        label = int(probabilities.argmax())
        names.append(classes[label])
        print(f"Text: {text[:60]!r}\nPrediction: {classes[label]} ({probabilities[label].item():.2f})")
    return names


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None, help="folder holding train/<class>/*.txt and test/...")
    parser.add_argument("--train-csv", default=None)
    parser.add_argument("--test-csv", default=None)
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--tokenizer", choices=["byte", "char"], default="byte")
    parser.add_argument("--artifact-dir", default="/tmp/text-classification")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--train-samples", type=int, default=50_000, help="SamplerDataset size per train epoch")
    parser.add_argument("--test-samples", type=int, default=5_000, help="SamplerDataset size per test epoch")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    burnlike.seed(args.seed)
    train_set, test_set = load(args)
    tokenizer = ByteTokenizer() if args.tokenizer == "byte" else CharTokenizer.from_texts(i.text for i in train_set.items)
    config = ExperimentConfig(
        TransformerEncoderConfig(args.d_model, args.d_ff, args.heads, args.layers, norm_first=True, quiet_softmax=True),
        AdamConfig(weight_decay=WeightDecayConfig(5e-5)), seq_length=SeqLengthOption.Fixed(args.seq_length),
        batch_size=args.batch_size,
        num_epochs=args.epochs)
    model = train(args.artifact_dir, train_set, test_set, config, tokenizer,
                  (args.train_samples, args.test_samples), args.device)
    samples = [item.text for item in test_set.items[:3]]
    predicted = infer(model, tokenizer, config.seq_length, train_set.classes, samples)
    return {"model": model, "predicted": predicted, "expected": [train_set.classes[i.label] for i in test_set.items[:3]]}


if __name__ == "__main__":
    main()
