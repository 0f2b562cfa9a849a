"""Multirun sweeps of the app (`train.py -m`): each job its own run dir, artifacts and returned value;
DDP inside a multirun launches the ranks of each job (no second sweep); the Optuna sweeper receives
the value each job returns."""

import json

import pytest
from omegaconf import OmegaConf

from burnlike.train.logger import read_metric_log
from tests.journeys.helpers import run_app


@pytest.mark.slow
def test_two_job_sweep_has_two_run_dirs_and_results(tmp_path, tiny_app):
    proc = run_app(["-m", "model=mlp", "optimizer.lr=0.001,0.01", "learner.num_epochs=1"], tmp_path, tiny_app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "sweep"
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]
    results = [json.loads((sweep / str(i) / "result.json").read_text()) for i in (0, 1)]
    for i, r in enumerate(results):  # each job returned its own best epoch, as its logs say
        assert r["value"] == max(r["epochs"].values()) == r["epochs"]["1"]
        assert r["value"] == pytest.approx(read_metric_log(sweep / str(i) / "valid" / "epoch-1" / "Accuracy.log"),
                                           rel=1e-6)
    lrs = [json.loads((sweep / str(i) / "config.json").read_text())["optimizer"]["lr"] for i in (0, 1)]
    assert lrs == [0.001, 0.01]
    for i in (0, 1):  # each job its own artifacts
        assert (sweep / str(i) / "checkpoint" / "model-1.mpk").exists() and (sweep / str(i) / "model.mpk").exists()
        assert (sweep / str(i) / ".hydra" / "overrides.yaml").exists()
    assert (sweep / "multirun.yaml").exists() and not (tmp_path / "run").exists()


@pytest.mark.timeout(500)
@pytest.mark.slow
def test_ddp_inside_a_multirun_launches_ranks_for_each_job_only(tmp_path, tiny_app):
    proc = run_app(["-m", "trainer=ddp", "optimizer.lr=0.001,0.01", "learner.num_epochs=1",
                    "learner.checkpointing=false"], tmp_path, tiny_app, timeout=480)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "sweep"
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert jobs == ["0", "1"]  # no re-launched sweep: no extra jobs, no second sweep dir
    assert not (tmp_path / "run").exists()
    log = proc.stdout + proc.stderr
    assert "using ddp_spawn" not in log and log.count("Launching 2 jobs locally") == 1  # Lightning's launcher, patched
    assert proc.stdout.count("Learner Summary") == 2  # rank 0 of each job, nobody else
    for job in jobs:  # each job its own 2-rank DDP run (rank 0 validated 64 of 128: one line)
        result = json.loads((sweep / job / "result.json").read_text())
        assert result["value"] == max(result["epochs"].values()) == result["epochs"]["1"]
        correct = result["value"] * 128 / 100  # the cross-rank accuracy over all 128 test digits
        assert correct == pytest.approx(round(correct), abs=1e-6)
        assert len((sweep / job / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()) == 1
        assert (sweep / job / "train_ddp_process_1.log").exists()


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_optuna_search_gets_each_jobs_returned_value(tmp_path, tiny_app):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    proc = run_app(["hparams_search=mnist_optuna", "model=mlp", "hydra.sweeper.n_trials=2",
                    "hydra.sweeper.sampler.n_startup_trials=2", "learner.num_epochs=1", "learner.checkpointing=false"],
                   tmp_path, tiny_app, timeout=380)
    assert proc.returncode == 0, proc.stderr[-3000:]
    values = [json.loads((tmp_path / "sweep" / str(i) / "result.json").read_text())["value"] for i in (0, 1)]
    best = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    assert best.best_value == pytest.approx(max(values))  # the sweeper received what each job returned
