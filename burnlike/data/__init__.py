"""Burn's `burn::data`: `Batcher`, `DataLoaderBuilder`, datasets, and the MNIST dataset and batcher."""

from burnlike.data.dataloader import Batcher, DataLoaderBuilder, DeviceDataLoader
from burnlike.data.dataset import Dataset, InMemDataset
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
    "DeviceDataLoader",
    "Dataset",
    "InMemDataset",
    "MnistBatch",
    "MnistBatcher",
    "MnistDataset",
    "MnistFormatError",
    "MnistItem",
    "MnistItems",
    "MnistNotFoundError",
    "data_root",
]
