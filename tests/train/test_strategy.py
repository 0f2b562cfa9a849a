"""`burnlike.train.strategy`: Burn's device strategies (`LearningStrategy`, `TrainingStrategy`,
`ExecutionStrategy`) translated to the Lightning Trainer's accelerator, devices, strategy and node
count, and their errors: a single device where a list is due, devices of two kinds, a wrong config
type, a SUM all-reduce (Lightning's DDP averages), a bad node count; each names the call and says
what to use."""

import functools

import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy

from burnlike.optim import AdamConfig
from burnlike.train import (
    CollectiveConfig,
    DistributedConfig,
    ExecutionStrategy,
    LearnerBuilder,
    LearningStrategy,
    MultiDeviceOptim,
    ReduceOperation,
    TrainingStrategy,
)
from burnlike.train.sharded import ShardedStrategy
from burnlike.train.strategy import ddp, trainer_devices
from tests.helpers.toy import Classifier


# --- translation to the Trainer --------------------------------------------------------------------
def test_trainer_devices_maps_burn_devices_and_refuses_mixed_or_unknown_ones():
    assert trainer_devices(["cpu"]) == {"accelerator": "cpu", "devices": 1}
    assert trainer_devices(["cuda:1", torch.device("cuda", 3)]) == {"accelerator": "gpu", "devices": [1, 3]}
    assert trainer_devices([0]) == {"accelerator": "gpu", "devices": [0]}
    with pytest.raises(ValueError, match="one kind"):
        trainer_devices(["cpu", "cuda:0"])
    with pytest.raises(ValueError, match="not a device"):
        trainer_devices(["gpu-ish"])


def test_device_strategies_translate_to_lightning():
    assert LearningStrategy.single_device("cpu").trainer_kwargs() == {"accelerator": "cpu", "devices": 1}
    assert LearningStrategy.multi_device_naive(["cuda:0", "cuda:1"]).trainer_kwargs() == {
        "accelerator": "gpu", "devices": [0, 1], "strategy": "ddp"}
    assert ExecutionStrategy.multi(["cuda:0"]).trainer_kwargs() == {"accelerator": "gpu", "devices": [0]}
    sharded = TrainingStrategy.multi_device([0, 1], MultiDeviceOptim.OPTIM_SHARDED).trainer_kwargs()
    assert isinstance(sharded["strategy"], ShardedStrategy)
    ddp = ExecutionStrategy.ddp(["cuda:0", "cuda:1"], DistributedConfig(num_nodes=2)).trainer_kwargs()
    assert ddp == {"accelerator": "gpu", "devices": [0, 1], "strategy": "ddp", "num_nodes": 2}
    assert CollectiveConfig().with_num_nodes(3).num_nodes == 3
    gloo = LearningStrategy.ddp(["cpu", "cpu"], CollectiveConfig(process_group_backend="gloo")).trainer_kwargs()
    assert type(gloo["strategy"]).__name__ == "DDPStrategy" and gloo["strategy"]._process_group_backend == "gloo"
    assert TrainingStrategy.default(ExecutionStrategy.single("cpu")) == ExecutionStrategy.single("cpu")
    assert TrainingStrategy.custom("ddp_spawn", ["cpu", "cpu"]).trainer_kwargs()["strategy"] == "ddp_spawn"
    with pytest.raises(TypeError, match="list of devices"):
        ExecutionStrategy.multi("cuda:0")
    with pytest.raises(ValueError, match="one kind"):
        ExecutionStrategy.ddp(["cpu", "cuda:0"])
    with pytest.raises(NotImplementedError, match="averages"):
        DistributedConfig(all_reduce_op=ReduceOperation.SUM)
    with pytest.raises(TypeError, match="device strategy"):
        LearnerBuilder("x").learning_strategy("cpu")
    # the builder hands the translation to the Trainer
    trainer = (LearnerBuilder("unused").learning_strategy(LearningStrategy.multi_device_naive(["cpu", "cpu"]))
               .progress_bar(False).build(Classifier(), AdamConfig(), 1e-3).trainer)
    assert type(trainer.strategy).__name__ == "DDPStrategy" and trainer.num_devices == 2


def test_training_strategy_single_device_and_ddp_translate_to_lightning():
    assert TrainingStrategy.single_device("cpu").trainer_kwargs() == {"accelerator": "cpu", "devices": 1}
    assert TrainingStrategy.single_device(torch.device("cuda", 2)).trainer_kwargs() ==\
        {"accelerator": "gpu", "devices": [2]}
    with pytest.raises(TypeError, match=r"single device 'cpu'.*\['cpu'\]"):
        TrainingStrategy.ddp("cpu")
    ddp = TrainingStrategy.ddp(["cpu", "cpu"], DistributedConfig(num_nodes=1))
    assert ddp.trainer_kwargs() == {"accelerator": "cpu", "devices": 2, "strategy": "ddp", "num_nodes": 1}
    gloo = TrainingStrategy.ddp(["cpu", "cpu"], DistributedConfig(process_group_backend="gloo").with_num_nodes(3))
    assert isinstance(gloo.strategy, DDPStrategy) and gloo.strategy._process_group_backend == "gloo"
    assert gloo.num_nodes == 3 and TrainingStrategy.ddp(["cpu"]).num_nodes == 1
    with pytest.raises(TypeError, match="DistributedConfig"):
        TrainingStrategy.ddp(["cpu"], {"num_nodes": 2})


def test_a_custom_strategy_reaches_the_trainer_with_or_without_devices(tmp_path):
    alone = TrainingStrategy.custom("ddp")
    assert alone.devices == () and alone.trainer_kwargs() == {"strategy": "ddp"}
    two = TrainingStrategy.custom("ddp", ["cpu", "cpu"])
    assert two.trainer_kwargs() == {"accelerator": "cpu", "devices": 2, "strategy": "ddp"}
    trainer = (LearnerBuilder(tmp_path).learning_strategy(two).progress_bar(False)
               .build(Classifier(), AdamConfig(), 1e-3).trainer)
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.num_devices == 2


# --- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("make", "what"), [
    (LearningStrategy.multi_device_naive, "LearningStrategy.MultiDeviceNaive"),  # the alias names Burn's variant
    (LearningStrategy.MultiDeviceNaive, "LearningStrategy.MultiDeviceNaive"),
    (functools.partial(LearningStrategy.DistributedDataParallel, config=None), "LearningStrategy.DistributedDataParallel"),
    (LearningStrategy.ddp, "LearningStrategy.ddp"),
    (ddp, "ddp"),
    (TrainingStrategy.ddp, "TrainingStrategy.ddp"),
    (functools.partial(TrainingStrategy.custom, "ddp"), "TrainingStrategy.Custom"),
    (ExecutionStrategy.multi, "ExecutionStrategy.multi"),
    (ExecutionStrategy.MultiDevice, "ExecutionStrategy.MultiDevice"),
    (ExecutionStrategy.ddp, "ExecutionStrategy.ddp"),
])
def test_strategies_refuse_a_single_device_naming_themselves(make, what):
    with pytest.raises(TypeError, match=rf"^{what} takes a list of devices, got the single device 'cpu': "
                                        r"use \['cpu'\]$"):
        if "DistributedDataParallel" in what:
            make(devices="cpu")
        else:
            make("cpu")


@pytest.mark.parametrize(("make", "what"), [(LearningStrategy.ddp, "LearningStrategy.ddp"),
                                            (TrainingStrategy.ddp, "TrainingStrategy.ddp"),
                                            (ExecutionStrategy.ddp, "ExecutionStrategy.ddp")])
def test_ddp_strategies_name_a_wrong_config(make, what):
    with pytest.raises(TypeError, match=rf"^{what}: config must be a DistributedConfig/CollectiveConfig, got dict$"):
        make(["cpu", "cpu"], {"num_nodes": 2})


def test_distributed_config_and_strategy_errors_say_what_to_use(tmp_path):
    with pytest.raises(NotImplementedError, match=r"^DistributedConfig\(all_reduce_op=ReduceOperation\.SUM\): Lightning's "
                                                  r"DDP averages gradients across processes; use ReduceOperation\.MEAN "
                                                  r"\(and scale the learning rate if you relied on sums\)$"):
        DistributedConfig(all_reduce_op=ReduceOperation.SUM)
    for nodes in (0, 1.5):
        with pytest.raises(ValueError, match=rf"^DistributedConfig\.num_nodes must be an integer >= 1, got {nodes}$"):
            DistributedConfig(num_nodes=nodes)
    with pytest.raises(TypeError, match=r"^expected a device strategy such as LearningStrategy\.SingleDevice\('cpu'\), "
                                        r"ExecutionStrategy\.ddp\(\['cuda:0', 'cuda:1'\]\) or "
                                        r"TrainingStrategy\.custom\(\.\.\.\), got str$"):
        LearnerBuilder(tmp_path).learning_strategy("cpu")


# --- Burn's spellings: Type::Variant(x) is Type.Variant(x) ------------------------------------------
def trainer_of(tmp_path, strategy):
    trainer = (LearnerBuilder(tmp_path).learning_strategy(strategy).progress_bar(False)
               .build(Classifier(), AdamConfig(), 1e-3).trainer)
    return (type(trainer.accelerator).__name__, type(trainer.strategy).__name__, trainer.num_devices,
            trainer.num_nodes, [str(d) for d in trainer.device_ids], str(trainer.precision), trainer.max_epochs)


def test_burns_variant_spelling_builds_the_same_trainer_as_the_snake_case_one(tmp_path):
    """Issue 32, acceptance 2: `LearningStrategy::SingleDevice(device)` (burn-train/src/learner/strategies/
    base.rs, v0.19.1) as `LearningStrategy.SingleDevice("cpu")` builds the Trainer `single_device` builds."""
    assert LearningStrategy.SingleDevice("cpu") == LearningStrategy.single_device("cpu")
    assert trainer_of(tmp_path, LearningStrategy.SingleDevice("cpu")) == \
        trainer_of(tmp_path, LearningStrategy.single_device("cpu")) == \
        ("CPUAccelerator", "SingleDeviceStrategy", 1, 1, ["0"], "32-true", 1)
    assert trainer_of(tmp_path, LearningStrategy.MultiDeviceNaive(["cpu", "cpu"])) == \
        trainer_of(tmp_path, LearningStrategy.multi_device_naive(["cpu", "cpu"]))


def test_every_burn_strategy_variant_has_its_python_twin():
    """burn-train/src/learner/strategies/base.rs (v0.19.1), learner/supervised/strategies/base.rs
    (v0.20.1 and v0.21.0): each variant and constructor under Burn's name, equal to burnlike's alias."""
    cfg = DistributedConfig(ReduceOperation.Mean, num_nodes=2)
    assert LearningStrategy.DistributedDataParallel(devices=["cpu", "cpu"], config=cfg) == \
        LearningStrategy.ddp(["cpu", "cpu"], cfg) == ddp(["cpu", "cpu"], cfg)
    assert TrainingStrategy.SingleDevice("cpu") == TrainingStrategy.single_device("cpu") == ExecutionStrategy.single("cpu")
    assert TrainingStrategy.MultiDevice(["cpu", "cpu"], MultiDeviceOptim.OptimSharded) == \
        TrainingStrategy.multi_device(["cpu", "cpu"], MultiDeviceOptim.OPTIM_SHARDED)
    assert TrainingStrategy.MultiDevice(["cpu", "cpu"], MultiDeviceOptim.OptimSharded).strategy == "sharded"
    assert TrainingStrategy.DistributedDataParallel(devices=["cpu"], config=cfg) == TrainingStrategy.ddp(["cpu"], cfg)
    assert TrainingStrategy.Default(ExecutionStrategy.SingleDevice("cpu")) == TrainingStrategy.default(
        ExecutionStrategy.single("cpu"))
    assert TrainingStrategy.Custom("ddp_spawn", ["cpu", "cpu"]) == TrainingStrategy.custom("ddp_spawn", ["cpu", "cpu"])
    assert ExecutionStrategy.MultiDevice(["cpu", "cpu"], MultiDeviceOptim.OptimMainDevice) == \
        ExecutionStrategy.multi(["cpu", "cpu"])
    assert ExecutionStrategy.DistributedDataParallel(devices=["cpu", "cpu"], config=cfg) == \
        ExecutionStrategy.ddp(["cpu", "cpu"], cfg)
    with pytest.raises(TypeError) as refused:
        ExecutionStrategy.DistributedDataParallel(devices=["cpu"], runtime=object())
    assert str(refused.value) == (
        "ExecutionStrategy.DistributedDataParallel: runtime is Burn's communication server; "
        "Lightning's DDP runs its own, so pass config=DistributedConfig(...) instead")
    assert MultiDeviceOptim.OptimMainDevice is MultiDeviceOptim.OPTIM_MAIN_DEVICE
    assert ReduceOperation.Mean is ReduceOperation.MEAN and ReduceOperation.Sum is ReduceOperation.SUM


def test_main_device_is_the_first_device():
    """burn-train/src/learner/supervised/strategies/base.rs (v0.21.0), `ExecutionStrategy::main_device`."""
    assert ExecutionStrategy.SingleDevice("cpu").main_device() == "cpu"
    assert ExecutionStrategy.MultiDevice(["cuda:1", "cuda:0"]).main_device() == "cuda:1"
    assert ExecutionStrategy.ddp([torch.device("cpu"), "cpu"]).main_device() == torch.device("cpu")
    with pytest.raises(ValueError, match="names no device"):
        TrainingStrategy.Custom("ddp").main_device()


def test_trainer_devices_maps_mps_to_one_mps_device_and_refuses_other_kinds():
    assert trainer_devices(["mps"]) == {"accelerator": "mps", "devices": 1}
    assert trainer_devices([torch.device("mps")]) == {"accelerator": "mps", "devices": 1}
    with pytest.raises(ValueError, match=r"^devices: unsupported device type 'meta'$"):
        trainer_devices(["meta"])
