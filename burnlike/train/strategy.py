"""Burn's device strategies (0.19 `LearningStrategy`, 0.20 `TrainingStrategy`, 0.21 `ExecutionStrategy`)
translated to the `lightning.Trainer` arguments `accelerator`, `devices`, `strategy` and `num_nodes`.

Every spelling becomes one `Execution`, so the guide's `.devices([...])`, 0.19's
`.learning_strategy(...)` and 0.20/0.21's `.with_training_strategy(...)` reach the Trainer through
the same code. Burn's enum variants are classmethods in snake_case:

| Burn | burnlike | Lightning |
|---|---|---|
| `LearningStrategy::SingleDevice(d)` | `LearningStrategy.single_device(d)` | one device |
| `LearningStrategy::MultiDeviceNaive(ds)` | `LearningStrategy.multi_device_naive(ds)` | `strategy="ddp"` |
| `LearningStrategy::DistributedDataParallel{..}`, `ddp(ds, cfg)` | `LearningStrategy.ddp(ds, cfg)` | `"ddp"`, `num_nodes` |
| `TrainingStrategy::SingleDevice(d)` | `TrainingStrategy.single_device(d)` | one device |
| `TrainingStrategy::MultiDevice(ds, MultiDeviceOptim::OptimMainDevice)` | `TrainingStrategy.multi_device(ds)` | `"ddp"` |
| `… MultiDeviceOptim::OptimSharded` | `….multi_device(ds, MultiDeviceOptim.OPTIM_SHARDED)` | `"fsdp"` |
| `TrainingStrategy::Custom(..)` | `TrainingStrategy.custom(lightning_strategy)` | your `Strategy` |
| `TrainingStrategy::Default(e)` (0.21) | `TrainingStrategy.default(e)` | as `e` |
| `ExecutionStrategy::single(d)` / `multi(ds, optim)` / `ddp(ds, DistributedConfig)` | same names | as above |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch

Device = str | int | torch.device  # Burn's device, as `devices([...])` takes it

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
    "trainer_devices",
]


class MultiDeviceOptim(str, Enum):
    """Burn 0.20: where the optimizer runs with several devices (main device, or sharded → FSDP)."""

    OPTIM_MAIN_DEVICE = "ddp"
    OPTIM_SHARDED = "fsdp"


class ReduceOperation(str, Enum):
    """Burn 0.21's gradient all-reduce: Lightning's DDP averages (`MEAN`)."""

    SUM = "sum"
    MEAN = "mean"


@dataclass
class DistributedConfig:
    """Burn 0.21's `DistributedConfig{all_reduce_op}`, plus what a multi-node Lightning run needs.

    `num_nodes` and `process_group_backend` ("gloo", "nccl"; None lets Lightning pick) are burnlike's;
    the nodes themselves are started by torchrun/srun (docs/hydra.md).
    """

    all_reduce_op: ReduceOperation = ReduceOperation.MEAN
    num_nodes: int = 1
    process_group_backend: str | None = None

    def __post_init__(self) -> None:
        self.all_reduce_op = ReduceOperation(self.all_reduce_op)
        if self.all_reduce_op is ReduceOperation.SUM:
            raise NotImplementedError(
                "DistributedConfig(all_reduce_op=ReduceOperation.SUM): Lightning's DDP averages gradients "
                "across processes; use ReduceOperation.MEAN (and scale the learning rate if you relied on sums)"
            )
        if not isinstance(self.num_nodes, int) or self.num_nodes < 1:
            raise ValueError(f"DistributedConfig.num_nodes must be an integer >= 1, got {self.num_nodes!r}")

    def with_num_nodes(self, num_nodes: int) -> DistributedConfig:
        return type(self)(self.all_reduce_op, num_nodes, self.process_group_backend)


class CollectiveConfig(DistributedConfig):
    """Burn 0.19/0.20's name (`burn_collective::CollectiveConfig`) for the DDP configuration."""


@dataclass(frozen=True)
class Execution:
    """Where training runs, in Lightning's terms: the one translation every spelling goes through."""

    devices: tuple[Device, ...]
    strategy: Any = None  # None: Lightning's "auto"; a name ("ddp", "fsdp") or a Lightning Strategy
    num_nodes: int | None = None

    def trainer_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = trainer_devices(self.devices) if self.devices else {}
        if self.strategy is not None:
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
    def single_device(device: Any) -> Execution:
        return Execution(_devices([device], "LearningStrategy.single_device"))

    @staticmethod
    def multi_device_naive(devices: Sequence[Any]) -> Execution:
        return _multi(devices, "ddp", "LearningStrategy.multi_device_naive")

    @staticmethod
    def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
        return _ddp(devices, config, "LearningStrategy.ddp")

    distributed_data_parallel = ddp


class ExecutionStrategy:
    """Burn 0.21's `ExecutionStrategy::{single, multi, ddp}`."""

    @staticmethod
    def single(device: Any) -> Execution:
        return Execution(_devices([device], "ExecutionStrategy.single"))

    @staticmethod
    def multi(devices: Sequence[Any], optim: MultiDeviceOptim = MultiDeviceOptim.OPTIM_MAIN_DEVICE) -> Execution:
        return _multi(devices, MultiDeviceOptim(optim).value, "ExecutionStrategy.multi")

    @staticmethod
    def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
        return _ddp(devices, config, "ExecutionStrategy.ddp")


class TrainingStrategy:
    """Burn 0.20's `TrainingStrategy` (and 0.21's `Default(ExecutionStrategy)` / `Custom`)."""

    @staticmethod
    def single_device(device: Any) -> Execution:
        return ExecutionStrategy.single(device)

    @staticmethod
    def multi_device(devices: Sequence[Any], optim: MultiDeviceOptim = MultiDeviceOptim.OPTIM_MAIN_DEVICE) -> Execution:
        return ExecutionStrategy.multi(devices, optim)

    @staticmethod
    def ddp(devices: Sequence[Any], config: DistributedConfig | None = None) -> Execution:
        return _ddp(devices, config, "TrainingStrategy.ddp")

    @staticmethod
    def default(execution: Execution) -> Execution:
        return as_execution(execution)

    @staticmethod
    def custom(strategy: Any, devices: Sequence[Any] = ()) -> Execution:
        """A Lightning `Strategy` (or its name): Burn's custom learning strategy, run by Lightning."""
        return Execution(_devices(devices, "TrainingStrategy.custom") if devices else (), strategy)


def as_execution(value: Any) -> Execution:
    if isinstance(value, Execution):
        return value
    raise TypeError(
        "expected a device strategy such as LearningStrategy.single_device('cpu'), "
        f"ExecutionStrategy.ddp(['cuda:0', 'cuda:1']) or TrainingStrategy.custom(...), got {type(value).__name__}"
    )


def trainer_devices(devices: Sequence[Device]) -> dict[str, Any]:
    """Burn device list → Trainer `accelerator`/`devices` (`"cpu"`, `"cuda:1"`, torch.device, ints)."""
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
