"""The app's data=image_folder and data=csv options: composition, the loaders built from them, the
model/data checks and their errors, and whole runs (in-process, plus one through train.py)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from images import write_corrupt, write_splits
from omegaconf import OmegaConf
from PIL import Image

from burnlike.app.data import CsvDataConfig, DataConfig, DataConfigError, ImageFolderDataConfig, build_loaders
from burnlike.data import ImageBatch, TabularBatch
from burnlike.models.cnn import CnnConfig
from burnlike.models.tabular import TabularMlpConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hydra_conf():
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        yield lambda overrides: compose("config", overrides=overrides)
    GlobalHydra.instance().clear()


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return write_splits(tmp_path_factory.mktemp("images"), classes=3, train=8, valid=3)


def write_table(path: Path, n: int = 80, seed: int = 0) -> Path:
    """y = 2 a - b + noise (regression) and its sign as a class name, a constant column c."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    y = 2 * a - b + 0.01 * rng.normal(size=n)
    lines = ["a,b,c,y,kind"] + [f"{x:.5f},{z:.5f},1,{t:.5f},{'up' if t > 0 else 'down'}" for x, z, t in zip(a, b, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


IMAGE = ["model=cnn", "data=image_folder", "model.num_classes=3", "learner.progress_bar=false"]
REGRESSION = ["model=tabular", "data=csv", "data.train=t.csv", "data.target=y", "data.features=[a,b,c]",
              "data.task=regression", "model.num_features=3", "learner.metrics=[Loss]",
              "optimized_metric=valid/Loss", "learner.progress_bar=false"]


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd"])
@pytest.mark.parametrize(("model", "data", "model_type", "data_type"), [
    ("cnn", "image_folder", CnnConfig, ImageFolderDataConfig), ("tabular", "csv", TabularMlpConfig, CsvDataConfig),
    ("mnist", "mnist", None, DataConfig)])
def test_new_options_compose_with_their_models(hydra_conf, optimizer, model, data, model_type, data_type):
    from burnlike.app.run import validate

    cfg = hydra_conf([f"model={model}", f"data={data}", f"optimizer={optimizer}"])
    validate(cfg)
    assert OmegaConf.get_type(cfg.data) is data_type and type(OmegaConf.to_object(cfg.data)) is data_type
    if model_type is not None:
        assert isinstance(OmegaConf.to_object(cfg.model), model_type)


def test_defaults_stay_mnist(hydra_conf):
    cfg = hydra_conf([])
    assert OmegaConf.get_type(cfg.data) is DataConfig and cfg.model.hidden_size == 512
    assert sorted(cfg.data.keys()) == ["batch_size", "num_workers", "root", "shuffle_seed"]


def test_image_folder_loaders(hydra_conf, images):
    train, valid = build_loaders(hydra_conf([*IMAGE, f"data.root={images}", "data.batch_size=5"]))
    batch = next(iter(train))
    assert isinstance(batch, ImageBatch) and batch.images.shape == (5, 3, 16, 16) and len(train.dataset) == 24
    assert len(valid.dataset) == 9 and sorted(torch.cat([b.targets for b in valid]).tolist()) == [0] * 3 + [1] * 3 + [2] * 3
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    raw = torch.stack([torch.from_numpy(np.asarray(Image.open(p))) for p in batch.image_paths])
    assert torch.allclose(batch.images, (raw.permute(0, 3, 1, 2) / 255 - mean) / std, atol=1e-5)


def test_a_valid_fraction_splits_train_by_the_seed(hydra_conf, images):
    cfg = hydra_conf([*IMAGE, f"data.root={images}", "data.valid=null", "data.valid_fraction=0.25"])
    train, valid = build_loaders(cfg)
    paths = lambda loader: {p for b in loader for p in b.image_paths}  # noqa: E731
    assert (len(train.dataset), len(valid.dataset)) == (18, 6) and not paths(train) & paths(valid)
    again = build_loaders(cfg)[1]
    assert paths(again) == paths(valid)  # the same split every run


@pytest.mark.parametrize(("overrides", "message"), [
    (["model.num_classes=5"], r"model.num_classes=5: the data has classes \['class0', 'class1', 'class2'\]: "
                              r"set model.num_classes=3"),
    (["data.mode=L", "data.mean=[0.5]", "data.std=[0.5]"], r"model.in_channels=3: the data has 1-channel images \(data.mode=L\): set model.in_channels=1"),
    (["model=mnist"], r"model: ModelConfig reads the batches of data=mnist, not data=image_folder: use model=cnn"),
    (["data.mean=[0.5,0.5]"], r"data.mean=\[0.5, 0.5\] .*3 channel\(s\)"),
    (["data.valid=nothing"], r"data.root='.*' data.valid='nothing': image folder .*nothing not found"),
    (["data.valid=null", "data.valid_fraction=1.5"], r"data.valid_fraction=1.5: splits the 24 images into"),
    (["data.decoder=magic"], r"data.train='train': decoder must be one of"),
])
def test_image_folder_config_errors_name_the_keys(hydra_conf, images, overrides, message):
    with pytest.raises(DataConfigError, match=message):
        build_loaders(hydra_conf([*IMAGE, f"data.root={images}", *overrides]))


def test_mnist_data_refuses_an_image_model(hydra_conf, tmp_path):
    with pytest.raises(DataConfigError, match="model: CnnConfig reads the batches of data=image_folder, not "
                                              "data=mnist: use model=mnist or model=mlp"):
        build_loaders(hydra_conf(["model=cnn", f"data.root={tmp_path}"]))


def test_an_empty_split_and_a_missing_root(hydra_conf, tmp_path):
    write_splits(tmp_path / "d", classes=2, train=2, valid=1)
    for p in (tmp_path / "d" / "valid").rglob("*.png"):
        p.unlink()
    with pytest.raises(DataConfigError, match=r"data.valid='valid': no image files .* under .*valid"):
        build_loaders(hydra_conf([*IMAGE, "model.num_classes=2", f"data.root={tmp_path / 'd'}"]))
    with pytest.raises(DataConfigError, match=r"data.root='.*nowhere' data.train='train': image folder .*nowhere/train "
                                              "not found"):
        build_loaders(hydra_conf([*IMAGE, f"data.root={tmp_path / 'nowhere'}"]))


def test_csv_loaders_classification_and_regression(hydra_conf, tmp_path):
    write_table(tmp_path / "t.csv")
    cls_cfg = hydra_conf(["model=tabular", "data=csv", f"data.root={tmp_path}", "data.train=t.csv", "data.target=kind",
                          "data.features=[a,b]", "model.num_features=2", "model.num_outputs=2"])
    train, valid = build_loaders(cls_cfg)
    batch = next(iter(train))
    assert isinstance(batch, TabularBatch) and batch.inputs.shape == (64, 2) and batch.targets.dtype == torch.int64
    assert (len(train.dataset), len(valid.dataset)) == (64, 16)
    everything = torch.cat([b.inputs for b in train])  # standardised with the train part's statistics
    assert torch.allclose(everything.mean(0), torch.zeros(2), atol=1e-5)
    train, _ = build_loaders(hydra_conf([*REGRESSION, f"data.root={tmp_path}"]))
    assert next(iter(train)).targets.shape == (64, 1) and next(iter(train)).targets.dtype == torch.float32


@pytest.mark.parametrize(("overrides", "message"), [
    (["data.target=price"], r"data.train='t.csv': .*column 'price' not found; the columns are \['a', 'b', 'c', 'y', 'kind'\]"),
    (["model.num_features=5"], r"model.num_features=5: the data has feature columns \['a', 'b', 'c'\]: set model.num_features=3"),
    (["learner.metrics=[Accuracy,Loss]"], r"learner.metrics=\['Accuracy', 'Loss'\]: a regression .* has no Accuracy"),
    (["data.valid=missing.csv"], r"data.valid='missing.csv': CSV file .*missing.csv not found"),
    (["data.task=ranking"], r"data.task='ranking': expected classification or regression"),
    (["data.features=[a,kind]"], r"line 2: column 'kind': '(up|down)' is not a number"),
])
def test_csv_config_errors_name_the_keys(hydra_conf, tmp_path, overrides, message):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=message):
        build_loaders(hydra_conf([*REGRESSION, f"data.root={tmp_path}", *overrides]))


def test_in_process_runs_train_on_images_and_tables(hydra_conf, tmp_path):
    """The app's own run(): a corrupt image left out when asked (with a warning naming it), then a
    regression that learns."""
    from burnlike.app.run import run

    broken = write_splits(tmp_path / "broken", classes=3, train=3, valid=1)
    bad = write_corrupt(broken / "train" / "class1" / "0000.png", "truncated")
    cfg = hydra_conf([*IMAGE, f"data.root={broken}", "learner.num_epochs=1", "data.skip_corrupt=true"])
    with pytest.warns(UserWarning, match=f"skipped 1 of 9 images that don't decode: {bad}"):
        best = run(cfg, tmp_path / "img")
    result = json.loads((tmp_path / "img" / "result.json").read_text())
    assert result["optimized_metric"] == "valid/Accuracy" and result["value"] == best and 0 <= best <= 100
    assert (tmp_path / "img" / "model.mpk").exists() and (tmp_path / "img" / "valid" / "epoch-1" / "Accuracy.log").exists()
    write_table(tmp_path / "t.csv", n=200)
    loss = run(hydra_conf([*REGRESSION, f"data.root={tmp_path}", "learner.num_epochs=3", "optimizer.lr=0.02",
                           "data.batch_size=16"]), tmp_path / "reg")
    first = json.loads((tmp_path / "reg" / "result.json").read_text())["epochs"]["1"]
    assert loss < first and loss < 1.0  # learns y = 2a - b (variance 5) well within three epochs


@pytest.mark.slow
def test_cli_names_a_corrupt_image(tmp_path):
    """Through train.py: a corrupt image is one line naming the file, exit code 2, no traceback."""
    broken = write_splits(tmp_path / "broken", classes=3, train=2, valid=1)
    bad = write_corrupt(broken / "train" / "class1" / "0000.png", "truncated")
    args = [*IMAGE, "learner.num_epochs=1", "learner.summary=false", f"hydra.run.dir={tmp_path}/run",
            f"data.root={broken}"]
    proc = subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"error: {bad}: cannot decode as an image" in proc.stderr and "Traceback" not in proc.stderr
