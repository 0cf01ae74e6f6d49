"`make test` guards: the generated modules match the notebooks (export), and the notebooks carry no noise (clean)."
import difflib, filecmp, shutil, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

def tree(path: Path) -> dict:
    return {p.relative_to(path): p.read_text() for p in sorted(path.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}

def report(before: dict, after: dict, what: str) -> int:
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if not changed: print(f"ok: {what}"); return 0
    for k in changed:
        sys.stdout.writelines(difflib.unified_diff(before.get(k, "").splitlines(True), after.get(k, "").splitlines(True),
                                                   f"committed/{k}", f"expected/{k}", n=1))
    return 1

def check_export() -> int:
    "Run nbdev_export and compare trainbook/ before and after."
    before = tree(ROOT / "trainbook")
    subprocess.run([BIN / "nbdev_export"], cwd=ROOT, check=True)
    if report(before, tree(ROOT / "trainbook"), "notebooks and library are in sync"):
        print("FAIL: notebooks and library are out of sync: edit the notebook, run nbdev_export, commit both"); return 1
    return 0

def check_clean() -> int:
    "Run nbdev_clean on a copy of nbs/ and compare with the original."
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        copy = Path(tmp) / "nbs"
        shutil.copytree(ROOT / "nbs", copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        subprocess.run([BIN / "nbdev_clean", "--fname", str(copy)], cwd=ROOT, check=True)
        nbs = lambda d: {k: v for k, v in tree(d).items() if k.suffix == ".ipynb"}
        if report(nbs(ROOT / "nbs"), nbs(copy), "notebooks are clean"):
            print("FAIL: notebooks carry noise nbdev_clean would strip: run nbdev_clean and commit"); return 1
    return 0

if __name__ == "__main__":
    sys.exit({"export": check_export, "clean": check_clean}[sys.argv[1]]())
