"""Burn's per-epoch checkpoint files (Burn 0.20+): `checkpoint/model-N.<ext>` a plain module record
(what Burn's recorder and `Module.load_file` load), `optim-N` and `scheduler-N` beside it, and
`trainer-N` with the rest of the Lightning checkpoint (loops, callbacks, metric store) so
Lightning can resume. `trainer-N` is written last: its presence marks a complete epoch.

Resuming reads `trainer-N` through the plugin, which puts the optimizer and scheduler states back
(`join_parts`) and names `model-N` under `MODEL_FILE`; the module's `on_load_checkpoint` loads the
weights from there (only it knows the module tree a Burn record needs).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from burnlike.record.checkpoint.lightning_dict import encode_checkpoint
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.error import RecordError
from burnlike.record.format import registry
from burnlike.record.format.location import AnyPath
from burnlike.record.format.recorder import Recorder

# file kind → the Lightning checkpoint key it holds
PARTS = {"optim": "optimizer_states", "scheduler": "lr_schedulers"}
KINDS = ("model", *PARTS, "trainer")
FILES_KEY = "burn_epoch_files"  # in trainer-N: {kind: file name} of its epoch's other files
MODEL_FILE = "burn_model_file"  # set at load: where the weights are (`StepModule.on_load_checkpoint`)


def epoch_file(folder: AnyPath, kind: str, epoch: int, extension: str) -> AnyPath:
    return folder / f"{kind}-{epoch}.{extension}"


def epoch_of(name: str, kind: str, extension: str) -> int | None:
    """N when `name` is `epoch_file`'s `<kind>-N.<extension>`, else None."""
    number = name.removeprefix(f"{kind}-").removesuffix(f".{extension}")
    if name != f"{kind}-{number}.{extension}" or not number.isdigit():
        return None
    return int(number)


def save_parts(checkpoint: dict[str, Any], model: nn.Module, folder: AnyPath, epoch: int, recorder: Recorder,
               write: bool = True) -> None:
    """Move the weights, optimizer and scheduler states out of `checkpoint` into their own files
    (written when `write`: rank 0); what stays is `trainer-N`'s content."""
    ext = recorder.file_extension()
    checkpoint.pop("state_dict", None)
    parts = {kind: checkpoint.pop(key, []) for kind, key in PARTS.items()}
    checkpoint["state_dict"] = {}  # the weights are in model-N
    checkpoint[FILES_KEY] = {kind: epoch_file(folder, kind, epoch, ext).name for kind in ("model", *PARTS)}
    if not write:
        return
    recorder.save_module(model, epoch_file(folder, "model", epoch, ext), durable=True)
    for kind, value in parts.items():
        recorder.record(encode_checkpoint({PARTS[kind]: value}, recorder), epoch_file(folder, kind, epoch, ext),
                        exact_path=True, durable=True)


def join_parts(checkpoint: dict[str, Any], path: AnyPath) -> dict[str, Any]:
    """`trainer-N`'s content plus its epoch's optimizer and scheduler states, with `MODEL_FILE`
    naming the weights file; any other checkpoint is returned unchanged."""
    names = checkpoint.pop(FILES_KEY, None)
    if not isinstance(names, dict):
        return checkpoint
    for kind, key in PARTS.items():
        part = path.parent / str(names.get(kind))
        if not part.exists():
            raise RecordError(f"the epoch's {kind} file {part.name} is missing beside it", str(path))
        value = decode_value(registry.sniff(part).load(part), str(part))
        if not isinstance(value, dict) or key not in value:
            raise RecordError(f"expected a map with '{key}'", str(part))
        checkpoint[key] = value[key]
    model = path.parent / str(names.get("model"))
    if not model.exists():
        raise RecordError(f"the epoch's model file {model.name} is missing beside it", str(path))
    checkpoint[MODEL_FILE] = str(model)
    return checkpoint
