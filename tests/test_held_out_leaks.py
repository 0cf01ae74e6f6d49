"""Held-out findings on the leakage check (a leak missing on some rows, a label in an id's prefix) and on the
split audit's class balance (drift judged against the sampling noise of a random split)."""
import numpy as np
import pandas as pd
import pytest

import trainbook as tb
from trainbook.audit import class_share_findings
from trainbook.splits import Splits


def _frame(n=1000, seed=0, task="binary"):
    "Four honest features; `a + b` explains the target partly (no single column comes near a leak)."
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    noisy = df.a + df.b + rng.normal(size=n)
    if task == "binary": df["y"] = (noisy > 0).astype(int)
    elif task == "multiclass": df["y"] = pd.qcut(noisy, 4, labels=False)
    elif task == "imbalanced": df["y"] = (noisy > np.quantile(noisy, 0.92)).astype(int)
    else: df["y"] = noisy * 3
    return df


def _leaks(df, target="y"):
    return {f.column: f for f in tb.check_data(df, target).by_kind("target_leak")}


# --- f5: a copy of the target that is missing on some rows --------------------------------------------------

@pytest.mark.parametrize("share", [0.1, 0.4])
def test_a_class_label_copy_missing_on_some_rows_is_a_leak(share):
    df = _frame()
    rng = np.random.default_rng(1)
    df["outcome_code"] = df.y.astype(float).where(rng.random(len(df)) >= share)  # NaN on `share` of the rows
    leaks = _leaks(df)
    assert set(leaks) == {"outcome_code"}
    f = leaks["outcome_code"]
    assert f.data["filled_share"] == pytest.approx(1 - share, abs=0.05)
    assert f.data["score"] >= 0.98 and "where it is filled" in f.message


def test_a_regression_target_copy_missing_on_30pct_of_rows_is_a_leak():
    df = _frame(task="regression")
    df["y_copy"] = df.y.where(np.random.default_rng(2).random(len(df)) > 0.3)
    leaks = _leaks(df)
    assert set(leaks) == {"y_copy"} and leaks["y_copy"].data["metric"] == "R²"
    assert leaks["y_copy"].data["filled_share"] == pytest.approx(0.7, abs=0.05)


def test_a_complete_leak_still_reports_every_row_scored():
    df = _frame()
    df["outcome_code"] = df.y
    f = _leaks(df)["outcome_code"]
    assert f.data["filled_share"] == 1.0 and "where it is filled" not in f.message


@pytest.mark.parametrize("task", ["binary", "multiclass", "imbalanced", "regression"])
def test_clean_frames_with_missing_values_and_an_id_raise_no_leak(task):
    "Honest columns missing at random (10% to 85% of rows), an id column: no `target_leak`, several seeds."
    for seed in range(3):
        df = _frame(n=800, seed=seed, task=task)
        rng = np.random.default_rng(seed + 10)
        for col, share in zip("abcd", (0.1, 0.4, 0.7, 0.85)):
            df[col] = df[col].where(rng.random(len(df)) >= share)
        best = df.a.fillna(0) + df.b.fillna(0)  # the best honest column, half missing
        df["strong"] = best.where(rng.random(len(df)) >= 0.5)
        df["customer_id"] = [f"cust-{i:05d}" for i in rng.permutation(len(df))]
        df["ref"] = [f"{rng.choice(['ab', 'cd', 'ef'])}{rng.integers(1e6)}" for _ in range(len(df))]
        assert not _leaks(df), (task, seed)


# --- 3: a label hidden in a high-cardinality text column ----------------------------------------------------

def test_a_lag_of_the_target_is_told_apart_from_a_lead_when_time_is_given():
    "Probe 12, f8: y shifted one step back (a forecasting feature) was an error like y shifted forward (a leak)."
    rng = np.random.default_rng(0)
    parts = []
    for store in range(20):  # 20 entities' random walks, rows shuffled: the lag is taken within each one
        d = pd.DataFrame({"store": store, "t": pd.date_range("2024", periods=150, freq="D"),
                          "y": np.cumsum(rng.normal(size=150))})
        d["lag1"], d["lead1"] = d.y.shift(1), d.y.shift(-1)
        parts.append(d)
    df = pd.concat(parts).sample(frac=1, random_state=1)
    report = tb.check_data(df, "y", time="t", groups="store")
    by = {(f.kind, f.column): f for f in report.findings if f.kind.startswith("target_")}
    assert set(by) == {("target_lag", "lag1"), ("target_leak", "lead1")}, sorted(by)
    lag = by["target_lag", "lag1"]
    assert lag.severity == "info" and lag.data["score_past"] > lag.data["score"] and "make_splits(time=" in lag.advice
    assert tb.check_data(df.drop(columns="lead1"), "y", time="t", groups="store").ok
    # without time= a lag cannot be told from a leak: both are errors; a copy of the target stays one with time=
    assert {f.column for f in tb.check_data(df, "y").findings if f.kind == "target_leak"} == {"lag1", "lead1"}
    df["copy"] = df.y
    assert "copy" in {f.column for f in tb.check_data(df, "y", time="t", groups="store").findings
                      if f.kind == "target_leak"}


def test_a_label_in_the_prefix_of_an_id_or_a_note_is_a_leak():
    df = _frame()
    rng = np.random.default_rng(3)
    word = np.where(df.y == 1, "approved", "rejected")
    df["status"] = [f"{w}-{i}" for i, w in enumerate(word)]  # near-unique: an identifier by its role
    df["note"] = [f"{w.title()} after review number {rng.integers(1e6)} of the file" for w in word]  # text
    leaks = _leaks(df)
    assert set(leaks) == {"status", "note"}
    assert all(f.data["view"] == "prefix" and "leading letters" in f.message for f in leaks.values())


def test_an_honest_prefix_raises_no_leak():
    "A prefix that is a real, weak feature (the region of an order id) is scored and is not a leak."
    df = _frame()
    region = np.where(df.a > 0, "north", "south")  # follows a feature, ~70% right about the target
    df["order"] = [f"{r}-{i}" for i, r in enumerate(region)]
    assert not _leaks(df)


# --- probe 23, f4: a label copy at 1:100 to 1:1000 class imbalance ---------------------------------------------

def _rare_frame(n, positives, seed):
    "`positives` of `n` rows; a label copy, a random column, an honest one of ROC-AUC 0.8, an honest flag (BA 0.89)."
    rng = np.random.default_rng(seed)
    y = np.zeros(n, dtype=int)
    y[rng.choice(n, positives, replace=False)] = 1
    return pd.DataFrame({"noise": rng.normal(size=n), "auc80": rng.normal(size=n) + 1.19 * y,
                         "flag": np.where(y == 1, rng.random(n) < 0.8, rng.random(n) < 0.02).astype(int),
                         "copy": y + rng.normal(0, 0.01, n), "y": y})


@pytest.mark.parametrize("positives", [200, 60, 20])
def test_a_label_copy_is_a_leak_at_any_class_share_and_honest_columns_are_not(positives):
    """Before: found at 50% and 10% positives, missed at 1% and 0.1% (the 5,000-row draw kept ~5 of 20
    positives, and a bin of ~10 rows called its common class)."""
    for seed in range(2):
        leaks = _leaks(_rare_frame(20_000, positives, seed))
        assert set(leaks) == {"copy"}, (positives, seed)
        assert leaks["copy"].data["score"] > 0.99 and leaks["copy"].data["constant_score"] == 0.5


def test_three_positives_are_too_few_to_call_a_leak_and_a_rare_class_is_left_out_of_the_score():
    assert not _leaks(_rare_frame(20_000, 3, 0))  # a perfect record on 3 rows is luck for the honest flag too
    rng = np.random.default_rng(0)
    n = 20_000
    y = rng.choice(["a", "b"], n)
    y[rng.choice(n, 5, replace=False)] = "c"  # too few to score: a and b are, and the spelled-out label is a leak
    df = pd.DataFrame({"noise": rng.normal(size=n), "y": y})
    df["code"] = df.y.map({"a": "first", "b": "second", "c": "third"})
    leaks = _leaks(df)
    assert set(leaks) == {"code"} and leaks["code"].data["constant_score"] == 0.5


# --- probe 30, f1: a point mass (0 on every row but the positives) is a bin of its own -----------------------

def _refund_frame(seed, n=400):
    "Probe 30's construction: an amount paid only when y == 1, exactly 0.0 on the other rows."
    rng = np.random.default_rng(seed)
    y = (rng.normal(size=n) > 0).astype(int)
    df = pd.DataFrame({"a": rng.normal(size=n), "y": y})
    df["refund"] = np.where(y == 1, rng.uniform(0, 100, n) + 1e-6, 0.0)  # positives down to ~0
    return df, rng


def test_a_zero_inflated_post_outcome_amount_is_a_leak_on_every_seed():
    "Quantile edges put the zeros and the smallest refunds in one bin (0.966, missed on 5 of 10 seeds)."
    for seed in range(10):
        df, _ = _refund_frame(seed)
        leaks = _leaks(df)
        assert set(leaks) == {"refund"}, seed
        assert leaks["refund"].data["score"] == 1.0, seed


def test_a_point_mass_gets_a_bin_of_its_own_and_the_rest_keeps_quantile_bins():
    from trainbook.leaks import one_column_predictions
    x = np.r_[np.zeros(300), np.linspace(0.01, 1, 300)]  # 600 distinct values: quantile bins for the rest
    y = (x > 0).astype(int)
    assert (one_column_predictions(x, y, 2) == y).all()


def test_honest_zero_inflated_columns_raise_no_leak():
    "Zeros unrelated to y, and zeros that tell y 93% right: strong, not a copy of the target."
    for seed in range(10):
        df, rng = _refund_frame(seed)
        u, r = rng.uniform(10, 100, len(df)), rng.random(len(df))
        df = df.drop(columns="refund")
        df["unrelated"] = np.where(r < 0.5, 0.0, u)
        df["related"] = np.where(r < np.where(df.y == 1, 0.07, 0.93), 0.0, u)
        df["regular"] = np.round(df.y * 2.3 + rng.normal(size=len(df)), 1)  # rounded: masses, AUC ~0.95
        assert not _leaks(df), seed


# --- probe 30, f5: a constant filled only when y == 1: its blanks give the target away ------------------------

def test_a_flag_filled_only_for_one_class_is_a_leak_by_its_blanks():
    df, _ = _refund_frame(0)
    df = df.drop(columns="refund")
    df["cancelled_flag"] = np.where(df.y == 1, 1.0, np.nan)  # one value: a constant column, skipped as such
    report = tb.check_data(df, "y")
    constant = [f for f in report.by_kind("constant_column") if f.column == "cancelled_flag"]
    assert constant and "carries no information" not in constant[0].advice  # which rows are filled is some
    assert "0/1 flag" in constant[0].advice
    f = _leaks(df)["cancelled_flag"]
    assert f.data["view"] == "missing" and f.data["score"] == 1.0
    assert "whether it is filled or missing" in f.message


def test_a_flag_blank_at_random_or_90pct_right_raises_no_leak():
    for seed in range(10):
        df, rng = _refund_frame(seed)
        r = rng.random(len(df))
        df = df.drop(columns="refund")
        df["random_flag"] = np.where(r < 0.3, 1.0, np.nan)
        df["likely_flag"] = np.where(r < np.where(df.y == 1, 0.9, 0.1), "yes", None)
        assert not _leaks(df), seed


# --- probe 36, f1: with groups=, whole entities are held out -------------------------------------------------

def _entity_frame(seed, n_ent=100, per=50, task="binary"):
    "Probe 36's construction: income per customer, a target per customer that income predicts ~70% right."
    rng = np.random.default_rng(seed)
    income = rng.normal(size=n_ent)
    noisy = income + rng.normal(size=n_ent)
    y = (noisy > 0).astype(int) if task == "binary" else noisy
    g = np.repeat(np.arange(n_ent), per)
    return pd.DataFrame({"cust": g, "income": income[g].round(3), "y": y[g]})


@pytest.mark.parametrize("task", ["binary", "regression"])
def test_an_entity_feature_is_no_leak_when_whole_groups_are_held_out(task):
    "Before: balanced accuracy 1.000 on held-out rows of the same customers (20/20 seeds); GroupKFold: 0.70."
    for seed in range(3):
        df = _entity_frame(seed, task=task)
        assert not tb.check_data(df, "y", groups="cust").by_kind("target_leak"), seed
        # a copy of the per-customer target is still one, scored on customers unseen in training
        df["closed"] = np.where(df.y > 0, "closed", "open") if task == "binary" else df.y * 1.1
        (f,) = tb.check_data(df, "y", groups="cust").by_kind("target_leak")
        assert f.column == "closed" and f.data["score"] > 0.98 and "held-out groups" in f.message
        assert "pass groups=" not in f.advice  # given: said only where the rows were held out one by one


def test_without_groups_an_entity_feature_is_flagged_with_advice_to_pass_them():
    "Row folds memorize the customers (known: still an error), so the advice names groups= as the way to check."
    (f,) = tb.check_data(_entity_frame(0), "y").by_kind("target_leak")
    assert f.column == "income" and "pass groups= (the entity column)" in f.advice


def test_group_folds_hold_out_whole_groups():
    from trainbook.leaks import one_column_predictions
    x = np.repeat(np.arange(10.0), 10)  # each group its own value: a training row never shares a test value
    y = np.repeat(np.arange(10) % 2, 10)
    assert (one_column_predictions(x, y, 2) == y).all()  # row folds: every value seen in training
    assert (one_column_predictions(x, y, 2, groups=x) != y).mean() > 0.5  # unseen values, alternating classes


# --- probe 36, f2/f3: a regression copy is also scored on the target's ranks -------------------------------

@pytest.mark.parametrize("n", [50, 200, 5000])
def test_a_copy_of_a_skewed_or_small_regression_target_is_a_leak(n):
    "Before: 1.1 * a lognormal target never found (R² 0.961); 2y + 1 found on 4/20 seeds at 200 rows, 0/20 at 50."
    for seed in range(5):
        rng = np.random.default_rng(seed)
        y = rng.lognormal(3, 1.5, n) if n > 200 else rng.normal(size=n)
        df = pd.DataFrame({"x": rng.normal(size=n), "y": y, "copy": 1.1 * y + 1})
        leaks = _leaks(df)
        assert set(leaks) == {"copy"}, (n, seed)
        assert leaks["copy"].data["score"] > 0.98


@pytest.mark.parametrize("n", [50, 2000])
def test_honest_strong_regression_features_raise_no_leak_on_any_skew(n):
    "y = x + noise at R² 0.95, as it is and as exp(y): strong, not a copy."
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=n)
        y = x + rng.normal(0, np.sqrt(1 / 0.95 - 1), n)
        assert not _leaks(pd.DataFrame({"x": x, "y": y})), seed
        assert not _leaks(pd.DataFrame({"x": x, "y": np.exp(y)})), seed


# --- probe 36, f4: a column filled on 1% of a large frame is scored on its filled rows from the whole frame ---

def test_a_leak_on_1pct_of_a_large_frame_is_found():
    "Before: the 5,000-row sample kept ~50 of 1,000 filled rows, under the 100 needed: never found."
    rng = np.random.default_rng(0)
    n = 100_000
    x = rng.normal(size=n)
    y = (x + rng.normal(size=n) > 0).astype(int)
    filled = rng.random(n) < 0.01
    df = pd.DataFrame({"x": x, "y": y, "leak": np.where(filled, y, np.nan),
                       "honest": np.where(filled, x, np.nan)})  # filled on the same rows, ~70% right
    leaks = _leaks(df)
    assert set(leaks) == {"leak"}
    assert leaks["leak"].data["filled_share"] == pytest.approx(0.01, abs=0.002)


# --- probe 36, f5: a column that tells one class of several perfectly ----------------------------------------

@pytest.mark.parametrize("n", [200, 20_000])
def test_a_flag_or_amount_of_one_class_of_four_is_a_leak(n):
    "Before: found for a binary target, 0/20 for a 4-class one; one-vs-rest it tells class 1 with AUC 1.0."
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    y = np.digitize(x + rng.normal(size=n), [-1, 0, 1])
    df = pd.DataFrame({"x": x, "y": y, "refund": np.where(y == 1, "Y", None),
                       "amount": np.where(y == 1, rng.uniform(0, 100, n).round(2) + 0.01, 0.0)})
    leaks = _leaks(df)
    assert set(leaks) == {"refund", "amount"}
    for f in leaks.values():
        assert f.data["class"] == 1 and f.data["metric"] == "min recall" and f.data["score"] > 0.98
        assert "whether the target is 1" in f.message


def test_honest_features_of_a_four_class_target_raise_no_leak():
    "An ordered target a feature predicts well (its end classes ~95% right on one side): strong, not a copy."
    for seed in range(10):
        for n in (200, 2000):
            rng = np.random.default_rng(seed)
            x = rng.normal(size=n)
            df = pd.DataFrame({"x": x, "y": pd.qcut(x + rng.normal(0, 0.2, n), 4, labels=False)})
            assert not _leaks(df), (seed, n)


# --- f6: class balance drift judged against the sampling noise of a random split ----------------------------

@pytest.mark.parametrize("n", [300, 1000])
def test_random_splits_of_clean_balanced_data_raise_no_class_drift(n):
    "Before: a fixed 5-point rule warned on 7/20 splits of 300 rows and 2/20 of 1,000 from chance alone."
    for seed in range(20):
        rng = np.random.default_rng(seed)
        df = pd.DataFrame({"a": rng.normal(size=n), "y": rng.integers(0, 2, n)})
        s = tb.make_splits(df, "y", strategy="random", seed=seed)
        assert not [f for f in s.findings if f.kind == "class_balance_drift"], (n, seed)


def test_the_same_drift_is_noise_in_a_small_part_and_real_in_a_large_one():
    "A 10-point gap: within chance for 60 rows against 180, far beyond it for 1,000 against 3,000."
    train, valid = pd.Series({0: 0.5, 1: 0.5}), pd.Series({0: 0.4, 1: 0.6})
    def drift(n_valid):
        found = class_share_findings({"train": train, "valid": valid}, {0, 1}, "y",
                                     sizes={"train": 3 * n_valid, "valid": n_valid})
        return [f for f in found if f.kind == "class_balance_drift"]
    assert not drift(60)
    (f,) = drift(1000)
    assert f.data["max_drift"] == pytest.approx(0.1) and f.data["standard_errors"] > 3
    assert "standard errors" in f.message
    # a tiny gap in a huge part is sure but does not matter: still under the 5-point floor
    near = {"train": train, "valid": pd.Series({0: 0.48, 1: 0.52})}
    assert not class_share_findings(near, {0, 1}, "y", sizes={"train": 10**6, "valid": 10**6})


def test_a_stratification_bug_and_a_moving_class_mix_are_still_found():
    n = 5000
    df = pd.DataFrame({"a": np.arange(n), "y": np.r_[np.zeros(n // 2), np.ones(n // 2)].astype(int)})
    rng = np.random.default_rng(0)
    ones, zeros = np.flatnonzero(df.y == 1), np.flatnonzero(df.y == 0)
    valid = np.r_[rng.choice(ones, 600, replace=False), rng.choice(zeros, 400, replace=False)]  # 60/40
    bad = Splits(train=np.setdiff1d(np.arange(n), valid), valid=valid, test=np.array([], dtype=np.int64),
                 params={"target": "y"})
    assert [f.data["split"] for f in bad.audit(df) if f.kind == "class_balance_drift"] == ["valid"]
    t = np.arange(n)  # positives grow from 30% to 60% of the rows over time
    rising = (rng.random(n) < np.linspace(0.3, 0.6, n)).astype(int)
    moving = pd.DataFrame({"a": rng.normal(size=n), "t": t, "y": rising})
    s = tb.make_splits(moving, "y", strategy="time", time="t")
    assert {f.data["split"] for f in s.findings if f.kind == "class_balance_drift"} == {"valid"}


def test_stratified_and_group_splits_of_clean_data_raise_no_class_drift():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.normal(size=600), "g": rng.integers(0, 60, 600),
                       "y": rng.integers(0, 3, 600)})
    for kw in ({"strategy": "stratified"}, {"strategy": "group", "groups": "g"}):
        s = tb.make_splits(df, "y", seed=0, **kw)
        assert not [f for f in s.findings if f.kind == "class_balance_drift"], kw


def test_a_continuous_column_that_separates_the_classes_is_a_leak_on_few_rows():
    "Probe 42: a score recorded after the outcome (10·y + noise) was missed on 100-200 rows: a quantile bin spanned its gap."
    def leaks(df): return {f.column for f in tb.check_data(df, "y").findings if f.kind == "target_leak"}
    found, honest = 0, 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 2, 100)
        agree = np.where(rng.random(100) < 0.95, y, 1 - y)  # an honest strong flag: the same clusters, 5% across
        df = pd.DataFrame({"y": y, "score": 10 * y + rng.normal(scale=0.1, size=100),
                           "flag": 10 * agree + rng.normal(scale=0.1, size=100)})
        found += "score" in leaks(df)
        honest += "flag" in leaks(df)
    assert (found, honest) == (10, 0)


# --- probe 48, F2: a class an honest feature parts by its values is not a leak ------------------------------

def test_iris_petals_part_setosa_honestly_and_raise_no_leak():
    """Before: 'petal length alone predicts whether the target is 0 with min recall 1.000', an ERROR on the whole
    iris frame. A flag or an amount made for one class is one value on the rest (the test above); petal length
    varies on both sides of the gap that parts setosa."""
    from sklearn.datasets import load_iris
    assert not _leaks(load_iris(as_frame=True).frame.rename(columns={"target": "y"}))


# --- probe 48, F3: a grade cut from a regression target ------------------------------------------------------

@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_a_grade_cut_from_a_regression_target_is_a_leak(k):
    """Before: missed at 1,000 rows for 4-6 bands (k bands explain R² 1 - 1/k² at best, under 0.98); now the target
    tells each held-out row's band, as it tells no honest feature's."""
    rng = np.random.default_rng(k)
    n = 400
    x = rng.normal(size=n)
    y = np.exp(x + rng.normal(0, 0.5, n))
    df = pd.DataFrame({"x": x, "y": y, "grade": pd.qcut(y, k, labels=list("ABCDEF")[:k]).astype(str)})
    leaks = _leaks(df)
    assert set(leaks) == {"grade"}
    f = leaks["grade"]
    assert f.data["metric"] == "band accuracy" and f.data["score"] >= 0.98
    assert f.message.startswith("its values look like bands cut from the target: the target alone tells each row's band")


def test_honest_bands_of_a_noisy_measure_raise_no_leak():
    "Bands of the target seen through noise (a grade from an appraisal): the target tells them 70-95% right."
    for seed in range(10):
        rng = np.random.default_rng(seed)
        y = rng.lognormal(size=500)
        df = pd.DataFrame({"y": y, "grade": pd.qcut(np.log(y) + rng.normal(0, 0.05, 500), 5, labels=False)})
        assert not _leaks(df), seed


# --- probe 47, f1: a cut of one column is the target ---------------------------------------------------------

def test_a_target_cut_from_one_column_is_found_on_100_rows():
    """Before: y = (c0 > 0) was missed in 6 of 12 frames of 100 rows (and 2 of 20 of 300): the bin astride the cut
    misses about half its rows; the nearest training row's class misses only between the two astride it. Found
    now in 10 of these 12 (36/40 seeds; 300 rows 39/40, from 33/40): with ~50 rows a class, 0.98 allows one miss."""
    found = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        df = pd.DataFrame(rng.normal(size=(100, 5)), columns=[f"c{i}" for i in range(5)])
        df["y"] = (df.c0 > 0).astype(int)
        leaks = _leaks(df)
        assert set(leaks) <= {"c0"}, seed
        found.append(bool(leaks))
    assert sum(found) >= 10, found


# --- probe 48, F6: a time recorded after the row's own ------------------------------------------------------

def _transactions(seed, n=600):
    rng = np.random.default_rng(seed)
    ts = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, 300, n)), unit="D")
    fraud = (rng.random(n) < 0.15).astype(int)
    return rng, pd.DataFrame({"ts": ts, "amount": rng.lognormal(3, 1, n), "fraud": fraud,
                              "signup": ts - pd.to_timedelta(rng.uniform(1, 900, n), unit="D")})


@pytest.mark.parametrize("seed", range(3))
def test_a_review_stamped_days_after_a_fraud_is_a_leak_beside_time(seed):
    "Before: missed 0/30 with time='ts'; how long after the row's time it falls tells the class."
    rng, df = _transactions(seed)
    delay = np.where(df.fraud == 1, rng.uniform(2, 6, len(df)), rng.uniform(0, 0.5, len(df)))
    df["reviewed_at"] = df.ts + pd.to_timedelta(delay, unit="D")
    report = tb.check_data(df, "fraud", time="ts")
    (leak,) = report.by_kind("target_leak")
    assert leak.column == "reviewed_at" and leak.data["view"] == "after"
    assert leak.message.startswith("how long after the row's time it falls alone predicts the target")
    (after,) = report.by_kind("after_time")
    assert after.column == "reviewed_at" and after.severity == "info" and after.data["later_share"] == 1.0


def test_times_before_the_rows_own_and_a_planned_date_raise_no_leak():
    "A signup before each transaction says nothing; a due date planned later is said (after_time), not a leak."
    rng, df = _transactions(0)
    df["due"] = df.ts + pd.to_timedelta(rng.uniform(10, 40, len(df)), unit="D")
    report = tb.check_data(df, "fraud", time="ts")
    assert not report.by_kind("target_leak")
    assert [f.column for f in report.by_kind("after_time")] == ["due"]


# --- probe 48, F4: a target encoding fitted on the whole frame ------------------------------------------------

@pytest.mark.parametrize("n, task", [(1000, "binary"), (8000, "binary"), (1000, "regression")])
def test_a_target_encoding_over_the_whole_frame_is_a_leak(n, task):
    """Before: mean churn per zip code (~4 rows a zip) passed 0/30; each row's own label is a quarter of it. 8,000
    rows: the levels are read on the 5,000-row sample, the means on every row."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    y = (x + rng.normal(size=n) > 0).astype(int) if task == "binary" else x + rng.normal(size=n)
    zips = rng.integers(0, n // 4, n).astype(str)
    df = pd.DataFrame({"x": x, "zip": zips, "y": y})
    df["zip_rate"] = df.groupby("zip")["y"].transform("mean")
    df["zip_people"] = df.groupby("zip")["x"].transform("size") * 1000.0  # constant in a zip, honest
    leaks = _leaks(df)
    assert set(leaks) == {"zip_rate"}
    f = leaks["zip_rate"]
    assert f.data["view"] == "encoding" and f.data["level_column"] == "zip" and f.data["score"] == 1.0
    assert "equals the target's mean over each level of 'zip'" in f.message


# --- probes 47 and 48: a score on few rows is weak evidence -------------------------------------------------

def test_a_leak_claim_on_few_rows_is_an_error_only_where_a_strong_honest_feature_would_rarely_score_it():
    """Iris's petals scored 0.98 or more on 12 of 40 samples of 50 rows: ERRORs, report.ok False. A feature right
    95% of the time scores 50/50 in 8% of samples: a warning saying so. A copy of the target on 120 rows: error."""
    from sklearn.datasets import load_iris
    iris = load_iris(as_frame=True).frame.rename(columns={"target": "y"})
    said = [f for seed in range(40) for f in _leaks(iris.sample(50, random_state=seed)).values()]
    assert said and all(f.severity == "warning" for f in said)
    assert all("too few rows to tell a leak from a strong feature" in f.message for f in said)
    assert all(f.data["chance_if_honest"] >= 0.01 and f.data["scored_rows"] == 50 for f in said)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=120), "y": rng.integers(0, 2, 120)})
    df["copy"] = df.y * 2.0
    f = _leaks(df)["copy"]
    assert f.severity == "error" and f.data["chance_if_honest"] < 1e-2 and "too few rows" not in f.message


def test_chance_of_score_is_the_binomial_tail():
    from math import comb
    from trainbook.leaks import chance_of_score
    assert chance_of_score(1.0, 50) == pytest.approx(0.95 ** 50)
    assert chance_of_score(0.98, 50) == pytest.approx(0.95 ** 50 + 50 * 0.05 * 0.95 ** 49)
    assert chance_of_score(0.9, 30, 0.8) == pytest.approx(sum(comb(30, k) * 0.8 ** k * 0.2 ** (30 - k)
                                                              for k in range(27, 31)))
