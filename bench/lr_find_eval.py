"""Does `lr_find`'s suggestion land where training is good?  Old rule (`steepest_lr`) vs new (`descent_lr`).

Run:  cd /work/main && OMP_NUM_THREADS=1 .venv/bin/python bench/lr_find_eval.py [dev|held_out|all] [out.txt]
(about 2 minutes on one CPU thread for `all`; the table is printed and, given a path, written there.)

What it measures, per task (a model family x a seed):
- ground truth: the model trained for a fixed short budget (EPOCHS epochs, AdamW, constant lr) at a grid of
  lrs (1e-5..1 per half-decade), validation loss at each; the best grid lr is trained with two more seeds
  (model init; the loader's order is fixed), and the *good band* is the lrs whose validation loss
  (interpolated on log-lr) is within 2 seed-to-seed standard deviations of the best grid loss: a difference
  the task's own seed noise cannot tell apart from the best;
- each rule's suggestion from the *same* `lr_find` sweep (100 steps, 1e-7..10, the family's batch size):
  in band or not, and the regret = validation loss trained at the suggestion / the best grid loss.
  A rule that suggests None counts as out of band; its regret is left out of the median (the count is shown).
Families are held out whole: DEV ones (plain MLPs on synthetic tabular classification, batch 64-128) were
looked at while designing the rule; HELD_OUT ones (BatchNorm+dropout, a small CNN on tiny images, MSE
regression, embedding+mean-pool token model, logistic regression; batch 8-32 and 512)
were run once, at the end.
"""
import math, statistics, sys, time
import numpy as np, torch
from torch import nn
import trainbook as tb
from trainbook.optim import steepest_lr, descent_lr

torch.set_num_threads(1)
EPOCHS, GRID, SEEDS = 3, [10 ** (e / 2) for e in range(-10, 1)], (0, 1, 2, 3)
CE, MSE = nn.functional.cross_entropy, nn.functional.mse_loss

def teacher_labels(X, classes, g):  # a random 2-layer net labels the points: nonlinear, learnable
    W1, W2 = torch.randn(X.shape[1], 16, generator=g), torch.randn(16, classes, generator=g)
    return (torch.tanh(X @ W1) @ W2).argmax(1)

def tabular(seed, n=1280, d=10, classes=3):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    return X, teacher_labels(X, classes, g)

def mlp_b64(seed):
    X, y = tabular(seed)
    return X, y, lambda: nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 3)), CE, 64

def mlp_b128(seed):
    X, y = tabular(seed + 100, d=16, classes=4)
    make = lambda: nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))
    return X, y, make, CE, 128

def mlp_noisy_b64(seed):  # 20% of the labels flipped: noisy batch losses
    X, y = tabular(seed + 700, d=12, classes=2)
    flip = torch.rand(len(y), generator=torch.Generator().manual_seed(seed)) < 0.2
    make = lambda: nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2))
    return X, torch.where(flip, 1 - y, y), make, CE, 64

def bn_dropout_b32(seed):  # f1's family
    X, y = tabular(seed + 200, d=8, classes=2)
    make = lambda: nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3),
                                 nn.Linear(32, 2))
    return X, y, make, CE, 32

def cnn_b16(seed):  # 1x8x8 noise images; the class is the quadrant holding a bright 3x3 blob
    g = torch.Generator().manual_seed(seed + 300)
    n = 1280
    X, y = torch.randn(n, 1, 8, 8, generator=g) * 0.7, torch.randint(0, 4, (n,), generator=g)
    for i in range(n):
        r, c = 4 * (y[i] // 2) + torch.randint(0, 2, (2,), generator=g)
        X[i, 0, r:r + 3, c:c + 3] += 1.0
    make = lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(16, 4))
    return X, y, make, CE, 16

def mse_b512(seed):
    g = torch.Generator().manual_seed(seed + 400)
    X = torch.randn(4096, 12, generator=g)
    y = (torch.sin(X[:, :3]).sum(1, keepdim=True) + 0.5 * X[:, 3:4] * X[:, 4:5]
         + 0.1 * torch.randn(4096, 1, generator=g))
    return X, y, lambda: nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 1)), MSE, 512

class Bag(nn.Module):  # embedding + mean pool + linear: a bag-of-tokens classifier
    def __init__(self): super().__init__(); self.emb, self.out = nn.Embedding(50, 16), nn.Linear(16, 2)
    def forward(self, x): return self.out(self.emb(x).mean(1))

def bag_b8(seed):  # label: more tokens from the first half of the vocabulary than the second
    g = torch.Generator().manual_seed(seed + 500)
    X = torch.randint(0, 50, (1280, 12), generator=g)
    return X, ((X < 25).sum(1) > 6).long(), Bag, CE, 8

def logreg_b512(seed):
    g = torch.Generator().manual_seed(seed + 600)
    X = torch.randn(4096, 20, generator=g)
    y = (X @ torch.randn(20, generator=g) + 0.5 * torch.randn(4096, generator=g) > 0).long()
    return X, y, lambda: nn.Linear(20, 2), CE, 512

DEV = {"mlp_b64": mlp_b64, "mlp_b128": mlp_b128, "mlp_noisy_b64": mlp_noisy_b64}
HELD_OUT = {"bn_dropout_b32": bn_dropout_b32, "cnn_b16": cnn_b16, "mse_b512": mse_b512, "bag_b8": bag_b8,
            "logreg_b512": logreg_b512}

def split(X, y):
    cut = int(len(X) * 0.8)
    return (X[:cut], y[:cut]), (X[cut:], y[cut:])

def train_valid(task, lr, seed):
    "Validation loss after EPOCHS epochs of AdamW at a constant `lr` (a blown-up run: inf)."
    X, y, make, loss_fn, bs = task
    (Xt, yt), (Xv, yv) = split(X, y)
    torch.manual_seed(seed)
    model = make()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    dl = tb.TensorLoader(Xt, yt, batch_size=bs, shuffle=True)
    for _ in range(EPOCHS):
        for xb, yb in dl:
            loss = loss_fn(model(xb), yb)
            if not torch.isfinite(loss): return math.inf
            opt.zero_grad(); loss.backward(); opt.step()
    model.eval()
    with torch.no_grad(): v = float(loss_fn(model(Xv), yv))
    return v if math.isfinite(v) else math.inf

def interp(grid_losses, lr):
    "The grid's validation loss at `lr`, linear on log-lr (clamped to the grid's ends)."
    x = np.log10(GRID)
    return float(np.interp(math.log10(lr), x, np.minimum(grid_losses, 1e6)))

def run_task(name, family, seed):
    task = family(seed)
    grid = [train_valid(task, lr, seed) for lr in GRID]
    best_i = int(np.argmin(grid))
    best = grid[best_i]
    reps = [best] + [train_valid(task, GRID[best_i], seed + 10 * k) for k in (1, 2)]
    tol = 2 * statistics.stdev(reps)
    X, y, make, loss_fn, bs = task
    (Xt, yt), _ = split(X, y)
    torch.manual_seed(seed)
    found = tb.lr_find(make(), tb.TensorLoader(Xt, yt, batch_size=bs, shuffle=True), loss_fn, num_steps=100)
    rows = {}
    for rule, lr in (("old", steepest_lr(found.lrs, found.losses)), ("new", found.suggestion)):
        if lr is None: rows[rule] = (None, False, math.nan)
        else: rows[rule] = (lr, interp(grid, lr) <= best + tol, train_valid(task, lr, seed) / best)
    return dict(name=name, seed=seed, grid=grid, best_lr=GRID[best_i], best=best, tol=tol, rows=rows,
                raw=found.raw, lrs=found.lrs, losses=found.losses, reason=found.reason)

def summarize(results, title):
    lines = [f"== {title}: {len(results)} tasks =="]
    for r in results:
        band = [lr for lr, l in zip(GRID, r["grid"]) if l <= r["best"] + r["tol"]]
        o, n = r["rows"]["old"], r["rows"]["new"]
        fmt = lambda row: "None" if row[0] is None else f"{row[0]:.1e}{'*' if row[1] else ' '} x{row[2]:.2f}"
        lines.append(f"{r['name']:15s} s{r['seed']} best {r['best_lr']:.0e} "
                     f"band(grid) {min(band):.0e}..{max(band):.0e}"
                     f" tol {r['tol']:.3f} | old {fmt(o):18s} | new {fmt(n):18s} {r['reason']}")
    for rule in ("old", "new"):
        rows = [r["rows"][rule] for r in results]
        regrets = [x[2] for x in rows if x[0] is not None]
        med = statistics.median(regrets) if regrets else math.nan
        lines.append(f"  {rule}: in band {sum(x[1] for x in rows)}/{len(rows)} "
                     f"({sum(x[1] for x in rows) / len(rows):.0%}), median regret {med:.3f}, "
                     f"worst regret {max(regrets, default=math.nan):.2f}, None {len(rows) - len(regrets)}")
    return "\n".join(lines)

if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    t0, out = time.time(), []
    for title, fams in (("DEV", DEV), ("HELD-OUT", HELD_OUT)):
        if which not in ("all", title.lower().replace("-", "_")): continue
        res = [run_task(name, fam, seed) for name, fam in fams.items() for seed in SEEDS]
        out.append(summarize(res, title))
        print(out[-1], flush=True)
        if len(sys.argv) > 3: __import__("pickle").dump(res, open(sys.argv[3], "wb"))
    out.append(f"({time.time() - t0:.0f} s, {EPOCHS} epochs AdamW per grid lr, grid 1e-5..1 per half-decade)")
    print(out[-1])
    if len(sys.argv) > 2: open(sys.argv[2], "w").write("\n".join(out) + "\n")
