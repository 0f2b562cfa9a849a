"""`burnlike.train.components`: Burn 0.20's `Learner(model, optim, lr)` holds what to train and
does not fit; asked to, it says both ways to train it (`SupervisedTraining…launch` or
`LearnerBuilder…build…fit`), whichever step traits the model implements."""

import pytest

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
