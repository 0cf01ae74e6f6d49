"""`make_splits` and a `SplitBuilder` on a 1M-row frame: the committed code (old) against the working tree (new).

Run: OMP_NUM_THREADS=1 .venv/bin/python bench/splits_hashing.py [--rev HEAD] [--rounds 3] [--rows 1000000]
The old `trainbook/` is taken with `git archive REV trainbook` into a temporary folder. Each round runs one
subprocess per side (old first in odd rounds, new first in even ones: interleaved), with PYTHONPATH choosing the
package. A subprocess builds the frame (seeded; 10 columns: floats, ints, two categoricals, a text column, a user
id and a 3-class target), warms up on a small frame (imports, first calls), then measures the CPU time
(`time.process_time`) of each case: `make_splits` as a stratified holdout, 5 folds, a grouped holdout and a time
holdout with a gap; a `SplitBuilder` made on the frame (its first view) and four new settings of its controls.
The table gives each side's median over the rounds and the ratio old / new.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def frame(n: int):
    "The benchmark frame: `n` rows of mixed columns, a few rows copied (the audit finds them)."
    import numpy as np, pandas as pd
    r = np.random.default_rng(0)
    return pd.DataFrame({
        "f1": r.normal(size=n), "f2": r.normal(size=n), "f3": r.random(n).astype("float32"),
        "i1": r.integers(0, 1000, n), "i2": r.integers(0, 10, n).astype("int32"),
        "cat": pd.Categorical(r.choice(list("abcdefgh"), n)),
        "city": pd.Categorical.from_codes(r.integers(0, 300, n), [f"c{i}" for i in range(300)]),
        "text": pd.Series(r.integers(0, 50_000, n)).map(lambda i: f"word{i}"),
        "user": r.integers(0, 100_000, n), "y": r.integers(0, 3, n)})


CASES = {"make_splits holdout": dict(),
         "make_splits 5 folds": dict(n_folds=5),
         "make_splits group": dict(strategy="group", groups="user"),
         "make_splits time, gap": dict(time="i1", gap=10, test_size=0.1)}
SETTINGS = [("valid_size", 0.3), ("n_folds", 5), ("test_size", 0.1), ("seed", 1)]


def worker(n: int) -> dict:
    "CPU seconds of each case in this process's `trainbook` (the one PYTHONPATH finds)."
    import warnings
    warnings.filterwarnings("ignore")
    import trainbook as tb
    from trainbook.widgets import SplitBuilder
    SplitBuilder(frame(2000), target="y").n_folds.value = 3  # imports and first calls, not measured
    df = frame(n)
    out = {}
    for name, kw in CASES.items():
        t = time.process_time()
        tb.make_splits(df, "y", **kw)
        out[name] = time.process_time() - t
    t = time.process_time()
    sb = SplitBuilder(df, target="y")
    out["SplitBuilder first view"] = time.process_time() - t
    t = time.process_time()
    for control, value in SETTINGS: getattr(sb, control).value = value
    out[f"SplitBuilder {len(SETTINGS)} new settings"] = time.process_time() - t
    assert sb.splits is not None, sb.error
    return out


def run_side(path: Path, n: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path), OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, __file__, "--worker", "--rows", str(n)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(rev: str, rounds: int, n: int):
    old = Path(tempfile.mkdtemp())
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "trainbook"], check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=tar, check=True)
    sides = {"old": old, "new": ROOT}
    times = {"old": [], "new": []}
    for i in range(rounds):
        for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
            times[side].append(run_side(sides[side], n))
    print(f"{n:,} rows, {rounds} rounds, CPU seconds (median); old = {rev}, new = working tree")
    print(f"{'case':32} {'old':>8} {'new':>8} {'old/new':>8}")
    for case in times["old"][0]:
        o, w = (statistics.median(r[case] for r in times[s]) for s in ("old", "new"))
        print(f"{case:32} {o:8.2f} {w:8.2f} {o / w:8.1f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rev", default="HEAD", help="the commit whose trainbook is 'old'")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--worker", action="store_true", help="(internal) measure this process's trainbook")
    a = p.parse_args()
    if a.worker: print(json.dumps(worker(a.rows)))
    else: main(a.rev, a.rounds, a.rows)
