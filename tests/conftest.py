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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Each test starts as a fresh script would: a Ctrl-C that ended a run in an earlier test refuses no run here,
    forgotten before any of its fixtures is set up (a module fixture's launch was refused once, and its
    KeyboardInterrupt ended the whole session). In a plain script (pytest is one) `refuse_after_interrupt` stops every
    run after a Ctrl-C ended one, so a test that interrupts a run and then trains again (a resume) calls
    `trainbook.guard.forget_interrupt()` in between."""
    guard = sys.modules.get("trainbook.guard")  # (not imported for tests that never import trainbook)
    if guard is not None: guard.forget_interrupt()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    "A run refused after an earlier Ctrl-C, or a Ctrl-C out of a Recorder, fails its test, not the whole session."
    try:
        return (yield)
    except KeyboardInterrupt as err:
        if "not started: a Ctrl-C stopped a run earlier" in str(err):
            raise AssertionError("a run refused by the Ctrl-C rule (above): call trainbook.guard.forget_interrupt() "
                                 "between the interrupted run and the next") from err
        if getattr(err, "run", None) is not None:  # a Ctrl-C that ended a run goes on in a script (`stop_script`)
            raise AssertionError("a Ctrl-C that ended a run went on out of it (fit, a Recorder's with block), as it "
                                 "does in a plain script: expect it, with pytest.raises(KeyboardInterrupt) (its "
                                 ".run is the run), or run the cell in the `kernel` fixture") from err
        raise


@pytest.fixture
def kernel(monkeypatch):
    "A Jupyter kernel's shell as the Ctrl-C rule reads it (`helpers.executing` starts a cell run in it)."
    import IPython
    from helpers import FakeKernel
    from trainbook import guard
    shell = FakeKernel()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    for key in ("execution", "at"): monkeypatch.setitem(guard._CUT_SHORT, key, None)
    return shell


@pytest.fixture
def tmp_run(tmp_path):
    "A fresh run directory."
    d = tmp_path / "run"
    d.mkdir()
    return d


# `make test` runs the suite in two workers, one per core (pytest-xdist, `-n 2 --dist loadscope
# --no-loadscope-reorder`). The tests that start engines of several busy processes with timeouts (Ray, torchrun,
# JupyterLab with its kernel) run one after another in one worker, first, so that two of them never share the two cores
# and each keeps the margins its timeouts were sized on. Every other file is a scope of its own, handed by xdist to
# whichever worker runs low (a worker with two tests or fewer left takes the next file): the other worker starts on
# them at once, and the engines' worker joins when its lane is done, so the two end together without a hand-kept
# balance. The heaviest of them go first, longest first, so that no long file starts last and runs alone: measured
# with `--durations=0` (2026-12-03, in-tree: the docs tests ~170 s in `make test`, where the site is built, Spark 151 s,
# the Keras backends 70 s, the MLflow store 56 s; the rest under 35 s a file). The groups are the scheduler's scopes:
# xdist's own `xdist_group` marks do nothing under pytest 9.2 (xdist 3.8 writes them into `item._nodeid`, which
# pytest no longer reads)
ENGINES = ("browser/test_lab.py", "browser/test_panel.py", "browser/test_lab_restart.py", "browser/test_ray_live.py",
           "test_ray.py", "test_distributed.py", "test_shard_loader.py", "test_held_out_engines.py")
HEAVIEST = ("browser/test_docs.py", "test_spark.py", "test_keras_backends.py", "test_store.py", "test_diagnose.py",
            "test_jax.py", "test_tuning.py", "test_checkpoint.py", "test_widgets.py", "test_integrations.py",
            "test_tracking.py")


def lane(nodeid: str) -> str:
    "The scope of a test (its id, or its file's path under tests/): 'engines', or its file."
    path = nodeid.split("::", 1)[0].removeprefix("tests/")
    return "engines" if path in ENGINES else path


def order(nodeid: str) -> int:
    "Where a test's scope runs: the engines' lane first (0), the heaviest files in `HEAVIEST`'s order, the rest."
    scope = lane(nodeid)
    if scope == "engines": return 0
    return 1 + HEAVIEST.index(scope) if scope in HEAVIEST else 1 + len(HEAVIEST)


def pytest_collection_modifyitems(items):
    "The engines' tests first (the longest lane starts at once), the heaviest files next; a file keeps its order."
    items.sort(key=lambda item: order(item.nodeid))


if importlib.util.find_spec("xdist"):
    def pytest_xdist_make_scheduler(config, log):
        "xdist's scope scheduling with `lane` for scopes: a scope's tests go to one worker, in order."
        from xdist.scheduler import LoadScopeScheduling

        class Lanes(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str: return lane(nodeid)
        return Lanes(config, log)
