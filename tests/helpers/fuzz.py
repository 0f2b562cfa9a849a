"""Valid records of every format and precision, and randomly corrupted copies of them: the fuzz test's
and the fuzz benchmark's cases (benchmarks/fuzz_records.py runs many more)."""

from __future__ import annotations

import gzip
import os
import random
import time
from pathlib import Path

import torch

from burnlike.record import BinFileRecorder, HalfPrecisionSettings, RecorderCheckpointIO, RecordError
from burnlike.record.format import registry
from tests.helpers.burn_mnist_model import BurnMnist
from tests.helpers.records import BURN, FILES, Net, randomised


def valid_files(tmp_path: Path) -> list[tuple[Path, object, type]]:
    """One distinct file per recorder × precision (and Burn 0.19 layout), and a training checkpoint
    per recorder: every format the decoders read is fuzzed."""
    net = randomised(Net())
    out: list[tuple[Path, object, type]] = []
    for cls in registry.FILE_RECORDERS:
        for precision, settings in registry.PRECISIONS.items():
            for version in ("0.21.0", "0.19.0"):
                recorder = cls(settings, burn_version=version)
                path = net.save_file(tmp_path / f"m-{cls.__name__}-{precision}-{version}", recorder)
                out.append((path, recorder, Net))
    ckpt = {"state_dict": net.state_dict(), "pytorch-lightning_version": "2", "epoch": 1,
            "optimizer_states": [{"state": {0: {"step": torch.tensor(1.0), "exp_avg": torch.randn(5, 4)}},
                                  "param_groups": [{"betas": (0.9, 0.99), "params": [0]}]}],
            "hyper_parameters": {"lr": 1e-3, "name": "x", 3: None}}
    for cls in registry.FILE_RECORDERS:
        io = RecorderCheckpointIO(cls(HalfPrecisionSettings))
        path = tmp_path / f"ckpt-{cls.__name__}.{cls.extension}"
        io.save_checkpoint(ckpt, path)
        out.append((path, io, Net))
    if BURN.is_dir():
        out.append((FILES["0.21.0"], BinFileRecorder(), BurnMnist))
    assert len({path for path, _, _ in out}) == len(out)  # distinct files: none overwrote another
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    """`data` corrupted at random: bytes flipped, cut short, junk inserted or huge lengths declared."""
    b = bytearray(data)
    choice = rng.random()
    if choice < 0.35 and b:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif choice < 0.6:  # truncate
        b = b[: rng.randrange(len(b) + 1)]
    elif choice < 0.8 and b:  # insert junk
        pos = rng.randrange(len(b))
        b[pos:pos] = os.urandom(rng.randint(1, 16))
    else:  # huge declared lengths: overwrite a few bytes with 0xff / msgpack length prefixes
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(max(1, len(b) - 5))
            b[pos : pos + 5] = rng.choice([b"\xdb\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff", b"\xfd\xff\xff\xff\xff"])
    return bytes(b)


def fuzz_case(files: list[tuple[Path, object, type]], i: int, rng: random.Random, tmp_path: Path
              ) -> tuple[bool, float]:
    """Mutate file `i % len(files)` and load it: (whether RecordError refused it, seconds the load
    took). Any other exception propagates (benchmarks/fuzz_records.py runs this too)."""
    path, reader, model_cls = files[i % len(files)]
    data = path.read_bytes()
    if path.name.endswith(".gz") and rng.random() < 0.5:  # mutate inside the gzip layer too
        data = gzip.compress(mutate(gzip.decompress(data), rng), mtime=0)
    else:
        data = mutate(data, rng)
    target = tmp_path / f"fuzz-{path.name}"
    target.write_bytes(data)
    model = model_cls()
    start = time.perf_counter()
    try:
        if isinstance(reader, RecorderCheckpointIO):
            reader.load_checkpoint(target)
        else:
            model.load_file(target, reader)
    except RecordError:
        return True, time.perf_counter() - start
    return False, time.perf_counter() - start


