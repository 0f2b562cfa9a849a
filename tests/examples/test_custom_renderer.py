"""`examples/custom_renderer.py`, Burn's custom renderer example: it runs as a script (--help), and
its renderer replaces the progress display, printing every train and valid step's progress and
metric states."""

import re

from tests.examples.helpers import example, run_with_help
from tests.helpers.idx import write_mnist_idx


def test_custom_renderer_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("custom_renderer", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: custom_renderer.py") and "Burn" in out and "--epochs" in out


def test_custom_renderer_prints_every_step_in_place_of_the_progress_display(tmp_path, capsys):
    write_mnist_idx(tmp_path, n_train=96, n_test=32)
    result = example("custom_renderer").main([
        "--data", str(tmp_path), "--epochs", "2", "--batch-size", "16", "--num-workers", "0",
        "--artifact-dir", str(tmp_path / "run")])
    out = capsys.readouterr().out
    items = re.findall(r"^TrainingProgress\(progress=Progress\(items_processed=(\d+), items_total=(\d+)\), "
                       r"global_progress=Progress\(items_processed=(\d+), items_total=2\), iteration=(\d+)\)$",
                       out, re.M)
    train = [(int(d), int(t), int(e), int(i)) for d, t, e, i in items if t == "96"]
    valid = [(int(d), int(t), int(e), int(i)) for d, t, e, i in items if t == "32"]
    assert train == [(16 * i, 96, epoch, i) for epoch in (1, 2) for i in range(1, 7)]  # 6 steps an epoch
    assert valid == [(16 * i, 32, epoch, i) for epoch in (1, 2) for i in range(1, 3)]
    assert len(items) == len(train) + len(valid)
    assert len(re.findall(r"^train Accuracy: epoch [\d.e-]+ % - batch [\d.e-]+ %$", out, re.M)) == 12  # 0 prints 0.00e0
    assert len(re.findall(r"^valid Loss: epoch [\d.e-]+ - batch [\d.e-]+$", out, re.M)) == 4
    assert "it/s" not in out and "Epoch 1/2" not in out  # no progress display besides the renderer
    assert type(result.renderer).__name__ == "CustomRenderer"
    assert (tmp_path / "run" / "valid" / "epoch-2" / "Loss.log").exists()
