"Probe 133: what a saved notebook shows once its kernel is gone (a restart, a reopened notebook)."
import torch
from torch import nn

import trainbook as tb


def test_a_finished_bar_is_saved_as_a_static_bar_not_a_widget(monkeypatch):
    """A notebook reopened after its kernel restarted drew each fit's epochs bar as 'Error displaying widget:
    model not found' above the curves: the output kept the bar's widget. It ends as plain HTML and text now."""
    import tqdm.auto, tqdm.notebook
    import trainbook.progress as progress
    monkeypatch.setattr(progress, "display_mode", lambda: "widget")  # what a JupyterLab kernel gets
    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)
    shown = []

    class Handle:  # IPython's DisplayHandle: what the output holds after each update
        def __init__(self, obj): self.bundles = [obj._repr_mimebundle_()]
        def update(self, obj, raw=False): self.bundles.append(obj if raw else obj._repr_mimebundle_())

    monkeypatch.setattr(progress, "show_output", lambda obj, **kw: shown.append(Handle(obj)) or shown[-1])
    torch.manual_seed(0)
    X, y = torch.randn(200, 8), torch.randint(0, 2, (200,))
    dl = tb.TensorLoader(X, y, batch_size=50)
    bars = progress.Progress()
    run = tb.fit(nn.Linear(8, 2), dl, dl, loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=3),
                 callbacks=[bars], live=False)
    epochs, steps = shown
    assert run.stopped == "completed"
    assert "application/vnd.jupyter.widget-view+json" in epochs.bundles[0]  # live: the widget
    saved = epochs.bundles[-1]
    assert "application/vnd.jupyter.widget-view+json" not in saved, saved  # what a reopened notebook shows
    assert '<progress value="3" max="3"' in saved["text/html"] and "3/3" in saved["text/html"]
    assert "epochs" in saved["text/html"] and "train_loss=" in saved["text/html"]
    assert "3/3" in saved["text/plain"] and "100%" in saved["text/plain"]
    assert steps.bundles[-1] == {"text/plain": ""}
    parts = [bars.epochs.container, *bars.epochs.container.children]
    assert all(p.comm is None for p in parts)  # nothing of the bar left open in the kernel


def test_a_panel_shows_its_last_curves_once_its_kernel_is_gone(monkeypatch):
    """A saved notebook's TrainPanel, reopened after its kernel restarted, read 'Error displaying widget: model not
    found'. Beside the widget the panel now keeps a second output, hidden while the widget lives, that JupyterLab
    shows in its place once it is gone: the status and the last curves as plain SVG, no script."""
    import IPython.display
    torch.manual_seed(0)
    X = torch.randn(128, 4)
    y = (X[:, 0] > 0).long()
    dl = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 96, 32)]
    shown = []

    class Handle:
        def __init__(self, obj): self.bundles = [obj]
        def update(self, obj, raw=False): self.bundles.append(obj)

    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(Handle(obj)) or shown[-1])
    p = tb.TrainPanel(nn.Linear(4, 2), dl, [(X[96:], y[96:])], loss_fn=nn.CrossEntropyLoss(),
                      config=tb.TrainConfig(epochs=2, lr=1e-2))
    p._ipython_display_()
    live, fallback = shown
    assert "application/vnd.jupyter.widget-view+json" in live.bundles[0]
    page = fallback.bundles[0]["text/html"]
    assert "application/vnd.jupyter.widget-view+json" not in fallback.bundles[0]
    assert 'class="tb-fallback" style="display:none"' in page and "ready" in page  # hidden while the widget lives
    # JupyterLab's mark of a widget it cannot draw (the output itself carries `jupyter-widgets`) shows it
    assert ".jp-OutputArea-output.jupyter-widgets) ~ .jp-OutputArea-child .tb-fallback{display:block" in page
    p._start("training", p._train)
    p.wait()
    assert p.run is not None and p.run.stopped == "completed"
    page = fallback.bundles[-1]["text/html"]
    assert "completed" in page and "<script" not in page and page.count("<polyline") >= 3
    assert "valid loss" in page and "train loss (smoothed)" in page
    assert "completed" in live.bundles[-1]["text/html"]  # the widget's own snapshot follows as before
