import importlib.util
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


# `make test` runs the suite in two workers, one per core (pytest-xdist, `-n 2 --dist loadscope
# --no-loadscope-reorder`). The tests that start engines of several busy processes with timeouts (Ray, torchrun,
# JupyterLab with its kernel) run one after another in one worker, first, so that two of them never share the two cores
# and each keeps the margins its timeouts were sized on; the other worker takes every other file meanwhile, a file at a
# time (its module fixtures set up once), Spark's too (local[2], no timeout: it balances the two workers). The groups
# are the scheduler's scopes: xdist's own `xdist_group` marks do nothing under pytest 9.2 (xdist 3.8 writes them into
# `item._nodeid`, which pytest no longer reads)
ENGINES = ("browser/test_lab.py", "browser/test_panel.py", "browser/test_ray_live.py", "test_ray.py",
           "test_distributed.py", "test_shard_loader.py", "test_held_out_engines.py")
# plain CPU tests that share the engines' worker, so that the two lanes end together: measured with `--durations=0`
# (2026-12-03, 17:30 UTC, after the XLA cache cut test_jax 92 s -> 33 s): engines and these four 510 s, the
# rest 463 s + the docs tests (~135 s in `make test`, where the site is built); test_keras_backends (48 s)
# moves across
BALANCE = ("test_checkpoint.py", "test_diagnose.py", "test_recorder.py", "test_tuning.py",
           "test_keras_backends.py")


def lane(nodeid: str) -> str:
    "The scope of a test (its id, or its file's path under tests/): 'engines', or its file."
    path = nodeid.split("::", 1)[0].removeprefix("tests/")
    return "engines" if path in ENGINES + BALANCE else path


def pytest_collection_modifyitems(items):
    "The engines' tests first (the longest lane starts at once); every file keeps its tests' order."
    items.sort(key=lambda item: lane(item.nodeid) != "engines")


if importlib.util.find_spec("xdist"):
    def pytest_xdist_make_scheduler(config, log):
        "xdist's scope scheduling with `lane` for scopes: a scope's tests go to one worker, in order."
        from xdist.scheduler import LoadScopeScheduling

        class Lanes(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str: return lane(nodeid)
        return Lanes(config, log)
