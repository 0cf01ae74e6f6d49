"""What `diagnose` costs on a long run: CPU time and peak memory (tracemalloc) beyond the history itself.

    .venv/bin/python bench/diagnose_cost.py [--steps 200000]

A synthetic history shaped like fit's: a loss and an lr per step, the gradient norm and ten per-parameter norms
every 10 steps, weight norms every 100, an evaluation (loss, loss_se, loss_sd, prior_loss, epoch records) every
1,000 steps. Also the per-epoch live diagnosis (LiveCurves calls diagnose after every epoch): the sum over epochs.
"""
import argparse, math, time, tracemalloc

import numpy as np

import trainbook as tb


def history(steps: int, seed: int = 0) -> tb.History:
    rng = np.random.default_rng(seed)
    h = tb.History()
    t = np.arange(1, steps + 1)
    loss = (0.2 + 2.0 * np.exp(-t / (steps / 10))) * rng.gamma(8, 1 / 8, steps)
    per_epoch = 1000
    for s, v in zip(t.tolist(), loss.tolist()):
        e = (s - 1) // per_epoch
        h.append(s, e, "train", "loss", v)
        h.append(s, e, "train", "lr", 1e-3)
        if s % 10 == 0:
            h.append(s, e, "train", "grad_norm", 1.0)
            for p in range(10): h.append(s, e, "train", f"grad_norm/{p}.weight", 0.1 * (p + 1))
        if s % 100 == 0:
            for p in range(10): h.append(s, e, "train", f"weight_norm/{p}.weight", 3.0)
        if s % per_epoch == 0:
            m = float(loss[s - per_epoch:s].mean())
            for name, v in (("epoch_loss", m), ("samples_per_s", 64e3), ("step_time", 1e-3), ("data_wait", 0.01),
                            ("peak_memory_mb", 500.0)):
                h.append(s, e, "train", name, v)
            for name, v in (("loss", m * 1.1), ("loss_se", m / math.sqrt(500)), ("loss_sd", m),
                            ("prior_loss", 2.2)):
                h.append(s, e, "valid", name, v)
    return h


def measure(h: tb.History) -> tuple[float, float, list]:
    "(CPU seconds, peak MB traced during the call, findings) of one diagnose."
    tracemalloc.start()
    t = time.process_time()
    found = tb.diagnose(h)
    cpu = time.process_time() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return cpu, peak / 2 ** 20, found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200_000)
    a = ap.parse_args()
    tb.diagnose(history(2000))  # warm: numpy's first calls
    for steps in sorted({20_000, 50_000, a.steps}):
        tracemalloc.start()
        h = history(steps)
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        cold, peak, found = measure(h)  # the first diagnosis of this history reads every row
        warm, warm_peak, _ = measure(h)  # a second one (no new rows) reuses the series read the first time
        print(f"{steps:>7} steps, {len(h):>8} records (history {held / 2 ** 20:.0f} MB): diagnose {cold:.3f} "
              f"CPU-s, peak {peak:.1f} MB beyond the history (again, nothing new: {warm:.3f} CPU-s, "
              f"{warm_peak:.1f} MB); findings {[f.kind for f in found]}")
    # the live diagnosis: once per epoch (1,000 steps) on the history so far
    h = history(a.steps)
    rows = list(h.rows())
    total, epochs, part = 0.0, 0, tb.History()
    i = 0
    for end in range(1000, a.steps + 1, 1000):
        while i < len(rows) and rows[i][0] <= end:
            part.append(*rows[i])
            i += 1
        t = time.process_time()
        tb.diagnose(part)
        total += time.process_time() - t
        epochs += 1
    print(f"per-epoch live diagnosis over {epochs} epochs of {a.steps} steps: {total:.1f} CPU-s in all, "
          f"{total / epochs * 1000:.0f} ms an epoch on average")


if __name__ == "__main__":
    main()
