"Live curves without a front end: the right points, a bounded number of redraws, and a run that never fails for a plot."
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.events import Callback
from trainbook.live import LiveCurves, display_mode, plot_history
from trainbook.progress import Progress
from helpers import blobs


class FakeClock:
    "Time that advances by a fixed amount at each reading: deterministic throttling."
    def __init__(self, tick): self.t, self.tick = 0.0, tick
    def __call__(self): self.t += self.tick; return self.t


def _fit(callbacks, epochs=3, n=640, **cfg):
    X, y = blobs(n=n)
    return tb.fit(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), tb.TensorLoader(X, y, batch_size=16),
                  [(X[:64], y[:64])], loss_fn=nn.functional.cross_entropy, metrics="accuracy", live=False,
                  callbacks=callbacks, config=tb.TrainConfig(epochs=epochs, device="cpu", **cfg))


def test_points_match_history_without_front_end():
    assert display_mode() == "text"  # plain Python: no kernel, no widget
    curves = LiveCurves(mode="static")
    run = _fit([curves])
    pts = curves.series.points
    h = run.records
    assert len(pts["train loss"][0]) == len(h.series("loss")) == run.step
    assert len(pts["valid loss"][0]) == len(h.series("loss", "valid")) == 3
    assert pts["valid accuracy"][1] == h.series("accuracy", "valid").tolist()
    names = {t.name for t in curves.figure.data}
    assert all(n.startswith(("train", "valid")) for n in names)
    fig_y = next(t for t in curves.figure.data if t.name == "valid loss").y
    assert list(fig_y) == h.series("loss", "valid").tolist()


@pytest.mark.parametrize("tick", [0.001, 0.1])
def test_updates_are_bounded_by_the_throttle(tick):
    "Redraws happen at most once per `every` seconds of (fake) time, plus one per epoch end and one at the end."
    clock = FakeClock(tick)
    curves = LiveCurves(every=0.5, mode="widget", clock=clock)  # a FigureWidget, drawn into although no front end shows it
    run = _fit([curves], epochs=3, n=1600)  # 100 steps an epoch
    readings = clock.t / tick
    bound = readings * tick / 0.5 + 3 + 1 + 1
    assert curves.n_updates <= bound
    assert curves.n_updates < run.step  # far fewer redraws than steps


def test_a_broken_display_never_breaks_the_run():
    class Broken(LiveCurves):
        def final(self, state): raise RuntimeError("front end went away")
    with pytest.warns(UserWarning, match="switched off"):
        run = _fit([Broken(mode="static")])
    assert run.stopped == "completed"


def test_plot_history_marks_findings():
    h = tb.History()
    for e in range(12):  # the rise sustained over a third of the evaluations after the best
        h.append(e, e, "train", "epoch_loss", 1 / (e + 1))
        h.append(e, e, "valid", "loss", 0.5 + 0.02 * (e - 4) ** 2)
    found = tb.diagnose(h)
    fig = plot_history(h, found, stopped="early_stopping")
    labels = [a.text for a in fig.layout.annotations]
    assert "best" in labels and "early stop" in labels
    # the x axis counts steps: the mark sits at a step and says so (never "epoch 5" on a step axis)
    over = [(a.x, a.text) for a in fig.layout.annotations if a.text.startswith("overfitting")]
    assert over and all(text == f"overfitting from step {x:g}" for x, text in over), over


def test_top_losses_finds_flipped_labels():
    X, y = blobs(n=256)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=300, lr=1e-2, device="cpu"))
    flipped = y.clone(); flipped[:5] = (flipped[:5] + 1) % 3
    worst = tb.top_losses(model, tb.TensorLoader(X, flipped, batch_size=50), nn.CrossEntropyLoss(), k=5)
    assert sorted(worst.index.tolist()) == [0, 1, 2, 3, 4]
    assert list(worst.columns) == ["label", "prediction", "loss"] and worst.loss.is_monotonic_decreasing
    same = tb.top_losses(model, tb.TensorLoader(X, flipped, batch_size=50), nn.functional.cross_entropy, k=5)
    assert same.index.tolist() == worst.index.tolist()


def test_plot_marks_the_monitored_best_and_spikes():
    "The 'best' mark follows the monitored metric (here accuracy, maximized), not the lowest valid loss."
    run = _fit([], epochs=4, monitor="valid_accuracy", mode="max")
    fig = run.plot()
    best = next(a for a in fig.layout.annotations if a.text == "best")
    assert best.x == run.extra["best_step"] == run.records.series("accuracy", "valid").idxmax()
    h = tb.History()
    for s in range(100): h.append(s, 0, "train", "loss", 1.0 - 0.005 * s + (5.0 if s == 40 else 0.0))
    spikes = [f for f in tb.diagnose(h) if f.kind == "loss_spikes"]
    assert spikes and spikes[0].data["steps"] == [40]
    assert spikes[0].severity == "warning"  # a warning is drawn by default: one mark at its step
    assert [a.x for a in plot_history(h, spikes).layout.annotations if a.text == "loss spikes"] == [40]
    assert not plot_history(h, spikes, severities=("error",)).layout.annotations  # below the cut: listed only


def _axis_of(fig, trace, attr):
    return fig.layout[f"{attr}axis{(getattr(trace, attr + 'axis') or attr)[1:]}"]


def _assert_ranges_hold_the_data(fig):
    "Every finite point of every trace lies inside its axes' ranges (log axes: in decades)."
    import numpy as np
    checked = 0
    for t in fig.data:
        for attr, values in (("x", t.x), ("y", t.y)):
            axis = _axis_of(fig, t, attr)
            v = np.asarray(values, dtype=float)
            v = v[np.isfinite(v)]
            if axis.type == "log": v = np.log10(v[v > 0])
            if not len(v): continue
            lo, hi = axis.range
            assert lo <= v.min() and v.max() <= hi, (t.name, attr, axis.range, v.min(), v.max())
            checked += 1
    return checked


def test_axis_ranges_contain_the_data_live_and_after():
    "A metric that climbs after the first redraw stays inside its panel; lr and gradient norms are on log axes."
    clock = FakeClock(1.0)  # every step redraws
    curves = LiveCurves(every=0.5, mode="widget", clock=clock, show=False)
    run = _fit([curves], epochs=3, n=320)
    assert curves.n_updates > 10
    assert _assert_ranges_hold_the_data(curves.figure) >= 8
    fig = run.plot()
    assert _assert_ranges_hold_the_data(fig) >= 8
    # a constant lr is a line of text, not a panel of ticks around one value
    assert "train lr" not in {t.name for t in fig.data}
    assert "learning rate constant at 0.001" in [a.text for a in fig.layout.annotations]
    assert fig.layout.yaxis3.visible is False  # the lr panel (row 2, col 1) is not drawn
    # an accuracy that rises after the first draw: the range follows it
    h = tb.History([(1, 0, "valid", "accuracy", 0.5)])
    s = __import__("trainbook.live", fromlist=["Series"]).Series()
    from trainbook.live import new_figure, draw
    live = new_figure(widget=True, system=False)
    s.read(h); draw(live, s)
    h.append(2, 1, "valid", "accuracy", 0.99)
    s.read(h); draw(live, s)
    acc = next(t for t in live.data if t.name == "valid accuracy")
    assert _axis_of(live, acc, "y").range[1] >= 0.99


def test_throughput_and_memory_panels_when_logged():
    h = tb.History()
    for e in range(3):
        h.append(10 * (e + 1), e, "train", "epoch_loss", 1.0 / (e + 1))
        for name, v in (("samples_per_s", 1000 + e), ("step_time", 0.01 + 0.001 * e), ("data_wait", 0.2 + 0.05 * e),
                        ("peak_memory_mb", 300 + 10 * e)):
            h.append(10 * (e + 1), e, "train", name, v)
    fig = plot_history(h)
    names = {t.name for t in fig.data}
    assert {"train samples_per_s", "train step_time", "train data_wait", "train peak_memory_mb"} <= names
    rows = {(t.name, t.yaxis) for t in fig.data}
    assert len({y for n, y in rows if n.split(" ", 1)[1] in ("samples_per_s", "step_time", "data_wait", "peak_memory_mb")}) == 4
    assert _assert_ranges_hold_the_data(fig) >= 8
    assert "xaxis5" not in plot_history(tb.History([(1, 0, "train", "loss", 1.0)])).layout  # no row without the records


def test_legends_one_per_panel_above_it():
    fig = _fit([], epochs=2).plot()
    legend_of = {t.name: t.legend for t in fig.data if t.showlegend is not False}
    assert legend_of["valid loss"] == legend_of["train loss (smoothed)"] == "legend"
    assert legend_of["valid accuracy"] == "legend2"
    assert fig.layout.legend.y > fig.layout.yaxis.domain[1] and fig.layout.legend2.y > fig.layout.yaxis2.domain[1]
    assert fig.layout.legend.x < fig.layout.legend2.x


def test_marks_only_for_warnings_one_per_event_labels_never_overlap():
    from trainbook.live import marks_for, place_labels, Series, draw, new_figure
    h = tb.History([(s, 0, "train", "loss", 1.0 / s) for s in range(1, 201)])
    s = Series(); s.read(h)
    found = [tb.Finding("loss_spikes", "warning", "", data={"steps": [50, 51, 52, 53, 150]}),
             tb.Finding("loss_spikes", "info", "", data={"steps": [100]}),
             tb.Finding("nonfinite", "error", "", data={"step": 152}),
             tb.Finding("best", "info", "", data={"step": 154}), tb.Finding("early_stopping", "info", "", data={"step": 200})]
    marks = marks_for(found, s)
    assert [m[0] for m in marks] == [50, 150, 152, 154, 200]  # the burst 50-53 is one mark; the info spike none
    assert marks[0][2] == "loss spikes ×4"
    fig = new_figure(system=False)
    draw(fig, s, found)
    assert len(fig.layout.shapes) == 5
    per_level = {}
    for a in fig.layout.annotations:
        per_level.setdefault(a.y, []).append((a.x, a.x + (len(a.text) * 6.2 + 6) / (900 * 0.465) * 209))
    for spans in per_level.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:])), spans
    assert len(per_level) >= 2  # crowded labels went to further rows instead of piling up


def test_static_bundle_carries_plotlyjs_once_and_a_text_fallback(monkeypatch):
    from trainbook import live
    monkeypatch.setitem(live._PLOTLYJS, "sent", False)
    run = _fit([], epochs=2)
    first = run.plot()._repr_mimebundle_()
    second = run.plot()._repr_mimebundle_()
    assert set(first) == {"application/vnd.plotly.v1+json", "text/html", "text/plain"}
    assert first["text/html"].count('data-trainbook="plotly.js"') == 1 and len(first["text/html"]) > 3_000_000
    assert 'data-trainbook="plotly.js"' not in second["text/html"] and len(second["text/html"]) < 200_000
    assert "Plotly.newPlot" in second["text/html"]
    names = {t["name"] for t in second["application/vnd.plotly.v1+json"]["data"]}
    assert {"valid loss", "valid accuracy"} <= names


class FakeHandle:
    def __init__(self): self.updates = []
    def update(self, obj, **kw): self.updates.append(obj)


def test_live_widget_gives_way_to_a_static_figure(monkeypatch):
    "Shown live as a FigureWidget, the curves are replaced in the same output by a static view, and the widget closed."
    from trainbook import live
    handle = FakeHandle()
    monkeypatch.setattr(live, "show_output", lambda obj, **kw: handle)
    curves = LiveCurves(mode="widget", clock=FakeClock(1.0))
    seen = []
    class Keep(Callback):  # the live FigureWidget, as it is during the run
        def after_epoch(self, state): seen.append(curves.figure)
    run = _fit([curves, Keep()], epochs=2)
    live_fig = seen[-1]
    assert type(live_fig).__name__ == "FigureWidget" and live_fig.comm is None  # closed: no widget state to save
    assert len(handle.updates) == 1
    view = handle.updates[0]
    bundle = view._repr_mimebundle_()
    assert "Plotly.newPlot" in bundle["text/html"] and "step" in bundle["text/plain"]
    assert curves.figure is view.figure and curves.box is None
    assert {t.name for t in view.figure.data} >= {"train loss", "valid loss"}
    assert run.stopped == "completed"


def test_gradient_trouble_brings_the_per_layer_view():
    from trainbook.live import plot_grad_norms, grad_norm_matrix
    run = _fit([], epochs=2, log_every=5)
    names, steps, m = grad_norm_matrix(run)
    assert "0.weight" in names and len(steps) == run.step // 5 and m.shape == (len(names), len(steps))
    fig = plot_grad_norms(run)
    assert fig.data[0].type == "heatmap" and list(fig.data[0].y) == names
    curves = LiveCurves(mode="text")
    curves.findings = [tb.Finding("vanishing_gradients", "warning", "", data={"parameters": ["0.weight"]})]
    curves.series.read(run.records)
    state = type("S", (), {"history": run.records, "run": run})()
    view = curves.final(state)
    assert len(view.extra) == 1 and view.extra[0].data[0].type == "heatmap"
    curves.findings = []
    assert curves.final(state).extra == []


def test_figures_display_their_static_bundle_in_ipython(monkeypatch):
    "What IPython publishes for run.plot() (plotly's own display would publish its JSON only)."
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output
    from trainbook import live
    monkeypatch.setitem(live._PLOTLYJS, "sent", True)
    InteractiveShell.instance()
    try:
        fig = _fit([], epochs=1).plot()
        with capture_output() as out:
            display(fig)
    finally: InteractiveShell.clear_instance()  # (left behind, this worker's later tests would be no plain script)
    assert len(out.outputs) == 1
    data = out.outputs[0].data
    assert {"application/vnd.plotly.v1+json", "text/html", "text/plain"} <= set(data)
    assert "Plotly.newPlot" in data["text/html"]


def test_the_live_figure_and_the_static_one_show_the_same():
    "The widget is updated in place through plotly's objects; plot_history builds plotly's JSON directly: one picture."
    import json
    import plotly.graph_objects as go
    import plotly.io as pio
    from trainbook.live import Series, curves_spec, draw, new_figure
    run = _fit([], epochs=3)  # throughput and memory are logged: both figures have the system row
    series = Series()
    series.read(run.records)
    marks = [tb.Finding("loss_spikes", "warning", "planted", data={"steps": [7, 60]}),
             tb.Finding("best", "info", "best evaluation", data={"step": 80})]
    live = new_figure(widget=False)
    draw(live, series, marks)
    spec = curves_spec(series, marks)
    assert type(spec) is dict and all(type(t) is dict for t in spec["data"])  # no plotly objects were built
    assert json.loads(pio.to_json(live)) == json.loads(pio.to_json(go.Figure(spec)))
    marks_drawn = [a["text"] for a in spec["layout"]["annotations"] if " constant at " not in a["text"]]
    assert marks_drawn == ["loss spikes", "loss spikes", "best"]
    assert run.plot(as_dict=True)["layout"]["yaxis"]["range"] == list(run.plot().layout.yaxis.range)


def _series(records):
    from trainbook.live import Series
    s = Series()
    s.read(tb.History(records))
    return s


def test_axis_choices_constant_small_range_and_decades():
    "Constant → a note; under a decade → linear; a fall by decades → log with ticks at whole decades only."
    import math
    import numpy as np
    from trainbook.live import axis_scale, curves_spec
    assert axis_scale([0.1] * 5) == {"kind": "constant", "value": 0.1}
    assert axis_scale([0.6, 0.5, 0.45])["kind"] == "linear"
    assert axis_scale([1.0, 0.5, 0.2, 0.11])["kind"] == "linear"  # less than one decade, even if positive
    loss = np.geomspace(2.0, 2e-4, 300)  # a fall by four decades
    cosine = 1e-3 * 0.5 * (1 + np.cos(np.linspace(0, math.pi, 300)))
    rows = [(i + 1, 0, "train", "loss", float(v)) for i, v in enumerate(loss)]
    rows += [(i + 1, 0, "train", "lr", float(v)) for i, v in enumerate(cosine)]
    spec = curves_spec(_series(rows))
    y = spec["layout"]["yaxis"]  # the loss panel
    assert y["type"] == "log" and y["tickmode"] == "array"
    assert all(math.log10(v) == round(math.log10(v)) for v in y["tickvals"]), y["tickvals"]  # decades only
    assert len(set("e" in t for t in y["ticktext"])) == 1, y["ticktext"]  # one label style on one axis
    lr_axis = spec["layout"]["yaxis3"]
    assert lr_axis["type"] == "linear" and lr_axis["visible"]  # a cosine stays linear: no dive through decades
    assert spec["layout"]["yaxis2"]["visible"] is False  # no metric logged: its panel is not drawn


def test_constant_and_empty_panels_in_the_live_figure():
    "The live figure hides the same panels the static one does, and notes the constant."
    from trainbook.live import new_figure, draw
    live = new_figure(widget=True, system=False)
    s = _series([(i, 0, "train", "loss", 1.0 / i) for i in range(1, 30)] + [(i, 0, "train", "lr", 3e-3) for i in range(1, 30)])
    draw(live, s)
    assert "train lr" not in {t.name for t in live.data}
    assert live.layout.yaxis3.visible is False and live.layout.yaxis2.visible is False and live.layout.yaxis.visible
    assert "learning rate constant at 0.003" in [a.text for a in live.layout.annotations]


def test_find_lr_range_is_clipped_near_the_start_and_the_suggestion_marked():
    import numpy as np
    from trainbook.figures import lr_find_y_range, plot_lr_find
    losses = list(np.r_[np.linspace(2.3, 2.2, 30), np.linspace(2.2, 0.8, 50), np.geomspace(0.8, 80, 20)])
    lo, hi = lr_find_y_range(losses)
    assert lo < 0.8 and 2.3 < hi < 2.6  # the divergence to 80 is cut: the fall fills the panel
    class Finder: lrs, suggestion = list(np.geomspace(1e-7, 10, 100)), 1e-3
    Finder.losses = losses
    fig = plot_lr_find(Finder())
    assert tuple(fig.layout.yaxis.range) == (lo, hi)
    marker = next(t for t in fig.data if t.name == "suggested lr")
    assert marker.x == (1e-3,) and [s.x0 for s in fig.layout.shapes] == [1e-3]
    assert all(float(v) in (1e-7, 1e-5, 1e-3, 1e-1, 10.0) for v in fig.layout.xaxis.tickvals)  # decades only


def test_runs_compared_by_what_differs():
    "Legends and titles name the differing params; the table shows numbers to their precision and findings as chips."
    import pandas as pd
    from trainbook.figures import wrap_title
    from trainbook.experiments import Comparison, finding_chips, param_text, runs_label
    assert runs_label({"hidden": "16", "lr": "0.001"}, ["hidden", "lr"], "20261201-113403-ce20") == "hidden=16, lr=0.001"
    assert runs_label({"hidden": "16"}, [], "20261201-113403-ce20") == "20261201-113403-ce20"
    assert [param_text(v) for v in ("0.0010000", None, float("nan"), "relu", 0.021600820741402058)] == \
        ["0.001", "—", "—", "relu", "0.0216"]
    chips = finding_chips("lr_too_low:info, overfitting:warning")
    assert chips.count("<span") == 2 and ">lr too low<" in chips and "#b9770e" in chips and ":info" not in chips
    table = pd.DataFrame({"run": ["a", "b"], "dropout": [0.1, None], "best": [0.021600820741402058, 0.5],
                          "findings": ["lr_too_low:info", ""]}).set_index("run")
    html = Comparison(None, table).table_html()
    assert "0.0216<" in html and "NaN" not in html and "—" in html and "lr too low" in html
    title = wrap_title("trial 12 of 20 done, 3 pruned; best valid_loss 0.3012 (trial 7: hidden=225, dropout=0.1, lr=0.003)", 40)
    assert all(len(line) <= 40 for line in title.split("<br>")) and "dropout=0.1," in title  # nothing cut


def test_a_constant_note_sits_where_its_panel_would_be():
    "The note for a constant lr is placed in the lr panel's place on the page, not over the loss panel."
    from trainbook.live import curves_spec
    spec = curves_spec(_series([(i, 0, "train", "loss", 1.0 / i) for i in range(1, 30)]
                               + [(i, 0, "train", "lr", 3e-3) for i in range(1, 30)]))
    note = next(a for a in spec["layout"]["annotations"] if a["text"] == "learning rate constant at 0.003")
    y_lr, y_loss = spec["layout"]["yaxis3"]["domain"], spec["layout"]["yaxis"]["domain"]
    assert note["yref"] == "paper" and y_lr[0] <= note["y"] <= y_lr[1] and not y_loss[0] <= note["y"] <= y_loss[1]


def test_a_plain_script_with_live_auto_builds_no_figure():
    "#25: in plain Python (no IPython), live='auto' shows progress only: plotly is never imported."
    import subprocess, sys, textwrap
    code = textwrap.dedent("""
        import sys, torch, trainbook as tb
        from torch import nn
        X = torch.randn(64, 4); y = (X[:, 0] > 0).long()
        tb.fit(nn.Linear(4, 2), [(X, y)], [(X, y)], loss_fn=nn.functional.cross_entropy,
               config=tb.TrainConfig(epochs=2))
        print("plotly" in sys.modules)
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRAINBOOK_LIVE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_a_run_refused_at_its_first_batch_draws_nothing(capsys, monkeypatch):
    "A loss refused at the first batch (MSE on class labels): no empty bars or figure are left above the error."
    shown = []
    monkeypatch.setattr("trainbook.live.show_output", lambda obj, **k: shown.append(obj))
    X, y = blobs(n=64)
    bars, curves = Progress(), LiveCurves(mode="static")
    with pytest.raises(Exception, match="mse_loss"):
        tb.fit(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=16), loss_fn=nn.functional.mse_loss, live=False,
               callbacks=[bars, curves], config=tb.TrainConfig(epochs=2, device="cpu"))
    assert bars.epochs is None and bars.steps is None and "epochs" not in capsys.readouterr().err
    assert shown == [] and curves.figure is None
    run = _fit([bars, curves], epochs=1)  # the same displays on a run that trains: drawn, once each
    assert run.stopped == "completed" and bars.epochs.n == 1 and len(shown) == 1
    assert "epochs" in capsys.readouterr().err




def test_a_static_figure_says_in_text_what_it_shows():
    "Probe 43: static figures without a summary were blank blocks on GitHub: their title, or a line given, is the text."
    import plotly.graph_objects as go
    from trainbook.live import as_static, figure_bundle
    titled = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), layout=dict(title="class balance of <b>'y'</b><br>3 classes"))
    bundle = as_static(titled)._repr_mimebundle_()
    assert bundle["text/plain"] == "class balance of 'y' 3 classes" and "tb-summary" in bundle["text/html"]
    assert as_static(titled, "a line of my own")._repr_mimebundle_()["text/plain"] == "a line of my own"
    assert figure_bundle(go.Figure())["text/plain"] == "<plotly figure: 0 traces>"  # nothing to say: said so


def test_live_curves_given_to_a_second_run_draw_that_run():
    "Probe 61: one LiveCurves in a loop over settings drew the first run's curves for the second (static), or none."
    curves = LiveCurves(mode="static")
    for lr in (1e-3, 1e-1):
        run = _fit([curves], epochs=2, lr=lr)
        h = run.history
        want = h[(h.split == "valid") & (h.name == "loss")].value.tolist()
        drawn = {t.name: list(t.y) for t in curves.figure.data}["valid loss"]
        assert drawn == pytest.approx(want)


def test_plot_history_of_a_run_marks_its_monitored_best():
    "Probe 61: plot_history(run) marked the lowest valid loss as best under monitor='valid_accuracy', mode='max'."
    run = _fit([], epochs=6, lr=1.0, monitor="valid_accuracy", mode="max")
    assert run.extra["best_step"] == 120  # the lowest valid loss is at step 240
    best = lambda d: [a["x"] for a in d["layout"]["annotations"] if a["text"] == "best"]
    assert best(plot_history(run, as_dict=True)) == [run.extra["best_step"]] == best(run.plot(as_dict=True))
    assert best(plot_history(run, as_dict=True, best_step=3)) == [3]  # given: as given


def test_a_loss_of_exactly_zero_leaves_a_log_axis_log_and_one_point_is_not_a_constant():
    "Probe 61: one 0.0 among 20,000 falling losses turned the panel linear (a spike then flattened it all)."
    import numpy as np
    from trainbook.live import axis_scale
    y = np.geomspace(2.0, 1e-3, 20_000)
    y[15_000] = 500.0
    assert axis_scale(y)["kind"] == "log"
    y[12_345] = 0.0
    assert axis_scale(y)["kind"] == "log"
    assert axis_scale(y[:50] - 1.5)["kind"] == "linear"  # a loss that goes negative for real stays linear
    short = np.geomspace(2.0, 2e-4, 40)  # probe 62: one zero in a short run (1/40 of its points) turned it too
    short[20] = 0.0
    assert axis_scale(short)["kind"] == "log" and axis_scale(short[:5])["kind"] == "linear"
    assert axis_scale([0.4014])["kind"] == "linear"  # one gradient norm logged: drawn, not 'constant at'
    assert axis_scale([0.4, 0.4])["kind"] == "constant"


def test_a_run_whose_every_validation_is_nan_still_plots():
    "Probe 59: Run.plot() raised 'Encountered all NA values' (the best mark from an all-NaN validation)."
    X, y = blobs(n=64)
    Xv = X[:32].clone()
    Xv[0, 0] = float("nan")
    run = tb.fit(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=16), [(Xv, y[:32])],
                 loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=2, device="cpu"))
    assert run.stopped == "nonfinite"
    spec = run.plot(as_dict=True)
    assert "best" not in [a["text"] for a in spec["layout"]["annotations"]]
