"""Figures of per-epoch values (metrics.png, `burnlike compare`'s plot), if matplotlib is installed
(the `plot` extra): without it, no figure and no error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from burnlike.train.summary import LearnerSummary


def pyplot() -> Any | None:
    """matplotlib.pyplot on the file-only Agg backend, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def epoch_axis(ax: Any) -> None:
    """Epochs are whole numbers: integer ticks, also for a single epoch (not 0.96 ... 1.04)."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_metrics(summary: LearnerSummary, path: Path) -> None:
    """Per-epoch curves of every numeric metric, if matplotlib is installed (extra `plot`)."""
    plt = pyplot()
    names = sorted({m.name for m in summary.metrics})
    if plt is None or not names:
        return
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        for m in summary.metrics:
            if m.name == name:
                ax.plot(list(m.epochs), list(m.epochs.values()), marker="o", label=m.split)
        ax.set_title(name)
        epoch_axis(ax)
        ax.legend()
    save(fig, path)
