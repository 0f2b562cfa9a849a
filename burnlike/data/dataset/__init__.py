"""Burn's `burn::data::dataset`: the `Dataset` protocol, in-memory/SQLite/data-frame/image/text/fake
datasets, the Hugging Face loader and the transforms over them. Every dataset is also a torch
map-style dataset (it goes to a DataLoader)."""

from burnlike.data.dataset.base import Dataset, WrappedDataset, as_dataset, fetch_many
from burnlike.data.dataset.cifar import CifarBinaryDataset, CifarDataset, CifarType
from burnlike.data.dataset.dataframe import DataframeDataset
from burnlike.data.dataset.decode import decode_image
from burnlike.data.dataset.errors import (
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    ImageDecodeError,
    MissingColumnError,
)
from burnlike.data.dataset.fake import FakeDataset
from burnlike.data.dataset.huggingface import HuggingfaceDatasetLoader
from burnlike.data.dataset.in_memory import InMemDataset
from burnlike.data.dataset.nlp import (
    AgNewsDataset,
    AgNewsItem,
    TextClassificationItem,
    TextCsvDataset,
    TextData,
    TextDatasetItem,
    TextFolderDataset,
)
from burnlike.data.dataset.rows import column
from burnlike.data.dataset.sqlite import SqliteDataset, SqliteDatasetStorage, SqliteDatasetWriter
from burnlike.data.dataset.table import TabularDataset, TabularItem, TabularItems
from burnlike.data.dataset.token_windows import TokenWindows, TokenWindowsDataset
from burnlike.data.dataset.transform import (
    ComposedDataset,
    Mapper,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    SamplerDatasetOptions,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
)
from burnlike.data.dataset.vision import (
    Annotation,
    BoundingBox,
    BoundingBoxes,
    ImageDatasetItem,
    ImageFolderDataset,
    ImageItems,
    Label,
    MultiLabel,
    SegmentationMask,
)

__all__ = [
    "AgNewsDataset",
    "AgNewsItem",
    "Annotation",
    "BoundingBox",
    "BoundingBoxes",
    "CifarBinaryDataset",
    "CifarDataset",
    "CifarType",
    "ComposedDataset",
    "DataframeDataset",
    "Dataset",
    "DatasetError",
    "DatasetNotFoundError",
    "EmptySplitError",
    "FakeDataset",
    "HuggingfaceDatasetLoader",
    "ImageDatasetItem",
    "ImageDecodeError",
    "ImageFolderDataset",
    "ImageItems",
    "InMemDataset",
    "Label",
    "Mapper",
    "MapperDataset",
    "MissingColumnError",
    "MultiLabel",
    "PartialDataset",
    "SamplerDataset",
    "SamplerDatasetOptions",
    "SegmentationMask",
    "SelectionDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetStorage",
    "SqliteDatasetWriter",
    "TabularDataset",
    "TabularItem",
    "TabularItems",
    "TextClassificationItem",
    "TextCsvDataset",
    "TextData",
    "TextDatasetItem",
    "TextFolderDataset",
    "TokenWindows",
    "TokenWindowsDataset",
    "WindowsDataset",
    "WrappedDataset",
    "as_dataset",
    "column",
    "decode_image",
    "fetch_many",
]
