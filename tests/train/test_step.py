"""`burnlike.train.step`: Burn's step traits. A model needs an inference step, `valid_step`
(`ValidStep`) or Burn 0.20's `inference_step` (`InferenceStep`); one with neither is refused when
the learner is built, naming the model and both methods."""

from __future__ import annotations

import pytest

from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.train import LearnerBuilder, RegressionOutput, TrainOutput
from tests.helpers.toy import Batch


class NoInference(Module):
    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        raise AssertionError("never trained")


def test_a_model_without_an_inference_step_is_refused_naming_both_methods(tmp_path):
    with pytest.raises(TypeError, match=r"^NoInference must implement valid_step\(batch\) \(burnlike\.train\."
                                        r"ValidStep\) or inference_step\(batch\) \(burnlike\.train\.InferenceStep\)$"):
        LearnerBuilder(tmp_path).build(NoInference(), AdamConfig(), 1e-3)
