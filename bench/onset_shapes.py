"""The overfitting onset on curves unlike the corpus's generator: five shapes of valid loss, each evaluation an
independent draw of its standard error (3% or 1% of the loss), 40 evaluations, 40 seeds a shape.

Run: .venv/bin/python bench/onset_shapes.py
The truth is the evaluation after the noise-free curve's minimum (as in `corpus.py`); the training loss falls
smoothly throughout. Prints, per shape and noise, the runs `diagnose` flags as overfitting, the onset's mean
|error| and mean error in epochs, and how many onsets the fall-and-rise curve placed.
"""
import numpy as np

import trainbook as tb

SHAPES = {  # valid loss against the evaluation e (0..39)
    "U (a parabola)": lambda e: 1.0 + 0.002 * (e - 22) ** 2,
    "fall, then a saturating rise": lambda e: 0.5 + 0.6 * np.exp(-e / 4)
                                              + 0.15 * (1 - np.exp(-np.clip(e - 18, 0, None) / 6)),
    "fall, then a straight rise": lambda e: 0.5 + 0.6 * np.exp(-e / 6) + 0.004 * np.clip(e - 16, 0, None),
    "fall, then a square-root rise": lambda e: 0.5 + 0.6 * np.exp(-e / 5) + 0.03 * np.sqrt(np.clip(e - 15, 0, None)),
    "V (straight down, straight up)": lambda e: 1.0 + 0.02 * np.abs(e - 14),
}


def history(valid: np.ndarray, se: np.ndarray, steps_per: int = 50) -> tb.History:
    "A run's records: a smoothly falling training loss, and each evaluation's loss with its standard error."
    h = tb.History()
    for i, (v, s) in enumerate(zip(valid, se)):
        for k in range(steps_per):
            step = i * steps_per + k + 1
            h.append(step, i, "train", "loss", float(1.2 * np.exp(-step / 600) + 0.05))
        h.append(step, i, "train", "epoch_loss", float(1.2 * np.exp(-step / 600) + 0.05))
        h.append(step, i, "valid", "loss", float(v))
        h.append(step, i, "valid", "loss_se", float(s))
    return h


def main(n: int = 40, seeds: int = 40):
    e = np.arange(n)
    print(f"{'shape':>32} {'SE':>4} {'flagged':>8} {'mean |error|':>13} {'mean error':>11} {'fall-and-rise':>14}")
    for name, curve in SHAPES.items():
        truth = curve(e)
        for share in (0.03, 0.01):
            errors, by_curve = [], 0
            for seed in range(seeds):
                rng = np.random.default_rng(100 + seed)
                se = share * truth
                found = [f for f in tb.diagnose(history(truth + rng.standard_normal(n) * se, se))
                         if f.kind == "overfitting"]
                if not found: continue
                errors.append(found[0].data["onset_epoch"] - (int(np.argmin(truth)) + 1))
                by_curve += found[0].data.get("onset_fit") == "fall_and_rise"
            mae = f"{np.mean(np.abs(errors)):.2f}" if errors else "—"
            me = f"{np.mean(errors):+.2f}" if errors else "—"
            print(f"{name:>32} {share:4.0%} {len(errors):>5}/{seeds} {mae:>13} {me:>11} {by_curve:>14}")


if __name__ == "__main__":
    main()
