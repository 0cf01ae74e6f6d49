"""What known additions cost the raw loop of `fit_overhead.py`, in situ: a price list for fit's own overhead.

Run: .venv/bin/python bench/loop_costs.py [--rounds 30]
Each side is fit_overhead's raw loop (512 steps of a tiny MLP, validated each epoch) with one thing added to every
step: `k` calls of one trivial Python function (an attribute increment and a list read: ~50 ns each in a warm
loop), or one call each of `k` distinct trivial functions (the same body, each its own code object and data), or the
per-parameter gradient norms every 10 steps as `fit` logs them (`_foreach_norm`, one `stack`, one read);
`fit(live=False)` beside them. CPU time, the sides' order rotated each round, read as the median of each round's
ratio to that round's raw loop. What it shows (RESULTS.md): the Python that `fit` adds to a step and its rare torch
ops cost more in the loop than in a warm loop of their own (a distinct function ~2-3x a repeated call), yet ~100
trivial calls a step still cost only a few µs: fit's ~40 µs a step are not its call count. Each side's estimate moves
by ~±4 µs a step from run to run on a shared host.
"""
import argparse, statistics, time, warnings

import torch

import fit_overhead as fo
import trainbook as tb

torch.set_num_threads(1)
warnings.filterwarnings("ignore")


class Counter:
    def __init__(self): self.n, self.items = 0, [0]


def trivial(c: Counter):
    c.n += 1
    return c.items[0]

DISTINCT = {}  # k distinct copies of `trivial`: each its own code object, each called with its own Counter
for i in range(30): exec(f"def trivial_{i}(c):\n    c.n += {i + 1}\n    return c.items[0]\n", DISTINCT)
DISTINCT = [(DISTINCT[f"trivial_{i}"], Counter()) for i in range(30)]


def raw_with(model, train, valid, epochs, calls: int = 0, norms: bool = False, distinct: bool = False):
    """The raw loop with `calls` trivial Python calls a step (of one function, or of `calls` distinct ones), and the
    gradient norms every 10 steps when `norms`."""
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    params, c = list(model.parameters()), Counter()
    pairs = DISTINCT[:calls] if distinct else [(trivial, c)] * calls
    for _ in range(epochs):
        for i, (xb, yb) in enumerate(train):
            loss = fo.LOSS(model(xb), yb)
            loss.backward()
            if norms and i % 10 == 0: torch.stack(torch._foreach_norm([p.grad for p in params])).tolist()
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss.item()
            for f, arg in pairs: f(arg)
        float(fo.validate(model, valid))


def main(rounds: int):
    train, valid, epochs = fo.case()
    sides = {"raw loop": lambda m: raw_with(m, train, valid, epochs),
             "+ 30 Python calls": lambda m: raw_with(m, train, valid, epochs, calls=30),
             "+ 100 Python calls": lambda m: raw_with(m, train, valid, epochs, calls=100),
             "+ 30 distinct functions": lambda m: raw_with(m, train, valid, epochs, calls=30, distinct=True),
             "+ norms every 10": lambda m: raw_with(m, train, valid, epochs, norms=True),
             "fit(live=False)": lambda m: fo.with_fit(m, train, valid, epochs, False)}
    for fn in sides.values(): fn(fo.make())  # warm-up
    c, n = Counter(), 100_000
    t = time.process_time()
    for _ in range(n): trivial(c)
    warm_ns = (time.process_time() - t) / n * 1e9
    times = fo.interleave(sides, rounds)
    steps = epochs * len(train)
    base = statistics.median(times["raw loop"]) / steps * 1e6
    print(f"{steps} steps, CPU time, {rounds} rounds; a trivial call {warm_ns:.0f} ns in a warm loop; raw {base:.1f} µs/step")
    for k in times:
        paired = statistics.median(fo.paired(times, k))
        print(f"  {k:>24}: paired {paired:5.3f}  (+{(paired - 1) * base:5.1f} µs/step)")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=30)
    main(p.parse_args().rounds)
