"""Burn's device strategies (0.19 `LearningStrategy`, 0.20 `TrainingStrategy`, 0.21 `ExecutionStrategy`)
translated to the `lightning.Trainer` arguments `accelerator`, `devices`, `strategy` and `num_nodes`.

Every spelling becomes one `Execution`, so the guide's `.devices([...])`, 0.19's
`.learning_strategy(...)` and 0.20/0.21's `.with_training_strategy(...)` reach the Trainer through
the same code. Burn's enum variants keep Burn's names (`Type::Variant(x)` is `Type.Variant(x)`; a
struct variant takes keywords), and the snake_case spellings stay as aliases:

| Burn | burnlike | Lightning |
|---|---|---|
| `LearningStrategy::SingleDevice(d)` | `LearningStrategy.SingleDevice(d)` (`.single_device(d)`) | one device |
| `LearningStrategy::MultiDeviceNaive(ds)` | `LearningStrategy.MultiDeviceNaive(ds)` (`.multi_device_naive`) | `strategy="ddp"` |
| `LearningStrategy::DistributedDataParallel { devices, config }`, `ddp(ds, cfg)` | `LearningStrategy.DistributedDataParallel(devices=ds, config=cfg)`, `ddp(ds, cfg)` (`.ddp`) | `"ddp"`, `num_nodes` |
| `TrainingStrategy::SingleDevice(d)` | `TrainingStrategy.SingleDevice(d)` (`.single_device`) | one device |
| `TrainingStrategy::MultiDevice(ds, MultiDeviceOptim::OptimMainDevice)` | `TrainingStrategy.MultiDevice(ds, MultiDeviceOptim.OptimMainDevice)` (`.multi_device`) | `"ddp"` |
| `… MultiDeviceOptim::OptimSharded` | `….MultiDevice(ds, MultiDeviceOptim.OptimSharded)` | `ShardedStrategy()` (FSDP2) |
| `TrainingStrategy::Custom(Arc::new(s))` | `TrainingStrategy.Custom(s)` (`.custom`), `s` a `SupervisedLearningStrategy` | none: `s.fit` is the loop |
| (Lightning) | `TrainingStrategy.Custom(lightning_strategy)` | your `Strategy` |
| `TrainingStrategy::Default(e)` (0.21) | `TrainingStrategy.Default(e)` (`.default`) | as `e` |
| `ExecutionStrategy::SingleDevice(d)` / `MultiDevice(ds, optim)` / `DistributedDataParallel { devices, .. }` | same names; `single(d)` / `multi(ds, optim)` / `ddp(ds, DistributedConfig)` | as above |
| `strategy.main_device()` | `strategy.main_device()` | the first device |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

import torch

from burnlike.checks import positive_int

Device = str | int | torch.device
"""Burn's device, as `devices([...])` takes it: `"cpu"`, `"cuda:1"`, a CUDA index or a `torch.device`."""

__all__ = [
    "CollectiveConfig",
    "Device",
    "DistributedConfig",
    "Execution",
    "ExecutionStrategy",
    "LearningStrategy",
    "MultiDeviceOptim",
    "ReduceOperation",
    "TrainingStrategy",
    "as_execution",
    "is_learning_strategy",
    "ddp",
    "set_process_group_timeout",
    "trainer_devices",
]


class MultiDeviceOptim(str, Enum):
    """Burn 0.20: where the optimizer runs with several devices (main device: DDP; sharded: FSDP2
    through `ShardedStrategy`, any accelerator, Burn-format sharded checkpoints)."""

    OptimMainDevice = "ddp"
    OptimSharded = "sharded"
    OPTIM_MAIN_DEVICE = "ddp"
    OPTIM_SHARDED = "sharded"


class ReduceOperation(str, Enum):
    """Burn 0.21's gradient all-reduce `ReduceOperation::{Sum, Mean}`: Lightning's DDP averages (`Mean`)."""

    Sum = "sum"
    Mean = "mean"
    SUM = "sum"
    MEAN = "mean"


@dataclass
class DistributedConfig:
    """Burn 0.21's `DistributedConfig{all_reduce_op}`, plus what a multi-node Lightning run needs.

    `num_nodes` and `process_group_backend` ("gloo", "nccl"; None lets Lightning pick) are burnlike's;
    the nodes themselves are started by torchrun/srun (docs/clusters.md).
    """

    all_reduce_op: ReduceOperation = ReduceOperation.MEAN  # how gradients combine across processes (Mean only)
    num_nodes: int = 1  # the machines the run spans
    process_group_backend: str | None = None  # "gloo", "nccl"; None lets Lightning pick

    def __post_init__(self) -> None:
        self.all_reduce_op = ReduceOperation(self.all_reduce_op)
        if self.all_reduce_op is ReduceOperation.SUM:
            raise NotImplementedError(
                "DistributedConfig(all_reduce_op=ReduceOperation.SUM): Lightning's DDP averages gradients "
                "across processes; use ReduceOperation.MEAN (and scale the learning rate if you relied on sums)"
            )
        positive_int(self.num_nodes, "DistributedConfig.num_nodes")

    def with_num_nodes(self, num_nodes: int) -> DistributedConfig:
        """This config over `num_nodes` machines.

        Args:
            num_nodes: The machines, >= 1.
        """
        return type(self)(self.all_reduce_op, num_nodes, self.process_group_backend)


class CollectiveConfig(DistributedConfig):
    """Burn 0.19/0.20's name (`burn_collective::CollectiveConfig`) for the DDP configuration."""


@dataclass(frozen=True)
class Execution:
    """Where training runs, in Lightning's terms: the one translation every spelling goes through."""

    devices: tuple[Device, ...]  # the devices, as Burn names them (empty: the strategy picks)
    strategy: Any = None  # None: Lightning's "auto"; a name ("ddp", "fsdp") or a Lightning Strategy
    num_nodes: int | None = None  # the machines (None: Lightning's default, one)

    def main_device(self) -> Device:
        """Burn's `ExecutionStrategy::main_device()`: the first device (validation runs there)."""
        if not self.devices:
            raise ValueError("main_device(): this strategy names no device (a custom Lightning strategy picks them)")
        return self.devices[0]

    def trainer_kwargs(self) -> dict[str, Any]:
        """The `lightning.Trainer` arguments: `accelerator`, `devices`, `strategy`, `num_nodes`."""
        kwargs: dict[str, Any] = trainer_devices(self.devices) if self.devices else {}
        if self.strategy == MultiDeviceOptim.OPTIM_SHARDED.value:  # a fresh strategy object per Trainer
            from burnlike.train.sharded import ShardedStrategy

            kwargs["strategy"] = ShardedStrategy()
        elif self.strategy is not None:
            kwargs["strategy"] = self.strategy
        if self.num_nodes is not None:
            kwargs["num_nodes"] = self.num_nodes
        return kwargs


def _devices(devices: Sequence[Any], what: str) -> tuple[Any, ...]:
    if isinstance(devices, (str, torch.device, int)):
        raise TypeError(f"{what} takes a list of devices, got the single device {devices!r}: use [{devices!r}]")
    out = tuple(devices)
    trainer_devices(out)  # validate now, not at fit time
    return out


def _multi(devices: Sequence[Any], strategy: str, what: str) -> Execution:
    ds = _devices(devices, what)
    return Execution(ds, strategy if len(ds) > 1 else None)  # Burn: one device → the single-device loop


def _ddp(devices: Sequence[Any], config: DistributedConfig | None, what: str) -> Execution:
    config = config if config is not None else DistributedConfig()
    if not isinstance(config, DistributedConfig):
        raise TypeError(f"{what}: config must be a DistributedConfig/CollectiveConfig, got {type(config).__name__}")
    strategy: Any = "ddp"
    if config.process_group_backend is not None:
        from lightning.pytorch.strategies import DDPStrategy

        strategy = DDPStrategy(process_group_backend=config.process_group_backend)
    return Execution(_devices(devices, what), strategy, config.num_nodes)


class LearningStrategy:
    """Burn 0.19's `LearningStrategy` (`LearnerBuilder.learning_strategy(...)`)."""

    @staticmethod
    def SingleDevice(device: Any) -> Execution:  # noqa: N802 - Burn's variant name
        """Train on one device.

        Args:
            device: The device (`"cpu"`, `"cuda:0"`, an index or a `torch.device`).
        """
        return Execution(_devices([device], "LearningStrategy.SingleDevice"))

    @staticmethod
    def MultiDeviceNaive(devices: Sequence[Any]) -> Execution:  # noqa: N802
        """Train on several devices of this machine, one process each (Lightning's DDP).

        Args:
            devices: The devices, all of one kind.
        """
        return _multi(devices, "ddp", "LearningStrategy.MultiDeviceNaive")

    @staticmethod
    def DistributedDataParallel(*, devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:  # noqa: N802
        """Burn's struct variant `DistributedDataParallel { devices, config }`: keywords, as its fields.

        Args:
            devices: This node's devices.
            config: The DDP settings (None: `DistributedConfig()`).
        """
        return _ddp(devices, config, "LearningStrategy.DistributedDataParallel")

    @staticmethod
    def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
        """DDP over `devices` (`DistributedDataParallel` as a function).

        Args:
            devices: This node's devices.
            config: The DDP settings (None: `DistributedConfig()`).
        """
        return _ddp(devices, config, "LearningStrategy.ddp")

    single_device = SingleDevice
    """`SingleDevice`, snake_case."""
    multi_device_naive = MultiDeviceNaive
    """`MultiDeviceNaive`, snake_case."""
    distributed_data_parallel = ddp
    """`ddp`, spelled out."""


def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
    """Burn 0.19/0.20's `burn::train::ddp(devices, config)`: the DDP strategy over `devices`.

    Args:
        devices: This node's devices.
        config: The DDP settings (None: `DistributedConfig()`).
    """
    return _ddp(devices, config, "ddp")


class ExecutionStrategy:
    """Burn 0.21's `ExecutionStrategy::{SingleDevice, MultiDevice, DistributedDataParallel}` and its
    constructors `single`, `multi`, `ddp`."""

    @staticmethod
    def SingleDevice(device: Any) -> Execution:  # noqa: N802 - Burn's variant name
        """Train on one device.

        Args:
            device: The device (`"cpu"`, `"cuda:0"`, an index or a `torch.device`).
        """
        return Execution(_devices([device], "ExecutionStrategy.SingleDevice"))

    @staticmethod
    def MultiDevice(devices: Sequence[Any], optim: MultiDeviceOptim = MultiDeviceOptim.OptimMainDevice) -> Execution:  # noqa: N802
        """Train on several devices of this machine, one process each.

        Args:
            devices: The devices, all of one kind.
            optim: Where the optimizer runs: DDP (`OptimMainDevice`) or sharded (`OptimSharded`, FSDP2).
        """
        return _multi(devices, MultiDeviceOptim(optim).value, "ExecutionStrategy.MultiDevice")

    @staticmethod
    def DistributedDataParallel(*, devices: Sequence[Any], config: DistributedConfig | None = None,  # noqa: N802
                                runtime: Any = None) -> Execution:
        """Burn's struct variant `DistributedDataParallel { devices, runtime }`: keywords; `runtime`
        (Burn's communication session) has no Lightning counterpart and must be None; `config` is
        what `ddp(devices, config)` takes.

        Args:
            devices: This node's devices.
            config: The DDP settings (None: `DistributedConfig()`).
            runtime: Must be None (Lightning's DDP runs its own communication).

        Raises:
            TypeError: A `runtime` was given.
        """
        if runtime is not None:
            raise TypeError("ExecutionStrategy.DistributedDataParallel: runtime is Burn's communication server; "
                            "Lightning's DDP runs its own, so pass config=DistributedConfig(...) instead")
        return _ddp(devices, config, "ExecutionStrategy.DistributedDataParallel")

    @staticmethod
    def single(device: Any) -> Execution:
        """`SingleDevice`, Burn's constructor.

        Args:
            device: The device (`"cpu"`, `"cuda:0"`, an index or a `torch.device`).
        """
        return Execution(_devices([device], "ExecutionStrategy.single"))

    @staticmethod
    def multi(devices: Sequence[Any], optim: MultiDeviceOptim = MultiDeviceOptim.OptimMainDevice) -> Execution:
        """`MultiDevice`, Burn's constructor.

        Args:
            devices: The devices, all of one kind.
            optim: Where the optimizer runs: DDP (`OptimMainDevice`) or sharded (`OptimSharded`, FSDP2).
        """
        return _multi(devices, MultiDeviceOptim(optim).value, "ExecutionStrategy.multi")

    @staticmethod
    def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
        """`DistributedDataParallel`, Burn's constructor.

        Args:
            devices: This node's devices.
            config: The DDP settings (None: `DistributedConfig()`).
        """
        return _ddp(devices, config, "ExecutionStrategy.ddp")


class TrainingStrategy:
    """Burn 0.20's `TrainingStrategy::{SingleDevice, MultiDevice, Custom, DistributedDataParallel}`
    and 0.21's `Default(ExecutionStrategy)` / `Custom`."""

    @staticmethod
    def SingleDevice(device: Any) -> Execution:  # noqa: N802 - Burn's variant name
        """Train on one device.

        Args:
            device: The device (`"cpu"`, `"cuda:0"`, an index or a `torch.device`).
        """
        return ExecutionStrategy.SingleDevice(device)

    @staticmethod
    def MultiDevice(devices: Sequence[Any], optim: MultiDeviceOptim = MultiDeviceOptim.OptimMainDevice) -> Execution:  # noqa: N802
        """Train on several devices of this machine, one process each.

        Args:
            devices: The devices, all of one kind.
            optim: Where the optimizer runs: DDP (`OptimMainDevice`) or sharded (`OptimSharded`, FSDP2).
        """
        return ExecutionStrategy.multi(devices, optim)

    @staticmethod
    def DistributedDataParallel(*, devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:  # noqa: N802
        """Burn's struct variant `DistributedDataParallel { devices, config }`: keywords.

        Args:
            devices: This node's devices.
            config: The DDP settings (None: `DistributedConfig()`).
        """
        return _ddp(devices, config, "TrainingStrategy.DistributedDataParallel")

    @staticmethod
    def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
        """DDP over `devices`.

        Args:
            devices: This node's devices.
            config: The DDP settings (None: `DistributedConfig()`).
        """
        return _ddp(devices, config, "TrainingStrategy.ddp")

    @staticmethod
    def Default(execution: Execution) -> Execution:  # noqa: N802
        """Burn 0.21's `Default(ExecutionStrategy)`: the execution strategy as it is.

        Args:
            execution: An `ExecutionStrategy` (or `LearningStrategy`) value.

        Raises:
            TypeError: Not a device strategy.
        """
        return as_execution(execution)

    @staticmethod
    def Custom(strategy: Any, devices: Sequence[Any] = ()) -> Any:  # noqa: N802
        """Burn's custom learning strategy: a `SupervisedLearningStrategy` (your `fit` loop over
        burnlike's metrics, store and checkpointer: burnlike.train.learning_strategy), returned as it
        is for `with_training_strategy`; or a Lightning `Strategy` (or its name), which the Trainer runs.

        Args:
            strategy: A `SupervisedLearningStrategy`, or a Lightning `Strategy` or its name.
            devices: The devices for a Lightning strategy (empty: it picks).

        Raises:
            TypeError: Devices given with a `SupervisedLearningStrategy` (it places the model itself).
        """
        if is_learning_strategy(strategy):
            if devices:
                raise TypeError("TrainingStrategy.Custom(strategy): a SupervisedLearningStrategy places the model "
                                "itself (learner.fork(device) in its fit); devices are for a Lightning Strategy")
            return strategy
        return Execution(_devices(devices, "TrainingStrategy.Custom") if devices else (), strategy)

    single_device = SingleDevice
    """`SingleDevice`, snake_case."""
    multi_device = MultiDevice
    """`MultiDevice`, snake_case."""
    default = Default
    """`Default`, snake_case."""
    custom = Custom
    """`Custom`, snake_case."""


def is_learning_strategy(value: Any) -> bool:
    """A Burn custom learning strategy (`SupervisedLearningStrategy`: `train` and `fit` methods), not
    a Lightning `Strategy` or a strategy's name.

    Args:
        value: What was passed as a strategy.
    """
    return not isinstance(value, (str, Execution)) and all(callable(getattr(value, m, None)) for m in ("train", "fit"))


def as_execution(value: Any) -> Execution:
    """`value`, checked to be a device strategy (an `Execution`).

    Args:
        value: What was passed as a strategy.

    Raises:
        TypeError: It is something else, with examples of what is.
    """
    if isinstance(value, Execution):
        return value
    raise TypeError(
        "expected a device strategy such as LearningStrategy.SingleDevice('cpu'), "
        f"ExecutionStrategy.ddp(['cuda:0', 'cuda:1']) or TrainingStrategy.custom(...), got {type(value).__name__}"
    )


def trainer_devices(devices: Sequence[Device]) -> dict[str, Any]:
    """Burn device list → Trainer `accelerator`/`devices` (`"cpu"`, `"cuda:1"`, torch.device, ints).

    Args:
        devices: The devices, all of one kind.

    Raises:
        ValueError: No device, an unknown one, or devices of several kinds.
    """
    if not devices:
        raise ValueError("devices([...]) needs at least one device")
    kinds, indices = set(), []
    for d in devices:
        if isinstance(d, int) and not isinstance(d, bool):
            kinds.add("cuda")
            indices.append(d)
            continue
        try:
            dev = torch.device(d)
        except (TypeError, RuntimeError):
            raise ValueError(f"devices: {d!r} is not a device (expected 'cpu', 'cuda:N', 'mps', an int or torch.device)") from None
        kinds.add(dev.type)
        indices.append(dev.index or 0)
    if len(kinds) > 1:
        raise ValueError(f"devices: all devices must be of one kind, got {sorted(kinds)}")
    kind = kinds.pop()
    if kind == "cpu":
        return {"accelerator": "cpu", "devices": len(devices)}
    if kind == "cuda":
        return {"accelerator": "gpu", "devices": indices}
    if kind == "mps":
        return {"accelerator": "mps", "devices": 1}
    raise ValueError(f"devices: unsupported device type {kind!r}")


def set_process_group_timeout(strategy: Any, seconds: float) -> bool:
    """How long a collective waits for the other ranks before the process group fails (torch's
    default: 30 min, the wait a dead NCCL rank costs the others). Lightning's DDP, FSDP and
    ModelParallel strategies take it as `timeout=` when built; one the Trainer made from a name
    ("ddp", "auto", ShardedStrategy()) gets it here, before the fit starts the group. Whether
    `strategy` has a process group to time.

    Args:
        strategy: The Trainer's strategy.
        seconds: The timeout.
    """
    from lightning.pytorch.strategies import DDPStrategy, FSDPStrategy, ModelParallelStrategy

    from burnlike._lightning import set_strategy_timeout

    if not isinstance(strategy, (DDPStrategy, FSDPStrategy, ModelParallelStrategy)):
        return False
    set_strategy_timeout(strategy, timedelta(seconds=seconds))  # what their constructors' `timeout` sets
    return True
