"""Lightning's private internals, behind one door: every private name of Lightning's (and Lightning
Fabric's) that burnlike relies on is reached through this module and nowhere else
(tests/test__lightning.py checks both that and that each still behaves as relied on). Each entry
names what it relies on and the Lightning versions it was checked on; "2.5.1-2.6.6" means
pyproject's lower bound through the newest tested release.

Lightning is imported inside the functions: `burnlike.record` reaches `load_state` only when it loads
a LightningModule, and inspecting a file must not pay Lightning's import."""

from __future__ import annotations

from collections.abc import Callable, Generator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import lightning as L
    from lightning.pytorch.callbacks import EarlyStopping
    from lightning.pytorch.loggers import Logger
    from lightning.pytorch.strategies import Strategy
    from lightning.pytorch.strategies.launchers.multiprocessing import _MultiProcessingLauncher
    from torch import nn

    MultiProcessingLauncher = _MultiProcessingLauncher
else:
    from lightning.pytorch.callbacks import EarlyStopping
    from lightning.pytorch.strategies.launchers.multiprocessing import (
        _MultiProcessingLauncher as MultiProcessingLauncher,  # ddp_spawn's launcher class (2.5.1-2.6.6)
    )

__all__ = [
    "MultiProcessingLauncher", "RankWrappingLauncher", "DecidingEarlyStopping", "SIGTERM_NOTIFIER",
    "is_sigterm_notifier", "lower_sigterm_flag", "start_method", "replace_launcher",
    "interrupt_and_tear_down", "attached_trainer", "optimizer_step_hooks", "set_strategy_timeout",
    "data_parallel_size", "set_data_parallel_size", "saves_distributed_checkpoint", "state_dict_type",
    "rekey_optimizer_state", "load_raw_module_state", "full_state_dict_context", "state_key",
    "load_state", "rank_command_hook", "hydra_seen_by_launcher", "set_rank_command_hook", "wandb_init",
    "started_experiment", "set_logger_version", "set_mlflow_run_id", "set_wandb_id",
]


# --- signals ---------------------------------------------------------------------------------------
# The `__qualname__` of the SIGTERM handler Lightning's `_SignalConnector` installs (2.5.1-2.6.6).
SIGTERM_NOTIFIER = "_SignalConnector._sigterm_notifier_fn"


def is_sigterm_notifier(handler: object) -> bool:
    """Whether `handler` is Lightning's SIGTERM notifier (a bound method of `_SignalConnector`)."""
    return getattr(getattr(handler, "__func__", None), "__qualname__", "") == SIGTERM_NOTIFIER


def lower_sigterm_flag(trainer: L.Trainer | None) -> None:
    """Put down `trainer._signal_connector.received_sigterm`, the flag Lightning's loops end a fit
    on (2.5.1-2.6.6)."""
    connector = getattr(trainer, "_signal_connector", None)
    if getattr(connector, "received_sigterm", False):
        connector.received_sigterm = False  # type: ignore[union-attr]


# --- launchers -------------------------------------------------------------------------------------
def start_method(launcher: object) -> str | None:
    """A multiprocessing launcher's `_start_method` ("spawn", "fork", "forkserver"); None for any
    other launcher (2.5.1-2.6.6)."""
    method = getattr(launcher, "_start_method", None)
    return method if isinstance(method, str) else None


def replace_launcher(strategy: Strategy, launcher: object) -> None:
    """Set the launcher a strategy starts its ranks with: `Strategy._launcher`, which the public
    `launcher` property reads (2.5.1-2.6.6)."""
    strategy._launcher = launcher  # type: ignore[assignment]


class RankWrappingLauncher(MultiProcessingLauncher):
    """Lightning's ddp_spawn launcher whose ranks run `wrap_rank(function, trainer)` instead of
    `function`: it overrides `_wrapping_function(process_idx, trainer, function, ...)`, what each
    spawned process runs (2.5.1-2.6.6)."""

    def wrap_rank(self, function: Callable[..., Any], trainer: L.Trainer) -> Callable[..., Any]:
        return function

    def _wrapping_function(self, process_idx: int, trainer: L.Trainer | None, function: Callable[..., Any],
                           *rest: Any) -> None:
        if trainer is not None:
            function = self.wrap_rank(function, trainer)
        super()._wrapping_function(process_idx, trainer, function, *rest)


def interrupt_and_tear_down(trainer: L.Trainer, error: BaseException) -> None:
    """What Lightning's `_call_and_handle_interrupt` does on an error: `trainer.call._interrupt`
    (callbacks' `on_exception`, loggers finalised as failed), then `Trainer._teardown` (2.5.1-2.6.6)."""
    from lightning.pytorch.trainer.call import _interrupt

    _interrupt(trainer, error)
    trainer._teardown()


# --- modules and optimizers ---------------------------------------------------------------------------
def attached_trainer(module: L.LightningModule) -> L.Trainer | None:
    """The trainer a LightningModule is attached to, None outside a fit: `_trainer`, which the
    public `trainer` property raises on instead (2.5.1-2.6.6)."""
    return module._trainer


def _nothing() -> None:
    pass


def optimizer_step_hooks(optimizer: object) -> tuple[Callable[[], None], Callable[[], None]]:
    """The hooks a `LightningOptimizer` runs around a manual step, `_on_before_step` and
    `_on_after_step` (they count `global_step`); do-nothing ones on a plain optimizer (2.5.1-2.6.6)."""
    return getattr(optimizer, "_on_before_step", _nothing), getattr(optimizer, "_on_after_step", _nothing)


def state_key(callback: L.Callback, **key: Any) -> str:
    """`Callback._generate_state_key`, the key a callback's state is saved under (2.5.1-2.6.6)."""
    return callback._generate_state_key(**key)


class DecidingEarlyStopping(EarlyStopping):
    """Lightning's `EarlyStopping` whose decision is `decide(trainer)`: it overrides
    `_run_early_stopping_check(trainer)`, which the hooks call at the configured point (2.5.1-2.6.6)."""

    def decide(self, trainer: L.Trainer) -> None:
        super()._run_early_stopping_check(trainer)

    def _run_early_stopping_check(self, trainer: L.Trainer) -> None:
        self.decide(trainer)


def load_state(module_cls: type[Any], checkpoint: dict[str, Any], strict: bool | None, **kwargs: Any) -> Any:
    """A LightningModule built from a loaded checkpoint dict, as `load_from_checkpoint` builds it after
    reading the file: `lightning.pytorch.core.saving._load_state` (2.5.1-2.6.6)."""
    from lightning.pytorch.core.saving import _load_state

    return _load_state(module_cls, checkpoint, strict=strict, **kwargs)


# --- strategies --------------------------------------------------------------------------------------
def set_strategy_timeout(strategy: Strategy, timeout: timedelta) -> None:
    """Set the `_timeout` DDP/FSDP/ModelParallel strategies pass to `init_process_group` (what their
    constructors' `timeout=` sets; 2.5.1-2.6.6)."""
    strategy._timeout = timeout  # type: ignore[attr-defined]


def data_parallel_size(strategy: Strategy) -> int | str:
    """ModelParallelStrategy's `_data_parallel_size` ("auto" until it is set up; 2.5.1-2.6.6)."""
    return cast("int | str", strategy._data_parallel_size)  # type: ignore[attr-defined]


def set_data_parallel_size(strategy: Strategy, size: int) -> None:
    strategy._data_parallel_size = size  # type: ignore[attr-defined]


def saves_distributed_checkpoint(strategy: Strategy) -> bool:
    """ModelParallelStrategy's `_save_distributed_checkpoint` (its constructor's
    `save_distributed_checkpoint`; 2.5.1-2.6.6)."""
    return bool(strategy._save_distributed_checkpoint)  # type: ignore[attr-defined]


def state_dict_type(strategy: Strategy) -> str:
    """FSDPStrategy's `_state_dict_type`, "full" or "sharded" (its constructor's; 2.5.1-2.6.6)."""
    return str(strategy._state_dict_type)  # type: ignore[attr-defined]


def rekey_optimizer_state(state: dict[str, Any], module: nn.Module) -> dict[str, Any]:
    """An optimizer state keyed by parameter index, keyed by parameter name instead (one keyed by
    name as it is): fabric's `model_parallel._rekey_optimizer_state_if_needed` (2.5.1-2.6.6)."""
    from lightning.fabric.strategies.model_parallel import _rekey_optimizer_state_if_needed

    return _rekey_optimizer_state_if_needed(state, module)


def load_raw_module_state(state: dict[str, Any], module: nn.Module, world_size: int, strict: bool) -> None:
    """A whole state dict into a sharded module: fabric's `model_parallel._load_raw_module_state`
    (2.5.1-2.6.6)."""
    from lightning.fabric.strategies.model_parallel import _load_raw_module_state

    _load_raw_module_state(state, module=module, world_size=world_size, strict=strict)


def full_state_dict_context(module: nn.Module, world_size: int, rank0_only: bool) -> Generator[None, None, None]:
    """FSDP's full-state-dict context over `module`: fabric's `fsdp._get_full_state_dict_context`
    (2.5.1-2.6.6)."""
    from lightning.fabric.strategies.fsdp import _get_full_state_dict_context

    return _get_full_state_dict_context(module, world_size=world_size, rank0_only=rank0_only)


# --- Hydra's DDP launch ----------------------------------------------------------------------------------
def _subprocess_script() -> Any:
    from lightning.pytorch.strategies.launchers import subprocess_script

    return subprocess_script


def rank_command_hook() -> Callable[..., Any] | None:
    """`subprocess_script._hydra_subprocess_cmd`, which builds a DDP rank's command line under a
    Hydra app; None where it is missing (2.5.1-2.6.6)."""
    hook = getattr(_subprocess_script(), "_hydra_subprocess_cmd", None)
    return hook if callable(hook) else None


def hydra_seen_by_launcher() -> bool:
    """`subprocess_script._HYDRA_AVAILABLE`: whether Lightning's launcher found Hydra (2.5.1-2.6.6)."""
    return bool(getattr(_subprocess_script(), "_HYDRA_AVAILABLE", True))


def set_rank_command_hook(hook: Callable[..., Any]) -> None:
    _subprocess_script()._hydra_subprocess_cmd = hook


# --- loggers -------------------------------------------------------------------------------------------
def wandb_init(logger: Logger) -> dict[str, Any]:
    """The keyword arguments WandbLogger passes to `wandb.init` when its run starts: `_wandb_init`
    (2.5.1-2.6.6)."""
    return cast("dict[str, Any]", logger._wandb_init)  # type: ignore[attr-defined]


def started_experiment(logger: Logger) -> object | None:
    """A logger's run if it has started one, None before: `_experiment`, which the public
    `experiment` property would start instead (2.5.1-2.6.6)."""
    return getattr(logger, "_experiment", None)


def set_logger_version(logger: Logger, version: object) -> None:
    """The version (run folder) TensorBoardLogger/CSVLogger write to, before they start:
    `_version` (2.5.1-2.6.6)."""
    logger._version = version  # type: ignore[attr-defined]


def set_mlflow_run_id(logger: Logger, run_id: object) -> None:
    """The MLflow run MLFlowLogger continues, before it starts: `_run_id` (2.5.1-2.6.6)."""
    logger._run_id = run_id  # type: ignore[attr-defined]


def set_wandb_id(logger: Logger, run_id: object) -> None:
    """The W&B run WandbLogger reports as its version before it starts: `_id` (2.5.1-2.6.6)."""
    logger._id = run_id  # type: ignore[attr-defined]
