"`make demo`: run the quickstart tutorial headless on scikit-learn's bundled data; write the executed notebook and its HTML to demo_output/."
import os, sys, time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "nbs" / "tutorials" / "quickstart.ipynb"
OUT = ROOT / "demo_output"

def main() -> int:
    OUT.mkdir(exist_ok=True)
    # No front end will draw widgets here: LiveCurves shows a static figure at the end, and plotly embeds its
    # library in the output so the HTML page draws the figures offline. The kernel inherits these.
    os.environ["TRAINBOOK_LIVE"] = "static"
    os.environ["PLOTLY_RENDERER"] = "notebook"
    nb = nbformat.read(NB, as_version=4)
    t0 = time.perf_counter()
    print(f"executing {NB.relative_to(ROOT)} ...", flush=True)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NB.parent)}}).execute()
    nbformat.write(nb, OUT / "quickstart.ipynb")
    html, _ = HTMLExporter().from_notebook_node(nb)
    (OUT / "quickstart.html").write_text(html)
    # The notebook's last cell prints a one-paragraph summary of the run: show it here too.
    for cell in nb.cells[::-1]:
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        if text.strip(): print(text.strip()); break
    print(f"done in {time.perf_counter() - t0:.0f}s: demo_output/quickstart.ipynb and demo_output/quickstart.html")
    return 0

if __name__ == "__main__":
    sys.exit(main())
