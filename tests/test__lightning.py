"""`burnlike._lightning`, the one module that touches Lightning's private internals: no other module
of burnlike uses a private name of Lightning's (read from the sources of both), and each name the
compat module relies on still exists on the installed Lightning and does what burnlike counts on."""

from __future__ import annotations

import ast
import importlib
import inspect
import signal
import sys
from collections.abc import Iterator
from datetime import timedelta
from functools import cache
from pathlib import Path

import lightning as L
import pytest
import torch

import burnlike
from burnlike import _lightning as compat

PACKAGE_DIR = Path(burnlike.__file__).parent
COMPAT = PACKAGE_DIR / "_lightning.py"
LIGHTNING_DIR = Path(L.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__") and name != "_"


def defined_names(tree: ast.AST) -> set[str]:
    """The private names a source defines: functions, classes, assigned names and `x._attr = ...`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if _private(n)}


@cache
def lightning_names() -> frozenset[str]:
    """Every private name Lightning's sources (lightning.pytorch, lightning.fabric) define."""
    names: set[str] = set()
    for path in [*(LIGHTNING_DIR / "pytorch").rglob("*.py"), *(LIGHTNING_DIR / "fabric").rglob("*.py")]:
        names |= defined_names(ast.parse(path.read_text(), str(path)))
    return frozenset(names)


@cache
def _class_names(cls: type) -> frozenset[str]:
    """The private names a Lightning class's own body defines (methods, `self._x = ...`)."""
    try:
        tree = ast.parse(Path(inspect.getsourcefile(cls) or "").read_text())
    except (OSError, TypeError):
        return frozenset()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return frozenset(defined_names(node))
    return frozenset()


def _is_lightning(cls: type) -> bool:
    return cls.__module__.split(".")[0] in ("lightning", "lightning_fabric", "pytorch_lightning")


def inherited_names(module: str, class_name: str) -> frozenset[str]:
    """The private names burnlike's class `module.class_name` inherits from its Lightning bases."""
    cls = getattr(importlib.import_module(module), class_name, None)
    if not isinstance(cls, type):
        return frozenset()
    return frozenset().union(*(_class_names(base) for base in cls.__mro__ if _is_lightning(base)))


def _module_name(path: Path) -> str:
    parts = ["burnlike", *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_uses(path: Path, allowed: frozenset[str] = frozenset(), module: str | None = None) -> Iterator[str]:
    """`file:line: name` for each private name of Lightning's the source at `path` uses: imported from
    lightning, overridden or read or written as an attribute (on `self`/`super()`: the names its
    Lightning bases define; on any other object: every name Lightning defines, but `allowed`), named
    by getattr/setattr/hasattr, or spelt inside a dotted string (a `__qualname__` compared with)."""
    tree = ast.parse(path.read_text(), str(path))
    where = f"{path.relative_to(PACKAGE_DIR.parent)}" if module is None else path.name
    module = module or _module_name(path)
    foreign = lightning_names()

    def on_lightning(name: str, receiver: ast.expr | None, inherited: frozenset[str]) -> bool:
        if not _private(name) or name not in foreign:
            return False
        is_self = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") or (
            isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super")
        return name in inherited if is_self else name not in allowed

    def walk(node: ast.AST, inherited: frozenset[str]) -> Iterator[str]:
        if isinstance(node, ast.ClassDef):
            inherited = inherited_names(module, node.name)
            overrides = [n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and n.name in inherited]
            yield from (f"{where}:{node.lineno}: overrides {name}" for name in overrides)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "lightning", "lightning_fabric", "pytorch_lightning"):
            yield from (f"{where}:{node.lineno}: imports {a.name}" for a in node.names if _private(a.name))
            if any(_private(part) for part in (node.module or "").split(".")):
                yield f"{where}:{node.lineno}: imports from {node.module}"
        elif isinstance(node, ast.Attribute) and on_lightning(node.attr, node.value, inherited):
            yield f"{where}:{node.lineno}: .{node.attr}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and on_lightning(node.args[1].value, node.args[0], inherited)):
            yield f"{where}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                and " " not in node.value:
            parts = node.value.split(".")
            if all(p.isidentifier() for p in parts) and any(on_lightning(p, None, inherited) for p in parts):
                yield f"{where}:{node.lineno}: {node.value!r}"
        for child in ast.iter_child_nodes(node):
            yield from walk(child, inherited)

    yield from walk(tree, frozenset())


# Private names of other objects that Lightning happens to define too: (file, name) -> whose it is.
NOT_LIGHTNINGS = {
    ("burnlike/train/evaluator.py", "_metrics"): "burnlike's EvaluatorBuilder",
    ("burnlike/train/evaluator.py", "_summary"): "burnlike's EvaluatorBuilder",
    ("burnlike/record/format/walker.py", "_modules"): "torch.nn.Module's children",
    ("burnlike/app/overrides.py", "_metadata"): "an OmegaConf node's",
}


def uses_outside_compat(root: Path = PACKAGE_DIR) -> list[str]:
    def allowed(path: Path) -> frozenset[str]:
        where = str(path.relative_to(root.parent))
        return frozenset(name for (file, name) in NOT_LIGHTNINGS if file == where)

    return [use for path in sorted(root.rglob("*.py")) if path != COMPAT for use in private_uses(path, allowed(path))]


# --- the door ---------------------------------------------------------------------------------------------
def test_no_module_but_the_compat_module_uses_lightnings_private_names():
    found = uses_outside_compat()
    assert not found, ("Lightning's private names used outside burnlike/_lightning.py (add an entry there):\n"
                       + "\n".join(found))


def test_the_check_finds_each_kind_of_private_use(tmp_path, monkeypatch):
    """The checker, on a module written here: each way of reaching a private name is caught, and a
    class's own private attribute or a name Lightning doesn't define is not."""
    source = (
        "import lightning as L\n"
        "from lightning.pytorch.core.saving import _load_state\n"                      # 2
        "from lightning.pytorch.strategies.launchers.multiprocessing import _MultiProcessingLauncher\n"
        "class Module(L.LightningModule):\n"
        "    def f(self):\n"
        "        return self._trainer\n"                                                # 6
        "class Stopping(L.pytorch.callbacks.EarlyStopping):\n"
        "    def _run_early_stopping_check(self, trainer):\n"                           # 7 (class line)
        "        return trainer._teardown(), getattr(trainer, '_signal_connector')\n"   # 9
        "class Own(L.Callback):\n"
        "    def __init__(self):\n"
        "        self._trainer = None\n"
        "        self._mine = 1\n"
        "    def g(self, x):\n"
        "        return self._trainer, self._mine, '_SignalConnector._sigterm_notifier_fn'\n"  # 15
    )
    path = tmp_path / "compat_check_probe.py"
    path.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "compat_check_probe", raising=False)
    found = list(private_uses(path, module="compat_check_probe"))
    lines = sorted((int(use.split(":")[1]), use.split(": ", 1)[1]) for use in found)
    assert lines == [(2, "imports _load_state"), (3, "imports _MultiProcessingLauncher"), (6, "._trainer"),
                     (7, "overrides _run_early_stopping_check"), (9, "._teardown"),
                     (9, "getattr(..., '_signal_connector')"), (15, "'_SignalConnector._sigterm_notifier_fn'")]


# --- each entry, on the installed Lightning -------------------------------------------------------------
def cpu_trainer(**kwargs) -> L.Trainer:
    return L.Trainer(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, **kwargs)


def test_the_sigterm_notifier_is_the_handler_lightnings_signal_connector_installs():
    from lightning.pytorch.trainer.connectors.signal_connector import _SignalConnector

    connector = _SignalConnector(cpu_trainer())
    assert compat.is_sigterm_notifier(connector._sigterm_notifier_fn)
    assert not compat.is_sigterm_notifier(connector._slurm_sigusr_handler_fn)
    assert not compat.is_sigterm_notifier(signal.SIG_DFL)


def test_lowering_the_sigterm_flag_is_what_the_loops_read():
    trainer = cpu_trainer()
    trainer._signal_connector.received_sigterm = True
    compat.lower_sigterm_flag(trainer)
    assert trainer.received_sigterm is False  # the public view the fit loop checks
    compat.lower_sigterm_flag(None)  # before a fit: nothing to lower


def test_start_method_reads_a_ddp_spawn_launchers_and_none_from_others():
    spawn = cpu_trainer(strategy="ddp_spawn", devices=2).strategy.launcher
    assert compat.start_method(spawn) == "spawn"
    assert compat.start_method(cpu_trainer(devices=1).strategy.launcher) is None


def test_a_replaced_launcher_is_the_one_the_strategy_launches_with():
    strategy = cpu_trainer(strategy="ddp_spawn", devices=2).strategy
    assert type(strategy.launcher) is compat.MultiProcessingLauncher
    wrapping = compat.RankWrappingLauncher(strategy, "spawn")
    compat.replace_launcher(strategy, wrapping)
    assert strategy.launcher is wrapping


def test_a_rank_wrapping_launcher_runs_the_wrapped_function_in_the_rank():
    """`_wrapping_function` is what a spawned process runs: with a trainer the rank runs
    `wrap_rank(function)`; the results go on to Lightning's queue as before."""
    import queue

    trainer = cpu_trainer(strategy="ddp_spawn", devices=2)
    ran: list[str] = []

    class Wrapping(compat.RankWrappingLauncher):
        def wrap_rank(self, function, trainer):
            return lambda *a, **k: (ran.append("wrapped"), function(*a, **k))[1]

    launcher = Wrapping(trainer.strategy, "fork")
    results: queue.Queue = queue.Queue()
    launcher._wrapping_function(0, None, lambda x: ran.append(f"plain {x}"), (1,), {}, results)
    assert ran == ["plain 1"] and not results.empty()  # no trainer: run as it is
    with pytest.raises(AttributeError):  # the rank's results are collected from the fitted trainer
        launcher._wrapping_function(0, trainer, lambda x: ran.append(f"plain {x}"), (2,), {}, results)
    assert ran == ["plain 1", "wrapped", "plain 2"]


def test_interrupt_and_tear_down_tells_the_callbacks_and_marks_the_trainer_interrupted():
    heard: list[BaseException] = []

    class Hears(L.Callback):
        def on_exception(self, trainer, pl_module, exception):
            heard.append(exception)

    trainer = cpu_trainer(callbacks=[Hears()])
    error = RuntimeError("stop")
    compat.interrupt_and_tear_down(trainer, error)
    assert heard == [error] and trainer.interrupted


def test_attached_trainer_is_none_outside_a_fit_and_the_trainer_within():
    module = L.LightningModule()
    assert compat.attached_trainer(module) is None
    trainer = cpu_trainer()
    module.trainer = trainer
    assert compat.attached_trainer(module) is trainer


def test_a_lightning_optimizers_step_hooks_are_its_own_and_a_plain_optimizers_do_nothing():
    from lightning.pytorch.core.optimizer import LightningOptimizer

    sgd = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    calls: list[str] = []
    wrapped = LightningOptimizer(sgd)
    wrapped._on_before_step, wrapped._on_after_step = lambda: calls.append("before"), lambda: calls.append("after")
    before, after = compat.optimizer_step_hooks(wrapped)
    before(), after()
    assert calls == ["before", "after"]
    before, after = compat.optimizer_step_hooks(sgd)
    assert before() is None and after() is None


def test_the_state_key_names_the_callback_and_its_fields():
    key = compat.state_key(L.Callback(), monitor="valid/Loss", strategy="burn")
    assert key.startswith("Callback") and "'monitor': 'valid/Loss'" in key and "'strategy': 'burn'" in key


class _Tiny(L.LightningModule):
    def __init__(self, width: int = 2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Linear(width, 1)

    def training_step(self, batch, batch_idx):
        return self.net(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2)


def test_a_deciding_early_stopping_stops_the_fit_when_its_decision_says_so():
    decided: list[int] = []

    class StopAtOnce(compat.DecidingEarlyStopping):
        def decide(self, trainer):
            decided.append(trainer.current_epoch)
            trainer.should_stop = True

    trainer = cpu_trainer(max_epochs=3, callbacks=[StopAtOnce(monitor="none", check_on_train_epoch_end=True)])
    trainer.fit(_Tiny())
    assert decided == [0] and trainer.current_epoch == 1


def test_load_state_builds_the_module_from_a_checkpoint_dict():
    saved = _Tiny(width=3)
    checkpoint = {"state_dict": saved.state_dict(), "hyper_parameters": dict(saved.hparams),
                  "pytorch-lightning_version": L.__version__}
    loaded = compat.load_state(_Tiny, checkpoint, strict=True)
    assert isinstance(loaded, _Tiny) and loaded.hparams.width == 3
    assert torch.equal(loaded.net.weight, saved.net.weight)


@pytest.mark.parametrize("kind", ["DDPStrategy", "FSDPStrategy", "ModelParallelStrategy"])
def test_a_strategys_timeout_is_where_its_constructor_puts_it(kind):
    import lightning.pytorch.strategies as strategies

    cls = getattr(strategies, kind)
    built = cls(timeout=timedelta(seconds=7))
    later = cls()
    compat.set_strategy_timeout(later, timedelta(seconds=7))
    assert later._timeout == built._timeout == timedelta(seconds=7)


def test_model_parallel_and_fsdp_fields_read_what_their_constructors_set():
    from lightning.pytorch.strategies import FSDPStrategy, ModelParallelStrategy

    strategy = ModelParallelStrategy(save_distributed_checkpoint=False)
    assert compat.data_parallel_size(strategy) == "auto"
    compat.set_data_parallel_size(strategy, 4)
    assert compat.data_parallel_size(strategy) == 4 and not compat.saves_distributed_checkpoint(strategy)
    assert compat.saves_distributed_checkpoint(ModelParallelStrategy(save_distributed_checkpoint=True))
    assert compat.state_dict_type(FSDPStrategy(state_dict_type="sharded")) == "sharded"
    assert compat.state_dict_type(FSDPStrategy(state_dict_type="full")) == "full"


def test_fabrics_state_dict_helpers_take_the_arguments_given():
    """The three fabric helpers are called with these keywords; a name-keyed optimizer state comes
    back as it is, and a whole state dict loads into an unsharded module."""
    model = torch.nn.Linear(2, 1)
    by_name = {"state": {"weight": {"step": 1}}, "param_groups": [{"params": ["weight", "bias"]}]}
    assert compat.rekey_optimizer_state(by_name, model) is by_name
    weights = {k: torch.full_like(v, 3.0) for k, v in model.state_dict().items()}
    compat.load_raw_module_state(weights, model, world_size=1, strict=True)
    assert torch.equal(model.weight, torch.full((1, 2), 3.0))
    from lightning.fabric.strategies.fsdp import _get_full_state_dict_context

    params = inspect.signature(_get_full_state_dict_context)
    assert {"module", "world_size", "rank0_only"} <= set(params.parameters)


def test_lightnings_hydra_rank_command_hook_is_there_and_can_be_replaced():
    before = compat.rank_command_hook()
    assert before is not None and compat.hydra_seen_by_launcher()
    try:
        compat.set_rank_command_hook(print)
        assert compat.rank_command_hook() is print
    finally:
        compat.set_rank_command_hook(before)


def test_a_loggers_version_and_run_are_read_and_set_before_it_starts(tmp_path):
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    for cls in (CSVLogger, TensorBoardLogger):
        logger = cls(str(tmp_path / cls.__name__))
        compat.set_logger_version(logger, "run-7")
        assert compat.started_experiment(logger) is None
        assert logger.version == "run-7" and logger.log_dir.endswith("run-7")
        _ = logger.experiment
        assert compat.started_experiment(logger) is not None


def test_a_wandb_loggers_init_arguments_and_id(tmp_path):
    pytest.importorskip("wandb")
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(project="p", save_dir=str(tmp_path), offline=True)
    assert "anonymous" in compat.wandb_init(logger) and compat.wandb_init(logger)["project"] == "p"
    compat.set_wandb_id(logger, "abc")
    assert logger.version == "abc" and compat.started_experiment(logger) is None


def test_an_mlflow_loggers_run_id_set_before_it_starts_is_the_run_it_continues(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from lightning.pytorch.loggers import MLFlowLogger

    logger = MLFlowLogger(tracking_uri=f"file:{tmp_path}")
    compat.set_mlflow_run_id(logger, "r1")
    assert logger._run_id == "r1"
    assert "if self._run_id is None" in inspect.getsource(MLFlowLogger.experiment.fget)  # starting keeps it
