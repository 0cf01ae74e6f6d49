"Live curves without a front end: the right points, a bounded number of redraws, and a run that never fails for a plot."
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.events import Callback
from trainbook.live import LiveCurves, Progress, display_mode, plot_history
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
        def update(self, state, force=False): raise RuntimeError("front end went away")
    with pytest.warns(UserWarning, match="switched off"):
        run = _fit([Broken(mode="static")])
    assert run.stopped == "completed"


def test_progress_runs_headless(capsys):
    run = _fit([Progress()], epochs=2)
    assert run.stopped == "completed"
    err = capsys.readouterr().err
    assert "epochs" in err and "100%" in err


def test_plot_history_marks_findings():
    h = tb.History()
    for e in range(10):
        h.append(e, e, "train", "epoch_loss", 1 / (e + 1))
        h.append(e, e, "valid", "loss", 0.5 + 0.02 * (e - 4) ** 2)
    found = tb.diagnose(h)
    fig = plot_history(h, found, stopped="early_stopping")
    labels = [a.text for a in fig.layout.annotations]
    assert any(l.startswith("overfitting from epoch 5") for l in labels) and "best" in labels and "early stop" in labels


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
    assert [a.x for a in plot_history(h, spikes).layout.annotations if a.text == "spike"] == [40]
