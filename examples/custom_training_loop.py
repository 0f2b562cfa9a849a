"""The Burn book's "Custom Training Loops" chapter (`examples/custom-training-loop`), in Python.

The guide's model and data, trained without the Learner: forward, loss, `backward`, gradients
mapped to parameters with `GradientsParams`, `optim.step(lr, model, grads)`, and a validation loop
on `model.valid()`. `--grads-accumulation N` sums N batches' gradients with `GradientsAccumulator`
before each step, as the chapter's aside shows.

    python examples/custom_training_loop.py [--data ROOT] [--epochs 10] [--limit-batches N]

MNIST is read from ROOT/MNIST/raw (default: $BURNLIKE_DATA, else ./data); see the README.
"""

from __future__ import annotations

import argparse

import torch
from torch import Tensor

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import ModelConfig
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig
from burnlike.optim import AdamConfig, GradientsAccumulator, GradientsParams
from burnlike.train import backward


@config
class MnistTrainingConfig:
    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    lr: float = 1e-4


def accuracy(output: Tensor, targets: Tensor) -> float:
    """Our own accuracy metric calculation (percent), as the chapter writes it."""
    predictions = output.argmax(1)
    return (predictions == targets).sum().item() / targets.numel() * 100.0


def run(device: str, config: MnistTrainingConfig, root: str | None = None, limit_batches: int | None = None,
        grads_accumulation: int = 1) -> tuple[Module, float]:
    """Train and validate; returns the model and the last epoch's mean validation accuracy."""
    burnlike.seed(config.seed)

    # Create the model and optimizer.
    model = config.model.init(device)
    optim = config.optimizer.init()

    # Create the batcher.
    batcher = MnistBatcher()

    # Create the dataloaders.
    dataloader_train = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(MnistDataset.train(root)))
    dataloader_test = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
                       .num_workers(config.num_workers).build(MnistDataset.test(root)))

    loss_fn = CrossEntropyLossConfig().init(device)
    accumulator = GradientsAccumulator()
    valid_accuracy = 0.0
    # Iterate over our training and validation loop for X epochs.
    for epoch in range(1, config.num_epochs + 1):
        # Implement our training loop.
        model.train()
        for iteration, batch in enumerate(dataloader_train):
            if limit_batches is not None and iteration >= limit_batches:
                break
            batch = batch.to(device)
            output = model.forward(batch.images)
            loss = loss_fn.forward(output, batch.targets)
            print(f"[Train - Epoch {epoch} - Iteration {iteration}] Loss {loss.item():.3f} | "
                  f"Accuracy {accuracy(output, batch.targets):.3f} %")

            # Gradients for the current backward pass
            grads = backward(loss)
            # Gradients linked to each parameter of the model.
            grads = GradientsParams.from_grads(grads, model)
            if grads_accumulation > 1:
                accumulator.accumulate(model, grads)
                if (iteration + 1) % grads_accumulation:
                    continue
                grads = accumulator.grads()  # Pop the accumulated gradients.
            # Update the model using the optimizer.
            model = optim.step(config.lr, model, grads)

        # Get the model without autodiff.
        model_valid = model.valid()

        # Implement our validation loop.
        accuracies = []
        with torch.no_grad():
            for iteration, batch in enumerate(dataloader_test):
                if limit_batches is not None and iteration >= limit_batches:
                    break
                batch = batch.to(device)
                output = model_valid.forward(batch.images)
                loss = loss_fn.forward(output, batch.targets)
                accuracies.append(accuracy(output, batch.targets))
                print(f"[Valid - Epoch {epoch} - Iteration {iteration}] Loss {loss.item()} | "
                      f"Accuracy {accuracies[-1]}")
        valid_accuracy = sum(accuracies) / max(len(accuracies), 1)
    return model, valid_accuracy


def main(argv: list[str] | None = None) -> tuple[Module, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=4)
    parser.add_argument("--limit-batches", type=int, default=None, help="stop each loop after N batches")
    parser.add_argument("--grads-accumulation", type=int, default=1, help="batches per optimizer step")
    args = parser.parse_args(argv)
    # Create the configuration.
    config = MnistTrainingConfig(ModelConfig(10, 1024), AdamConfig(), num_epochs=args.epochs,
                                 batch_size=args.batch_size, num_workers=args.num_workers)
    return run(args.device, config, args.data, args.limit_batches, args.grads_accumulation)


if __name__ == "__main__":
    main()
