"""Time to first step and steady steps/s: torchrun's `launch` vs Ray Train's, 2 CPU workers (gloo), on the tiny MLP and
on a compute-bound MLP. Time to first step counts from the `launch` call in the caller to the end of rank 0's first
optimizer step (process start, imports, process group, model, first batch). Steady steps/s is rank 0's rate from
step 20 to the last step. Ray is measured twice: started by `launch` for the call (a notebook's first run) and
already running (`ray_engine.init_local()` before; later runs of a session).

    nice -n 10 .venv/bin/python bench/ray_vs_torchrun.py [--repeats 2]
"""
import argparse, os, statistics, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import torch
from torch import nn

import trainbook as tb
from trainbook import ray_engine
from trainbook.events import Callback

MODELS = {  # name: (input width, hidden width, depth, rows, batch per rank, epochs)
    "tiny MLP 32-64-64-2": (32, 64, 2, 8192, 64, 2),
    "compute-bound MLP 256-1024x4-2": (256, 1024, 4, 8192, 64, 1),
}


class Clock(Callback):
    "Rank 0's wall time at its first step, at step 20 and at its last step (time.time(), comparable across processes)."
    def __init__(self): self.first = self.at20 = self.last = None; self.steps = 0

    def after_step(self, state):
        now = time.time()
        if self.first is None: self.first = now
        if state.step == 20: self.at20 = now
        self.last, self.steps = now, state.step


def train(t0, name):
    torch.set_num_threads(1)
    d_in, width, depth, rows, batch, epochs = MODELS[name]
    g = torch.Generator().manual_seed(0)
    X = torch.randn(rows, d_in, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(0)
    layers = [nn.Linear(d_in, width), nn.ReLU()]
    for _ in range(depth - 1): layers += [nn.Linear(width, width), nn.ReLU()]
    net = nn.Sequential(*layers, nn.Linear(width, 2))
    clock = Clock()
    tb.fit(net, tb.TensorLoader(X, y, batch_size=batch, shuffle=True), loss_fn=nn.functional.cross_entropy,
           live=False, callbacks=[clock], config=tb.TrainConfig(epochs=epochs, lr=1e-3, device="cpu",
                                                                monitor="train_loss"))
    return {"first": clock.first - t0, "rate": (clock.steps - 20) / (clock.last - clock.at20), "steps": clock.steps}


def measure(engine: str, name: str) -> dict:
    t0 = time.time()
    if engine == "torchrun": out = tb.launch(train, t0, name, nprocs=2, live=False)
    else: out = ray_engine.launch(train, t0, name, num_workers=2, live=False)
    out["total"] = time.time() - t0
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    rows = []
    for name in MODELS:
        for engine in ("torchrun", "ray (started for the call)", "ray (already running)"):
            if engine.endswith("already running)"): ray_engine.init_local(num_cpus=2)
            got = [measure(engine.split()[0], name) for _ in range(args.repeats)]
            if engine.endswith("already running)"):
                import ray
                ray.shutdown()
            first = statistics.median(g["first"] for g in got)
            rate = statistics.median(g["rate"] for g in got)
            total = statistics.median(g["total"] for g in got)
            rows.append((name, engine, first, rate, total, got[0]["steps"]))
            print(f"| {name} | {engine} | {first:.1f} | {rate:.3g} | {total:.1f} | {got[0]['steps']} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
