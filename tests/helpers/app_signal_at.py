"""Child-process script: `train.py` as a user runs it, plus a SIGTERM the process sends itself after
global step N, so a test preempts the app at a chosen moment (mid-epoch, an epoch's last batches,
its validation) instead of wherever a timed signal lands.

    python tests/helpers/app_signal_at.py N [train.py overrides ...]
"""

import runpy
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the checkout: `tests.helpers`
from burnlike.train import LearnerBuilder  # noqa: E402
from tests.helpers.fit import SignalAfter  # noqa: E402

STEP = int(sys.argv.pop(1))
_build = LearnerBuilder.build


def build_with_signal(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
    self.callback(SignalAfter(STEP, signal.SIGTERM))
    return _build(self, *args, **kwargs)


LearnerBuilder.build = build_with_signal  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.argv[0] = str(REPO / "train.py")
    runpy.run_path(str(REPO / "train.py"), run_name="__main__")
