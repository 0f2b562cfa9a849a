"""`burnlike.train.step`: Burn's step traits. A model needs an inference step, `valid_step`
(`ValidStep`) or Burn 0.20's `inference_step` (`InferenceStep`); one with neither is refused when
the learner is built, naming the model and both methods."""

from __future__ import annotations

import pytest
from torch import nn

from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.train import (
    ClassificationOutput,
    EvaluatorBuilder,
    InferenceStep,
    Learner,
    LearnerBuilder,
    RegressionOutput,
    SupervisedTraining,
    TrainOutput,
    TrainStep,
    backward,
)
from tests.helpers.toy import Batch, loader


class NoInference(Module):
    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        raise AssertionError("never trained")


def test_a_model_without_an_inference_step_is_refused_naming_both_methods(tmp_path):
    with pytest.raises(TypeError, match=r"^NoInference must implement valid_step\(batch\) \(burnlike\.train\."
                                        r"ValidStep\) or inference_step\(batch\) \(burnlike\.train\.InferenceStep\)$"):
        LearnerBuilder(tmp_path).build(NoInference(), AdamConfig(), 1e-3)


class Burn021Model(Module, TrainStep[Batch, ClassificationOutput], InferenceStep[Batch, ClassificationOutput]):
    """A model ported from Burn 0.21 as written there: one `fn step` per trait impl, here `step`."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        out = self.linear(batch.x)
        item = ClassificationOutput(nn.functional.cross_entropy(out, batch.y), out, batch.y)
        return TrainOutput(self, backward(item.loss), item)


class Burn021Inference(Burn021Model):
    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        return self.step(batch)


def test_a_model_defining_burn_021s_step_is_told_to_define_train_step(tmp_path):
    """Burn 0.21's `impl TrainStep for Model { fn step(..) }` (burn-train learner/train_val.rs): the
    ported `step` is refused at launch, naming the method to define, before any batch runs."""
    training = SupervisedTraining(tmp_path, loader(32, 16), loader(16, 16)).num_epochs(1).progress_bar(False)
    with pytest.raises(TypeError, match=r"^Burn021Model defines step\(batch\), Burn 0\.21's method name: define "
                                        r"train_step\(batch\) \(Burn's TrainStep::step\) instead"):
        training.launch(Learner(Burn021Model(), AdamConfig(), 1e-3))
    with pytest.raises(TypeError, match=r"^Burn021Inference defines step\(batch\), Burn 0\.21's method name: define "
                                        r"valid_step\(batch\) \(Burn's ValidStep::step\) or inference_step\(batch\) "
                                        r"\(Burn's InferenceStep::step\) instead"):
        training.launch(Learner(Burn021Inference(), AdamConfig(), 1e-3))
    with pytest.raises(TypeError, match=r"^Burn021Inference defines step\(batch\)"):
        EvaluatorBuilder(tmp_path).build(Burn021Inference())
    assert not (tmp_path / "train").exists()  # refused before training
