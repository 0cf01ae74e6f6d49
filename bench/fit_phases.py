"""Where `fit(live=False)`'s time over the raw loop goes, phase by phase, measured inside `fit`; and its calls a step.

Run: .venv/bin/python bench/fit_phases.py [--runs 12]      (~15 s a run of 8 epochs)
     .venv/bin/python bench/fit_phases.py --calls          (Python-visible calls a step: fit, the raw loop, the extra)
The case is fit_overhead.py's (512 steps of a tiny MLP, validated each epoch). A callback times each epoch of a `fit`
in two phases, its steps (before_epoch to before_validate) and its validation (before_validate to after_validate),
and right after each phase runs the raw loop's same phase on a model of its own (a sandwich: the two sides of a pair
run milliseconds apart, so the host's slow spells fall on both). Each pair's ratio, their median and quartiles; the
time outside the epochs (the set-up before before_fit; the end from the last after_epoch to after_fit, diagnose
mostly) in points of the raw run. `--calls` counts, with `sys.setprofile`, the Python functions and builtins called
over steps 101-110 of a fit and of the raw loop.
"""
import argparse, collections, gc, statistics, sys, time, warnings

import torch

import fit_overhead as fo
import trainbook as tb

torch.set_num_threads(1)
warnings.filterwarnings("ignore")
clock = time.process_time


class Sandwich(tb.Callback):
    "Times fit's phases and runs the raw loop's same phase after each, on its own model and optimizer."
    critical = True

    def __init__(self, train, valid):
        self.train, self.valid, self.model = train, valid, fo.make()
        self.opt = torch.optim.AdamW(tb.param_groups(self.model, 0.0), lr=1e-3)
        self.steps, self.vals, self.t = [], [], {}
        self.raw_steps(), self.raw_valid()  # warm: the first step of an optimizer builds its state

    def raw_steps(self) -> float:
        t = clock()
        for xb, yb in self.train:
            loss = fo.LOSS(self.model(xb), yb)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            loss.item()
        return clock() - t

    def raw_valid(self) -> float:
        t = clock()
        float(fo.validate(self.model, self.valid))
        return clock() - t

    def before_fit(self, state): self.t["before_fit"] = clock()
    def before_epoch(self, state): self.t["epoch"] = clock()
    def before_validate(self, state): self.t["validate"] = clock()
    def after_validate(self, state):
        now = clock()
        steps, val = self.t["validate"] - self.t["epoch"], now - self.t["validate"]
        self.steps.append((steps, self.raw_steps()))
        self.vals.append((val, self.raw_valid()))
    def after_epoch(self, state): self.t["after_epoch"] = clock()
    def after_fit(self, state): self.t["after_fit"] = clock()


def phases(runs: int):
    train, valid, epochs = fo.case()
    cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, weight_decay=0.0, device="cpu")
    sandwich, start, end = Sandwich(train, valid), [], []
    for r in range(runs + 1):
        model = fo.make()
        gc.collect()
        t = clock()
        tb.fit(model, train, valid, loss_fn=fo.LOSS, config=cfg, live=False, callbacks=[sandwich])
        if r == 0:  # a warm-up run
            sandwich.steps, sandwich.vals = [], []
            continue
        start.append(sandwich.t["before_fit"] - t)
        end.append(sandwich.t["after_fit"] - sandwich.t["after_epoch"])
    raw_step = statistics.median(b for _, b in sandwich.steps) / len(train)
    raw_run = raw_step * len(train) * epochs
    print(f"{runs} runs of {epochs} epochs; raw step {raw_step * 1e6:.1f} µs (CPU time)")
    for name, pairs in (("steps", sandwich.steps), ("validation", sandwich.vals)):
        ratios = [a / b for a, b in pairs]
        q = statistics.quantiles(ratios, n=4)
        extra = statistics.median(a - b for a, b in pairs)
        print(f"  {name:>10}: {statistics.median(ratios):.3f}× the raw loop's (quartiles {q[0]:.3f}-{q[2]:.3f}); "
              f"+{extra / len(train) * 1e6:.1f} µs a step = {extra * epochs / raw_run * 100:.1f} points")
    for name, times in (("set-up", start), ("end", end)):
        t = statistics.median(times)
        print(f"  {name:>10}: {t * 1e3:.2f} ms a run = {t / raw_run * 100:.1f} points")


def calls():
    train, valid, _ = fo.case()
    counts = {"fit": collections.Counter(), "raw": collections.Counter()}

    def profiler(side):
        def record(frame, event, arg):
            if event == "call": counts[side][f"{frame.f_code.co_filename.split('/')[-1]}:{frame.f_code.co_name}"] += 1
            elif event == "c_call": counts[side][f"builtin {getattr(arg, '__qualname__', arg)}"] += 1
        return record

    class Probe(tb.Callback):
        def after_step(self, state):
            if state.step == 100: sys.setprofile(profiler("fit"))
            if state.step == 110: sys.setprofile(None)

    cfg = tb.TrainConfig(epochs=2, lr=1e-3, weight_decay=0.0, device="cpu")
    tb.fit(fo.make(), train, valid, loss_fn=fo.LOSS, config=cfg, live=False, callbacks=[Probe()])
    model = fo.make()
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    for i, (xb, yb) in enumerate(train[:20]):
        if i == 10: sys.setprofile(profiler("raw"))
        loss = fo.LOSS(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
    sys.setprofile(None)
    counts["fit"]["fit_phases.py:after_step"] = 0  # the probe's own call
    counts["fit"] = +counts["fit"]
    total = {k: sum(v.values()) / 10 for k, v in counts.items()}
    print(f"Python-visible calls a step (steps 101-110): raw loop {total['raw']:.0f}, fit(live=False) "
          f"{total['fit']:.0f} (+{total['fit'] - total['raw']:.0f}); fit's extra calls:")
    extra = counts["fit"].copy()
    extra.subtract(counts["raw"])
    for name, n in sorted(extra.items(), key=lambda kv: -kv[1]):
        if n > 0: print(f"  {n / 10:5.1f}  {name}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=12)
    p.add_argument("--calls", action="store_true")
    args = p.parse_args()
    calls() if args.calls else phases(args.runs)
