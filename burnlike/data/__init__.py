"""Burn's `burn::data`: `Batcher`, `DataLoaderBuilder`, and the MNIST dataset and batcher."""

from burnlike.data.dataloader import Batcher, DataLoaderBuilder
from burnlike.data.mnist import (
    MnistBatch,
    MnistBatcher,
    MnistDataset,
    MnistFormatError,
    MnistItem,
    MnistItems,
    MnistNotFoundError,
    data_root,
)

__all__ = [
    "Batcher",
    "DataLoaderBuilder",
    "MnistBatch",
    "MnistBatcher",
    "MnistDataset",
    "MnistFormatError",
    "MnistItem",
    "MnistItems",
    "MnistNotFoundError",
    "data_root",
]
