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


# `make test` runs the suite in two workers (pytest-xdist, `-n 2 --dist loadgroup`; one per core). The tests that start
# engines of several busy processes (Ray, torchrun, Spark, JupyterLab with its kernel) run one after another in one
# worker, first, so that two of them never share the two cores and each keeps the margins its timeouts were sized on;
# the other worker takes every other file meanwhile, a file at a time (its module fixtures set up once)
ENGINES = ("browser/test_lab.py", "browser/test_panel.py", "browser/test_ray_live.py", "test_ray.py",
           "test_distributed.py", "test_shard_loader.py", "test_spark.py", "test_parquet.py")
HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): the tests of one group run in one worker, in order")


def pytest_collection_modifyitems(items):
    "Each test in its file's group, or in the engines' group; that group first (the longest lane starts at once)."
    def group(item):
        name = Path(str(item.fspath)).resolve().relative_to(HERE).as_posix()
        return "engines" if name in ENGINES else name
    for item in items: item.add_marker(pytest.mark.xdist_group(group(item)))
    items.sort(key=lambda item: group(item) != "engines")  # stable: each group keeps its order
