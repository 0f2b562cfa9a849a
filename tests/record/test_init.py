"""`burnlike.record` as a whole: the package's promise that decoding any input, in any format
and through any loader (module records, `load_checkpoint`, the Lightning plugin), raises only
`RecordError`, briefly, and never hangs; and that loads and saves leave nothing in reference
cycles. The cases span every recorder and precision (tests/helpers/fuzz.py, hostile.py)."""

from __future__ import annotations

import gc
import io
import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from burnlike.record import RecorderCheckpointIO, RecordError
from burnlike.record.error import MAX_MESSAGE
from tests.helpers.fuzz import fuzz_case, valid_files
from tests.helpers.hostile import CASES, LOADERS
from tests.helpers.records import Net, randomised

FUZZ_CASES = int(os.environ.get("BURNLIKE_FUZZ_CASES", "2100"))


# --- malformed input: RecordError only ---


@pytest.mark.parametrize("loader", list(LOADERS))
@pytest.mark.parametrize("case", list(CASES))
def test_every_loader_refuses_hostile_files_with_a_short_record_error(hostile: dict[str, Path], case: str, loader: str) -> None:
    try:
        LOADERS[loader](hostile[case])
    except RecordError as e:
        assert len(str(e)) <= MAX_MESSAGE + 50  # never megabytes of the file repeated
        assert "F" * 300 not in str(e)
        if CASES[case][1]:
            assert "refusing to decode" in str(e)  # the budget stopped it, not the end of the file
        if case.startswith(("dev-zero", "directory")):
            assert "only regular files" in str(e)
        if "F" * 100 in str(e):
            assert "(10,000,002 characters)" in str(e)  # quoted ~200 characters, and how long it was
        if "10MB" in case and loader == "Module.load_file":
            assert "(10,000,002 characters)" in str(e)  # the module's record checks reach the big string


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_fuzzed_records_and_checkpoints_raise_only_record_errors(tmp_path):
    rng = random.Random(1234)
    files = valid_files(tmp_path)
    assert FUZZ_CASES >= len(files)  # every file fuzzed
    raised = 0
    slowest = 0.0
    for i in range(FUZZ_CASES):
        refused, seconds = fuzz_case(files, i, rng, tmp_path)  # anything but RecordError fails the test
        raised += refused
        slowest = max(slowest, seconds)
    assert raised > FUZZ_CASES // 2  # most corrupted files are refused, none crash
    assert slowest < 5.0  # no input makes the decoder hang


# --- memory ---


@pytest.mark.slow
def test_loads_and_saves_leave_no_reference_cycles(tmp_path):
    """A cycle keeps a load's whole file buffer (or a save's scratch buffers and file) alive until
    the next full collection: a process loading many records (the fuzz benchmark: +66 MB over 90k
    cases) grew for that alone. The stdlib JSON encoder's own closures may cycle; nothing of ours."""
    heavy = (torch.Tensor, memoryview, bytes, bytearray, np.ndarray, io.IOBase)

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

    def held_in_cycles(batches: list[list[tuple[Path, object, type]]]) -> dict[str, list[str]]:
        """Each batch loaded and saved, then one full collection (a collection walks the whole heap:
        most of this test's time): the types of ours it found in cycles, by the batch's first file."""
        kept: dict[str, list[str]] = {}
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for batch in batches:
                for args in batch:
                    load_and_save(*args)
                gc.collect()
                if found := sorted({type(o).__name__ for o in gc.garbage if ours(o)}):
                    kept[batch[0][0].name] = found
                gc.garbage.clear()
        finally:
            gc.set_debug(0)
            if was_enabled:
                gc.enable()
        return kept

    for args in files:  # warm: first-time imports and caches make garbage of their own
        load_and_save(*args)
    if held_in_cycles([files]):  # all at once; then file by file, to name the files that leave cycles
        kept = held_in_cycles([[args] for args in files])
        assert not kept, f"objects held in reference cycles, per file: {kept}"
