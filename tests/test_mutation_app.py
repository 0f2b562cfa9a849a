"""The app's config reaches what it configures (issue 17's mutation sample of `burnlike.app`): the
CSV options reach the dataset, errors name their key and what was expected, Burn's execution
strategies pick Lightning's devices, git_commit reads a real checkout, wandb gets its project, and
the DDP child command keeps the job's config flags. Real Hydra composition, Lightning and git."""

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra.core.hydra_config import HydraConfig
from idx import write_mnist_idx
from images import write_corrupt, write_splits
from omegaconf import OmegaConf, open_dict
from torch import nn
from torch.utils.data import DataLoader

from burnlike.app import ddp, loggers
from burnlike.app.data import DataConfigError, build_loaders
from burnlike.app.loggers import _wandb, git_commit
from burnlike.app.run import (
    AppConfigError,
    _single_console_log,
    build_model,
    check_devices,
    execution,
    is_rank_zero,
    run,
    trainer_strategy,
    validate,
)

SMALL = ["model=mlp", "model.hidden_sizes=[8]", "learner.progress_bar=false", "learner.summary=false",
         "learner.checkpointing=false"]
TABLE = ["model=tabular", "data=csv", "data.train=t.csv", "data.target=kind", "model.num_features=2",
         "model.num_outputs=2"]



def write_table(path: Path, delimiter: str = ",", n: int = 20) -> Path:
    rows = [delimiter.join(["a", "b", "kind"])]
    rows += [delimiter.join([f"{i / n:.3f}", f"{(i * 7 % n) / n:.3f}", "up" if i % 2 else "down"]) for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


# data=csv -----------------------------------------------------------------------------------------
def test_csv_delimiter_default_features_and_min_max_reach_the_dataset(conf, tmp_path):
    write_table(tmp_path / "t.csv", delimiter=";")
    train, valid = build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.delimiter=';'", "data.normalize=min_max"))
    assert (len(train.dataset), len(valid.dataset)) == (16, 4)
    inputs = torch.cat([b.inputs for b in train])
    assert inputs.shape == (16, 2)  # features: every column but the target
    assert inputs.min().item() == pytest.approx(0.0) and inputs.max().item() == pytest.approx(1.0)


def test_csv_valid_file_is_read_with_the_train_files_columns_classes_and_delimiter(conf, tmp_path):
    """data.valid: its columns found by the train file's names (in its own order), its class names
    mapped to the train file's indices (only "up" rows here), the same delimiter; the train loader
    shuffles, the valid one doesn't; normalize=null leaves the features as they are."""
    from torch.utils.data import RandomSampler, SequentialSampler

    write_table(tmp_path / "t.csv", delimiter=";")
    (tmp_path / "v.csv").write_text("kind;b;a\nup;0.25;0.5\nup;0.75;0.125\n")
    train, valid = build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.delimiter=';'", "data.valid=v.csv",
                                      "data.normalize=null"))
    assert len(train.dataset) == 20 and len(valid.dataset) == 2  # the whole train file trains
    assert isinstance(train.sampler, RandomSampler) and isinstance(valid.sampler, SequentialSampler)
    batch = next(iter(valid))
    assert batch.inputs.tolist() == [[0.5, 0.25], [0.125, 0.75]]  # columns a, b as in the train file
    assert batch.targets.tolist() == [1, 1]  # "up" is class 1 of the train file's ["down", "up"]
    first = next(iter(DataLoader(train.dataset, batch_size=2, collate_fn=train.collate_fn)))
    assert torch.equal(first.inputs, torch.tensor([[0.0, 0.0], [0.05, 0.35]]))  # the file's values: not normalised


def test_csv_regression_errors_name_the_target_column_and_the_metric_to_optimize(conf, tmp_path):
    (tmp_path / "r.csv").write_text("a,b,y\n" + "".join(f"{i},{i % 3},{2 * i}\n" for i in range(10)))
    reg = ["model=tabular", "data=csv", "data.train=r.csv", "data.target=y", "data.task=regression",
           "model.num_features=2", f"data.root={tmp_path}"]
    with pytest.raises(DataConfigError, match=r"a regression \(data.task=regression\) has no Accuracy: use "
                                              r"learner.metrics=\[Loss\] optimized_metric=valid/Loss"):
        build_loaders(conf(*reg, "learner.metrics=[Accuracy,Loss]"))
    with pytest.raises(DataConfigError, match=r"model.num_outputs=2: the data has target column \['y'\]"):
        build_loaders(conf(*reg, "learner.metrics=[Loss]", "model.num_outputs=2"))


def test_image_folder_valid_dir_takes_the_train_classes_and_options_and_mean_std_lengths(conf, tmp_path):
    """data.valid: labels by the train folder's classes (the valid folder lacks class0), decoded with
    the same mode and size; the train loader shuffles, the valid one doesn't. data.mean/std: one
    value, or one per channel, and as many of one as of the other."""
    import shutil

    from torch.utils.data import RandomSampler, SequentialSampler

    root = write_splits(tmp_path / "img", classes=3, train=2, valid=1)
    shutil.rmtree(root / "valid" / "class0")
    folder = ["model=cnn", "data=image_folder", f"data.root={root}", "data.valid=valid", "model.num_classes=3"]
    train, valid = build_loaders(conf(*folder, "data.mode=L", "data.size=[8,8]", "model.in_channels=1",
                                      "data.mean=[0.5]", "data.std=[0.25]"))
    assert isinstance(train.sampler, RandomSampler) and isinstance(valid.sampler, SequentialSampler)
    batch = next(iter(valid))
    assert batch.targets.tolist() == [1, 2]  # class1 and class2 of the train folder's three
    assert tuple(batch.images.shape) == (2, 1, 8, 8)
    rgb, _ = build_loaders(conf(*folder, "data.mean=[0.5]", "data.std=[0.25]"))  # one value for 3 channels
    assert tuple(next(iter(rgb)).images.shape[1:]) == (3, 16, 16)
    with pytest.raises(DataConfigError, match=r"data.mean.* data.std.*: the images have 3 channel\(s\): expected one "
                                              r"value in each, or one per channel"):
        build_loaders(conf(*folder, "data.mean=[0.5,0.5,0.5]", "data.std=[0.5]"))


def test_csv_normalize_names_its_choices(conf, tmp_path):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"^data.normalize='zscore': expected standard, min_max or null$"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.normalize=zscore"))


def test_csv_class_count_mismatch_names_the_classes(conf, tmp_path):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"model.num_outputs=3: the data has classes \['down', 'up'\]: "
                                              r"set model.num_outputs=2"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "model.num_outputs=3"))


def test_csv_split_error_counts_rows(conf, tmp_path):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"^data.valid_fraction=0.01: splits the 20 rows into 20 to train and 0 "
                                              r"to validate; expected a fraction in \(0, 1\) that leaves both "
                                              r"non-empty \(or set data.valid\)$"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.valid_fraction=0.01"))
    with pytest.raises(DataConfigError, match=r"splits the 20 rows into 0 to train and 20 to validate"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.valid_fraction=0.99"))


# data=mnist and unknown options -------------------------------------------------------------------
def test_missing_mnist_names_data_root(conf, tmp_path):
    root = tmp_path / "nowhere"
    with pytest.raises(DataConfigError, match=rf"^data.root='{root}': .*MNIST") as info:
        build_loaders(conf(*SMALL, f"data.root={root}"))
    assert "None" not in str(info.value)


def test_an_unknown_data_type_is_named():
    cfg = OmegaConf.create({"data": {"root": None}, "model": {"hidden_sizes": [8]}})
    with pytest.raises(DataConfigError, match=r"^data: dict is not a data option this app knows: expected one of "
                                              r"\['mnist', 'image_folder', 'csv'\]"):
        build_loaders(cfg)


def test_an_undecodable_first_image_names_the_train_folder(conf, tmp_path):
    root = write_splits(tmp_path / "images", classes=2, train=2, valid=1)
    write_corrupt(root / "train" / "class0" / "0000.png", "truncated")
    with pytest.raises(DataConfigError, match=rf"^data.root='{root}' data.train='train': .*0000.png"):
        build_loaders(conf("model=cnn", "data=image_folder", "model.num_classes=2", f"data.root={root}"))


# run.py: devices, strategies, resume points ---------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_gpu_accelerator_without_cuda_is_named(conf):
    with pytest.raises(AppConfigError, match=r"^trainer.accelerator=gpu but torch sees no CUDA device \(use trainer=cpu"):
        check_devices(conf("trainer.accelerator=gpu"))


@pytest.mark.parametrize("devices", [0, -1])
def test_execution_needs_a_device_count(conf, devices):
    with pytest.raises(AppConfigError, match=rf"^learner.strategy=multi needs trainer.devices as a count or a list of "
                                             rf"indices, got {devices}$"):
        execution(conf("learner.strategy=multi", f"trainer.devices={devices}"))


def test_execution_on_cuda_names_cuda_devices(conf):
    kwargs = execution(conf("learner.strategy=single", "trainer.accelerator=cuda", "trainer.devices=1")).trainer_kwargs()
    assert kwargs["accelerator"] in ("gpu", "cuda") and kwargs["devices"] == [0]


def test_execution_auto_picks_the_gpu_torch_sees(conf, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # what torch reports on a GPU machine
    kwargs = execution(conf("learner.strategy=single", "trainer.devices=1")).trainer_kwargs()
    assert kwargs["accelerator"] in ("gpu", "cuda") and kwargs["devices"] == [0]


def test_rank_zero_reads_torchrun_rank(monkeypatch):
    for key in ("LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID"):
        monkeypatch.delenv(key, raising=False)
    assert is_rank_zero()
    monkeypatch.setenv("RANK", "1")
    assert not is_rank_zero()


@pytest.mark.parametrize("value", ["abc", "0", "-1"])
def test_a_resume_point_that_is_no_epoch_is_named(conf, value):
    with pytest.raises(AppConfigError, match=rf"^learner.checkpoint={value} is invalid: expected an epoch >= 1 or 'last'"):
        validate(conf(*SMALL, f"learner.checkpoint='{value}'"))


def test_lightning_console_handler_leaves_for_hydras(monkeypatch):
    import lightning  # noqa: F401

    root, light = logging.getLogger(), logging.getLogger("lightning")
    ours, theirs = logging.StreamHandler(), logging.StreamHandler()
    monkeypatch.setattr(root, "handlers", [ours])
    monkeypatch.setattr(light, "handlers", [theirs])
    _single_console_log()
    assert light.handlers == [] and root.handlers == [ours]


class NeedsDevice:
    """Another repo's model config whose init reads the device it is given."""

    def init(self, device: str) -> nn.Module:
        return nn.Linear(2, 2, device=torch.device(device))


def test_build_model_hands_init_the_cpu():
    model = build_model(OmegaConf.create({"model": {"_target_": f"{__name__}.NeedsDevice"}}))
    assert isinstance(model, nn.Linear) and model.weight.device.type == "cpu"


def test_run_creates_nested_run_dirs_before_the_data_checks(conf, tmp_path):
    out = tmp_path / "a" / "b"
    with pytest.raises(AppConfigError, match=r"^data.root="):
        run(conf(*SMALL, f"data.root={tmp_path / 'nowhere'}"), out)
    assert json.loads((out / "config.json").read_text())["learner"]["num_epochs"] >= 1


def test_run_limits_batches_without_a_progress_bar(conf, tmp_path, capfd):
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=256, n_test=64)
    value = run(conf(*SMALL, f"data.root={tiny}", "learner.num_epochs=1", "trainer.limit_train_batches=2",
                             "optimized_metric=valid/Loss"), tmp_path / "run")
    assert len((tmp_path / "run" / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 2
    text = (tmp_path / "run" / "result.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2) + "\n" and json.loads(text)["value"] == value
    out, err = capfd.readouterr()
    assert "it/s" not in out + err and "Epoch 0" not in out + err


@pytest.fixture
def multirun(conf, tmp_path):
    """HydraConfig as a multirun job sees it (the job's overrides, its output dir)."""
    cfg = conf("learner.num_epochs=2", return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.mode = "MULTIRUN"
        cfg.hydra.runtime.output_dir = str(tmp_path / "job0")
        cfg.hydra.runtime.cwd = str(tmp_path)
    HydraConfig.instance().set_config(cfg)
    yield cfg
    HydraConfig.instance().cfg = None


def test_multirun_without_lightnings_hook_spawns_ddp(multirun, monkeypatch, caplog):
    from lightning.pytorch.strategies.launchers import subprocess_script

    monkeypatch.delattr(subprocess_script, "_hydra_subprocess_cmd")
    with caplog.at_level(logging.WARNING, logger="burnlike.app"):
        assert trainer_strategy(multirun, "ddp_find_unused_parameters_true") == "ddp_spawn_find_unused_parameters_true"
        assert trainer_strategy(multirun, "ddp") == "ddp_spawn"
    assert "multirun: this Lightning has no Hydra launcher hook; using ddp_spawn for this job" in caplog.messages


def test_multirun_where_lightning_cant_see_hydra_core_spawns_ddp(multirun, monkeypatch, caplog):
    """Lightning calls its Hydra hook only where hydra-core's package metadata is found: a Hydra on
    PYTHONPATH alone would have every rank re-run the sweep (its plain sys.argv command)."""
    from lightning.pytorch.strategies.launchers import subprocess_script

    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    monkeypatch.setattr(subprocess_script, "_HYDRA_AVAILABLE", False)
    with caplog.at_level(logging.WARNING, logger="burnlike.app"):
        assert trainer_strategy(multirun, "ddp") == "ddp_spawn"
    assert subprocess_script._hydra_subprocess_cmd is not ddp.job_subprocess_cmd
    assert caplog.messages == [f"multirun: {ddp.HYDRA_UNSEEN}; using ddp_spawn for this job"]
    assert "re-run the whole sweep" in ddp.HYDRA_UNSEEN


def test_a_lightning_with_the_hook_and_no_availability_flag_is_patched(multirun, monkeypatch):
    """Only a flag saying False stops the patch: a Lightning without one calls its hook under Hydra."""
    from lightning.pytorch.strategies.launchers import subprocess_script

    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    monkeypatch.delattr(subprocess_script, "_HYDRA_AVAILABLE")
    assert trainer_strategy(multirun, "ddp") == "ddp"
    assert subprocess_script._hydra_subprocess_cmd is ddp.job_subprocess_cmd


def test_multirun_patches_lightnings_launcher_once(multirun, monkeypatch, caplog):
    from lightning.pytorch.strategies.launchers import subprocess_script

    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    with caplog.at_level(logging.INFO, logger="burnlike.app"):
        assert ddp.patch_for_multirun() is None and ddp.patch_for_multirun() is None
    assert caplog.messages == ["multirun: DDP ranks are launched for this job only (not the whole sweep)"]
    assert subprocess_script._hydra_subprocess_cmd is ddp.job_subprocess_cmd


@pytest.mark.parametrize(("argv", "flags"), [
    (["--config-name=config", "seed=3"], ["--config-name=config"]),
    (["-cn", "config", "seed=3"], ["-cn", "config"]),
    (["seed=3", "-cn"], ["-cn"]),
])
def test_ddp_child_command_keeps_config_flags_and_the_job(multirun, monkeypatch, argv, flags, tmp_path):
    import __main__

    monkeypatch.setattr(__main__, "__spec__", None)  # started as a script (under `python -m pytest` it is a module)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "train.py"), *argv])
    command, cwd = ddp.job_subprocess_cmd(1)
    assert command[:2] == [sys.executable, str(tmp_path / "train.py")]
    assert command[2:] == [*flags, "learner.num_epochs=2", "hydra.mode=RUN", f'hydra.run.dir="{tmp_path / "job0"}"',
                           "hydra.job.name=train_ddp_process_1", "hydra.output_subdir=null"]
    assert cwd == str(tmp_path)


# loggers.py -------------------------------------------------------------------------------------------
def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_git_commit_of_a_checkout_and_its_local_changes(tmp_path, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir(), elsewhere.mkdir()
    git(repo, "init", "-q")
    (repo / "f.txt").write_text("one\n")
    git(repo, "add", "f.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    sha = git(repo, "rev-parse", "HEAD")
    monkeypatch.chdir(elsewhere)  # not a checkout: only `cwd` decides
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_commit(repo) == sha
    (repo / "untracked.txt").write_text("new\n")
    assert git_commit(repo) == sha
    (repo / "f.txt").write_text("two\n")
    assert git_commit(repo) == f"{sha}-dirty"
    assert git_commit(elsewhere) is None


@pytest.mark.parametrize("hangs", ["rev-parse", "status"])
def test_git_commit_gives_up_on_a_git_that_hangs(tmp_path, monkeypatch, hangs):
    """A git stuck on a lock or a network filesystem: no commit recorded, and the run goes on."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *{hangs}*) exec sleep 30;; esac\necho 0123abcd\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(loggers, "GIT_TIMEOUT_S", 0.5)
    assert git_commit(tmp_path) is None


def test_wandb_logger_gets_the_project_offline(tmp_path):
    pytest.importorskip("wandb")
    logger = _wandb(tmp_path, "my-project", True)
    assert logger.name == "my-project"
    assert "anonymous" not in logger._wandb_init


# tree.py ------------------------------------------------------------------------------------------------
def test_config_tree_highlights_yaml_in_a_terminal(conf, colour_terminal):
    from burnlike.app.tree import print_config

    out = colour_terminal()
    print_config(conf("model=mlp", "model.hidden_sizes=[8]"))
    line = next(x for x in out.getvalue().splitlines() if "hidden_sizes" in x)
    codes = re.search(r"\x1b\[([0-9;]+)mhidden_sizes", line)
    assert codes and any(c.startswith(("3", "9")) for c in codes[1].split(";")), line  # the yaml key's colour


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graph_keeps_the_data_on_the_gpu(conf, tmp_path):
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=128, n_test=64)
    train, valid = build_loaders(conf(*SMALL, f"data.root={tiny}", "learner.cuda_graph=true", "trainer.devices=1"))
    assert train.device == valid.device == torch.device("cuda:0")


# --- validate: each check's message and bound (second pass over the app sample) ------------------------------

@pytest.mark.parametrize(("override", "message"), [
    ("learner.early_stopping_patience=0", "learner.early_stopping_patience=0 is invalid: expected null or an integer >= 1"),
    ("optimizer.lr=0.0", "optimizer.lr=0.0 is invalid: expected a number > 0"),
    ("learner.strategy=ddp", "learner.strategy=ddp and trainer.strategy=ddp both choose the Lightning strategy: set "
                             "one (trainer.strategy=auto with learner.strategy)"),
])
def test_validate_names_the_key_and_what_it_expects(conf, override, message):
    extra = ["trainer.strategy=ddp"] if override.startswith("learner.strategy") else []
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, override, *extra))
    assert str(error.value) == message


def test_a_batch_of_one_is_valid(conf):
    validate(conf(*SMALL, "data.batch_size=1"))


def test_an_unknown_metric_lists_the_known_ones(conf):
    with pytest.raises(AppConfigError, match=r"^learner\.metrics: unknown metric 'Bogus' \(expected some of \['"):
        validate(conf(*SMALL, "learner.metrics=[Loss,Bogus]"))


def test_an_unknown_logger_is_an_app_config_error_with_the_loggers_text(conf):
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, "logger.kinds=[bogus]"))
    assert str(error.value).startswith("logger.kinds: unknown logger 'bogus' (expected some of [")


def test_an_optimized_metric_of_an_unknown_split_is_refused_by_name(conf):
    with pytest.raises(AppConfigError, match=r"^optimized_metric='test/Loss' is not logged by this run"):
        validate(conf(*SMALL, "optimized_metric=test/Loss"))


def test_the_sweep_direction_resolver_is_registered_under_its_documented_name():
    from burnlike.app.schema import register_configs

    register_configs()
    assert OmegaConf.has_resolver("burnlike.sweep_direction")
    assert OmegaConf.create({"d": "${burnlike.sweep_direction:valid/Loss}"}).d == "minimize"


def test_ddp_child_command_of_an_app_started_as_a_module(multirun, monkeypatch, tmp_path):
    import importlib.machinery

    import __main__

    monkeypatch.setattr(__main__, "__spec__", importlib.machinery.ModuleSpec("myproject.train", None))
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "train.py"), "seed=3"])
    command, _ = ddp.job_subprocess_cmd(1)
    assert command[:3] == [sys.executable, "-m", "myproject.train"]


def test_is_multirun_only_in_a_multirun_job(conf):
    from burnlike.app.run import _is_multirun

    assert not _is_multirun()  # outside Hydra
    HydraConfig.instance().set_config(conf(return_hydra_config=True))  # a single run
    try:
        assert not _is_multirun()
    finally:
        HydraConfig.instance().cfg = None
