"""What recording a run in MLflow costs: `fit` with tracking on vs off, interleaved (ABBA), medians.

Run: .venv/bin/python bench/tracking_overhead.py [--epochs 20] [--steps 250] [--rounds 5] [--no-figure]
The model is bench/overhead.py's tiny MLP (32→64→64→2, batch 64, one thread), validated at each epoch's end
on 1,024 rows. Tracking writes to a fresh SQLite store in a temporary folder. Three numbers per side:
- fit: the wall time of the `fit` call (what a notebook waits for; the store catches up on another thread),
- fit+store: until everything is written (`tracker.wait()`), i.e. the total work,
- cpu: the process CPU time of fit+store (both threads);
each as the ratio of the two sides' medians and as the median of each round's on/off ratio (neighbours in time).
On a shared virtual machine the same fit's CPU time varies by tens of percent from run to run, more than the effect
measured, so the script also measures the work tracking adds directly, in the same runs: the CPU time of every
thread but the training thread (process CPU time minus the training thread's `time.thread_time`: the tracker's
thread and anything MLflow starts) plus the listener calls on the training thread (`thread_time` around each), as a
share of the tracking-off fit's CPU time. (What this leaves out: the training thread running slower while another
thread holds the GIL or the caches; on two cores that is waiting, not CPU time.)
Also printed: the number of MLflow write calls per run (one per epoch at most: never one per step).
"""
import argparse, resource, statistics, tempfile, time, warnings

import torch
from torch import nn

import trainbook as tb

torch.set_num_threads(1)
warnings.filterwarnings("ignore")


def make(widths=(32, 64, 64, 2), seed=0):
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]): layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def one_run(dl_train, dl_valid, epochs, tracker=None):
    "Times one fit: (fit wall, fit+store wall, cpu, cpu of the other threads, training thread's context switches)."
    cfg = tb.TrainConfig(epochs=epochs, lr=1e-3, weight_decay=0.0, device="cpu")
    c0, t0, m0 = time.process_time(), time.perf_counter(), time.thread_time()
    s0 = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    tb.fit(make(), dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, config=cfg, live=False)
    t1 = time.perf_counter()
    switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - s0  # waits for the GIL, among others
    if tracker is not None: tracker.wait()
    cpu = time.process_time() - c0
    return t1 - t0, time.perf_counter() - t0, cpu, cpu - (time.thread_time() - m0), switches


def counted(tracker, calls):
    "The tracker, with its MLflow write calls counted (into `calls`, emptied first)."
    real = tracker.client.log_batch
    def log_batch(*args, **kw):
        calls.append(1)
        return real(*args, **kw)
    tracker.client.log_batch = log_batch
    calls.clear()
    return tracker


def metered(listener):
    "Count the CPU time of the tracker's listener calls (on the training thread) into `listener`."
    call = tb.Tracker.__call__

    def timed(*args, **kw):
        c0 = time.thread_time()
        try: return call(*args, **kw)
        finally: listener.append(time.thread_time() - c0)
    tb.Tracker.__call__ = timed


def main(epochs, steps, rounds, figure):
    X = torch.randn(64 * steps, 32)
    y = (X[:, 0] > 0).long()
    Xv = torch.randn(1024, 32)
    dl_train = tb.TensorLoader(X, y, batch_size=64, shuffle=True, drop_last=True)
    dl_valid = tb.TensorLoader(Xv, (Xv[:, 0] > 0).long(), batch_size=1024)
    uri = f"sqlite:///{tempfile.mkdtemp(prefix='tracking-bench-')}/mlruns.db"
    tb.track(uri, experiment="bench")  # the first track() creates MLflow's tables: not part of a run's cost
    tb.track(False)
    one_run(dl_train, dl_valid, 1)  # warm-up: the first optimizer, imports
    # and one tracked run: the session's first figure builds plotly's validators (~0.4 s, once per session)
    one_run(dl_train, dl_valid, 1, tb.track(uri, experiment="bench", figure=figure))
    tb.track(False)
    times, calls, added, shares = {"off": [], "on": []}, [], [], []
    metered(added)
    for r in range(rounds):
        for side in (("off", "on") if r % 2 == 0 else ("on", "off")):  # ABBA: a drift in speed cancels out
            tracker = None
            if side == "on":
                tracker = counted(tb.track(uri, experiment="bench", figure=figure), calls)
                added.clear()
            times[side].append(one_run(dl_train, dl_valid, epochs, tracker))
            tb.track(False)
        shares.append((times["on"][-1][3] + sum(added)) / times["off"][-1][2])
    med = {side: [statistics.median(t[i] for t in v) for i in range(3)] for side, v in times.items()}
    print(f"tiny MLP 32→64→64→2, batch 64, {epochs} epochs × {steps} steps ({epochs * steps} steps), "
          f"validation each epoch, figure={'on' if figure else 'off'}, median of {rounds} interleaved rounds")
    for i, what in enumerate(("fit", "fit+store", "cpu")):
        off, on = med["off"][i], med["on"][i]
        paired = statistics.median(a[i] / b[i] for a, b in zip(times["on"], times["off"]))
        print(f"  {what:>10}: off {off * 1e3:8.1f} ms   on {on * 1e3:8.1f} ms   ratio of medians {on / off:5.3f}, "
              f"median of the rounds' ratios {paired:5.3f}")
    print(f"  work added (other threads' CPU + listener CPU) / tracking-off CPU: median {statistics.median(shares):.4f} "
          f"(rounds: {', '.join(f'{x:.4f}' for x in shares)}), i.e. a ratio of {1 + statistics.median(shares):.3f}")
    switches = {side: statistics.median(t[4] for t in v) for side, v in times.items()}
    print(f"  the training thread's voluntary context switches during fit (median): off {switches['off']:.0f}, "
          f"on {switches['on']:.0f} (a thread handing the GIL back and forth would add thousands)")
    print(f"  MLflow write calls in the last tracked run: {len(calls)} "
          f"(epochs: {epochs}; steps: {epochs * steps})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--steps", type=int, default=250, help="optimizer steps per epoch")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-figure", action="store_true", help="do not store the final figure (curves.html)")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread")
    main(a.epochs, a.steps, a.rounds, not a.no_figure)
