"""What the app's console shows: the progress lines, the summary table, warnings, and the few INFO
lines a user acts on (flagged `extra=CONSOLE`); every INFO line still goes to the run's train.log.

Hydra's job logging sends the root logger's records both to the console and to `train.log`; this
narrows the console handler only, so Lightning's banners ("GPU available: ...") and burnlike's
per-epoch and per-checkpoint notes stay in the file instead of interleaving with the progress lines.
"""

from __future__ import annotations

import logging

CONSOLE = {"console": True}  # `log.info(..., extra=CONSOLE)`: shown on the console too


class ConsoleFilter(logging.Filter):
    """Warnings and worse, and records flagged `console`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or bool(getattr(record, "console", False))


_FILTER = ConsoleFilter()


def narrow_console() -> None:
    """Keep one console handler (Hydra's, not the one `import lightning` adds to its own logger,
    which would print every Lightning line twice) and give it the filter (idempotent)."""
    import lightning  # noqa: F401  (the handler is added on import)

    root = logging.getLogger()
    if not root.handlers:  # not under Hydra's logging: leave logging as the caller set it
        return
    lightning_logger = logging.getLogger("lightning")
    for handler in list(lightning_logger.handlers):
        if type(handler) is logging.StreamHandler:
            lightning_logger.removeHandler(handler)
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
