"""Progress display: Lightning's tqdm bar showing Burn's running metric means.

The running means cost one host sync per refresh, so the bar refreshes every `refresh_rate`
steps rather than every step.
"""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar

from burnlike.train.module import StepModule


class BurnProgressBar(TQDMProgressBar):
    def __init__(self, refresh_rate: int = 20) -> None:
        super().__init__(refresh_rate=refresh_rate)

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict[str, Any]:
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        if not isinstance(pl_module, StepModule):
            return items
        for m in pl_module.metrics("valid" if trainer.validating or trainer.sanity_checking else "train"):
            if m.numeric and m.updated:
                items[m.name] = f"{m.running():.4g}{m.unit}"
        return items
