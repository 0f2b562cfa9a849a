"""nanoGPT's shakespeare_char recipe (its README's CPU run), written with burnlike as a Burn user would.

A GPT of 4 layers, 4 heads and 128 wide reads 64 characters of Tiny Shakespeare at a time, batches
of 12, for 2000 iterations: AdamW (lr 1e-3, betas 0.9/0.99, weight decay 0.1 on 2-D weights only),
100 iterations of linear warmup then a cosine to 1e-4, gradients clipped to a global norm of 1,
validation on 20 batches every 250 iterations. Then the model writes a sample.

    python examples/shakespeare_char.py --artifact-dir /tmp/shakespeare_char [--device cpu] [--iters 2000]

The text is read from `$BURNLIKE_DATA/shakespeare_char/input.txt` (or `./data`). The same recipe
through the Hydra app: `python train.py experiment=shakespeare_char`.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import torch

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, ShakespeareChar, TokenWindowsBatcher
from burnlike.models.gpt import GptConfig
from burnlike.optim import AdamWConfig, GradientClippingConfig, warmup_cosine
from burnlike.record import CompactRecorder
from burnlike.train import Learner, LearnerBuilder
from burnlike.train.metric import LossMetric


@config
class TrainingConfig:
    model: GptConfig
    optimizer: AdamWConfig
    num_iterations: int = 2000
    valid_every: int = 250
    valid_batches: int = 20
    batch_size: int = 12
    seed: int = 42
    learning_rate: float = 1.0e-3
    min_learning_rate: float = 1.0e-4
    warmup_iterations: int = 100


def recipe(vocab_size: int = 65) -> TrainingConfig:
    """The README's CPU run: nanoGPT's optimizer settings on burnlike's AdamW config."""
    optimizer = AdamWConfig(beta_2=0.99, epsilon=1e-8, weight_decay=0.1, weight_decay_min_ndim=2,
                            grad_clipping=GradientClippingConfig.GlobalNorm(1.0))
    return TrainingConfig(GptConfig(vocab_size), optimizer)


def create_artifact_dir(artifact_dir: str) -> None:
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def dataloaders(config: TrainingConfig, corpus: ShakespeareChar) -> tuple[Any, Any]:
    """Windows of `block_size + 1` characters (the inputs and, shifted by one, the targets), in a
    seeded random order; each validation draws its own windows, as nanoGPT's evaluation does."""
    window = config.model.block_size + 1
    loader = DataLoaderBuilder(TokenWindowsBatcher()).batch_size(config.batch_size).shuffle(config.seed)
    return loader.drop_last().build(corpus.train(window)), loader.build(corpus.valid(window))


def learner(artifact_dir: str, config: TrainingConfig, device: str, progress_bar: bool = True) -> Learner:
    lr = warmup_cosine(config.learning_rate, config.warmup_iterations, config.num_iterations,
                       config.min_learning_rate)
    return (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .devices([device])
        .num_iterations(config.num_iterations)
        .valid_every(config.valid_every)
        .trainer_kwargs(limit_val_batches=config.valid_batches)
        .progress_bar(progress_bar)
        .summary()
        .build(config.model.init(device), config.optimizer.init(), lr)
    )


def train(artifact_dir: str, config: TrainingConfig, device: str, progress_bar: bool = True) -> float:
    """Train; returns the last validation's loss (the mean of its batches)."""
    create_artifact_dir(artifact_dir)
    config.save(f"{artifact_dir}/config.json")
    burnlike.seed(config.seed)

    corpus = ShakespeareChar.load()
    dataloader_train, dataloader_valid = dataloaders(config, corpus)
    result = learner(artifact_dir, config, device, progress_bar).fit(dataloader_train, dataloader_valid)
    result.model.save_file(f"{artifact_dir}/model", CompactRecorder())

    generator = torch.Generator(device).manual_seed(config.seed)
    sample = result.model.generate(corpus.vocab.encode("\n"), 500, temperature=0.8, top_k=200,  # type: ignore[operator]
                                   generator=generator)
    print(corpus.vocab.decode(sample))
    assert result.summary is not None
    last = result.summary.get("valid", "Loss")
    return last.epochs[max(last.epochs)] if last else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifact-dir", default="/tmp/shakespeare_char", help="where config, logs, checkpoints go")
    parser.add_argument("--device", default="cpu", help="'cpu', 'cuda', 'cuda:1'")
    parser.add_argument("--iters", type=int, default=2000, help="training iterations (a multiple of 250)")
    args = parser.parse_args()
    cfg = recipe().with_num_iterations(args.iters)  # type: ignore[attr-defined]
    loss = train(args.artifact_dir, cfg, args.device)
    print(f"valid loss after {args.iters} iterations: {loss:.4f}")


if __name__ == "__main__":
    main()
