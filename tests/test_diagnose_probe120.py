"""Probe 120: a run that learned is not 'at the constant predictor's loss' because its valid set is small; a run
whose outputs stay constant is, though its training rows' class shares are a little off the valid rows'."""
import math

import numpy as np

import trainbook as tb

PRIOR = math.log(2)  # the valid rows' constant predictor: two classes, half and half


def run_history(learned: bool, batch: int, epochs: int, n_valid: int, seed: int = 0) -> tb.History:
    """Steps of `batch` rows out of 3000 (`epochs` of them), an evaluation an epoch on `n_valid` rows. `learned`:
    a logistic model at its Bayes level (loss ~0.44 from its first epoch on); else constant outputs that learned
    the training rows' class share 0.45 (a loss of H(0.45) = 0.688 there, 0.698 on the half-and-half valid rows)."""
    rng = np.random.default_rng(seed)
    per_epoch = 3000 // batch
    h, step = tb.History(), 0
    for e in range(epochs):
        losses = []
        for _ in range(per_epoch):
            step += 1
            if learned:  # heavy-tailed per-example losses (gamma, shape 1) around a curve that falls in ~300 steps
                level = 0.44 + (0.71 - 0.44) * math.exp(-step / 100)
                v = float(rng.gamma(1.0, level, batch).mean())
            else:  # each row's loss -ln 0.45 (class 1, 45% of the training rows) or -ln 0.55
                ones = rng.random(batch) < 0.45
                v = float(np.where(ones, -math.log(0.45), -math.log(0.55)).mean())
                if step == 1: v = 0.75  # the untrained model's
            h.append(step, e, "train", "loss", v)
            losses.append(v)
        h.append(step, e, "train", "epoch_loss", float(np.mean(losses)))
        se = (0.45 if learned else 0.1) / math.sqrt(n_valid)  # the per-example spread over √rows
        valid = (0.45 if learned else 0.6984) + se * float(rng.standard_normal())
        h.append(step, e, "valid", "loss", valid)
        h.append(step, e, "valid", "loss_se", se)
        h.append(step, e, "valid", "prior_loss", PRIOR)
    return h


def test_a_small_valid_set_does_not_put_a_learned_run_at_the_prior():
    "Train 0.44 over thousands of steps, the prior 0.693, 30 valid rows (SE 0.08): no not_learning (it was a warning)."
    for seed in range(3):
        found = tb.diagnose(run_history(learned=True, batch=8, epochs=15, n_valid=30, seed=seed))
        assert not [f for f in found if f.kind == "not_learning"], [f.message for f in found]


def test_constant_outputs_are_at_the_prior_though_the_class_shares_differ():
    "Train H(0.45) = 0.688 against the valid rows' prior 0.693: many of its tiny SEs below, yet not learning."
    for batch, epochs, n_valid in ((8, 15, 30), (64, 30, 500)):
        found = tb.diagnose(run_history(learned=False, batch=batch, epochs=epochs, n_valid=n_valid))
        stuck = [f for f in found if f.kind == "not_learning"]
        assert stuck and stuck[0].severity == "warning", [f.message for f in found]
        assert "constant predictor's loss" in stuck[0].message
