"""Burn 0.21's `ComposedLrSchedulerConfig`: several schedulers stepped together, their learning
rates reduced by product (default), sum or average at every iteration.

`ComposedLrSchedulerConfig().linear(warmup).cosine(decay)` as in Burn; JSON keeps Burn's shape
(`{"schedulers": [{"Linear": {...}}, ...], "reduction": "Prod"}`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from burnlike.config import ConfigError
from burnlike.optim.lr_scheduler import (
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
)

# Burn's enum variant names (the JSON tags), plus burnlike's step scheduler
_VARIANTS: dict[str, type] = {
    "Linear": LinearLrSchedulerConfig,
    "Cosine": CosineAnnealingLrSchedulerConfig,
    "Exponential": ExponentialLrSchedulerConfig,
    "Noam": NoamLrSchedulerConfig,
    "Step": StepLrSchedulerConfig,
}


class ComposedLrScheduler(LrScheduler):
    """Burn's `ComposedLrScheduler`: every part steps at each iteration, their rates reduced. Its
    record is Burn's `ComposedLrSchedulerRecord { schedulers: [{"Linear": 5}, {"Cosine": 3}, ...] }`,
    each part's own record under its variant's name."""

    def __init__(self, parts: list[tuple[str, LrScheduler]], reduction: SchedulerReduction) -> None:
        self.parts = parts
        self.reduction = reduction
        super().__init__(self._reduce, name="ComposedLrScheduler")

    def _reduce(self, k: int) -> float:
        values = [p.lr_at(k) for _, p in self.parts]
        if self.reduction is SchedulerReduction.PROD:
            return float(math.prod(values))
        total = math.fsum(values)
        return total / len(values) if self.reduction is SchedulerReduction.AVG and values else total

    def to_record(self, iteration: int | None = None) -> Any:
        at = self.iteration if iteration is None else iteration
        return {"schedulers": [{tag: p.to_record(at)} for tag, p in self.parts]}

    def load_record(self, record: Any, iteration: int | None = None) -> LrScheduler:
        entries = record.get("schedulers") if isinstance(record, dict) and set(record) == {"schedulers"} else None
        if not isinstance(entries, list) or len(entries) != len(self.parts):
            raise ValueError(f"expected Burn's composed record {{'schedulers': [...]}} with {len(self.parts)} "
                             f"entries ({', '.join(tag for tag, _ in self.parts) or 'none'}), got {record!r}")
        at = iteration  # None: the first part's position is the step count, the others align to it
        for i, ((tag, part), entry) in enumerate(zip(self.parts, entries)):
            if not isinstance(entry, dict) or list(entry) != [tag]:
                raise ValueError(f"schedulers[{i}]: expected {{{tag!r}: ...}}, got {entry!r}")
            try:
                part.load_record(entry[tag], at)
            except ValueError as e:
                raise ValueError(f"schedulers[{i}] ({tag}): {e}") from None
            at = part.iteration if at is None else at
        self.iteration = self.iteration if at is None else at
        self.offset = 0
        return self


class SchedulerReduction(str, Enum):
    """Burn's `SchedulerReduction::{Avg, Sum, Prod}`; the UPPERCASE names are aliases."""

    Avg = "Avg"
    Sum = "Sum"
    Prod = "Prod"
    AVG = "Avg"
    SUM = "Sum"
    PROD = "Prod"


class BurnJson:
    """Burn's JSON for a scheduler config that is a list of schedulers (not an `@config`): `save` and
    `load` (pretty, as Burn writes it) and the serde hooks that nest it in another config, over the
    class's `to_dict`/`from_dict`."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls: type[J], data: dict[str, Any]) -> J:
        raise NotImplementedError

    def serde_value(self) -> dict[str, Any]:
        """Burn's JSON, also when nested in another config (`@config`'s serde hook)."""
        return self.to_dict()

    @classmethod
    def from_serde(cls: type[J], data: Any) -> J:
        if not isinstance(data, dict):
            raise ConfigError(f"{cls.__name__}: expected an object, got {data!r}")
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        """Write Burn's JSON of this config to `path`.

        Args:
            path: The JSON file to write.
        """
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls: type[J], path: str | Path) -> J:
        """Read a config from Burn's JSON at `path`.

        Args:
            path: The JSON file.

        Raises:
            ConfigError: The file can't be read, or doesn't hold this config.
        """
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"{path}: cannot read a {cls.__name__} ({e})") from None


J = TypeVar("J", bound=BurnJson)


@dataclass
class ComposedLrSchedulerConfig(BurnJson):
    """Burn's composed schedule: every scheduler steps at each iteration and their rates are reduced
    to one (`reduction`). Built as Burn builds it: `ComposedLrSchedulerConfig().linear(a).cosine(b)`."""

    schedulers: list[Any] = field(default_factory=list)  # the scheduler configs, stepped together
    reduction: SchedulerReduction = SchedulerReduction.PROD  # how their rates make one: Prod, Sum or Avg

    def _with(self, scheduler: Any) -> ComposedLrSchedulerConfig:
        return ComposedLrSchedulerConfig([*self.schedulers, scheduler], self.reduction)

    def linear(self, config: LinearLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """This config with a linear schedule added.

        Args:
            config: The schedule to add.
        """
        return self._with(config)

    def cosine(self, config: CosineAnnealingLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """This config with a cosine annealing schedule added.

        Args:
            config: The schedule to add.
        """
        return self._with(config)

    def exponential(self, config: ExponentialLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """This config with an exponential schedule added.

        Args:
            config: The schedule to add.
        """
        return self._with(config)

    def noam(self, config: NoamLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """This config with a Noam schedule added.

        Args:
            config: The schedule to add.
        """
        return self._with(config)

    def step(self, config: StepLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """This config with a step schedule added.

        Args:
            config: The schedule to add.
        """
        return self._with(config)

    def with_reduction(self, reduction: SchedulerReduction) -> ComposedLrSchedulerConfig:
        """This config with another reduction.

        Args:
            reduction: `SchedulerReduction` (or its name: "Avg", "Sum", "Prod").
        """
        return ComposedLrSchedulerConfig(list(self.schedulers), SchedulerReduction(reduction))

    def init(self) -> LrScheduler:
        """The composed scheduler; raises ValueError when a part's config is refused."""
        tags = {cls: tag for tag, cls in _VARIANTS.items()}
        parts = [(tags.get(type(s), type(s).__name__), s.init()) for s in self.schedulers]
        return ComposedLrScheduler(parts, SchedulerReduction(self.reduction))

    # Burn's JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Burn's JSON shape: `{"schedulers": [{"Linear": {...}}, ...], "reduction": "Prod"}`."""
        out = [to_variant(s, "ComposedLrSchedulerConfig", _VARIANTS) for s in self.schedulers]
        return {"schedulers": out, "reduction": SchedulerReduction(self.reduction).value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComposedLrSchedulerConfig:
        """The config of Burn's JSON shape (`to_dict`'s).

        Args:
            data: The parsed JSON.

        Raises:
            ConfigError: An entry or the reduction is not one Burn writes, named by its place.
        """
        schedulers = [from_variant(entry, f"ComposedLrSchedulerConfig: schedulers[{i}]", _VARIANTS)
                      for i, entry in enumerate(data.get("schedulers", []))]
        try:
            reduction = SchedulerReduction(data.get("reduction", "Prod"))
        except ValueError:
            raise ConfigError(f"ComposedLrSchedulerConfig: reduction must be Avg, Sum or Prod, got "
                              f"{data.get('reduction')!r}") from None
        return cls(schedulers, reduction)


def to_variant(scheduler: Any, owner: str, variants: dict[str, type]) -> Any:
    """`scheduler` as Burn's `LrSchedulerConfig` JSON: `{"<Variant>": {...}}` (`{"Constant": lr}` for a
    number, where `variants` has `Constant`)."""
    if "Constant" in variants and isinstance(scheduler, (int, float)) and not isinstance(scheduler, bool):
        return {"Constant": float(scheduler)}
    tags = {cls: tag for tag, cls in variants.items() if cls is not float}
    if type(scheduler) not in tags:
        raise ConfigError(f"{owner}: cannot save a {type(scheduler).__name__} "
                          f"(expected one of {', '.join(c.__name__ for c in tags)})")
    return {tags[type(scheduler)]: scheduler.to_dict()}


def from_variant(entry: Any, where: str, variants: dict[str, type]) -> Any:
    """The scheduler config of one `{"<Variant>": {...}}` entry; a ConfigError naming `where` else."""
    if not isinstance(entry, dict) or len(entry) != 1 or next(iter(entry)) not in variants:
        shapes = ", ".join(repr(t) + (": <lr>" if variants[t] is float else ": {...}") for t in variants)
        raise ConfigError(f"{where} must be one of {{{shapes}}}, got {entry!r}")
    (tag, body), = entry.items()
    if variants[tag] is float:
        if isinstance(body, bool) or not isinstance(body, (int, float)):
            raise ConfigError(f"{where}: Constant takes a learning rate, got {body!r}")
        return float(body)
    return getattr(variants[tag], "from_dict")(body)  # noqa: B009 - @config adds it
