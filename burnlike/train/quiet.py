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
(Lightning's "`weights_only` was not set" at each checkpoint is answered at the call instead:
`FileCheckpointer` asks for the full state, which resuming needs.)
"""

from __future__ import annotations

import logging
import warnings

TIPS = ("💡 Tip:", "Tip: For seamless cloud", "litmodels")
WARNINGS = (
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    r"Your `val_dataloader`'s sampler has shuffling enabled",
    r"The number of training batches \(\d+\) is smaller than the logging interval",
    r"It is recommended to use `self.log\('(train|valid|test)/[^']*', \.\.\., sync_dist=True\)`",
)
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
