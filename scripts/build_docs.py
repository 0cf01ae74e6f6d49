"""`make docs`: the docs site in _docs/, rendered from the notebooks, offline.

With quarto installed this is `nbdev_docs`. Without it (the usual case here), Material for MkDocs with mkdocs-jupyter:
1. every notebook is executed on a copy in build/docs/nbs (nbclient; static displays, no widget state kept), so the pages
   carry the lessons' outputs;
2. nbdev's own processing (`proc_nbs`) turns the copies into doc pages in _proc/: hidden cells dropped, a `show_doc`
   after every exported name with its signature and a parameter table from the docments;
3. the processed notebooks are tidied for mkdocs (title cell back, quarto-only bits out, numbered names dropped as
   nbdev's site does, plotly figures drawn by the one shared plotly.js instead of a copy per page);
4. `mkdocs build` with a generated nav (home, tutorials, then the API by layer), the search plugin, no web fonts;
5. the built pages are tidied (the notebook stylesheet shipped once instead of inlined in every page, no CDN scripts)
   and the sizes printed.
"""
import hashlib, inspect, os, re, shutil, subprocess, sys
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PROC, DOCS, SRC = ROOT / "_proc", ROOT / "_docs", ROOT / "build" / "docs"  # nbdev skips folders named _x or .x
SITE_URL = "https://trainbook.github.io/trainbook/"  # settings.ini's doc_host + doc_baseurl: nbdev's links point there
LAYERS = [("Foundations", "00"), ("Data", "01 02 03"), ("The training loop", "04 05 06 07"),
          ("Sanity and diagnosis", "08 09"), ("Classical models", "10"), ("In the notebook", "11 12 13"),
          ("Scale and integrations", "14 15 16 17 18 19 20")]


def skipped_flags() -> str:
    "The cell flags nbdev_test leaves out (settings.ini's tst_flags, with `eval: false`), as one pattern."
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "settings.ini")
    flags = cfg["DEFAULT"].get("tst_flags", "slow").split()
    return r"\s*#\|\s*(" + "|".join(map(re.escape, flags)) + r"|eval:\s*false)\b"


def execute_one(path: Path) -> str | None:
    "Run one notebook copy in a kernel of its own (the cells nbdev_test skips shown, not run); the error, or None."
    import time
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    nb = nbformat.read(path, as_version=4)
    full, skip, began = nb.cells, skipped_flags(), time.time()
    nb.cells = [c for c in full  # nor an `nbdev_export()` cell: it would rewrite trainbook/ while others import it
                if not (c.cell_type == "code" and (re.match(skip, c.source) or "nbdev_export(" in c.source))]
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3", store_widget_state=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except CellExecutionError as e:
        print(f"  FAILED {path.relative_to(SRC / 'nbs')} after {time.time() - began:.0f} s", flush=True)
        return f"{path.relative_to(SRC / 'nbs')}:\n{e}"
    nb.cells = full  # the skipped cells come back, without outputs
    nbformat.write(nb, path)
    print(f"  executed {path.relative_to(SRC / 'nbs')} in {time.time() - began:.0f} s", flush=True)
    return None


def sources_digest() -> str:
    "A digest of what the executed copies depend on: the notebooks and the library."
    h = hashlib.sha256()
    for p in sorted([*(ROOT / "nbs").rglob("*.ipynb"), *(ROOT / "trainbook").rglob("*.py")]):
        if ".ipynb_checkpoints" in p.parts: continue
        h.update(p.relative_to(ROOT).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


STAMP = SRC / "executed.sha256"  # written when every copy ran: `--reuse` takes the copies only when it matches


def execute_copies() -> int:
    "Run every notebook on a copy (a kernel each, two at a time, headless display settings); 1 when any failed."
    from concurrent.futures import ThreadPoolExecutor
    shutil.rmtree(SRC, ignore_errors=True)
    shutil.copytree(ROOT / "nbs", SRC / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    paths = sorted((SRC / "nbs").rglob("*.ipynb"))
    digest = sources_digest()
    from child_env import set_child_defaults
    set_child_defaults(max(1, (os.cpu_count() or 2) // 2))  # two kernels at a time, each its share of the cores
    with ThreadPoolExecutor(max_workers=2) as pool:  # the kernels are processes: two cores, two kernels
        failed = [e for e in pool.map(execute_one, paths) if e]
    for e in failed: print(f"\nnotebook failed: {e}", flush=True)
    if failed:
        print(f"{len(failed)} of {len(paths)} notebooks failed", flush=True)
        return 1
    STAMP.write_text(digest)
    print(f"every notebook ran ({len(paths)})", flush=True)
    return 0


def copies_current() -> bool:
    "The executed copies are those of the notebooks and library as they are now."
    return STAMP.exists() and STAMP.read_text() == sources_digest()


def with_parameter_tables() -> None:
    "show_doc on the site: the plain signature, the docstring, and a table of the parameters from their docments."
    import nbdev.showdoc
    from fastcore.docments import DocmentTbl
    base = nbdev.showdoc.BasicMarkdownRenderer._repr_markdown_
    def render(self) -> str:
        text = base(self)
        table = DocmentTbl(self.sym)
        if self.sig is None or not table.has_docment: return text
        for d in table.dm.values():  # a `|` in a docment would end its table cell
            if isinstance(d.get("docment"), str): d["docment"] = d["docment"].replace("|", "\\|")
            d["anno"] = type_name(d.get("anno", inspect._empty))
        params, star = [], False
        for p in self.sig.parameters.values():
            if p.name == "self": continue
            if p.kind == p.KEYWORD_ONLY and not star: params.append("*")
            star = star or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
            params.append(type_name(str(p)))
        params = ",\n    ".join(params)
        sig = f"{self.nm}(\n    {params}\n)" if params else f"{self.nm}()"
        if self.sig.return_annotation is not self.sig.empty:
            sig += " -> " + type_name(self.sig.return_annotation)
        return text.replace(f"```python\n{self.dm}\n```", f"```python\n{sig}\n```") + "\n\n" + table._repr_markdown_()
    nbdev.showdoc.BasicMarkdownRenderer._repr_markdown_ = render


def only_what_show_doc_needs() -> None:
    """nbdev's processing runs exported cells, `show_doc` cells and any cell with an import in it. A cell that mixes an
    import with example code (a Spark session, a Ray launch, a training run) already ran in the executed copy, whose
    outputs the page keeps: running it again in this process only costs time (70 of 157 s once). Its top-level code
    is run only when every statement is an import."""
    import ast
    import nbdev.processors as processors
    nbdev_eval = processors._do_eval
    def do_eval(cell):
        trees = cell.parsed_() if cell.cell_type == "code" and cell.source else None
        if (trees and cell.directives_.keys().isdisjoint({"export", "exports", "exporti", "exec_doc"})
                and not processors._show_docs(trees)
                and not all(isinstance(t, (ast.Import, ast.ImportFrom)) for t in trees)):
            return None  # example code: its outputs are the executed copy's
        return nbdev_eval(cell)
    processors._do_eval = do_eval


def type_name(anno) -> str:
    "A type as a reader writes it: `Run`, `Optional[int]` (not `__main__.Run`); no annotation stays empty, not NoneType."
    if anno is inspect._empty or anno is type(None): return inspect._empty
    text = anno if isinstance(anno, str) else inspect.formatannotation(anno)
    return re.sub(r"\b(?:__main__|typing|trainbook(?:\.\w+)*|torch\.nn\.modules\.\w+|pandas\.core\.\w+(?:\.\w+)*)\.", "", text)


def front_matter(nb) -> tuple[str, str]:
    "(title, description) from the raw front-matter cell nbdev writes, or the first heading."
    for c in nb.cells:
        if c.cell_type == "raw" and c.source.startswith("---"):
            meta = yaml.safe_load(c.source.strip().strip("-")) or {}
            return str(meta.get("title", "")), " ".join(str(meta.get("description", "")).split())
        if c.cell_type == "markdown" and c.source.startswith("# "):
            return c.source.splitlines()[0][2:].strip(), ""
    return "", ""


def page_name(p: Path) -> Path:
    "The page's path in the site: numbered notebooks lose their number (`07_loop` → `loop`), as on nbdev's site."
    return p.with_name(re.sub(r"^\d+[a-z]?_", "", p.name))


def local_links(text: str, up: str = "") -> str:
    "Links to nbdev's site (`up` leads from the page to the site's root) and to notebooks become links to local pages."
    text = text.replace(SITE_URL, up)
    text = re.sub(r'\{target="_blank"[^}]*\}', "", text)
    return re.sub(r'((?:href="|\]\()(?![a-z]+:)[^")#]*?)(?:\d+[a-z]?_)?([\w-]+)\.ipynb', r"\1\2.html", text)


def tidy_output(o: dict, figure_html, up: str) -> None:
    "One copy of plotly.js for the site (not one per page); plotly's JSON figures get an HTML view drawn with it."
    data = o.get("data", {})
    html = data.get("text/html")
    if isinstance(html, list): html = "".join(html)
    if html is not None:
        html = re.sub(r'<script data-trainbook="plotly\.js">.*?</script>', "", html, flags=re.S)
    fig = data.get("application/vnd.plotly.v1+json")
    if fig is not None and (html is None or "Plotly.newPlot" not in html):
        html = figure_html(fig, with_plotlyjs=False)
    for mime in ("text/html", "text/markdown"):
        value = html if mime == "text/html" else data.get(mime)
        if value is None: continue
        data[mime] = local_links(value if isinstance(value, str) else "".join(value), up)
    data.pop("application/vnd.jupyter.widget-view+json", None)  # no widget state on a static page: the snapshot shows
    data.pop("application/vnd.plotly.v1+json", None)


def tidy(nb, up: str) -> tuple[str, str]:
    "A processed notebook made ready for mkdocs-jupyter; returns (title, description)."
    from trainbook.live import figure_html
    title, description = front_matter(nb)
    cells = []
    for c in nb.cells:
        if c.cell_type == "raw": continue  # quarto's front matter
        if c.cell_type == "markdown": c.source = local_links(c.source, up)
        if c.cell_type == "code":
            if "#| echo: false" in c.source: c.metadata.setdefault("tags", []).append("hide-input")
            for o in c.get("outputs", []): tidy_output(o, figure_html, up)
        cells.append(c)
    head = f"# {title}" + (f"\n\n> {description}" if description else "")
    nb.cells = [nbformat.v4.new_markdown_cell(head)] + cells
    nb.metadata.pop("widgets", None)
    return title, description


def prepare_pages() -> dict:
    "Tidy every processed notebook under its page name; returns {page path (relative to _proc): title}."
    titles = {}
    for p in sorted(PROC.rglob("*.ipynb")):
        nb = nbformat.read(p, as_version=4)
        title, _ = tidy(nb, "../" * (len(p.relative_to(PROC).parts) - 1))
        p.unlink()
        out = page_name(p)
        nbformat.write(nb, out)
        titles[out.relative_to(PROC).as_posix()] = title or out.stem
    return titles


def nav(titles: dict) -> list:
    "Home, the tutorials, then the API grouped by layer (numbered notebooks in their order)."
    numbered = {page_name(p.relative_to(ROOT / "nbs")).as_posix(): p.name[:2]
                for p in sorted((ROOT / "nbs").glob("[0-9]*.ipynb"))}
    tutorials = sorted(k for k in titles if k.startswith("tutorials/"))
    order = ["quickstart", "imbalanced", "debugging"]
    tutorials.sort(key=lambda k: (order.index(Path(k).stem) if Path(k).stem in order else len(order), k))
    out = [{"Home": "index.ipynb"}, {"Tutorials": [{titles[k]: k} for k in tutorials]}]
    api = []
    for layer, prefixes in LAYERS:
        pages = [k for k, num in numbered.items() if num in prefixes.split() and k in titles]
        if pages: api.append({layer: [{f"{titles[k]}": k} for k in pages]})
    placed = {"index.ipynb", *tutorials, *numbered}
    rest = sorted(k for k in titles if k not in placed)
    if rest: api.append({"More": [{titles[k]: k} for k in rest]})
    out.append({"API": api})
    return out


def mkdocs_config(titles: dict) -> Path:
    "mkdocs.yml (the theme, plugins, extensions) with the docs folder, the site folder and the nav filled in."
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    cfg.update(docs_dir=str(PROC), site_dir=str(DOCS), nav=nav(titles))
    out = SRC / "mkdocs.yml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return out


def tidy_site() -> None:
    """Stylesheets once as files (mkdocs-jupyter inlines 600 kB of them in every page), no source maps, no CDN scripts,
    plotly.js only on pages with a figure."""
    for page in DOCS.rglob("*.html"):
        text = page.read_text()
        links = []
        for css in re.findall(r'<style type="text/css">(.*?)</style>', text, flags=re.S):
            if len(css) < 2000: continue
            name = f"assets/nb-{hashlib.sha1(css.encode()).hexdigest()[:10]}.css"
            if not (DOCS / name).exists(): (DOCS / name).write_text(css)
            text = text.replace(f'<style type="text/css">{css}</style>', "", 1)
            links.append(f'<link rel="stylesheet" href="{os.path.relpath(DOCS / name, page.parent)}">')
        text = text.replace("</head>", "".join(links) + "</head>", 1)
        text = re.sub(r'<script[^>]+src="https://[^"]*(?:mathjax|mermaid|require)[^"]*"[^>]*>\s*</script>', "", text)
        if "Plotly.newPlot" not in text:  # plotly.js (4.8 MB to parse) only where a figure is drawn: 13 of 49 pages
            text = re.sub(r'<script src="[^"]*assets/plotly\.min\.js"></script>', "", text)
        page.write_text(text)
    for sourcemap in DOCS.rglob("*.map"): sourcemap.unlink()


def _parse(html: str):
    from bs4 import BeautifulSoup
    return BeautifulSoup(html, "html.parser")


def _soup(page: Path): return _parse(page.read_text())


def _norm(anchor: str) -> str:
    "An anchor reduced to its letters and digits: `run.metrics`, `runmetrics` and `run-metrics` meet."
    return re.sub(r"[^a-z0-9]", "", anchor.lower())


def _heading_text(tag) -> str:
    "A heading's text with its code kept and the permalink sign dropped."
    text = " ".join(tag.get_text(" ", strip=True).replace("¶", "").split())
    return re.sub(r"\s+([,.:;)])", r"\1", text)  # 'Position ,' was two text nodes


def _text_without_code(tag) -> str:
    "A heading's text as the table of contents has it: the code left out."
    import copy
    tag = copy.copy(tag)
    for code in tag.find_all("code"): code.decompose()
    return _heading_text(tag)


def fix_pages(titles: dict) -> dict:
    """Unique ids per page; TOC and nav entries keep a heading's code text; page titles as written; 404 page offline.
    Returns each page's parsed tree as written (`rel path -> soup`): the checks after read these, not the files again."""
    html_titles = {str(Path(k).with_suffix(".html")): t.replace("`", "") for k, t in titles.items()}
    soups = {}
    for page in sorted(DOCS.rglob("*.html")):
        soup, rel = _soup(page), page.relative_to(DOCS).as_posix()
        by_id = {}
        for tag in soup.find_all(id=True): by_id.setdefault(tag["id"], []).append(tag)
        for name, tags in by_id.items():  # a show_doc heading beside a section of the same name: `fit`, `fit_1`
            if len(tags) < 2: continue
            # the API entry (show_doc's h3/h4) keeps the plain id: nbdev's links to `fit` mean it
            keeper = next((t for t in tags if t.name in ("h3", "h4")), tags[0])
            for n, tag in enumerate([t for t in tags if t is not keeper], start=1):
                tag["id"] = f"{name}_{n}"
        # the page's table of contents, entry by entry against the headings in order: the entries lost a heading's
        # code text ("Hugging Face models in" for "... in `fit`") and may link to ids the page does not have
        heads = [h for h in soup.select("article h1, article h2, article h3, article h4, article h5, article h6")
                 if h.get("id")]
        for toc in soup.select("nav.md-nav--secondary"):  # (Material draws it twice: in the sidebar and the menu)
            at = 0
            for a in toc.select("a.md-nav__link[href^='#']"):
                label = a.find(class_="md-ellipsis") or a
                want = _norm(label.get_text(" ", strip=True))
                match = next((j for j in range(at, len(heads)) if _norm(_text_without_code(heads[j])) == want), None)
                if match is None: continue
                a["href"] = f"#{heads[match]['id']}"
                label.string = _heading_text(heads[match])
                at = match + 1
        for a in soup.select("nav.md-nav--primary a.md-nav__link[href]"):  # the site's nav: the titles as written
            href = a["href"].split("#")[0]
            if not href or href.startswith("#"): continue
            key = os.path.normpath(os.path.join(os.path.dirname(rel), href)).replace(os.sep, "/")
            label = a.find(class_="md-ellipsis") or a
            if key in html_titles and html_titles[key] and key != "index.html" and "#" not in a["href"]:
                label.string = html_titles[key]
        if rel in html_titles and soup.title is not None:
            soup.title.string = f"{html_titles[rel]} - trainbook"
        text = str(soup)
        if rel == "404.html":  # served from the site's root, offline: no links to the deployed site
            root = urlparse(SITE_URL).path  # '/trainbook/'
            text = text.replace(SITE_URL, "./").replace(f'href="{root}', 'href="./').replace(f'src="{root}', 'src="./')
            soup = _parse(text)
        page.write_text(text)
        soups[rel] = soup
    return soups


def check_links(soups: dict | None = None) -> list[str]:
    """Every local link resolves to a page and an id in it (a near miss is repaired); returns the links that do not.
    `soups`: the pages as `fix_pages` left them (None: read from the built site, as the docs test does)."""
    if soups is None: soups = {p.relative_to(DOCS).as_posix(): _soup(p) for p in DOCS.rglob("*.html")}
    pages = {rel: DOCS / rel for rel in soups}
    ids = {rel: {t["id"] for t in s.find_all(id=True)} for rel, s in soups.items()}
    broken = []
    for rel, soup in soups.items():
        changed = False
        for a in soup.find_all("a", href=True):
            href = a["href"]
            if re.match(r"^[a-z]+:", href) or href.startswith("//"): continue  # http:, mailto:, javascript:
            path, _, frag = href.partition("#")
            target = (os.path.normpath(os.path.join(os.path.dirname(rel), path)).replace(os.sep, "/")
                      if path else rel)
            if path and not (DOCS / target).exists():
                broken.append(f"{rel}: {href} (no file {target})")
                continue
            if not frag or target not in ids or frag in ids[target]: continue
            want = _norm(frag)
            near = ([i for i in ids[target] if _norm(i) == want]
                    or [i for i in ids[target] if len(want) >= 4 and (_norm(i).endswith(want) or _norm(i).startswith(want))]
                    or [i for i in ids[target] if "." in frag and i == frag.rsplit(".", 1)[0]])  # `run.plot` → `run`
            if len(near) == 1:  # `#the-model-at-a-glance` for the heading `#summary-the-model-at-a-glance`
                a["href"] = f"{path}#{near[0]}"
                changed = True
            elif a.code is not None and _norm(a.get_text()) == want and a.get_text().strip().startswith("_"):
                a.replace_with(a.code)  # nbdev's link to a private name, which has no entry to link to
                changed = True
            else:
                broken.append(f"{rel}: {href} (no id {frag!r} in {target})")
        if changed: pages[rel].write_text(str(soup))
    return broken


def check_ids() -> list[str]:
    "Pages whose ids repeat."
    out = []
    for page in DOCS.rglob("*.html"):
        found = re.findall(r'\sid="([^"]+)"', page.read_text())
        dups = sorted({i for i in found if found.count(i) > 1})
        if dups: out.append(f"{page.relative_to(DOCS)}: repeated ids {dups[:5]}")
    return out


TEST_CALL = re.compile(r"\b(?:test_eq|test_close|test_fail|test_ne|test_is|expect_fail)\(")


def drop_test_calls(text: str) -> str:
    "The text without the lessons' checking calls (`test_eq(...)`, balanced parentheses and all)."
    out, i = [], 0
    for m in TEST_CALL.finditer(text):
        if m.start() < i: continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        out.append(text[i:m.start()])
        i = j
    return "".join(out) + text[i:]


def clean_search(soups: dict) -> None:
    "The search index without permalink signs, button text or test lines, plus one entry per documented parameter."
    index_path = DOCS / "search" / "search_index.json"
    import json
    index = json.loads(index_path.read_text())
    docs = []
    for d in index["docs"]:
        if re.search(r"\(a parameter of [^)]*\)$", d.get("text", "")): continue  # added by an earlier run
        text = d.get("text", "").replace("¶", "").replace("Copied!", "").replace("<p>source</p>", "")
        text = re.sub(r"<pre>(?:(?!</pre>).)*?\b(?:test_eq|test_close|test_fail|test_ne|expect_fail)\(.*?</pre>", "",
                      text, flags=re.S)
        d["text"], d["title"] = drop_test_calls(text).strip(), d.get("title", "").replace("¶", "").strip()
        docs.append(d)
    for rel, soup in sorted(soups.items()):  # parameters findable by name: `patience` → TrainConfig's row
        for table in soup.find_all("table"):
            heading = table.find_previous(["h2", "h3", "h4"])
            head = [th.get_text(strip=True) for th in table.find_all("th")]
            if heading is None or not heading.get("id") or "Details" not in head: continue
            owner = _heading_text(heading)
            for tr in table.find_all("tr"):
                cells = [td.get_text(" ", strip=True) for td in tr.find_all("td")]
                if len(cells) < 2 or not re.fullmatch(r"\w+", cells[0]) or cells[0] == "Returns": continue
                docs.append({"location": f"{rel}#{heading['id']}", "title": f"{cells[0]} — {owner}",
                             "text": f"{cells[0]}: {cells[-1]} (a parameter of {owner})"})
    index["docs"] = docs
    index_path.write_text(json.dumps(index, ensure_ascii=False))


def sizes() -> None:
    files = [p for p in DOCS.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    pages = sorted((p for p in files if p.suffix == ".html"), key=lambda p: p.stat().st_size)
    big = pages[-1]
    print(f"site: {len(pages)} pages, {total / 1e6:.1f} MB in all (plotly.js {DOCS.joinpath('assets/plotly.min.js').stat().st_size / 1e6:.1f} MB "
          f"once); largest page {big.relative_to(DOCS)} {big.stat().st_size / 1e6:.2f} MB")


def main() -> int:
    # the kernels inherit these: static figures at the end of runs, plotly's own figures as JSON (drawn on the page)
    os.environ.update(TRAINBOOK_LIVE="static", PLOTLY_RENDERER="plotly_mimetype")
    if "--execute-only" in sys.argv:  # `make test`'s notebook check: each notebook runs once, the docs reuse it
        return execute_copies()
    if shutil.which("quarto"):
        print("quarto found: building with nbdev_docs")
        return subprocess.run([BIN / "nbdev_docs"], cwd=ROOT).returncode
    if "--fix-only" in sys.argv:  # the last build's site, post-processed again (quick, when working on this step)
        shutil.rmtree(DOCS, ignore_errors=True)
        shutil.copytree(SRC / "site", DOCS)  # as mkdocs left it
        titles = {p.relative_to(PROC).as_posix(): nbformat.read(p, as_version=4).cells[0].source.splitlines()[0][2:]
                  for p in sorted(PROC.rglob("*.ipynb"))}
        return finish_site(titles)
    print("quarto not installed: nbdev's processing + Material for MkDocs (mkdocs-jupyter)")
    sys.path.insert(0, str(ROOT))
    shutil.rmtree(PROC, ignore_errors=True)
    shutil.rmtree(DOCS, ignore_errors=True)
    if "--reuse" in sys.argv and copies_current():  # the copies executed for these very sources
        print("reusing the notebooks executed for these sources")
    elif "--no-exec" in sys.argv:  # pages without outputs: quick, for checking the site itself
        shutil.rmtree(SRC, ignore_errors=True)
        shutil.copytree(ROOT / "nbs", SRC / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    elif execute_copies():
        return 1
    # nbdev's processing step alone: the nbdev_proc_nbs command first tries to install quarto, and with it the
    # library into whatever `pip` is on PATH, which must not happen on a machine without quarto.
    from nbdev.serve import proc_nbs
    with_parameter_tables()  # proc_nbs renders show_doc in this process (n_workers=0)
    only_what_show_doc_needs()
    proc_nbs(path=str(SRC / "nbs"), n_workers=0)
    for junk in ("_quarto.yml", "nbdev.yml", "sidebar.yml", "styles.css"): (PROC / junk).unlink(missing_ok=True)
    titles = prepare_pages()
    (PROC / "assets").mkdir(exist_ok=True)
    import plotly
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", PROC / "assets" / "plotly.min.js")
    shutil.copy(ROOT / "scripts" / "docs.css", PROC / "assets" / "docs.css")
    cfg = mkdocs_config(titles)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "-f", str(cfg)], cwd=ROOT)
    if done.returncode: return done.returncode
    tidy_site()
    shutil.rmtree(SRC / "site", ignore_errors=True)
    shutil.copytree(DOCS, SRC / "site")  # the site as mkdocs left it, for `--fix-only`
    failed = finish_site(titles)
    if not failed and STAMP.exists(): (DOCS / ".built-from").write_text(STAMP.read_text())
    return failed


def site_current() -> bool:
    "_docs/ was built from executed copies of the notebooks and library as they are now."
    built = DOCS / ".built-from"
    return (DOCS / "index.html").exists() and built.exists() and built.read_text() == sources_digest()


def finish_site(titles: dict) -> int:
    "The built site made whole: pages fixed, links checked (the build fails on one that does not resolve), search cleaned."
    soups = fix_pages(titles)  # each page parsed once (an html.parser pass is ~0.14 s a page)
    problems = check_links(soups) + check_ids()
    clean_search(soups)
    sizes()
    for p in problems: print(f"docs: broken: {p}")
    if problems: print(f"docs: {len(problems)} broken link(s) or repeated id(s): the build fails")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
