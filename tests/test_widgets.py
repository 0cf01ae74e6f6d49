"Widgets driven from Python: SplitBuilder's logic through its controls, TrainPanel's buttons including Stop mid-run."
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from sklearn.datasets import load_breast_cancer

import trainbook as tb
from trainbook.events import Callback
from helpers import blobs


@pytest.fixture(scope="module")
def frame():
    df = load_breast_cancer(as_frame=True).frame
    df["patient"] = np.arange(len(df)) // 3
    df["day"] = np.arange(len(df))
    return df


def test_split_builder_follows_its_controls(frame):
    sb = tb.SplitBuilder(frame)
    sb.target.value = "target"
    assert sb.splits.strategy == "stratified"
    sb.groups.value = "patient"
    assert sb.splits.strategy == "stratified_group"
    assert not set(frame.patient.iloc[sb.splits.train]) & set(frame.patient.iloc[sb.splits.valid])
    sb.strategy.value = "time"; sb.time.value = "day"; sb.gap.value = 3; sb.test_size.value = 0.2
    sp = sb.splits
    assert sp.strategy == "time" and frame.day.iloc[sp.valid].min() - frame.day.iloc[sp.train].max() > 3
    assert sb.copy() == ("splits = tb.make_splits(df, 'target', strategy='time', groups='patient', time='day', "
                         "test_size=0.2, gap=3)")
    assert "tb.make_splits" in sb.code.value
    again = tb.make_splits(frame, **sb.params())
    assert again.fingerprint == sp.fingerprint  # the copied call reproduces the split


def test_split_builder_shows_errors_without_raising(frame):
    sb = tb.SplitBuilder(frame, target="target")
    sb.strategy.value = "group"  # no groups column chosen yet
    assert sb.splits is None and "needs groups" in sb.error and "cannot split" in sb.status.value
    sb.groups.value = "patient"
    assert sb.splits is not None and sb.error is None


def panel(epochs=3, **kw):
    X, y = blobs(n=640)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    return tb.TrainPanel(model, tb.TensorLoader(X, y, batch_size=32, shuffle=True), tb.TensorLoader(X[:128], y[:128], batch_size=64),
                         loss_fn=nn.functional.cross_entropy, config=tb.TrainConfig(epochs=epochs, lr=1e-2, device="cpu", **kw),
                         metrics="accuracy")


def test_overfit_and_find_lr_buttons():
    p = panel()
    p.overfit_button.click(); p.wait()
    assert p.sanity.passed and "PASSED" in p.status.value
    p.lr_button.click(); p.wait()
    assert p.lr_finder is not None and "suggested lr" in p.status.value
    assert not p.busy and not p.train_button.disabled and p.stop_button.disabled


def test_train_button_runs_and_draws():
    p = panel()
    p.train_button.click(); p.wait()
    assert p.run.stopped == "completed" and p.error is None
    assert {"train loss", "valid loss"} <= {t.name for t in p.curves.figure.data}


def test_stop_during_a_run(tmp_path):
    "Stop pressed during step 5 (from the training thread): the run ends at the next boundary, 'interrupted', last.pt written."
    p = panel(epochs=50, checkpoint_dir=str(tmp_path))
    class PressStop(Callback):
        def after_step(self, state):
            if state.step == 5: p.stop_button.click()
    p.callbacks.append(PressStop())
    p.train_button.click(); p.wait()
    assert p.run.stopped == "interrupted" and p.run.step == 6
    assert torch.load(tmp_path / "last.pt", weights_only=True)["step"] == 6


def test_stop_right_after_train():
    p = panel(epochs=50)
    p.train_button.click(); p.stop_button.click(); p.wait()
    assert p.run.stopped == "interrupted" and p.run.step < 50 * 20
