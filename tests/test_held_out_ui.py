"""What a person sees (held-out findings): Stop is no verdict, a failed run stays the panel's run, wrong
arguments fail when the panel is made, the SplitBuilder says it is working and splits each setting once,
plotly.js stays in a saved notebook when its cell runs again, and %train on a model a panel trains is a
one-line UsageError."""
import threading

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from IPython.core.error import UsageError

import trainbook as tb
from trainbook import figures, live, widgets
from trainbook.magics import Checklist
from trainbook.optim import LRFinder
from helpers import blobs
from test_widgets import _pressing_stop_at as pressing_stop_at


def data(n=640):
    X, y = blobs(n=n)
    return (tb.TensorLoader(X, y, batch_size=32, shuffle=True),
            tb.TensorLoader(X[:128], y[:128], batch_size=64))


def panel(model=None, **kw):
    torch.manual_seed(0)
    dl, dv = data()
    model = model or nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    return tb.TrainPanel(model, dl, dv, loss_fn=nn.functional.cross_entropy,
                         config=tb.TrainConfig(lr=1e-2, device="cpu", **kw), metrics="accuracy")


# --- 1. Find LR then Stop: no suggestion from a sweep cut short ------------------------------------------
def test_find_lr_stopped_says_so_and_suggests_nothing():
    p = panel()
    p.loss_fn = pressing_stop_at(p, 10)
    p.lr_button.click(); p.wait()
    assert p.error is None and p.lr_finder.stopped
    assert "stopped" in p.status.value and "suggested lr: <b>" not in p.status.value
    assert list(p.figure.data[0].x) == p.lr_finder.lrs  # what was measured is still drawn
    # however lr_find reports it (a suggestion kept, or None as documented), a stopped sweep suggests nothing
    for suggestion in (2.85e-06, None):
        text = widgets.lr_status(LRFinder([1e-7, 1e-6, 1e-5], [1.0, 0.9, 0.8], suggestion, True), 1e-3)
        assert "stopped" in text and "2.85e-06" not in text
    assert "no suggested lr" in widgets.lr_status(LRFinder([1e-7], [1.0], None, False), 1e-3)
    assert "suggested lr: <b>6.58e-02" in widgets.lr_status(LRFinder([1e-7], [1.0], 0.0658, False), 1e-3)


# --- 2. Overfit then Stop: neither passed nor failed ---------------------------------------------------
def test_overfit_stopped_is_no_verdict():
    p = panel()
    p.loss_fn = pressing_stop_at(p, 5)
    p.overfit_button.click(); p.wait()
    assert p.error is None and p.sanity.stopped and not p.sanity.passed
    assert "FAILED" not in p.status.value and "stopped" in p.status.value
    assert "(stopped)" in p.figure.data[0].name  # the curve's legend says so too, not "failed"


def test_checklist_keeps_the_overfit_step_when_a_test_is_stopped():
    cl = Checklist("toy", "y", "valid_accuracy", threshold=0.9)
    try:
        cl.hear("overfit_batch", tb.SanityReport(True, []))
        cl.hear("overfit_batch", tb.SanityReport(False, [], stopped=True))  # stopped: no verdict
        assert cl.done["overfit"] is True and cl.notes["overfit"] == "passed"
        cl.hear("overfit_batch", tb.SanityReport(False, []))  # a finished test that failed still un-ticks it
        assert cl.done["overfit"] is False
    finally:
        cl.close()


# --- 3. A Train that raises: the failed run is the panel's run, the error says what and where -------------
class Boom(nn.Module):
    def __init__(self):
        super().__init__()
        self.l, self.n = nn.Linear(8, 3), 0
    def forward(self, x):
        self.n += 1
        if self.n == 30: raise RuntimeError("boom at call 30")
        return self.l(x)


def test_train_that_raises_keeps_the_failed_run_and_shows_where():
    p = panel(Boom(), epochs=3)
    p.train_button.click(); p.wait()
    assert isinstance(p.error, RuntimeError)
    assert p.run is not None and p.run.stopped == "failed" and p.run is tb.last_run()
    assert "RuntimeError: boom at call 30" in p.status.value
    assert "test_held_out_ui.py" in p.status.value and "in forward" in p.status.value  # where it was raised


# --- 7. Wrong arguments fail when the panel is made, naming the argument ----------------------------------
@pytest.mark.parametrize("kw, named", [
    (dict(loss_fn="cross_entropy"), "loss_fn"),
    (dict(config={"epochs": 1}), "config"),
    (dict(model=lambda x: x), "model"),
    (dict(metrics="acuracy"), "acuracy"),
    (dict(dl_train=torch.randn(64, 8)), "dl_train")])
def test_panel_checks_its_arguments_when_made(kw, named):
    dl, _ = data()
    args = {**dict(model=nn.Linear(8, 3), dl_train=dl, loss_fn=nn.functional.cross_entropy), **kw}
    with pytest.raises((TypeError, ValueError), match=named):
        tb.TrainPanel(**args)


# --- 4. SplitBuilder: a working status before the work, each setting split once ---------------------------
def test_split_builder_says_it_is_splitting_and_splits_each_setting_once(monkeypatch):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "y": rng.integers(0, 2, 300)})
    real, statuses, builder = widgets.make_splits, [], []
    def recording(frame, **p):  # what the status said while make_splits ran
        statuses.append(builder[0].status.value if builder else "")
        return real(frame, **p)
    monkeypatch.setattr(widgets, "make_splits", recording)
    sb = tb.SplitBuilder(df, target="y")
    builder.append(sb)
    assert len(statuses) == 1
    sb.seed.value = 1
    assert len(statuses) == 2 and "splitting 300 rows" in statuses[-1]  # shown while the split is made
    sb.seed.value = 0  # back to a setting shown before: not split again
    assert len(statuses) == 2 and sb.splits.params["seed"] == 0 and "stratified" in sb.status.value
    assert len(sb.chart.data) == 2  # its class-balance bars are drawn again
    assert not sb.valid_size.continuous_update and not sb.n_folds.continuous_update  # a drag splits once


# --- 5. plotly.js comes back when the cell that held it runs again --------------------------------------
class FakeShell:
    "What plotlyjs_script reads of a kernel: the message being handled."
    parent_header: dict = {}


def executing(shell, msg_id, code, cell_id=None, deleted=()):
    meta = {"cellId": cell_id, "deletedCells": list(deleted)} if cell_id else {}
    shell.parent_header = {"header": {"msg_type": "execute_request", "msg_id": msg_id},
                           "content": {"code": code}, "metadata": meta}


@pytest.fixture
def kernel(monkeypatch):
    import IPython
    shell = FakeShell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    for key, value in dict(sent=False, owner=None, cell=None, execution=None).items():
        monkeypatch.setitem(live._PLOTLYJS, key, value)
    return shell


def test_plotlyjs_follows_a_cell_run_again_by_its_code(kernel):
    "nbclient sends no cell id: a cell is known by its code; the carrier cell run again carries plotly.js."
    executing(kernel, "m1", "run = tb.fit(...)")
    assert live.plotlyjs_script() != ""  # the first figure carries it
    assert live.plotlyjs_script() == ""  # a second figure in the same cell does not
    executing(kernel, "m2", "run.plot()")
    assert live.plotlyjs_script() == ""  # another cell: the copy above serves
    executing(kernel, "m3", "run = tb.fit(...)")  # the carrier runs again: its output is cleared
    assert 'data-trainbook="plotly.js"' in live.plotlyjs_script()
    assert live.plotlyjs_script() == ""


def test_plotlyjs_follows_cell_ids_and_deleted_cells(kernel):
    executing(kernel, "m1", "a", cell_id="c1")
    assert live.plotlyjs_script() != ""
    executing(kernel, "m2", "a", cell_id="c2")  # same code, another cell (the front end says so)
    assert live.plotlyjs_script() == ""
    executing(kernel, "m3", "b", cell_id="c3", deleted=["c1"])  # the carrier was deleted
    assert live.plotlyjs_script() != ""
    executing(kernel, "m4", "b2", cell_id="c3")  # edited and run again: its id says it is the same cell
    assert live.plotlyjs_script() != ""


def test_a_panel_shown_again_carries_plotlyjs_on_its_first_click(kernel):
    "A panel's cell run again makes a new panel: its first re-rendered snapshot (a click) carries plotly.js."
    executing(kernel, "m1", "panel = tb.TrainPanel(...); panel", cell_id="p")
    first = panel()
    first.display_cell = figures.running_cell()[:2]
    kernel.parent_header = {}  # a click: a comm message, no cell
    assert live.plotlyjs_script(owner=first) != ""
    assert live.plotlyjs_script(owner=first) != ""  # it re-renders its own output: it keeps its copy
    executing(kernel, "m2", "panel = tb.TrainPanel(...); panel", cell_id="p")
    second = panel()
    second.display_cell = figures.running_cell()[:2]
    kernel.parent_header = {}
    assert live.plotlyjs_script(owner=second) != ""


# --- 6. %train on a model another thread trains: a one-line UsageError -----------------------------------
def test_train_magic_on_a_model_held_elsewhere_is_a_usage_error():
    from IPython.core.interactiveshell import InteractiveShell
    from trainbook.batch import training_lock
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("%load_ext trainbook", store_history=False)
        dl, _ = data()
        model = nn.Linear(8, 3)
        shell.user_ns.update(model=model, dl=dl)
        held, release = threading.Event(), threading.Event()
        def train_elsewhere():
            with training_lock(model, "training"):
                held.set()
                release.wait()
        t = threading.Thread(target=train_elsewhere)
        t.start()
        held.wait()
        try:
            with pytest.raises(UsageError, match="already training"):
                shell.run_line_magic("train", "model dl --epochs 1 --no-live --loss cross_entropy")
        finally:
            release.set()
            t.join()
    finally:
        InteractiveShell.clear_instance()
