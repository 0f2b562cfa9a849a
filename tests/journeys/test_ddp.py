"""Multi-process DDP runs on the CPU (two ranks): through the app (`trainer=ddp`), through
`LearnerBuilder.devices(["cpu", "cpu"])` and through Burn's `ExecutionStrategy.ddp`. Each rank trains
on its half of the data; the metrics a run returns are reduced across ranks, while rank 0 alone writes
the checkpoints and the Burn-layout logs (of its own steps), and a stop asked by one rank stops all."""

import json

import pytest
import torch

from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import ModelConfig
from burnlike.record import DefaultRecorder
from burnlike.train.logger import read_metric_log
from tests.journeys.helpers import run_app, run_helper_script


def accuracy_of_saved_model(path, data_root):
    """The test-split accuracy (%) of the app's MNIST model saved at `path`, in this one process."""
    model = ModelConfig(num_classes=10, hidden_size=512).init("cpu").load_file(path, DefaultRecorder(), "cpu")
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in DataLoaderBuilder(MnistBatcher()).batch_size(64).build(MnistDataset.test(data_root)):
            correct += int((model(batch.images).argmax(1) == batch.targets).sum())
            total += len(batch.targets)
    return 100.0 * correct / total


def rank_results(artifact_dir):
    """What each rank of a helper script wrote: its callback metrics (`rank{r}.json`), rank 0's first."""
    return [json.loads((artifact_dir / f"rank{r}.json").read_text()) for r in (0, 1)]


def process_groups_at_exit(artifact_dir):
    """Whether each rank's process group was "ended" or still "up" when its interpreter exited."""
    return [(artifact_dir / f"group{r}.txt").read_text() for r in (0, 1)]


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_ddp_two_processes_save_one_checkpoint_set_and_the_cross_rank_result(tmp_path, tiny_app):
    proc = run_app(["trainer=ddp", "trainer.devices=2", "learner.num_epochs=1", "learner.recorder=default"],
                   tmp_path, tiny_app, timeout=380)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) ==\
        ["model-1.mpk", "optim-1.mpk", "scheduler-1.mpk", "trainer-1.mpk"]  # one set, rank 0's
    assert not list(run.glob("**/*.tmp")) and proc.stdout.count("Learner Summary") == 1
    # each rank validated half of the 128 samples (1 batch of 64); rank 0 writes its own lines
    assert len((run / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()) == 1
    # the returned metric is the cross-rank value: the accuracy of the final model on all 128
    value = json.loads((run / "result.json").read_text())["value"]
    assert value == pytest.approx(accuracy_of_saved_model(run / "model.mpk", tiny_app), abs=1e-6)


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_two_process_cpu_ddp_syncs_metrics_and_rank0_writes_logs(tmp_path):
    proc = run_helper_script("ddp_learner.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = rank_results(tmp_path)
    assert process_groups_at_exit(tmp_path) == ["ended", "ended"]
    # metric values are reduced across ranks: both processes log the same epoch value
    assert ranks[0]["valid/Accuracy"] == pytest.approx(ranks[1]["valid/Accuracy"])
    assert ranks[0]["valid/Loss"] == pytest.approx(ranks[1]["valid/Loss"])
    # the log file holds rank 0's steps only (half the valid set: 2 batches of 32)
    lines = (tmp_path / "valid" / "epoch-2" / "Accuracy.log").read_text().splitlines()
    assert len(lines) == 2
    # rank 0's own mean differs from the synced value (the other half of the data counts too)
    local_loss = read_metric_log(tmp_path / "valid" / "epoch-2" / "Loss.log")
    assert local_loss is not None and local_loss != pytest.approx(ranks[0]["valid/Loss"], rel=1e-6)


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_two_process_cpu_ddp_through_execution_strategy(tmp_path):
    proc = run_helper_script("ddp_execution.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = rank_results(tmp_path)
    assert ranks[0]["world_size"] == ranks[1]["world_size"] == 2
    # the library ended each rank's process group before the interpreter's teardown
    assert process_groups_at_exit(tmp_path) == ["ended", "ended"]
    for key in ("valid/Accuracy", "valid/Loss", "train/Loss"):  # reduced across ranks: the same everywhere
        assert ranks[0][key] == pytest.approx(ranks[1][key])
    lines = (tmp_path / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert len(lines) == 2  # rank 0 logs its own half of the valid set (4 batches of 16 in all)
    local = read_metric_log(tmp_path / "valid" / "epoch-1" / "Loss.log")
    assert local != pytest.approx(ranks[0]["valid/Loss"], rel=1e-6)


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_one_ranks_interrupter_stops_every_rank_at_the_same_step(tmp_path):
    """Only rank 1 is told to stop (after step 2): the interrupter's stop is reduced across ranks, so
    rank 0 stops at that step too instead of waiting forever in the next gradient all-reduce."""
    proc = run_helper_script("ddp_learner.py", tmp_path, "interrupt")
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = [rank["global_step"] for rank in rank_results(tmp_path)]
    assert steps == [3, 3]  # 6 steps without the stop (2 epochs of 3)
    assert "Training interrupted: rank 1 asked (after step 3)" in (tmp_path / "experiment.log").read_text()
