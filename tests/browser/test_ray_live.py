"""A Ray launch from a JupyterLab cell: rank 0's curves grow in the launching cell's output while the cell is still
busy, and the cell ends with the Run the workers returned."""
import importlib.util, json

import pytest

from conftest import ARTIFACTS

if importlib.util.find_spec("ray") is None:
    pytest.skip("needs ray (pip install trainbook[ray])", allow_module_level=True)

# Rank 0 holds the run at the start of epochs 1 and 2 until the test has seen the curves of the epochs before (a
# handshake through files, 120 s at most): "while the cell is busy" is then certain, not a race against the run.
CELL = """\
import os, time, torch, trainbook as tb
from torch import nn
from trainbook.events import Callback
GATES = {gates}

class Gate(Callback):
    def before_epoch(self, state):
        import torch.distributed as dist
        gate = GATES.get(state.epoch)
        deadline = time.monotonic() + 120
        while dist.get_rank() == 0 and gate and not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.05)

def train():
    tb.seed_everything(0)
    X = torch.randn(512, 8)
    y = (X[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    dl_train = tb.TensorLoader(X, y, batch_size=32, shuffle=True)  # made in the worker: 32 rows a rank
    dl_valid = tb.TensorLoader(X[:128], y[:128], batch_size=64)
    return tb.fit(model, dl_train, dl_valid, loss_fn=nn.functional.cross_entropy,
                  callbacks=[Gate()], config=tb.TrainConfig(epochs=3, log_every=2))

run = tb.launch(train, engine="ray", num_workers=2, timeout=600)
print("ray run:", type(run).__name__, run.stopped, run.step)"""

# the launching cell: whether it is busy ([*]), and how many points its figure's 'train loss' trace holds
CELL_STATE = """() => {
    const cell = document.querySelector('.jp-Notebook .jp-CodeCell');
    const plot = cell && cell.querySelector('.jp-OutputArea .js-plotly-plot');
    const trace = plot && (plot.data || []).find(t => t.name === 'train loss');
    const prompt = (cell && cell.querySelector('.jp-InputPrompt')) || {innerText: ''};
    return {busy: prompt.innerText.includes('*'),
            n: trace ? Array.from(trace.x || []).length : 0};
}"""


def points_while_busy(page, more_than: int) -> int:
    "Wait until the cell, still busy, draws more than `more_than` train-loss points; their number."
    try:
        found = page.wait_for_function(f"least => {{ const s = ({CELL_STATE})(); return s.busy && s.n > least && s; }}",
                                       arg=more_than, timeout=240_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab-ray-live-failure.png"))
        raise AssertionError(f"no more than {more_than} points while busy: {page.evaluate(CELL_STATE)}")
    return found.json_value()["n"]


def test_live_curves_grow_in_the_launching_cell_during_a_ray_run(browser, lab):
    gates = {1: str(lab["root"] / "ray-seen-epoch-0"), 2: str(lab["root"] / "ray-seen-epoch-1")}
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": CELL.format(gates=gates)}]
    (lab["root"] / "ray-live.ipynb").write_text(json.dumps(
        {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                     "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}))
    page = browser.new_page(viewport={"width": 1300, "height": 1100})
    try:
        page.goto(f"{lab['url']}/lab/workspaces/ray-live/tree/ray-live.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        page.wait_for_selector("text=/Python 3 \\(ipykernel\\) \\| Idle/", timeout=120_000)
        page.locator(".jp-Cell .jp-InputArea-editor").first.click()
        page.keyboard.press("Shift+Enter")
        first = points_while_busy(page, 0)  # epoch 0's points, drawn while rank 0 waits at epoch 1
        open(gates[1], "w").close()
        second = points_while_busy(page, first)  # epoch 1's, in the same figure, the cell still running
        open(gates[2], "w").close()
        page.wait_for_selector("text=/ray run: Run completed 24/", timeout=240_000)  # 3 epochs of 512 / (2 * 32)
        # the printed line comes before the kernel's reply that clears the cell's [*]: wait for that reply too
        end = page.wait_for_function(f"() => {{ const s = ({CELL_STATE})(); return !s.busy && s; }}",
                                     timeout=60_000).json_value()
        page.screenshot(path=str(ARTIFACTS / "lab-ray-live.png"))
        assert not end["busy"] and end["n"] > second > first > 0, (first, second, end)
        assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").count() == 0
    finally:
        for gate in gates.values(): open(gate, "a").close()  # a failed test leaves no worker waiting
        page.close()
