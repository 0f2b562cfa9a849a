"""Fully sharded training (FSDP2) whose checkpoints keep Burn's compact format, on any accelerator.

`ShardedStrategy` is Lightning's `ModelParallelStrategy` with every process in one data-parallel
group: `StepModule.configure_model` shards the model with torch's `fully_shard` (each layer that
holds parameters, then the whole), so each process keeps a slice of the weights, gradients and
optimizer state. It runs on GPUs (NCCL) and on the CPU (gloo), where torch's older FSDP wrapper and
Lightning's `FSDPStrategy` refuse to. Its checkpoints go through burnlike's formats:
- `sharded=True` (the default): every rank writes its shard through DCP in Burn's encoding
  (`burnlike.record.checkpoint.dcp`: f16 weights under CompactRecorder, optimizer state at full
  precision, no pickle) and rank 0 the rest of the checkpoint as a record; a checkpoint written by
  N processes resumes in M (DCP reshards on load). Lightning's writes `.distcp` shards and a pickled
  `meta.pt`.
- `sharded=False`: rank 0 gathers the whole checkpoint and saves it through the
  `RecorderCheckpointIO` plugin; every rank reads such a file back through the plugin (Lightning's
  reads it with `torch.load`).
Paths stay strings, so `s3://`/`memory://` run dirs work (Lightning wraps them in `Path`).

`CompactFSDPStrategy` gives Lightning's `FSDPStrategy` (torch's FSDP wrapper, GPUs only) the same
checkpoints: `state_dict_type="sharded"` or `"full"`. Both mix in `CompactShards`.
"""

from __future__ import annotations

import copy
import os
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, cast

import lightning as L
import torch
from lightning.pytorch.strategies import FSDPStrategy, ModelParallelStrategy
from lightning.pytorch.trainer.states import TrainerFn
from torch import nn

from burnlike._lightning import (
    data_parallel_size,
    full_state_dict_context,
    load_raw_module_state,
    rekey_optimizer_state,
    saves_distributed_checkpoint,
    set_data_parallel_size,
    state_dict_type,
)
from burnlike.record.checkpoint.dcp import (
    CompactLoadPlanner,
    CompactSavePlanner,
    CompactStorageReader,
    CompactStorageWriter,
)
from burnlike.record.checkpoint.plugin import RecorderCheckpointIO
from burnlike.record.checkpoint.protocol import EpochCheckpoint
from burnlike.record.checkpoint.shard_folder import (
    is_sharded_checkpoint,
    read_training_state,
    remove_checkpoint_path,
    write_training_state,
)
from burnlike.record.checkpoint.weights import load_weights
from burnlike.record.format.location import as_path
from burnlike.record.format.named_mpk import CompactRecorder
from burnlike.record.format.recorder import Recorder


class CompactShards:
    """Checkpoint saving and loading for a sharding strategy, mixed in before Lightning's class:
    sharded state through DCP in the recorder's encoding plus the training state as a record; full
    state gathered on rank 0 through the `RecorderCheckpointIO` plugin, and read back by every rank
    through it. Each strategy says which it saves (`sharded`) and how a whole state loads
    (`load_full`)."""

    checkpoint_io: Any
    global_rank: int
    is_global_zero: bool
    model: nn.Module | None
    lightning_module: L.LightningModule | None
    optimizers: list[torch.optim.Optimizer]

    _model_skeleton: nn.Module | None = None  # the Burn model's structure before it is sharded

    @property
    def sharded(self) -> bool:
        raise NotImplementedError

    if TYPE_CHECKING:
        def broadcast(self, obj: Any, src: int = 0) -> Any: ...

    def connect(self, model: L.LightningModule) -> None:
        """Lightning connects the module as a fit starts, before `configure_model` shards it: keep
        the Burn model's structure (no weights), which a one-device checkpoint's `model-N` record is
        read into (`whole_weights`)."""
        super().connect(model)  # type: ignore[misc]  # Lightning's strategy, after this mixin
        from torch.distributed.fsdp import FSDPModule

        inner = getattr(model, "model", None)  # a StepModule's Burn model
        self._model_skeleton = None
        if isinstance(inner, nn.Module) and not any(isinstance(m, FSDPModule) for m in inner.modules()):
            self._model_skeleton = model_skeleton(inner)

    def whole_weights(self, checkpoint: dict[str, Any], path: str) -> dict[str, Any]:
        """The whole model's weights of a gathered checkpoint, taken out of it: its `state_dict`, or
        where that is Burn's per-epoch layout (a one-device or DDP fit's `trainer-N`, whose weights
        are the module record `model-N`) that record read into the model's structure."""
        state: dict[str, Any] = checkpoint.pop("state_dict", None) or {}
        model_file = EpochCheckpoint.take_model_file(checkpoint)
        if model_file is None:
            return state
        if self._model_skeleton is None:
            raise RuntimeError(f"{path}: its weights are the module record {model_file}, which only a burnlike "
                               "StepModule's model is read from")
        whole = load_weights(copy.deepcopy(self._model_skeleton).to_empty(device="cpu"), str(model_file))
        return {f"model.{k}": v for k, v in whole.state_dict().items()}

    @property
    def recorder(self) -> Recorder:
        """The format checkpoints take: the plugin's recorder (`with_file_checkpointer`'s)."""
        io = self.checkpoint_io
        return io.recorder if isinstance(io, RecorderCheckpointIO) else CompactRecorder()

    def save_checkpoint(self, checkpoint: dict[str, Any], filepath: str | os.PathLike[str],
                        storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__}.save_checkpoint(..., storage_options=...) is not supported: "
                            "configure the URL's filesystem through fsspec instead")
        target = str(self.broadcast(str(filepath)))
        if not self.sharded:  # rank 0, through the plugin (the state gathered by lightning_module_state_dict)
            if self.is_global_zero:
                if is_sharded_checkpoint(target):
                    self._remove(target)
                self.checkpoint_io.save_checkpoint(checkpoint, target)
            return
        folder = as_path(target)
        if self.is_global_zero and folder.exists() and not folder.is_dir():
            folder.unlink()
        state: dict[str, Any] = {"state_dict": checkpoint.pop("state_dict")}
        state.update({f"optimizer_{i}": s for i, s in enumerate(checkpoint.pop("optimizer_states", []))})
        from torch.distributed.checkpoint.state_dict_saver import save

        save(state, storage_writer=CompactStorageWriter(folder, self.recorder), planner=CompactSavePlanner())
        if self.is_global_zero:
            write_training_state(folder, checkpoint, self.recorder)

    def load_checkpoint(self, checkpoint_path: str | os.PathLike[str], weights_only: bool | None = None
                        ) -> dict[str, Any]:
        """Either form, whichever wrote it: a sharded folder reshards onto this run's processes."""
        target = str(self.broadcast(str(checkpoint_path)))
        assert self.model is not None and self.lightning_module is not None
        if not is_sharded_checkpoint(target):
            return self.load_full(self.checkpoint_io.load_checkpoint(target), target)  # every rank, any format
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
            set_optimizer_state_dict,
        )
        from torch.distributed.checkpoint.state_dict_loader import load

        folder = as_path(target)
        model_state = {"state_dict": get_model_state_dict(self.model)}
        load(model_state, storage_reader=CompactStorageReader(folder), planner=CompactLoadPlanner())
        self.model.load_state_dict(model_state["state_dict"], strict=self.lightning_module.strict_loading)
        for i, optimizer in enumerate(self.optimizers if self._fitting() else []):
            key = f"optimizer_{i}"
            optim_state = {key: get_optimizer_state_dict(self.model, optimizer)}
            load(optim_state, storage_reader=CompactStorageReader(folder), planner=CompactLoadPlanner())
            set_optimizer_state_dict(self.model, optimizer, optim_state_dict=optim_state[key],
                                     options=StateDictOptions(cpu_offload=True))
        return read_training_state(folder)

    def load_full(self, checkpoint: dict[str, Any], path: str) -> dict[str, Any]:
        """Load a whole (gathered) checkpoint's weights and optimizer states into the sharded model."""
        raise NotImplementedError

    def _fitting(self) -> bool:
        assert self.lightning_module is not None
        return bool(self.lightning_module.trainer.state.fn == TrainerFn.FITTING)

    def _optimizer_states(self, checkpoint: dict[str, Any], path: str) -> list[dict[str, Any]]:
        states = checkpoint.get("optimizer_states") or []
        if not self._fitting() or not states:
            return []
        if len(states) != len(self.optimizers):
            raise RuntimeError(f"{len(self.optimizers)} optimizers, but the checkpoint {path} holds "
                               f"{len(states)} optimizer states")
        return list(states)

    def remove_checkpoint(self, filepath: str | os.PathLike[str]) -> None:
        """A sharded checkpoint is a folder: rank 0 removes it whole."""
        if self.is_global_zero:
            self._remove(str(filepath))

    @staticmethod
    def _remove(target: str) -> None:
        remove_checkpoint_path(target)


class ShardedStrategy(CompactShards, ModelParallelStrategy):
    """Every process one data-parallel rank of a fully sharded model (FSDP2: `fully_shard`), on any
    accelerator; Burn-format checkpoints, sharded (`sharded=True`) or gathered (`sharded=False`)."""

    strategy_name = "burnlike_sharded"

    def __init__(self, sharded: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("tensor_parallel_size", 1)
        super().__init__(save_distributed_checkpoint=sharded, **kwargs)

    def setup_environment(self) -> None:
        if data_parallel_size(self) == "auto":  # every process shards the same model (FSDP), none splits it
            set_data_parallel_size(self, self.num_nodes * self.num_processes)
        super().setup_environment()

    @property
    def sharded(self) -> bool:
        return saves_distributed_checkpoint(self)

    def data_parallel_mesh(self) -> Any:
        return self.device_mesh["data_parallel"]

    def load_full(self, checkpoint: dict[str, Any], path: str) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_model_state_dict,
            set_optimizer_state_dict,
        )

        assert self.model is not None and self.lightning_module is not None
        full = StateDictOptions(full_state_dict=True, strict=self.lightning_module.strict_loading)
        set_model_state_dict(self.model, self.whole_weights(checkpoint, path), options=full)
        for optimizer, state in zip(self.optimizers, self._optimizer_states(checkpoint, path)):
            set_optimizer_state_dict(self.model, optimizer, options=full,
                                     optim_state_dict=rekey_optimizer_state(state, self.model))
        return checkpoint


class CompactFSDPStrategy(CompactShards, FSDPStrategy):
    """Lightning's `FSDPStrategy` (torch's FSDP wrapper, GPUs) whose checkpoints are Burn's format:
    `state_dict_type="sharded"` writes the compact DCP shards, `"full"` one record through the plugin,
    and it resumes from either (Lightning's writes pickled `.distcp`/`meta.pt` shards, and reads a
    full file with `torch.load` only). On the CPU use `ShardedStrategy` (torch's FSDP wrapper needs
    an accelerator; `fully_shard` does not)."""

    strategy_name = "burnlike_fsdp"

    def __init__(self, state_dict_type: Literal["full", "sharded"] = "sharded", **kwargs: Any) -> None:
        super().__init__(state_dict_type=state_dict_type, **kwargs)

    @property
    def sharded(self) -> bool:
        return state_dict_type(self) == "sharded"

    def load_full(self, checkpoint: dict[str, Any], path: str) -> dict[str, Any]:
        from torch.distributed.fsdp import FullyShardedDataParallel, OptimStateKeyType

        assert self.model is not None and self.lightning_module is not None
        load_raw_module_state(self.whole_weights(checkpoint, path), self.model, self.world_size,
                              self.lightning_module.strict_loading)
        states = self._optimizer_states(checkpoint, path)
        gathered = full_state_dict_context(self.model, self.world_size, rank0_only=False)
        with cast(AbstractContextManager[None], gathered):  # typed as its generator
            for optimizer, state in zip(self.optimizers, states):
                if state.get("state") and isinstance(next(iter(state["state"])), int):  # saved by parameter index
                    state = FullyShardedDataParallel.rekey_optim_state_dict(state, OptimStateKeyType.PARAM_NAME,
                                                                            self.model)
                state = FullyShardedDataParallel.optim_state_dict_to_load(model=self.model, optim=optimizer,
                                                                          optim_state_dict=state)
                optimizer.load_state_dict(state)
        return checkpoint


def shard_model(model: nn.Module, mesh: Any) -> None:
    """`fully_shard` each module that holds parameters of its own (a layer), then the whole model: a
    forward gathers one layer's weights at a time."""
    from torch.distributed.fsdp import fully_shard

    for module in list(model.modules())[1:]:
        if any(True for _ in module.parameters(recurse=False)):
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)


def full_model_state(trainer: L.Trainer, pl_module: L.LightningModule, prefix: str = "model."
                     ) -> dict[str, torch.Tensor]:
    """The weights under `prefix` of `pl_module`, whole and on the CPU: under a sharding strategy
    gathered from every rank's shards (a collective: every rank calls it), else its own."""
    if not isinstance(trainer.strategy, CompactShards):
        state = {k: v.detach().cpu() for k, v in pl_module.state_dict().items()}
    else:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        root = trainer.strategy.model
        assert root is not None
        state = get_model_state_dict(root, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix) and isinstance(v, torch.Tensor)}


def model_skeleton(model: nn.Module) -> nn.Module:
    """`model`'s structure without its weights (on the meta device), taken before sharding turns its
    parameters into shards: the whole model is rebuilt from it with `whole_model`. The weights are
    never copied (a deepcopy whose parameters and buffers are meta tensors from the start)."""
    memo: dict[int, Any] = {id(b): b.to("meta") for b in model.buffers()}
    memo.update({id(p): nn.Parameter(p.detach().to("meta"), requires_grad=p.requires_grad)
                 for p in model.parameters()})
    return copy.deepcopy(model, memo)


def whole_model(skeleton: nn.Module, weights: dict[str, torch.Tensor]) -> nn.Module:
    """A CPU model of `skeleton`'s structure holding `weights` (`full_model_state`'s)."""
    model = skeleton.to_empty(device="cpu")
    model.load_state_dict(weights)
    return model


def compact_strategy(strategy: Any, accelerator: Any = "auto") -> Any:
    """The strategy a run with Burn-format checkpoints uses for `strategy`: `"fsdp"` becomes
    `CompactFSDPStrategy` on GPUs and `ShardedStrategy` on the CPU (where torch's FSDP wrapper can't
    run); Lightning's own `FSDPStrategy`/`ModelParallelStrategy` objects are refused, naming the
    class to use instead (they never hand their files to the recorder: pickled `.distcp` shards)."""
    if isinstance(strategy, str) and strategy.startswith("fsdp"):
        if strategy != "fsdp":
            raise ValueError(f"strategy={strategy!r} with a file checkpointer: pass "
                             "burnlike.train.sharded.CompactFSDPStrategy(...) with the options you need")
        on_cpu = accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available())
        return ShardedStrategy() if on_cpu else CompactFSDPStrategy()
    for theirs, ours in ((FSDPStrategy, CompactFSDPStrategy), (ModelParallelStrategy, ShardedStrategy)):
        if type(strategy) is theirs:
            raise ValueError(f"Lightning's {theirs.__name__} saves pickled .distcp shards that the file "
                             f"checkpointer's recorder never sees: use burnlike.train.sharded.{ours.__name__}, "
                             "which writes them in Burn's format")
    return strategy
