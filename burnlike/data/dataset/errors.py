"""The errors a dataset raises for bad input; each message names the file, column or split at fault."""

from __future__ import annotations


class DatasetError(ValueError):
    """Data that can't be read as asked (a bad value, a missing column, an image that won't decode)."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A folder, file or split (SQLite table) that isn't there."""


class MissingColumnError(DatasetError):
    """A column (CSV header, SQLite table, JSON key) that an item needs is absent."""


class EmptySplitError(DatasetError):
    """A split with no items: nothing to train or validate on."""


class ImageDecodeError(DatasetError):
    """A file that doesn't decode as an image (corrupt, truncated, or not an image at all)."""
