"""burnlike used from outside: another repo (tests/journeys/other_repo, copied out of the checkout)
with its own package, model and conf dir, running its own training code and burnlike's app runner;
and a plain Lightning `Trainer` that saves, resumes and loads through burnlike's recorder plugin."""

import json
import shutil
from pathlib import Path

import lightning as L
import pytest
import torch

from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mlp import MlpConfig
from burnlike.optim import AdamConfig
from burnlike.record import DefaultRecorder, RecorderCheckpointIO, load_lightning_module
from burnlike.train import StepModule
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric
from tests.helpers.app import compose_app
from tests.journeys.helpers import finish, start_app

OTHER_REPO = Path(__file__).resolve().parent / "other_repo"


@pytest.mark.slow
def test_another_repo_reuses_burnlike(tmp_path, tiny_app):
    """Both of the other repo's scripts train and write burnlike's artifacts; its config composes
    burnlike's groups with its own model option."""
    repo = shutil.copytree(OTHER_REPO, tmp_path / "other")
    cfg = compose_app(["learner.num_epochs=1"], config_dir=repo / "conf")  # burnlike's groups + its model
    assert cfg.model._target_ == "otherpkg.model.TinyConfig" and cfg.optimizer.epsilon == 1e-5
    env = {"PYTHONPATH": str(repo)}
    own = start_app(["learner.num_epochs=1", "optimizer.lr=0.01"], tmp_path / "own", tiny_app,
                    script=repo / "train_other.py", cwd=repo, env_extra=env)
    app = start_app(["learner.num_epochs=1", "optimizer.lr=0.01"], tmp_path / "app", tiny_app,
                    script=repo / "run_app.py", cwd=repo, env_extra=env)
    for proc, out, result, key in ((finish(own), tmp_path / "own", "best.json", "valid/Accuracy"),
                                   (finish(app), tmp_path / "app", "result.json", "value")):
        why = proc.stdout[-2000:] + proc.stderr[-3000:]
        assert proc.returncode == 0, why
        assert (out / "run" / "model.mpk").exists() and (out / "run" / "checkpoint" / "model-1.mpk").exists(), why
        value = json.loads((out / "run" / result).read_text())[key]
        assert value > 20, why  # it learned (10 classes)
        assert value == pytest.approx(read_metric_log(out / "run" / "valid" / "epoch-1" / "Accuracy.log"), rel=1e-6)
    assert "Tiny" in (tmp_path / "app" / "run" / "experiment.log").read_text()


def test_plain_lightning_trains_and_resumes_with_the_recorder_plugin(tmp_path, tiny_app):
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(0).build(MnistDataset.train(tiny_app))

    def trainer(epochs):
        return L.Trainer(max_epochs=epochs, plugins=[RecorderCheckpointIO(DefaultRecorder())], logger=False,
                         enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                         default_root_dir=tmp_path)

    torch.manual_seed(0)
    module = StepModule(MlpConfig().init(), AdamConfig(), 1e-3, train_metrics=[AccuracyMetric()])
    first = trainer(1)
    first.fit(module, loader)
    ckpt = tmp_path / "one.ckpt"
    first.save_checkpoint(ckpt)
    assert ckpt.read_bytes()[:1] == b"\x83"  # a msgpack map (metadata, item, _b), not a zip/pickle
    second = trainer(2)
    resumed = StepModule(MlpConfig().init(), AdamConfig(), 1e-3, train_metrics=[AccuracyMetric()])
    second.fit(resumed, loader, ckpt_path=str(ckpt))
    assert second.current_epoch == 2
    restored = load_lightning_module(StepModule, ckpt, model=MlpConfig().init(), optimizer=AdamConfig())
    assert torch.equal(restored.model.output.weight, module.model.output.weight)
