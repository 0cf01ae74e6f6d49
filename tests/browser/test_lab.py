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

    # the SplitBuilder and the TrainPanel rendered as widgets
    assert page.locator(".jupyter-widgets .widget-dropdown").count() >= 4
    overfit = page.get_by_role("button", name="Overfit one batch")
    assert overfit.count() == 1
    overfit.scroll_into_view_if_needed()
    overfit.click()
    page.wait_for_selector("text=/overfit one batch: PASSED/", timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "lab-trainpanel-overfit.png"))
    assert not [e for e in errors if "trainbook" in e.lower()], errors
    page.close()
