"""The Hydra app: config composition, CLI runs (single, sweep, DDP, DDP in a sweep), errors, reuse."""

import json
import os
import subprocess
import sys
import textwrap
from itertools import product
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from idx import write_mnist_idx

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=256, n_test=128)


def run_app(args, tmp_path, tiny, script=ROOT / "train.py", cwd=ROOT, timeout=300, env_extra=None):
    env = {**os.environ, "BURNLIKE_DATA": str(tiny), "PYTHONWARNINGS": "ignore", **(env_extra or {})}
    cmd = [sys.executable, str(script), *args, "learner.progress_bar=false", f"hydra.run.dir={tmp_path}/run",
           f"hydra.sweep.dir={tmp_path}/sweep"]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def compose_app(overrides, hydra_config=False):
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=hydra_config)


GROUPS = {
    "model": ["mnist", "mlp"],
    "optimizer": ["adam", "adamw", "sgd"],
    "trainer": ["default", "cpu", "gpu", "ddp", "ddp_spawn"],
    "debug": ["fast", "limit"],
}


@pytest.mark.parametrize("combo", list(product(*GROUPS.values())), ids=lambda c: "-".join(c))
def test_every_shipped_combination_composes(combo):
    overrides = [f"{g}={o}" for g, o in zip(GROUPS, combo)] + ["data=mnist", "learner=default"]
    cfg = compose_app(overrides)
    from omegaconf import OmegaConf

    from burnlike.app.run import validate

    validate(cfg)
    model = OmegaConf.to_object(cfg.model)
    assert hasattr(model, "init") and cfg.optimizer.lr > 0
    assert cfg.trainer.strategy in ("auto", "ddp", "ddp_spawn")


def test_optuna_search_composes():
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    cfg = compose_app(["hparams_search=mnist_optuna"], hydra_config=True)
    assert cfg.hydra.sweeper.direction == "maximize" and "optimizer.lr" in cfg.hydra.sweeper.params


def test_typed_overrides_are_checked_at_compose():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="hidden_size"):
        compose_app(["model.hidden_size=abc"])
    with pytest.raises(ConfigCompositionException, match="hidden_sise"):
        compose_app(["model.hidden_sise=3"])


def test_single_run_leaves_burn_artifacts_and_hydra_dir(tmp_path, tiny):
    proc = run_app(["learner.num_epochs=1", "model=mnist", "trainer.devices=1"], tmp_path, tiny)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    for name in (".hydra/config.yaml", "config.json", "experiment.log", "train/epoch-1/Accuracy.log",
                 "valid/epoch-1/Loss.log", "checkpoint/model-1.mpk", "model.mpk", "result.json"):
        assert (run / name).exists(), name
    assert "Learner Summary" in proc.stdout
    result = json.loads((run / "result.json").read_text())
    assert result["optimized_metric"] == "valid/Accuracy" and 0 <= result["value"] <= 100

    # resume from the CLI: same run dir, checkpoint 1, one more epoch
    proc = run_app(["learner.num_epochs=2", "learner.checkpoint=1"], tmp_path, tiny)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (run / "checkpoint" / "model-2.mpk").exists() and (run / "train" / "epoch-1").is_dir()
    assert "resuming from" in (run / "experiment.log").read_text()


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("learner.num_epocs=3", "num_epocs"),
        ("learner.num_epochs=many", "num_epochs"),
        ("model=resnet9000", "model"),
        ("learner.num_epochs=-1", "learner.num_epochs"),
        ("learner.recorder=pickle", "learner.recorder"),
    ],
)
def test_bad_overrides_exit_nonzero_naming_the_key(tmp_path, tiny, override, needle):
    proc = run_app([override], tmp_path, tiny, timeout=120)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr and "lightning" not in proc.stderr.lower()


def test_help_and_cfg_job(tmp_path, tiny):
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and "model: mnist, mlp" in proc.stdout and "trainer=ddp" in proc.stdout
    assert "num_epochs: 10" in proc.stdout
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "--cfg", "job", "optimizer=sgd"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and "lr: 0.01" in proc.stdout


def test_two_job_sweep_has_two_run_dirs_and_results(tmp_path, tiny):
    proc = run_app(["-m", "optimizer.lr=0.001,0.01", "learner.num_epochs=1", "learner.checkpointing=false"],
                   tmp_path, tiny)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads((tmp_path / "sweep" / str(i) / "result.json").read_text()) for i in (0, 1)]
    assert len(results) == 2 and all(0 <= r["value"] <= 100 for r in results)
    lrs = [json.loads((tmp_path / "sweep" / str(i) / "config.json").read_text())["optimizer"]["lr"] for i in (0, 1)]
    assert lrs == [0.001, 0.01]
    assert not (tmp_path / "sweep" / "2").exists()


@pytest.mark.timeout(400)
def test_ddp_two_processes(tmp_path, tiny):
    proc = run_app(["trainer=ddp", "trainer.devices=2", "learner.num_epochs=1"], tmp_path, tiny, timeout=380)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) == ["model-1.mpk"]
    # rank 0 wrote its half of the valid steps (128 samples / 2 ranks / 64 per batch = 1 line)
    assert len((run / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()) == 1
    assert json.loads((run / "result.json").read_text())["value"] >= 0


@pytest.mark.timeout(500)
def test_ddp_inside_a_multirun(tmp_path, tiny):
    proc = run_app(["-m", "trainer=ddp", "optimizer.lr=0.001,0.01", "learner.num_epochs=1",
                    "learner.checkpointing=false"], tmp_path, tiny, timeout=480)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert jobs == ["0", "1"]  # no re-launched sweep
    for job in jobs:
        assert (tmp_path / "sweep" / job / "result.json").exists()
    assert "for this job only" in proc.stderr + proc.stdout
    for job in jobs:  # each job's own DDP run: both ranks trained, rank 0 wrote one checkpoint set
        assert len((tmp_path / "sweep" / job / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()) == 1


def test_another_repo_reuses_burnlike(tmp_path, tiny):
    repo = tmp_path / "other"
    (repo / "mypkg").mkdir(parents=True)
    (repo / "conf" / "model").mkdir(parents=True)
    (repo / "mypkg" / "__init__.py").write_text("")
    (repo / "mypkg" / "model.py").write_text(textwrap.dedent("""
        from torch import nn
        from burnlike.data import MnistBatch
        from burnlike.module import Module
        from burnlike.train import ClassificationOutput, TrainOutput, TrainStep, ValidStep, backward

        class Tiny(Module, TrainStep[MnistBatch, ClassificationOutput], ValidStep[MnistBatch, ClassificationOutput]):
            def __init__(self, width: int = 32):
                super().__init__()
                self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, width), nn.ReLU(), nn.Linear(width, 10))

            def step(self, batch):
                out = self.net(batch.images)
                return ClassificationOutput(nn.functional.cross_entropy(out, batch.targets), out, batch.targets)

            def train_step(self, batch):
                item = self.step(batch)
                return TrainOutput(self, backward(item.loss), item)

            def valid_step(self, batch):
                return self.step(batch)
    """))
    (repo / "conf" / "model" / "tiny.yaml").write_text("_target_: mypkg.model.Tiny\nwidth: 16\n")
    (repo / "conf" / "config.yaml").write_text(textwrap.dedent("""
        defaults:
          - train
          - override model: tiny
          - _self_
        hydra:
          searchpath:
            - pkg://burnlike.conf
    """))
    (repo / "run.py").write_text(textwrap.dedent("""
        import hydra
        from burnlike.app.run import run
        from burnlike.app.schema import register_configs

        register_configs()

        @hydra.main(version_base="1.3", config_path="conf", config_name="config")
        def main(cfg):
            return run(cfg)

        if __name__ == "__main__":
            main()
    """))
    proc = run_app(["learner.num_epochs=1", "optimizer.lr=0.01"], tmp_path, tiny, script=repo / "run.py", cwd=repo,
                   env_extra={"PYTHONPATH": str(repo)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["value"] > 20
    assert (tmp_path / "run" / "model.mpk").exists()


def test_plain_lightning_path_with_the_plugin(tmp_path, tiny):
    import lightning as L
    import torch

    from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
    from burnlike.models.mlp import MlpConfig
    from burnlike.optim import AdamConfig
    from burnlike.record import DefaultRecorder, RecorderCheckpointIO, load_lightning_module
    from burnlike.train import StepModule
    from burnlike.train.metric import AccuracyMetric

    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(0).build(MnistDataset.train(tiny))

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


@pytest.mark.timeout(400)
def test_optuna_search_runs_trials(tmp_path, tiny):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    proc = run_app(["hparams_search=mnist_optuna", "model=mlp", "hydra.sweeper.n_trials=2",
                    "hydra.sweeper.sampler.n_startup_trials=2", "learner.num_epochs=1", "learner.checkpointing=false"],
                   tmp_path, tiny, timeout=380)
    assert proc.returncode == 0, proc.stderr[-3000:]
    values = [json.loads((tmp_path / "sweep" / str(i) / "result.json").read_text())["value"] for i in (0, 1)]
    best = (tmp_path / "sweep" / "optimization_results.yaml").read_text()
    assert "best_value" in best and f"{max(values)}"[:5] in best
