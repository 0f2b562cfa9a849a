"""`burnlike.record.checkpoint.dcp`: torch.distributed.checkpoint storage in Burn's encoding. One
record per rank (model weights at the recorder's precision, optimizer state and integers at their
own), the metadata a record too, plain values stored as themselves (never pickled, never unpickled);
a checkpoint saved by N processes loads into M (DCP's resharding), on any fsspec filesystem."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.checkpoint import load, save

from burnlike.record import CompactRecorder, DefaultRecorder, PrettyJsonFileRecorder, RecordError
from burnlike.record.checkpoint.dcp import (
    CompactLoadPlanner,
    CompactSavePlanner,
    CompactStorageReader,
    CompactStorageWriter,
    describe,
    whole_tensors,
)
from burnlike.record.checkpoint.shard_folder import is_sharded_checkpoint
from burnlike.record.format import registry
from tests.helpers import dcp_ranks

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def state(w: torch.Tensor) -> dict:
    return {"model.w": w, "model.steps": torch.arange(3), "optimizer_0": {"state": {"exp_avg": w * 1e-8}},
            "epoch": 2, "betas": (0.9, 0.999), "name": "adam"}


def empty() -> dict:
    return {"model.w": torch.zeros(4, 3), "model.steps": torch.zeros(3, dtype=torch.int64),
            "optimizer_0": {"state": {"exp_avg": torch.zeros(4, 3)}}, "epoch": 0, "betas": (0.0, 0.0), "name": ""}


def test_weights_take_the_recorders_precision_and_everything_else_its_own(tmp_path):
    w = torch.randn(4, 3)
    save(state(w), storage_writer=CompactStorageWriter(tmp_path, CompactRecorder()), planner=CompactSavePlanner())
    back = empty()
    load(back, storage_reader=CompactStorageReader(tmp_path), planner=CompactLoadPlanner())
    assert torch.equal(back["model.w"], w.half().float())  # f16 on disk
    assert torch.equal(back["optimizer_0"]["state"]["exp_avg"], w * 1e-8)  # full precision: 1e-8 survives
    assert torch.equal(back["model.steps"], torch.arange(3))
    assert (back["epoch"], back["betas"], back["name"]) == (2, (0.9, 0.999), "adam")  # values as they were
    assert sorted(p.name for p in tmp_path.iterdir()) == [".metadata.mpk", "shard-0.mpk"]
    shard = registry.sniff(tmp_path / "shard-0.mpk").load(tmp_path / "shard-0.mpk")
    assert shard["model.w"]["data"]["dtype"] == "F16" and shard["optimizer_0.state.exp_avg"]["data"]["dtype"] == "F32"
    assert is_sharded_checkpoint(tmp_path) and not is_sharded_checkpoint(tmp_path / "shard-0.mpk")


@pytest.mark.parametrize("recorder", [CompactRecorder(), DefaultRecorder()])
def test_a_large_tensor_loads_from_the_file_into_its_target_exactly(tmp_path, recorder):
    """Tensors big enough to stay in the file until loaded (a weight over several read parts, a
    non-contiguous target) reach their targets as a small one does: at the recorder's precision."""
    w, state_f = torch.randn(1100, 1000), torch.randn(300, 400)  # 4.4 MB: more than one 4 MiB part
    save({"model.w": w, "optimizer_0": {"exp_avg": state_f}}, storage_writer=CompactStorageWriter(tmp_path, recorder),
         planner=CompactSavePlanner())
    back = {"model.w": torch.zeros(1000, 1100).t(), "optimizer_0": {"exp_avg": torch.zeros(300, 400)}}
    load(back, storage_reader=CompactStorageReader(tmp_path), planner=CompactLoadPlanner())
    expected = w.half().float() if isinstance(recorder, CompactRecorder) else w
    assert torch.equal(back["model.w"], expected) and torch.equal(back["optimizer_0"]["exp_avg"], state_f)


def test_a_weight_that_would_overflow_f16_keeps_full_precision(tmp_path):
    w = torch.tensor([[1e6, 1.0, 2.0]])
    save({"model.w": w}, storage_writer=CompactStorageWriter(tmp_path, CompactRecorder()), planner=CompactSavePlanner())
    back = {"model.w": torch.zeros(1, 3)}
    load(back, storage_reader=CompactStorageReader(tmp_path), planner=CompactLoadPlanner())
    assert torch.equal(back["model.w"], w)


def test_plain_values_are_never_unpickled(tmp_path):
    """DCP's default planners torch.save plain values and torch.load them (weights_only=False):
    this storage hands them over as themselves, and refuses a planner that would unpickle."""
    save(state(torch.ones(4, 3)), storage_writer=CompactStorageWriter(tmp_path), planner=CompactSavePlanner())
    assert b"\x80\x02" not in (tmp_path / "shard-0.mpk").read_bytes()  # no pickle protocol header
    with pytest.raises(BaseException, match="load with CompactLoadPlanner"):  # DCP wraps it: CheckpointException
        load(empty(), storage_reader=CompactStorageReader(tmp_path))


def test_a_folder_without_its_metadata_is_no_checkpoint(tmp_path):
    save({"model.w": torch.ones(2)}, storage_writer=CompactStorageWriter(tmp_path), planner=CompactSavePlanner())
    (tmp_path / ".metadata.mpk").unlink()  # a save cut short: the metadata is written last
    assert not is_sharded_checkpoint(tmp_path)
    with pytest.raises(BaseException, match=r"no sharded checkpoint here \(expected its \.metadata\.<ext> file\)"):
        load({"model.w": torch.zeros(2)}, storage_reader=CompactStorageReader(tmp_path), planner=CompactLoadPlanner())


def test_malformed_metadata_is_a_record_error_naming_the_file(tmp_path):
    CompactRecorder().record({"format": "something else"}, tmp_path / ".metadata.mpk", exact_path=True)
    with pytest.raises(RecordError, match=r"\.metadata\.mpk: not a sharded checkpoint's metadata"):
        CompactStorageReader(tmp_path).read_metadata()
    CompactRecorder().record({"format": "burnlike-dcp/1", "tensors": {"w": {"dtype": "nope"}}, "bytes": [],
                              "storage": []}, tmp_path / ".metadata.mpk", exact_path=True)
    with pytest.raises(RecordError, match="malformed sharded-checkpoint metadata"):
        CompactStorageReader(tmp_path).read_metadata()


def test_a_shard_file_missing_an_entry_or_not_a_map_is_a_record_error_naming_it(tmp_path):
    save({"model.w": torch.ones(2), "model.b": torch.ones(1)}, storage_writer=CompactStorageWriter(tmp_path),
         planner=CompactSavePlanner())
    shard = tmp_path / "shard-0.mpk"
    item = registry.sniff(shard).load(shard)
    registry.sniff(shard).record({"model.w": item["model.w"]}, shard, exact_path=True)
    with pytest.raises(BaseException, match=r"shard-0\.mpk: no entry 'model\.b' for 'model\.b'"):
        load({"model.w": torch.zeros(2), "model.b": torch.zeros(1)}, storage_reader=CompactStorageReader(tmp_path),
             planner=CompactLoadPlanner())
    registry.sniff(shard).record([1, 2], shard, exact_path=True)
    with pytest.raises(BaseException, match=r"shard-0\.mpk: a shard file's item must be a map of entries"):
        load({"model.w": torch.zeros(2)}, storage_reader=CompactStorageReader(tmp_path), planner=CompactLoadPlanner())


def test_a_memory_filesystem_holds_a_sharded_checkpoint():
    w = torch.randn(5)
    url = "memory://dcp-test/ckpt"
    save({"model.w": w, "step": 3}, storage_writer=CompactStorageWriter(url, DefaultRecorder()),
         planner=CompactSavePlanner())
    back = {"model.w": torch.zeros(5), "step": 0}
    load(back, storage_reader=CompactStorageReader(url), planner=CompactLoadPlanner())
    assert torch.equal(back["model.w"], w) and back["step"] == 3



def saved_training_checkpoint(folder) -> None:
    """A one-process save of what a training checkpoint holds: the model's weights, nested, and a value."""
    save({"state_dict": {"model": {"w": torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), "b": torch.arange(3)}},
          "epoch": 4}, storage_writer=CompactStorageWriter(folder), planner=CompactSavePlanner())


def test_a_save_creates_its_folder_and_the_missing_folders_above_it(tmp_path):
    saved_training_checkpoint(tmp_path / "runs" / "epoch-4")
    assert is_sharded_checkpoint(tmp_path / "runs" / "epoch-4")


def test_the_writer_tells_dcp_the_checkpoint_it_writes(tmp_path):
    assert CompactStorageWriter(tmp_path).storage_meta().checkpoint_id == str(tmp_path)


def test_the_metadata_keeps_dcps_planner_data_for_unflattening(tmp_path):
    saved_training_checkpoint(tmp_path)
    assert CompactStorageReader(tmp_path).read_metadata().planner_data == {
        "state_dict.model.w": ("state_dict", "model", "w"), "state_dict.model.b": ("state_dict", "model", "b"),
        "epoch": ("epoch",)}


def test_a_reader_given_a_recorder_reads_only_that_recorders_metadata_file(tmp_path):
    saved_training_checkpoint(tmp_path)  # .metadata.mpk
    with pytest.raises(RecordError, match=r"\.metadata\.json: no such record file"):
        CompactStorageReader(tmp_path, PrettyJsonFileRecorder()).read_metadata()


def test_whole_tensors_are_the_models_weights_at_their_saved_dtype_without_the_prefix(tmp_path):
    saved_training_checkpoint(tmp_path)
    tensors = whole_tensors(tmp_path)
    assert sorted(tensors) == ["b", "w"]
    assert torch.equal(tensors["w"], torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))  # f16 on disk, f32 back
    assert tensors["b"].dtype == torch.int64 and torch.equal(tensors["b"], torch.arange(3))


def test_describe_lists_the_shards_each_tensors_stored_dtype_shape_and_bytes_and_the_values(tmp_path):
    saved_training_checkpoint(tmp_path)
    assert describe(tmp_path) == [
        f"{tmp_path}: sharded checkpoint (burnlike-dcp/1), 1 shard files: shard-0.mpk",
        "  2 tensors:",
        f"    {'state_dict.model.b':<50} int64    [3]                  1 shards           24 B",
        f"    {'state_dict.model.w':<50} float16  [2, 3]               1 shards           12 B",
        "  tensor bytes: 36",
        "  1 values: epoch",
    ]


@pytest.mark.slow
def test_saved_by_two_fsdp_processes_loads_into_one_two_or_four(tmp_path):
    """FSDP2 (`fully_shard`) on a CPU mesh over gloo, for the full- and the half-precision recorder:
    each of 2 processes writes its own shard; 1, 2 and 4 processes load it, and the gathered
    weights are the saved ones (exactly at full precision, as f16 rounds them at half)."""
    recorders = ["default", "compact"]
    # the job's store listens here before any rank starts: no port to pick and hope is still free
    store = dist.TCPStore("127.0.0.1", 0, dcp_ranks.WORLD, is_master=True, wait_for_workers=False)
    mp.start_processes(dcp_ranks.rank, args=(store.port, str(tmp_path), recorders), nprocs=dcp_ranks.WORLD,
                       start_method="spawn")
    expected = dcp_ranks.trained().state_dict()
    for recorder in recorders:
        assert sorted(p.name for p in (tmp_path / recorder).iterdir()) == [".metadata.mpk", "shard-0.mpk",
                                                                          "shard-1.mpk"]
        for processes in dcp_ranks.LOADERS:
            loaded = torch.load(dcp_ranks.loaded_path(str(tmp_path), recorder, processes), weights_only=True)
            assert loaded["step"] == 7 and loaded["lr"] == [0.5]
            for key, value in expected.items():
                want = value if recorder == "default" else value.half().float()
                assert torch.equal(loaded["weights"][key], want), (recorder, processes, key)
