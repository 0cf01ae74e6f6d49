"""Probe 113: with time=, a lag of the target (known at prediction time) is told from a lead (a later target, a
leak) by the paired held-out errors against the previous and the row's own target, not by two scores whose order
binning noise decides; what the data cannot tell is a warning, never a lag."""
import numpy as np
import pandas as pd

import trainbook as tb
from trainbook.leaks import lag_margin, leak_findings


def walk(seed, n=600):
    "The docs' recipe (nbs/01a_leaks): a random walk by day, its lag and its lead."
    s = pd.DataFrame({"day": np.arange(n), "y": np.cumsum(np.random.default_rng(seed).normal(size=n))})
    s["lag1"], s["lag2"], s["lead1"] = s.y.shift(1), s.y.shift(2), s.y.shift(-1)
    return s.sample(frac=1, random_state=0)


def called(found, col):
    return [(f.kind, f.severity) for f in found if f.column == col and f.kind in ("target_lag", "target_leak")]


def test_a_lead_is_never_called_a_lag_and_a_lag_never_a_leak():
    rep = tb.check_data(walk(2), target="y", time="day")  # the probe's seed: lead1 was an info-level lag
    assert called(rep.findings, "lead1") == [("target_leak", "error")]
    assert called(rep.findings, "lag1") == [("target_lag", "info")]
    for seed in range(40):
        found = leak_findings(walk(seed), "y", "regression", skip={"day"}, time="day")
        assert called(found, "lead1") in ([], [("target_leak", "error")]), seed  # found or under the threshold
        assert called(found, "lag1") in ([], [("target_lag", "info")]), seed
        assert called(found, "lag2") in ([], [("target_lag", "info")]), seed  # seeds 7, 10, 20, 24 were errors


def test_the_margin_is_far_beyond_noise_where_the_data_can_tell():
    s = walk(0).sort_values("day").iloc[1:-1]
    own, past = s.y.to_numpy(), s.y.shift(1).to_numpy()
    assert lag_margin(s.lag1.to_numpy(), own, past, regression=True) > 5
    assert lag_margin(s.lead1.to_numpy(), own, past, regression=True) < -5
    assert lag_margin(s.y.to_numpy(), own, own, regression=True) == 0.0  # the same errors: no telling


def test_a_label_that_barely_changes_is_a_lag_or_a_lead_the_data_cannot_tell():
    y = np.r_[np.zeros(300, int), np.ones(300, int)]  # one change: a lag and a lead both equal y on 599 rows
    d = pd.DataFrame({"day": np.arange(600), "y": y, "x": np.random.default_rng(0).normal(size=600)})
    d["lag1"], d["lead1"] = d.y.shift(1), d.y.shift(-1)
    found = leak_findings(d.sample(frac=1, random_state=0), "y", "binary", skip={"day"}, time="day")
    for col in ("lag1", "lead1"):
        (f,) = [f for f in found if f.column == col]
        assert (f.kind, f.severity) == ("target_leak", "warning") and "cannot tell" in f.message, (col, f)
