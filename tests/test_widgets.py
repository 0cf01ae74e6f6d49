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


def test_overfit_and_find_lr_buttons_draw_in_the_panels_figure():
    p = panel()
    p.overfit_button.click(); p.wait()
    assert p.sanity.passed and "PASSED" in p.status.value
    loss = p.sanity.history.series("loss")
    assert list(p.figure.data[0].y) == loss.tolist() and list(p.figure.data[0].x) == loss.index.tolist()
    assert p.figure.layout.yaxis.type == "log" and p.plot.children == (p.chart,)
    shown = p.chart.to_plotly_json()  # what the front end draws
    assert shown["data"][0]["name"].startswith("train loss on one batch")
    lo, hi = p.figure.layout.yaxis.range
    assert 10 ** lo <= loss.min() and loss.max() <= 10 ** hi
    overfit_fig = p.figure
    p.lr_button.click(); p.wait()
    assert p.lr_finder is not None and "suggested lr" in p.status.value
    assert list(p.figure.data[0].x) == p.lr_finder.lrs and list(p.figure.data[0].y) == p.lr_finder.losses
    assert p.figure.layout.xaxis.type == "log" and p.figure is not overfit_fig and len(p.chart.data) == 2  # the curve, the suggestion
    assert p.chart.layout.xaxis.type == "log" and p.chart.layout.yaxis.type == "linear"  # nothing stale from Overfit
    assert [s.x0 for s in p.figure.layout.shapes] == [p.lr_finder.suggestion]
    assert p.figure.layout.annotations[0].text.startswith("suggested")
    assert not p.busy and not p.train_button.disabled and p.stop_button.disabled


def test_a_fresh_panel_shows_a_placeholder_and_owns_one_live_figure():
    "Before any click: a placeholder, not empty axes; the live figure exists already (made on the main thread)."
    p = panel()
    assert p.plot.children == (p.placeholder,) and "press <b>Train</b>" in p.placeholder.value
    assert p.figure is None and len(p.live_figure.data) == 0
    assert "press <b>Train</b>" in p._repr_mimebundle_()["text/html"]


def test_train_first_then_others_reuse_the_live_figure_and_replace_the_chart():
    "Train as the first click draws in the figure made at start; Overfit replaces it; Train again reuses it, emptied."
    p = panel(epochs=2)
    live = p.live_figure
    p.train_button.click(); p.wait()
    assert p.error is None and p.plot.children == (live,) and p.figure is live
    first = {t.name for t in live.data}
    assert {"train loss", "valid loss"} <= first
    p.overfit_button.click(); p.wait()
    assert p.plot.children == (p.chart,) and p.live_figure is live
    p.train_button.click(); p.wait()
    names = [t.name for t in live.data]
    assert p.plot.children == (live,) and {"train loss", "valid loss"} <= set(names)  # emptied, then drawn anew
    assert len(names) == len(set(names))
    steps = [t for t in live.data if t.name == "train loss"][0].x
    assert len(steps) == p.run.step  # one run's points, not two


def test_buttons_sized_to_their_labels():
    p = panel()
    assert [b.description for b in p.buttons] == ["Overfit one batch", "Find LR", "Dry run", "Train", "Stop"]
    assert all(b.layout.width == "auto" and b.layout.min_width == "max-content" for b in p.buttons)


def test_dry_run_button_shows_the_report(monkeypatch):
    "The Dry run button calls trainbook.preflight.dry_run (faked here) with the panel's pieces and shows its report."
    import sys, types
    from trainbook.preflight import DryRunReport
    calls = []
    def dry_run(model, dl_train, dl_valid=None, loss_fn=None, config=None, metrics=None, stop=None):
        calls.append((model, dl_train, dl_valid, loss_fn, config, metrics, stop))
        return DryRunReport(False, [tb.Finding("shape_mismatch", "error", "pred (4, 1) vs target (4,)")], steps=3,
                            step_time=0.00122, peak_memory_mb=0.938, data_wait=0.25)
    monkeypatch.setitem(sys.modules, "trainbook.preflight", types.SimpleNamespace(dry_run=dry_run))
    p = panel()
    p.dry_button.click(); p.wait()
    assert calls == [(p.model, p.dl_train, p.dl_valid, p.loss_fn, p.config, p.metrics, p._stop)]  # Stop reaches it
    assert "dry run: <b>FAILED</b> (1 finding(s))" in p.status.value and "Shape mismatch" in p.findings.value
    assert p.plot.children == (p.note,) and "FAILED" in p.note.value and p.figure is None  # no chart left above
    assert isinstance(p.dry_run_report, DryRunReport) and p.error is None
    # units, not bare numbers: 0.00122 s per step reads as 1.22 ms, a share as a percentage
    assert "1.22</td><td>ms" in p.note.value and "25</td><td>% of training time" in p.note.value
    assert "peak memory rise" in p.note.value and "MiB" in p.note.value
    # the report shown on its own carries the same units (it printed 0.00122 under 'step time')
    shown = p.dry_run_report._repr_html_()
    assert "1.22</td><td>ms" in shown and "Shape mismatch" in shown and "0.00122" not in shown


def _pressing_stop_at(p, call):
    "A loss that presses the panel's Stop button at its `call`-th evaluation (from the worker thread)."
    calls = []
    def loss(out, yb):
        calls.append(1)
        if len(calls) == call: p.stop_button.click()
        return nn.functional.cross_entropy(out, yb)
    return loss


def test_stop_ends_find_lr_and_overfit_early():
    p = panel()
    p.loss_fn = _pressing_stop_at(p, 10)
    p.lr_button.click(); p.wait()
    assert p.error is None and "suggested lr" in p.status.value
    assert 3 <= len(p.lr_finder.lrs) <= 12  # a full sweep is 100 steps
    assert list(p.figure.data[0].x) == p.lr_finder.lrs  # what was found is drawn
    p.loss_fn = _pressing_stop_at(p, 30)
    p.overfit_button.click(); p.wait()
    assert p.error is None and len(p.sanity.history.series("loss")) < 40  # of 200 steps per lr tried
    assert p.stop_button.disabled and not p.overfit_button.disabled


def test_stop_ends_a_dry_run_with_no_verdict():
    "Probe 103: Stop was enabled during a dry run but ignored: the dry run ran to its end and said PASSED."
    p = panel()
    p.loss_fn = _pressing_stop_at(p, 2)  # the trial's first step (call 1: fit's set-up tries validation)
    p.dry_button.click(); p.wait()
    report = p.dry_run_report
    assert p.error is None and report.stopped and not report.passed and report.steps < 3
    assert "dry run: <b>stopped</b> before a verdict" in p.status.value and "PASSED" not in p.status.value
    assert "INTERRUPTED" in p.note.value and p.stop_button.disabled and not p.dry_button.disabled
    p.loss_fn = nn.functional.cross_entropy
    p.dry_button.click(); p.wait()
    assert "dry run: <b>PASSED</b>" in p.status.value and not p.dry_run_report.stopped  # pressed again: a verdict


def test_refuses_to_start_while_the_model_trains_elsewhere():
    "Another thread holds the model (a fit running there): every button refuses at once and nothing starts."
    import threading
    from trainbook.batch import training_lock
    p = panel()
    holding, release = threading.Event(), threading.Event()
    def elsewhere():
        with training_lock(p.model, "fit"):
            holding.set()
            release.wait(30)
    t = threading.Thread(target=elsewhere)
    t.start()
    holding.wait(30)
    try:
        for button in (p.train_button, p.lr_button, p.overfit_button):
            button.click()
            assert not p.busy and "refused" in p.status.value and "already training (fit)" in p.status.value
        assert p.run is None and p.lr_finder is None and p.sanity is None
    finally:
        release.set()
        t.join()
    p.overfit_button.click(); p.wait()  # free again
    assert p.sanity is not None


class FakeHandle:
    def __init__(self): self.updates = []
    def update(self, obj, **kw): self.updates.append(obj)


def test_panel_snapshot_follows_its_state(monkeypatch):
    "The static fallback shows the buttons, the status and the figure of the last action, and is re-rendered after it."
    from trainbook import live
    monkeypatch.setitem(live._PLOTLYJS, "sent", True)
    p = panel()
    first = p._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in first and "Overfit one batch</button>" in first["text/html"]
    assert "ready" in first["text/html"] and "Plotly.newPlot" not in first["text/html"]  # nothing drawn yet
    handle = FakeHandle()
    p._handles = [handle]
    p.overfit_button.click(); p.wait()
    assert len(handle.updates) == 1
    html = handle.updates[0]["text/html"]
    assert "PASSED" in html and "Plotly.newPlot" in html and "train loss on one batch" in html


def test_split_builder_snapshot():
    df = load_breast_cancer(as_frame=True).frame
    sb = tb.SplitBuilder(df, target="target")
    html = sb._repr_mimebundle_()["text/html"]
    assert "stratified" in html and "Plotly.newPlot" in html and "splits = tb.make_splits(df, 'target')" in html
    assert "application/vnd.jupyter.widget-view+json" in sb._repr_mimebundle_()


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


NOTEBOOK = ['''import os, torch, trainbook as tb
from torch import nn
from sklearn.datasets import load_breast_cancer
torch.manual_seed(0)
X = torch.randn(640, 8); y = (X[:, 0] + X[:, 1] > 0).long()
dl, dv = tb.TensorLoader(X[:512], y[:512], batch_size=32, shuffle=True), tb.TensorLoader(X[512:], y[512:], batch_size=128)
def model(): return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
cfg = tb.TrainConfig(epochs=3, lr=3e-3, device="cpu")'''] + [
    f'run{i} = tb.fit(model(), dl, dv, loss_fn=nn.functional.cross_entropy, metrics="accuracy", config=cfg)'
    for i in range(3)] + [
    "run0.plot()",
    'tb.SplitBuilder(load_breast_cancer(as_frame=True).frame, target="target")',
    "panel = tb.TrainPanel(model(), dl, dv, loss_fn=nn.functional.cross_entropy, config=cfg)\npanel",
    "panel.overfit_button.click(); panel.wait(); print(panel.status.value)"]


def test_saved_notebook_small_and_readable_without_kernel(tmp_path):
    """Three live runs, a figure, a SplitBuilder and a TrainPanel, executed as JupyterLab would (live widgets, widget
    state not saved): the saved notebook stays under 3 MB beyond one plotly.js copy, and rendered by nbconvert (as
    nbviewer, GitHub and the docs do) every widget and figure cell shows content."""
    import os, sys
    from pathlib import Path
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from demo import visible_outputs
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK])
    env = {"TRAINBOOK_LIVE": "widget", "PLOTLY_RENDERER": "plotly_mimetype"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=False).execute()
    finally:
        for k, v in old.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v
    path = tmp_path / "three_runs.ipynb"
    nbformat.write(nb, path)
    text = path.read_text()
    assert text.count('data-trainbook=\\"plotly.js\\"') == 1  # one copy of plotly.js in the whole notebook
    import plotly
    plotlyjs = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").stat().st_size
    assert path.stat().st_size - plotlyjs < 3_000_000, path.stat().st_size
    for i in range(1, 4):  # each run's live widget gave way to a static figure in its own output
        kinds = [set(o.get("data", {})) for o in nb.cells[i].outputs]
        assert any({"application/vnd.plotly.v1+json", "text/html"} <= k for k in kinds), kinds
    assert "PASSED" in "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert visible_outputs(nb, html) == []
    snapshot = nb.cells[6].outputs[0]["data"]["text/html"]
    assert "PASSED" in snapshot and "Plotly.newPlot" in snapshot  # the panel's output was refreshed after the click


def test_findings_render_as_callouts_and_reports_as_tables():
    "A finding reads as a callout (severity colour, title, message, fix); reports are tables without empty cells."
    import numpy as np, pandas as pd
    from trainbook.core import findings_html, number_text
    f = tb.Finding("class_imbalance", "warning", "the minority class is 3% of rows", column="y",
                   advice="pass class weights")
    out = findings_html([tb.Finding("duplicate_rows", "info", "2 duplicates"), f])
    assert out.index("Class imbalance") < out.index("Duplicate rows")  # worst first
    assert "tb-warning" in out and "<b>Fix:</b> pass class weights" in out and "<code>y</code>" in out
    assert "overflow-wrap:break-word" in out and "monospace" not in out  # words wrap whole, in prose
    assert f._repr_html_().startswith('<div class="tb-finding tb-warning"')
    assert [number_text(v) for v in (0.021600820741402058, 1234, 3e-05, None, float("nan"), 2.0)] == \
        ["0.0216", "1,234", "3e-05", "—", "—", "2"]
    df = load_breast_cancer(as_frame=True).frame.assign(city=lambda d: np.where(d.index % 3, "north", None))
    html = tb.check_data(df, target="target")._repr_html_()
    assert "NaN" not in html and ">nan<" not in html.lower()
    assert "33.4%" in html and "top: north" in html and "<th" in html  # missing share, top value, a real table
    from trainbook.data import ServingReport
    served = ServingReport(torch.zeros(3, 5), pd.Index([0, 1, 2]),
                           [tb.Finding("unseen_category", "warning", "'east' was not seen in training", column="city")], 4)
    page = served._repr_html_()
    assert "3 of 4 rows served" in page and "rows refused</td><td>1" in page and "Unseen category" in page


def test_split_builder_starts_from_the_split_above():
    "The quickstart made its split with test_size=0.2 and seed 0: the builder shows those, not the defaults."
    df = load_breast_cancer(as_frame=True).frame
    splits = tb.make_splits(df, "target", test_size=0.2, seed=3, valid_size=0.25)
    sb = tb.SplitBuilder(df, splits=splits)
    assert sb.target.value == "target" and sb.test_size.value == 0.2 and sb.valid_size.value == 0.25
    assert sb.seed.value == 3 and sb.strategy.value == "auto"
    assert sb.code_text() == "splits = tb.make_splits(df, 'target', valid_size=0.25, test_size=0.2, seed=3)"
    assert len(sb.splits.test) == len(splits.test)  # the same split, ready to adjust
    assert all(len(c.description) <= 12 for c in sb.controls)  # labels fit their 90 px


def test_mlflow_info_lines_stay_out_unless_asked_for(monkeypatch):
    import logging
    pytest.importorskip("mlflow")
    from trainbook.tracking import quiet_mlflow
    log = logging.getLogger("mlflow")
    monkeypatch.setattr(log, "level", logging.INFO)
    monkeypatch.delenv("MLFLOW_LOGGING_LEVEL", raising=False)
    quiet_mlflow()
    assert log.level == logging.WARNING  # "Creating initial MLflow database tables..." is not the user's output
    log.setLevel(logging.INFO)
    monkeypatch.setenv("MLFLOW_LOGGING_LEVEL", "INFO")
    quiet_mlflow()
    assert log.level == logging.INFO  # asked for: kept
    monkeypatch.delenv("MLFLOW_LOGGING_LEVEL")
    for mine in (logging.DEBUG, logging.ERROR):  # seen: a level the user had set was replaced for the session
        log.setLevel(mine)
        quiet_mlflow()
        assert log.level == mine


def _blocked_in_wait(thread) -> bool:
    "Whether `thread` is blocked inside TrainPanel.wait, in threading's own waiting (a join, an Event)."
    import sys, threading
    frame, codes = sys._current_frames().get(thread.ident), []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    return bool(codes) and codes[0].co_filename == threading.__file__ and tb.TrainPanel.wait.__code__ in codes


def test_a_ctrl_c_in_wait_leaves_the_run_going_and_its_thread_alive():
    """Probe 80: Kernel -> Interrupt during `panel.wait()` ended the run 'failed' (ZMQError) and left the panel
    busy: wait joined the thread, and on CPython 3.11 a Ctrl-C inside Thread.join marks the running thread as
    ended, so ipykernel closed its output pipe. Here a real SIGINT reaches the main thread while wait blocks."""
    import signal, threading, time
    p = panel(epochs=2)
    main, go = threading.main_thread(), threading.Event()
    class CtrlCWhileWaiting(Callback):
        def after_step(self, state):
            if state.step != 1: return
            while not _blocked_in_wait(main): time.sleep(0.001)  # until the cell below waits
            signal.pthread_kill(main.ident, signal.SIGINT)  # Kernel -> Interrupt
            go.wait(60)
    p.callbacks.append(CtrlCWhileWaiting())
    p.train_button.click()
    try:
        with pytest.raises(KeyboardInterrupt): p.wait()
        alive, busy = p._thread.is_alive(), p.busy
        p.train_button.click()
        assert "this panel's training is still running" in p.status.value
    finally:
        go.set()
    assert alive and busy  # the training thread was not marked ended by the interrupt
    p.wait()
    assert not p.busy and p.run.stopped == "completed" and "completed" in p.status.value
    assert not p.train_button.disabled and p.stop_button.disabled


def test_a_widget_update_that_raises_at_the_end_leaves_the_panel_idle(monkeypatch):
    """Probe 80: the status update at an action's end raised (ZMQError: its output pipe closed) and the panel
    stayed 'busy' for good: every button answered "busy ... still running". Its bookkeeping runs regardless."""
    import threading
    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    p = panel(epochs=1)
    html_widget, everywhere = type(p.status), []
    class Broken(html_widget):
        "An HTML widget whose output pipe is gone in the training thread (everywhere, once `everywhere`)."
        def __setattr__(self, name, value):
            if name == "value" and (everywhere or threading.current_thread() is not threading.main_thread()):
                raise RuntimeError("Socket operation on non-socket")
            super().__setattr__(name, value)
    p.status = Broken()
    p.overfit_button.click(); p.wait(60)  # (bounded: a panel left busy would never be idle)
    assert not p.busy and p._idle.is_set() and not p.overfit_button.disabled
    assert [str(e) for e in raised] == ["Socket operation on non-socket"]  # shown, not swallowed
    everywhere.append(True)  # at the click too (the start's own status line)
    with pytest.raises(RuntimeError, match="non-socket"): p._start("training", p._train)
    assert not p.busy and p._idle.is_set() and p.run is None
    p.status = html_widget()
    p.overfit_button.click(); p.wait()  # usable again
    assert "PASSED" in p.status.value


def _held_at_step_one(p, go):
    "A callback for `p`'s Train: at step 1 it sets `started` and waits for `go` or for `p`'s Stop."
    import threading
    started = threading.Event()
    class Hold(Callback):
        def after_step(self, state):
            if state.step == 1:
                started.set()
                while not (go.is_set() or p._stop.is_set()): go.wait(0.01)
    return started, Hold()


def test_a_panel_made_again_on_the_model_stops_the_earlier_panels_run():
    """Probe 80: the panel's cell run again while it trained left a run nobody could stop (the new panel refused
    to train, its Stop did nothing, the old panel's output was gone). The new panel offers Stop for it."""
    import threading
    old, go = panel(epochs=5), threading.Event()
    started, hold = _held_at_step_one(old, go)
    old.callbacks.append(hold)
    old.train_button.click()
    try:
        assert started.wait(60)
        new = tb.TrainPanel(old.model, old.dl_train, old.dl_valid, loss_fn=old.loss_fn, config=old.config)
        assert "earlier panel on this model is still running" in new.status.value and "Stop" in new.status.value
        assert not new.stop_button.disabled and new.train_button.disabled
        new.train_button.click()  # a click all the same: refused, with the way out
        assert "training refused" in new.status.value and "press <b>Stop</b>" in new.status.value
        new.stop()
        assert "stopping the earlier panel's training" in new.status.value
        new.wait()
    finally:
        go.set()
    assert old.run.stopped == "interrupted" and not old.busy
    assert not new.busy and not new.train_button.disabled and new.stop_button.disabled
    assert "earlier panel's training ended" in new.status.value and "interrupted" in new.status.value
    new.overfit_button.click(); new.wait()
    assert new.sanity.passed


def test_a_panel_made_again_is_ready_when_the_earlier_run_ends_by_itself():
    import threading
    old, go = panel(epochs=1), threading.Event()
    started, hold = _held_at_step_one(old, go)
    old.callbacks.append(hold)
    old.train_button.click()
    assert started.wait(60)
    new = tb.TrainPanel(old.model, old.dl_train, old.dl_valid, loss_fn=old.loss_fn, config=old.config)
    go.set()
    new.wait()
    assert old.run.stopped == "completed" and "run <b>completed</b>" in new.status.value
    assert not new.train_button.disabled and new.stop_button.disabled and tb.TrainPanel._acting.get(old.model) is None


def test_an_action_ended_by_a_base_exception_ends_in_the_panel():
    "Seen: a SystemExit in a Train (a callback's) left the status on 'training …'."
    class Exit(Callback):
        def after_step(self, state):
            if state.step == 2: raise SystemExit(3)
    p = panel()
    p.callbacks.append(Exit())
    p.train_button.click(); p.wait()
    assert not p.busy and "training failed" in p.status.value and "SystemExit" in p.status.value
    assert isinstance(p.error, SystemExit) and p.run.stopped == "failed"
    assert not p.train_button.disabled and p.stop_button.disabled
    p.overfit_button.click(); p.wait()  # usable again
    assert "PASSED" in p.status.value


def test_the_saved_snapshot_shows_the_buttons_as_the_action_left_them():
    "Seen: the snapshot re-rendered at an action's end (its text/plain) showed the buttons still disabled=True."
    p = panel()
    handle = FakeHandle()
    p._handles = [handle]
    p.overfit_button.click(); p.wait()
    assert len(handle.updates) == 1
    plain = handle.updates[0]["text/plain"]
    assert plain.startswith("VBox(children=(HBox(children=(Button(description='Overfit one batch'")
    assert "disabled=True" not in plain and "PASSED" in handle.updates[0]["text/html"]


def test_a_finding_repeated_at_every_validation_shows_once_in_the_panel():
    "Seen: a metric NaN at every validation: one callout per epoch in the panel's findings."
    p = panel(epochs=4)
    p.metrics = {"m": lambda pred, yb: float("nan")}
    p.train_button.click(); p.wait()
    assert p.run.stopped == "completed" and [f.kind for f in p.run.findings].count("nonfinite") == 4
    assert p.findings.value.count('class="tb-finding ') == 1 + sum(f.kind != "nonfinite" for f in p.run.findings)
    assert "nonfinite ×4" in p.findings.value


def test_a_search_panel_leaves_a_static_figure_in_the_saved_notebook(monkeypatch):
    "Probe 38: StudyPanel's live FigureWidget stayed at the search's end: a saved notebook showed no curves."
    import trainbook.live as live
    from trainbook.widgets import StudyPanel
    outputs = []

    class Handle:
        def __init__(self, obj): self.shown = [obj]
        def update(self, obj, raw=False): self.shown.append((obj, raw))

    monkeypatch.setattr(live, "show_output", lambda obj, **kw: outputs.append(Handle(obj)) or outputs[-1])
    panel = StudyPanel(n_trials=2, mode="widget")
    for n, values in enumerate(([0.9, 0.5], [0.8, 0.7])):
        panel.start(n, {"lr": 10.0 ** -(n + 2)})
        for step, v in enumerate(values): panel.report(n, step, v)
        panel.end(n, "complete", (0, 0.5))
    live_figure = panel.figure
    panel.finish()
    (handle,) = outputs
    assert handle.shown[0] is live_figure and len(handle.shown) == 2
    bundle, raw = handle.shown[-1]  # the output rewritten in place with the final figure's static bundle
    assert raw and "text/html" in bundle and "application/vnd.jupyter.widget-view+json" not in bundle
    # a front end that runs no scripts (GitHub) shows the summary line, not an empty 380 px block (probe 43)
    assert "best valid_loss 0.5 (trial 0: lr=0.01)" in bundle["text/plain"] and "tb-summary" in bundle["text/html"]
    final = panel.figure
    assert final is not live_figure and len(final.data) == 2  # a plain figure of both trials
    assert "best valid_loss 0.5 (trial 0: lr=0.01)" in final.layout.title.text


def test_a_dropped_panel_and_builder_free_their_model_and_frame(frame):
    """Probe 53: three TrainPanels deleted kept their models, optimizers and runs (each button's callback held
    its panel, and ipywidgets keeps every open widget); a SplitBuilder kept its frame."""
    import gc, weakref
    p = panel(epochs=1)
    p.overfit_button.click(); p.wait()
    model, built = weakref.ref(p.model), weakref.ref(tb.SplitBuilder(frame, target="target"))
    newest = panel(epochs=1)  # the cell run again: a new panel (the newest is kept, for display(...) alone)
    tb.SplitBuilder(frame, target="target")
    del p
    gc.collect()
    assert model() is None and built() is None
    newest.overfit_button.click(); newest.wait()  # the newest answers its buttons though nothing else holds it
    assert newest.sanity is not None and tb.TrainPanel._newest is newest


def test_train_names_the_split_for_the_checklist(frame):
    "Probe 80: a panel's run named no split (the Checklist's advice, split_fingerprint= to fit, had no way in)."
    splits = tb.make_splits(frame, "target", seed=0)
    dl_train, dl_valid, _, prep = tb.loaders_from_frame(frame, "target", splits, batch_size=64)
    model = nn.Linear(prep.n_features, 2)
    make = lambda **kw: tb.TrainPanel(model, dl_train, dl_valid, loss_fn=nn.functional.cross_entropy,
                                      config=tb.TrainConfig(epochs=1, device="cpu"), **kw)
    p = make()
    p.train_button.click(); p.wait()
    assert p.run.extra["split_fingerprint"] == splits.fingerprint  # the loaders' own
    with pytest.raises(ValueError, match=r"^splits \(fingerprint \w+\) is not the split dl_train was made from"):
        make(splits=tb.make_splits(frame, "target", seed=1))
    X, y = blobs(n=64)
    plain = tb.TrainPanel(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=32), loss_fn=nn.functional.cross_entropy,
                          config=tb.TrainConfig(epochs=1, device="cpu"), splits=splits)
    plain.train_button.click(); plain.wait()
    assert plain.run.extra["split_fingerprint"] == splits.fingerprint
