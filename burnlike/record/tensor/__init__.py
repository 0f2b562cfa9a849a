"""Records, layer 1 — tensor bytes: Burn's `TensorData` codec, dtypes, precision settings and the
f16 policy, Burn's layouts (transpose/cast), and moving bytes between files and parameters.

torch and numpy only: nothing here knows a file format, a module tree or a checkpoint.
"""
