"""`RecorderCheckpointIO`: Lightning's CheckpointIO plugin writing checkpoints as Burn records.

The whole checkpoint dict is the record item. Model weights (`state_dict` floats) take the
recorder's precision; optimizer state, counters, int tensors, scalars, and the ddp_spawn weight
transport (`.temp.ckpt`) keep their own dtype. Loading never unpickles anything.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO
from typing_extensions import override

from burnlike.record.checkpoint.epoch_files import join_parts
from burnlike.record.checkpoint.lightning_dict import (
    SPAWN_TRANSPORT,
    MapLocation,
    encode_checkpoint,
    load_checkpoint,
    snapshot_checkpoint,
)
from burnlike.record.checkpoint.shard_folder import is_sharded_checkpoint, remove_checkpoint_path
from burnlike.record.checkpoint.value import Unstorable
from burnlike.record.error import RecordError
from burnlike.record.format.location import AnyPath, StorageOptions, as_path
from burnlike.record.format.named_mpk import CompactRecorder
from burnlike.record.format.recorder import Recorder

if TYPE_CHECKING:
    from lightning.pytorch import LightningModule

    LM = TypeVar("LM", bound=LightningModule)


class RecorderCheckpointIO(CheckpointIO):
    """`Trainer(plugins=[RecorderCheckpointIO(CompactRecorder())])`.

    Paths may be fsspec URLs (`s3://`, `gs://`, `memory://`); `storage_options` go to fsspec.
    `async_save=True`: each save copies the tensors before it returns (so a checkpoint never
    mixes two steps), then casts, encodes and writes on one writer thread; a write's error is raised at
    the next save, load or at `teardown`, which waits for pending writes (Lightning calls it at the
    end of fit). Loads and removals wait for pending writes first.

    Args:
        recorder: The format checkpoints are written in (`CompactRecorder()` when None); loads read
            any recorder's format.
        async_save: Write on a background thread, so training goes on during the write.

    Attributes:
        recorder: The format checkpoints are written in.
        async_save: Whether saves are written on the writer thread.
    """

    def __init__(self, recorder: Recorder | None = None, async_save: bool = False) -> None:
        self.recorder = recorder or CompactRecorder()
        self.async_save = async_save
        self._writer: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        self._buffers: list[torch.Tensor] = []  # the last snapshot's copies, reused once its write is done

    @override
    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | os.PathLike[str],
                        storage_options: Any | None = None) -> None:
        """Write `checkpoint` to `path` as a record (to a temp file, then renamed), now or, with
        `async_save`, on the writer thread.

        Args:
            checkpoint: Lightning's checkpoint dict.
            path: Where to write it (a local path or an fsspec URL).
            storage_options: fsspec's options for a URL.

        Raises:
            Exception: An earlier async write's error.
        """
        self._raise_failed()
        target = as_path(path, cast(StorageOptions, storage_options))
        full = target.name.endswith(SPAWN_TRANSPORT)
        if not self.async_save:
            self._write(checkpoint, target, full)
            return
        idle = not self._pending  # no write in flight reads the last snapshot's buffers
        snapshot, self._buffers = snapshot_checkpoint(checkpoint, self._buffers if idle else None)
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="burnlike-checkpoint")
        self._pending.append(self._writer.submit(self._write, snapshot, target, full))

    def _write(self, checkpoint: dict[str, Any], target: AnyPath, full: bool) -> None:
        self.recorder.record(encode_checkpoint(checkpoint, self.recorder, full=full), target, exact_path=True,
                             durable=True)

    @override
    def load_checkpoint(self, path: str | os.PathLike[str], map_location: MapLocation = None,
                        weights_only: bool | None = None) -> dict[str, Any]:
        """Read a checkpoint (any recorder's format, or a torch.save file through torch's
        `weights_only` loader; `weights_only` is accepted and moot: nothing is ever unpickled).
        Lightning restores it; tensors are on CPU unless `map_location`. A sharded checkpoint's
        folder (`ShardedStrategy`'s) comes back gathered: the whole weights and optimizer states,
        as a one-process fit saves them.

        Args:
            path: The checkpoint's file (or a sharded checkpoint's folder).
            map_location: Where tensors go (torch's `map_location` forms); CPU when None.
            weights_only: Accepted for Lightning's signature; nothing is unpickled either way.

        Raises:
            FileNotFoundError: Nothing at `path`.
            RecordError: The file is not a checkpoint this can read.
        """
        self.wait()
        target = as_path(path)
        if not target.exists():
            raise FileNotFoundError(f"Checkpoint file not found: {path}")
        if is_sharded_checkpoint(target):  # a sharded fit's: gathered whole, for a fit that doesn't shard
            from burnlike.record.checkpoint.dcp import gathered_checkpoint

            return gathered_checkpoint(target)
        return join_parts(load_checkpoint(target, self.recorder, map_location), target)

    @override
    def remove_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Remove a checkpoint (a file, or a sharded checkpoint's folder), after pending writes.

        Args:
            path: The checkpoint to remove.
        """
        self.wait()
        remove_checkpoint_path(path)  # a sharded checkpoint's folder too (resumed here from a sharded fit)

    @override
    def teardown(self) -> None:
        """Wait for pending writes, stop the writer thread, raise the first write error."""
        try:
            self.wait()
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)
                self._writer = None
            self._buffers = []

    def wait(self) -> None:
        """Block until every pending async write is on storage; raise the first one's error."""
        pending, self._pending = self._pending, []
        errors = [e for e in (f.exception() for f in pending) if e is not None]
        if errors:
            raise errors[0]

    def _raise_failed(self) -> None:
        """A finished write's error, raised at the next save (the write itself can't raise)."""
        done = [f for f in self._pending if f.done()]
        self._pending = [f for f in self._pending if not f.done()]
        for f in done:
            error = f.exception()
            if error is not None:
                raise error


def load_lightning_module(module_cls: type[LM], path: str | os.PathLike[str], map_location: MapLocation = None,
                          strict: bool | None = None, recorder: Recorder | None = None, **kwargs: Any) -> LM:
    """`LightningModule.load_from_checkpoint` for recorder checkpoints (Lightning's own bypasses
    plugins and would unpickle). Hyperparameters saved as `Unstorable` markers (an nn.Module or a
    partial in hparams) must be passed again as keyword arguments, which override saved ones.

    Args:
        module_cls: The LightningModule class to build.
        path: The checkpoint file.
        map_location: Where tensors go; CPU when None.
        strict: Whether the state dict's keys must match the module's exactly (Lightning's default when None).
        recorder: The checkpoint's format (None: told from the file).
        **kwargs: Hyperparameters for `module_cls`, overriding the saved ones.

    Raises:
        RecordError: The file can't be read, or a hyperparameter saved as `Unstorable` is not passed.
    """
    from burnlike._lightning import load_state

    checkpoint = load_checkpoint(path, recorder, map_location)
    hparams = checkpoint.get("hyper_parameters") or {}
    missing = [k for k, v in hparams.items() if isinstance(v, Unstorable) and k not in kwargs] \
        if isinstance(hparams, dict) else []
    if missing:
        raise RecordError(f"hyperparameters {missing} were not storable without pickle; pass them as keyword "
                          f"arguments: load_lightning_module({getattr(module_cls, '__name__', module_cls)}, path, "
                          f"{missing[0]}=...)", path, f"hyper_parameters.{missing[0]}")
    return cast("LM", load_state(module_cls, checkpoint, strict, **kwargs))


def load_from_checkpoint(module_cls: type[LM], checkpoint_path: str | os.PathLike[str],
                         map_location: MapLocation = None, strict: bool | None = None, **kwargs: Any) -> LM:
    """Lightning's `Cls.load_from_checkpoint(path, map_location, strict, **kwargs)`, spelled as a
    function: `load_from_checkpoint(MyModule, "epoch=3-step=100.ckpt")`.

    Args:
        module_cls: The LightningModule class to build.
        checkpoint_path: The checkpoint file.
        map_location: Where tensors go; CPU when None.
        strict: Whether the state dict's keys must match the module's exactly.
    """
    return load_lightning_module(module_cls, checkpoint_path, map_location=map_location, strict=strict, **kwargs)
