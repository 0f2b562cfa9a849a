"""Messages from underneath that don't apply to a burnlike run, answered or filtered by name.

Each filter matches one known message exactly; anything else from Lightning or torch still shows.
- Lightning's tips to install litlogger / litmodels: advertisements, not problems.
- "`isinstance(treespec, LeafSpec)` is deprecated": torch deprecating an API Lightning's own
  `_pytree` still calls; nothing a user's code does or can change.
- "val_dataloader's sampler has shuffling enabled": Burn's guide shuffles its test loader; burnlike's
  validation metrics are count-weighted epoch means, which the order of batches cannot change.
- "The number of training batches is smaller than the logging interval": about Lightning's own step
  logging, which burnlike doesn't use (the loggers get burnlike's values, every_n_steps apart).
- MLflowLogger's warning "Experiment with name ... not found. Creating it.": a first run's normal start.
- "It is recommended to use `self.log('valid/Loss', ..., sync_dist=True)`" under DDP: the epoch values
  burnlike hands to `self.log` are the metric store's, already synced across ranks by the metrics.
- "You're resuming from a checkpoint that ended before the epoch ended and your dataloader is not
  resumable", only while a fit resumes a train loader that continues exactly (`resume_at`: a
  `DataLoaderBuilder` loader starts at the epoch's order, past the batches already trained).
  Lightning asks for its `state_dict` interface; burnlike positions the loader itself. Any other
  loader keeps the warning: its order after a resume is its own.
(Lightning's "`weights_only` was not set" at each checkpoint is answered at the call instead:
`FileCheckpointer` asks for the full state, which resuming needs.)
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

TIPS = ("💡 Tip:", "Tip: For seamless cloud", "litmodels")
WARNINGS = (
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    r"Your `val_dataloader`'s sampler has shuffling enabled",
    r"The number of training batches \(\d+\) is smaller than the logging interval",
    r"It is recommended to use `self.log\('(train|valid|test)/[^']*', \.\.\., sync_dist=True\)`",
)
NOT_RESUMABLE = r"You're resuming from a checkpoint that ended before the epoch ended and your dataloader is not resumable"
_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero")


class DropMessages(logging.Filter):
    """Drop log records containing any of `texts`."""

    def __init__(self, texts: tuple[str, ...]) -> None:
        super().__init__()
        self.texts = texts

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in self.texts)


_FILTERS = {name: DropMessages(TIPS) for name in _LOGGERS}
_FILTERS["lightning.pytorch.loggers.mlflow"] = DropMessages(("not found. Creating it.",))


def quiet_lightning() -> None:
    """Install the filters (idempotent: a second call adds nothing)."""
    for name, drop in _FILTERS.items():
        logger = logging.getLogger(name)
        if drop not in logger.filters:
            logger.addFilter(drop)
    for message in WARNINGS:
        warnings.filterwarnings("ignore", message=message)


def ignore_not_resumable() -> None:
    """Drop Lightning's "your dataloader is not resumable" warning (for a fit whose loader resumes
    exactly: `resuming_exactly`, or a process a spawned fit runs in)."""
    warnings.filterwarnings("ignore", message=NOT_RESUMABLE)


@contextlib.contextmanager
def resuming_exactly(exact: bool) -> Iterator[None]:
    """Within the block, when `exact`, `ignore_not_resumable`; the warning filters are put back after."""
    if not exact:
        yield
        return
    with warnings.catch_warnings():
        ignore_not_resumable()
        yield
