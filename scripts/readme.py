"Write README.md from nbs/index.ipynb (what `nbdev_readme` does, without needing quarto). `--check` fails when they differ."
import sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parent.parent

def render() -> str:
    nb = nbformat.read(ROOT / "nbs" / "index.ipynb", as_version=4)
    parts = []
    for c in nb.cells:
        src = c.source.strip()
        if not src or src.startswith("#| hide"): continue
        parts.append(src if c.cell_type == "markdown" else f"```python\n{src}\n```")
    return "<!-- generated from nbs/index.ipynb by scripts/readme.py: edit the notebook, not this file -->\n\n" + "\n\n".join(parts) + "\n"

if __name__ == "__main__":
    text, readme = render(), ROOT / "README.md"
    if "--check" in sys.argv:
        ok = readme.exists() and readme.read_text() == text
        print("ok: README.md matches nbs/index.ipynb" if ok else "FAIL: README.md is stale: run scripts/readme.py")
        sys.exit(0 if ok else 1)
    readme.write_text(text); print("wrote README.md")
