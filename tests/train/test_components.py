"""`burnlike.train.components`: Burn 0.20's `Learner(model, optim, lr)` holds what to train and
does not fit; asked to, it says both ways to train it (`SupervisedTraining…launch` or
`LearnerBuilder…build…fit`), whichever step traits the model implements."""

import pytest
import torch

from burnlike.optim import AdamConfig
from burnlike.train import Learner
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import InferenceStepRegressor


def test_a_plain_learner_says_how_to_train_it():
    for model in (Classifier(), InferenceStepRegressor()):  # valid_step, and Burn 0.20's inference_step
        with pytest.raises(TypeError) as error:
            Learner(model, AdamConfig(), 1e-2).fit(loader(32, 16))
        assert str(error.value) == (
            "Learner(model, optim, lr) holds what to train (Burn 0.20); train it with "
            "SupervisedTraining(dir, train_loader, valid_loader)....launch(learner), or build a fitting "
            "learner with LearnerBuilder(dir)....build(model, optim, lr).fit(train_loader, valid_loader)")


def test_burns_learner_methods_step_the_schedule_and_the_optimizer():
    """0.0 before the first `lr_step` (Burn's `Learner::new`); each `lr_step` gives the schedule's
    next rate; `optimizer_step` takes a step's lazy gradients or a GradientsParams at that rate;
    `load_scheduler` puts the step count and its rate back."""
    from burnlike.optim import GradientsParams, SgdConfig
    from burnlike.optim.lr_scheduler import StepLrSchedulerConfig

    model = Classifier()
    before = model.linear.weight.detach().clone()
    learner = Learner(model, SgdConfig(), StepLrSchedulerConfig(0.5, 1, 0.1))
    assert learner.lr_current() == 0.0
    learner.lr_step()
    assert learner.lr_current() == 0.5
    batch = next(iter(loader(32, 8)))
    first = GradientsParams.from_grads(model.train_step(batch).grads, model).get(model.linear.weight)
    learner.optimizer_step(learner.train_step(batch).grads)
    assert torch.allclose(model.linear.weight, before - 0.5 * first)  # plain SGD at the first rate
    after_first = model.linear.weight.detach().clone()
    grads = GradientsParams.from_grads(learner.train_step(batch).grads, model)
    learner.lr_step()
    assert learner.lr_current() == pytest.approx(0.05)
    learner.optimizer_step(grads)
    assert torch.allclose(model.linear.weight, after_first - 0.05 * grads.get(model.linear.weight))
    assert learner.model() is model
    learner.load_scheduler({"iteration": 1})
    assert learner.lr_current() == 0.5
    learner.load_scheduler({"iteration": 0})
    assert learner.lr_current() == 0.0


def test_a_float_rate_is_burns_constant_schedule_and_bad_arguments_are_named():
    from burnlike.optim import SgdConfig

    learner = Learner(Classifier(), SgdConfig(), 0.25)
    learner.lr_step()
    learner.lr_step()
    assert learner.lr_current() == 0.25
    with pytest.raises(TypeError, match="lr_scheduler must be a float or a Burn LR scheduler"):
        Learner(Classifier(), SgdConfig(), "fast").lr_step()
    with pytest.raises(TypeError, match="optimizer_step expects the gradients"):
        Learner(Classifier(), SgdConfig(), 0.1).optimizer_step({"w": 1})
    with pytest.raises(TypeError, match="must return TrainOutput"):
        Learner(NoTrainOutput(), SgdConfig(), 0.1).train_step(None)


class NoTrainOutput(torch.nn.Module):
    def train_step(self, batch):
        return 1.0
