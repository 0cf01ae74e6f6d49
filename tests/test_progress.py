"The progress bars: headless, in a notebook (tqdm.notebook), at an early stop, and what a saved notebook keeps."
import io

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.events import Callback
from trainbook.progress import Progress
from helpers import blobs


def _fit(callbacks, epochs=3, n=640, **cfg):
    X, y = blobs(n=n)
    return tb.fit(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), tb.TensorLoader(X, y, batch_size=16),
                  [(X[:64], y[:64])], loss_fn=nn.functional.cross_entropy, metrics="accuracy", live=False,
                  callbacks=callbacks, config=tb.TrainConfig(epochs=epochs, device="cpu", **cfg))


def test_progress_runs_headless(capsys):
    run = _fit([Progress()], epochs=2)
    assert run.stopped == "completed"
    err = capsys.readouterr().err
    assert "epochs" in err and "100%" in err



def test_the_step_bar_is_the_runs_steps(monkeypatch):
    "One step bar for the run (as Hugging Face's Trainer shows it), named by the epoch in progress: not one per epoch."
    monkeypatch.setattr("trainbook.progress.display_mode", lambda: "text")  # an IPython shell another test made: one bar
    bar = Progress(lines=False)  # a terminal's bars (pytest's stderr is no terminal: it would get lines)
    run = _fit([bar], epochs=3)
    assert run.step == 3 * 40 and bar.steps.total == run.step  # 640 rows in batches of 16, three epochs
    assert bar.steps.desc.startswith("epoch 2")
    assert bar.epochs.n == bar.epochs.total == 3



def test_an_early_stop_leaves_a_finished_bar_and_one_line(capsys):
    "Keras and Lightning print one line; a bar left at 83% reads as a crash."
    X, y = blobs(n=256)
    bar = Progress()
    run = tb.fit(nn.Sequential(nn.Linear(8, 3)), tb.TensorLoader(X, y, batch_size=64), [(X[:64], y[:64])],
                 loss_fn=nn.functional.cross_entropy, live=False, callbacks=[bar],
                 config=tb.TrainConfig(epochs=40, lr=1e-6, patience=1, min_delta=1.0, device="cpu"))
    assert run.stopped == "early_stopping" and run.epoch < 39
    assert bar.epochs.n == bar.epochs.total == run.epoch + 1  # finished at the epochs it ran
    out = capsys.readouterr().out
    assert f"stopped early at epoch {run.epoch}, best epoch {run.best_epoch}" in out



def test_bars_of_a_run_whose_every_step_was_skipped():
    "Every loss non-finite, skipped: no step ever begins, yet the epochs bar counts the epoch that ended."
    X, y = blobs(n=64)
    bars = Progress()
    run = tb.fit(nn.Linear(8, 3), tb.TensorLoader(X * float("nan"), y, batch_size=16),
                 loss_fn=nn.functional.cross_entropy, live=False, callbacks=[bars],
                 config=tb.TrainConfig(epochs=1, device="cpu", on_nonfinite="skip"))
    assert run.step == 0 and run.skipped_steps == 4 and bars.epochs.n == 1



def test_a_finished_run_leaves_no_red_step_bar_in_a_notebook(monkeypatch):
    "Probe 27: the step bar moved at most every 0.1 s; closed short of its total, tqdm.notebook kept it, red."
    import tqdm.auto, tqdm.notebook
    import trainbook.progress as progress
    monkeypatch.setattr(progress, "display_mode", lambda: "widget")  # what a JupyterLab kernel gets
    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)
    bars = []

    class Kept(progress.Progress):
        def after_fit(self, state):
            bars.append(self.steps)
            super().after_fit(state)

    torch.manual_seed(0)
    X, y = torch.randn(455, 30), torch.randint(0, 2, (455,))
    dl = tb.TensorLoader(X, y, batch_size=64)
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 2))
    run = tb.fit(model, dl, dl, loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=8, lr=3e-3),
                 callbacks=[Kept(mininterval=60)], live=False)  # a redraw a minute: the end is never drawn
    bar = bars[0]
    assert run.stopped == "completed" and bar.n == bar.total == run.step
    assert bar.container.children[1].bar_style != "danger" and bar.container.layout.visibility == "hidden"
    # max_steps is a planned end too: its epochs bar ends full, not red at 1/3 (probe 28)
    epochs = []

    class KeptEpochs(progress.Progress):
        def after_fit(self, state):
            epochs.append(self.epochs)
            super().after_fit(state)

    run = tb.fit(model, dl, dl, loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=3, max_steps=10),
                 callbacks=[KeptEpochs()], live=False)
    assert run.stopped == "max_steps" and epochs[0].n == epochs[0].total
    assert epochs[0].container.children[1].bar_style != "danger"



def test_a_saved_notebook_keeps_the_bars_as_they_ended(monkeypatch):
    "Probe 38: a notebook bar's output kept the text of its first draw (0%), what a saved notebook shows elsewhere."
    import tqdm.auto, tqdm.notebook
    import trainbook.progress as progress
    monkeypatch.setattr(progress, "display_mode", lambda: "widget")  # what a JupyterLab kernel gets
    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)
    shown = []

    class Handle:  # IPython's DisplayHandle: the output's text fallback, as first shown and as each update left it
        def __init__(self, obj): self.texts = [repr(obj)]
        def update(self, obj, raw=False): self.texts.append(obj["text/plain"] if raw else repr(obj))

    monkeypatch.setattr(progress, "show_output", lambda obj, **kw: shown.append(Handle(obj)) or shown[-1])
    torch.manual_seed(0)
    X, y = torch.randn(200, 8), torch.randint(0, 2, (200,))
    dl = tb.TensorLoader(X, y, batch_size=50)
    run = tb.fit(nn.Linear(8, 2), dl, dl, loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=3),
                 callbacks=[progress.Progress()], live=False)
    epochs, steps = shown
    assert run.stopped == "completed" and "0/3" in epochs.texts[0] and "0/12" in steps.texts[0]
    assert "3/3" in epochs.texts[-1] and "100%" in epochs.texts[-1]  # the saved output: the bar as it ended
    assert steps.texts[-1] == ""  # the step bar closes (leave=False): its saved output goes with it


def test_a_bar_that_ended_early_says_how_and_keeps_its_time(capsys, monkeypatch):
    "Probe 43: an early stop's bar restarted its clock (2/2 at 1,126 it/s); a failed run's bar read 0/3 as if unstarted."
    import time
    monkeypatch.setattr("trainbook.progress.display_mode", lambda: "text")
    firsts = []

    class FirstStep(Callback):
        def after_step(self, state):
            if not firsts: firsts.append(time.time())  # tqdm's clock is time.time

    X, y = blobs(n=256)
    bar = Progress()
    before = time.time()
    run = tb.fit(nn.Sequential(nn.Linear(8, 3)), tb.TensorLoader(X, y, batch_size=64), [(X[:64], y[:64])],
                 loss_fn=nn.functional.cross_entropy, live=False, callbacks=[bar, FirstStep()],
                 config=tb.TrainConfig(epochs=40, lr=1e-6, patience=1, min_delta=1.0, device="cpu"))
    assert run.stopped == "early_stopping" and bar.epochs.n == bar.epochs.total == run.epoch + 1
    assert before <= bar.epochs.start_t <= firsts[0]  # the clock of the run, not of the bar's last reset
    assert bar.epochs.desc.rstrip(": ") == f"epochs (stopped early after {run.epoch + 1} of 40)"
    # max_steps mid-epoch: said by the bar and by a line, as an early stop is; the epoch it closed counts
    run = tb.fit(nn.Sequential(nn.Linear(8, 3)), tb.TensorLoader(X, y, batch_size=64), [(X[:64], y[:64])],
                 loss_fn=nn.functional.cross_entropy, live=False, callbacks=[bar],
                 config=tb.TrainConfig(epochs=3, max_steps=6, device="cpu"))
    assert run.stopped == "max_steps" and bar.epochs.desc.rstrip(": ") == "epochs (max_steps reached after 2 of 3)"
    assert "stopped at max_steps=6 (epoch 1, step 6)" in capsys.readouterr().out

    class Boom(Callback):
        def after_step(self, state):
            if state.step == 3: raise ValueError("boom")

    with pytest.raises(ValueError):
        tb.fit(nn.Sequential(nn.Linear(8, 3)), tb.TensorLoader(X, y, batch_size=64), loss_fn=nn.functional.cross_entropy,
               live=False, callbacks=[bar, Boom()], config=tb.TrainConfig(epochs=3, device="cpu"))
    assert bar.epochs.desc.rstrip(": ") == "epochs (failed after 0 of 3)"


def test_a_closed_step_bar_and_closed_live_curves_leave_no_widget_open(monkeypatch):
    """Probe 53: each live fit left about 24 ipywidgets open in the kernel (the closed step bar's parts, the
    closed curves' Layouts and Styles): 1,200 after 50 fits."""
    import ipywidgets as w
    import tqdm.auto, tqdm.notebook
    import trainbook.progress as progress
    from trainbook.live import close_widgets
    monkeypatch.setattr(progress, "display_mode", lambda: "widget")
    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)
    monkeypatch.setattr(progress, "show_output", lambda obj, **kw: type("H", (), {"update": lambda *a, **k: None})())
    def open_widgets(): return {id(v) for v in w.Widget.widgets.values() if getattr(v, "comm", None) is not None}
    torch.manual_seed(0)
    X, y = torch.randn(200, 8), torch.randint(0, 2, (200,))
    dl = tb.TensorLoader(X, y, batch_size=50)
    bars = progress.Progress()
    before = open_widgets()
    tb.fit(nn.Linear(8, 2), dl, dl, loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=2),
           callbacks=[bars], live=False)
    kept = open_widgets() - before  # the epochs bar ends as static HTML (probe 133): its widgets close too
    epochs_bar = [bars.epochs.container, *bars.epochs.container.children]
    assert not kept and all(x.comm is None for x in epochs_bar)
    box = w.VBox([w.HTML("a"), w.Button(description="b")])
    parts = [box, *box.children, box.layout, *(c.layout for c in box.children)]
    close_widgets(box)
    assert all(p.comm is None for p in parts)


def test_a_text_bars_last_drawing_is_its_end_not_zero(monkeypatch, capsys, tmp_path):
    "Probe 61: a log file kept '0/24' as the step bar's last line (tqdm's reset draws); after a resume a negative rate."
    import re
    monkeypatch.setattr("trainbook.progress.display_mode", lambda: "text")
    X, y = blobs(n=128)
    kw = dict(loss_fn=nn.functional.cross_entropy, live=False, callbacks=[Progress(lines=False)])  # a terminal's
    cfg = lambda epochs: tb.TrainConfig(epochs=epochs, device="cpu", checkpoint_dir=str(tmp_path))
    first = tb.fit(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=16), config=cfg(2), **kw)
    tb.fit(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=16), config=cfg(4), resume=first.run_dir, **kw)
    lines = [p for p in re.split(r"[\r\n]", capsys.readouterr().err) if re.match(r"\s*epoch \d+:", p)]
    for total in (16, 32):
        last = [p for p in lines if f"/{total} " in p][-1]
        assert f"{total}/{total} " in last and "-" not in last.split("[")[1], last


@pytest.mark.parametrize("cfg", [dict(epochs=3, max_steps=20),
                                 dict(epochs=40, lr=1e-6, patience=1, min_delta=1.0, eval_every=2)],
                         ids=["max_steps", "early_stop_mid_epoch"])
def test_an_end_inside_an_epoch_counts_the_epoch_it_validated(cfg):
    """Probe 103: max_steps at step 20 of 12-step epochs read '1/1' over the values of the second epoch, while
    run.metrics() had 2 rows; an early stop at a mid-epoch validation read one epoch short in the same way."""
    X, y = blobs(n=192)
    bars = Progress()
    run = tb.fit(nn.Sequential(nn.Linear(8, 3)), tb.TensorLoader(X, y, batch_size=16), [(X[:64], y[:64])],
                 loss_fn=nn.functional.cross_entropy, live=False, callbacks=[bars],
                 config=tb.TrainConfig(device="cpu", **cfg))
    assert run.stopped in ("max_steps", "early_stopping") and run.step % 12  # it ended inside an epoch
    rows = run.metrics()
    assert bars.epochs.n == bars.epochs.total == len(rows) == run.epoch + 1
    assert f"after {len(rows)} of {cfg['epochs']})" in bars.epochs.desc
    assert f"valid_loss={rows.valid_loss.iloc[-1]:.4g}" in str(bars.epochs)  # the values of the epoch it counts


class _Terminal(io.StringIO):
    "A stderr that says it is a terminal."
    def isatty(self): return True


def test_a_log_gets_one_plain_line_an_epoch_and_a_terminal_the_bars(monkeypatch):
    """Probe 103: with stderr to a file, a script's log kept every redraw of two bars, carriage returns and the
    step bar's cursor-up codes included; the docs promised a plain script one bar."""
    import sys
    monkeypatch.setattr("trainbook.progress.display_mode", lambda: "text")  # a plain script
    X, y = blobs(n=64)
    def fit(bars, epochs=2, **cfg):
        return tb.fit(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=16), [(X, y)],
                      loss_fn=nn.functional.cross_entropy, live=False, callbacks=[bars],
                      config=tb.TrainConfig(epochs=epochs, device="cpu", **cfg))
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    bars = Progress()
    fit(bars)
    text = log.getvalue()
    assert bars.steps is None and "\r" not in text and "\x1b" not in text  # no step bar, nothing redrawn
    lines = text.splitlines()
    assert [line.split("|")[0].strip() for line in lines] == ["epochs:   0%", "epochs:  50%", "epochs: 100%"]
    assert "train_loss=" in lines[1] and "valid_loss=" in lines[2] and text.endswith("\n")
    log.truncate(0), log.seek(0)
    fit(Progress(), epochs=3, max_steps=6)  # an early end: its own line, the bar's last words
    assert log.getvalue().splitlines()[-1].startswith("epochs (max_steps reached after 2 of 3): 100%")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bars = Progress()
    fit(bars)
    assert bars.steps is not None and bars.steps.n == 8 and "\r" in terminal.getvalue()  # a terminal: both bars
    log.truncate(0), log.seek(0)
    monkeypatch.setattr(sys, "stderr", log)
    fit(Progress(lines=False))  # asked for: bars even where stderr is no terminal
    assert "epoch 1:" in log.getvalue()
