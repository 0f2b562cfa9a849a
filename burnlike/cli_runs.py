"""`burnlike summary RUN_DIR` and `burnlike compare DIR...`: read run dirs the app (or a Learner) wrote.

Both read only files: Burn's `<split>/epoch-N/<Metric>.log` logs (a running run's finished epochs
too), the app's `result.json` (the optimized metric, its direction and best epoch) and Hydra's
`.hydra/overrides.yaml` (what sets a sweep's jobs apart).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnlike.record.format.location import AnyPath, as_path

if TYPE_CHECKING:  # pragma: no cover - the commands import it when they run (torchmetrics is slow)
    from burnlike.train.summary import LearnerSummary


SPLITS = ("train", "valid")


class RunDirError(ValueError):
    """A path that is not a run dir (or a folder of them); names the path and what was expected."""


def metric_names(run_dir: AnyPath, split: str) -> list[str]:
    """The metrics logged in `run_dir/split/epoch-*/` (file names: spaces written as `_`)."""
    return sorted({p.stem for p in (run_dir / split).glob("epoch-*/*.log")})


def summarize(run_dir: AnyPath) -> LearnerSummary:
    from burnlike.train.summary import LearnerSummary

    if not any((run_dir / split).is_dir() for split in SPLITS):
        raise RunDirError(f"{run_dir}: not a run dir (expected train/epoch-N/*.log or valid/epoch-N/*.log in it)")
    return LearnerSummary.from_dir(run_dir, metric_names(run_dir, "train"), metric_names(run_dir, "valid"))


@dataclass
class RunResult:
    """One run's optimized metric: its name, direction (`min`/`max`), best value and epochs."""

    run_dir: AnyPath
    metric: str
    mode: str
    best: float
    best_epoch: int | None
    epochs: dict[int, float]
    overrides: list[str]

    @classmethod
    def read(cls, run_dir: AnyPath) -> RunResult:
        path = run_dir / "result.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            epochs = {int(k): float(v) for k, v in data["epochs"].items()}
            result = cls(run_dir, str(data["optimized_metric"]), str(data["mode"]), float(data["value"]),
                         data.get("best_epoch"), epochs, overrides(run_dir))
        except FileNotFoundError:
            raise RunDirError(f"{path}: missing (expected the app's result.json: is {run_dir} a run dir?)") from None
        except (ValueError, KeyError, TypeError) as e:
            raise RunDirError(f"{path}: unreadable ({type(e).__name__}: {e}); expected optimized_metric, mode, "
                              "value and epochs") from None
        if result.mode not in ("min", "max"):
            raise RunDirError(f"{path}: mode={result.mode!r}, expected 'min' or 'max'")
        return result


def overrides(run_dir: AnyPath) -> list[str]:
    """The job's command-line overrides (Hydra's `.hydra/overrides.yaml`, a YAML list of strings)."""
    path = run_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.create(path.read_text()))
    return [str(x) for x in data] if isinstance(data, list) else []


def find_runs(paths: list[AnyPath]) -> list[AnyPath]:
    """Each path itself if it holds a result.json, else its sub-folders that do (a multirun dir)."""
    runs: list[AnyPath] = []
    for path in paths:
        if not path.is_dir():
            raise RunDirError(f"{path}: not a folder (expected a run dir or a multirun dir)")
        if (path / "result.json").is_file():
            runs.append(path)
            continue
        found = sorted((p for p in path.iterdir() if (p / "result.json").is_file()), key=_natural)
        if not found:
            raise RunDirError(f"{path}: no result.json in it or in its sub-folders (expected a run dir or a multirun dir)")
        runs += found
    return runs


def _natural(path: AnyPath) -> tuple[int, str]:
    return (int(path.name), "") if path.name.isdigit() else (1 << 30, path.name)


def ranked(results: list[RunResult]) -> list[RunResult]:
    """Best first, in the optimized metric's own direction (NaN last)."""
    mode = results[0].mode

    def key(r: RunResult) -> tuple[bool, float]:
        return (math.isnan(r.best), r.best if mode == "min" else -r.best)

    return sorted(results, key=key)


def table(results: list[RunResult]) -> str:
    metric = results[0].metric
    rows = [["#", "run", metric + " (best)", "epoch", "epochs", "overrides"]]
    for i, r in enumerate(results, 1):
        rows.append([str(i), str(r.run_dir), f"{r.best:.4f}", str(r.best_epoch or "-"), str(len(r.epochs)),
                     " ".join(r.overrides)])
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def plot(results: list[RunResult], path: AnyPath) -> bool:
    """One figure: each run's optimized metric per epoch (False without matplotlib)."""
    from burnlike.train.plot import epoch_axis, pyplot, save

    plt = pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for r in results:
        label = " ".join(r.overrides) or r.run_dir.name
        ax.plot(list(r.epochs), list(r.epochs.values()), marker="o", label=label)
    epoch_axis(ax)
    ax.set_ylabel(results[0].metric)
    ax.legend(fontsize="small")
    save(fig, path)
    return True


def cmd_summary(args: argparse.Namespace) -> int:
    from burnlike.train.plot import plot_metrics

    run_dir = as_path(args.run_dir)
    try:
        summary = summarize(run_dir)
    except RunDirError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(summary)
    plot_metrics(summary, run_dir / "metrics.png")
    return 0


def default_plot_path(dirs: list[AnyPath]) -> AnyPath:
    """compare.png in the one dir given (a sweep dir), else in the folder the dirs share."""
    if len(dirs) == 1 or any(not isinstance(d, Path) for d in dirs):
        return dirs[0] / "compare.png" if len(dirs) == 1 else dirs[0].parent / "compare.png"
    import os

    return Path(os.path.commonpath([d.resolve() for d in dirs if isinstance(d, Path)])) / "compare.png"


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        results = [RunResult.read(run) for run in find_runs([as_path(p) for p in args.dirs])]
    except RunDirError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    metrics = sorted({r.metric for r in results})
    if len(metrics) > 1:
        print(f"error: the runs optimize different metrics ({', '.join(metrics)}); compare runs of one metric",
              file=sys.stderr)
        return 2
    results = ranked(results)
    print(table(results))
    out = as_path(args.out) if args.out else default_plot_path([as_path(p) for p in args.dirs])
    if plot(results, out):
        print(f"plot: {out}")
    return 0


def register(sub: Any) -> None:
    """Add `summary` and `compare` to the `burnlike` command's subparsers."""
    p = sub.add_parser("summary", help="a run dir's Learner summary table and metrics.png (finished or running)",
                       description="Print Burn's Learner summary of RUN_DIR from its epoch logs and write "
                                   "RUN_DIR/metrics.png (a running run: its finished epochs).")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.set_defaults(func=cmd_summary)
    p = sub.add_parser("compare", help="one table and one plot across run dirs (or a multirun dir)",
                       description="Rank runs by their optimized metric (result.json), best first in the "
                                   "metric's own direction, and plot it per epoch for every run.")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="run dirs, or multirun dirs holding them")
    p.add_argument("--out", "--plot", dest="out", metavar="PNG",
                   help="where the plot goes (default: compare.png in the sweep dir, or in the folder the "
                        "run dirs share)")
    p.set_defaults(func=cmd_compare)
