"A fresh TrainPanel in real JupyterLab: Train as the first click draws its curves, and every button, in any order, replaces the chart with its own."
import json

import pytest

from conftest import ARTIFACTS

SETUP = """\
import torch, trainbook as tb
from torch import nn
tb.seed_everything(0)
X = torch.randn(768, 8)
y = (X[:, 0] + 0.5 * X[:, 1] > 0).long()
dl_train = tb.TensorLoader(X[:512], y[:512], batch_size=32, shuffle=True)
dl_valid = tb.TensorLoader(X[512:], y[512:], batch_size=256)
panel = tb.TrainPanel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)), dl_train, dl_valid,
                      loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=4, lr=3e-3), metrics="accuracy")
panel"""

# what each button leaves: the status line it ends with, and the trace its chart holds (None: a table, no chart)
DONE = {"Train": ("run (completed|stopped early.*) after", "valid loss"),
        "Overfit one batch": ("overfit one batch: (PASSED|FAILED)", "train loss on one batch"),
        "Find LR": ("suggested lr:", "train loss (smoothed)"),
        "Dry run": ("dry run: (PASSED|FAILED)", None)}
# every ordered pair of distinct buttons appears once: each button follows every other one
ORDER = ["Train", "Overfit one batch", "Find LR", "Dry run", "Train", "Find LR", "Overfit one batch", "Dry run",
         "Find LR", "Train", "Dry run", "Overfit one batch", "Train"]

# the error boxes ipywidgets and anywidget draw when a view cannot be made, and plotly's own
ERRORS = """() => Array.from(document.querySelectorAll('.jupyter-widgets, .widget-error, .jp-OutputArea-output'))
    .map(e => e.innerText || '').filter(t => /Failed to create view|Runtime not found|Error:|Traceback/.test(t))
    .map(t => t.slice(0, 300))"""

# the panel's chart: the plotly figures inside the panel's output, their traces and drawn line paths
CHART = """() => {
    const panel = document.querySelector('.tb-panel');
    if (!panel) return {found: false};
    const plots = Array.from(panel.querySelectorAll('.js-plotly-plot'));
    const paths = plots.flatMap(d => Array.from(d.querySelectorAll('.scatterlayer path.js-line')))
                       .map(p => (p.getAttribute('d') || '').length);
    return {found: true, n: plots.length, traces: plots.flatMap(d => (d.data || []).map(t => t.name || '')),
            paths: paths.filter(n => n > 20).length, text: panel.innerText.slice(0, 2000)};
}"""


def notebook(path):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": SETUP}]
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                      "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


def open_panel(browser, lab, name):
    notebook(lab["root"] / name)
    page = browser.new_page(viewport={"width": 1300, "height": 1100})
    # a workspace of its own: the page shows this notebook only (not the tabs an earlier test left open)
    page.goto(f"{lab['url']}/lab/workspaces/{name.split('.')[0]}/tree/{name}?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_selector("text=/Python 3 \\(ipykernel\\) \\| Idle/", timeout=120_000)  # a fresh kernel is up
    page.locator(".jp-Cell .jp-InputArea-editor").first.click()
    page.keyboard.press("Shift+Enter")
    try:
        page.get_by_role("button", name="Train").wait_for(timeout=120_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab-panel-failure.png"))
        raise
    return page


def click_and_wait(page, button):
    status, trace = DONE[button]
    page.get_by_role("button", name=button).click()
    page.wait_for_function("re => new RegExp(re).test((document.querySelector('.tb-panel') || {}).innerText || '')",
                           arg=status, timeout=120_000)
    # the action is over once its button is enabled again (the status comes first, with the panel redrawn)
    page.wait_for_function("""name => Array.from(document.querySelectorAll('.tb-panel button'))
        .some(b => b.textContent.trim() === name && !b.disabled)""", arg=button, timeout=60_000)
    if trace is None:
        page.wait_for_function("() => document.querySelectorAll('.tb-panel .js-plotly-plot').length === 0",
                               timeout=30_000)
        return page.evaluate(CHART)
    try:
        page.wait_for_function("""name => { const p = Array.from(document.querySelectorAll('.tb-panel .js-plotly-plot'));
            return p.length === 1 && (p[0].data || []).some(t => (t.name || '').startsWith(name))
                   && Array.from(p[0].querySelectorAll('.scatterlayer path.js-line'))
                           .some(e => (e.getAttribute('d') || '').length > 20); }""", arg=trace, timeout=60_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab-panel-failure.png"))
        raise AssertionError(f"{button}: no chart with {trace!r}: {page.evaluate(CHART)}; errors {page.evaluate(ERRORS)}")
    return page.evaluate(CHART)


def test_train_first_on_a_fresh_panel_draws_its_curves(browser, lab):
    page = open_panel(browser, lab, "panel-train-first.ipynb")
    before = page.evaluate(CHART)
    assert before["found"] and before["n"] == 0, before  # no empty axes before the first click
    assert "press Train or Overfit one batch" in before["text"], before["text"]
    page.screenshot(path=str(ARTIFACTS / "lab-panel-fresh.png"))
    chart = click_and_wait(page, "Train")
    page.wait_for_timeout(1500)  # let the front end render any late view (an error box would come now)
    page.screenshot(path=str(ARTIFACTS / "lab-panel-train-first.png"))
    assert not page.evaluate(ERRORS), page.evaluate(ERRORS)
    assert chart["n"] == 1 and chart["paths"] >= 2 and "valid loss" in chart["traces"], chart
    page.close()


def test_every_order_of_the_buttons_draws_its_own_chart(browser, lab):
    page = open_panel(browser, lab, "panel-orders.ipynb")
    seen = []
    for i, button in enumerate(ORDER):
        chart = click_and_wait(page, button)
        trace = DONE[button][1]
        # one chart, and it is this button's: the previous button's chart is gone
        assert chart["n"] == (0 if trace is None else 1), (button, chart)
        if trace is not None: assert any(t.startswith(trace) for t in chart["traces"]), (button, chart)
        seen.append(button)
        if i < 4: page.screenshot(path=str(ARTIFACTS / f"lab-panel-{i}-{button.split()[0].lower()}.png"))
    assert not page.evaluate(ERRORS), page.evaluate(ERRORS)
    assert len(seen) == len(ORDER)
    page.close()
