"""`make docs`: the docs site in _docs/, rendered from the notebooks.

With quarto installed this is `nbdev_docs`. Without it: every notebook is executed (nbclient, on a copy in
build/docs/), `nbdev_proc_nbs` processes the executed copies (show_doc signatures, hidden cells dropped), and
nbconvert renders each to HTML in _docs/ with a navigation bar linking every page and plotly's library beside
them, so plots draw offline.
"""
import html, os, re, shutil, subprocess, sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PROC, DOCS, SRC = ROOT / "_proc", ROOT / "_docs", ROOT / "build" / "docs"  # nbdev skips folders named _x or .x


def title_of(nb, fallback: str) -> tuple[str, str]:
    "(title, summary) from the notebook's raw front matter or its first heading."
    title, summary = fallback, ""
    for c in nb.cells:
        if c.cell_type == "raw" and c.source.startswith("---"):
            m = re.search(r"^title:\s*(.+)$", c.source, re.M)
            d = re.search(r"^description:\s*(.+(?:\n\s+.+)*)", c.source, re.M)
            if m: title = m.group(1).strip().strip("'\"")
            if d: summary = " ".join(d.group(1).split()).strip("'\"")
        elif c.cell_type == "markdown" and c.source.startswith("# ") and title == fallback:
            title = c.source.splitlines()[0][2:].strip()
    return title, summary


def pages() -> list[Path]:
    "The processed notebooks in docs order: index, tutorials, then the numbered modules."
    nbs = sorted(p for p in PROC.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    key = lambda p: (p.name != "index.ipynb", "tutorials" not in p.parts, str(p))
    return sorted(nbs, key=key)


def href(p: Path, base: Path) -> str:
    return os.path.relpath(DOCS / p.relative_to(PROC).with_suffix(".html"), (DOCS / base.relative_to(PROC)).parent)


def nav(current: Path, all_pages: list, titles: dict) -> str:
    links = [f'<a href="{href(p, current)}"{" class=cur" if p == current else ""}>{html.escape(titles[p][0])}</a>' for p in all_pages]
    return ("<nav class='tb-nav'><b>trainbook</b> · " + " · ".join(links) + "</nav>"
            "<style>.tb-nav{padding:8px 16px;border-bottom:1px solid #ddd;font-family:sans-serif;font-size:14px;"
            "line-height:1.8}.tb-nav a{margin:0 2px}.tb-nav a.cur{font-weight:bold}</style>")


def out_dir(p: Path) -> Path:
    d = (DOCS / p.relative_to(PROC)).parent
    d.mkdir(parents=True, exist_ok=True)
    return d


def execute_copies() -> None:
    "Run every notebook on a copy (a kernel each, headless display settings) so the pages carry the lessons' outputs."
    from nbclient import NotebookClient
    shutil.rmtree(SRC, ignore_errors=True)
    shutil.copytree(ROOT / "nbs", SRC / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in sorted((SRC / "nbs").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
        nbformat.write(nb, path)
        print(f"  executed {path.relative_to(SRC / 'nbs')}", flush=True)


def tidy(nb) -> None:
    "Quarto-only bits out: the front-matter cell, show_doc's source cells, and quarto's link attributes."
    for c in nb.cells:
        tags = c.metadata.setdefault("tags", [])
        if c.cell_type == "raw": tags.append("remove")
        if c.cell_type == "code" and "#| echo: false" in c.source: tags.append("hide-input")
        for o in c.get("outputs", []):
            for mime in ("text/markdown", "text/html"):
                if mime in o.get("data", {}):
                    o["data"][mime] = re.sub(r"\{target=\"_blank\"[^}]*\}", "", o["data"][mime])


def render() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    all_pages = pages()
    nbs = {p: nbformat.read(p, as_version=4) for p in all_pages}
    titles = {p: title_of(nb, p.stem) for p, nb in nbs.items()}
    from nbconvert.preprocessors import TagRemovePreprocessor
    exporter = HTMLExporter(template_name="lab")
    exporter.register_preprocessor(TagRemovePreprocessor(remove_input_tags={"hide-input"}, remove_cell_tags={"remove"}), enabled=True)
    import plotly
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", DOCS / "plotly.min.js")
    for p, nb in nbs.items():
        tidy(nb)
        body, _ = exporter.from_notebook_node(nb)
        body = re.sub(r'href="([^"#:]+)\.ipynb', r'href="\1.html', body)  # links between notebooks → pages
        lib = os.path.relpath(DOCS / "plotly.min.js", out_dir(p))
        body = body.replace("</head>", f'<script src="{lib}"></script></head>', 1)  # every page can draw plotly figures
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav(p, all_pages, titles), body, count=1)
        out = DOCS / p.relative_to(PROC).with_suffix(".html")
        out.write_text(body)
    items = "".join(f'<li><a href="{href(p, PROC / "index.ipynb")}">{html.escape(t)}</a> — {html.escape(s)}</li>'
                    for p, (t, s) in titles.items())
    (DOCS / "pages.html").write_text(f"<!doctype html><meta charset=utf-8><title>trainbook docs</title>"
                                     f"{nav(PROC / 'index.ipynb', all_pages, titles)}<h1>trainbook</h1><ul>{items}</ul>")
    print(f"rendered {len(nbs)} pages with nbconvert into {DOCS.relative_to(ROOT)}/ (index.html is the README page, pages.html lists all)")


def main() -> int:
    if shutil.which("quarto"):
        print("quarto found: building with nbdev_docs")
        return subprocess.run([BIN / "nbdev_docs"], cwd=ROOT).returncode
    print("quarto not installed: nbdev_proc_nbs + nbconvert HTML")
    os.environ.update(TRAINBOOK_LIVE="static", PLOTLY_RENDERER="notebook")  # the kernels inherit these
    shutil.rmtree(PROC, ignore_errors=True); shutil.rmtree(DOCS, ignore_errors=True)
    execute_copies()
    # nbdev's processing step alone: the nbdev_proc_nbs command first tries to install quarto, and with it the
    # library into whatever `pip` is on PATH, which must not happen on a machine without quarto.
    from nbdev.serve import proc_nbs
    proc_nbs(path=str(SRC / "nbs"), n_workers=0)  # _proc was removed above: everything is processed afresh
    render()
    return 0


if __name__ == "__main__":
    sys.exit(main())
