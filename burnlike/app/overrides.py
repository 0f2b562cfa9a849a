"""Command-line overrides checked before Hydra composes them: a key the app's schema lacks gets one
line naming the key that does what was asked (`trainer.max_epochs` -> `learner.num_epochs`), instead
of Hydra's "Key 'max_epochs' not in 'TrainerConfig'" block, which says what is wrong but not where
to go. Only the groups with one schema whatever the options (trainer, learner, logger) and the
top-level keys are checked; model, data and optimizer keys depend on the option and are left to
Hydra, which names them.
"""

from __future__ import annotations

import dataclasses
import difflib

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
    return None


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
