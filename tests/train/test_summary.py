"""`burnlike.train.summary`: the learner summary read back from a run's logs, in Burn's table
layout and number formats (3 decimals, or an exponent for small values), with the model's
description; a row the logs lack is None, and an unreadable log names its file and line."""

from __future__ import annotations

import pytest

from burnlike.train import LearnerSummary
from burnlike.train.summary import MetricSummary


def test_summary_format_matches_burn(tmp_path):
    for split, values in (("train", [91.2, 95.0, 97.8]), ("valid", [0.16, 0.1, 0.0071])):
        name = "Accuracy" if split == "train" else "Loss"
        for epoch, v in enumerate(values, 1):
            path = tmp_path / split / f"epoch-{epoch}" / f"{name}.log"
            path.parent.mkdir(parents=True)
            path.write_text(f"{v},64\n{v},64\n")
    text = str(LearnerSummary.from_dir(tmp_path, ["Accuracy"], ["Loss"]))
    assert "| Train | Accuracy | 91.200   | 1        | 97.800   | 3        |" in text
    assert "| Valid | Loss     | 7.100e-3 | 3        | 0.160    | 1        |" in text
    with pytest.raises(ValueError, match="Loss.log:1"):
        (tmp_path / "valid" / "epoch-1" / "Loss.log").write_text("oops\n")
        LearnerSummary.from_dir(tmp_path, [], ["Loss"])


def test_the_summary_table_header_spells_burns_columns():
    summary = LearnerSummary(2, [MetricSummary("valid", "Loss", 0.5, 2, 0.9, 1)])
    header = str(summary).splitlines()[4]
    assert [c.strip() for c in header.strip("|").split("|")] == ["Split", "Metric", "Min.", "Epoch", "Max.", "Epoch"]


def test_summary_from_dir_keeps_the_model_and_get_answers_none_for_a_missing_row(tmp_path):
    (tmp_path / "train" / "epoch-1").mkdir(parents=True)
    (tmp_path / "train" / "epoch-1" / "Loss.log").write_text("0.25,1\n")
    summary = LearnerSummary.from_dir(tmp_path, ["Loss"], [], model="Net(hidden=3)")
    assert summary.model == "Net(hidden=3)" and "Model:\nNet(hidden=3)" in str(summary)
    assert summary.get("train", "Loss").min_value == 0.25
    assert summary.get("valid", "Loss") is None


def test_the_summary_leaves_two_blank_lines_between_the_epochs_and_the_table():
    lines = str(LearnerSummary(2, [MetricSummary("valid", "Loss", 0.5, 2, 0.9, 1)])).splitlines()
    assert lines[1:4] == ["Total Epochs: 2", "", ""]
