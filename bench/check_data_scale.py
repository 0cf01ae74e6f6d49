"""`check_data` of HEAD and of the working tree on big frames: CPU time and peak memory at 250k, 1M, 3M rows.

Run: OMP_NUM_THREADS=1 .venv/bin/python bench/check_data_scale.py [--rows 250000,1000000,3000000] [--rev HEAD]
     (it writes its table to stdout; `| tee /tmp/cdat/bench.txt` keeps it)
Each measurement is one fresh subprocess: it builds the frame (25 columns: 12 floats with 20% NaN, 4 small
ints, 4 categoricals, a near-unique string, a 5,000-value string, a datetime, a group id with n/10 values
and a 0/1 target), then times one `check_data(df, 'y', groups='grp', time='when')`. "cpu s" is the
process's user+system CPU time of that call; "peak MB" the process's peak resident memory (ru_maxrss,
frame included) and "+MB" the peak minus the resident memory just before the call: what the check itself
adds. The old code is commit `--rev`'s `trainbook/` (git archive into a temporary folder, put first on
PYTHONPATH); old and new alternate, smallest frame first, so a drift in the host's speed touches both.
The findings of both are compared (same: yes/no). About 3 minutes and 3.5 GB at most on one core.
"""
import argparse, json, os, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time, hashlib, warnings
import numpy as np, pandas as pd
warnings.simplefilter("ignore")
import trainbook as tb
n = int(sys.argv[1])
rng = np.random.default_rng(0)
cols = {}
for i in range(12):
    a = rng.normal(size=n); a[rng.random(n) < 0.2] = np.nan; cols[f"num{i}"] = a
for i in range(4): cols[f"int{i}"] = rng.integers(0, 100, n)
for i in range(4): cols[f"cat{i}"] = pd.Categorical(rng.choice(list("abcdefgh"), n))
cols["txt_hi"] = pd.Series(rng.integers(0, n // 2, n)).astype(str).radd("user_")
cols["txt_mid"] = pd.Series(rng.integers(0, 5000, n)).astype(str).radd("city_")
cols["when"] = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 10**8, n), unit="s")
cols["grp"] = rng.integers(0, n // 10, n)
cols["y"] = (cols["num0"] > 0).astype(int)
df = pd.DataFrame(cols)
del cols
import trainbook.checks, trainbook.leaks  # imported before the clock starts
def rss_mb(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def cpu(): r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
before, t0, w0 = rss_mb(), cpu(), time.perf_counter()
report = tb.check_data(df, "y", groups="grp", time="when")
t1, w1 = cpu(), time.perf_counter()
findings = repr([(f.kind, f.severity, f.message, f.column, f.advice, repr(f.data)) for f in report.findings])
print(json.dumps({"cpu": t1 - t0, "wall": w1 - w0, "peak": rss_mb(), "added": rss_mb() - before,
                  "frame_mb": df.memory_usage(deep=True).sum() / 2**20, "where": trainbook.checks.__file__,
                  "findings": hashlib.sha1(findings.encode()).hexdigest()[:12]}))
"""


def measure(rows: int, path: Path) -> dict:
    "One check_data on a frame of `rows` rows in a fresh process with `path` first on PYTHONPATH."
    env = {**os.environ, "PYTHONPATH": str(path), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(rows)], env=env, cwd=path, capture_output=True,
                         text=True, timeout=600)
    if out.returncode: raise RuntimeError(out.stderr[-2000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["where"].startswith(str(path)), result["where"]  # the version asked for, not another
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="250000,1000000,3000000")
    ap.add_argument("--rev", default="HEAD")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as old:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", args.rev, "trainbook"], check=True,
                             capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=tar, check=True)
        print(f"check_data, {args.rev} (old) vs working tree (new); one process per cell, 1 thread")
        print(f"{'rows':>9} {'frame MB':>8} | {'old cpu s':>9} {'new cpu s':>9} {'ratio':>6} | "
              f"{'old peak MB':>11} {'new peak MB':>11} | {'old +MB':>7} {'new +MB':>7} {'ratio':>6} | same")
        for rows in map(int, args.rows.split(",")):
            a, b = measure(rows, Path(old)), measure(rows, ROOT)
            ratio, same = a["cpu"] / b["cpu"], "yes" if a["findings"] == b["findings"] else "NO"
            print(f"{rows:>9,} {a['frame_mb']:>8.0f} | {a['cpu']:>9.1f} {b['cpu']:>9.1f} {ratio:>5.1f}x"
                  f" | {a['peak']:>11.0f} {b['peak']:>11.0f} | {a['added']:>7.0f} {b['added']:>7.0f} "
                  f"{a['added'] / max(b['added'], 1):>5.1f}x | {same}"
                  f"  (new: {b['cpu'] / rows * 1e6:.1f} cpu s per million rows)", flush=True)


if __name__ == "__main__":
    main()
