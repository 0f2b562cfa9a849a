"""`burnlike.train.plot`: the figures of per-epoch values (metrics.png, `burnlike compare`'s plot):
their size, and epoch axes that show whole epochs only."""

from __future__ import annotations

import pytest

from burnlike.train.plot import epoch_axis, plot_metrics, pyplot
from burnlike.train.summary import LearnerSummary, MetricSummary


def test_the_plot_is_one_panel_of_4_5_by_3_2_inches_per_metric(tmp_path):
    pytest.importorskip("matplotlib")
    summary = LearnerSummary(2, [MetricSummary("train", "Loss", 0.5, 2, 0.9, 1, {1: 0.9, 2: 0.5}),
                                 MetricSummary("valid", "Accuracy", 50.0, 1, 60.0, 2, {1: 50.0, 2: 60.0})])
    path = tmp_path / "metrics.png"
    plot_metrics(summary, path)
    from PIL import Image

    with Image.open(path) as image:
        assert image.size == (round(2 * 4.5 * 80), round(3.2 * 80))  # figsize × dpi 80




@pytest.mark.parametrize("epochs", [[1], [1, 2, 3]])
def test_epoch_ticks_are_whole_numbers_also_for_one_epoch(epochs):
    """matplotlib's own ticks for one point are 0.96 ... 1.04: an epoch axis shows integers."""
    plt = pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    fig, ax = plt.subplots()
    ax.plot(epochs, [0.5] * len(epochs), marker="o")
    epoch_axis(ax)
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    plt.close(fig)
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert ax.get_xlabel() == "epoch"
