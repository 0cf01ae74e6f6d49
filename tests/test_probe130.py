"""Probe 130: a Ctrl-C at the caller of a launch on Ray is passed on to the workers, whose `fit` ends its run after a
step all ranks agree on (last.pt and run.json 'interrupted', the folder's lock given back), as torchrun's launch does:
in a plain script the caller gets a KeyboardInterrupt carrying rank 0's run, in a notebook the run, and a resume from
the folder gives the uninterrupted run's weights. Spark's fit_xgboost says what a Ctrl-C stopped."""
import _thread, importlib.util, json, sys, tempfile, threading, time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import distributed, ray_engine
from helpers import executing

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")


def train(batch, folder=None, marker=None, epochs=30, resume=None):
    "A small classifier; rank 0 writes `marker` once 4 steps are done (then each step sleeps: time to press)."
    import time
    import torch
    import torch.distributed as dist
    from torch import nn
    import trainbook as tb
    torch.set_num_threads(1)

    class Mark(tb.Callback):
        def after_step(self, state):
            if marker is None: return
            if state.step >= 4 and (not dist.is_initialized() or dist.get_rank() == 0): Path(marker).write_text("4")
            time.sleep(0.05)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(96, 5, generator=g)
    y = (X[:, 0] - X[:, 1] > 0).long()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    return tb.fit(model, tb.TensorLoader(X, y, batch_size=batch, shuffle=True, seed=1), callbacks=[Mark()],
                  loss_fn=nn.functional.cross_entropy, live=False, resume=resume,
                  config=tb.TrainConfig(epochs=epochs, lr=5e-2, device="cpu", checkpoint_dir=folder,
                                        checkpoint_every=2))


def press_when(path):
    "Ctrl-C at the caller (what a terminal or a notebook's interrupt does) once `path` exists."
    def go():
        deadline = time.monotonic() + 300
        while not Path(path).exists() and time.monotonic() < deadline: time.sleep(0.05)
        _thread.interrupt_main()
    threading.Thread(target=go, daemon=True).start()


def weights(run): return torch.cat([p.detach().flatten() for p in run.model.parameters()])


needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")


@pytest.fixture(scope="module")
def local_ray():
    import ray
    ray_engine.init_local(num_cpus=2)
    yield ray
    ray.shutdown()


@needs_ray
def test_a_ctrl_c_at_a_ray_launch_ends_the_workers_runs_and_resumes_exactly(tmp_path, local_ray):
    "Before: a bare KeyboardInterrupt, the workers aborted mid-step, run.json 'running' at its last epoch end."
    folder = tmp_path / "run"
    press_when(tmp_path / "step4")
    with pytest.raises(KeyboardInterrupt) as caught:
        tb.launch(train, 16, str(folder), str(tmp_path / "step4"), engine="ray", num_workers=2, live=False)
    run = getattr(caught.value, "run", None)
    assert run is not None, str(caught.value)
    assert run.stopped == "interrupted" and 4 <= run.step < 30 * 3
    assert f"resume={str(folder)!r}" in str(caught.value) and tb.last_run() is run
    saved = json.loads((folder / "run.json").read_text())
    assert (saved["stopped"], saved["step"]) == ("interrupted", run.step)
    assert torch.load(folder / "last.pt", weights_only=True)["step"] == run.step
    assert not (folder / ".trainbook-run").exists()  # the folder's lock given back
    assert local_ray.available_resources().get("CPU") == 2.0  # the workers' CPUs free when it comes
    with pytest.raises(KeyboardInterrupt, match="launch not started: a Ctrl-C stopped a run earlier"):
        tb.launch(train, 16, engine="ray", num_workers=2, live=False)  # the script stops, as after fit's
    tb.guard.forget_interrupt()
    # 2 workers of batch 16 take one process's batches of 32: resumed there, the uninterrupted run's weights
    resumed = train(32, str(folder), resume=str(folder))
    whole = train(32)
    assert resumed.stopped == "completed" and resumed.step == whole.step
    assert torch.allclose(weights(resumed), weights(whole), atol=1e-5)


@needs_ray
def test_in_a_notebook_a_ray_launch_a_ctrl_c_stopped_returns_rank_0s_run(tmp_path, local_ray, kernel):
    executing(kernel, "cell 1", datetime.now(timezone.utc))
    folder = tmp_path / "run"
    press_when(tmp_path / "step4")
    run = tb.launch(train, 16, str(folder), str(tmp_path / "step4"), engine="ray", num_workers=2, live=False)
    assert isinstance(run, tb.Run) and run.stopped == "interrupted" and tb.last_run() is run
    assert json.loads((folder / "run.json").read_text())["stopped"] == "interrupted"
    with pytest.raises(KeyboardInterrupt, match="launch not started"):  # the rest of the cell does not train
        tb.launch(train, 16, engine="ray", num_workers=2, live=False)
    executing(kernel, "cell 2", datetime.now(timezone.utc))  # the next cell does
    assert tb.launch(train, 16, epochs=1, engine="ray", num_workers=2, live=False).stopped == "completed"


def test_in_a_notebook_a_torchrun_launch_a_ctrl_c_stopped_returns_rank_0s_run(tmp_path, kernel, monkeypatch):
    "As fit in a notebook: the run comes back (before: a KeyboardInterrupt in the cell, the run only in last_run())."
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    executing(kernel, "cell 1", datetime.now(timezone.utc))
    folder = tmp_path / "run"
    press_when(tmp_path / "step4")
    run = tb.launch(train, 16, str(folder), str(tmp_path / "step4"), nprocs=2, live=False)
    assert isinstance(run, tb.Run) and run.stopped == "interrupted" and tb.last_run() is run
    assert json.loads((folder / "run.json").read_text())["stopped"] == "interrupted"


def test_stop_agreed_reads_the_callers_flag_outside_a_process_group():
    try:
        assert distributed.stop_agreed() is False
        distributed.STOP_ASKED.set()
        assert distributed.stop_agreed() is True
    finally: distributed.STOP_ASKED.clear()


def test_spark_fit_xgboost_a_ctrl_c_says_what_it_stopped(tmp_path, monkeypatch):
    "Before: a bare KeyboardInterrupt() from py4j's socket read, no word of the run or its folder."
    pytest.importorskip("pyspark")
    pytest.importorskip("xgboost")
    import numpy as np, pandas as pd
    from trainbook import spark_models
    from trainbook.spark import spark_session
    spark = spark_session(2)
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    df["y"] = (df.a + rng.normal(size=len(df)) > 0).astype(int)
    sdf = spark.createDataFrame(df)
    splits = tb.make_splits(sdf, target="y", seed=0)

    class Cancelled:  # the Spark job cancelled by a Ctrl-C while XGBoost trains
        def fit(self, features): raise KeyboardInterrupt
    monkeypatch.setattr(spark_models, "_estimator", lambda *a, **k: Cancelled())
    with pytest.raises(KeyboardInterrupt, match="fit_xgboost: a Ctrl-C stopped XGBoost on Spark") as caught:
        tb.fit_xgboost(sdf, "y", splits, num_rounds=5, early_stopping=None, live=False, checkpoint_dir=tmp_path)
    assert getattr(caught.value, "run", None) is None and str(tmp_path) in str(caught.value)
    assert not (tmp_path / ".trainbook-run").exists()


@pytest.mark.parametrize("timeout", [0, -5, "60"])
def test_launch_refuses_a_timeout_that_is_not_a_positive_number_before_any_worker(timeout, monkeypatch):
    "Before: timeout=0 started torchrun and its workers, then 'did not finish within timeout=0s'; '60' a TypeError."
    monkeypatch.setattr(distributed.subprocess, "Popen", lambda *a, **k: pytest.fail("a worker was started"))
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        tb.launch(train, 16, nprocs=2, timeout=timeout, live=False)


def slow_rank_1(folder, marker, out, linger):
    "Rank 1's batches come slowly (rank 0 waits for it in each step's all-reduce); after a Ctrl-C rank 1 lingers."
    import time
    import torch
    import torch.distributed as dist
    from torch import nn
    import trainbook as tb
    torch.set_num_threads(1)
    rank = dist.get_rank()

    class Slow:
        def __init__(self, dl): self.dl = dl
        def __len__(self): return len(self.dl)
        def __iter__(self):
            for batch in self.dl:
                if rank == 1: time.sleep(0.2)
                yield batch

    class Mark(tb.Callback):
        def after_step(self, state):
            if rank == 0 and state.step >= 3: Path(marker).write_text("3")
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2000, 4, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(0)
    try:
        tb.fit(nn.Linear(4, 2), Slow(tb.TensorLoader(X, y, batch_size=8)), loss_fn=nn.functional.cross_entropy,
               callbacks=[Mark()], live=False, config=tb.TrainConfig(epochs=5, device="cpu", checkpoint_dir=folder))
    except KeyboardInterrupt as e:
        Path(f"{out}.{rank}").write_text(f"{time.time()} {e.run.stopped} {e.run.step}")
        if rank == 1: time.sleep(linger)  # it takes its time to end (an upload, a slow disk)
        raise


def test_a_launch_ctrl_c_ends_every_ranks_run_at_one_step_without_waiting_for_a_slower_peer(tmp_path, monkeypatch):
    """Before: each rank got a SIGINT of its own; rank 1, slowed by its loader, stopped at once, while rank 0 sat in
    the next step's all-reduce until rank 1's process ended (20.9 s after the press when rank 1 lingered 15 s; killed
    at CTRL_C_GRACE past that). Now the ranks agree on the step (an all-reduce of the caller's stop) and both end."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    press_when(tmp_path / "step3")
    linger = 15
    with pytest.raises(KeyboardInterrupt) as caught:
        tb.launch(slow_rank_1, str(tmp_path / "run"), str(tmp_path / "step3"), str(tmp_path / "ended"), linger,
                  nprocs=2, live=False)
    assert caught.value.run.stopped == "interrupted"
    ended = {r: (tmp_path / f"ended.{r}").read_text().split() for r in (0, 1)}
    assert ended[0][1:] == ended[1][1:] == ["interrupted", str(caught.value.run.step)]  # one step on every rank
    assert float(ended[0][0]) < float(ended[1][0]) + linger - 5  # rank 0 did not wait for rank 1 to end
