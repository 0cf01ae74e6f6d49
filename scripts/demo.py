"""`make demo`: run the quickstart tutorial headless on scikit-learn's bundled data; write the executed notebook and
its HTML to demo_output/, and check what a person would see in a front end without a kernel (nbconvert's HTML, as
nbviewer, GitHub and the docs render it): every cell that shows a widget or a figure has visible content."""
import os, sys, time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "nbs" / "tutorials" / "quickstart.ipynb"
OUT = ROOT / "demo_output"
SHOWN = ("application/vnd.jupyter.widget-view+json", "application/vnd.plotly.v1+json")
# how the quickstart's one-paragraph summary of its run begins (printed under "The checklist"; sections follow it)
SUMMARY_STARTS = "quickstart: data ok="


class CellText(HTMLParser):
    "The visible text and the plot containers of each rendered cell's outputs (what a reader of the page sees)."
    def __init__(self):
        super().__init__()
        self.cells, self.depth, self.skip = [], 0, 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "div" and "jp-Cell " in f"{cls} " and "jp-CodeCell" in cls: self.cells.append({"text": "", "plots": 0})
        if tag in ("script", "style"): self.skip += 1
        if tag == "div" and "tb-figure" in cls and self.cells: self.cells[-1]["plots"] += 1
        if tag == "button" and self.cells: self.cells[-1]["text"] += " [button] "

    def handle_endtag(self, tag):
        if tag in ("script", "style"): self.skip -= 1

    def handle_data(self, data):
        if self.cells and not self.skip: self.cells[-1]["text"] += data


def visible_outputs(nb, html: str) -> list[str]:
    "Problems: cells whose widget or figure outputs render to nothing without a kernel."
    parser = CellText()
    parser.feed(html)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    problems = []
    for cell, seen in zip(code_cells, parser.cells):
        wanted = [o for o in cell.get("outputs", []) if any(m in o.get("data", {}) for m in SHOWN)
                  or "tb-snapshot" in str(o.get("data", {}).get("text/html", ""))]
        if wanted and not (seen["plots"] or len(seen["text"].split()) > 3):
            problems.append(cell.source.splitlines()[0][:60])
    return problems


def run_summary(nb) -> str:
    "The quickstart's summary of its run: the printed text that begins with `SUMMARY_STARTS`, found by what it says."
    for cell in nb.cells:
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        for line in text.splitlines():
            if line.startswith(SUMMARY_STARTS): return line.strip()
    raise ValueError(f"the executed quickstart printed no run summary: no output line begins with "
                     f"{SUMMARY_STARTS!r}: the cell that prints it (nbs/tutorials/quickstart.ipynb, under 'The "
                     "checklist') was changed or removed, or scripts/demo.py's SUMMARY_STARTS no longer matches it")


def main() -> int:
    OUT.mkdir(exist_ok=True)
    # No front end will draw widgets here: LiveCurves shows a static figure at the end, plotly's own figures are
    # saved as JSON and given their HTML view afterwards, with plotly.js once. The kernel inherits these.
    os.environ["TRAINBOOK_LIVE"] = "static"
    os.environ["PLOTLY_RENDERER"] = "plotly_mimetype"
    sys.path.insert(0, str(ROOT))
    from trainbook.figures import portable_outputs
    nb = nbformat.read(NB, as_version=4)
    t0 = time.perf_counter()
    print(f"executing {NB.relative_to(ROOT)} ...", flush=True)
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(NB.parent)}}).execute()
    counts = portable_outputs(nb)
    nbformat.write(nb, OUT / "quickstart.ipynb")
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    (OUT / "quickstart.html").write_text(html)
    # The notebook prints a one-paragraph summary of the run: show it here too (a demo without it fails).
    try: print(run_summary(nb))
    except ValueError as e: missing = f"FAIL: {e}"
    else: missing = None
    size = (OUT / "quickstart.ipynb").stat().st_size
    print(f"demo_output/quickstart.ipynb: {size / 1e6:.2f} MB (plotly.js copies: {counts['plotlyjs_copies']}); "
          f"demo_output/quickstart.html: {(OUT / 'quickstart.html').stat().st_size / 1e6:.2f} MB")
    problems = visible_outputs(nb, html)
    print("every widget and figure cell shows content without a kernel" if not problems else
          f"FAIL: cells with nothing to show without a kernel: {problems}")
    if missing: print(missing)
    print(f"done in {time.perf_counter() - t0:.0f}s: demo_output/quickstart.ipynb and demo_output/quickstart.html")
    return 1 if problems or missing else 0


if __name__ == "__main__":
    sys.exit(main())
