"""Burn 0.19-0.21 spellings over the one engine: the guide written three ways, device strategies,
InferenceStep, the Interrupter, warm-up early stopping, the evaluator, and DDP through
`ExecutionStrategy.ddp`."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from idx import write_mnist_idx
from lightning.pytorch.callbacks import Callback
from torch import nn
from toy import Batch, Classifier, loader

import burnlike
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import ModelConfig
from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.record import CompactRecorder
from burnlike.train import (
    CollectiveConfig,
    DistributedConfig,
    EvaluatorBuilder,
    ExecutionStrategy,
    InferenceStep,
    Interrupter,
    Learner,
    LearnerBuilder,
    LearningResult,
    LearningStrategy,
    MetricEarlyStoppingStrategy,
    MetricInputError,
    MultiDeviceOptim,
    ReduceOperation,
    RegressionOutput,
    StoppingCondition,
    SupervisedTraining,
    TrainingResult,
    TrainingStrategy,
    TrainOutput,
    TrainStep,
    backward,
)
from burnlike.train.checkpoint import Direction, Split
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric, LossMetric

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    root = write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=128, n_test=64)
    return MnistDataset.train(root), MnistDataset.test(root)


def guide(mnist, artifact_dir, spelling):
    """Burn's guide `train()` (seed, loaders, metrics, file checkpointer, summary) in one spelling."""
    burnlike.seed(42)
    batches = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(0)
    train, test = batches.build(mnist[0]), batches.build(mnist[1])
    model, optim, lr = ModelConfig(10, 512).init("cpu"), AdamConfig().init(), 1e-4
    if spelling == "0.21":
        training = (SupervisedTraining(artifact_dir, train, test).metrics((AccuracyMetric(), LossMetric()))
                    .with_file_checkpointer(CompactRecorder()).num_epochs(1).summary().progress_bar(False))
        return training.launch(Learner(model, optim, lr))
    builder = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder()).num_epochs(1).summary().progress_bar(False))
    if spelling == "0.18":
        builder = builder.devices(["cpu"])
    else:
        builder = builder.learning_strategy(LearningStrategy.single_device("cpu"))
    learner = builder.build(model, optim, lr)
    assert isinstance(learner, Learner)  # the 0.19 learner is a Learner(model, optim, lr) with a Trainer
    return learner.fit(train, test)


def test_the_guide_three_ways_gives_identical_weights(mnist, tmp_path):
    results = {s: guide(mnist, tmp_path / s, s) for s in ("0.18", "0.19", "0.21")}
    assert isinstance(results["0.21"], LearningResult) and isinstance(results["0.18"], TrainingResult)
    weights = {s: r.model.state_dict() for s, r in results.items()}
    for spelling in ("0.19", "0.21"):
        for name, value in weights["0.18"].items():
            assert torch.equal(value, weights[spelling][name]), (spelling, name)
    untrained = (burnlike.seed(42), ModelConfig(10, 512).init("cpu"))[1]
    assert not torch.equal(untrained.linear2.weight, results["0.18"].model.linear2.weight)
    for spelling in results:  # same Burn artifacts: logs, checkpoint, summary
        run = tmp_path / spelling
        assert (run / "checkpoint" / "model-1.mpk").exists() and (run / "experiment.log").exists()
        assert len((run / "train" / "epoch-1" / "Accuracy.log").read_text().splitlines()) == 2
        assert results[spelling].summary.get("valid", "Loss") is not None


def test_device_strategies_translate_to_lightning():
    assert LearningStrategy.single_device("cpu").trainer_kwargs() == {"accelerator": "cpu", "devices": 1}
    assert LearningStrategy.multi_device_naive(["cuda:0", "cuda:1"]).trainer_kwargs() == {
        "accelerator": "gpu", "devices": [0, 1], "strategy": "ddp"}
    assert ExecutionStrategy.multi(["cuda:0"]).trainer_kwargs() == {"accelerator": "gpu", "devices": [0]}
    sharded = TrainingStrategy.multi_device([0, 1], MultiDeviceOptim.OPTIM_SHARDED).trainer_kwargs()
    assert sharded["strategy"] == "fsdp"
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


class InferenceOnly(Module, TrainStep[Batch, RegressionOutput], InferenceStep[Batch, RegressionOutput]):
    """Burn 0.20's traits: `inference_step`, types as the Protocol's parameters."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def step(self, batch):
        out = self.linear(batch.x)
        target = batch.y.float().unsqueeze(1)
        return RegressionOutput(nn.functional.mse_loss(out, target), out, target)

    def train_step(self, batch):
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def inference_step(self, batch):
        return self.step(batch)


class AnnotatedInference(Module):
    """No Protocol parameters: the step methods' annotations are the associated types."""

    def __init__(self):
        super().__init__()
        self.inner = InferenceOnly()

    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        return self.inner.train_step(batch)

    def inference_step(self, batch: Batch) -> RegressionOutput:
        return self.inner.inference_step(batch)


class NoInference(Module):
    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        raise AssertionError("never trained")


def test_inference_step_types_are_checked_at_build_and_launch(tmp_path):
    for model in (InferenceOnly(), AnnotatedInference()):
        with pytest.raises(MetricInputError, match="valid metric 'Accuracy'.*RegressionOutput"):
            LearnerBuilder(tmp_path).metric_valid(AccuracyMetric()).build(model, AdamConfig(), 1e-3)
    with pytest.raises(MetricInputError, match="RegressionOutput"):
        SupervisedTraining(tmp_path, loader(32), loader(32)).metrics(AccuracyMetric()).launch(
            Learner(InferenceOnly(), AdamConfig(), 1e-3))
    result = (SupervisedTraining(tmp_path, loader(64), loader(64)).metrics(LossMetric()).num_epochs(1)
              .progress_bar(False).launch(Learner(InferenceOnly(), AdamConfig(), 1e-2)))
    assert (tmp_path / "valid" / "epoch-1" / "Loss.log").exists() and not result.model.training
    with pytest.raises(TypeError, match="NoInference must implement valid_step.*or inference_step"):
        LearnerBuilder(tmp_path).build(NoInference(), AdamConfig(), 1e-3)
    with pytest.raises(TypeError, match="SupervisedTraining"):
        Learner(InferenceOnly(), AdamConfig(), 1e-3).fit(loader(32))


def test_interrupter_stops_within_one_step_from_another_thread(tmp_path):
    interrupter = Interrupter()
    reached, stopped = threading.Event(), threading.Event()

    class PauseAtStepTwo(Callback):  # holds step 2 until the other thread has called stop()
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.global_step == 2:
                reached.set()
                assert stopped.wait(timeout=60)

    def stop_when_reached():
        assert reached.wait(timeout=60)
        interrupter.stop("user asked")
        stopped.set()

    thread = threading.Thread(target=stop_when_reached)
    thread.start()
    learner = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).num_epochs(3).devices(["cpu"])
               .progress_bar(False).with_interrupter(interrupter).callback(PauseAtStepTwo())
               .build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(256, 32))  # 8 steps an epoch, 24 without the interrupter
    thread.join()
    assert learner.trainer.global_step == 3  # the step after stop() was requested is the last
    assert len((tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 3
    assert "Training interrupted: user asked" in (tmp_path / "experiment.log").read_text()
    # the builder's own interrupter, for a callback or a signal handler
    builder = LearnerBuilder(tmp_path)
    assert builder.interrupter() is builder.interrupter() and not builder.interrupter().should_stop()


def test_early_stopping_warmup_epochs(tmp_path):
    def epochs_run(warmup):
        stop = MetricEarlyStoppingStrategy(AccuracyMetric(), direction=Direction.HIGHEST, split=Split.VALID,
                                           condition=StoppingCondition.no_improvement_since(1))
        learner = (LearnerBuilder(tmp_path / str(warmup)).metrics(AccuracyMetric()).num_epochs(8).devices(["cpu"])
                   .progress_bar(False).early_stopping(stop.with_warmup_epochs(warmup))
                   .build(Classifier(), AdamConfig(), 0.0))  # lr 0: never improves after epoch 1
        learner.fit(loader(32, 32), loader(32, 32))
        return learner.trainer.current_epoch

    assert epochs_run(None) == 2 and epochs_run(3) == 4
    with pytest.raises(ValueError, match="warmup"):
        MetricEarlyStoppingStrategy(LossMetric()).with_warmup_epochs(-1)


def test_evaluator_writes_tagged_test_logs_and_summary(tmp_path, capsys):
    torch.manual_seed(0)
    training = (SupervisedTraining(tmp_path, loader(128, 32), loader(64, 32, seed=1))
                .metrics((AccuracyMetric(), LossMetric())).num_epochs(1).progress_bar(False))
    model = training.launch(Learner(Classifier(), AdamConfig(), 5e-2)).model
    test = loader(96, 32, seed=2)
    evaluator = (EvaluatorBuilder(tmp_path).metrics((AccuracyMetric(), LossMetric())).summary()
                 .progress_bar(False).build(model))
    result = evaluator.eval("Blobs Test", test)
    folder = tmp_path / "test" / "blobs-test" / "epoch-1"  # Burn's Split::Test(tag) layout
    assert len((folder / "Accuracy.log").read_text().splitlines()) == 3
    with torch.no_grad():
        correct = sum(int((model(b.x).argmax(-1) == b.y).sum()) for b in test)
    assert result.metrics["Accuracy"] == pytest.approx(100 * correct / 96)
    assert read_metric_log(folder / "Loss.log") == pytest.approx(result.metrics["Loss"], rel=1e-6)
    assert (tmp_path / "evaluation.log").exists() and Split.TEST.value == "test"
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| Test (blobs-test) | Accuracy"))
    assert f"{result.metrics['Accuracy']:.3f}" in row
    assert any(line.startswith("| Train             | Accuracy") for line in out.splitlines())  # aligned
    second = evaluator.eval("other", loader(32, 32, seed=3))
    assert {"blobs-test", "other"} <= {m.split.partition("(")[2].rstrip(")") for m in second.summary.metrics}
    with pytest.raises(MetricInputError, match="test metric 'Accuracy'"):
        EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).build(InferenceOnly())


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_two_process_cpu_ddp_through_execution_strategy(tmp_path):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(HERE / "ddp_execution.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=280, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["world_size"] == ranks[1]["world_size"] == 2
    # the library ended each rank's process group before the interpreter's teardown
    assert [(tmp_path / f"group{r}.txt").read_text() for r in (0, 1)] == ["ended", "ended"]
    for key in ("valid/Accuracy", "valid/Loss", "train/Loss"):  # reduced across ranks: the same everywhere
        assert ranks[0][key] == pytest.approx(ranks[1][key])
    lines = (tmp_path / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert len(lines) == 2  # rank 0 logs its own half of the valid set (4 batches of 16 in all)
    local = read_metric_log(tmp_path / "valid" / "epoch-1" / "Loss.log")
    assert local != pytest.approx(ranks[0]["valid/Loss"], rel=1e-6)


# --- the Hydra app: new optimizer options and learner.strategy ------------------------------------

def compose_app(overrides):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(HERE.parent / "conf"), version_base="1.3"):
            return compose("config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


@pytest.mark.parametrize("name", ["adagrad", "rmsprop", "muon", "adan", "lbfgs"])
def test_app_optimizer_options_keep_burns_defaults_and_step(name):
    from omegaconf import OmegaConf

    from burnlike import optim
    from burnlike.app.run import build_model, validate

    cfg = compose_app([f"optimizer={name}", "model=mlp", f"optimizer.lr={0.5 if name == 'lbfgs' else 1e-3}"])
    validate(cfg)
    opt = OmegaConf.to_object(cfg.optimizer)
    burn = {"adagrad": optim.AdaGradConfig, "rmsprop": optim.RmsPropConfig, "muon": optim.MuonConfig,
            "adan": optim.AdanConfig, "lbfgs": optim.LBFGSConfig}[name]()
    for field in burn.__dataclass_fields__:
        if (name, field) != ("muon", "aux_adamw"):  # the app gives Muon an AdamW for biases and kernels
            want = getattr(burn, field)
            assert getattr(opt, field) == (list(want) if isinstance(want, tuple) else want), (name, field)
    model = build_model(cfg)
    torch_optim = opt.init().build([p for p in model.parameters() if p.requires_grad], cfg.optimizer.lr)
    before = model.output.weight.detach().clone()
    batch = torch.randn(4, 28, 28), torch.randint(0, 10, (4,))

    def closure():
        torch_optim.zero_grad()
        loss = nn.functional.cross_entropy(model(batch[0]), batch[1])
        loss.backward()
        return loss

    torch_optim.step(closure)
    assert not torch.equal(before, model.output.weight)


def test_app_learner_strategy(tmp_path):
    from burnlike.app.run import AppConfigError, execution, run, validate

    tiny = write_mnist_idx(tmp_path / "data", n_train=64, n_test=32)
    cfg = compose_app(["model=mlp", "optimizer=muon", "learner.strategy=single", "learner.num_epochs=1",
                       "learner.progress_bar=false", "learner.summary=false", f"data.root={tiny}"])
    gpu = torch.cuda.is_available()  # trainer.accelerator=auto: a GPU when there is one
    assert execution(cfg) == ExecutionStrategy.single("cuda:0" if gpu else "cpu")
    best = run(cfg, tmp_path / "run")
    assert 0 <= best <= 100 and (tmp_path / "run" / "valid" / "epoch-1" / "Accuracy.log").exists()
    two = compose_app(["learner.strategy=ddp", "trainer.devices=2", "trainer.num_nodes=2"])
    assert execution(two).trainer_kwargs() == {"accelerator": "gpu" if gpu else "cpu", "devices": [0, 1] if gpu else 2,
                                               "strategy": "ddp",
                                               "num_nodes": 2}
    sharded = compose_app(["learner.strategy=multi_sharded", "trainer.accelerator=gpu", "trainer.devices=[0,2]"])
    assert execution(sharded).trainer_kwargs() == {"accelerator": "gpu", "devices": [0, 2], "strategy": "fsdp"}
    with pytest.raises(AppConfigError, match="learner.strategy=.*trainer.strategy=ddp"):
        validate(compose_app(["learner.strategy=ddp", "trainer=ddp"]))
    with pytest.raises(AppConfigError, match="learner.strategy='fast'"):
        validate(compose_app(["learner.strategy=fast"]))
    with pytest.raises(AppConfigError, match="one device"):
        execution(compose_app(["learner.strategy=single", "trainer.devices=2"]))
