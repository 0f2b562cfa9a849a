"""A model's weights out of a file that is either a module record or a training checkpoint: the
one place that asks which, so `Module.load_file` and the CLI take weights from both alike."""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from burnlike.record.checkpoint.lightning_dict import is_checkpoint
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.error import RecordError, RecordPath
from burnlike.record.format import registry
from burnlike.record.format.location import RemotePath
from burnlike.record.format.module_record import load_module_record
from burnlike.record.format.recorder import Recorder


def load_weights(module: nn.Module, path: str | os.PathLike[str] | RemotePath, recorder: Recorder | None = None,
                 device: torch.device | str | None = None) -> nn.Module:
    """Load `path` into `module` in place: a module record, or the model weights of a burnlike
    training checkpoint. `recorder` None: the registry tells the format from the file."""
    recorder = recorder or registry.sniff(path)
    target = recorder.resolve(path)
    with recorder.scan(target, module=module) as (_, item):
        if is_checkpoint(item):
            weights_from_checkpoint(module, item, str(target))
        else:
            load_module_record(module, item, str(target))
    if device is not None:
        module.to(device)
    return module


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
