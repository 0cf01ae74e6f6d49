"A saved TrainPanel in real JupyterLab with its kernel gone: the panel's last state in place of 'model not found'."
import nbformat
from nbformat.sign import NotebookNotary

from conftest import ARTIFACTS


def test_a_dead_panel_shows_its_fallback_and_a_live_one_hides_it(browser, lab):
    "Probe 133: the CSS of figures.fallback_html against JupyterLab's own DOM (a widget whose model is gone)."
    from trainbook.figures import fallback_html
    dead = nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "0" * 32, "version_major": 2, "version_minor": 0},
        "text/plain": "VBox(...)"})
    page_html = fallback_html('<p class="tb-last">run <b>completed</b> after 36 steps</p>')
    fallback = nbformat.v4.new_output("display_data", data={"text/html": page_html, "text/plain": ""})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("panel", outputs=[dead, fallback]),
                                         nbformat.v4.new_code_cell("alone", outputs=[fallback])])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    NotebookNotary().sign(nb)  # as JupyterLab signs a notebook it saved: its HTML outputs are trusted
    nbformat.write(nb, str(lab["root"] / "probe133_dead_panel.ipynb"))
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    # a workspace of its own: the page shows this notebook only (not the tabs an earlier test left open)
    page.goto(f"{lab['url']}/lab/workspaces/lab-restart/tree/probe133_dead_panel.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell .tb-last", state="attached", timeout=120_000)
    # JupyterLab gives up on the model (about 2 s): the output itself then carries `jupyter-widgets`
    page.wait_for_selector(".jp-OutputArea-output.jupyter-widgets", state="attached", timeout=60_000)
    seen = page.evaluate("""() => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell')).map(c => ({
        fallback: Array.from(c.querySelectorAll('.tb-fallback')).map(f => f.checkVisibility()),
        error: Array.from(c.querySelectorAll('.jp-OutputArea-output.jupyter-widgets')).map(o => o.checkVisibility())}))""")
    page.screenshot(path=str(ARTIFACTS / "lab-dead-panel.png"))
    page.close()
    assert seen[0] == {"fallback": [True], "error": [False]}, seen  # the last state, not the error
    assert seen[1] == {"fallback": [False], "error": []}, seen  # no widget gone before it: hidden
