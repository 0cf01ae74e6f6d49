"""What `fit` costs over a raw PyTorch loop that does the same work, and its fixed cost per call.

Run: .venv/bin/python bench/fit_overhead.py [--rounds 7]
     .venv/bin/python bench/fit_overhead.py --instructions  (needs valgrind and a C compiler; ~15 min on 2 cores)
     .venv/bin/python bench/fit_overhead.py --breakdown     (where fit's time goes, piece by piece; ~1 min)
     .venv/bin/python bench/fit_overhead.py --without --rounds 60   (what each observer costs: taken out in turn)
The case (issue #23): a list of 64 batches of 64 rows (a tiny MLP 32→64→64→2, so the loop's own overhead shows),
8 epochs, the same list of 8 validation batches after each epoch. The raw loop validates the way `evaluate` does
(eval mode, inference_mode, the loss summed on the device weighted by rows, one read at the end, back to train
mode) and steps AdamW with the same two parameter groups `fit` makes, so neither side does work the other skips.
Times are CPU time of this process (one torch thread), interleaved (the order of the sides rotates each round, and
the garbage of the previous side is collected before a side starts, outside its time), the median of `rounds`;
the spread is the lowest and highest round; "paired" is the median of each round's ratio to that round's raw
loop (steadier on a host whose speed drifts: use --rounds 60 or more). `--instructions` counts instead the instructions of one run of each
side under valgrind's callgrind (only those runs instrumented, after uninstrumented warm-ups): a number the
machine's load does not move, though an instruction of the interpreter costs more time than one of a kernel.
`--breakdown` times the loop's own functions inside `fit(live=False)` (each wrapped in a timer; the wrappers add
~0.3 µs a call) and the raw loop's lines with the same timers, in µs per step.
In a plain script "fit defaults" is Progress + NanGuard (LiveCurves draws only where a figure can show). The fixed
cost is the CPU time of a 2-step `fit(live=False)` minus two raw steps. "raw + Recorder" is the raw loop with a
`Recorder` (no displays): what trainbook costs a loop it does not own.
`--without` times `fit(live=False)` with one of its judgements taken out at a time (NanGuard; the gradient and
weight norms, `log_every` out of reach; `evaluate`'s noise statistics, the raw loop's validation instead; `diagnose`;
all of them), each interleaved with the raw loop and read as the median of the per-round ratios (a round's sides
run seconds apart, so the host's slow minutes cancel): what each costs in time, which the instruction counts
understate (an instruction of the interpreter, or of a torch op that runs once in ten steps from cold caches, costs
about three times one of the raw loop's).
"""
import argparse, functools, gc, statistics, time, warnings

import torch
from torch import nn

import trainbook as tb

torch.set_num_threads(1)
warnings.filterwarnings("ignore")
LOSS = nn.functional.cross_entropy


def make(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))


def raw(model, train, valid, epochs):
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    for _ in range(epochs):
        for xb, yb in train:
            loss = LOSS(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss.item()  # fit reads each step's loss once (it decides whether the optimizer may step)
        float(validate(model, valid))  # one read


def validate(model, valid) -> torch.Tensor:
    "The raw loop's validation, the way `evaluate` does it: eval mode, inference, the loss summed on the device."
    model.eval()
    with torch.inference_mode():
        loss_sum, rows = torch.zeros(()), 0
        for xb, yb in valid:
            loss_sum += LOSS(model(xb), yb).float() * len(yb)
            rows += len(yb)
    model.train()
    return loss_sum / rows


def raw_recorded(model, train, valid, epochs):
    "The raw loop told to trainbook through a Recorder: `rec.step(loss)` (a tensor) and `rec.validate` each epoch."
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    with tb.Recorder(tb.TrainConfig(epochs=epochs), parts={"model": model, "optimizer": opt}, live=False) as rec:
        for _ in range(epochs):
            for xb, yb in train:
                loss = LOSS(model(xb), yb)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                rec.step(loss.detach())
            rec.validate(validate(model, valid))


def with_fit(model, train, valid, epochs, live):
    cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, weight_decay=0.0, device="cpu")
    run = tb.fit(model, train, valid, loss_fn=LOSS, config=cfg, live=live)
    assert run.step == epochs * len(train)


def case():
    "The case: 64 training batches and 8 validation batches of 64 rows (the same tensors each call), 8 epochs."
    g = torch.Generator().manual_seed(0)
    batches = lambda n: [(torch.randn(64, 32, generator=g), torch.randint(0, 2, (64,), generator=g)) for _ in range(n)]
    return batches(64), batches(8), 8


def interleave(sides: dict,  # name -> a function of a fresh model that runs the side
               rounds: int,
              ) -> dict:
    """Each side's CPU seconds, round by round: a fresh model a run, the garbage before it collected outside its
    time, the sides' order rotated each round (each side first in turn)."""
    times, order = {k: [] for k in sides}, list(sides)
    for r in range(rounds):
        for k in order[r % len(order):] + order[:r % len(order)]:
            model = make()
            gc.collect()
            t = time.process_time()
            sides[k](model)
            times[k].append(time.process_time() - t)
    return times


def paired(times: dict, side: str, base: str = "raw loop") -> list:
    "Each round's ratio of `side` to `base` (the rounds run seconds apart: the host's slow minutes cancel)."
    return [a / b for a, b in zip(times[side], times[base])]


def main(rounds: int):
    train, valid, epochs = case()
    steps = epochs * len(train)
    sides = {"raw loop": lambda m: raw(m, train, valid, epochs),
             "fit(live=False)": lambda m: with_fit(m, train, valid, epochs, False),
             "fit defaults": lambda m: with_fit(m, train, valid, epochs, "auto"),
             "raw + Recorder": lambda m: raw_recorded(m, train, valid, epochs)}
    for fn in sides.values(): fn(make())  # warm-up: the first optimizer of a process imports torch._dynamo
    times = interleave(sides, rounds)
    base = statistics.median(times["raw loop"])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread; {steps} steps ({epochs} epochs of "
          f"{len(train)} batches of 64 rows, 8 validation batches each epoch), CPU time, median of {rounds}")
    for k, v in times.items():
        med = statistics.median(v)
        ratio = statistics.median(paired(times, k))
        print(f"  {k:>16}: {med * 1e3:8.1f} ms  {med / steps * 1e6:7.1f} µs/step   ratio to raw {med / base:5.3f}"
              f"   paired {ratio:5.3f}   (rounds {min(v) * 1e3:.1f}-{max(v) * 1e3:.1f} ms)")
    two = train[:2]
    fixed, raw2 = [], []
    for _ in range(4 * rounds):
        m = make()
        t = time.process_time()
        tb.fit(m, two, loss_fn=LOSS, live=False, config=tb.TrainConfig(epochs=1, monitor="train_loss", device="cpu"))
        fixed.append(time.process_time() - t)
        m = make()
        t = time.process_time()
        raw(m, two, [], 0) if False else [LOSS(m(xb), yb).backward() for xb, yb in two]
        raw2.append(time.process_time() - t)
    print(f"  fixed cost of one fit (a 2-step fit minus 2 raw steps): "
          f"{(statistics.median(fixed) - statistics.median(raw2)) * 1e3:.2f} ms "
          f"(2-step fit {statistics.median(fixed) * 1e3:.2f} ms)")


PIECES = {  # fit's pieces, by the module (or class) whose attribute the caller looks up: what each costs in a run
    "loop": ["_window_loss", "_clip", "step_optimizer", "_log_step", "_after_step", "_end_epoch",
             "evaluate", "_finish", "set_up", "_start_epoch"],
    "batch.Feeder": ["__call__"],
    "recorder": ["diagnose"]}


def raw_timed(model, train, valid, epochs, acc):
    "The raw loop with a timer around each of its lines: `acc[line] += seconds`."
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    clock = time.perf_counter
    for _ in range(epochs):
        for xb, yb in train:
            t0 = clock()
            loss = LOSS(model(xb), yb)
            t1 = clock()
            loss.backward()
            t2 = clock()
            opt.step()
            t3 = clock()
            opt.zero_grad(set_to_none=True)
            loss.item()
            t4 = clock()
            acc["forward"] += t1 - t0
            acc["backward"] += t2 - t1
            acc["optimizer step"] += t3 - t2
            acc["zero_grad + loss read"] += t4 - t3
        t5 = clock()
        float(validate(model, valid))
        acc["validation"] += clock() - t5


def breakdown(rounds: int = 5):
    "µs per step of fit's pieces (timers around the loop's functions) and of the raw loop's lines, interleaved."
    import collections, importlib
    train, valid, epochs = case()
    fit_acc, raw_acc = collections.Counter(), collections.Counter()
    for where, names in PIECES.items():
        module, _, cls = where.partition(".")
        owner = importlib.import_module(f"trainbook.{module}")
        owner = getattr(owner, cls) if cls else owner
        for name in names:
            label = f"{cls}.{name}" if cls else name
            def timed(*a, _f=getattr(owner, name), _name=label, **k):
                t = time.perf_counter()
                try: return _f(*a, **k)
                finally: fit_acc[_name] += time.perf_counter() - t
            setattr(owner, name, timed)
    totals = {"fit": [], "raw": []}
    for r in range(rounds + 1):  # the first round warms up
        if r == 1: fit_acc.clear(); raw_acc.clear()
        for side in (["fit", "raw"] if r % 2 else ["raw", "fit"]):
            model = make()
            gc.collect()
            t = time.perf_counter()
            if side == "fit": with_fit(model, train, valid, epochs, False)
            else: raw_timed(model, train, valid, epochs, raw_acc)
            if r: totals[side].append(time.perf_counter() - t)
    steps = rounds * epochs * len(train)
    per = lambda v: v / steps * 1e6
    fit_total, raw_total = per(sum(totals["fit"])), per(sum(totals["raw"]))
    print(f"fit(live=False) {fit_total:.1f} µs/step, raw loop {raw_total:.1f} µs/step (wall, {rounds} rounds each)")
    print("fit, by piece (µs/step; nested pieces are inside their callers):")
    for name, v in fit_acc.most_common(): print(f"  {name:>24} {per(v):7.2f}")
    print("raw loop, by line (µs/step):")
    for name, v in raw_acc.most_common(): print(f"  {name:>24} {per(v):7.2f}")


CALLGRIND_HOOKS = """#include <valgrind/callgrind.h>
void start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void stop(const char *side) { CALLGRIND_DUMP_STATS_AT(side); CALLGRIND_STOP_INSTRUMENTATION; }
"""

def instructions(hooks=None):
    "Run this script under callgrind and read the sides' instruction counts; inside it (`hooks` given), run them."
    import ctypes, glob, os, re, subprocess, sys, tempfile
    train, valid, epochs = case()
    sides = {"raw loop": lambda m: raw(m, train, valid, epochs),
             "fit(live=False)": lambda m: with_fit(m, train, valid, epochs, False),
             "fit defaults": lambda m: with_fit(m, train, valid, epochs, "auto")}
    if hooks is not None:  # inside valgrind: warm-ups uninstrumented, then one instrumented run of each side
        lib = ctypes.CDLL(hooks)
        for fn in list(sides.values()) * 2: fn(make())
        for k, fn in sides.items():
            model = make()
            gc.collect()
            lib.start()
            fn(model)
            lib.stop(k.encode())
        return
    d = tempfile.mkdtemp()
    open(f"{d}/hooks.c", "w").write(CALLGRIND_HOOKS)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", f"{d}/hooks.so", f"{d}/hooks.c"], check=True)
    subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={d}/cg.%p",
                    sys.executable, os.path.abspath(__file__), "--hooks", f"{d}/hooks.so"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    counts = {}
    for f in sorted(glob.glob(f"{d}/cg.*")):
        text = open(f).read()
        side = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.M)
        total = re.search(r"^totals: (\d+)", text, re.M)
        if side and total: counts[side.group(1)] = int(total.group(1))
    steps = epochs * len(train)
    for k, n in counts.items():
        print(f"  {k:>16}: {n / 1e6:8.1f} M instructions  {n / steps / 1e3:7.1f} k/step   ratio to raw "
              f"{n / counts['raw loop']:5.3f}")


def without(rounds: int):
    "Paired time ratios to the raw loop of fit(live=False) whole and with each judgement taken out (see the docstring)."
    from trainbook import loop, recorder, triage
    train, valid, epochs = case()

    class Nothing(tb.Callback): pass

    def raw_evaluate(model, dl, loss_fn, metrics=None, *, device=None, precision="fp32"):
        out = triage.Evaluation({"loss": float(validate(model, dl))})
        out.stats = {}
        return out
    real = {"NanGuard": loop.NanGuard, "diagnose": recorder.diagnose, "evaluate": loop.evaluate}
    stand_ins = {"NanGuard": Nothing, "diagnose": lambda history, **_: [], "evaluate": raw_evaluate}
    taken = {"fit(live=False)": (), "without NanGuard": ("NanGuard",), "without norms": ("norms",),
             "without eval stats": ("evaluate",), "without diagnose": ("diagnose",),
             "without all four": ("NanGuard", "norms", "evaluate", "diagnose")}

    def run(side, model):
        if side == "raw loop": return raw(model, train, valid, epochs)
        out = taken[side]
        for name, module in (("NanGuard", loop), ("diagnose", recorder), ("evaluate", loop)):
            setattr(module, name, stand_ins[name] if name in out else real[name])
        cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, weight_decay=0.0, device="cpu",
                             log_every=10 ** 9 if "norms" in out else 10)
        tb.fit(model, train, valid, loss_fn=LOSS, config=cfg, live=False)
    sides = {side: functools.partial(run, side) for side in ["raw loop", *taken]}
    for fn in sides.values(): fn(make())
    try: times = interleave(sides, rounds)
    finally:
        for name, module in (("NanGuard", loop), ("diagnose", recorder), ("evaluate", loop)):
            setattr(module, name, real[name])
    print(f"CPU time, {rounds} rounds, median of each round's ratio to the raw loop (and its quartiles)")
    for side in taken:
        ratios = paired(times, side)
        q = statistics.quantiles(ratios, n=4)
        print(f"  {side:>20}: {statistics.median(ratios):.3f}   ({q[0]:.3f}-{q[2]:.3f})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    ap.add_argument("--breakdown", action="store_true", help="time fit's pieces and the raw loop's lines")
    ap.add_argument("--without", action="store_true", help="time fit with each judgement taken out in turn")
    ap.add_argument("--hooks", help=argparse.SUPPRESS)  # set when this script runs itself under callgrind
    args = ap.parse_args()
    if args.breakdown: breakdown(args.rounds)
    elif args.without: without(args.rounds)
    elif args.instructions or args.hooks: instructions(args.hooks)
    else: main(args.rounds)
