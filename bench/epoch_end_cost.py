"""What an epoch's end costs as a long run with a checkpoint folder goes on: `fit` of 100, 300 and 1000
epochs of 10 steps (a tiny MLP, so the epoch end is most of the time) with `checkpoint_dir`, the committed
trainbook (HEAD) against the working tree, each in its own subprocess. Per run: the mean CPU time of
`_end_epoch` (records, validation, last.pt/best.pt, run.json) over the first and the last 20 epochs, and the
whole `fit`'s CPU time; the working tree also without a checkpoint folder, for scale. Before the history
went into checkpoints as tensors and run.json snapshots were spaced by their cost, an epoch's end grew with
the history (a run O(epochs^2)).

Run: .venv/bin/python bench/epoch_end_cost.py [--epochs 100 300 1000] [--old-ref HEAD]
"""
import argparse, json, os, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, shutil, sys, tempfile, time, warnings
import torch; torch.set_num_threads(1)
import trainbook as tb, trainbook.loop as L
warnings.filterwarnings("ignore")
epochs, folder = int(sys.argv[1]), sys.argv[2] == "1"
costs, real = [], L._end_epoch
def timed(*a, **k):
    t = time.process_time()
    try: return real(*a, **k)
    finally: costs.append(time.process_time() - t)
L._end_epoch = timed
torch.manual_seed(0)
X = torch.randn(40, 8); y = (X[:, 0] > 0).long()
dl = tb.TensorLoader(X, y, batch_size=4, shuffle=True); dv = tb.TensorLoader(X[:8], y[:8], batch_size=8)
m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
d = tempfile.mkdtemp()
cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, device="cpu", checkpoint_dir=d if folder else None)
t = time.process_time()
run = tb.fit(m, dl, dv, loss_fn=torch.nn.functional.cross_entropy, config=cfg, live=False)
fit_s = time.process_time() - t
shutil.rmtree(d)
print(json.dumps({"file": tb.__file__, "records": len(run.records), "fit_s": fit_s,
                  "first_ms": 1000 * sum(costs[:20]) / 20, "last_ms": 1000 * sum(costs[-20:]) / 20}))
"""


def measure(path: str, epochs: int, folder: bool) -> dict:
    "One fit in a fresh process importing trainbook from `path` (from a neutral folder: nothing else wins)."
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(epochs), "1" if folder else "0"], env=env,
                         cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["file"].startswith(path), f"imported {result['file']}, not the trainbook in {path}"
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--old-ref", default="HEAD", help="the git revision measured as 'old'")
    args = ap.parse_args()
    old = tempfile.mkdtemp(prefix="trainbook-old-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.old_ref, "trainbook"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
    print(f"{'epochs':>6} {'records':>8} | {'epoch end ms: first 20 -> last 20':>36} | {'fit CPU s':>22} | "
          f"{'no ckpt: fit s, new/it':>22}")
    print(f"{'':>6} {'':>8} | {'old':>17} {'new':>18} | {'old':>7} {'new':>7} {'ratio':>6} | {'':>22}")
    for n in args.epochs:
        o, w, bare = measure(old, n, True), measure(str(ROOT), n, True), measure(str(ROOT), n, False)
        print(f"{n:>6} {w['records']:>8} | {o['first_ms']:7.1f} -> {o['last_ms']:6.1f} "
              f"{w['first_ms']:7.1f} -> {w['last_ms']:6.1f} | {o['fit_s']:7.1f} {w['fit_s']:7.1f} "
              f"{o['fit_s'] / w['fit_s']:5.1f}x | {bare['fit_s']:13.1f} {w['fit_s'] / bare['fit_s']:7.1f}x",
              flush=True)


if __name__ == "__main__":
    main()
