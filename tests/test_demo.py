"`make demo` (scripts/demo.py): what it echoes of the executed quickstart, found by what it is."
import json, sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from demo import NB, SUMMARY_STARTS, run_summary  # noqa: E402


def executed(*printed):
    "A notebook whose code cells each printed one text (None: a cell that printed nothing)."
    cells = []
    for text in printed:
        cell = nbformat.v4.new_code_cell("...")
        if text is not None: cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def test_the_demo_echoes_the_run_summary_not_the_last_cell_that_printed():
    """Probe 116: `make demo` echoed the last cell with printed text as "the run summary": once a section on messy
    frames followed the summary, the demo showed its roles table instead. The summary is found by what it says."""
    summary = f"{SUMMARY_STARTS}True, split stratified (ab12), best valid ROC-AUC 0.9980; checklist ready=True"
    roles = "           role     dtype\nseen   datetime  datetime64[ns]\nvisits  numeric  Int64\n"
    assert run_summary(executed("loss: cross_entropy\n", summary + "\n", None, roles)) == summary


def test_the_demo_fails_loudly_without_a_run_summary():
    with pytest.raises(ValueError, match=f"no output line begins with '{SUMMARY_STARTS}'.*quickstart.ipynb"):
        run_summary(executed("loss: cross_entropy\n", "           role\nseen   datetime\n"))


def test_the_quickstart_prints_the_summary_the_demo_looks_for():
    "The marker and the notebook agree: a code cell of the quickstart prints a line beginning with it (unexecuted)."
    cells = json.loads(NB.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any(f'print(f"{SUMMARY_STARTS}' in s for s in sources)
