"""`burnlike.models.gpt`: the GPT of nanoGPT's model.py in burnlike's code. Its size (nanoGPT's CPU
model: 0.80M weights), its init (GPT-2's), weight tying, causality, Burn's steps (the loss is the
cross-entropy of the next token), `generate` (length, context, top-k, temperature, the model's mode
kept), its records, and the config's refusals."""

import math

import pytest
import torch
import torch.nn.functional as F

from burnlike.data import TokenWindowBatch
from burnlike.models.gpt import Gpt, GptConfig
from burnlike.record import CompactRecorder
from burnlike.train import SequenceOutput, TrainOutput


def small(**changes) -> Gpt:
    torch.manual_seed(0)
    return GptConfig(vocab_size=13, **{"block_size": 8, "n_layer": 2, "n_head": 2, "n_embd": 16, **changes}).init()


def test_the_cpu_recipes_model_has_nanogpts_size_and_shares_the_embedding_with_the_head():
    model = GptConfig(vocab_size=65).init()
    # nanoGPT prints "number of parameters: 0.80M" (its parameters without the position embedding)
    assert sum(p.numel() for p in model.parameters()) - 64 * 128 == 795_904
    assert model.lm_head.weight is model.token_embedding.weight
    assert all(m.bias is None for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.LayerNorm)))


def test_init_is_gpt2s_scaled_normal():
    torch.manual_seed(0)
    model = GptConfig(vocab_size=500, block_size=64, n_layer=8, n_embd=256, bias=True).init()
    assert model.blocks[0].attn.qkv.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert model.blocks[3].mlp.proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.02)
    assert model.blocks[3].attn.proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.02)
    assert model.token_embedding.weight.std().item() == pytest.approx(0.02, rel=0.02)
    with torch.no_grad():
        assert model.blocks[0].mlp.fc.bias.abs().max().item() == 0.0 and model.ln_f.weight.min().item() == 1.0


def test_a_position_sees_only_the_tokens_before_it():
    model = small().eval()
    tokens = torch.randint(0, 13, (2, 8))
    changed = tokens.clone()
    changed[:, 5] = (changed[:, 5] + 1) % 13
    a, b = model(tokens), model(changed)
    assert torch.equal(a[:, :5], b[:, :5]) and not torch.allclose(a[:, 5:], b[:, 5:])
    with pytest.raises(ValueError, match="a sequence of 9 tokens is longer than the block size 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_the_steps_loss_is_the_next_tokens_cross_entropy():
    model = small()
    inputs, targets = torch.randint(0, 13, (3, 8)), torch.randint(0, 13, (3, 8))
    out = model.train_step(TokenWindowBatch(inputs, targets))
    assert isinstance(out, TrainOutput) and isinstance(out.item, SequenceOutput) and out.model is model
    logits = model(inputs)
    expected = F.cross_entropy(logits.reshape(-1, 13), targets.reshape(-1))
    assert out.item.logits.shape == (3, 8, 13) and torch.allclose(out.item.loss, expected)
    valid = model.valid_step(TokenWindowBatch(inputs, targets))
    assert torch.allclose(valid.loss, expected) and valid.targets is targets


def test_generate_appends_the_tokens_asked_for_in_eval_mode_and_keeps_the_models_mode():
    model = small(dropout=0.5).train()
    seq = model.generate([1, 2, 3], 20, generator=torch.Generator().manual_seed(5))
    assert seq.shape == (23,) and seq[:3].tolist() == [1, 2, 3] and model.training
    again = model.generate([1, 2, 3], 20, generator=torch.Generator().manual_seed(5))
    assert torch.equal(seq, again)  # dropout off while sampling: the draws alone decide
    batch = model.eval().generate(torch.tensor([[1], [2]]), 4)
    assert batch.shape == (2, 5) and not model.training


def test_top_k_of_one_is_greedy_over_the_last_block_size_tokens():
    model = small().eval()
    prompt = torch.randint(0, 13, (12,), generator=torch.Generator().manual_seed(3)).tolist()  # longer than 8
    seq = model.generate(prompt, 6, top_k=1, temperature=0.5)
    tokens = list(prompt)
    for _ in range(6):
        context = torch.tensor([tokens[-8:]])
        tokens.append(int(model(context)[0, -1].argmax()))
    assert seq.tolist() == tokens


def test_generate_refuses_what_it_cannot_sample():
    model = small()
    with pytest.raises(ValueError, match="temperature must be > 0, got 0"):
        model.generate([1], 3, temperature=0)
    with pytest.raises(ValueError, match="the prompt needs at least one token"):
        model.generate([], 3)


def test_a_gpt_without_biases_round_trips_through_burns_records(tmp_path):
    model, other = small(), small(n_layer=2)
    torch.nn.init.normal_(other.token_embedding.weight)
    path = model.save_file(tmp_path / "gpt", CompactRecorder())
    other.load_file(path, CompactRecorder())
    for (name, a), b in zip(model.state_dict().items(), other.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4, msg=name)  # f16 in the record
    assert other.lm_head.weight is other.token_embedding.weight


@pytest.mark.parametrize(("changes", "message"), [
    ({"n_embd": 10, "n_head": 4}, "n_embd=10 must be a multiple of n_head=4"),
    ({"n_layer": 0}, "GptConfig.n_layer must be an integer >= 1, got 0"),
    ({"dropout": 1.0}, r"GptConfig.dropout must be in \[0, 1\), got 1.0"),
])
def test_the_config_refuses_a_model_it_cannot_build(changes, message):
    with pytest.raises(ValueError, match=message):
        GptConfig(vocab_size=5, **changes).init()
