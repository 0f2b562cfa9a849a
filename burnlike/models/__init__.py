"""Ready models: `mnist` is Burn's book guide model; `mlp` a small baseline for sweeps."""
