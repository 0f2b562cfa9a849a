"""`NoProfiler`: Lightning's default profiler (`PassThroughProfiler`), without its cost per hook.

Lightning wraps every hook it calls in `trainer.profiler.profile(name)`; the pass-through profiler
does nothing there but still builds a generator-based context manager each time, some 80 per
training step, about half of the Trainer's own time per step on a small model. `NoProfiler` hands
back one shared no-op context instead. `LearnerBuilder` uses it unless `trainer_kwargs(profiler=...)`
names a profiler (`"simple"`, `"advanced"`, a `Profiler`), which then profiles as usual.
"""

from __future__ import annotations

import contextlib
from typing import Any

from lightning.pytorch.profilers import PassThroughProfiler

_NOTHING = contextlib.nullcontext()


class NoProfiler(PassThroughProfiler):
    def profile(self, action_name: str) -> contextlib.AbstractContextManager[Any]:  # type: ignore[override]
        return _NOTHING
