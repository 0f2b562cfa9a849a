"""Child-process script of tests/record/format/test_files.py: an async checkpoint save through
`RecorderCheckpointIO` that blocks halfway through its write, for the test to SIGKILL it there."""

import sys
import threading
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `tests.helpers`
from burnlike.record import NamedMpkFileRecorder, RecorderCheckpointIO  # noqa: E402
from tests.helpers.toy import Classifier  # noqa: E402


class HalfWriter(NamedMpkFileRecorder):
    """Writes half a record, announces it, then blocks: the test kills the process there."""

    block = False

    def encode(self, record, module, f) -> None:  # noqa: ANN001
        if not self.block:
            return super().encode(record, module, f)
        f.write(b"\x83" + b"\0" * 4096)
        f.flush()
        print("writing", flush=True)
        threading.Event().wait()


def main(path: str) -> None:
    torch.manual_seed(0)
    model = Classifier()
    io = RecorderCheckpointIO(HalfWriter(), async_save=True)
    io.save_checkpoint({"state_dict": model.state_dict(), "pytorch-lightning_version": "2.6", "global_step": 1}, path)
    io.wait()
    print("saved", flush=True)
    io.recorder.block = True
    with torch.no_grad():
        model.linear.weight.add_(1.0)
    io.save_checkpoint({"state_dict": model.state_dict(), "pytorch-lightning_version": "2.6", "global_step": 2}, path)
    sys.stdin.readline()  # the training thread goes on; the test kills the process


if __name__ == "__main__":
    main(sys.argv[1])
