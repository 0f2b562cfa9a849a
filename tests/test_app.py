"""The Hydra app: config composition, CLI runs (single, sweep, DDP, DDP in a sweep), errors, reuse.

Subprocess runs use tiny IDX files (tests/idx.py) and 1 epoch; the quick CLI checks (bad overrides,
--help, --cfg job) start together so their start-up times overlap.
"""

import json
import os
import shutil
import subprocess
import sys
from itertools import product
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from idx import write_mnist_idx
from omegaconf import OmegaConf, open_dict, read_write

from burnlike.train.logger import read_metric_log

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
OTHER_REPO = Path(__file__).resolve().parent / "other_repo"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=256, n_test=128)


def app_cmd(args, out, script=ROOT / "train.py"):
    return [sys.executable, str(script), *args, "learner.progress_bar=false", f"hydra.run.dir={out}/run",
            f"hydra.sweep.dir={out}/sweep"]


def app_env(tiny, extra=None):
    """The app's runs here test its CPU path on any machine (`trainer=ddp` means two CPU processes,
    not two GPUs a one-GPU machine lacks); the GPU path has its own `cuda` tests."""
    return {**os.environ, "BURNLIKE_DATA": str(tiny), "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": "",
            **(extra or {})}


def run_app(args, tmp_path, tiny, script=ROOT / "train.py", cwd=ROOT, timeout=300, env_extra=None):
    return subprocess.run(app_cmd(args, tmp_path, script), cwd=cwd, env=app_env(tiny, env_extra),
                          capture_output=True, text=True, timeout=timeout)


def start_app(args, out, tiny, script=ROOT / "train.py", cwd=ROOT, env_extra=None):
    return subprocess.Popen(app_cmd(args, out, script), cwd=cwd, env=app_env(tiny, env_extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def compose_app(overrides, hydra_config=False, config_dir=CONF):
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=hydra_config)


# --- composition -----------------------------------------------------------------------------------

def shipped_options(group):
    return sorted(p.stem for p in (ROOT / "burnlike" / "conf" / group).glob("*.yaml"))


GROUPS = {g: shipped_options(g) for g in ("model", "data", "optimizer", "trainer", "learner")}
GROUPS["debug"] = [None, *shipped_options("debug")]
# the MNIST options in every combination; the other data options and their models: tests/test_data_app.py
GROUPS["model"], GROUPS["data"] = ["mlp", "mnist"], ["mnist"]


def test_shipped_groups_are_the_documented_ones():
    assert shipped_options("model") == ["cnn", "mlp", "mnist", "tabular"]
    assert shipped_options("data") == ["csv", "image_folder", "mnist"]
    assert GROUPS["optimizer"] == ["adagrad", "adam", "adamw", "adan", "lbfgs", "muon", "rmsprop", "sgd"]
    assert GROUPS["trainer"] == ["cpu", "ddp", "ddp_spawn", "default", "gpu"]
    assert shipped_options("hparams_search") == ["mnist_optuna"] and GROUPS["debug"][1:] == ["fast", "limit"]


@pytest.fixture
def app_hydra():
    """One Hydra initialisation for the many compositions below (compose is the part under test)."""
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield
    GlobalHydra.instance().clear()


# Optimizers don't interact with the other groups: Burn's original three go through every combination,
# the later ones (adagrad, rmsprop, muon, adan, lbfgs) compose and step once each in test_burn_api.py.
COMBINED = {**GROUPS, "optimizer": ["adam", "adamw", "sgd"]}


@pytest.mark.parametrize("combo", list(product(*COMBINED.values())), ids=lambda c: "-".join(map(str, c)))
def test_every_shipped_combination_composes(app_hydra, combo):
    overrides = [f"{g}={o}" for g, o in zip(COMBINED, combo) if o is not None]
    cfg = compose("config", overrides=overrides)
    from burnlike.app.run import validate
    from burnlike.config import is_config

    validate(cfg)
    model, optimizer = OmegaConf.to_object(cfg.model), OmegaConf.to_object(cfg.optimizer)
    assert is_config(model) and callable(model.init)  # the @config classes themselves, not dicts
    assert is_config(optimizer) and callable(optimizer.init) and optimizer.lr > 0
    assert cfg.trainer.strategy in ("auto", "ddp", "ddp_spawn") and cfg.learner.num_epochs >= 1


def test_groups_default_to_burns_values():
    from burnlike.models.mnist import ModelConfig
    from burnlike.optim import AdamConfig, AdamWConfig, SgdConfig

    cfg = compose_app([])
    assert OmegaConf.to_object(cfg.model) == ModelConfig(num_classes=10, hidden_size=512, dropout=0.5)
    assert cfg.data.batch_size == 64 and cfg.learner.recorder == "compact"
    for name, cls in (("adam", AdamConfig), ("adamw", AdamWConfig), ("sgd", SgdConfig)):
        opt = OmegaConf.to_object(compose_app([f"optimizer={name}"]).optimizer)
        burn = cls()
        for field in burn.__dataclass_fields__:
            assert getattr(opt, field) == getattr(burn, field), (name, field)


def test_optuna_search_composes():
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    cfg = compose_app(["hparams_search=mnist_optuna"], hydra_config=True)
    assert cfg.hydra.sweeper.direction == "maximize" and "optimizer.lr" in cfg.hydra.sweeper.params
    assert cfg.hydra.mode == RunMode.MULTIRUN
    # the search's direction is the optimized metric's own
    cfg = compose_app(["hparams_search=mnist_optuna", "optimized_metric=train/Loss"], hydra_config=True)
    assert cfg.hydra.sweeper.direction == "minimize"


# --- one home for defaults: the schema dataclasses ----------------------------------------------------

CONF_PKG = ROOT / "burnlike" / "conf"
SCHEMA_FILES = sorted(p for p in CONF_PKG.rglob("*.yaml") if p.parent.name != "launcher")  # not Hydra's own


def leaves(node, prefix=""):
    """`{dotted key: value}` of a plain dict tree (empty dicts and lists are values)."""
    out = {}
    for key, value in node.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def own_values(path):
    """What a group YAML sets itself (not its defaults list, not Hydra's own settings)."""
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}
    return leaves({k: v for k, v in data.items() if k not in ("defaults", "hydra")})


def schema_for(path):
    """The schema defaults a YAML file lands on: AppConfig for the primary and `_global_` files, the
    group's node of it for data/trainer/learner, the `/schema/...@_here_` class for model/optimizer."""
    from burnlike.app.schema import SCHEMAS, AppConfig

    app = OmegaConf.to_container(OmegaConf.structured(AppConfig), resolve=False)
    group = path.parent.name
    if path.parent == CONF_PKG or "# @package _global_" in path.read_text():
        return leaves(app)
    defaults = OmegaConf.load(path).get("defaults", [])
    schema = [d[len("/schema/"):].split("@")[0] for d in defaults if isinstance(d, str) and d.startswith("/schema/")]
    if schema:
        return leaves(OmegaConf.to_container(OmegaConf.structured(SCHEMAS[schema[0]]), resolve=False))
    return leaves(app[group])


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: str(p.relative_to(CONF_PKG)))
def test_group_yamls_hold_only_what_differs_from_the_schema(path):
    schema = schema_for(path)
    for key, value in own_values(path).items():
        where = f"{path.relative_to(ROOT)}: {key}"
        assert key in schema, f"{where} is not in the schema (burnlike/app/schema.py)"
        assert schema[key] == "???" or schema[key] != value, \
            f"{where}: {value!r} repeats the schema's default; defaults live in burnlike/app/schema.py only"


def test_default_options_compose_to_the_schema_defaults_and_others_add_only_their_own(app_hydra):
    from burnlike.app.schema import AppConfig

    app = leaves(OmegaConf.to_container(OmegaConf.structured(AppConfig), resolve=False))
    composed = leaves(OmegaConf.to_container(compose("config"), resolve=False))
    for key, default in app.items():  # model and optimizer are the groups' own schemas
        if not key.startswith(("model", "optimizer")):
            assert composed[key] == default, f"{key}: composes to {composed[key]!r}, the schema says {default!r}"
    for group in ("model", "data", "optimizer", "trainer", "learner"):
        for option in GROUPS[group]:
            path = CONF_PKG / group / f"{option}.yaml"
            expected = dict(schema_for(path))
            for parent in OmegaConf.load(path).get("defaults", []):  # same-group parents (trainer/cpu -> default)
                if isinstance(parent, str) and "/" not in parent and parent != "_self_":
                    expected.update(own_values(path.parent / f"{parent}.yaml"))
            expected.update(own_values(path))
            cfg = compose("config", overrides=[f"{group}={option}"])
            assert leaves(OmegaConf.to_container(cfg[group], resolve=False)) == expected, f"{group}={option}"


def test_result_json_takes_the_direction_from_the_metric(tmp_path):
    """A lower-is-better metric whose name doesn't say so: result.json must minimize it."""
    from burnlike.app.run import AppConfigError, MetricTracker
    from burnlike.train.metric import LearningRateMetric, Metric
    from burnlike.train.metric.store import EpochEntry, MetricStore, Split

    class ErrorRate(Metric):
        name = "Error Rate"
        unit = "%"
        higher_is_better = False

    store = MetricStore()
    store.register([ErrorRate(), LearningRateMetric()])
    tracker = MetricTracker("valid/Error Rate", tmp_path / "result.json", store)
    store.add_listener(tracker)
    for epoch, value in enumerate([30.0, 10.0, 20.0], 1):
        store.end_epoch(Split.VALID, epoch, {"Error Rate": EpochEntry(value)})
        store.end_epoch(Split.TRAIN, epoch, {"Learning Rate": EpochEntry(0.1)})
    result = json.loads((tmp_path / "result.json").read_text())
    assert result == {"optimized_metric": "valid/Error Rate", "mode": "min", "value": 10.0, "best_epoch": 2,
                      "epochs": {"1": 30.0, "2": 10.0, "3": 20.0}}
    assert tracker.best() == 10.0
    with pytest.raises(AppConfigError, match="'train/Learning Rate'.*no direction"):
        MetricTracker("train/Learning Rate", tmp_path / "lr.json", store)


def test_typed_overrides_are_checked_at_compose():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="hidden_size"):
        compose_app(["model.hidden_size=abc"])
    with pytest.raises(ConfigCompositionException, match="hidden_sise"):
        compose_app(["model.hidden_sise=3"])
    with pytest.raises(ConfigCompositionException, match="beta_1"):
        compose_app(["optimizer.beta_1=fast"])
    with pytest.raises(ConfigCompositionException) as info:  # schemas are not options of a group
        compose_app(["model=mnist_schema"])
    options = str(info.value).split("Available options")[1].split("Config search path")[0]
    assert "mnist_schema" in str(info.value) and "mnist" in options and "schema" not in options


def test_ddp_child_command_runs_this_job_not_the_sweep(tmp_path, monkeypatch):
    """What Lightning's ddp launcher runs for rank 1 inside a multirun job (burnlike/app/ddp.py)."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    from hydra.core.hydra_config import HydraConfig

    from burnlike.app.ddp import job_subprocess_cmd

    job = ["hparams_search=mnist_optuna", "trainer=ddp", "optimizer.lr=0.01"]
    cfg = compose_app(job, hydra_config=True)
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
    child = compose_app([a for a in args[2:] if a != "hydra.output_subdir=null"], hydra_config=True)
    assert child.hydra.mode == RunMode.RUN and child.hydra.run.dir == str(tmp_path / "sweep" / "3")
    assert child.optimizer.lr == 0.01

    # the app installs this command for multirun jobs; without Lightning's hook it falls back to ddp_spawn
    from lightning.pytorch.strategies.launchers import subprocess_script

    from burnlike.app.run import trainer_strategy

    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    assert trainer_strategy(cfg) == "ddp" and subprocess_script._hydra_subprocess_cmd is job_subprocess_cmd
    monkeypatch.delattr(subprocess_script, "_hydra_subprocess_cmd")
    assert trainer_strategy(cfg) == "ddp_spawn"


# --- quick CLI checks, started together --------------------------------------------------------------

BAD = {  # override -> what the message must name
    "learner.num_epocs=3": "num_epocs",
    "learner.num_epochs=many": "learner.num_epochs",
    "model=resnet9000": "model/resnet9000",
    "learner.num_epochs=-1": "learner.num_epochs",
    "learner.recorder=pickle": "learner.recorder",
    "trainer.precision=banana": "trainer.precision",
    "learner.checkpoint=7": "learner.checkpoint",
    "optimized_metric=valid/Speed": "optimized_metric",
}
QUICK = {**{k: [k] for k in BAD}, "help": ["--help"], "cfg": ["--cfg", "job", "optimizer=sgd"],
         "no_data": ["data.root=/nonexistent/mnist"]}


@pytest.fixture(scope="module")
def quick(tiny, tmp_path_factory):
    base = tmp_path_factory.mktemp("quick")
    procs = {name: start_app(args, base / str(i), tiny) for i, (name, args) in enumerate(QUICK.items())}
    return {name: finish(p, timeout=240) for name, p in procs.items()}


@pytest.mark.parametrize("override", list(BAD))
def test_bad_overrides_exit_nonzero_naming_the_key(quick, override):
    proc = quick[override]
    assert proc.returncode != 0
    assert BAD[override] in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "File \"" not in proc.stderr
    message = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert message or "Set the environment variable HYDRA_FULL_ERROR" in proc.stderr
    assert len(message) <= 1  # one paragraph: the app's own errors are a single `error:` line


def test_missing_data_names_the_key_and_the_files(quick):
    proc = quick["no_data"]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "/nonexistent/mnist" in proc.stderr and "train-images-idx3-ubyte" in proc.stderr


def test_help_and_cfg_job(quick):
    proc = quick["help"]
    assert proc.returncode == 0 and "model: mnist, mlp" in proc.stdout and "trainer=ddp" in proc.stdout
    assert "num_epochs: 10" in proc.stdout
    proc = quick["cfg"]
    assert proc.returncode == 0 and "lr: 0.01" in proc.stdout
    assert OmegaConf.create(proc.stdout).optimizer.lr == 0.01


# --- training runs --------------------------------------------------------------------------------

@pytest.mark.slow
def test_single_run_leaves_burn_artifacts_and_hydra_dir(tmp_path, tiny):
    proc = run_app(["learner.num_epochs=1", "model=mnist", "trainer.devices=1"], tmp_path, tiny)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    for name in (".hydra/config.yaml", ".hydra/overrides.yaml", "config.json", "experiment.log",
                 "train/epoch-1/Accuracy.log", "valid/epoch-1/Loss.log", "checkpoint/model-1.mpk", "model.mpk",
                 "result.json"):
        assert (run / name).exists(), name
    assert "Learner Summary" in proc.stdout and "optimizer" in proc.stdout  # summary and the config tree
    result = json.loads((run / "result.json").read_text())
    assert result["optimized_metric"] == "valid/Accuracy" and result["mode"] == "max"
    assert result["value"] == max(result["epochs"].values()) == result["epochs"][str(result["best_epoch"])]
    # one process: rank 0's Burn-layout logs hold every validation step, so they agree exactly
    assert result["epochs"]["1"] == pytest.approx(read_metric_log(run / "valid" / "epoch-1" / "Accuracy.log"), rel=1e-6)
    assert json.loads((run / "config.json").read_text())["learner"]["num_epochs"] == 1

    # resume from the CLI: same run dir, checkpoint 1, one more epoch
    proc = run_app(["learner.num_epochs=2", "learner.checkpoint=1"], tmp_path, tiny)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (run / "checkpoint" / "model-2.mpk").exists() and (run / "train" / "epoch-1").is_dir()
    assert not (run / "train" / "epoch-3").exists()
    assert "resuming from" in (run / "experiment.log").read_text()
    resumed = json.loads((run / "result.json").read_text())
    assert set(resumed["epochs"]) == {"1", "2"} and resumed["epochs"]["1"] == result["epochs"]["1"]
    assert resumed["value"] == max(resumed["epochs"].values())


@pytest.mark.slow
def test_two_job_sweep_has_two_run_dirs_and_results(tmp_path, tiny):
    proc = run_app(["-m", "model=mlp", "optimizer.lr=0.001,0.01", "learner.num_epochs=1"], tmp_path, tiny)
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


def accuracy_of_saved_model(path, tiny):
    import torch

    from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
    from burnlike.models.mnist import ModelConfig
    from burnlike.record import DefaultRecorder

    model = ModelConfig(num_classes=10, hidden_size=512).init("cpu").load_file(path, DefaultRecorder(), "cpu")
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in DataLoaderBuilder(MnistBatcher()).batch_size(64).build(MnistDataset.test(tiny)):
            correct += int((model(batch.images).argmax(1) == batch.targets).sum())
            total += len(batch.targets)
    return 100.0 * correct / total


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_ddp_two_processes(tmp_path, tiny):
    proc = run_app(["trainer=ddp", "trainer.devices=2", "learner.num_epochs=1", "learner.recorder=default"],
                   tmp_path, tiny, timeout=380)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) == \
        ["model-1.mpk", "optim-1.mpk", "scheduler-1.mpk", "trainer-1.mpk"]  # one set, rank 0's
    assert not list(run.glob("**/*.tmp")) and proc.stdout.count("Learner Summary") == 1
    # each rank validated half of the 128 samples (1 batch of 64); rank 0 writes its own lines
    assert len((run / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()) == 1
    # the returned metric is the cross-rank value: the accuracy of the final model on all 128
    value = json.loads((run / "result.json").read_text())["value"]
    assert value == pytest.approx(accuracy_of_saved_model(run / "model.mpk", tiny), abs=1e-6)


@pytest.mark.timeout(500)
@pytest.mark.slow
def test_ddp_inside_a_multirun(tmp_path, tiny):
    proc = run_app(["-m", "trainer=ddp", "optimizer.lr=0.001,0.01", "learner.num_epochs=1",
                    "learner.checkpointing=false"], tmp_path, tiny, timeout=480)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "sweep"
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert jobs == ["0", "1"]  # no re-launched sweep: no extra jobs, no second sweep dir
    assert not (tmp_path / "run").exists()
    log = proc.stdout + proc.stderr
    assert "for this job only" in log and log.count("Launching 2 jobs locally") == 1
    assert proc.stdout.count("Learner Summary") == 2  # rank 0 of each job, nobody else
    for job in jobs:  # each job its own 2-rank DDP run (rank 0 validated 64 of 128: one line)
        result = json.loads((sweep / job / "result.json").read_text())
        assert result["value"] == max(result["epochs"].values()) == result["epochs"]["1"]
        correct = result["value"] * 128 / 100  # the cross-rank accuracy over all 128 test digits
        assert correct == pytest.approx(round(correct), abs=1e-6)
        assert len((sweep / job / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()) == 1
        assert (sweep / job / "train_ddp_process_1.log").exists()


@pytest.mark.slow
def test_another_repo_reuses_burnlike(tmp_path, tiny):
    """A package outside burnlike/ with its own model and conf dir (tests/other_repo, copied away)."""
    repo = shutil.copytree(OTHER_REPO, tmp_path / "other")
    cfg = compose_app(["learner.num_epochs=1"], config_dir=repo / "conf")  # burnlike's groups + its model
    assert cfg.model._target_ == "otherpkg.model.TinyConfig" and cfg.optimizer.epsilon == 1e-5
    env = {"PYTHONPATH": str(repo)}
    own = start_app(["learner.num_epochs=1", "optimizer.lr=0.01"], tmp_path / "own", tiny,
                    script=repo / "train_other.py", cwd=repo, env_extra=env)
    app = start_app(["learner.num_epochs=1", "optimizer.lr=0.01"], tmp_path / "app", tiny,
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
@pytest.mark.slow
def test_optuna_search_runs_trials(tmp_path, tiny):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    proc = run_app(["hparams_search=mnist_optuna", "model=mlp", "hydra.sweeper.n_trials=2",
                    "hydra.sweeper.sampler.n_startup_trials=2", "learner.num_epochs=1", "learner.checkpointing=false"],
                   tmp_path, tiny, timeout=380)
    assert proc.returncode == 0, proc.stderr[-3000:]
    values = [json.loads((tmp_path / "sweep" / str(i) / "result.json").read_text())["value"] for i in (0, 1)]
    best = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    assert best.best_value == pytest.approx(max(values))  # the sweeper received what each job returned
