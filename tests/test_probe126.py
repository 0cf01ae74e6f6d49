"""Probe 126: a Ctrl-C at `launch`'s caller (a terminal's, or a notebook's interrupt) is passed on to the workers,
whose `fit` ends its run after its step as in one process: the caller gets a KeyboardInterrupt carrying rank 0's run,
the run folder says 'interrupted' and holds last.pt at that step; workers that do not end within a bounded time,
or a second Ctrl-C, are killed as before."""
import _thread, json, os, signal, sys, tempfile, threading, time
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import distributed
from trainbook.distributed import launch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")


def slow_fit(folder, marker):
    "Each rank trains 40 epochs slowly; rank 0 writes `marker` once 3 steps are done."
    import time
    import torch
    import torch.distributed as dist
    from torch import nn
    import trainbook as tb
    torch.set_num_threads(1)

    class Slow(tb.Callback):
        def after_step(self, state):
            time.sleep(0.05)
            if dist.get_rank() == 0 and state.step == 3: Path(marker).write_text("3")
    g = torch.Generator().manual_seed(0)
    X = torch.randn(64, 4, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(0)
    return tb.fit(nn.Linear(4, 2), tb.TensorLoader(X, y, batch_size=8), loss_fn=nn.functional.cross_entropy,
                  callbacks=[Slow()], live=False,
                  config=tb.TrainConfig(epochs=40, lr=1e-2, device="cpu", checkpoint_dir=folder))


def deaf_sleeper(marker):
    "Each rank ignores SIGINT and sleeps: a Ctrl-C passed on does not end it."
    import signal, time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    Path(f"{marker}.{os.getpid()}").write_text("")
    time.sleep(600)


def press_when(path_glob, folder, presses=1, gap=0.5):
    "Ctrl-C at the caller (what a terminal or a notebook's interrupt does) once `path_glob` exists in `folder`."
    def go():
        deadline = time.monotonic() + 300
        while not list(Path(folder).glob(path_glob)) and time.monotonic() < deadline: time.sleep(0.05)
        for i in range(presses):
            if i: time.sleep(gap)
            _thread.interrupt_main()
    threading.Thread(target=go, daemon=True).start()


def alive(pid):
    try: stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError: return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_ctrl_c_at_the_caller_ends_the_workers_runs_and_gives_back_rank_0s(tmp_path, private_tmp):
    folder = tmp_path / "run"
    press_when("step3", tmp_path)
    with pytest.raises(KeyboardInterrupt) as caught:
        launch(slow_fit, str(folder), str(tmp_path / "step3"), nprocs=2, live=False)
    run = getattr(caught.value, "run", None)
    assert run is not None, str(caught.value)  # before: a bare KeyboardInterrupt, the workers SIGKILLed
    assert run.stopped == "interrupted" and 3 <= run.step < 40 * 4
    assert f"resume={str(folder)!r}" in str(caught.value)
    assert tb.last_run() is run
    saved = json.loads((folder / "run.json").read_text())
    assert (saved["stopped"], saved["step"]) == ("interrupted", run.step)  # before: 'running', at an epoch's end
    assert torch.load(folder / "last.pt", weights_only=True)["step"] == run.step
    assert not (folder / ".trainbook-run").exists()  # the folder's lock given back
    assert list(private_tmp.iterdir()) == []


def test_workers_that_do_not_end_are_killed_after_the_grace(tmp_path, private_tmp, monkeypatch):
    monkeypatch.setattr(distributed, "CTRL_C_GRACE", 1)
    press_when("deaf.*", tmp_path)
    with pytest.raises(KeyboardInterrupt, match="did not end their runs within 1s of it and were killed"):
        launch(deaf_sleeper, str(tmp_path / "deaf"), nprocs=2, live=False)
    pids = [int(p.suffix[1:]) for p in tmp_path.glob("deaf.*")]
    assert pids and not [p for p in pids if alive(p)]
    assert list(private_tmp.iterdir()) == []


def test_a_second_ctrl_c_kills_at_once(tmp_path, private_tmp, monkeypatch):
    monkeypatch.setattr(distributed, "CTRL_C_GRACE", 300)
    press_when("deaf.*", tmp_path, presses=2)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt) as caught:
        launch(deaf_sleeper, str(tmp_path / "deaf"), nprocs=2, live=False)
    assert time.monotonic() - started < 200  # not the grace: the second press
    assert "did not end their runs" not in str(caught.value)
    pids = [int(p.suffix[1:]) for p in tmp_path.glob("deaf.*")]
    assert pids and not [p for p in pids if alive(p)]


# ---- Spark: a Ctrl-C (or any failure) while fit_xgboost trains gives the run folder's lock back


def test_spark_fit_xgboost_interrupted_gives_its_folder_back(tmp_path, monkeypatch):
    "In a notebook the kernel outlives the Ctrl-C: its lock kept the folder busy, the next run went to version_1."
    pytest.importorskip("pyspark")
    pytest.importorskip("xgboost")
    import numpy as np, pandas as pd
    from trainbook import spark_models
    from trainbook.spark import spark_session
    spark = spark_session(2)
    try:
        rng = np.random.default_rng(0)
        df = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
        df["y"] = (df.a + rng.normal(size=len(df)) > 0).astype(int)
        sdf = spark.createDataFrame(df)
        splits = tb.make_splits(sdf, target="y", seed=0)
        real = spark_models._estimator
        class Cancelled:  # the Spark job cancelled by a Ctrl-C while XGBoost trains
            def fit(self, features): raise KeyboardInterrupt
        monkeypatch.setattr(spark_models, "_estimator", lambda *a, **k: Cancelled())
        with pytest.raises(KeyboardInterrupt):
            tb.fit_xgboost(sdf, "y", splits, num_rounds=5, early_stopping=None, live=False, checkpoint_dir=tmp_path)
        assert not (tmp_path / ".trainbook-run").exists()  # before: the living process's lock stayed
        monkeypatch.setattr(spark_models, "_estimator", real)
        run = tb.fit_xgboost(sdf, "y", splits, num_rounds=5, early_stopping=None, live=False, checkpoint_dir=tmp_path)
        assert Path(run.run_dir).resolve() == tmp_path.resolve() and run.stopped == "completed"
    finally:
        spark.stop()
