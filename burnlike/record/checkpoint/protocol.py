"""What burnlike adds to Lightning's checkpoint dict, as one typed object: `EpochCheckpoint`.

Lightning builds its checkpoint dict in one place and restores it in one; burnlike's part of it
(the metric store, the train epoch under way, a mid-epoch checkpoint's batch count, the random
generators, Burn's per-epoch file names) is written through `EpochCheckpoint.add_to` by the hook
that owns each value and read back through `EpochCheckpoint.from_dict`. The dict keys are spelled
here only, so checkpoints written by earlier versions keep loading.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping
from typing import Any, ClassVar

METRIC_STORE = "burnlike_metric_store"  # the metric store's state (`MetricStore.state_dict`)
EPOCH_HISTORY = "burn_epoch_history"  # the train epoch under way, per rank (mid-epoch checkpoints)
BATCHES_DONE = "burn_batches_done"  # in a mid-epoch checkpoint: batches of its epoch already trained
RNG_STATE = "burn_rng_state"  # the random generators' states (`RandomState`)
FILES_KEY = "burn_epoch_files"  # in trainer-N: {kind: file name} of its epoch's other files
MODEL_FILE = "burn_model_file"  # set at load: where the weights are (`StepModule.on_load_checkpoint`)
BURN_OPTIM = "burn_optim_record"  # in trainer-N's optimizer state: optim-N is Burn's record of it


@dataclasses.dataclass(frozen=True)
class EpochCheckpoint:
    """burnlike's fields of a Lightning checkpoint; None: not in it. A field of the wrong type in a
    checkpoint reads as None, as if absent."""

    batches_done: int | None = None
    rng_state: dict[str, Any] | None = None
    epoch_files: dict[str, Any] | None = None
    metric_store: dict[str, Any] | None = None
    epoch_history: dict[str, Any] | None = None
    model_file: str | None = None

    _KEYS: ClassVar[dict[str, str]] = {"batches_done": BATCHES_DONE, "rng_state": RNG_STATE, "epoch_files": FILES_KEY,
             "metric_store": METRIC_STORE, "epoch_history": EPOCH_HISTORY, "model_file": MODEL_FILE}

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint keys and values of the fields set."""
        return {self._KEYS[f.name]: value for f in dataclasses.fields(self)
                if (value := getattr(self, f.name)) is not None}

    def add_to(self, checkpoint: MutableMapping[str, Any]) -> None:
        """Write the fields set into Lightning's `checkpoint` (each after the keys already there)."""
        checkpoint.update(self.to_dict())

    @classmethod
    def from_dict(cls, checkpoint: Mapping[str, Any]) -> EpochCheckpoint:
        """burnlike's fields of a Lightning `checkpoint` (a decoded dict or a record item)."""
        def kind(name: str, expected: type) -> Any:
            value = checkpoint.get(cls._KEYS[name])
            wrong = not isinstance(value, expected) or (expected is int and isinstance(value, bool))
            return None if wrong else value

        return cls(batches_done=kind("batches_done", int), rng_state=kind("rng_state", dict),
                   epoch_files=kind("epoch_files", dict), metric_store=kind("metric_store", dict),
                   epoch_history=kind("epoch_history", dict), model_file=kind("model_file", str))

    @staticmethod
    def take_model_file(checkpoint: MutableMapping[str, Any]) -> str | None:
        """The weights file `join_parts` named in `checkpoint`, taken out of it (Lightning would
        otherwise keep an unknown key in what it passes on)."""
        value = checkpoint.pop(MODEL_FILE, None)
        return value if isinstance(value, str) else None

    @staticmethod
    def take_epoch_files(checkpoint: MutableMapping[str, Any]) -> Any:
        """A trainer-N's `{kind: file name}` map, taken out of it (None: another checkpoint)."""
        return checkpoint.pop(FILES_KEY, None)
