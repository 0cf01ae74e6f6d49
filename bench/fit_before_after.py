"""`fit` of an earlier commit and of the working tree, side by side in one process, each paired with the raw loop.

Run: .venv/bin/python bench/fit_before_after.py REV [--rounds 150] [--live auto]
The earlier commit's `trainbook/` is taken with `git archive REV` into a temporary folder and imported as the
package `trainbook_before` (its absolute `trainbook.` imports renamed), so both versions, and the raw loop of
bench/fit_overhead.py, run in turn in one process: the order of the three rotates each round, and each version is
read as the median of its per-round ratio to that round's raw loop. On a host whose speed drifts from minute to
minute (a shared virtual machine), two runs of the fit_overhead table minutes apart differ by more than one change
of the loop: this pairing cancels the drift. "fastest tenth" compares the mean of each side's fastest tenth of
rounds (a side slowed by the host is slowed, never sped up). The case is fit_overhead's (512 steps).
"""
import argparse, importlib, re, statistics, subprocess, sys, tempfile, warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import fit_overhead as fo  # noqa: E402  (the case and the raw loop)

ROOT = Path(__file__).resolve().parent.parent


def import_before(rev: str, folder: Path):
    "The `trainbook` of commit `rev`, imported as `trainbook_before` from `folder`."
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "trainbook"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=tar, check=True)
    (folder / "trainbook").rename(folder / "trainbook_before")
    for path in (folder / "trainbook_before").glob("*.py"):
        text = re.sub(r"\btrainbook\.", "trainbook_before.", path.read_text())
        text = re.sub(r"import trainbook\b", "import trainbook_before", text).replace('"trainbook"', '"trainbook_before"')
        path.write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("trainbook_before")


def main(rev: str, rounds: int, live):
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    import trainbook
    folder = Path(tempfile.mkdtemp())
    versions = {f"fit at {rev}": import_before(rev, folder), "fit now": trainbook}
    train, valid, epochs = fo.case()

    def with_fit(tb, model):
        cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, weight_decay=0.0, device="cpu")
        assert tb.fit(model, train, valid, loss_fn=fo.LOSS, config=cfg, live=live).step == epochs * len(train)
    sides = {"raw loop": lambda m: fo.raw(m, train, valid, epochs)}
    sides.update({name: (lambda tb: lambda m: with_fit(tb, m))(tb) for name, tb in versions.items()})
    for fn in sides.values(): fn(fo.make())  # warm-ups
    times = fo.interleave(sides, rounds)
    tenth = max(3, rounds // 10)
    fastest = {k: statistics.mean(sorted(v)[:tenth]) for k, v in times.items()}
    print(f"live={live!r}, {rounds} rounds, CPU time; raw loop {statistics.median(times['raw loop']) / 512 * 1e6:.1f} "
          "µs/step (median)")
    for k in versions:
        ratios = fo.paired(times, k)
        q = statistics.quantiles(ratios, n=4)
        print(f"  {k:>20}: paired ratio to raw {statistics.median(ratios):.3f} ({q[0]:.3f}-{q[2]:.3f}); "
              f"fastest tenth {fastest[k] / fastest['raw loop']:.3f}")
    before, now = versions
    print(f"  now / before, paired: {statistics.median(fo.paired(times, now, base=before)):.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("rev", help="the earlier commit (e.g. a landing's hash)")
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--live", default="False", choices=["False", "auto"])
    args = ap.parse_args()
    main(args.rev, args.rounds, False if args.live == "False" else "auto")
