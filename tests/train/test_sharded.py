"""`burnlike.train.sharded`: fully sharded training (FSDP2 `fully_shard` over gloo on the CPU) whose
checkpoints are Burn records: sharded ones resume at another process count, gathered ones through
the plugin, `model-N` is the whole model, on local disks and object stores. Each run is a user's
script (tests/helpers/sharded_fit.py) that Lightning re-runs for its other ranks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.strategies import FSDPStrategy, ModelParallelStrategy
from lightning.pytorch.trainer.states import TrainerFn

from burnlike.cli import main as cli
from burnlike.optim import AdamConfig
from burnlike.record import CompactRecorder, DefaultRecorder, RecorderCheckpointIO
from burnlike.record.checkpoint.shard_folder import is_sharded_checkpoint
from burnlike.record.format import registry
from burnlike.record.format.location import as_path
from burnlike.train import LearnerBuilder
from burnlike.train.sharded import (
    CompactFSDPStrategy,
    CompactShards,
    ShardedStrategy,
    compact_strategy,
    model_skeleton,
    shard_model,
    whole_model,
)
from tests.helpers.fit import checkpointing_builder, cuda
from tests.helpers.paths import REPO
from tests.helpers.s3 import moto_s3
from tests.helpers.sharded_fit import Mlp
from tests.helpers.toy import loader as toy_loader

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def fit(out: str | Path, *args: str, gpu: bool = False) -> str:
    """Run the script as a user would (on the CPU unless `gpu`); its output (the test fails with it
    when the run fails)."""
    hide = {} if gpu else {"CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-m", "tests.helpers.sharded_fit", str(out), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONWARNINGS": "ignore", **hide})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def weights(path: Path) -> dict[str, torch.Tensor]:
    with np.load(path) as z:
        return {k: torch.from_numpy(z[k]) for k in z.files}


def assert_equal(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], f16: bool = False) -> None:
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        expected = value.half().float() if f16 else value
        assert torch.equal(got[key], expected), key


def every_file_is_a_record(folder: Path) -> list[str]:
    """Each file under `folder` read back as a record of a burnlike recorder (never a pickle or a torch
    zip); their names, relative to `folder`."""
    names = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        assert registry.torch_format(path) is None, path
        registry.sniff(path).load(path)
        names.append(str(path.relative_to(folder)))
    return names


def model_record(path: Path) -> dict[str, torch.Tensor]:
    model = Mlp().load_file(path, DefaultRecorder() if path.suffix == ".mpk" else CompactRecorder())
    return {k: v.detach() for k, v in model.state_dict().items()}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_four_processes_save_shards_that_resume_at_four_two_and_one(tmp_path, capsys):
    """Full precision: the weights each resumed run starts from are exactly the saved ones, and the
    run resumed at 4 ends as the uninterrupted 3-epoch run does."""
    saved = tmp_path / "saved"
    fit(saved, "--devices", "4", "--epochs", "2", "--dump", str(tmp_path / "saved-dump"))
    end = weights(tmp_path / "saved-dump" / "end.npz")
    files = every_file_is_a_record(saved / "checkpoint")
    assert [f for f in files if f.startswith("trainer-2.mpk/")] == [
        "trainer-2.mpk/.metadata.mpk", *(f"trainer-2.mpk/shard-{r}.mpk" for r in range(4)), "trainer-2.mpk/state.mpk"]
    assert_equal(model_record(saved / "checkpoint" / "model-2.mpk"), end)  # Module.load_file, unsharded

    assert cli(["inspect", str(saved / "checkpoint" / "trainer-2.mpk")]) == 0
    tree = capsys.readouterr().out
    assert "4 shard files" in tree and "state_dict.model.linear.0.weight" in tree and "[16, 4]" in tree
    assert cli(["consolidate", str(saved / "checkpoint" / "trainer-2"), "--model", "tests.helpers.sharded_fit:Mlp",
                "--out", str(tmp_path / "consolidated.mpk")]) == 0
    assert_equal(model_record(tmp_path / "consolidated.mpk"), end)

    fit(tmp_path / "whole", "--devices", "4", "--epochs", "3")
    for world in (4, 2, 1):
        resumed = tmp_path / f"resumed-{world}"
        shutil.copytree(saved, resumed)
        fit(resumed, "--devices", str(world), "--epochs", "3", "--resume", "--dump", str(tmp_path / f"dump-{world}"))
        assert_equal(weights(tmp_path / f"dump-{world}" / "start.npz"), end)
        assert is_sharded_checkpoint(resumed / "checkpoint" / "trainer-3.mpk")
        shards = sorted(p.name for p in (resumed / "checkpoint" / "trainer-3.mpk").glob("shard-*"))
        assert len(shards) == world
    assert_equal(model_record(tmp_path / "resumed-4" / "checkpoint" / "model-3.mpk"),
                 model_record(tmp_path / "whole" / "checkpoint" / "model-3.mpk"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compact_gathered_checkpoints_resume_within_f16_rounding(tmp_path):
    """CompactRecorder: weights stored at f16; a gathered checkpoint is one record every rank reads."""
    saved = tmp_path / "saved"
    fit(saved, "--devices", "2", "--epochs", "1", "--recorder", "compact", "--dump", str(tmp_path / "a"), "--full")
    assert (saved / "checkpoint" / "trainer-1.mpk").is_file()
    every_file_is_a_record(saved / "checkpoint")
    fit(saved, "--devices", "2", "--epochs", "2", "--recorder", "compact", "--resume", "--dump", str(tmp_path / "b"),
        "--full")
    assert_equal(weights(tmp_path / "b" / "start.npz"), weights(tmp_path / "a" / "end.npz"), f16=True)
    assert (saved / "checkpoint" / "model-2.mpk").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compact_shards_saved_on_s3_reshard_to_one_process_within_f16_rounding(tmp_path):
    """A sharded run whose run dir is on S3: each of 2 ranks writes its shard there, weights at f16
    and optimizer state at full precision (CompactRecorder); one process resumes from the shards."""
    with moto_s3() as _:
        url = "s3://runs/sharded"
        fit(url, "--devices", "2", "--epochs", "1", "--recorder", "compact", "--dump", str(tmp_path / "a"))
        trainer = as_path(url) / "checkpoint" / "trainer-1.mpk"
        assert sorted(p.name for p in trainer.iterdir()) == [".metadata.mpk", "shard-0.mpk", "shard-1.mpk",
                                                             "state.mpk"]
        for path in trainer.iterdir():  # each a record of a burnlike recorder (never a pickle or a torch zip)
            assert registry.torch_format(path) is None, path
            registry.sniff(path).load(path)
        shard = registry.sniff(trainer / "shard-0.mpk").load(trainer / "shard-0.mpk")
        assert shard["state_dict.model.linear.0.weight"]["data"]["dtype"] == "F16"
        assert shard["optimizer_0.state.model.linear.0.weight.exp_avg"]["data"]["dtype"] == "F32"
        fit(url, "--devices", "1", "--epochs", "2", "--recorder", "compact", "--resume", "--dump", str(tmp_path / "b"))
        assert_equal(weights(tmp_path / "b" / "start.npz"), weights(tmp_path / "a" / "end.npz"), f16=True)
        assert (as_path(url) / "checkpoint" / "model-2.mpk").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_sharded_run_saves_and_resumes_in_memory(tmp_path):
    """memory:// lives as long as its process: one process fits, then resumes (`--twice`)."""
    fit("memory://sharded-run", "--devices", "1", "--epochs", "2", "--twice", "--dump", str(tmp_path / "d"))
    assert_equal(weights(tmp_path / "d" / "start.npz"), weights(tmp_path / "d" / "first-end.npz"))


def test_fsdp_by_name_becomes_a_compact_strategy_and_lightnings_own_are_refused():
    assert isinstance(compact_strategy("fsdp", "cpu"), ShardedStrategy)
    assert type(compact_strategy("fsdp", "gpu")) is CompactFSDPStrategy
    assert compact_strategy("ddp", "cpu") == "ddp"
    with pytest.raises(ValueError, match="use burnlike.train.sharded.CompactFSDPStrategy"):
        compact_strategy(FSDPStrategy())
    with pytest.raises(ValueError, match="use burnlike.train.sharded.ShardedStrategy"):
        compact_strategy(ModelParallelStrategy())
    with pytest.raises(ValueError, match="fsdp_cpu_offload"):
        compact_strategy("fsdp_cpu_offload")


def test_the_builder_gives_a_file_checkpointed_fsdp_run_the_compact_strategy(tmp_path):
    learner = (LearnerBuilder(tmp_path).with_file_checkpointer(CompactRecorder()).num_epochs(1)
               .trainer_kwargs(strategy="fsdp", accelerator="cpu", devices=2).build(Mlp(), AdamConfig(), 1e-2))
    assert isinstance(learner.trainer.strategy, ShardedStrategy)
    with pytest.raises(ValueError, match="use burnlike.train.sharded.ShardedStrategy"):
        (LearnerBuilder(tmp_path).with_file_checkpointer(CompactRecorder())
         .trainer_kwargs(strategy=ModelParallelStrategy(), accelerator="cpu", devices=2).build(Mlp(), AdamConfig(), 1e-2))


def test_a_sharded_strategy_saves_what_its_mode_says():
    assert ShardedStrategy().sharded and not ShardedStrategy(sharded=False).sharded
    assert CompactFSDPStrategy().sharded and not CompactFSDPStrategy(state_dict_type="full").sharded
    assert isinstance(ShardedStrategy().recorder, CompactRecorder)  # without the plugin: Burn's compact format


def test_the_skeleton_keeps_the_structure_without_the_weights_and_the_whole_model_is_rebuilt_from_it():
    """Taken before sharding: meta tensors only (the weights are never copied), ties and frozen
    parameters kept; `whole_model` fills it with gathered weights on the CPU."""
    model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 5))
    model[2].weight = model[0].weight  # tied
    model[1].weight.requires_grad_(False)
    skeleton = model_skeleton(model)
    assert {t.device.type for t in [*skeleton.parameters(), *skeleton.buffers()]} == {"meta"}
    assert skeleton[2].weight is skeleton[0].weight and not skeleton[1].weight.requires_grad
    assert {t.device.type for t in model.state_dict().values()} == {"cpu"}  # the model itself untouched
    weights = {k: torch.randn_like(v.float()).to(v.dtype) for k, v in model.state_dict().items()}
    rebuilt = whole_model(skeleton, weights).state_dict()
    assert all(torch.equal(rebuilt[k], v) for k, v in weights.items())


@cuda
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("strategy", "mode"), [("fsdp", "sharded"), ("fsdp", "full"), ("sharded", "sharded")])
def test_on_a_gpu_both_sharding_strategies_save_records_and_resume_exactly(tmp_path, strategy, mode):
    """torch's FSDP wrapper (CompactFSDPStrategy, GPUs only) and FSDP2 (ShardedStrategy) on CUDA
    tensors: the checkpoint files are records, the resumed run starts from the saved weights
    exactly (full precision), and model-N is the whole model."""
    saved = tmp_path / "saved"
    extra = ["--accelerator", "gpu", "--devices", "1", "--strategy", strategy, *(["--full"] if mode == "full" else [])]
    fit(saved, "--epochs", "1", "--dump", str(tmp_path / "a"), *extra, gpu=True)
    assert (saved / "checkpoint" / "trainer-1.mpk").is_dir() == (mode == "sharded")
    every_file_is_a_record(saved / "checkpoint")
    end = weights(tmp_path / "a" / "end.npz")
    assert_equal(model_record(saved / "checkpoint" / "model-1.mpk"), end)
    fit(saved, "--epochs", "2", "--resume", "--dump", str(tmp_path / "b"), *extra, gpu=True)
    assert_equal(weights(tmp_path / "b" / "start.npz"), end)
    assert (saved / "checkpoint" / "model-2.mpk").exists()


def test_fsdp_by_name_without_an_accelerator_is_sharded_on_the_cpu_and_compact_fsdp_with_cuda():
    """The accelerator a caller leaves out is Lightning's "auto": CUDA if this machine has it."""
    expected = CompactFSDPStrategy if torch.cuda.is_available() else ShardedStrategy
    assert type(compact_strategy("fsdp")) is expected


def test_removing_a_checkpoint_removes_an_object_store_folder_whole_and_a_missing_file_quietly(tmp_path):
    folder = as_path(f"memory://remove-{tmp_path.name}/trainer-1.mpk")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shard-0.mpk").write_bytes(b"shard")
    CompactShards._remove(str(folder))
    assert not folder.exists() and not (folder / "shard-0.mpk").exists()
    CompactShards._remove(str(tmp_path / "trainer-2.mpk"))  # a save whose file was never written
    local = tmp_path / "trainer-3.mpk"
    local.write_bytes(b"record")
    CompactShards._remove(str(local))
    assert not local.exists()


def test_removing_a_checkpoint_that_links_to_a_folder_leaves_that_folder_and_does_not_raise(tmp_path):
    """Removal is best effort (a leftover checkpoint must not stop the fit), and a link is never
    followed into the folder it names: that folder is not this run's to delete."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "shard-0.mpk").write_bytes(b"shard")
    link = tmp_path / "trainer-1.mpk"
    link.symlink_to(target, target_is_directory=True)
    CompactShards._remove(str(link))
    assert (target / "shard-0.mpk").read_bytes() == b"shard"


def test_each_layer_and_the_whole_model_are_sharded_over_the_mesh_given(one_rank_group):
    """The strategy's data-parallel mesh, not torch's default one (which spans the default group
    on the default device type, without the dimension's name)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule

    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("data_parallel",))
    model = Mlp()
    shard_model(model, mesh)
    layers = [m for m in model.modules() if any(True for _ in m.parameters(recurse=False))]
    assert layers and all(isinstance(m, FSDPModule) for m in [model, *layers])
    for param in model.parameters():
        assert param.device_mesh.mesh_dim_names == ("data_parallel",)
        assert param.device_mesh.device_type == "cpu"


class Wrapped(L.LightningModule):
    """The training module a sharded fit checkpoints: the model under `model.`."""

    def __init__(self) -> None:
        super().__init__()
        self.model = Mlp()


def fitting_strategy(strategy, seed: int):
    """`strategy` as a one-rank fit has it after setup: a sharded module (FSDP2 over a one-rank CPU
    mesh) with one Adam optimizer that has taken a step, attached to a fitting Trainer."""
    from torch.distributed.device_mesh import init_device_mesh

    torch.manual_seed(seed)
    module = Wrapped()
    strategy.connect(module)  # as a fit connects it: before configure_model shards it
    shard_model(module, init_device_mesh("cpu", (1,)))
    optimizer = torch.optim.Adam(module.parameters(), lr=0.1)
    module.model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    module.trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                               enable_progress_bar=False, enable_model_summary=False)
    module.trainer.state.fn = TrainerFn.FITTING
    strategy.optimizers = [optimizer]
    return strategy


def full_states(strategy) -> tuple[dict[str, torch.Tensor], dict]:
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    full = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return (get_model_state_dict(strategy.model, options=full),
            get_optimizer_state_dict(strategy.model, strategy.optimizers[0], options=full))


def assert_same_states(got, want, f16: bool = False) -> None:
    (model_got, optim_got), (model_want, optim_want) = got, want
    assert_equal(model_got, model_want, f16)
    assert sorted(optim_got["state"]) == sorted(optim_want["state"])
    for name, state in optim_want["state"].items():
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(optim_got["state"][name][key], state[key]), (name, key)


def test_a_sharded_checkpoint_puts_back_the_weights_and_the_optimizer_state(one_rank_group, tmp_path):
    saved = fitting_strategy(ShardedStrategy(), seed=0)
    want = full_states(saved)
    checkpoint = {"state_dict": saved.lightning_module_state_dict(),
                  "optimizer_states": [saved.optimizer_state(saved.optimizers[0])], "epoch": 1}
    saved.save_checkpoint(checkpoint, tmp_path / "trainer-1.mpk")
    assert is_sharded_checkpoint(tmp_path / "trainer-1.mpk")
    resumed = fitting_strategy(ShardedStrategy(), seed=1)
    assert not torch.equal(full_states(resumed)[0]["model.linear.0.weight"], want[0]["model.linear.0.weight"])
    assert resumed.load_checkpoint(tmp_path / "trainer-1.mpk")["epoch"] == 1
    assert_same_states(full_states(resumed), want, f16=True)  # CompactRecorder: f16 weights, f32 optimizer state


def test_a_gathered_checkpoint_puts_back_the_weights_and_the_optimizer_state(one_rank_group, tmp_path):
    saved = fitting_strategy(ShardedStrategy(sharded=False), seed=0)
    want = full_states(saved)
    resumed = fitting_strategy(ShardedStrategy(sharded=False), seed=1)
    left = resumed.load_full({"state_dict": dict(want[0]), "optimizer_states": [want[1]], "epoch": 1}, "trainer-1.mpk")
    assert left == {"optimizer_states": [want[1]], "epoch": 1}
    assert_same_states(full_states(resumed), want)


@pytest.fixture(scope="module")
def one_device_run(tmp_path_factory):
    """A one-device fit of the Mlp for one epoch (Burn's per-epoch layout, full precision): its
    `trainer-1` path, and the weights (under `model.`) and optimizer state it ended with."""
    out = tmp_path_factory.mktemp("one-device")
    torch.manual_seed(0)
    learner = checkpointing_builder(out, 1).build(Mlp(), AdamConfig(), 1e-2)
    learner.fit(toy_loader(64, 16), toy_loader(32, 16, seed=1))
    weights = {f"model.{k}": v.detach().clone() for k, v in learner.module.model.state_dict().items()}
    return out / "checkpoint" / "trainer-1.mpk", weights, learner.trainer.optimizers[0].state_dict()


def assert_same_optimizer_state(by_name: dict, by_index: dict) -> None:
    """A gathered optimizer state keyed by parameter name equals one keyed by index (their order)."""
    names = [name for group in by_name["param_groups"] for name in group["params"]]
    assert len(names) == len(by_index["state"])
    for i, name in enumerate(names):
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(by_name["state"][name][key], by_index["state"][i][key]), (name, key)


@pytest.mark.parametrize("sharded", [True, False])
def test_a_one_device_checkpoint_is_sharded_on_load_with_its_optimizer_state(one_rank_group, one_device_run, sharded):
    """Its weights are `model-1`, a Burn module record: read into the model's structure (kept when
    the fit connected the module, before sharding), then sharded; its optimizer state is Burn's
    record `optim-1`, by parameter index."""
    path, weights, optimizer = one_device_run
    resumed = fitting_strategy(ShardedStrategy(sharded=sharded), seed=1)
    resumed.checkpoint_io = RecorderCheckpointIO(DefaultRecorder())
    assert resumed.load_checkpoint(path)["epoch"] == 0
    model, optim = full_states(resumed)
    assert_equal(model, weights)
    assert_same_optimizer_state(optim, optimizer)


@pytest.mark.filterwarnings("ignore:FSDP is switching to use `NO_SHARD`", "ignore:When using ``NO_SHARD``",
                            "ignore:FSDP.state_dict_type\\(\\) and FSDP.set_state_dict_type\\(\\) are being deprecated")
def test_torchs_fsdp_wrapper_takes_a_one_device_checkpoints_module_record(one_rank_group, one_device_run):
    path, weights, _ = one_device_run
    resumed = fsdp_fitting_strategy(seed=1)
    resumed.checkpoint_io = RecorderCheckpointIO(DefaultRecorder())
    resumed.load_checkpoint(path)
    assert_equal(fsdp_full_states(resumed)[0], weights)


def test_a_sharded_checkpoint_gathers_through_the_plugin_into_what_one_process_resumes(one_rank_group, tmp_path):
    """What a one-device or DDP fit reads from a sharded checkpoint: its whole weights and its
    optimizer state by parameter index, as `Optimizer.state_dict()` keys it, ready for
    `load_state_dict` (the training state around them as saved)."""
    saved = fitting_strategy(ShardedStrategy(), seed=0)
    saved.checkpoint_io = RecorderCheckpointIO(DefaultRecorder())
    weights, by_name = full_states(saved)
    checkpoint = {"state_dict": saved.lightning_module_state_dict(),
                  "optimizer_states": [saved.optimizer_state(saved.optimizers[0])], "epoch": 1, "global_step": 9}
    saved.save_checkpoint(checkpoint, tmp_path / "trainer-1.mpk")
    gathered = RecorderCheckpointIO().load_checkpoint(tmp_path / "trainer-1.mpk")
    assert (gathered["epoch"], gathered["global_step"]) == (1, 9)
    assert_equal(gathered["state_dict"], weights)
    [optimizer] = gathered["optimizer_states"]
    assert [group["params"] for group in optimizer["param_groups"]] == [[0, 1, 2, 3]]
    assert_same_optimizer_state(by_name, optimizer)
    plain = Wrapped()
    plain.load_state_dict(gathered["state_dict"])
    adam = torch.optim.Adam(plain.parameters(), lr=0.1)
    adam.load_state_dict(optimizer)  # the one-process optimizer takes it as it is
    assert_same_optimizer_state(by_name, adam.state_dict())
    RecorderCheckpointIO().remove_checkpoint(tmp_path / "trainer-1.mpk")  # a folder: removed whole
    assert not (tmp_path / "trainer-1.mpk").exists()


def test_consolidate_checkpoint_makes_the_one_file_that_a_resume_would_have_gathered(one_rank_group, tmp_path, capsys):
    """`burnlike consolidate DIR --checkpoint`: the move by hand writes what the plugin gathers on
    load, as one file under the folder's name (what `checkpoint=last` then finds); the shards stay
    beside it."""
    saved = fitting_strategy(ShardedStrategy(), seed=0)
    saved.checkpoint_io = RecorderCheckpointIO(DefaultRecorder())

    def checkpoint() -> dict:  # (a save takes the weights and optimizer states out of it)
        return {"state_dict": saved.lightning_module_state_dict(),
                "optimizer_states": [saved.optimizer_state(saved.optimizers[0])], "epoch": 1, "global_step": 9}

    folder = tmp_path / "checkpoint" / "trainer-2.mpk"
    saved.save_checkpoint(checkpoint(), folder)
    gathered = RecorderCheckpointIO().load_checkpoint(folder)
    assert cli(["consolidate", str(folder), "--model", "tests.helpers.sharded_fit:Mlp", "--checkpoint"]) == 0
    assert folder.is_file() and is_sharded_checkpoint(tmp_path / "checkpoint" / "trainer-2.mpk.shards")
    assert sorted(p.name for p in folder.parent.iterdir()) == ["model-2.mpk", "trainer-2.mpk", "trainer-2.mpk.shards"]
    one_file = RecorderCheckpointIO().load_checkpoint(folder)
    assert one_file.keys() == gathered.keys() and one_file["global_step"] == 9
    assert_equal(one_file["state_dict"], gathered["state_dict"])
    assert_same_optimizer_state(full_states(saved)[1], one_file["optimizer_states"][0])
    assert f"{folder}: one file now (step 9, 1 optimizer states); the shards are in {folder}.shards" in \
        capsys.readouterr().out
    again = tmp_path / "checkpoint" / "trainer-3.mpk"
    saved.save_checkpoint(checkpoint(), again)
    (tmp_path / "checkpoint" / "trainer-3.mpk.shards").mkdir()
    assert cli(["consolidate", str(again), "--model", "tests.helpers.sharded_fit:Mlp", "--checkpoint"]) == 2
    assert f"{again}.shards exists: move it away first" in capsys.readouterr().err
    assert is_sharded_checkpoint(again)  # left as it was


def test_a_checkpoint_with_more_optimizer_states_than_the_fit_has_optimizers_names_both_counts(one_rank_group):
    strategy = fitting_strategy(ShardedStrategy(sharded=False), seed=0)
    model, optimizer = full_states(strategy)
    with pytest.raises(RuntimeError, match=r"^1 optimizers, but the checkpoint trainer-1\.mpk holds 2 optimizer states$"):
        strategy.load_full({"state_dict": dict(model), "optimizer_states": [optimizer, optimizer]}, "trainer-1.mpk")


def fsdp_fitting_strategy(seed: int) -> CompactFSDPStrategy:
    """A `CompactFSDPStrategy` as a one-rank fit has it after setup, its module wrapped by torch's
    FSDP (which runs on the CPU over gloo when asked to: Lightning's strategy only ever asks on GPUs)."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    torch.manual_seed(seed)
    module = Wrapped()
    strategy = CompactFSDPStrategy(state_dict_type="full")
    strategy.connect(module)
    strategy.model = FullyShardedDataParallel(module, device_id=torch.device("cpu"), use_orig_params=True)
    optimizer = torch.optim.Adam(strategy.model.parameters(), lr=0.1)
    strategy.model.model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    module.trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                               enable_progress_bar=False, enable_model_summary=False)
    module.trainer.state.fn = TrainerFn.FITTING
    strategy.optimizers = [optimizer]
    return strategy


def fsdp_full_states(strategy: CompactFSDPStrategy) -> tuple[dict[str, torch.Tensor], dict]:
    from torch.distributed.fsdp import FullStateDictConfig, FullyShardedDataParallel, StateDictType

    with FullyShardedDataParallel.state_dict_type(strategy.model, StateDictType.FULL_STATE_DICT,
                                                  FullStateDictConfig(offload_to_cpu=True, rank0_only=False)):
        return (dict(strategy.model.state_dict()),
                FullyShardedDataParallel.optim_state_dict(strategy.model, strategy.optimizers[0]))


@pytest.mark.filterwarnings("ignore:FSDP is switching to use `NO_SHARD`", "ignore:When using ``NO_SHARD``",
                            "ignore:FSDP.state_dict_type\\(\\) and FSDP.set_state_dict_type\\(\\) are being deprecated")
def test_torchs_fsdp_wrapper_takes_a_gathered_checkpoints_weights_and_optimizer_state(one_rank_group):
    want = fsdp_full_states(fsdp_fitting_strategy(seed=0))
    resumed = fsdp_fitting_strategy(seed=1)
    assert not torch.equal(fsdp_full_states(resumed)[0]["model.linear.0.weight"], want[0]["model.linear.0.weight"])
    left = resumed.load_full({"state_dict": dict(want[0]), "optimizer_states": [want[1]], "epoch": 1}, "trainer-1.mpk")
    assert left == {"optimizer_states": [want[1]], "epoch": 1}
    assert_same_states(fsdp_full_states(resumed), want)


@pytest.mark.filterwarnings("ignore:FSDP is switching to use `NO_SHARD`", "ignore:When using ``NO_SHARD``",
                            "ignore:FSDP.state_dict_type\\(\\) and FSDP.set_state_dict_type\\(\\) are being deprecated")
def test_torchs_fsdp_wrapper_refuses_a_gathered_optimizer_state_without_its_per_parameter_state(one_rank_group):
    """Every rank loads the state it read itself (nothing is broadcast from rank 0), so torch checks
    it on each rank: a ValueError saying what is missing, not a bare KeyError."""
    strategy = fsdp_fitting_strategy(seed=0)
    model, optimizer = fsdp_full_states(strategy)
    with pytest.raises(ValueError, match='must have the keys "state"'):
        strategy.load_full({"state_dict": dict(model), "optimizer_states": [{"param_groups": optimizer["param_groups"]}]},
                           "trainer-1.mpk")
