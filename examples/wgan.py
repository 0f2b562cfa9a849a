"""Burn's `examples/wgan`, in Python: a Wasserstein GAN learns to draw MNIST digits.

`LayerBlock`, `Generator`, `Discriminator`, `ModelConfig` and the `Clip` mapper are Burn's
`src/model.rs` field for field (Linear, BatchNorm with epsilon 0.8, LeakyRelu 0.2; the critic's weights
clipped to ±clip_value after each of its steps with `discriminator.map(clip)`); the batcher is Burn's
`src/dataset.rs` (pixels to [-1, 1]); the loop is Burn's `src/training.rs`: RMSProp (alpha 0.99, no
momentum, epsilon 8e-8) at lr 3e-4, one generator step per 5 critic steps, 25 generated digits saved
as `image-<epoch>.png` every 10 epochs, `generator.mpk` and `discriminator.mpk` at the end;
`generate` is Burn's `src/infer.rs`. MNIST is read from ROOT/MNIST/raw (default $BURNLIKE_DATA).

    python examples/wgan.py [--data ROOT] [--epochs 200] [--artifact-dir /tmp/wgan-mnist]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import Tensor

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder, MnistDataset, MnistItem
from burnlike.data.batch import TensorBatch
from burnlike.module import Module, ModuleMapper, Param
from burnlike.nn import BatchNormConfig, LeakyReluConfig, LinearConfig, Tanh
from burnlike.optim import GradientsParams, RmsPropConfig
from burnlike.record import CompactRecorder
from burnlike.train import backward

# --- src/model.rs ----------------------------------------------------------------------------------


class LayerBlock(Module):
    __burn_fields__ = ("fc", "bn", "leakyrelu")

    def __init__(self, input: int, output: int, device: Any = None) -> None:
        super().__init__()
        self.fc = LinearConfig(input, output, bias=True).init(device)
        self.bn = BatchNormConfig(output, epsilon=0.8).init(device)
        self.leakyrelu = LeakyReluConfig(negative_slope=0.2).init()

    def forward(self, input: Tensor) -> Tensor:
        output = self.fc(input)  # output: [Batch, x]
        output = self.bn(output)  # output: [Batch, x]
        out: Tensor = self.leakyrelu(output)  # output: [Batch, x]
        return out


class Generator(Module):
    __burn_fields__ = ("layer1", "layer2", "layer3", "layer4", "fc", "tanh")

    def __init__(self, layers: list[LayerBlock], fc: Module) -> None:
        super().__init__()
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = fc
        self.tanh = Tanh.new()

    def forward(self, noise: Tensor) -> Tensor:
        output = self.layer1(noise)
        output = self.layer2(output)
        output = self.layer3(output)
        output = self.layer4(output)
        output = self.fc(output)
        out: Tensor = self.tanh(output)  # [batch_size, channels*height*width]
        return out


class Discriminator(Module):
    __burn_fields__ = ("fc1", "leakyrelu1", "fc2", "leakyrelu2", "fc3")

    def __init__(self, pixels: int, device: Any = None) -> None:
        super().__init__()
        self.fc1 = LinearConfig(pixels, 512).init(device)
        self.leakyrelu1 = LeakyReluConfig(negative_slope=0.2).init()
        self.fc2 = LinearConfig(512, 256).init(device)
        self.leakyrelu2 = LeakyReluConfig(negative_slope=0.2).init()
        self.fc3 = LinearConfig(256, 1).init(device)

    def forward(self, images: Tensor) -> Tensor:
        output = images.flatten(1, 3)  # output: [batch, channels*height*width]
        output = self.fc1(output)  # output: [batch, 512]
        output = self.leakyrelu1(output)  # output: [batch, 512]
        output = self.fc2(output)  # output: [batch, 256]
        output = self.leakyrelu2(output)  # output: [batch, 256]
        out: Tensor = self.fc3(output)  # output: [batch, 1]
        return out


@config
class ModelConfig:
    latent_dim: int = 100
    image_size: int = 28
    channels: int = 1

    def init(self, device: Any = None) -> tuple[Generator, Discriminator]:
        layers = [LayerBlock(self.latent_dim, 128, device), LayerBlock(128, 256, device),
                  LayerBlock(256, 512, device), LayerBlock(512, 1024, device)]
        pixels = self.channels * self.image_size * self.image_size
        generator = Generator(layers, LinearConfig(1024, pixels, bias=True).init(device))
        return generator, Discriminator(pixels, device)


class Clip(ModuleMapper):
    """Clamps every float parameter to [min, max], keeping whether it requires gradients."""

    def __init__(self, min: float, max: float) -> None:  # noqa: A002 - Burn's field names
        self.min, self.max = min, max

    def map_float(self, param: Param) -> Param:
        id, tensor, mapper = param.consume()  # noqa: A001
        is_require_grad = tensor.requires_grad
        tensor = tensor.detach().clamp(self.min, self.max)  # Tensor::from_inner(tensor.inner().clamp(..))
        if is_require_grad:
            tensor = tensor.requires_grad_()
        return Param.from_mapped_value(id, tensor, mapper)


# --- src/dataset.rs --------------------------------------------------------------------------------


@dataclasses.dataclass
class MnistBatch(TensorBatch):
    images: Tensor  # [B, 1, 28, 28] in [-1, 1]
    targets: Tensor


class MnistBatcher:
    def batch(self, items: list[MnistItem], device: Any = None) -> MnistBatch:
        images = torch.stack([item.image for item in items]).to(device=device, dtype=torch.float32)
        images = ((images.reshape(-1, 1, 28, 28) / 255) - 0.5) / 0.5
        targets = torch.tensor([item.label for item in items], dtype=torch.int64, device=device)
        return MnistBatch(images, targets)


# --- src/training.rs -------------------------------------------------------------------------------


@config
class TrainingConfig:
    model: ModelConfig
    optimizer: RmsPropConfig
    num_epochs: int = 200
    batch_size: int = 512
    num_workers: int = 8
    seed: int = 5
    lr: float = 3e-4
    num_critic: int = 5
    clip_value: float = 0.01
    sample_interval: int = 10


def create_artifact_dir(artifact_dir: str) -> None:
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def save_image(images: Tensor, nrow: int, path: str | Path) -> None:
    """`images` [n, height, width, channels] in [0, 1] as a grid of `nrow` columns (RGB PNG)."""
    ncol = math.ceil(images.shape[0] / nrow)
    height, width = images.shape[1], images.shape[2]
    grid = np.zeros((ncol * height, nrow * width, 3), dtype=np.uint8)
    pixels = (images.detach().cpu().float().numpy() * 255).astype(np.uint8)
    for row in range(nrow):
        for col in range(ncol):
            index = row * nrow + col
            if index < images.shape[0]:
                grid[col * height:(col + 1) * height, row * width:(row + 1) * width] = pixels[index]
    Image.fromarray(grid).save(path)


def scaled(fake_images: Tensor) -> Tensor:
    """The first 25 images as [n, H, W, C], min-max scaled to [0, 1] (plus half a step), as Burn saves them."""
    fake_images = fake_images.permute(0, 2, 3, 1)[:25]
    fake_images = (fake_images - fake_images.min()) / (fake_images.max() - fake_images.min())
    return (fake_images + 0.5 / 255.0).clamp(0.0, 1.0)


def train(artifact_dir: str, config: TrainingConfig, device: str = "cpu", root: str | None = None) -> dict[str, Any]:
    create_artifact_dir(artifact_dir)
    clip = Clip(min=-config.clip_value, max=config.clip_value)
    config.save(f"{artifact_dir}/config.json")
    burnlike.seed(device, config.seed)

    generator, discriminator = config.model.init(device)
    optimizer_g = config.optimizer.init()
    optimizer_d = config.optimizer.init()
    dataset = MnistDataset.train(root)
    dataloader_train = (DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size).shuffle(config.seed)
                        .num_workers(config.num_workers).build(dataset))
    shape = (config.batch_size, config.model.channels, config.model.image_size, config.model.image_size)
    losses: dict[str, list[float]] = {"d": [], "g": []}
    for epoch in range(config.num_epochs):
        for iteration, batch in enumerate(dataloader_train):
            batch = batch.to(device)
            noise = torch.randn(config.batch_size, config.model.latent_dim, device=device)
            fake_images = generator.forward(noise).detach().reshape(shape)
            loss_d = -discriminator.forward(batch.images).mean() + discriminator.forward(fake_images).mean()
            grads = GradientsParams.from_grads(backward(loss_d), discriminator)
            discriminator = optimizer_d.step(config.lr, discriminator, grads)
            discriminator = discriminator.map(clip)

            if iteration % config.num_critic == 0:
                critic_fake_images = generator.forward(noise).reshape(shape)
                loss_g = -discriminator.forward(critic_fake_images).mean()
                grads = GradientsParams.from_grads(backward(loss_g), generator)
                generator = optimizer_g.step(config.lr, generator, grads)
                batch_num = math.ceil(len(dataset) / config.batch_size)
                losses["d"].append(loss_d.item())
                losses["g"].append(loss_g.item())
                print(f"[Epoch {epoch + 1}/{config.num_epochs}] [Batch {iteration}/{batch_num}] "
                      f"[D loss: {loss_d.item()}] [G loss: {loss_g.item()}]")
            if epoch % config.sample_interval == 0 and iteration == 0:
                save_image(scaled(fake_images), 5, f"{artifact_dir}/image-{epoch}.png")

    generator.save_file(f"{artifact_dir}/generator", CompactRecorder())
    discriminator.save_file(f"{artifact_dir}/discriminator", CompactRecorder())
    return {"generator": generator, "discriminator": discriminator, "losses": losses}


# --- src/infer.rs ----------------------------------------------------------------------------------


def generate(artifact_dir: str, device: str = "cpu") -> Tensor:
    """The saved generator draws 25 digits into `fake_image.png`; returns them."""
    config = TrainingConfig.load(f"{artifact_dir}/config.json")
    generator, _ = config.model.init(device)
    generator = generator.load_file(f"{artifact_dir}/generator", CompactRecorder(), device).valid()
    noise = torch.randn(config.batch_size, config.model.latent_dim, device=device)
    with torch.no_grad():
        fake_images = generator.forward(noise).reshape(
            config.batch_size, config.model.channels, config.model.image_size, config.model.image_size)
    images = scaled(fake_images)
    save_image(images, 5, f"{artifact_dir}/fake_image.png")
    return images


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="folder holding MNIST/raw (default: $BURNLIKE_DATA or ./data)")
    parser.add_argument("--artifact-dir", default="/tmp/wgan-mnist", help="removed first, then the run's files")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--num-workers", type=int, default=8)
    args = parser.parse_args(argv)
    optimizer = RmsPropConfig(alpha=0.99, momentum=0.0, epsilon=0.00000008, weight_decay=None, centered=False)
    config = TrainingConfig(ModelConfig(), optimizer, num_epochs=args.epochs, batch_size=args.batch_size,
                            num_workers=args.num_workers)
    out = train(args.artifact_dir, config, args.device, args.data)
    out["generated"] = generate(args.artifact_dir, args.device)
    return out


if __name__ == "__main__":
    main()
