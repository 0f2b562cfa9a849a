"""`burnlike.app.console`: what the app's console shows (progress lines, the summary, warnings and
flagged INFO lines; every INFO line still in train.log), the one-line failure, and the run dir a
run that failed its checks leaves behind (none)."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from burnlike.app.console import CONSOLE, ConsoleFilter, discard_run_dir, fail, narrow_console


def record(level: int, extra: dict | None = None) -> logging.LogRecord:
    rec = logging.LogRecord("burnlike.train", level, __file__, 1, "m", None, None)
    for k, v in (extra or {}).items():
        setattr(rec, k, v)
    return rec


# --- the console's filter -------------------------------------------------------------------------
def test_the_console_shows_warnings_and_flagged_lines_only():
    keep = ConsoleFilter()
    assert keep.filter(record(logging.WARNING)) and keep.filter(record(logging.ERROR))
    assert keep.filter(record(logging.INFO, CONSOLE))
    assert not keep.filter(record(logging.INFO)) and not keep.filter(record(logging.DEBUG))


def test_narrowing_keeps_hydras_console_filters_it_and_leaves_files_alone(monkeypatch, tmp_path):
    root, light = logging.getLogger(), logging.getLogger("lightning")
    console, file = logging.StreamHandler(sys.stdout), logging.FileHandler(tmp_path / "train.log")
    elsewhere = logging.StreamHandler(io.StringIO())  # another program's handler (pytest's caplog is one)
    theirs = logging.StreamHandler()
    monkeypatch.setattr(root, "handlers", [console, file, elsewhere])
    monkeypatch.setattr(light, "handlers", [theirs])
    narrow_console()
    narrow_console()  # idempotent: one filter
    assert light.handlers == []  # Lightning's own console handler printed every line twice
    assert root.handlers == [console, file, elsewhere]
    assert [type(f) for f in console.filters] == [ConsoleFilter]
    assert file.filters == [] and elsewhere.filters == []  # train.log keeps every INFO line
    file.close()


def test_outside_hydras_logging_nothing_changes(monkeypatch):
    light = logging.getLogger("lightning")
    theirs = logging.StreamHandler()
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(light, "handlers", [theirs])
    narrow_console()
    assert light.handlers == [theirs] and theirs.filters == []


# --- failing --------------------------------------------------------------------------------------
def test_fail_is_one_error_line_and_status_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        fail("data.root: /nowhere has no MNIST/raw")
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == "error: data.root: /nowhere has no MNIST/raw\n" and captured.out == ""


def test_a_run_dir_holding_only_a_runs_start_goes_with_its_empty_parents(tmp_path):
    run = tmp_path / "outputs" / "2026-01-01" / "10-00-00"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("x: 1\n")
    (run / "train.log").write_text("")
    (run / "config.json").write_text("{}")
    assert discard_run_dir(run, tmp_path)
    assert not (tmp_path / "outputs").exists() and tmp_path.is_dir()  # up to, not including, the cwd


def test_a_run_dir_with_anything_else_is_kept(tmp_path):
    run = tmp_path / "outputs" / "day" / "run"
    (run / "checkpoint").mkdir(parents=True)  # a resumed run's checkpoints
    (run / "train.log").write_text("")
    assert not discard_run_dir(run, tmp_path)
    assert (run / "checkpoint").is_dir() and (run / "train.log").is_file()
    assert not discard_run_dir(tmp_path / "nowhere", tmp_path)


def test_a_parent_holding_another_run_is_kept(tmp_path):
    day = tmp_path / "outputs" / "day"
    (day / "other-run").mkdir(parents=True)
    (day / "run" / ".hydra").mkdir(parents=True)
    assert discard_run_dir(day / "run", tmp_path)
    assert not (day / "run").exists() and (day / "other-run").is_dir()


def test_a_run_dir_that_cannot_be_removed_stays_without_an_error(tmp_path):
    """Discarding happens while a failed run reports its own error: a run dir rmtree can't remove (a
    symlink here; on Windows, a train.log still open) stays, and raises nothing over that error."""
    target = tmp_path / "real"
    (target / ".hydra").mkdir(parents=True)
    (target / "train.log").write_text("")
    run = tmp_path / "outputs" / "run"
    run.parent.mkdir()
    run.symlink_to(target, target_is_directory=True)
    discard_run_dir(run, tmp_path)
    assert (target / "train.log").is_file() and run.is_symlink()
