"""TODO: docstring."""

import pytest

from tests.examples.helpers import example
from tests.helpers.images import write_image_folder


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
