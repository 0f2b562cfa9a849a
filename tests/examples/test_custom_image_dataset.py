"""`examples/custom_image_dataset.py`, Burn's custom image dataset example: it runs as a script
(--help), trains its CNN on an image folder with train/ and test/, writes the model and a checkpoint
per epoch, and names a missing folder."""

import pytest

from tests.examples.helpers import example, run_with_help
from tests.helpers.images import write_image_folder


def test_custom_image_dataset_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("custom_image_dataset", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: custom_image_dataset.py") and "Burn" in out and "--epochs" in out


def test_custom_image_dataset_trains_and_names_a_missing_folder(tmp_path):
    write_image_folder(tmp_path / "data" / "train", classes=3, per_class=8)
    write_image_folder(tmp_path / "data" / "test", classes=3, per_class=2, seed=1)
    best = example("custom_image_dataset").main([
        "--data", str(tmp_path / "data"), "--epochs", "1", "--batch-size", "8", "--num-workers", "0",
        "--artifact-dir", str(tmp_path / "run")])
    assert 0 <= best <= 100
    assert (tmp_path / "run" / "model.mpk").exists() and (tmp_path / "run" / "checkpoint" / "model-1.mpk").exists()
    with pytest.raises(Exception, match="image folder .*missing/train not found"):
        example("custom_image_dataset").main(["--data", str(tmp_path / "missing"), "--artifact-dir",
                                              str(tmp_path / "run2")])
