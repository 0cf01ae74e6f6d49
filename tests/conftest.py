import os
import signal

import pytest
import torch

# One thread: the tests compare numbers, and two workers on two cores should not fight. The processes the tests start
# (kernels, Spark's Python workers, a Keras backend's subprocess) inherit one thread each: two OpenMP pools of every
# core waiting on each other's threads made a notebook of small steps 13x slower beside another
torch.set_num_threads(1)
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ.setdefault(_name, "1")
# Spark's driver JVM (local mode: the executors too) with its quick JIT tier only: these sessions live seconds, and
# the optimizing compiler's threads took a third of the CPU of a Spark notebook (big_tables: 130 -> 83 CPU-s)
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell")

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
