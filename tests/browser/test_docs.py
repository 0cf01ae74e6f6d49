"The rendered docs: every page opens, plots draw, links between pages resolve."
from pathlib import Path
from urllib.parse import urljoin, urlparse

from conftest import ARTIFACTS


def test_every_page_opens_plots_draw_links_resolve(browser, docs_site):
    pages = sorted(p.relative_to(docs_site["dir"]).as_posix() for p in docs_site["dir"].rglob("*.html"))
    assert len(pages) >= 18 and "tutorials/quickstart.html" in pages
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    broken, drawn = [], {}
    for rel in pages:
        url = f"{docs_site['url']}/{rel}"
        response = page.goto(url)
        assert response.status == 200, rel
        if page.locator(".plotly-graph-div").count():
            page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)  # plotly drew it (offline)
            drawn[rel] = page.locator(".plotly-graph-div .main-svg").count()
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
            target = urlparse(urljoin(url, href))
            if target.netloc != urlparse(docs_site["url"]).netloc or not target.path.endswith(".html"): continue
            if not (docs_site["dir"] / target.path.lstrip("/")).exists(): broken.append((rel, href))
    page.goto(f"{docs_site['url']}/tutorials/quickstart.html")
    page.wait_for_selector(".plotly-graph-div .main-svg")
    page.locator(".plotly-graph-div").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "docs-quickstart.png"))
    page.close()
    assert not broken, broken
    assert "tutorials/quickstart.html" in drawn and "05_optim.html" in drawn, drawn
