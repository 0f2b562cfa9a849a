"""`burnlike.app.overrides`: a command-line key the app's schema lacks is named with the key that
does what was asked, before Hydra composes (Hydra's own message says what is wrong, not where to
go). Only groups whose schema is fixed are checked; the rest is left to Hydra."""

from __future__ import annotations

import pytest

from burnlike.app.overrides import override_error


@pytest.mark.parametrize(("arg", "names"), [
    ("trainer.max_epochs=3", "the app's key for it is learner.num_epochs"),  # Lightning's own name
    ("trainer.accumulate_grad_batches=4", "the app's key for it is learner.grads_accumulation (it sums the gradients"),
    ("learner.devices=2", "the app's key for it is trainer.devices"),
    ("epochs=3", "the app's key for it is learner.num_epochs"),
    ("learner.num_epoch=3", "did you mean learner.num_epochs?"),  # a typo: the nearest key
    ("logger.kind=[csv]", "did you mean logger.kinds?"),
    ("sed=3", "did you mean seed?"),
    ("learner.precision=16", "did you mean trainer.precision?"),  # a key of another group
    ("trainer.max_time=10", "other lightning.Trainer arguments pass through as trainer.extra.max_time"),
    ("trainer.max_steps=10", "the app's key for it is learner.num_iterations"),
    ("trainer.val_check_interval=250", "the app's key for it is learner.valid_every (an epoch becomes that many batches"),
    ("trainer.gradient_clip_val=1", "the app's key for it is optimizer.grad_clipping (optimizer.grad_clipping="
                                    "{kind:global_norm,threshold:x} is Lightning's clipping"),
    ("learner.num_epoch.of.run=3", "did you mean learner.num_epochs?"),  # the typo is the first name under the group
])
def test_an_unknown_key_is_named_with_the_right_one(arg, names):
    message = override_error([arg])
    key = arg.split("=")[0]
    assert message is not None and message.startswith(f"{key}: no such key; {names}"), message


def test_the_message_lists_the_groups_keys():
    message = override_error(["trainer.max_time=1"])
    assert message is not None and message.endswith(
        "(trainer has accelerator, devices, strategy, precision, num_nodes, fast_dev_run, limit_train_batches, "
        "limit_val_batches, matmul_precision, extra)")
    top = override_error(["sed=1"])
    assert top is not None and "(top-level keys: model, data, optimizer, scheduler, trainer, learner, logger, seed" in top


@pytest.mark.parametrize("args", [
    ["trainer.devices=2", "learner.num_epochs=2", "logger.kinds=[csv]", "seed=3", "optimized_metric=valid/Loss"],
    ["model=mlp", "model.hidden_sizes=[8]", "optimizer.lr=1", "data.root=/x"],  # option-dependent: Hydra's
    ["-m", "--cfg", "job", "trainer.extra.max_steps=3", "+trainer.extra.foo=1", "~logger"],  # flags, extra, +/~
    ["hydra.run.dir=x", "hydra/launcher=slurm", "trainer=cpu", "debug=limit", "hparams_search=mnist_optuna"],
    ["experiment=shakespeare_char", "scheduler=warmup_cosine", "scheduler.min_lr=0.1", "learner.valid_every=5"],
    ["model@other=mlp"],  # a group option at another package
])
def test_known_keys_flags_and_other_groups_pass(args):
    assert override_error(args) is None


def test_the_first_unknown_key_is_named():
    message = override_error(["learner.num_epochs=2", "trainer.max_epochs=3", "sed=1"])
    assert message is not None and message.startswith("trainer.max_epochs:")


@pytest.mark.parametrize("before", [["-m"], ["--cfg", "job"], ["+trainer.extra.foo=1"], ["~logger"], ["model@other=mlp"],
                                    ["hydra/launcher=slurm"], ["data"]])
def test_an_unknown_key_after_hydras_own_arguments_is_still_named(before):
    message = override_error([*before, "sed=1"])
    assert message is not None and message.startswith("sed: no such key"), message


@pytest.mark.parametrize(("args", "message"), [
    (["learner.num_epochs=many"], "learner.num_epochs=many is invalid: expected an integer"),
    (["seed=null"], "seed=null is invalid: expected an integer"),
    (["learner.summary=maybe"], "learner.summary=maybe is invalid: expected true or false"),
    (["trainer.limit_train_batches=all"], "trainer.limit_train_batches=all is invalid: expected null or a number"),
    (["logger.kinds=csv"], "logger.kinds=csv is invalid: expected a list of strings"),
    (["optimizer.lr=fast"], "optimizer.lr=fast is invalid: expected a number"),  # the default option's schema
    (["model=mlp", "model.hidden_sizes=[8,wide]"], "model.hidden_sizes=[8,wide] is invalid: expected a list of integers"),
    (["optimizer.aux_adamw.beta_1=x", "optimizer=muon"], "optimizer.aux_adamw.beta_1=x is invalid: expected a number"),
    (["optimizer=lbfgs", "optimizer.line_search_fn=Armijo"],
     "optimizer.line_search_fn=Armijo is invalid: expected one of NONE, StrongWolfe"),
])
def test_a_value_the_schemas_type_refuses_is_named_with_what_the_key_takes(args, message):
    assert override_error(args) == message


@pytest.mark.parametrize("args", [
    ["learner.num_epochs=3", "learner.checkpoint=3", "trainer.devices=[0,1]", "learner.early_stopping_patience=null"],
    ["-m", "learner.num_epochs=1,many"],  # a sweep: each job's value is Hydra's to check
    ["learner.num_epochs=${oc.env:EPOCHS}", "+trainer.extra.foo=bar"],  # interpolations, additions
    ["optimizer=sgd", "optimizer.momentum.dampening=0.1"],  # under a null default: Hydra's
    ["model=mlp", "model.hidden_sizes=[8]", "model.width=wide"],  # a key the option lacks: Hydra names it
])
def test_values_the_schema_takes_or_leaves_to_hydra_pass(args):
    assert override_error(args) is None
