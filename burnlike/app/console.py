"""What the app's console shows: the progress lines, the summary table, warnings, and the few INFO
lines a user acts on (flagged `extra=CONSOLE`); every INFO line still goes to the run's train.log.

Hydra's job logging sends the root logger's records both to the console and to `train.log`; this
narrows the console handler only, so Lightning's banners ("GPU available: ...") and burnlike's
per-epoch and per-checkpoint notes stay in the file instead of interleaving with the progress lines.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

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
    terminal = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    for handler in root.handlers:  # Hydra's console handler: a StreamHandler on stdout or stderr
        if type(handler) is logging.StreamHandler and handler.stream in terminal and _FILTER not in handler.filters:
            handler.addFilter(_FILTER)


def fail(message: str) -> None:
    """One `error:` line on stderr and exit status 2: a configuration or input the user can fix."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


# What the start of a run writes before any training: Hydra's folder and log, and config.json.
STARTED = {".hydra", "train.log", "config.json"}


def discard_run_dir(run_dir: Path, stop_at: Path) -> bool:
    """Remove a run dir that holds only what a run's start writes (a run that failed its checks
    leaves nothing behind), then its parents left empty (Hydra's `outputs/<date>/`), up to `stop_at`
    (exclusive). A run dir with anything else in it (a resumed run's checkpoints) is kept."""
    try:
        entries = list(run_dir.iterdir())
    except OSError:
        return False
    if not entries or {e.name for e in entries} - STARTED:
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    parent, stop = run_dir.parent.resolve(), stop_at.resolve()
    while parent != stop and stop in parent.parents:
        try:
            parent.rmdir()  # only if empty
        except OSError:
            break
        parent = parent.parent
    return True
