"""Probe 124: diagnose on held-out families of real runs (batch sizes 1-512, LSTMs, 1-D CNNs, linear models, five
optimizers, planted faults): what it said wrongly there, each as a history built here."""
import math

import numpy as np

import trainbook as tb
from trainbook import History


def one_row_run(seed, steps=600, spike_at=None, height=None):
    "Batch 1: a step is one row's log-loss, softplus(-margin), margins N(mu, 3.5) as mu grows to 7 (a logistic fit)."
    rng = np.random.default_rng(seed)
    centre = 7.0 - 7.0 * np.exp(-np.arange(1, steps + 1) / 100)
    loss = np.logaddexp(0.0, -(centre + 3.5 * rng.standard_normal(steps)))
    if spike_at is not None: loss[spike_at - 1] = height
    h = History((s, (s - 1) // 300, "train", "loss", float(v)) for s, v in enumerate(loss, 1))
    for e, s in enumerate(range(300, steps + 1, 300)):
        rows = np.logaddexp(0.0, -(centre[s - 1] + 3.5 * rng.standard_normal(170)))
        for name, value in (("loss", rows.mean()), ("loss_sd", rows.std(ddof=1)), ("prior_loss", math.log(2))):
            h.append(s, e, "valid", name, float(value))
        for name, value in (("epoch_loss", loss[s - 300:s].mean()), ("samples_per_s", 1e3), ("step_time", 1e-3)):
            h.append(s, e, "train", name, float(value))
    return h


def _spike_steps(h):
    return [f.data["steps"] for f in tb.diagnose(h) if f.kind == "loss_spikes"]


def test_batch_one_log_loss_tail_is_not_spikes():
    "Seen: 3 of 20 healthy batch-1 runs told loss_spikes (a row's log-loss tail is heavier than an exponential)."
    told = [seed for seed in range(40) if _spike_steps(one_row_run(seed))]
    assert told == [], told  # the exponential tail alone: 9 of these 40


def test_a_bad_row_beyond_the_tail_is_still_a_spike():
    "A row 60 nats high among them stands beyond the power law the others follow, in most seeds."
    found = [seed for seed in range(40) if [450] in _spike_steps(one_row_run(seed, spike_at=450, height=60.0))]
    assert len(found) >= 30, len(found)


def test_a_tall_last_step_does_not_crash_diagnose():
    "Seen: IndexError from np.delete when the run's last logged step stood tall (seed 22's last row)."
    h = one_row_run(22)
    tb.diagnose(h)  # raised IndexError: index 600 is out of bounds


def falling_run(seed, evals, train_end=0.8, prior=0.845, se=0.068, steps=480):
    "Batch 2, a regression: each step's loss the train level × χ²₂/2; the valid loss (SE 0.068) at `evals`."
    rng = np.random.default_rng(seed)
    loss = (train_end + 0.9 * np.exp(-np.arange(steps) / 60)) * rng.chisquare(2, steps) / 2
    per = steps // len(evals)
    h = History((s, (s - 1) // per, "train", "loss", float(v)) for s, v in enumerate(loss, 1))
    for e, (s, v) in enumerate(zip(range(per, steps + 1, per), evals)):
        for name, value in (("loss", v), ("loss_se", se), ("loss_sd", se * math.sqrt(112)), ("prior_loss", prior)):
            h.append(s, e, "valid", name, float(value))
        h.append(s, e, "train", "epoch_loss", float(loss[s - per:s].mean()))
    return h


def test_a_short_run_whose_valid_loss_falls_below_the_prior_did_not_end_at_it():
    """Seen: valid 0.851, 0.663, 0.580 (prior 0.845, SE 0.068) 'ended at the constant predictor's loss': the median
    of the last three evaluations was the three's middle one. The end is read from the run's second half."""
    said = [sorted({f.kind for f in tb.diagnose(falling_run(seed, (0.85, 0.66, 0.58)))}) for seed in range(4)]
    assert said == [[]] * 4, said  # before: diverging, diverging, not_learning, not_learning


def test_a_valid_loss_that_stays_at_the_prior_still_ends_at_it():
    for evals in [(0.85, 0.84, 0.85), (0.85, 0.84, 0.85, 0.84, 0.85, 0.84, 0.66)]:  # one lucky last evaluation
        said = [{f.kind for f in tb.diagnose(falling_run(seed, evals, train_end=0.85))} for seed in range(4)]
        assert all(s & {"not_learning", "diverging"} for s in said), (evals, said)
