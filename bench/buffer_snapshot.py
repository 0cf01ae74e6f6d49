"""Per-step CPU cost of BufferSnapshot (a Ctrl-C inside a window puts BatchNorm's stats back): `fit` with
checkpoints, a BatchNorm MLP and a plain one, the snapshot on and off, interleaved; paired medians.

Run: .venv/bin/python bench/buffer_snapshot.py [--rounds 15]
"""
import argparse, gc, statistics, tempfile, time, warnings
import torch; torch.set_num_threads(1)
from torch import nn
import trainbook as tb, trainbook.loop as L
warnings.filterwarnings("ignore")
real_of = L.BufferSnapshot.of
def make(bn):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), *( [nn.BatchNorm1d(64)] if bn else []), nn.ReLU(), nn.Linear(64, 64),
                         *( [nn.BatchNorm1d(64)] if bn else []), nn.ReLU(), nn.Linear(64, 2))
g = torch.Generator().manual_seed(0)
X, y = torch.randn(64 * 64, 32, generator=g), torch.randint(0, 2, (64 * 64,), generator=g)
train = [(X[i:i + 64], y[i:i + 64]) for i in range(0, len(X), 64)]
EPOCHS = 4
def one(bn, on):
    L.BufferSnapshot.of = real_of if on else (lambda model: None)
    d = tempfile.mkdtemp()
    cfg = tb.TrainConfig(epochs=EPOCHS, lr=1e-3, device="cpu", precision="fp32", checkpoint_dir=d, log_every=10**6)
    m = make(bn); gc.collect()
    t = time.process_time()
    tb.fit(m, train, None, loss_fn=nn.functional.cross_entropy, config=cfg, live=False, track=False)
    return (time.process_time() - t) / (EPOCHS * len(train)) * 1e6
res = {(bn, on): [] for bn in (False, True) for on in (False, True)}
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--rounds", type=int, default=15)
for r in range(parser.parse_args().rounds):
    for key in (list(res) if r % 2 else list(res)[::-1]): res[key].append(one(*key))
for (bn, on), v in res.items():
    print(f"{'BN   ' if bn else 'no BN'} snapshot {'on ' if on else 'off'}: {statistics.median(v):7.1f} µs/step (min {min(v):.1f})")
for bn in (False, True):
    ratios = [a / b for a, b in zip(res[(bn, True)], res[(bn, False)])]
    print(f"{'BN' if bn else 'no BN'}: on/off paired median {statistics.median(ratios):.3f}")
