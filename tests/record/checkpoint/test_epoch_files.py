"""`burnlike.record.checkpoint.epoch_files`: Burn's per-epoch checkpoint files (`model-N`,
`optim-N`, `scheduler-N` beside `trainer-N`). Each is fsynced before its rename (Burn's
checkpointer deletes older epochs, so each must be on the disk); joining them for a resume names
a missing part, or one lacking its state, from the file that needed it."""

from __future__ import annotations

import pytest

from burnlike.record import DefaultRecorder, RecordError
from burnlike.record.checkpoint.epoch_files import FILES_KEY, join_parts, save_parts
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint
from tests.record.helpers import Tiny, lightning_checkpoint, randomised_params

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


# --- joining the parts for a resume ---


def test_a_missing_epoch_file_is_named_from_the_trainer_file(tmp_path):
    trainer = tmp_path / "trainer-1.mpk"
    with pytest.raises(RecordError) as error:
        join_parts({FILES_KEY: dict(EPOCH_1_FILES)}, trainer)
    assert str(error.value) == f"{trainer}: the epoch's optim file optim-1.mpk is missing beside it"
    for kind in ("optim", "scheduler"):
        DefaultRecorder().record(encode_checkpoint({"optimizer_states" if kind == "optim" else "lr_schedulers": []},
                                                   DefaultRecorder()), tmp_path / EPOCH_1_FILES[kind], exact_path=True)
    with pytest.raises(RecordError) as error:
        join_parts({FILES_KEY: dict(EPOCH_1_FILES)}, trainer)
    assert str(error.value) == f"{trainer}: the epoch's model file model-1.mpk is missing beside it"


def test_an_epoch_part_without_its_state_is_named_with_the_state_it_lacks(tmp_path):
    DefaultRecorder().record(encode_checkpoint({"something_else": []}, DefaultRecorder()), tmp_path / EPOCH_1_FILES["optim"],
                             exact_path=True)
    with pytest.raises(RecordError) as error:
        join_parts({FILES_KEY: dict(EPOCH_1_FILES)}, tmp_path / "trainer-1.mpk")
    assert str(error.value) == f"{tmp_path / 'optim-1.mpk'}: expected a map with 'optimizer_states'"
