"The quickstart in real JupyterLab: every cell runs, curves are drawn, widgets render, Overfit one batch answers, no errors."
import pytest

from conftest import ARTIFACTS


def run_all(page):
    "Run every cell through JupyterLab's own menu."
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def test_quickstart_in_jupyterlab(browser, lab):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{lab['url']}/lab/tree/tutorials/quickstart.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_selector("text=/Python 3 \\(ipykernel\\) \\| Idle/", timeout=120_000)  # the kernel is up
    run_all(page)
    # the last cell prints the summary line once everything above it ran
    page.wait_for_selector("text=/quickstart: data ok=True/", timeout=300_000)
    page.screenshot(path=str(ARTIFACTS / "lab-quickstart-end.png"), full_page=False)

    # no cell produced an error output
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").count() == 0

    # plotly curves drawn, with train and valid traces
    names = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
                                      .flatMap(d => (d.data || []).map(t => t.name || ''))""")
    assert any(n.startswith("train") for n in names) and any(n.startswith("valid") for n in names), names
    curves = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
                                       .findIndex(d => (d.data || []).some(t => t.name === 'valid loss'))""")
    assert curves >= 0
    page.locator(".js-plotly-plot").nth(curves).scroll_into_view_if_needed()
    assert page.locator(".js-plotly-plot").nth(curves).locator(".main-svg").count() > 0  # drawn, not just present
    page.screenshot(path=str(ARTIFACTS / "lab-quickstart-curves.png"))

    # the SplitBuilder and the TrainPanel rendered as widgets; the panel's buttons fit their labels
    assert page.locator(".jupyter-widgets .widget-dropdown").count() >= 4
    overfit = page.get_by_role("button", name="Overfit one batch")
    assert overfit.count() == 1
    overfit.scroll_into_view_if_needed()
    assert overfit.evaluate("b => b.scrollWidth <= b.clientWidth + 1")  # the label is not cut ("Overfit one ba…")

    # Overfit one batch: the loss per step drawn in the panel's figure
    overfit.click()
    page.wait_for_selector("text=/overfit one batch: PASSED/", timeout=120_000)
    assert_drawn(page, "train loss on one batch")
    panel_shot(page, "lab-trainpanel-overfit.png")

    # Find LR: the loss against lr, on a log axis, the suggestion marked
    page.get_by_role("button", name="Find LR").click()
    page.wait_for_selector("text=/suggested lr:/", timeout=120_000)
    plot = assert_drawn(page, "train loss (smoothed)")
    assert plot["xtype"] == "log" and any(a.startswith("suggested") for a in plot["annotations"]), plot
    panel_shot(page, "lab-trainpanel-findlr.png")

    # Dry run: a verdict (or, without trainbook.preflight, the error) in the status line
    page.get_by_role("button", name="Dry run").click()
    page.wait_for_selector("text=/dry run: (PASSED|FAILED)|dry run failed/", timeout=120_000)
    panel_shot(page, "lab-trainpanel-dryrun.png")

    # Train: the live curves in the panel's figure, every axis holding its data
    page.get_by_role("button", name="Train").click()
    page.wait_for_selector("text=/run completed after/", timeout=300_000)
    plot = assert_drawn(page, "valid loss")
    assert plot["inside"], plot
    panel_shot(page, "lab-trainpanel-train.png")
    assert not [e for e in errors if "trainbook" in e.lower()], errors
    page.close()


def assert_drawn(page, trace: str) -> dict:
    "The plotly figure holding `trace` is drawn (an SVG path with points) and its axes hold the trace's data."
    found = page.wait_for_function("""name => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot')).reverse()
                       .find(d => (d.data || []).some(t => (t.name || '').startsWith(name)));
        if (!d || !d._fullLayout) return null;
        const t = d.data.find(t => (t.name || '').startsWith(name));
        const paths = Array.from(d.querySelectorAll('.scatterlayer path.js-line')).map(p => p.getAttribute('d') || '');
        if (!paths.some(p => p.length > 20)) return null;
        const ax = d._fullLayout.xaxis, ay = d._fullLayout.yaxis;
        const xs = Array.from(t.x || []).map(Number), ys = Array.from(t.y || []).map(Number).filter(Number.isFinite);
        const conv = (a, v) => a.type === 'log' ? Math.log10(v) : v;
        const within = (a, vs) => vs.every(v => conv(a, v) >= a.range[0] - 1e-9 && conv(a, v) <= a.range[1] + 1e-9);
        return {xtype: ax.type, n: xs.length, inside: within(ax, xs) && (t.yaxis && t.yaxis !== 'y' ? true : within(ay, ys)),
                annotations: (d.layout.annotations || []).map(a => a.text || '')};
    }""", arg=trace, timeout=60_000).json_value() if wait_or_report(page, trace) else None
    assert found["n"] > 2, found
    return found


def wait_or_report(page, trace: str) -> bool:
    "Wait for a plotly figure holding `trace`; on a timeout, save a screenshot and say which figures there are."
    try:
        page.wait_for_function("""name => Array.from(document.querySelectorAll('.js-plotly-plot'))
                                  .some(d => (d.data || []).some(t => (t.name || '').startsWith(name)))""", arg=trace, timeout=60_000)
        return True
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab-failure.png"))
        names = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
                                         .map(d => (d.data || []).map(t => t.name))""")
        raise AssertionError(f"no figure with {trace!r}; figures: {names}")


def panel_shot(page, name: str):
    "A screenshot of the TrainPanel (its buttons down to its figure), once the action is over (buttons enabled)."
    page.wait_for_function("""() => Array.from(document.querySelectorAll('button'))
        .some(b => b.textContent.trim() === 'Overfit one batch' && !b.disabled)""", timeout=60_000)
    page.get_by_role("button", name="Overfit one batch").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / name))
