"""Burn's artifact layout: `experiment.log` and `{train,valid}/epoch-N/<Metric>.log`.

Metric logs hold one `value,count` line per iteration, values printed like Rust's f64 `Display`,
so Burn's own tools (and `read_metric_log`) read them back.
"""

from __future__ import annotations

import logging
import math
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from burnlike.record.format.location import AnyPath, RemotePath, as_path

log = logging.getLogger("burnlike.train")

LOG_FORMAT = "%(asctime)s.%(msecs)03dZ  %(levelname)s %(name)s: %(message)s"


def rust_f64(x: float) -> str:
    """Format like Rust's `{}` for f64: shortest round-trip digits, never an exponent."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(float(x))
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if text.endswith(".0"):
        text = text[:-2]
    return text


def rust_f64_debug(x: float) -> str:
    """Format like Rust's `{:?}` for f64 (Burn's `{:?}` of `Threshold(0.5)` in metric names): the
    shortest digits, `.0` on whole numbers, an exponent below 1e-4 and from 1e16 (1.0 → "1.0",
    1e-7 → "1e-7")."""
    if math.isnan(x) or math.isinf(x):
        return rust_f64(x)
    if x != 0 and (abs(x) < 1e-4 or abs(x) >= 1e16):
        mantissa, exponent = repr(float(x)).split("e")  # Python's repr switches to exponents at the same bounds
        return f"{mantissa}e{int(exponent)}"
    text = rust_f64(x)
    return text if "." in text else text + ".0"


def tagged_test_split(tag: str | None = None) -> str:
    """Burn 0.21's `Split::Test(tag)` folder: `test`, or `test/<tag>` (trimmed, spaces → '-', lower case)."""
    return "test" if tag is None else f"test/{tag.strip().replace(' ', '-').lower()}"


def logged_test_tags(artifact_dir: str | Path | RemotePath) -> list[str]:
    """Every tag with a test split in the run dir, sorted (Burn's summary scans `test/`): a folder
    under `test/` holding `epoch-N` folders is a tag (its path below `test/`; "" for `test/` itself,
    Burn's untagged `Split::Test(None)`)."""
    found: list[str] = []
    pending = [(as_path(artifact_dir) / "test", "")]
    while pending:
        folder, tag = pending.pop()
        if not folder.is_dir():
            continue
        children = [c for c in folder.iterdir() if c.is_dir()]
        if any(_is_epoch_dir(c.name) for c in children):
            found.append(tag)
        pending += [(c, f"{tag}/{c.name}" if tag else c.name) for c in children if not _is_epoch_dir(c.name)]
    return sorted(found)


def _is_epoch_dir(name: str) -> bool:
    return name.startswith("epoch-") and name[len("epoch-"):].isdigit()


def metric_file_name(name: str) -> str:
    return name.replace(" ", "_") + ".log"


def metric_log_path(artifact_dir: str | Path | RemotePath, split: str, epoch: int, name: str) -> AnyPath:
    return as_path(artifact_dir) / split / f"epoch-{epoch}" / metric_file_name(name)


class FileMetricLogger:
    """Writes each epoch's per-iteration values of each metric (Burn's `FileMetricLogger`)."""

    def __init__(self, artifact_dir: str | Path | RemotePath) -> None:
        self.artifact_dir = as_path(artifact_dir)  # local, or any fsspec URL (one put per log file)

    def log_epoch(self, split: str, epoch: int, name: str, history: list[tuple[float, float]]) -> AnyPath:
        path = metric_log_path(self.artifact_dir, split, epoch, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"{rust_f64(v)},{rust_f64(c)}\n" for v, c in history]
        path.write_text("".join(lines))
        return path


def read_metric_log(path: str | Path | RemotePath) -> float | None:
    """Epoch value of one log: its `value,final` line if present, else Σ(v·count)/Σcount."""
    total = weight = 0.0
    try:
        text = as_path(path).read_text()
    except FileNotFoundError:
        return None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        value, _, count = line.partition(",")
        try:
            if count.strip() == "final":
                return float(value)
            v, c = float(value), float(count)
        except ValueError:
            raise ValueError(f"{path}:{lineno}: expected 'value,count', got {line!r}") from None
        total += v * c
        weight += c
    return total / weight if weight else None


def read_epochs(artifact_dir: str | Path | RemotePath, split: str, name: str) -> dict[int, float]:
    """Every logged epoch's value of metric `name` in `split`, keyed by epoch number."""
    out: dict[int, float] = {}
    root = as_path(artifact_dir) / split
    if not root.is_dir():
        return out
    for folder in root.glob("epoch-*"):
        try:
            epoch = int(folder.name.split("-", 1)[1])
        except ValueError:
            continue
        value = read_metric_log(folder / metric_file_name(name))
        if value is not None:
            out[epoch] = value
    return dict(sorted(out.items()))


class RankZeroOnly(logging.Filter):
    """Records of the global rank 0 only (Lightning's notion, from the launcher's environment and
    then the strategy): every DDP rank runs the same fit, one experiment.log tells it once."""

    def filter(self, record: logging.LogRecord) -> bool:
        from lightning.fabric.utilities.rank_zero import rank_zero_only

        return getattr(rank_zero_only, "rank", 0) == 0


def install_experiment_log(artifact_dir: str | Path, file_name: str = "experiment.log") -> logging.Handler:
    """Route burnlike's and Lightning's log records to `experiment.log` (Burn's app logger; the
    evaluator's is `evaluation.log`)."""
    path = Path(artifact_dir) / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, delay=True)  # opened at the first record rank 0 writes
    handler.setLevel(logging.INFO)
    handler.addFilter(RankZeroOnly())
    formatter = logging.Formatter(LOG_FORMAT, datefmt="%Y-%m-%dT%H:%M:%S")
    handler.setFormatter(formatter)
    for name in ("burnlike", "lightning.pytorch", "lightning.fabric"):
        lg = logging.getLogger(name)
        lg.addHandler(handler)
        if lg.level == logging.NOTSET or lg.level > logging.INFO:
            lg.setLevel(logging.INFO)
    return handler


@runtime_checkable
class ApplicationLoggerInstaller(Protocol):
    """Burn's `ApplicationLoggerInstaller` trait: `install()` sets up where the run's log records go.
    Burn's returns `Result<(), String>`; here a failure raises (the run goes on, with a warning, as
    Burn's), and a returned `logging.Handler` is removed when the run ends."""

    def install(self) -> Any:
        """Set up the log's destination; may return a `logging.Handler` to remove at the run's end."""
        ...


class FileApplicationLoggerInstaller:
    """Burn's `FileApplicationLoggerInstaller::new(path)`: burnlike's and Lightning's log records,
    INFO and up, into the file at `path` (what the default `experiment.log` is).

    Args:
        path: The log file (its folder is created).

    Attributes:
        path: The log file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def install(self) -> logging.Handler:
        """Attach the file's handler to burnlike's and Lightning's loggers; it is returned for removal."""
        return install_experiment_log(self.path.parent, self.path.name)


ApplicationLogger = bool | ApplicationLoggerInstaller


def application_logger(setting: Any, what: str = "with_application_logger") -> ApplicationLogger:
    """`with_application_logger`'s argument: Burn's `Option<Box<dyn ApplicationLoggerInstaller>>`
    (None: no application logger; an installer: that one), or a bool (True: the default file)."""
    if setting is None or isinstance(setting, bool):
        return bool(setting)
    if isinstance(setting, ApplicationLoggerInstaller):
        return setting
    raise TypeError(f"{what}: expected an ApplicationLoggerInstaller (an object with install(), such as "
                    f"FileApplicationLoggerInstaller(path)), None, True or False, got {type(setting).__name__}")


def install_application_logger(setting: ApplicationLogger, artifact_dir: AnyPath,
                               file_name: str = "experiment.log") -> logging.Handler | None:
    """Install the run's application logger: the default file in `artifact_dir` (a local one), the
    user's installer, or none. Returns the handler to remove when the run ends, if any."""
    if setting is False:
        return None
    if setting is True:
        return install_experiment_log(artifact_dir, file_name) if isinstance(artifact_dir, Path) else None
    try:
        installed = setting.install()
    except Exception as e:  # Burn: log::warn!("Failed to install the experiment logger: {e}")
        log.warning("Failed to install the experiment logger: %s", e)
        return None
    return installed if isinstance(installed, logging.Handler) else None


def remove_experiment_log(handler: logging.Handler) -> None:
    for name in ("burnlike", "lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).removeHandler(handler)
    handler.close()
