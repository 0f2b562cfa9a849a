"""`Module`: Burn's module conveniences as a mixin for `torch.nn.Module`.

Mix it in first (`class Model(Module, nn.Module)` or simply `class Model(Module)`, since `Module`
already derives from `nn.Module`) to get `save_file`/`load_file` with Burn's recorders,
`into_record`/`load_record`, `valid()` and `num_params()`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

if TYPE_CHECKING:
    from burnlike.record.format.location import AnyPath
    from burnlike.record.format.recorder import Recorder
    from burnlike.record.tensor.precision import SettingsLike

M = TypeVar("M", bound="Module")


class Module(nn.Module):
    """An `nn.Module` with Burn's record and inference helpers."""

    def num_params(self) -> int:
        """Number of scalar parameters (Burn's `Module::num_params`)."""
        return sum(p.numel() for p in self.parameters())

    def valid(self: M) -> M:
        """A detached inference copy: eval mode, no autograd (Burn's `AutodiffModule::valid`).

        A copy, not `self.eval()`, so a custom loop that keeps training `self` afterwards keeps its
        dropout and batch-norm in training mode, exactly as in Burn.
        """
        clone = copy.deepcopy(self)
        clone.eval()
        clone.requires_grad_(False)
        return clone

    def devices(self) -> list[torch.device]:
        seen: list[torch.device] = []
        for t in list(self.parameters()) + list(self.buffers()):
            if t.device not in seen:
                seen.append(t.device)
        return seen

    def fork(self: M, device: torch.device | str) -> M:
        return self.to(device)

    # Records -----------------------------------------------------------------------------------
    def save_file(self, path: str | Path, recorder: Recorder | None = None, *, durable: bool = False) -> AnyPath:
        """Save the weights with `recorder` (default `DefaultRecorder`); the extension is replaced
        by the recorder's, like Burn's `FileRecorder`. Returns the path written (`path` may be an
        fsspec URL such as `s3://bucket/model`: a `RemotePath` then). Always atomic (temp file,
        rename); `durable=True` also waits until the file is on the disk (fsync), as checkpoints do."""
        from burnlike.record import DefaultRecorder

        return (recorder or DefaultRecorder()).save_module(self, path, durable=durable)

    def load_file(
        self: M, path: str | Path, recorder: Recorder | None = None, device: torch.device | str | None = None
    ) -> M:
        """Load weights in place from a record or a burnlike training checkpoint and return self
        (`recorder` None: the format is told from the file)."""
        from burnlike.record.checkpoint.weights import load_weights

        load_weights(self, path, recorder, device)
        return self

    def into_record(self, settings: SettingsLike = None) -> dict[str, Any]:
        """The module's Burn record item (nested dict of `ParamSerde`/`TensorData`)."""
        from burnlike.record.format.module_record import module_to_record

        record: dict[str, Any] = module_to_record(self, settings)
        return record

    def load_record(self: M, record: dict[str, Any]) -> M:
        from burnlike.record.format.module_record import load_module_record

        load_module_record(self, record)
        return self
