"""A model's weights out of a file that is either a module record or a training checkpoint: the
one place that asks which, so `Module.load_file` and the CLI take weights from both alike. A
`trainer-N` of Burn's per-epoch layout holds no weights: they are in the `model-N` it names."""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from burnlike.record.checkpoint.epoch_files import model_file
from burnlike.record.checkpoint.lightning_dict import is_checkpoint
from burnlike.record.checkpoint.protocol import FILES_KEY
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.error import RecordError, RecordPath
from burnlike.record.format import registry
from burnlike.record.format.location import AnyPath, RemotePath
from burnlike.record.format.module_record import load_module_record
from burnlike.record.format.recorder import Recorder


def load_weights(module: nn.Module, path: str | os.PathLike[str] | RemotePath, recorder: Recorder | None = None,
                 device: torch.device | str | None = None) -> nn.Module:
    """Load `path` into `module` in place: a module record, or the model weights of a burnlike
    training checkpoint (a whole one, or a `trainer-N`: the `model-N` beside it). `recorder` None:
    the registry tells the format from the file.

    Args:
        module: The module to fill; its parameters keep their identity.
        path: A module record or a training checkpoint.
        recorder: The file's format (None: told from the file).
        device: Where to move the module after loading (None: where it is).

    Returns:
        `module`.

    Raises:
        RecordError: The file is not readable, or its weights don't fit `module` (names, shapes).
    """
    recorder = recorder or registry.sniff(path)
    target = recorder.resolve(path)
    with recorder.scan(target, module=module) as (_, item):
        weights_file = epoch_model_file(item, target) if is_checkpoint(item) else None
        if weights_file is None and is_checkpoint(item):
            weights_from_checkpoint(module, item, str(target))
        elif weights_file is None:
            load_module_record(module, item, str(target))
    if weights_file is not None:  # a trainer-N: its epoch's model-N is a module record
        with registry.sniff(weights_file).scan(weights_file, module=module) as (_, item):
            load_module_record(module, item, str(weights_file))
    if device is not None:
        module.to(device)
    return module


def epoch_model_file(checkpoint: Any, path: AnyPath) -> AnyPath | None:
    """The `model-N` a `trainer-N` checkpoint names beside it (None: a checkpoint with its weights)."""
    names = decode_value(checkpoint.get(FILES_KEY), str(path), FILES_KEY)
    return None if names is None else model_file(names, path)


def weights_from_checkpoint(module: nn.Module, checkpoint: Any, path: RecordPath = None) -> None:
    """Load a model's weights out of a raw checkpoint record item (StepModule keys are `model.*`)."""
    state = decode_value(checkpoint.get("state_dict"), path, "state_dict")
    if not isinstance(state, dict):
        raise RecordError("checkpoint 'state_dict' is not a map", path, "state_dict")
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise RecordError(f"expected a tensor, got {type(value).__name__}", path, f"state_dict.{key}")
    own = module.state_dict()
    prefixed = {k[len("model."):]: v for k, v in state.items() if isinstance(k, str) and k.startswith("model.")}
    weights = prefixed if prefixed and not any(k in own for k in state) else dict(state)
    missing = [k for k in own if k not in weights]
    if missing:
        raise RecordError(f"checkpoint lacks {len(missing)} model entries, e.g. '{missing[0]}'", path, "state_dict")
    for key, tensor in weights.items():
        if key in own and tuple(tensor.shape) != tuple(own[key].shape):
            raise RecordError(f"shape {list(tensor.shape)} in the checkpoint, model has {list(own[key].shape)}",
                              path, f"state_dict.{key}")
    try:
        module.load_state_dict({k: v for k, v in weights.items() if k in own}, strict=True)
    except RuntimeError as e:  # e.g. a dtype that can't be cast
        raise RecordError(f"can't load the checkpoint's weights ({e})", path, "state_dict") from None
