"""The app's error paths and helpers, called in-process on composed configs (the CLI tests run the
same code in a child process): the Trainer's and the resume's errors name the keys, values and
files; `fail` is one `error:` line and status 2; the config printout; the TensorBoard logger."""

import re
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from idx import write_mnist_idx
from omegaconf import OmegaConf, open_dict
from test_app import compose_app

from burnlike.app.loggers import build_loggers
from burnlike.app.run import AppConfigError, fail, output_dir, resume_error, run, trainer_error
from burnlike.app.tree import _flat, print_config


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=64, n_test=32)


def config(data, *overrides, hydra_config=False):
    return compose_app(["model=mlp", f"data.root={data}", "learner.progress_bar=false", *overrides],
                       hydra_config=hydra_config)


@pytest.mark.parametrize(("override", "key", "value", "says"), [
    ("trainer.precision=bogus", "trainer.precision", "'bogus'", "Precision 'bogus' is invalid"),
    ("trainer.strategy=nonsense", "trainer.strategy", "'nonsense'", "invalid strategy name"),
])
def test_a_value_the_trainer_rejects_is_named_with_its_key(tmp_path, data, override, key, value, says):
    with pytest.raises(AppConfigError) as err:
        run(config(data, override), tmp_path)
    message = str(err.value)
    assert message.startswith(f"{key}: Lightning's Trainer rejected {key}={value}: ")
    assert says in message and "\n" not in message


def test_trainer_error_names_every_placement_key_when_the_message_names_none(data):
    cfg = config(data, "trainer.precision=16-mixed")
    text = trainer_error(cfg, ValueError("something\n   went   wrong"))
    keys = "trainer.precision / trainer.strategy / trainer.devices / trainer.num_nodes / trainer.accelerator"
    assert text.startswith(f"{keys}: Lightning's Trainer rejected trainer.precision='16-mixed', ")
    assert text.endswith(": something went wrong")  # whitespace folded to one line
    assert "trainer.num_nodes=1" in text
    both = trainer_error(cfg, ValueError("devices and accelerator don't match"))
    assert both.startswith("trainer.devices / trainer.accelerator: Lightning's Trainer rejected trainer.devices=")


def test_resuming_a_missing_epoch_lists_the_run_dirs_checkpoints(tmp_path, data):
    cfg = config(data, "learner.checkpoint=7", hydra_config=True)
    out = tmp_path / "run"
    (out / "checkpoint").mkdir(parents=True)
    for name in ("trainer-3.mpk", "trainer-1.mpk", "model-1.mpk"):
        (out / "checkpoint" / name).write_bytes(b"")
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(out)
    HydraConfig.instance().set_config(cfg)  # as in a Hydra job: the run dir is Hydra's output dir
    try:
        assert output_dir() == out
        with open_dict(cfg):
            del cfg["hydra"]
        with pytest.raises(AppConfigError) as err:
            run(cfg)
    finally:
        HydraConfig.instance().cfg = None
    assert str(err.value) == (f"learner.checkpoint=7: checkpoint(7): no checkpoint file at {out}/checkpoint/trainer-7.mpk. "
                              f"Checkpoints in {out}: trainer-1.mpk, trainer-3.mpk. "
                              "Resume inside the run's own dir: hydra.run.dir=<that run dir>")


def test_resume_error_without_checkpointing_or_checkpoints(tmp_path, data):
    off = config(data, "learner.checkpoint=last", "learner.checkpointing=false")
    assert resume_error(off, tmp_path, FileNotFoundError("x")) == \
        "learner.checkpoint=last needs learner.checkpointing=true (nothing to resume from)"
    on = config(data, "learner.checkpoint=2", "learner.checkpointing=true")
    text = resume_error(on, tmp_path / "empty", FileNotFoundError("checkpoint(2): no checkpoint file"))
    assert text.startswith("learner.checkpoint=2: checkpoint(2): no checkpoint file. ")
    assert f"Checkpoints in {tmp_path / 'empty'}: none." in text


def test_fail_is_one_error_line_and_status_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        fail("data.root: /nowhere has no MNIST/raw")
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == "error: data.root: /nowhere has no MNIST/raw\n" and captured.out == ""


def test_flat_config_lines():
    group = OmegaConf.create({"lr": 0.001, "betas": {"b1": 0.9, "b2": 0.999}, "empty": {}, "tags": [1, 2],
                              "ref": "${lr}"})
    assert _flat(group) == "lr=0.001 betas.b1=0.9 betas.b2=0.999 empty={} tags=[1, 2] ref=0.001"
    assert _flat(42) == "42" and _flat("mnist") == "mnist"
    assert _flat(OmegaConf.create([1, {"a": 2}])) == "[1, {'a': 2}]"


def test_print_config_is_one_line_per_group_when_redirected(data, capsys):
    cfg = config(data, "optimizer=sgd", "seed=7")
    print_config(cfg)
    lines = capsys.readouterr().out.splitlines()
    groups = [line.split(":")[0].removeprefix("config ") for line in lines]
    assert groups[:5] == ["model", "data", "optimizer", "trainer", "learner"]
    assert sorted(groups[5:]) == sorted(k for k in cfg if k not in groups[:5])
    assert "config seed: 7" in lines
    optimizer = next(line for line in lines if line.startswith("config optimizer: "))
    assert f"lr={cfg.optimizer.lr}" in optimizer and "momentum" in optimizer
    assert f"root={data}" in next(line for line in lines if line.startswith("config data: "))
    print_config(cfg, order=("learner", "model"))
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()][:2] == ["config learner", "config model"]


def test_print_config_is_a_tree_on_a_terminal(data, terminal):
    screen = terminal()
    print_config(config(data, "optimizer=sgd"))
    text = re.sub(r"\x1b\[[0-9;]*m", "", screen.getvalue())  # without the colours
    assert text.splitlines()[0] == "config"
    for group in ("model", "data", "optimizer", "trainer", "learner"):
        assert f"── {group}" in text
    assert "config optimizer:" not in text  # not the one-line form
    assert "momentum" in text and "lr" in text


def test_tensorboard_logger_writes_under_the_run_dir(tmp_path, data):
    (logger,) = build_loggers(config(data, "logger=tensorboard"), tmp_path)
    assert type(logger).__name__ == "TensorBoardLogger"
    assert Path(logger.save_dir) == tmp_path and logger.name == "tensorboard"
    assert Path(logger.log_dir) == tmp_path / "tensorboard" / "version_0"
    logger.log_metrics({"valid/Loss": 0.5}, step=1)
    logger.log_hyperparams({"lr": 0.1})
    logger.finalize("success")
    files = list((tmp_path / "tensorboard" / "version_0").glob("events.out.tfevents.*"))
    assert files and files[0].stat().st_size > 0
    assert logger._default_hp_metric is False  # no hp_metric placeholder next to Burn's metrics


def test_matmul_precision_sets_torchs_for_the_run_and_is_checked(tmp_path, data):
    import torch

    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        run(config(data, "learner.num_epochs=1", "learner.summary=false", "trainer=cpu"), tmp_path / "unset")
        assert torch.get_float32_matmul_precision() == "highest"  # null: left as it was
        run(config(data, "learner.num_epochs=1", "learner.summary=false", "trainer=cpu",
                   "trainer.matmul_precision=high"), tmp_path / "set")
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(before)
    with pytest.raises(AppConfigError, match=r"^trainer.matmul_precision='fast' is invalid: expected null or one of "
                                             r"\['highest', 'high', 'medium'\]$"):
        run(config(data, "trainer.matmul_precision=fast"), tmp_path / "bad")
