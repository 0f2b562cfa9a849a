"""`examples/shakespeare_char.py`, nanoGPT's shakespeare_char recipe written with burnlike: it runs as a
script (--help) and, made tiny on a small text, trains in epochs of `valid_every` iterations, writes
Burn's artifacts (its config as Burn's JSON, a checkpoint per validation, the model record) and a
sample of text, and learns."""

import math
import sys

from burnlike.models.gpt import GptConfig
from tests.examples.helpers import example, run_with_help
from tests.helpers.corpus import corpus_text, vocab_size, write_corpus


def test_the_recipe_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("shakespeare_char", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: shakespeare_char.py")
    assert all(flag in out for flag in ("--artifact-dir", "--device", "--iters"))


def test_the_recipe_trains_saves_burns_artifacts_and_writes_a_sample(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BURNLIKE_DATA", str(write_corpus(tmp_path / "data")))
    recipe = example("shakespeare_char")
    config = (recipe.recipe(vocab_size()).with_model(GptConfig(vocab_size(), block_size=16, n_layer=1, n_head=2,
                                                              n_embd=32))
              .with_num_iterations(60).with_valid_every(20).with_valid_batches(4).with_warmup_iterations(5)
              .with_learning_rate(1e-2))
    run = tmp_path / "run"
    loss = recipe.train(str(run), config, "cpu", progress_bar=False)
    assert loss < 0.8 * math.log(vocab_size())  # well under a uniform guess over the characters
    assert recipe.TrainingConfig.load(run / "config.json") == config
    assert sorted(p.name for p in (run / "checkpoint").glob("model-*")) == ["model-2.mpk", "model-3.mpk"]
    assert (run / "model.mpk").exists() and "Learner Summary" in (out := capsys.readouterr().out)
    sample = out[-502:-1]  # the last line printed: the prompt (a newline) and 500 characters
    assert sample.startswith("\n") and set(sample) <= set(corpus_text())


def test_the_recipe_main_takes_its_options(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BURNLIKE_DATA", str(write_corpus(tmp_path / "data")))
    recipe = example("shakespeare_char")
    tiny = recipe.recipe().with_model(GptConfig(vocab_size(), block_size=8, n_layer=1, n_head=1, n_embd=8))
    monkeypatch.setattr(recipe, "recipe", lambda: tiny.with_valid_every(5).with_valid_batches(1).with_warmup_iterations(1))
    monkeypatch.setattr(sys, "argv", ["shakespeare_char.py", "--artifact-dir", str(tmp_path / "run"), "--iters", "10"])
    recipe.main()
    assert "valid loss after 10 iterations:" in capsys.readouterr().out
    assert (tmp_path / "run" / "checkpoint" / "model-2.mpk").exists()
