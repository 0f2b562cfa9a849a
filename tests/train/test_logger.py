"""`burnlike.train.logger`: Burn's metric logs. Values are written as Rust prints an f64 (`2`, not
`2.0`; no exponent; `inf`, `NaN`), a log whose values weigh nothing has no epoch value, only
`epoch-N` folders are read as epochs, a tagged test split is `test/<slug>`, and the experiment log
takes Lightning's and Fabric's records and lets go of every logger when removed."""

from __future__ import annotations

import logging
import math

import pytest

from burnlike.train.logger import (
    install_experiment_log,
    read_epochs,
    read_metric_log,
    remove_experiment_log,
    rust_f64,
    rust_f64_debug,
    tagged_test_split,
)


# --- writing and reading metric logs --------------------------------------------------------------
@pytest.mark.parametrize(("x", "text"), [(93.75, "93.75"), (2.0, "2"), (1e-5, "0.00001"), (0.1, "0.1"),
                                          (math.nan, "NaN"), (1e20, "100000000000000000000"),
                                          (math.inf, "inf"), (-math.inf, "-inf")])
def test_rust_f64_writes_floats_as_rust_displays_them(x, text):
    assert rust_f64(x) == text


def test_a_metric_log_without_counted_values_has_no_epoch_value(tmp_path):
    empty = tmp_path / "Loss.log"
    empty.write_text("")
    assert read_metric_log(empty) is None
    zero = tmp_path / "Accuracy.log"
    zero.write_text("0.5,0\n")  # a value that weighs nothing
    assert read_metric_log(zero) is None


def test_a_metric_logs_final_line_is_its_epoch_value(tmp_path):
    """A `value,final` line gives the epoch value as written, not the mean of the counted steps."""
    log = tmp_path / "Loss.log"
    log.write_text("0.5,4\n0.25,4\n0.75,final\n")
    assert read_metric_log(log) == 0.75


def test_read_epochs_skips_folders_that_are_not_an_epoch(tmp_path):
    for folder, value in (("epoch-1", 0.5), ("epoch-old", 9.0), ("epoch-3-backup", 7.0), ("epoch-2", 0.25),
                          ("epoch-x", 8.0), ("epoch-old-4", 6.0), ("epoch-10", 0.125)):
        (tmp_path / "train" / folder).mkdir(parents=True)
        (tmp_path / "train" / folder / "Loss.log").write_text(f"{value},4\n")
    assert read_epochs(tmp_path, "train", "Loss") == {1: 0.5, 2: 0.25, 10: 0.125}


# --- splits and the experiment log ----------------------------------------------------------------
def test_tagged_test_split_is_test_or_test_slash_the_slugged_tag():
    assert tagged_test_split() == "test"
    assert tagged_test_split(" My Set ") == "test/my-set"


def test_the_experiment_log_makes_its_folders_takes_fabric_records_and_lets_go_of_every_logger(tmp_path):
    """The artifact folder need not exist yet, nor its parent."""
    names = ("burnlike", "lightning.pytorch", "lightning.fabric")
    artifacts = tmp_path / "runs" / "first"
    handler = install_experiment_log(artifacts)
    try:
        assert all(handler in logging.getLogger(n).handlers for n in names)
        logging.getLogger("lightning.fabric").info("fabric says hello")
        handler.flush()
        assert "fabric says hello" in (artifacts / "experiment.log").read_text()
    finally:
        remove_experiment_log(handler)
    assert not any(handler in logging.getLogger(n).handlers for n in names)


@pytest.mark.parametrize(("x", "display", "debug"), [
    (0.5, "0.5", "0.5"), (1.0, "1", "1.0"), (0.0, "0", "0.0"), (2.5e-5, "0.000025", "2.5e-5"),
    (1e-7, "0.0000001", "1e-7"), (1e16, "10000000000000000", "1e16"), (0.0001, "0.0001", "0.0001"),
    (123.25, "123.25", "123.25"), (float("nan"), "NaN", "NaN"), (float("inf"), "inf", "inf"),
])
def test_numbers_in_names_are_formatted_as_rusts_display_and_debug(x, display, debug):
    """Rust's `format!("{}", f64)` and `format!("{:?}", f64)` (core::fmt::float), which Burn's metric
    names use (burn-train/src/metric/fbetascore.rs, precision.rs, hamming.rs at v0.21.0)."""
    assert rust_f64(x) == display and rust_f64_debug(x) == debug


@pytest.mark.parametrize("level", [logging.NOTSET, logging.WARNING])
def test_the_experiment_log_gets_info_records_of_a_logger_set_quieter(tmp_path, level):
    lg = logging.getLogger("burnlike")
    before = lg.level
    lg.setLevel(level)
    handler = install_experiment_log(tmp_path)
    try:
        assert lg.level == logging.INFO
        logging.getLogger("burnlike.train.test").info("an info record")
        handler.flush()
        assert "an info record" in (tmp_path / "experiment.log").read_text()
    finally:
        remove_experiment_log(handler)
        lg.setLevel(before)
