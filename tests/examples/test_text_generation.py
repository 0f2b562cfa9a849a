"""`examples/text_generation.py`, Burn's text-generation example: it runs as a script (--help); its
batches and model are Burn's (inputs and targets shifted by one, the record's fields, a causal mask,
cross-entropy without the pad tokens in Burn's mean over every target), and a short run trains under
Burn's Noam schedule (the logged learning rates are its formula) with gradient accumulation."""

import math

import msgpack
import numpy as np
import pytest
import torch

from tests.examples.helpers import example, run_with_help

WORDS = "to be or not that is the question whether tis nobler in the mind to suffer".split()


def write_text(path, paragraphs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    path.write_text("\n\n".join(" ".join(rng.choice(WORDS, 8)) for _ in range(paragraphs)))
    return path


def test_text_generation_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("text_generation", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: text_generation.py") and "Burn" in out and "--epochs" in out


def test_batches_shift_targets_by_one_and_pad_with_burns_tokens(tmp_path):
    gen = example("text_generation")
    items = gen.paragraphs(write_text(tmp_path / "t.txt", 3))
    tokenizer = gen.CharTokenizer([i.text for i in items])
    assert tokenizer.encode("to be", True)[0] == tokenizer.start_token()
    assert tokenizer.decode(tokenizer.encode("to be", True)) == "[START]to be[END]"
    batch = gen.TextGenerationBatcher(tokenizer, 16).batch([gen.TextGenerationItem("to"),
                                                            gen.TextGenerationItem("to be or not")])
    full = gen.TextGenerationBatcher(tokenizer, 16).batch_texts([gen.TextGenerationItem("to"),
                                                                 gen.TextGenerationItem("to be or not")])
    assert full.tokens.shape == (2, 14)  # [START] + 12 characters + [END]
    assert torch.equal(batch.tokens_inputs, full.tokens[:, :-1]) and torch.equal(batch.targets, full.tokens[:, 1:])
    assert batch.mask_pad[0].tolist() == [False] * 4 + [True] * 9  # "[START]to[END]", then pads
    assert (full.tokens[0, 4:] == tokenizer.pad_token()).all()


def test_the_model_is_burns_and_its_loss_ignores_the_pads(tmp_path):
    gen = example("text_generation")
    transformer = gen.TransformerEncoderConfig(16, 32, 2, 1, dropout=0.0)
    model = gen.TextGenerationModelConfig(transformer, 10, 9, 12).init()
    path = model.save_file(tmp_path / "model", gen.CompactRecorder())
    item = msgpack.unpackb(path.read_bytes(), raw=False)["item"]
    assert list(item) == ["transformer", "embedding_token", "embedding_pos", "output", "vocab_size", "pad_token",
                          "max_seq_length"]
    assert item["embedding_pos"]["weight"]["param"]["shape"] == [12, 16]
    assert item["output"]["weight"]["param"]["shape"] == [16, 10]
    tokens = torch.tensor([[1, 2, 3, 4, 9, 9], [5, 6, 7, 8, 1, 2]])
    batch = gen.TrainingTextGenerationBatch(tokens[:, :-1], tokens[:, 1:], tokens[:, :-1] == 9)
    out = model.eval().forward_training(batch)
    log_probs = torch.log_softmax(out.output, 1)
    nll = -log_probs.gather(1, out.targets[:, None])[:, 0]
    expected = (nll * (out.targets != 9)).sum() / out.targets.numel()  # Burn: pads masked, mean over all
    torch.testing.assert_close(out.loss, expected)
    changed = tokens.clone()
    changed[1, 3:] = torch.tensor([3, 3, 3])
    later = model.forward_training(gen.TrainingTextGenerationBatch(changed[:, :-1], changed[:, 1:],
                                                                   changed[:, :-1] == 9))
    torch.testing.assert_close(later.output.reshape(2, 5, 10)[1, :3], out.output.reshape(2, 5, 10)[1, :3])


@pytest.mark.slow
def test_a_short_run_follows_burns_noam_schedule(tmp_path):
    gen = example("text_generation")
    write_text(tmp_path / "input.txt", 40)
    result = gen.main(["--data", str(tmp_path / "input.txt"), "--epochs", "2", "--batch-size", "4", "--accum", "2",
                       "--max-seq-length", "64", "--d-model", "32", "--d-ff", "64", "--heads", "2", "--layers", "1",
                       "--train-samples", "16", "--test-samples", "8", "--num-workers", "0",
                       "--artifact-dir", str(tmp_path / "run")])
    rates = [float(line.split(",")[0]) for epoch in (1, 2) for line in
             (tmp_path / "run" / "train" / f"epoch-{epoch}" / "Learning_Rate.log").read_text().split()]
    # Burn's Noam: factor·d_model^-0.5·min(t^-0.5, t·warmup^-1.5), stepped before every batch
    noam = [0.01 / 2 * 32 ** -0.5 * min(t ** -0.5, t * 6000 ** -1.5) for t in range(1, 9)]
    assert rates == pytest.approx(noam, rel=1e-6)
    for name in ("Accuracy", "Perplexity", "Loss"):
        assert (tmp_path / "run" / "valid" / "epoch-2" / f"{name}.log").exists()
    assert (tmp_path / "run" / "model.mpk").exists() and (tmp_path / "run" / "config.json").exists()
    valid_ppl = [float(v.split(",")[0]) for v in (tmp_path / "run" / "valid" / "epoch-2" / "Perplexity.log")
                 .read_text().split()]
    assert all(math.isfinite(v) for v in valid_ppl) and result.model.vocab_size == len(set(" ".join(WORDS))) + 3
