"""Burn's dataset transforms (`burn::data::dataset::transform`): lazy views over another dataset."""

from burnlike.data.dataset.transform.composed import ComposedDataset
from burnlike.data.dataset.transform.mapper import Mapper, MapperDataset
from burnlike.data.dataset.transform.options import RngSource, SizeConfig
from burnlike.data.dataset.transform.partial import PartialDataset
from burnlike.data.dataset.transform.sampler import SamplerDataset, SamplerDatasetOptions
from burnlike.data.dataset.transform.selection import SelectionDataset, iota, shuffled_indices
from burnlike.data.dataset.transform.shuffle import ShuffledDataset
from burnlike.data.dataset.transform.window import WindowsDataset, window, windows

__all__ = [
    "ComposedDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "RngSource",
    "SamplerDataset",
    "SamplerDatasetOptions",
    "SelectionDataset",
    "ShuffledDataset",
    "SizeConfig",
    "WindowsDataset",
    "iota",
    "shuffled_indices",
    "window",
    "windows",
]
