"""Figures of per-epoch values (metrics.png, `burnlike compare`'s plot), if matplotlib is installed
(the `plot` extra): without it, no figure and no error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from burnlike.record.format.location import AnyPath

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


def save(fig: Any, path: AnyPath) -> None:
    """A PNG at `path`, local or any fsspec URL (one put of the whole image)."""
    import io

    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def plot_metrics(summary: LearnerSummary, path: AnyPath) -> None:
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
