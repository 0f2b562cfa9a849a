"""Ready models: `mnist` is Burn's book guide model; `mlp` a small baseline for sweeps; `gpt` a
character language model (nanoGPT's)."""
