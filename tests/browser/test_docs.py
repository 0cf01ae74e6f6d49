"The docs site: every page whole (links, sidebar, no prompts), figures drawn in Chromium, search finds `fit`, parameter tables show."
from urllib.parse import urljoin, urlparse

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import ARTIFACTS


def test_every_page_is_whole_and_every_figure_draws_in_chromium(browser, docs_site):
    """Every page, as built: no In/Out prompts, its links and the sidebar's resolve, plotly.js only where a figure is
    drawn. The pages with a figure in Chromium: plotly draws each, offline."""
    from bs4 import BeautifulSoup
    site = docs_site["dir"]
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.name != "404.html")
    assert len(pages) >= 18 and "tutorials/quickstart.html" in pages and "loop.html" in pages
    broken, figures, sidebar = [], [], set()
    for rel in pages:
        url = f"{docs_site['url']}/{rel}"
        text = (site / rel).read_text()
        soup = BeautifulSoup(text, "html.parser")
        assert not soup.select(".jp-InputPrompt, .jp-OutputPrompt"), rel  # no In/Out prompts
        has_figure = bool(soup.select(".tb-figure, .js-plotly-plot")) or "Plotly.newPlot" in text
        loads_plotly = any(s.get("src", "").endswith("assets/plotly.min.js") for s in soup.select("script[src]"))
        assert loads_plotly == has_figure, rel  # 4.8 MB of script where nothing is drawn, or a figure never drawn
        if has_figure: figures.append(rel)
        sidebar |= {urlparse(urljoin(url, a["href"])).path for a in soup.select("nav.md-nav--primary a[href]")}
        for a in soup.select("a[href]"):
            target = urlparse(urljoin(url, a["href"]))
            if target.netloc != urlparse(docs_site["url"]).netloc or not target.path.endswith(".html"): continue
            if not (site / target.path.lstrip("/")).exists(): broken.append((rel, a["href"]))
    assert not broken, broken
    assert {"/index.html", "/tutorials/quickstart.html", "/loop.html", "/live.html"} <= sidebar, sorted(sidebar)
    assert all((site / p.lstrip("/")).exists() for p in sidebar if p.endswith(".html"))
    assert {"tutorials/quickstart.html", "live.html"} <= set(figures) and len(figures) < len(pages), figures
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    drawn = {}
    for rel in figures:
        assert page.goto(f"{docs_site['url']}/{rel}").status == 200, rel
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)  # plotly drew it, offline
        drawn[rel] = page.locator(".js-plotly-plot .main-svg").count()
    page.close()
    assert all(drawn.values()), drawn


def test_sidebar_lists_tutorials_first_then_the_api(browser, docs_site):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{docs_site['url']}/index.html")
    titles = page.eval_on_selector_all("nav.md-nav--primary > ul > li > label, nav.md-nav--primary > ul > li > a",
                                       "els => els.map(e => e.textContent.trim())")
    page.close()
    assert titles.index("Tutorials") < titles.index("API"), titles


def test_search_finds_fit_and_the_fit_page_has_its_parameter_table(browser, docs_site):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{docs_site['url']}/index.html")
    page.locator("input.md-search__input").click()
    page.keyboard.type("fit", delay=50)  # Material searches as keys are typed
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    hits = page.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.getAttribute('href'))")
    assert any(urlparse(h).path.endswith("/loop.html") and urlparse(h).fragment == "fit" for h in hits), hits
    page.screenshot(path=str(ARTIFACTS / "docs-search-fit.png"))
    page.goto(f"{docs_site['url']}/loop.html#fit")
    heading = page.locator("h3#fit")
    assert heading.count() == 1
    table = page.locator("h3#fit ~ div table").first  # show_doc's parameter table, from the docments
    cells = table.locator("td").all_inner_texts()
    assert "model" in cells and "dl_train" in cells, cells[:12]
    table.evaluate("t => t.scrollIntoView({block: 'center'})")  # the signature's end and the table in view
    page.screenshot(path=str(ARTIFACTS / "docs-fit-page.png"))
    page.close()


def test_every_local_link_resolves_ids_are_unique_nothing_fetched(browser, docs_site):
    "The same check `make docs` fails on, on the site as built; and the pages ask nothing of the network."
    import sys
    sys.path.insert(0, str(docs_site["dir"].parent / "scripts"))
    import build_docs
    assert build_docs.check_links() == [] and build_docs.check_ids() == []
    site = docs_site["dir"]
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "api.github.com" not in text and "cdn.jsdelivr" not in text, page
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    outside = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((docs_site["url"], "data:", "blob:")) else None)
    for rel in ("index.html", "loop.html", "tutorials/quickstart.html"):
        page.goto(f"{docs_site['url']}/{rel}")
        page.wait_for_load_state("networkidle")
    assert page.goto(f"{docs_site['url']}/404.html").status == 200
    assert page.locator("link[rel=stylesheet]").count() >= 1
    for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
        assert not href.startswith("https://trainbook.github.io"), href  # works offline, from the root
    page.close()
    assert outside == [], outside[:5]


# whether the first search result's first two lines (its page and its first entry) hold the word `want`
FIRST_HIT_SAYS = """want => {
    const hit = document.querySelector('.md-search-result__item');
    return hit && hit.innerText.toLowerCase().split('\\n').slice(0, 2).join(' ').includes(want);
}"""


def test_search_finds_parameters_and_sections_first(browser, docs_site):
    "A reader types a word: the parameter or the section is the first hit; results carry no '¶' or button text."
    import json
    index = json.loads((docs_site["dir"] / "search" / "search_index.json").read_text())
    texts = " ".join(d["text"] + d["title"] for d in index["docs"])
    assert "¶" not in texts and "Copied!" not in texts and "test_eq(" not in texts
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{docs_site['url']}/index.html")
    for query, want in (("patience", "patience"), ("resume", "resume"), ("early stopping", "early")):
        box = page.locator("input.md-search__input")
        box.click()
        box.fill("")
        page.keyboard.type(query, delay=30)
        # the first hit: a page whose first entry is the parameter or the section (its title, not body text). The
        # results of a word typed in part ('resu') show first: wait for those of the whole word, 30 s at most
        try: page.wait_for_function(FIRST_HIT_SAYS, arg=want, timeout=30_000)
        except PlaywrightTimeout: pass  # the assertion below says what came first
        first = page.locator(".md-search-result__item").first.inner_text().lower()
        assert want in " ".join(first.split("\n")[:2]), (query, first[:200])
        page.screenshot(path=str(ARTIFACTS / f"docs-search-{query.replace(' ', '-')}.png"))
        page.keyboard.press("Escape")
    page.close()
