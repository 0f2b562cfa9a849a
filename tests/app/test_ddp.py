"""`burnlike.app.ddp`: DDP inside a Hydra multirun. The command Lightning's ddp launcher runs for
ranks 1..N-1 must re-run this job (its overrides, RUN mode, its output dir), not the whole sweep,
which every rank would otherwise launch again; `patch_for_multirun` installs it, once, only where
Lightning will call it."""

import importlib.machinery
import logging
import sys

import pytest
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from lightning.pytorch.strategies.launchers import subprocess_script
from omegaconf import open_dict, read_write

from burnlike.app import ddp
from burnlike.app.ddp import job_subprocess_cmd
from burnlike.app.run import trainer_strategy


# --- the child command ----------------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "flags"), [
    (["--config-name=config", "seed=3"], ["--config-name=config"]),
    (["-cn", "config", "seed=3"], ["-cn", "config"]),
    (["seed=3", "-cn"], ["-cn"]),
])
def test_ddp_child_command_keeps_config_flags_and_the_job(multirun, monkeypatch, argv, flags, tmp_path):
    import __main__

    monkeypatch.setattr(__main__, "__spec__", None)  # started as a script (under `python -m pytest` it is a module)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "train.py"), *argv])
    command, cwd = job_subprocess_cmd(1)
    assert command[:2] == [sys.executable, str(tmp_path / "train.py")]
    assert command[2:] == [*flags, "learner.num_epochs=2", "hydra.mode=RUN", f'hydra.run.dir="{tmp_path / "job0"}"',
                           "hydra.job.name=train_ddp_process_1", "hydra.output_subdir=null"]
    assert cwd == str(tmp_path)


def test_ddp_child_command_reruns_an_app_started_as_a_module_with_dash_m(multirun, monkeypatch, tmp_path):
    import __main__

    monkeypatch.setattr(__main__, "__spec__", importlib.machinery.ModuleSpec("myproject.train", None))
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "train.py"), "seed=3"])
    command, _ = job_subprocess_cmd(1)
    assert command[:3] == [sys.executable, "-m", "myproject.train"]


def test_ddp_child_command_runs_this_job_not_the_sweep(conf, tmp_path, monkeypatch):
    """What Lightning's ddp launcher runs for rank 1 inside job 3 of an optuna sweep: Hydra composes
    it, and its RUN mode wins over the MULTIRUN that hparams_search sets."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")

    job = ["hparams_search=mnist_optuna", "trainer=ddp", "optimizer.lr=0.01"]
    cfg = conf(*job, return_hydra_config=True)
    with read_write(cfg), open_dict(cfg):  # what Hydra's launcher fills in for job 3 of the sweep
        cfg.hydra.runtime.output_dir = str(tmp_path / "sweep" / "3")
        cfg.hydra.runtime.cwd = str(tmp_path)
        cfg.hydra.overrides.task = job
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # restored after the test
    HydraConfig.instance().set_config(cfg)
    monkeypatch.setattr(sys, "argv", ["train.py", "-m", "hparams_search=mnist_optuna", "trainer=ddp",
                                      "--config-name", "config"])
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", None)  # a script, as `python train.py`
    command, cwd = job_subprocess_cmd(1)
    args = command[2:]
    assert command[:2] == [sys.executable, str(tmp_path / "train.py")] and cwd == str(tmp_path)  # Hydra's cwd
    assert "-m" not in args and args[:2] == ["--config-name", "config"] and "optimizer.lr=0.01" in args
    assert f'hydra.run.dir="{tmp_path / "sweep" / "3"}"' in args and "hydra.output_subdir=null" in args
    # Hydra accepts the command, and RUN wins over the MULTIRUN that hparams_search sets
    child = conf(*[a for a in args[2:] if a != "hydra.output_subdir=null"], return_hydra_config=True)
    assert child.hydra.mode == RunMode.RUN and child.hydra.run.dir == str(tmp_path / "sweep" / "3")
    assert child.optimizer.lr == 0.01


# --- patching Lightning's launcher ----------------------------------------------------------------
def test_multirun_patches_lightnings_launcher_once(multirun, monkeypatch, caplog):
    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    with caplog.at_level(logging.DEBUG, logger="burnlike.app"):
        assert ddp.patch_for_multirun() is None and ddp.patch_for_multirun() is None
    assert caplog.messages == ["multirun: DDP ranks are launched for this job only (not the whole sweep)"]
    assert caplog.records[0].levelno == logging.DEBUG  # a sweep without DDP jobs never shows it
    assert subprocess_script._hydra_subprocess_cmd is ddp.job_subprocess_cmd


def test_multirun_where_lightning_cant_see_hydra_core_spawns_ddp(multirun, monkeypatch, caplog):
    """Lightning calls its Hydra hook only where hydra-core's package metadata is found: a Hydra on
    PYTHONPATH alone would have every rank re-run the sweep (its plain sys.argv command)."""
    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    monkeypatch.setattr(subprocess_script, "_HYDRA_AVAILABLE", False)
    with caplog.at_level(logging.WARNING, logger="burnlike.app"):
        assert trainer_strategy(multirun, "ddp") == "ddp_spawn"
    assert subprocess_script._hydra_subprocess_cmd is not ddp.job_subprocess_cmd
    assert caplog.messages == [f"multirun: {ddp.HYDRA_UNSEEN}; using ddp_spawn for this job"]
    assert "re-run the whole sweep" in ddp.HYDRA_UNSEEN


def test_a_lightning_with_the_hook_and_no_availability_flag_is_patched(multirun, monkeypatch):
    """Only a flag saying False stops the patch: a Lightning without one calls its hook under Hydra."""
    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    monkeypatch.delattr(subprocess_script, "_HYDRA_AVAILABLE")
    assert trainer_strategy(multirun, "ddp") == "ddp"
    assert subprocess_script._hydra_subprocess_cmd is ddp.job_subprocess_cmd
