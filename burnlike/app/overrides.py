"""Command-line overrides checked before Hydra composes them: a key the app's schema lacks gets one
line naming the key that does what was asked (`trainer.max_epochs` -> `learner.num_epochs`), instead
of Hydra's "Key 'max_epochs' not in 'TrainerConfig'" block, which says what is wrong but not where
to go. Only the groups with one schema whatever the options (trainer, learner, logger) and the
top-level keys are checked; model, data and optimizer keys depend on the option and are left to
Hydra, which names them.

A value the schema's type refuses (`learner.num_epochs=many`) gets one line too, saying what the key
takes: Hydra would refuse it as well, but in a block that ends in exit status 1.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any

# Lightning's Trainer arguments (and other names users bring) that the app spells its own way.
ELSEWHERE = {
    "trainer.max_epochs": "learner.num_epochs",
    "trainer.epochs": "learner.num_epochs",
    "trainer.accumulate_grad_batches": "learner.grads_accumulation",
    "trainer.gradient_clip_val": "optimizer.grad_clipping",
    "trainer.max_steps": "learner.num_iterations",
    "trainer.val_check_interval": "learner.valid_every",
    "trainer.ckpt_path": "learner.checkpoint",
    "trainer.resume_from_checkpoint": "learner.checkpoint",
    "trainer.enable_progress_bar": "learner.progress_bar",
    "trainer.enable_checkpointing": "learner.checkpointing",
    "trainer.logger": "logger.kinds",
    "trainer.seed": "seed",
    "learner.max_epochs": "learner.num_epochs",
    "learner.epochs": "learner.num_epochs",
    "learner.lr": "optimizer.lr",
    "learner.learning_rate": "optimizer.lr",
    "learner.devices": "trainer.devices",
    "learner.batch_size": "data.batch_size",
    "lr": "optimizer.lr",
    "epochs": "learner.num_epochs",
    "num_epochs": "learner.num_epochs",
    "batch_size": "data.batch_size",
    "devices": "trainer.devices",
}
# where the app's key behaves otherwise than the name asked for, what differs
DIFFERS = {
    "trainer.accumulate_grad_batches": "it sums the gradients of n batches, as Burn does, where Lightning averages them",
    "trainer.gradient_clip_val": "optimizer.grad_clipping={kind:global_norm,threshold:x} is Lightning's clipping, "
                                 "kind:norm Burn's per-tensor one",
    "trainer.val_check_interval": "an epoch becomes that many batches, so Burn's per-epoch logs and checkpoints "
                                  "are the validations'",
}


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def known_keys() -> dict[str, list[str]]:
    """Group -> its keys, for the groups whose schema is fixed; "" -> the top-level keys."""
    from burnlike.app.schema import AppConfig, LearnerConfig, LoggerConfig, TrainerConfig

    return {"": _fields(AppConfig), "trainer": _fields(TrainerConfig), "learner": _fields(LearnerConfig),
            "logger": _fields(LoggerConfig)}


def override_error(args: list[str]) -> str | None:
    """The message for the first override the app would misread (a key its schema lacks, a URL for
    Hydra's local run dir), None if all are fine."""
    keys = known_keys()
    for arg in args:
        if arg.startswith("-") or "=" not in arg or arg[0] in "+~":
            continue  # flags (-m, --cfg), appends and deletions: Hydra's own
        key, _, value = (part.strip() for part in arg.partition("="))
        if key in ("hydra.run.dir", "hydra.sweep.dir") and "://" in value:
            return (f"{key}={value}: Hydra's run dir is a local folder (its .hydra/ and train.log go there); "
                    f"the run's artifacts go to an object store with artifacts={value}")
        if "@" in key or "/" in key:
            continue  # a group option at another package, or a group path
        head, _, rest = key.partition(".")
        if not rest:
            known = head in keys[""] or head in ("hparams_search", "debug", "experiment")
        else:
            known = head not in keys or head == "" or rest.split(".", 1)[0] in keys[head]
        if not known:
            return _message(key, keys)
    return value_error(args)


def _message(key: str, keys: dict[str, list[str]]) -> str:
    if key in ELSEWHERE:
        note = f" ({DIFFERS[key]})" if key in DIFFERS else ""
        return f"{key}: no such key; the app's key for it is {ELSEWHERE[key]}{note}"
    head, _, rest = key.partition(".")
    group = head if rest else ""
    leaf = rest.split(".", 1)[0] if rest else head
    near = [f"{group}.{k}" if group else k for k in difflib.get_close_matches(leaf, keys[group], n=1, cutoff=0.75)]
    if not near:  # a known name under another group: learner.precision -> trainer.precision
        near = [f"{g}.{leaf}" if g else leaf for g, ks in keys.items() if leaf in ks][:1]
    hint = f"; did you mean {near[0]}?" if near else ""
    if group == "trainer" and not near:
        hint = f"; other lightning.Trainer arguments pass through as trainer.extra.{leaf}"
    listing = f"{group} has " if group else "top-level keys: "
    return f"{key}: no such key{hint} ({listing}{', '.join(keys[group])})"


OPTION_GROUPS = ("model", "data", "optimizer")  # a schema per option
PRIMARY = Path(__file__).resolve().parents[1] / "conf" / "train.yaml"  # the default option of each group


def value_error(args: list[str]) -> str | None:
    """The message for the first `key=value` whose value its schema's type refuses, None if all fit.
    Model, data and optimizer keys are checked against the option the command line picks (else the
    default one); sweeps, additions, deletions and keys a schema lacks are left to Hydra."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import OverrideType
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    overrides = []
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        try:
            overrides.append(parser.parse_override(arg))
        except HydraException:
            return None  # Hydra's parser names what it can't read
    plain = [o for o in overrides if o.type == OverrideType.CHANGE and o.package is None and not o.is_sweep_override()]
    if not plain:
        return None
    options = _default_options()
    options.update({o.key_or_group: o.value() for o in plain if o.key_or_group in OPTION_GROUPS})
    for override in plain:
        key = override.key_or_group
        head, _, rest = key.partition(".")
        schema = _schema(head, rest, options)
        if schema is None:
            continue
        path = rest or head
        expected = _refused(schema, path, override.value())
        if expected is not None:
            raw = override.input_line.partition("=")[2] if override.input_line else override.value()
            return f"{key}={raw} is invalid: expected {expected}"
    return None


def _default_options() -> dict[str, Any]:
    from omegaconf import OmegaConf

    primary = OmegaConf.load(PRIMARY)
    defaults = primary.defaults if OmegaConf.is_dict(primary) else []
    return {str(k): v for entry in defaults if OmegaConf.is_dict(entry) for k, v in entry.items()}


def _schema(head: str, rest: str, options: dict[str, Any]) -> type | None:
    """The structured config that holds `head.rest` (`head` alone: a top-level key)."""
    from burnlike.app.data import DataConfig
    from burnlike.app.schema import SCHEMAS, AppConfig, LearnerConfig, LoggerConfig, TrainerConfig

    fixed: dict[str, type] = {"trainer": TrainerConfig, "learner": LearnerConfig, "logger": LoggerConfig}
    if not rest:  # a top-level key; a group's name alone picks an option
        return AppConfig if head in _fields(AppConfig) and head not in (*OPTION_GROUPS, *fixed) else None
    if head in fixed:
        return fixed[head]
    if head not in OPTION_GROUPS or not isinstance(options.get(head), str):
        return None
    found = SCHEMAS.get(f"{head}/{options[head]}")
    return DataConfig if found is None and head == "data" and options[head] == "mnist" else found


def _refused(schema: type, path: str, value: Any) -> str | None:
    """What `path` of `schema` takes, when `value` is not that; None when it is (or no such key)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException, ValidationError

    node = OmegaConf.structured(schema)
    try:
        OmegaConf.update(node, path, value, merge=True)
    except ValidationError:
        return _takes(OmegaConf.structured(schema), path)
    except (OmegaConfBaseException, AssertionError):
        return None  # a key the schema lacks (or under a null), named before this or by Hydra
    return None


def _takes(node: Any, path: str) -> str:
    """`node`'s entry at `path` in words: "an integer", "null or a number", "one of A, B"."""
    from omegaconf import DictConfig, ListConfig
    from omegaconf.nodes import BooleanNode, EnumNode, FloatNode, IntegerNode, StringNode

    for part in path.split("."):
        node = node._get_node(part)
    words = {IntegerNode: "an integer", FloatNode: "a number", BooleanNode: "true or false", StringNode: "a string",
             DictConfig: "a map"}
    if isinstance(node, EnumNode):
        what = "one of " + ", ".join(dict.fromkeys(m.name for m in node.enum_type))
    elif isinstance(node, ListConfig):
        element = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}.get(node._metadata.element_type)
        what = f"a list of {element}" if element else "a list"
    else:
        what = next((w for kind, w in words.items() if isinstance(node, kind)), "another value")
    return f"null or {what}" if node._is_optional() else what
