"""`EpochCheckpoint`: burnlike's part of Lightning's checkpoint dict, under the keys checkpoints
written by every earlier version carry."""

from __future__ import annotations

from burnlike.record.checkpoint.protocol import EpochCheckpoint

# the on-disk spelling: changing one would stop older checkpoints from resuming
WRITTEN = {"burn_batches_done": 3, "burn_rng_state": {"python": 1}, "burn_epoch_files": {"model": "model-1.mpk"},
           "burnlike_metric_store": {"epochs": []}, "burn_epoch_history": {"Loss": []},
           "burn_model_file": "/x/model-1.mpk"}


def test_each_field_is_read_from_and_written_to_its_checkpoint_key():
    saved = EpochCheckpoint.from_dict(WRITTEN)
    assert saved == EpochCheckpoint(batches_done=3, rng_state={"python": 1}, epoch_files={"model": "model-1.mpk"},
                                    metric_store={"epochs": []}, epoch_history={"Loss": []},
                                    model_file="/x/model-1.mpk")
    assert saved.to_dict() == WRITTEN and list(saved.to_dict()) == list(WRITTEN)


def test_only_the_fields_set_are_written_after_lightnings_keys():
    checkpoint = {"epoch": 0, "state_dict": {}}
    EpochCheckpoint(batches_done=2).add_to(checkpoint)
    EpochCheckpoint(batches_done=None, metric_store={}).add_to(checkpoint)
    assert list(checkpoint) == ["epoch", "state_dict", "burn_batches_done", "burnlike_metric_store"]


def test_a_field_of_the_wrong_type_reads_as_absent():
    wrong = {"burn_batches_done": True, "burn_rng_state": [1], "burn_epoch_files": "model-1.mpk",
             "burnlike_metric_store": 1, "burn_epoch_history": None, "burn_model_file": 5}
    assert EpochCheckpoint.from_dict(wrong) == EpochCheckpoint() == EpochCheckpoint.from_dict({})


def test_the_model_file_and_the_epoch_files_are_taken_out():
    checkpoint = dict(WRITTEN)
    assert EpochCheckpoint.take_model_file(checkpoint) == "/x/model-1.mpk"
    assert EpochCheckpoint.take_epoch_files(checkpoint) == {"model": "model-1.mpk"}
    assert "burn_model_file" not in checkpoint and "burn_epoch_files" not in checkpoint
    assert EpochCheckpoint.take_model_file(checkpoint) is None
