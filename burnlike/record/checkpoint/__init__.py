"""Records, layer 3 — training checkpoints: Lightning's checkpoint dict as a Burn record item
(tagged values, model weights at the recorder's precision), reading one back, taking a model's
weights out of a file of either kind, and the `RecorderCheckpointIO` plugin.

Only `plugin` imports Lightning (seconds of start-up), so inspecting a file or loading weights never does.
"""
