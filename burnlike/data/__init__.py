"""Burn's `burn::data`: `Batcher`, `DataLoaderBuilder`, datasets (`burnlike.data.dataset`), the MNIST
dataset and batcher, batchers for images, text and tables, and Tiny Shakespeare for a character
language model."""

from burnlike.data.dataloader import Batcher, DataLoaderBuilder, DeviceDataLoader
from burnlike.data.dataset import Dataset, InMemDataset
from burnlike.data.dataset.in_memory import data_root
from burnlike.data.mnist import (
    MnistBatch,
    MnistBatcher,
    MnistDataset,
    MnistFormatError,
    MnistItem,
    MnistItems,
    MnistNotFoundError,
)
from burnlike.data.shakespeare import ShakespeareChar
from burnlike.data.tabular import TabularBatch, TabularBatcher
from burnlike.data.text import (
    ByteTokenizer,
    CharTokenizer,
    CharVocab,
    GeneratePaddingMask,
    SeqLengthOption,
    TextClassificationBatch,
    TextClassificationBatcher,
    TextClassificationInferenceBatch,
    Tokenizer,
    TokenWindowBatch,
    TokenWindowsBatcher,
    generate_padding_mask,
)
from burnlike.data.vision import ImageBatch, ImageBatcher

__all__ = [
    "Batcher",
    "ByteTokenizer",
    "CharTokenizer",
    "CharVocab",
    "DataLoaderBuilder",
    "DeviceDataLoader",
    "Dataset",
    "GeneratePaddingMask",
    "ImageBatch",
    "ImageBatcher",
    "InMemDataset",
    "MnistBatch",
    "MnistBatcher",
    "MnistDataset",
    "MnistFormatError",
    "MnistItem",
    "MnistItems",
    "MnistNotFoundError",
    "SeqLengthOption",
    "ShakespeareChar",
    "TabularBatch",
    "TabularBatcher",
    "TextClassificationBatch",
    "TextClassificationBatcher",
    "TextClassificationInferenceBatch",
    "TokenWindowBatch",
    "TokenWindowsBatcher",
    "Tokenizer",
    "data_root",
    "generate_padding_mask",
]
