"""`burnlike.record.checkpoint.weights`: a model's weights out of a training checkpoint (or a
module record). The model's entries are taken from under StepModule's `model.` prefix, or from a
checkpoint of the bare model, ignoring entries the model lacks; a checkpoint that lacks one of the
model's entries, or holds a wrong shape, a non-tensor or a malformed tensor, is a `RecordError`
naming the file and key."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from burnlike.record import CompactRecorder, DefaultRecorder, RecorderCheckpointIO, RecordError, load_weights
from tests.helpers.fit import cpu_builder, fit, same_weights
from tests.helpers.records import Net, randomised
from tests.helpers.toy import Classifier
from tests.record.checkpoint.helpers import save_checkpoint
from tests.record.helpers import PL_VERSION, Tiny, lightning_checkpoint, randomised_params, seeded_linear


class Broadcast(nn.Module):
    """A buffer that is an expanded view: torch can't copy into it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 2)
        self.register_buffer("scale", torch.ones(1).expand(4))


class Wrapper(nn.Module):
    """A module whose own entries start with `model.` (a submodule named `model`)."""

    def __init__(self) -> None:
        super().__init__()
        self.model = seeded_linear(0)


# --- what is loaded ---


def test_a_checkpoint_of_the_bare_model_loads(tmp_path):
    src = seeded_linear(0)  # keys without StepModule's `model.` prefix
    dst = load_weights(seeded_linear(1), save_checkpoint(tmp_path / "model-1.mpk", src.state_dict()))
    assert torch.equal(dst.weight, src.weight) and torch.equal(dst.bias, src.bias)


def test_load_file_takes_the_model_weights_out_of_a_training_checkpoint(tmp_path):
    src = randomised(Net())
    ckpt = {"state_dict": {f"model.{k}": v for k, v in src.state_dict().items()}, "pytorch-lightning_version": "2"}
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(ckpt, tmp_path / "model-3.mpk")
    dst = Net().load_file(tmp_path / "model-3.mpk", DefaultRecorder())
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), dst.state_dict().values()))


def test_checkpoint_entries_the_model_lacks_are_ignored(tmp_path):
    src = seeded_linear(0)
    state = {f"model.{k}": v for k, v in src.state_dict().items()} | {"model.extra": torch.ones(5)}
    dst = load_weights(seeded_linear(1), save_checkpoint(tmp_path / "model-1.mpk", state))
    assert torch.equal(dst.weight, src.weight) and torch.equal(dst.bias, src.bias)


def test_only_the_model_prefix_is_taken_when_another_submodule_has_the_same_names(tmp_path):
    model, prior = seeded_linear(0), seeded_linear(1)  # e.g. a fine-tune keeping its prior weights
    state = {f"model.{k}": v for k, v in model.state_dict().items()}
    state |= {f"prior.{k}": v for k, v in prior.state_dict().items()}
    dst = load_weights(seeded_linear(2), save_checkpoint(tmp_path / "model-1.mpk", state))
    assert torch.equal(dst.weight, model.weight) and torch.equal(dst.bias, model.bias)


def test_a_bare_checkpoint_of_a_module_with_a_model_submodule_loads(tmp_path):
    src = Wrapper()
    path = save_checkpoint(tmp_path / "model-1.mpk", src.state_dict())  # keys `model.weight`, `model.bias`
    dst = Wrapper()
    with torch.no_grad():
        dst.model.weight.zero_()
    assert torch.equal(load_weights(dst, path).model.weight, src.model.weight)


# --- checkpoints that don't fit the model ---


def test_a_checkpoint_lacking_a_model_entry_names_it(tmp_path):
    path = save_checkpoint(tmp_path / "model-1.mpk", {"model.weight": torch.ones(2, 2)})
    with pytest.raises(RecordError) as e:
        load_weights(nn.Linear(2, 2), path)
    assert str(e.value) == f"{path}: at 'state_dict': checkpoint lacks 1 model entries, e.g. 'bias'"
    assert (e.value.path, e.value.key) == (str(path), "state_dict")


@pytest.mark.parametrize("drop", ["linear.bias", "norm.weight"])
def test_load_file_refuses_a_checkpoint_lacking_model_entries(tmp_path, drop):
    src = randomised_params(Tiny())
    path = tmp_path / "model-2.mpk"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(lightning_checkpoint(src, drop=drop), path)
    dst = randomised_params(Tiny(), seed=1)
    with pytest.raises(RecordError, match=rf"state_dict.*lacks 1 model entries, e.g. '{drop}'"):
        dst.load_file(path, DefaultRecorder())
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(lightning_checkpoint(src), path)  # complete: loads
    assert same_weights(dst.load_file(path, DefaultRecorder()), src)


def test_a_shape_mismatch_names_the_entry_and_both_shapes(tmp_path):
    path = save_checkpoint(tmp_path / "model-1.mpk", {"model.weight": torch.ones(3, 2), "model.bias": torch.ones(2)})
    with pytest.raises(RecordError) as e:
        load_weights(nn.Linear(2, 2), path)
    assert str(e.value) == f"{path}: at 'state_dict.weight': shape [3, 2] in the checkpoint, model has [2, 2]"
    assert (e.value.path, e.value.key) == (str(path), "state_dict.weight")


def test_a_state_dict_that_is_not_a_map_is_refused_naming_file_and_key(tmp_path):
    path = save_checkpoint(tmp_path / "model-1.mpk", [1, 2])
    with pytest.raises(RecordError) as e:
        load_weights(nn.Linear(2, 2), path)
    assert str(e.value) == f"{path}: at 'state_dict': checkpoint 'state_dict' is not a map"
    assert (e.value.path, e.value.key) == (str(path), "state_dict")


def test_a_state_dict_entry_that_is_not_a_tensor_is_refused_naming_it(tmp_path):
    path = save_checkpoint(tmp_path / "model-1.mpk", {"model.weight": torch.ones(2, 2), "model.bias": 3})
    with pytest.raises(RecordError) as e:
        load_weights(nn.Linear(2, 2), path)
    assert str(e.value) == f"{path}: at 'state_dict.model.bias': expected a tensor, got int"
    assert (e.value.path, e.value.key) == (str(path), "state_dict.model.bias")


def test_a_malformed_tensor_in_the_state_dict_names_file_and_key(tmp_path):
    path = tmp_path / "model-1.mpk"  # a tagged tensor whose data is not TensorData
    DefaultRecorder().record({"state_dict": {"weight": {"__burnlike__": "tensor", "data": 5}},
                              "pytorch-lightning_version": PL_VERSION}, path, exact_path=True)
    with pytest.raises(RecordError, match="expected TensorData") as e:
        load_weights(nn.Linear(2, 2), path)
    assert (e.value.path, e.value.key) == (str(path), "state_dict.weight")


def test_weights_torch_cannot_copy_in_are_a_record_error_naming_the_file(tmp_path):
    state = {f"model.{k}": v.clone() for k, v in Broadcast().state_dict().items()}
    path = save_checkpoint(tmp_path / "model-1.mpk", state)
    with pytest.raises(RecordError) as e:
        load_weights(Broadcast(), path)
    assert str(e.value).startswith(f"{path}: at 'state_dict': can't load the checkpoint's weights (")
    assert "scale" in str(e.value) and (e.value.path, e.value.key) == (str(path), "state_dict")


def test_load_weights_names_the_file_when_the_record_does_not_fit(tmp_path):
    path = CompactRecorder().save_module(nn.Linear(3, 2), tmp_path / "small")
    with pytest.raises(RecordError) as error:
        load_weights(nn.Linear(4, 2), path)
    assert str(path) in str(error.value)


def test_a_trainer_file_gives_the_weights_of_its_epochs_model_file(tmp_path):
    """`trainer-N` of Burn's per-epoch layout holds no weights; `load_weights` reads the `model-N` it names."""
    trained = fit(cpu_builder(tmp_path, epochs=2))
    checkpoints = tmp_path / "checkpoint"
    from_trainer = load_weights(randomised(Classifier()), checkpoints / "trainer-2.mpk")
    assert same_weights(from_trainer, trained)
    assert same_weights(Classifier().load_file(checkpoints / "trainer-1.mpk"),
                        load_weights(randomised(Classifier()), checkpoints / "model-1.mpk"))


def test_a_trainer_file_whose_model_file_is_gone_names_it(tmp_path):
    fit(cpu_builder(tmp_path, epochs=1))
    (tmp_path / "checkpoint" / "model-1.mpk").unlink()
    with pytest.raises(RecordError) as error:
        load_weights(Classifier(), tmp_path / "checkpoint" / "trainer-1.mpk")
    assert str(error.value) == f"{tmp_path / 'checkpoint' / 'trainer-1.mpk'}: the epoch's model file model-1.mpk is missing beside it"
