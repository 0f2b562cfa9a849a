"""nanoGPT's shakespeare_char recipe as a user runs it: `train.py experiment=shakespeare_char` (made
tiny by overrides, on a small text) trains a GPT in epochs of `valid_every` iterations, at the
learning rates of nanoGPT's warmup and cosine (checked against its formula, written here), with
weight decay on the 2-D weights only, and prints Burn's summary and a sample of generated text.
A run resumed at a validation ends as the uninterrupted run. On a GPU, the GPU recipe runs on the
default path and on the CUDA-graph fast path in bf16. (A missing text and `--help`: test_app.py.)"""

import json
import math

import pytest

from burnlike.record import load_checkpoint
from tests.helpers.corpus import corpus_text, vocab_size, write_corpus
from tests.helpers.fit import cuda
from tests.helpers.nanogpt import get_lr
from tests.journeys.helpers import param_bytes, run_app

# 12 iterations in epochs of 4 of a 1-layer GPT over 16 characters; the learning rate logged each step;
# full-precision checkpoints (the recipe's compact ones keep f16 weights, so a resume from them is not exact)
TINY = ["experiment=shakespeare_char", f"model.vocab_size={vocab_size()}", "model.block_size=16", "model.n_layer=1",
        "model.n_head=2", "model.n_embd=16", "data.batch_size=4", "learner.num_iterations=12",
        "learner.valid_every=4", "scheduler.warmup_iters=3", "trainer.limit_val_batches=2", "data.sample_length=40",
        "learner.metrics=[Loss,Learning Rate]", "learner.recorder=default"]


@pytest.fixture(scope="module")
def text_root(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("text"))


@pytest.fixture(scope="module")
def recipe_run(text_root, tmp_path_factory):
    """One tiny run of the CPU recipe, its process and run dir."""
    out = tmp_path_factory.mktemp("recipe")
    proc = run_app(TINY, out, text_root, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, out / "run"


@pytest.mark.slow
def test_the_recipe_trains_in_epochs_of_valid_every_iterations_and_prints_a_sample(recipe_run):
    proc, run = recipe_run
    for epoch in (1, 2, 3):
        assert len((run / "train" / f"epoch-{epoch}" / "Loss.log").read_text().splitlines()) == 4
        assert len((run / "valid" / f"epoch-{epoch}" / "Loss.log").read_text().splitlines()) == 2
    assert not (run / "train" / "epoch-4").exists()
    assert "Learner Summary" in proc.stdout and "| Valid | Loss" in proc.stdout
    result = json.loads((run / "result.json").read_text())
    assert result["optimized_metric"] == "valid/Loss" and result["mode"] == "min" and len(result["epochs"]) == 3
    out = proc.stdout + proc.stderr
    head = "a sample from the trained model (data.sample_length=40):\n"
    assert head in out
    sample = out.split(head, 1)[1][:41]  # the prompt (a newline), then 40 characters
    assert len(sample) == 41 and set(sample) <= set(corpus_text())


@pytest.mark.slow
def test_each_iteration_trains_at_nanogpts_warmup_then_cosine_rate(recipe_run):
    _, run = recipe_run
    rates = [float(line.split(",")[0]) for epoch in (1, 2, 3)
             for line in (run / "train" / f"epoch-{epoch}" / "Learning_Rate.log").read_text().splitlines()]
    assert len(rates) == 12
    assert rates == pytest.approx([get_lr(it, 1e-3, 1e-4, 3, 12) for it in range(12)], rel=1e-9)


@pytest.mark.slow
def test_only_the_2d_weights_decay(recipe_run):
    """The optimizer's groups in the last checkpoint: the 2-D weights at the recipe's 0.1 (token and
    position embeddings, the attention and MLP matrices), the LayerNorm gains at 0."""
    _, run = recipe_run
    groups = load_checkpoint(run / "checkpoint" / "trainer-3.mpk")["optimizer_states"][0]["param_groups"]
    # 1 layer without biases: embeddings (2) + qkv, proj, fc, proj (4) decay; ln_1, ln_2, ln_f gains don't
    assert [(g["weight_decay"], len(g["params"])) for g in groups] == [(0.1, 6), (0.0, 3)]


@pytest.mark.slow
def test_a_run_resumed_at_a_validation_ends_with_the_uninterrupted_runs_weights(recipe_run, text_root, tmp_path):
    """The first 2 of its 3 epochs (the same schedule), then `learner.checkpoint=2` in the same run dir:
    the loader goes on from batch 9 of its stream and the schedule from step 9, so the weights and
    the last epoch's logs are the uninterrupted run's."""
    first = run_app([*TINY, "learner.num_iterations=8", "scheduler.decay_iters=12"], tmp_path, text_root, timeout=280)
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = run_app([*TINY, "learner.checkpoint=2"], tmp_path, text_root, timeout=280)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    whole = recipe_run[1]
    assert param_bytes(tmp_path / "run" / "model.mpk") == param_bytes(whole / "model.mpk")
    for log in ("Learning_Rate.log", "Loss.log"):
        assert (tmp_path / "run" / "train" / "epoch-3" / log).read_text() == (whole / "train" / "epoch-3" / log).read_text()


GPU_TINY = ["experiment=shakespeare_char_gpu", f"model.vocab_size={vocab_size()}", "model.block_size=16",
            "model.n_layer=1", "model.n_head=2", "model.n_embd=16", "data.batch_size=4", "learner.num_iterations=8",
            "learner.valid_every=4", "scheduler.warmup_iters=2", "trainer.limit_val_batches=2", "data.sample_length=10"]


@cuda
@pytest.mark.slow
@pytest.mark.parametrize("fast_path", [False, True], ids=["default", "cuda_graph"])
def test_the_gpu_recipe_trains_in_bf16_on_the_default_and_the_cuda_graph_path(text_root, tmp_path, fast_path):
    args = [*GPU_TINY, *(["learner.cuda_graph=true"] if fast_path else [])]
    proc = run_app(args, tmp_path, text_root, timeout=280, env_extra={"CUDA_VISIBLE_DEVICES": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "runs eagerly" not in proc.stdout + proc.stderr  # the fast path captured the step
    losses = json.loads((tmp_path / "run" / "result.json").read_text())["epochs"]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses.values())
    assert "a sample from the trained model" in proc.stdout + proc.stderr
