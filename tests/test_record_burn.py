"""Interop with files Burn itself wrote, bincode round trips, and a fuzz test of every decoder."""

import gzip
import os
import random
import time
from pathlib import Path

import msgpack
import numpy as np
import pytest
import torch
from burn_mnist_model import BurnMnist
from test_record import Net, randomised

from burnlike.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    RecorderCheckpointIO,
    RecordError,
)
from burnlike.record.format import registry

SHARED = Path(os.environ.get("BURNLIKE_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
BURN = SHARED / "burn"
FILES = {"0.19.0": BURN / "mnist-inference-web-v0.19.1.bin", "0.21.0": BURN / "mnist-inference-web-v0.21.0.bin"}
needs_burn = pytest.mark.skipif(not BURN.is_dir() or not (SHARED / "MNIST").is_dir(),
                                reason="Burn's record files / MNIST not present")


def read_idx(path: Path) -> np.ndarray:
    """An MNIST IDX file (gzip), parsed here so the test depends on nothing but numpy."""
    raw = gzip.decompress(path.read_bytes())
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@needs_burn
@pytest.mark.slow
def test_burn_written_mnist_model_loads_classifies_and_writes_back_byte_identical(tmp_path):
    models = {v: BurnMnist().load_file(path, BinFileRecorder()).eval() for v, path in FILES.items()}
    for a, b in zip(models["0.19.0"].state_dict().values(), models["0.21.0"].state_dict().values()):
        assert torch.equal(a, b)  # both layouts hold the same tensors
    raw = SHARED / "MNIST" / "raw"
    images = torch.from_numpy(read_idx(raw / "t10k-images-idx3-ubyte.gz").astype(np.float32))
    labels = torch.from_numpy(read_idx(raw / "t10k-labels-idx1-ubyte.gz").astype(np.int64))
    with torch.no_grad():
        logits = torch.cat([models["0.21.0"](((x / 255) - 0.1307) / 0.3081) for x in images.split(2000)])
    assert (logits.argmax(-1) == labels).sum().item() == 9942  # Burn's own accuracy: 99.42 %
    for version, model in models.items():
        out = model.save_file(tmp_path / version, BinFileRecorder(burn_version=version))
        assert out.read_bytes() == FILES[version].read_bytes(), version


@needs_burn
def test_burn_file_into_the_wrong_model_is_a_clear_error():
    with pytest.raises(RecordError, match="mnist-inference-web"):
        Net().load_file(FILES["0.21.0"], BinFileRecorder())


@pytest.mark.parametrize("recorder_cls", [BinFileRecorder, BinGzFileRecorder])
@pytest.mark.parametrize("settings", [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings])
@pytest.mark.parametrize("version", ["0.19.0", "0.21.0"])
def test_bincode_round_trip(tmp_path, recorder_cls, settings, version):
    src, dst = randomised(Net()), Net()
    path = src.save_file(tmp_path / "m", recorder_cls(settings, burn_version=version))
    dst.load_file(path, recorder_cls())
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        if not name.endswith("num_batches_tracked"):
            expected = a.half().float() if settings is HalfPrecisionSettings else a
            assert torch.equal(expected, b), name


def test_any_recorder_and_precision_loads_into_any_dtype(tmp_path):
    src = randomised(Net())
    path = src.save_file(tmp_path / "m", CompactRecorder())
    dst = Net().double()
    dst.load_file(path, CompactRecorder())
    assert dst.embed.weight.dtype == torch.float64
    assert torch.equal(dst.embed.weight, src.embed.weight.half().double())


def test_module_load_file_accepts_a_training_checkpoint(tmp_path):
    src = randomised(Net())
    ckpt = {"state_dict": {f"model.{k}": v for k, v in src.state_dict().items()}, "pytorch-lightning_version": "2"}
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(ckpt, tmp_path / "model-3.mpk")
    dst = Net().load_file(tmp_path / "model-3.mpk", DefaultRecorder())
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), dst.state_dict().values()))


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


FUZZ_CASES = int(os.environ.get("BURNLIKE_FUZZ_CASES", "2100"))


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


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_fuzz_only_record_errors(tmp_path):
    rng = random.Random(1234)
    files = valid_files(tmp_path)
    assert FUZZ_CASES >= len(files)  # every file fuzzed
    raised = 0
    slowest = 0.0
    for i in range(FUZZ_CASES):
        refused, seconds = fuzz_case(files, i, rng, tmp_path)  # anything but RecordError fails the test
        raised += refused
        slowest = max(slowest, seconds)
    assert raised > FUZZ_CASES // 2  # most mutations are detected, none crash
    assert slowest < 5.0  # no input makes the decoder hang


def test_msgpack_file_never_uses_ext_or_pickle(tmp_path):
    path = randomised(Net()).save_file(tmp_path / "m", CompactRecorder())
    msgpack.unpackb(path.read_bytes(), raw=False, ext_hook=lambda code, data: pytest.fail("ext type used"))


@pytest.mark.slow
def test_loads_and_saves_leave_no_reference_cycles(tmp_path):
    """A cycle keeps a load's whole file buffer (or a save's scratch buffers and file) alive until
    the next full collection: a process loading many records (the fuzz benchmark: +66 MB over 90k
    cases) grew for that alone. The stdlib JSON encoder's own closures may cycle; nothing of ours."""
    import gc
    import io as stdio

    heavy = (torch.Tensor, memoryview, bytes, bytearray, np.ndarray, stdio.IOBase)

    def ours(o: object) -> bool:
        return isinstance(o, heavy) or type(o).__module__.startswith("burnlike")

    files = valid_files(tmp_path)
    net = randomised(Net())

    def load_and_save(path: Path, reader: object, model_cls: type) -> None:
        if isinstance(reader, RecorderCheckpointIO):
            reader.load_checkpoint(path)
        else:
            model_cls().load_file(path, reader)
            net.save_file(tmp_path / f"again-{path.name}", reader)

    for args in files:  # warm: first-time imports and caches make garbage of their own
        load_and_save(*args)
    kept: dict[str, list[str]] = {}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for args in files:
            load_and_save(*args)
            gc.collect()
            if found := sorted({type(o).__name__ for o in gc.garbage if ours(o)}):
                kept[args[0].name] = found
            gc.garbage.clear()
    finally:
        gc.set_debug(0)
        if was_enabled:
            gc.enable()
    assert not kept, f"objects held in reference cycles, per file: {kept}"
