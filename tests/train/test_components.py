"""TODO: docstring."""

import pytest

from burnlike.optim import AdamConfig
from burnlike.train import Learner
from tests.helpers.toy import Classifier, loader


def test_a_plain_learner_says_how_to_train_it():
    with pytest.raises(TypeError) as error:
        Learner(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    assert str(error.value) == (
        "Learner(model, optim, lr) holds what to train (Burn 0.20); train it with "
        "SupervisedTraining(dir, train_loader, valid_loader)....launch(learner), or build a fitting "
        "learner with LearnerBuilder(dir)....build(model, optim, lr).fit(train_loader, valid_loader)")
