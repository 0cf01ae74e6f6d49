"""What trainbook's loop costs over a raw PyTorch loop, side by side in one process, interleaved.

Run: .venv/bin/python bench/overhead.py [--steps 2000] [--rounds 7]
Both sides validate once per epoch (the realistic case): the raw loop runs eval() + inference_mode over the
validation rows and back to train(); `fit` gets the same rows as `dl_valid`. Times are CPU time of this process
(`time.process_time`, one torch thread), so other load on a shared machine moves them less than wall time.
Prints per-step times and ratios to the raw loop (medians of interleaved rounds) for: fit(live=False), fit with
its defaults (Progress + LiveCurves + NanGuard; in plain Python, and with LiveCurves redrawing a FigureWidget as in
JupyterLab, where no front end is attached here), on a small MLP (overhead-bound) and a compute-bound MLP; then
TensorLoader vs DataLoader(TensorDataset) batches per second.
"""
import argparse, os, statistics, time, warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainbook as tb

torch.set_num_threads(1)
warnings.filterwarnings("ignore")


def make(widths, seed=0):
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]): layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def raw_loop(model, data, batch, epochs, lr=1e-3):
    "The reference: slicing a shuffled order, forward, loss, backward, AdamW step, zero_grad; validation per epoch."
    X, y, Xv, yv = data
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(0)
    per_epoch = len(X) // batch
    for _ in range(epochs):
        order = torch.randperm(len(X), generator=g)
        for i in range(per_epoch):
            idx = order[i * batch:(i + 1) * batch]
            loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        model.eval()
        with torch.inference_mode():
            total = sum(nn.functional.cross_entropy(model(Xv[i:i + 256]), yv[i:i + 256], reduction="sum")
                        for i in range(0, len(Xv), 256))
            float(total / len(Xv))
        model.train()


def trainbook_fit(model, data, batch, epochs, live, mode=None):
    if mode: os.environ["TRAINBOOK_LIVE"] = mode  # 'widget': LiveCurves redraws a FigureWidget as in JupyterLab
    else: os.environ.pop("TRAINBOOK_LIVE", None)
    X, y, Xv, yv = data
    dl = tb.TensorLoader(X, y, batch_size=batch, shuffle=True, drop_last=True)
    dl_valid = tb.TensorLoader(Xv, yv, batch_size=256)
    cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, weight_decay=0.0, device="cpu")
    run = tb.fit(model, dl, dl_valid, loss_fn=nn.functional.cross_entropy, config=cfg, live=live)
    assert run.step == epochs * len(dl)


def bench_model(name, widths, batch, steps, rounds, per_epoch=500):
    per_epoch = min(per_epoch, steps)
    epochs = max(1, steps // per_epoch)
    steps = epochs * per_epoch
    X = torch.randn(batch * per_epoch, widths[0])
    y = torch.randint(0, widths[-1], (len(X),))
    Xv, yv = torch.randn(len(X) // 4, widths[0]), torch.randint(0, widths[-1], (len(X) // 4,))
    data = (X, y, Xv, yv)
    runners = {"raw": lambda m: raw_loop(m, data, batch, epochs),
               "fit live=False": lambda m: trainbook_fit(m, data, batch, epochs, False),
               "fit defaults": lambda m: trainbook_fit(m, data, batch, epochs, "auto"),
               "fit defaults, widget": lambda m: trainbook_fit(m, data, batch, epochs, "auto", "widget")}
    for fn in runners.values(): fn(make(widths))  # warm-up (the first optimizer imports torch._dynamo)
    times = {k: [] for k in runners}
    for _ in range(rounds):
        for k, fn in runners.items():
            model = make(widths)
            t = time.process_time()
            fn(model)
            times[k].append((time.process_time() - t) / steps)
    raw = statistics.median(times["raw"])
    print(f"\n{name}: {'→'.join(map(str, widths))}, batch {batch}, {steps} steps in {epochs} epochs with validation "
          f"({len(Xv)} rows) after each, CPU time, median of {rounds} interleaved rounds")
    for k, v in times.items():
        med = statistics.median(v)
        print(f"  {k:>22}: {med * 1e6:8.1f} µs/step   ratio to raw {med / raw:5.3f}")


def bench_loaders(rows=65536, d=32, batch=64, rounds=5):
    X, y = torch.randn(rows, d), torch.randint(0, 2, (rows,))
    loaders = {"TensorLoader": tb.TensorLoader(X, y, batch_size=batch, shuffle=True),
               "DataLoader(TensorDataset)": DataLoader(TensorDataset(X, y), batch_size=batch, shuffle=True)}
    rate = {k: [] for k in loaders}
    for _ in range(rounds):
        for k, dl in loaders.items():
            t = time.perf_counter(); n = sum(1 for _ in dl); rate[k].append(n / (time.perf_counter() - t))
    med = {k: statistics.median(v) for k, v in rate.items()}
    print(f"\nloaders: {rows} rows × {d}, batch {batch}, shuffled, median of {rounds}")
    for k, v in med.items(): print(f"  {k:>26}: {v:10.0f} batches/s")
    print(f"  TensorLoader / DataLoader: {med['TensorLoader'] / med['DataLoader(TensorDataset)']:.1f}×")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread")
    bench_model("small MLP (overhead-bound)", [32, 64, 64, 2], 64, a.steps, a.rounds)
    bench_model("compute-bound MLP", [512, 2048, 2048, 10], 256, max(50, a.steps // 20), a.rounds, per_epoch=50)
    bench_loaders()
