import signal
import sys
from pathlib import Path

import pytest
import torch

# One thread: the tests compare numbers, and two workers on two cores should not fight. The processes the tests start
# (kernels, Spark's JVM and Python workers, a Keras backend's subprocess) inherit one thread each and Spark's quick JIT
torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from child_env import set_child_defaults  # noqa: E402
set_child_defaults(1)

# Ctrl-C as a terminal gives it, however the suite was started: a shell that starts a command in the background
# (`make test &`, nohup) hands it SIGINT ignored, and Python then installs no KeyboardInterrupt for it, so the
# tests that press Ctrl-C (a real SIGINT, or `_thread.interrupt_main`) would wait for timeouts instead
if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def tmp_run(tmp_path):
    "A fresh run directory."
    d = tmp_path / "run"
    d.mkdir()
    return d
