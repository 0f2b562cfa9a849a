"""`burnlike.record.checkpoint.epoch_files`: Burn's per-epoch checkpoint files (`model-N`,
`optim-N`, `scheduler-N` beside `trainer-N`). Each is fsynced before its rename (Burn's
checkpointer deletes older epochs, so each must be on the disk); joining them for a resume names
a missing part, or one lacking its state, from the file that needed it. `optim-N` is Burn's
optimizer record, keyed by model-N's ParamIds, for the optimizers Burn has (others keep the
Lightning layout), and joins back into the torch optimizer's state."""

from __future__ import annotations

import functools

import pytest
import torch

from burnlike.record import DefaultRecorder, RecordError
from burnlike.record.checkpoint.epoch_files import join_parts, save_parts
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint
from burnlike.record.checkpoint.protocol import EpochCheckpoint
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.format.module_record import IDS_ATTR
from tests.record.helpers import Tiny, lightning_checkpoint, randomised_params, repack, unpack

EPOCH_1_FILES = {"model": "model-1.mpk", "optim": "optim-1.mpk", "scheduler": "scheduler-1.mpk"}

# --- saving ---


def test_burns_epoch_files_are_each_fsynced_before_their_rename(tmp_path, monkeypatch, disk_calls):
    """Burn's checkpointer files are deleted as newer epochs arrive, so each must be on the disk."""
    model = randomised_params(Tiny())
    save_parts(lightning_checkpoint(model), model, tmp_path, 2, DefaultRecorder())
    monkeypatch.undo()
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["model-2.mpk", "optim-2.mpk", "scheduler-2.mpk"]
    events = [e[:2] for e in disk_calls]  # (call, inode)
    for name in written:
        inode = (tmp_path / name).stat().st_ino
        assert events.index(("fsync", inode)) < events.index(("replace", inode)), name


def test_the_trainer_files_content_keeps_no_weights_they_are_in_model_n(tmp_path):
    model = randomised_params(Tiny())
    checkpoint = lightning_checkpoint(model)
    save_parts(checkpoint, model, tmp_path, 1, DefaultRecorder())
    assert checkpoint["state_dict"] == {}  # Lightning's key, empty: no weight is stored twice


# --- joining the parts for a resume ---


def test_a_missing_epoch_file_is_named_from_the_trainer_file(tmp_path):
    trainer = tmp_path / "trainer-1.mpk"
    with pytest.raises(RecordError) as error:
        join_parts(EpochCheckpoint(epoch_files=dict(EPOCH_1_FILES)).to_dict(), trainer)
    assert str(error.value) == f"{trainer}: the epoch's optim file optim-1.mpk is missing beside it"
    for kind in ("optim", "scheduler"):
        DefaultRecorder().record(encode_checkpoint({"optimizer_states" if kind == "optim" else "lr_schedulers": []},
                                                   DefaultRecorder()), tmp_path / EPOCH_1_FILES[kind], exact_path=True)
    with pytest.raises(RecordError) as error:
        join_parts(EpochCheckpoint(epoch_files=dict(EPOCH_1_FILES)).to_dict(), trainer)
    assert str(error.value) == f"{trainer}: the epoch's model file model-1.mpk is missing beside it"


def test_an_epoch_part_without_its_state_is_named_with_the_state_it_lacks(tmp_path):
    DefaultRecorder().record(encode_checkpoint({"something_else": []}, DefaultRecorder()), tmp_path / EPOCH_1_FILES["optim"],
                             exact_path=True)
    with pytest.raises(RecordError) as error:
        join_parts(EpochCheckpoint(epoch_files=dict(EPOCH_1_FILES)).to_dict(), tmp_path / "trainer-1.mpk")
    assert str(error.value) == f"{tmp_path / 'optim-1.mpk'}: expected a map with 'optimizer_states'"


# --- optim-N: Burn's optimizer record ---


def saved_epoch(tmp_path, optimizer_class=torch.optim.Adam, recorder=None):
    """A Tiny model stepped twice by `optimizer_class`, its epoch 1 saved as the checkpointer does:
    (model, optimizer, trainer-N's path)."""
    recorder = recorder or DefaultRecorder()
    model = randomised_params(Tiny())
    optimizer = optimizer_class(model.parameters(), lr=0.1)
    for _ in range(2):
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        optimizer.step()
    checkpoint = {"optimizer_states": [optimizer.state_dict()], "lr_schedulers": [], "state_dict": {}}
    save_parts(checkpoint, model, tmp_path, 1, recorder, optimizers=[optimizer])
    trainer = recorder.record(encode_checkpoint(checkpoint, recorder), tmp_path / f"trainer-1.{recorder.extension}",
                              exact_path=True)
    return model, optimizer, trainer


def joined(trainer):
    return join_parts(decode_value(DefaultRecorder().load(trainer, exact_path=True)), trainer)


def test_optim_n_is_burns_optimizer_record_keyed_by_model_ns_param_ids(tmp_path):
    """What Burn's `optim.load_record` reads beside model-N: ParamId → {"V1": {"Rank<D>": state}}."""
    model, _, _ = saved_epoch(tmp_path)
    model_item = unpack(tmp_path / "model-1.mpk")["item"]
    optim_item = unpack(tmp_path / "optim-1.mpk")["item"]
    assert set(optim_item) == {p["id"] for layer in model_item.values() for p in layer.values() if isinstance(p, dict)}
    weight = optim_item[model_item["linear"]["weight"]["id"]]
    assert list(weight["V1"]["Rank2"]["momentum"]) == ["time", "moment_1", "moment_2", "max_moment_2"]


OPTIMIZERS = [torch.optim.Adam, torch.optim.AdamW, functools.partial(torch.optim.SGD, momentum=0.9),
              functools.partial(torch.optim.RMSprop, momentum=0.9, centered=True), torch.optim.Adagrad]


@pytest.mark.parametrize("make", OPTIMIZERS, ids=["Adam", "AdamW", "Sgd", "RmsProp", "AdaGrad"])
def test_resuming_joins_optim_n_back_into_the_torch_optimizer_state(tmp_path, make):
    """trainer-N keeps what Burn's record lacks (param_groups, the parameters' ParamIds in order,
    RMSProp's step counts), so the joined state is the saved one, step counts included."""
    _, optimizer, trainer = saved_epoch(tmp_path, make)
    state = joined(trainer)["optimizer_states"]
    assert len(state) == 1 and set(state[0]) == {"state", "param_groups"}
    fresh = make(Tiny().parameters(), lr=0.1)
    fresh.load_state_dict(state[0])
    original = optimizer.state_dict()
    assert fresh.state_dict()["param_groups"] == original["param_groups"]
    assert fresh.state_dict()["state"].keys() == original["state"].keys()
    for index, values in original["state"].items():
        assert all(torch.equal(values[k], fresh.state_dict()["state"][index][k]) for k in values)


def test_an_optimizer_burn_has_no_record_for_keeps_the_lightning_layout(tmp_path):
    """Adadelta is not one of Burn's: optim-N holds its torch state as a checkpoint part."""
    _, optimizer, trainer = saved_epoch(tmp_path, torch.optim.Adadelta)
    assert list(unpack(tmp_path / "optim-1.mpk")["item"]) == ["optimizer_states"]
    state = joined(trainer)["optimizer_states"][0]
    assert torch.equal(state["state"][0]["square_avg"], optimizer.state_dict()["state"][0]["square_avg"])


def test_a_malformed_optim_n_is_named_with_its_key(tmp_path):
    _, _, trainer = saved_epoch(tmp_path)
    record = unpack(tmp_path / "optim-1.mpk")
    pid = next(iter(record["item"]))
    del record["item"][pid]["V1"]["Rank2"]["momentum"]["moment_2"]
    repack(tmp_path / "optim-1.mpk", record)
    with pytest.raises(RecordError) as error:
        joined(trainer)
    assert error.value.path == str(tmp_path / "optim-1.mpk") and error.value.key == f"{pid}.V1.Rank2.momentum"


class WeightsRecorder(DefaultRecorder):
    """A user's recorder with its own extension (Burn's `FileRecorder::file_extension` to override),
    dotted."""

    def file_extension(self) -> str:
        return "ckpt.burn"


def test_each_part_is_written_at_the_name_the_trainer_file_lists(tmp_path):
    """Even for a recorder whose `file_extension()` is not its class's extension."""
    model = randomised_params(Tiny())
    checkpoint = lightning_checkpoint(model)
    save_parts(checkpoint, model, tmp_path, 2, WeightsRecorder())
    names = {EpochCheckpoint.from_dict(checkpoint).epoch_files[kind] for kind in ("model", "optim", "scheduler")}
    assert names == {"model-2.ckpt.burn", "optim-2.ckpt.burn", "scheduler-2.ckpt.burn"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_an_optimizer_burn_has_no_record_for_gives_the_model_no_param_ids(tmp_path):
    """A rank that doesn't write (`write=False`) must not mint ParamIds for an optimizer Burn can't record."""
    model = randomised_params(Tiny())
    optimizer = torch.optim.Adadelta(model.parameters())
    checkpoint = lightning_checkpoint(model)
    checkpoint["optimizer_states"] = [optimizer.state_dict()]
    save_parts(checkpoint, model, tmp_path, 1, DefaultRecorder(), write=False, optimizers=[optimizer])
    assert IDS_ATTR not in model.__dict__
    assert EpochCheckpoint.from_dict(checkpoint).epoch_files["optim"] == "optim-1.mpk" and list(tmp_path.iterdir()) == []
