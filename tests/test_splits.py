"Splits: groups never shared, time order kept with the gap, stratification holds, seeds reproduce, the audit catches leaks."
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.linear_model import LogisticRegression

import trainbook as tb
from trainbook.splits import Splits, nested_splits


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 1000
    df = pd.DataFrame({"x": rng.normal(size=n), "g": rng.integers(0, 60, n), "t": rng.permutation(n) // 2})
    df["y"] = (df.x + rng.normal(scale=0.5, size=n) > 0.8).astype(int)
    return df


def parts(sp): return [p for p in (sp.train, sp.valid, sp.test) if len(p)]


@pytest.mark.parametrize("strategy", ["group", "stratified_group"])
@pytest.mark.parametrize("folds", [None, 5])
def test_group_splits_never_share_a_group(frame, strategy, folds):
    sp = tb.make_splits(frame, "y", strategy=strategy, groups="g", n_folds=folds, test_size=0.2, seed=1)
    ps = parts(sp) + [p for f in (sp.folds or []) for p in f]
    groups = lambda idx: set(frame.g.iloc[idx])
    for a, b in [(sp.train, sp.valid), (sp.train, sp.test), (sp.valid, sp.test)]: assert not groups(a) & groups(b)
    for tr, va in sp.folds or []:
        assert not groups(tr) & groups(va) and not groups(tr) & groups(sp.test)
    assert not [f for f in sp.findings if f.kind == "group_overlap"]


@pytest.mark.parametrize("folds", [None, 4])
def test_time_splits_respect_order_and_gap(frame, folds):
    gap = 7
    sp = tb.make_splits(frame, "y", strategy="time", time="t", test_size=0.15, n_folds=folds, gap=gap)
    order = np.argsort(frame.t.to_numpy(), kind="stable")
    rank = np.empty(len(frame), int); rank[order] = np.arange(len(frame))
    pairs = [(sp.train, sp.valid), (sp.valid, sp.test)] if not folds else [(tr, va) for tr, va in sp.folds]
    for a, b in pairs:
        assert frame.t.iloc[b].min() > frame.t.iloc[a].max()
        assert rank[b].min() - rank[a].max() - 1 >= gap
    assert not [f for f in sp.findings if f.kind == "time_leak"]


def test_stratified_keeps_class_shares():
    df = load_wine(as_frame=True).frame
    sp = tb.make_splits(df, "target", strategy="stratified", valid_size=0.25, test_size=0.25, seed=3)
    overall = df.target.value_counts(normalize=True)
    for idx in parts(sp):
        share = df.target.iloc[idx].value_counts(normalize=True)
        assert (share - overall).abs().max() < 0.02
    assert sorted(np.concatenate(parts(sp)).tolist()) == list(range(len(df)))


def test_seeds_reproduce_and_differ(frame):
    a, b, c = (tb.make_splits(frame, "y", seed=s) for s in (1, 1, 2))
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert np.array_equal(a.valid, b.valid)


def test_auto_chooses_the_strictest(frame):
    assert tb.make_splits(frame, "y", time="t").strategy == "time"
    assert tb.make_splits(frame, "y", groups="g").strategy == "stratified_group"
    assert tb.make_splits(frame.assign(y=frame.x), "y", groups="g").strategy == "group"
    sp = tb.make_splits(frame, "y")
    assert sp.strategy == "stratified" and sp.findings[0].kind == "strategy_chosen"
    assert tb.make_splits(frame.assign(y=frame.x * 1.5), "y").strategy == "random"


def test_audit_catches_a_hand_made_leaky_split(frame):
    df = pd.concat([frame, frame.head(20)], ignore_index=True)
    n = len(df)
    leaky = Splits(train=np.arange(0, 800), valid=np.arange(700, n), test=np.array([], dtype=np.int64),
                   params={"target": "y", "groups": "g", "time": "t"})
    got = {f.kind for f in leaky.audit(df)}
    assert {"group_overlap", "time_leak", "duplicate_rows"} <= got
    clean = tb.make_splits(frame, "y", strategy="time", time="t")
    assert not {"group_overlap", "time_leak", "duplicate_rows"} & {f.kind for f in clean.audit(frame)}


def test_missing_class_and_drift():
    df = pd.DataFrame({"x": np.arange(100), "y": [0] * 90 + [1] * 10})
    sp = Splits(train=np.arange(0, 80), valid=np.arange(80, 100), test=np.array([], dtype=np.int64), params={"target": "y"})
    got = {f.kind: f for f in sp.audit(df)}
    assert got["missing_class"].data["split"] == "train" and "class_balance_drift" in got


def test_nested_splits_honour_groups(frame):
    for fold in nested_splits(frame, "y", groups="g", outer=3, inner=3):
        for a, b in fold["inner"] + [(fold["train"], fold["test"])]:
            assert not set(frame.g.iloc[a]) & set(frame.g.iloc[b])
        assert set(np.concatenate(fold["inner"][0])) <= set(fold["train"])


def test_fingerprints(frame):
    assert tb.fingerprint_frame(frame) == tb.fingerprint_frame(frame.copy())
    changed = frame.copy(); changed.loc[0, "x"] += 1
    assert tb.fingerprint_frame(frame) != tb.fingerprint_frame(changed)


@pytest.mark.parametrize("kwargs, match", [
    ({"target": "nope"}, "target column 'nope' not in DataFrame"),
    ({"groups": "nope"}, "groups column 'nope' not in DataFrame"),
    ({"time": "nope"}, "time column 'nope' not in DataFrame"),
    ({"valid_size": 1.5}, "valid_size must be a fraction"),
    ({"test_size": -0.1}, "test_size must be a fraction"),
    ({"n_folds": 1}, "n_folds must be an int >= 2"),
    ({"strategy": "stratified", "target": "one"}, "single class"),
    ({"strategy": "group", "groups": "few", "n_folds": 5}, "3 distinct groups, fewer than the 5 folds"),
    ({"strategy": "group"}, "needs groups="),
    ({"strategy": "shuffle"}, "strategy must be one of"),
    ({"strategy": "grouped", "groups": "g"}, r"got 'grouped' \(did you mean 'group'\?\)"),
])
def test_bad_input(frame, kwargs, match):
    df = frame.assign(one=1, few=frame.g % 3)
    args = {"target": "y", **kwargs}
    with pytest.raises(ValueError, match=match): tb.make_splits(df, args.pop("target"), **args)


def test_empty_frame():
    with pytest.raises(ValueError, match="df is empty"): tb.make_splits(pd.DataFrame(), None)


def test_valid_rows_copied_from_train_are_named_even_with_another_target():
    "A join that copied training rows into valid: identical in features (the target may differ) is a duplicate."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200), "y": rng.integers(0, 2, 200)})
    copies = df.iloc[:30].assign(y=lambda d: 1 - d["y"])  # the same inputs, the label flipped
    both = pd.concat([df, copies], ignore_index=True)
    # train: rows 0-169; valid: rows 170-199 (their own) and the 30 copies of rows 0-29
    splits = tb.Splits(train=np.arange(170), valid=np.arange(170, 230), test=np.zeros(0, dtype=np.int64),
                       params={"target": "y"})
    found = [f for f in splits.audit(both) if f.kind == "duplicate_rows"]
    assert len(found) == 1 and found[0].data["n_rows"] == 30, found
    clean = tb.Splits(train=np.arange(170), valid=np.arange(170, 200), test=np.zeros(0, dtype=np.int64),
                      params={"target": "y"})
    assert not [f for f in clean.audit(both) if f.kind == "duplicate_rows"]


def test_a_time_split_refuses_what_it_cannot_order_and_a_split_without_train_rows():
    "Seen: missing times all put in valid, dates as text sorted as text, gap=100 on 40 rows: an empty train, no word."
    df = pd.DataFrame({"a": np.arange(40.0), "y": [0, 1] * 20, "t": pd.date_range("2021-01-01", periods=40)})
    with pytest.raises(ValueError, match=r"time column 't' has 6 missing value\(s\)"):
        tb.make_splits(df.assign(t=df.t.where(df.index % 7 != 0)), "y", time="t")
    with pytest.raises(TypeError, match=r"sort as text \('2021-1-10' before '2021-1-9'\).*pd.to_datetime"):
        tb.make_splits(df.assign(t=[f"2021-1-{i}" for i in range(1, 41)]), "y", time="t")
    with pytest.raises(ValueError, match=r"these splits leave no train rows: 40 rows.*gap=100"):
        tb.make_splits(df, "y", time="t", gap=100)
    sp = tb.make_splits(df, "y", time="t", gap=np.int64(2), n_folds=np.int64(3),
                        valid_size=np.float32(0.2))  # numpy's numbers
    assert type(sp.params["n_folds"]) is int and len(sp.folds) == 3


def test_audit_parts_names_its_wrong_inputs():
    "Seen: 'The truth value of an array ... is ambiguous', KeyError 'gg', IndexError 40."
    df = pd.DataFrame({"a": np.arange(40.0), "y": [0, 1] * 20})
    with pytest.raises(TypeError, match=r"parts must be a dict of split name -> row positions.*got ndarray"):
        tb.audit_parts(df, np.arange(10), np.arange(10, 20))
    with pytest.raises(ValueError, match=r"parts\['valid'\] holds row position 40, out of range for a df of 40 rows"):
        tb.audit_parts(df, {"train": np.arange(30), "valid": np.arange(30, 41)})
    with pytest.raises(ValueError, match=r"groups column 'gg' not in DataFrame"):
        tb.audit_parts(df, {"train": np.arange(30)}, groups="gg")


def days_frame(days, per_day, seed=0):
    "`per_day` rows a day: every time value is tied `per_day` times."
    rng = np.random.default_rng(seed)
    n = days * per_day
    return pd.DataFrame({"x": rng.normal(size=n), "y": rng.integers(0, 2, n),
                         "t": np.repeat(pd.date_range("2021-01-01", periods=days), per_day)})


@pytest.mark.parametrize("gap", [0, 3])
def test_time_folds_keep_tied_times_on_one_side_at_both_levels_of_nested_splits(gap):
    df = days_frame(10, 10)
    sp = tb.make_splits(df, "y", strategy="time", time="t", n_folds=3, gap=gap)
    assert not [f for f in sp.findings if f.kind == "time_leak"]
    for tr, va in sp.folds:
        assert df.t.iloc[tr].max() < df.t.iloc[va].min() and len(tr) and len(va)
    nested = nested_splits(days_frame(12, 10), "y", time="t", outer=4, inner=2)
    for fold in nested:
        assert not [f for f in fold["findings"] if f.severity == "error"]
        d = days_frame(12, 10).t
        assert d.iloc[fold["train"]].max() < d.iloc[fold["test"]].min()
        for a, b in fold["inner"]: assert d.iloc[a].max() < d.iloc[b].min()


def test_nested_splits_carry_the_audit_and_nested_cv_warns_of_a_leak(frame):
    from sklearn.linear_model import LogisticRegression
    nested = nested_splits(frame, "y", groups="g", outer=3, inner=2)
    assert all("findings" in f for f in nested)
    leaky = [dict(f, findings=[tb.Finding("group_overlap", "error", "2 group(s) in both train and test")])
             for f in nested]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("trainbook.splits.nested_splits", lambda *a, **k: leaky)
        with pytest.warns(UserWarning, match="the splits leak"):
            out = tb.nested_cv(LogisticRegression(), {"C": [1.0]}, frame, "y", groups="g", outer=3, inner=2)
    assert len(out["findings"]) == 3
    with pytest.raises(ValueError, match="groups column 'gg' not in DataFrame"):
        tb.nested_cv(LogisticRegression(), {"C": [1.0]}, frame, "y", groups="gg")


def test_a_grouped_holdout_counts_rows_and_says_when_uneven_groups_miss_the_share():
    rng = np.random.default_rng(0)
    even = pd.DataFrame({"x": rng.normal(size=400), "g": np.repeat(np.arange(100), 4)})
    even["g"] = np.where(np.arange(400) < 200, even.g, np.arange(400) // 40 + 1000)  # 100 small, 5 big groups
    for seed in range(5):
        sp = tb.make_splits(even, groups="g", valid_size=0.2, seed=seed)
        assert abs(len(sp.valid) / 400 - 0.2) <= 0.05 and "split_size" not in [f.kind for f in sp.findings]
    lopsided = pd.DataFrame({"x": rng.normal(size=100), "g": [0] * 80 + list(range(1, 21))})
    for seed in range(6):  # the big group first in the draw is passed over: the 20 small ones fill the share
        assert len(tb.make_splits(lopsided, groups="g", valid_size=0.2, seed=seed).valid) == 20
    two = pd.DataFrame({"x": rng.normal(size=100), "g": [0] * 70 + [1] * 30})
    for seed in range(4):
        sp = tb.make_splits(two, groups="g", valid_size=0.2, seed=seed)
        size = [f for f in sp.findings if f.kind == "split_size"]
        assert len(sp.valid) == 30 and size and "the largest group holds 70 of 100 rows" in size[0].message


@pytest.mark.parametrize("valid_size, test_size", [(0.3, 0.0), (0.4, 0.0), (0.2, 0.4)])
def test_a_stratified_group_holdout_holds_the_share_asked_for(valid_size, test_size):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.normal(size=2000), "g": rng.integers(0, 400, 2000), "y": rng.integers(0, 2, 2000)})
    sp = tb.make_splits(df, "y", groups="g", valid_size=valid_size, test_size=test_size, seed=0)
    assert sp.strategy == "stratified_group"
    assert abs(len(sp.valid) / 2000 - valid_size) < 0.03 and abs(len(sp.test) / 2000 - test_size) < 0.03
    three = pd.DataFrame({"x": np.arange(60.0), "y": np.tile([0, 1], 30), "g": np.repeat([1, 2, 3], 20)})
    sp = tb.make_splits(three, "y", groups="g")  # 3 groups: a holdout of 1 of them, not 5 folds of 3
    assert len(sp.valid) == 20 and not set(three.g.iloc[sp.valid]) & set(three.g.iloc[sp.train])


def test_time_folds_are_cut_around_a_long_tie_block_when_there_are_times_enough():
    from sklearn.model_selection import TimeSeriesSplit
    # 71 times, the last 30 rows at one: TimeSeriesSplit starts its folds at rows 25, 50, 75; the fold at 75
    # moves back before the tied rows (past them it would be empty), so the last fold is the tie block whole
    df = pd.DataFrame({"t": np.r_[np.arange(70), np.full(30, 70)], "x": np.arange(100.0)})
    sp = tb.make_splits(df, time="t", n_folds=3)
    assert [int(b.min()) for _, b in sp.folds] == [25, 50, 70]
    assert [len(b) for _, b in sp.folds] == [25, 20, 30]
    for tr, va in sp.folds: assert len(tr) and df.t.iloc[tr].max() < df.t.iloc[va].min()
    # with no tie in the way, the folds are TimeSeriesSplit's
    sklearn = [(a, b) for a, b in TimeSeriesSplit(2).split(df)]
    for (a, b), (c, d) in zip(tb.make_splits(df, time="t", n_folds=2).folds, sklearn):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    # a first time on 90 of 100 rows took every start: the folds start at the next times
    first = pd.DataFrame({"t": np.r_[np.zeros(90), np.arange(1, 11)]})
    sp = tb.make_splits(first, time="t", n_folds=3)
    assert [int(b.min()) for _, b in sp.folds] == [90, 91, 92]
    with pytest.raises(ValueError, match="n_folds=3 time folds need 4 blocks.*has 3 distinct value"):
        tb.make_splits(pd.DataFrame({"t": np.repeat([0, 1, 2], 30)}), time="t", n_folds=3)


def test_split_arguments_the_splitters_would_reject_are_named_first():
    df = pd.DataFrame({"x": np.arange(20.0), "y": np.repeat(np.arange(10), 2)})
    with pytest.raises(ValueError, match=r"valid_size=0.2 holds 4 of the 20 rows.*10 classes"):
        tb.make_splits(df, "y", strategy="stratified")
    counts = pd.DataFrame({"x": np.arange(60.0), "y": [0] * 20 + [1] * 20 + [2] * 19 + [9]})
    with pytest.raises(ValueError, match="if it is a count or a measure, pass strategy='random'"):
        tb.make_splits(counts, "y")
    with pytest.raises(ValueError, match="fewer than the 2 splits it must appear in$"):
        tb.make_splits(counts, "y", strategy="stratified")  # asked for: no word about 'auto'
    t = pd.DataFrame({"x": np.arange(60.0), "t": np.arange(60)})
    with pytest.raises(ValueError, match="gap=50 rows leave no train rows before the first time fold"):
        tb.make_splits(t, time="t", n_folds=3, gap=50)
    with pytest.raises(ValueError, match="n_folds=60 time folds need 61 blocks.*60 distinct value"):
        tb.make_splits(t, time="t", n_folds=60)
    with pytest.raises(ValueError, match="n_folds=61 is more than the 60 rows"):
        tb.make_splits(t, strategy="random", n_folds=61)
    for seed in (None, -1, "0", 1.5):
        with pytest.raises(ValueError, match="seed must be a non-negative int"):
            tb.make_splits(t, seed=seed)


def test_group_folds_follow_the_seed_and_group_ids_of_mixed_types_split_and_audit():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=300), "g": rng.integers(0, 30, 300)})
    a, b = (tb.make_splits(df, strategy="group", groups="g", n_folds=3, seed=s) for s in (0, 1))
    assert not all(np.array_equal(x[1], y[1]) for x, y in zip(a.folds, b.folds))
    df["g"] = [i if i % 2 else f"id{i}" for i in df.g]  # ints and strings
    sp = tb.make_splits(df, groups="g", n_folds=3)
    assert not [f for f in sp.findings if f.kind == "group_overlap"]
    holes = df.assign(g=df.g.where(df.index % 7 != 0, None))  # a missing id is in no group
    found = sp.audit(holes, groups="g")
    assert not [f for f in found if f.kind == "group_overlap"]
    leaky = Splits(np.arange(0, 200), np.arange(150, 300), np.array([], dtype=np.int64))
    overlap = [f for f in leaky.audit(df, groups="g") if f.kind == "group_overlap"]
    assert overlap and all(x in set(df.g) for x in overlap[0].data["groups"])


def test_zoned_times_and_periods_order_a_time_split():
    from trainbook.audit import time_values
    zoned = pd.Series(pd.date_range("2021-03-27", periods=48, freq="h", tz="Europe/Berlin"))  # across DST
    assert time_values(zoned).dtype.kind == "M" and (np.diff(time_values(zoned)) > np.timedelta64(0)).all()
    df = pd.DataFrame({"x": np.arange(48.0), "t": zoned, "p": pd.period_range("2021-01", periods=48, freq="M")})
    for col in ("t", "p"):
        sp = tb.make_splits(df, time=col, valid_size=0.25)
        assert sp.valid.min() == 36 and sp.train.max() == 35
        assert [f.kind for f in sp.findings[1:]] == ["few_rows"]  # 12 valid rows: only their count is noted


def test_hand_made_splits_whose_parts_share_rows_are_refused_where_they_are_used():
    "Probe 12: train = valid = all rows was a warning only; loaders and the baseline then scored training rows."
    df = pd.DataFrame({"x": np.arange(100.0), "y": np.arange(100) % 2})
    rows = np.arange(100)
    same = tb.Splits(train=rows, valid=rows, test=np.zeros(0, dtype=np.int64), params={"target": "y"})
    with pytest.raises(ValueError, match=r"splits.train and splits.valid share 100 row positions \(e.g. 0, 1"):
        tb.loaders_from_frame(df, "y", same)
    folds = tb.Splits(train=rows[:80], valid=rows[80:], test=np.zeros(0, dtype=np.int64), params={"target": "y"},
                      folds=[(rows[:60], rows[50:])])
    with pytest.raises(ValueError, match=r"splits.folds\[0\]\[0\] and splits.folds\[0\]\[1\] share 10"):
        tb.baseline(df, "y", folds, models="dummy")


def test_the_split_audit_finds_copies_beside_a_row_id_column():
    "Probe 12: a row_id column made every row unique, so copies across train and valid went unreported."
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300), "y": rng.integers(0, 2, 300)})
    df = pd.concat([base, base.iloc[:100]], ignore_index=True).assign(row_id=np.arange(400))
    found = [f for f in tb.make_splits(df, "y", seed=0).findings if f.kind == "duplicate_rows"]
    assert found and "'row_id' left out" in found[0].message and found[0].data["n_rows"] > 0
    clean = base.assign(row_id=np.arange(300))  # no copies: the id left out finds none either
    assert not [f for f in tb.make_splits(clean, "y", seed=0).findings if f.kind == "duplicate_rows"]


def test_the_split_audit_names_one_entity_written_two_ways_on_two_sides():
    "Probe 12: 'P07' in train and 'p07 ' in valid were separate groups to the audit: a silent leak."
    ids = [f"P{i:02d}" for i in range(40)]
    df = pd.DataFrame({"g": [v if k % 2 else v.lower() + " " for v in ids for k in range(4)],
                       "x": np.arange(160.0), "y": np.arange(160) % 2})
    found = [f for f in tb.make_splits(df, "y", strategy="group", groups="g", seed=0).findings
             if f.kind == "group_id_variants"]
    assert found and found[0].data["n_entities"] > 0 and "likely one entity on both sides" in found[0].message
    clean = df.assign(g=df.g.str.strip().str.upper())
    assert not [f for f in tb.make_splits(clean, "y", strategy="group", groups="g", seed=0).findings
                if f.kind == "group_id_variants"]


@pytest.mark.parametrize("kw, name", [(dict(outer=1), "outer"), (dict(inner=1), "inner"), (dict(inner=2.5), "inner")])
def test_nested_folds_are_named_as_given(kw, name):
    "Probe 12: outer=1 and inner=1 were refused as 'n_folds', an argument the caller never passed."
    df = pd.DataFrame({"x": np.arange(60.0), "y": np.arange(60) % 2})
    with pytest.raises(ValueError, match=rf"^{name} must be an int >= 2"):
        tb.nested_splits(df, "y", **kw)


def test_a_random_split_of_an_entity_id_column_names_the_overlap_and_the_fix():
    "Probe 15, f10: 200 patients × 10 rows split at random (no groups=): no finding; each patient on both sides."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"patient_id": np.repeat(np.arange(200), 10), "x": rng.normal(size=2000)})
    df["y"] = (df.x > 0).astype(int)
    (f,) = [f for f in tb.make_splits(df, "y").findings if f.kind == "entity_overlap"]
    assert f.severity == "warning" and f.column == "patient_id" and "groups='patient_id'" in f.advice
    assert f.data["n_ids"] == 200 and f.data["n_shared"] > 150
    assert "entity_overlap" not in [g.kind for g in tb.make_splits(df, "y", groups="patient_id").findings]
    # a row id (every value its own) and a column not named like an id: no entity
    other = df.drop(columns="patient_id").assign(row_id=np.arange(2000), ward=np.repeat(np.arange(200), 10))
    assert "entity_overlap" not in [g.kind for g in tb.make_splits(other, "y").findings]


@pytest.mark.parametrize("name, values", [("email", lambda i: f"user{i}@mail.example"),
                                          ("customer", lambda i: f"c{i:05d}"),
                                          ("contact", lambda i: f"name{i}@host.org")])
def test_an_entity_named_so_or_written_as_email_addresses_names_the_overlap(name, values):
    """Probe 48, F5: customers keyed by 'email' (200 × 5 rows) split at random: silent, all 133 valid customers in
    train too; the same column named customer_id was found 30/30. A segment of a few levels is no entity."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({name: [values(i) for i in np.repeat(np.arange(200), 5)], "x": rng.normal(size=1000),
                       "customer_segment": rng.choice(["a", "b", "c", "d"], 1000)})
    df["y"] = (df.x > 0).astype(int)
    found = [f for f in tb.make_splits(df, "y").findings if f.kind == "entity_overlap"]
    assert [f.column for f in found] == [name] and f"groups={name!r}" in found[0].advice


def test_a_random_split_of_a_series_says_the_parts_share_one_period():
    "Probe 15, f10: a random split of an hourly series was silent; an info says what a time split would do."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"ts": pd.date_range("2024", periods=600, freq="h"), "x": rng.normal(size=600)})
    df["y"] = np.cumsum(rng.normal(size=600))
    (f,) = [f for f in tb.make_splits(df, "y").findings if f.kind == "one_period"]
    assert f.severity == "info" and f.column == "ts" and "time='ts'" in f.advice and f.data["share"] > 0.9
    assert "one_period" not in [g.kind for g in tb.make_splits(df, "y", time="ts").findings]


def test_nested_splits_announce_once_with_the_findings_of_both_levels(frame):
    from trainbook.core import listen, unlisten
    heard = []
    hear = lambda kind, obj: heard.append((kind, obj))
    copied = pd.concat([frame, frame], ignore_index=True)  # each row twice
    listen(hear)
    try: nested = nested_splits(copied, "y", outer=3, inner=2)
    finally: unlisten(hear)
    assert [kind for kind, _ in heard] == ["split_made"]  # not once for each inner split as well
    found = [f for fold in nested for f in fold["findings"]]
    assert any(f.kind == "duplicate_rows" for f in found)
    assert heard[0][1].findings == found  # a checklist reads the leaks of both levels, not the last inner split's


def churn_frame(n=3000):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=n), "customer": rng.integers(0, 600, n), "day": rng.permutation(n)})
    df["churn"] = (df.x + rng.normal(size=n) > 0).astype(int)
    return df


@pytest.mark.parametrize("kw, reorder", [
    (dict(groups="customer"), lambda df: df.sample(frac=1, random_state=0)),
    (dict(groups="customer"), lambda df: df.sample(frac=1, random_state=0).reset_index(drop=True)),
    (dict(time="day"), lambda df: df.sort_values("day")),
    # probe 47: a stratified split on a frame shuffled and re-indexed: only the target moved
    (dict(), lambda df: df.drop(columns=["customer", "day"]).sample(frac=1, random_state=0).reset_index(drop=True))])
def test_splits_reused_on_a_reordered_frame_of_the_same_length_are_refused(kw, reorder):
    df = churn_frame()
    sp = tb.make_splits(df, "churn", **kw)
    with pytest.raises(ValueError, match="splits: df's rows were reordered or changed since the split was made"):
        tb.baseline(reorder(df), "churn", sp, models=["dummy"])
    for call in (lambda d: tb.loaders_from_frame(d, "churn", sp),
                 lambda d: tb.cross_validate(LogisticRegression(), d, "churn", sp)):
        with pytest.raises(ValueError, match="make the splits again on this frame"): call(reorder(df))
    # the same frame, a fresh index on the same rows, a new column: the rows are where they were
    for same in (df, df.reset_index(drop=True), df.assign(z=1.0)):
        assert len(tb.baseline(same, "churn", sp, models=["dummy"]))
    old = Splits(sp.train, sp.valid, sp.test, None, sp.strategy, sp.reason,
                 {k: v for k, v in sp.params.items() if k != "row_keys"})  # made before keys were recorded
    assert len(tb.baseline(reorder(df), "churn", old, models=["dummy"]))


def test_a_k_fold_splits_used_as_its_fold_0_is_said_once_and_its_repr_says_fold_0():
    df = churn_frame(1000)
    sp = tb.make_splits(df, "churn", time="day", n_folds=4)
    assert "valid=200 (fold 0 of 4)" in repr(sp) and "(fold 0 of 4)" in sp._repr_html_()
    assert "fold 0" not in repr(tb.make_splits(df, "churn", time="day"))
    for call in (lambda: tb.baseline(df, "churn", sp, models=["dummy", "linear", "xgboost"]),
                 lambda: tb.loaders_from_frame(df, "churn", sp),
                 lambda: tb.fit_xgboost(df, "churn", sp, live=False)):
        with pytest.warns(UserWarning) as got: call()
        said = [w for w in got if "fold 0" in str(w.message)]
        assert len(said) == 1 and "splits hold 4 folds" in str(said[0].message), [str(w.message) for w in got]
        assert "tb.cross_validate" in str(said[0].message) and said[0].filename == __file__
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every fold used: no word
        tb.cross_validate(LogisticRegression(), df, "churn", sp)


def test_auto_with_groups_and_time_says_the_groups_are_not_kept_apart_and_how_to_keep_them():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=2000), "customer": rng.integers(0, 300, 2000),
                       "day": rng.integers(0, 365, 2000)})
    df["y"] = (df.x > 0).astype(int)
    sp = tb.make_splits(df, "y", groups="customer", time="day")
    chosen = sp.findings[0]
    assert sp.strategy == "time" and chosen.kind == "strategy_chosen" and chosen.severity == "warning"
    assert "'customer'" in chosen.message and "NOT kept apart" in chosen.message
    assert "strategy='group'" in chosen.message and "transform('min')" in chosen.message
    assert any(f.kind == "group_overlap" for f in sp.findings)
    # the advice followed: a time cut at the group level keeps every group on one side, in time order
    df["start"] = df.groupby("customer")["day"].transform("min")
    for folds in (None, 3):
        sp = tb.make_splits(df, "y", groups="customer", time="start", n_folds=folds)
        assert not [f for f in sp.findings if f.severity != "info"], sp.findings
        for tr, va in sp.folds or [(sp.train, sp.valid)]:
            assert not set(df.customer.iloc[tr]) & set(df.customer.iloc[va])
            assert df.start.iloc[tr].max() < df.start.iloc[va].min()


def test_class_share_advice_never_says_stratify_to_a_time_split_or_a_stratified_one():
    rng = np.random.default_rng(0)
    n = 400
    drifting = pd.DataFrame({"x": rng.normal(size=n), "day": np.arange(n)})
    drifting["y"] = ((np.arange(n) < 300) & (rng.random(n) < 0.3)).astype(int)  # positives only early on
    found = {f.kind: f for f in tb.make_splits(drifting, "y", time="day").findings}
    assert "changes over time" in found["class_balance_drift"].advice
    assert "cannot be stratified" in found["missing_class"].advice
    assert not any("stratify the split" in f.advice for f in found.values())
    y = np.r_[np.zeros(50), np.ones(47), [2, 2, 2]].astype(int)  # a 3-row class: too rare for three parts
    sp = tb.make_splits(pd.DataFrame({"x": rng.normal(size=100), "y": y}), "y", test_size=0.2)
    missing = [f for f in sp.findings if f.kind == "missing_class"]
    assert sp.strategy == "stratified" and missing
    assert all("stratified already" in f.advice and "too rare" in f.advice for f in missing)
    random = [f for f in tb.make_splits(drifting, "y", strategy="random", valid_size=0.02, seed=4).findings
              if f.kind == "missing_class"]
    assert random and "stratify the split" in random[0].advice  # a random split is still told to stratify


def test_a_time_holdout_never_returns_an_empty_part_asked_for():
    "Probe 30: a cut inside the last tie block gave valid=0 (or test=0) with a warning only."
    late = pd.DataFrame({"x": np.arange(40.0), "y": [0, 1] * 20, "t": [0] * 5 + [1] * 35})
    sp = tb.make_splits(late, "y", time="t", valid_size=0.2)  # the last time's 35 rows: held out
    assert (len(sp.train), len(sp.valid)) == (5, 35) and "split_size" in [f.kind for f in sp.findings]
    three = late.assign(t=[0] * 20 + [1] * 10 + [2] * 10)
    sp = tb.make_splits(three, "y", time="t", test_size=0.2, valid_size=0.2)
    assert (len(sp.train), len(sp.valid), len(sp.test)) == (20, 10, 10)
    with pytest.raises(ValueError, match=r"time column 't' holds a single time in the 40 rows that "
                                         r"valid_size=0.2 splits.*valid would be empty"):
        tb.make_splits(late.assign(t=1), "y", time="t")
    with pytest.raises(ValueError, match=r"'t' holds a single time in the 30 rows.*valid would be empty"):
        tb.make_splits(late.assign(t=[0] * 30 + [1] * 10), "y", time="t", test_size=0.2)  # test took the 1s


def test_nested_splits_audit_with_the_target_as_make_splits_does():
    "Probe 30: nested_splits audited without the target: copies with a flipped label, missing classes unseen."
    rng = np.random.default_rng(4)
    d = pd.DataFrame({"x": rng.normal(size=40), "z": rng.normal(size=40), "y": [0, 1] * 20})
    copies = pd.concat([d, d.iloc[:10].assign(y=lambda f: 1 - f.y)], ignore_index=True)
    kinds = [f.kind for fold in nested_splits(copies, "y", strategy="random", outer=3, inner=2)
             for f in fold["findings"]]
    assert "duplicate_rows" in kinds
    rare = pd.DataFrame({"x": rng.normal(size=60), "y": [0] * 29 + [1] * 29 + [2] * 2})
    kinds = [f.kind for fold in nested_splits(rare, "y", strategy="random", outer=3, inner=2)
             for f in fold["findings"]]
    assert "missing_class" in kinds  # a 2-row class cannot reach every part


def test_the_fix_suggested_for_missing_group_ids_gives_each_row_its_own_id():
    "Probe 30: the suggestion used df.index, which repeats after pd.concat: 9 rows got 3 ids, fake groups."
    one = pd.DataFrame({"x": np.arange(10.0), "y": [0, 1] * 5, "g": [1, 2, None, 3, 4, None, 5, 6, None, 7]})
    df = pd.concat([one] * 3)
    with pytest.raises(ValueError, match="9 missing group id") as e: tb.make_splits(df, "y", groups="g")
    fix = str(e.value).split("e.g. ", 1)[1].split(" (an id per row", 1)[0]
    exec(fix, {"df": df})
    assert df.g.notna().all() and df.g.iloc[[2, 5, 8, 12, 15, 18, 22, 25, 28]].nunique() == 9


@pytest.mark.parametrize("strategy", ["group", "stratified_group"])
def test_group_folds_are_sklearns_on_the_group_ids(strategy):
    "Probe 30: the splitters were given pd.factorize codes: other folds than sklearn's with the same seed."
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold
    splitter = {"group": GroupKFold, "stratified_group": StratifiedGroupKFold}[strategy]
    rng = np.random.default_rng(0)
    n = 300
    order = ["z", "a", "m", "b", "q", "c", "k", "e"]  # categories not in sorted order
    for ids in (rng.integers(0, 40, n), np.array([f"p{i}" for i in rng.integers(0, 40, n)]),
                pd.Categorical(rng.choice(order, n), categories=order)):
        df = pd.DataFrame({"x": rng.normal(size=n), "y": rng.integers(0, 2, n), "g": ids})
        sp = tb.make_splits(df, "y", strategy=strategy, groups="g", n_folds=5, seed=3)
        ref = splitter(5, shuffle=True, random_state=3).split(df, df.y, df.g)
        assert all(np.array_equal(va, np.sort(b)) for (_, va), (_, b) in zip(sp.folds, ref, strict=True))


def test_a_part_or_fold_of_few_rows_is_named_with_its_count_and_the_fix():
    "Probe 47: a 5-row frame split into train 4 / valid 1 (and five 1-row folds) without a word about its size."
    tiny = pd.DataFrame({"x": [0.1, 0.5, 0.9, 1.3, 2.0], "y": [1.0, 2.0, 2.9, 4.2, 5.1]})
    sp = tb.make_splits(tiny, "y", seed=0)
    few = [f for f in sp.findings if f.kind == "few_rows"]
    assert len(sp.valid) == 1 and [f.severity for f in few] == ["warning"]
    assert "valid holds 1 row: its scores are noise" in few[0].message and "n_folds=" in few[0].advice
    folds = [f for f in tb.make_splits(tiny, "y", n_folds=5, seed=0).findings if f.kind == "few_rows"]
    assert len(folds) == 1 and "5 folds' valid parts hold 1 row each" in folds[0].message
    df = pd.DataFrame({"x": np.arange(200.0), "y": np.arange(200.0)})
    sp = tb.make_splits(df, "y", test_size=0.1)  # valid 40 rows, test 20
    assert [(f.data["split"], f.data["rows"]) for f in sp.findings if f.kind == "few_rows"] == [("test", 20)]
    assert not [f for f in tb.make_splits(df, "y", n_folds=5).findings if f.kind == "few_rows"]  # 40 each
    assert folds[0].severity == "warning"  # 5 rows in all
    # probe 52: 50 folds of 20 rows: each fold's score is noisy, their mean scores all 1,000 rows: information
    (many,) = [f for f in tb.make_splits(df.sample(1000, replace=True, random_state=0).reset_index(drop=True), "y",
                                         n_folds=50).findings if f.kind == "few_rows"]
    assert many.severity == "info"


def test_flags_and_types_named_like_entities_are_no_entity():
    "Probe 49: is_new_customer, premium_member, device, has_phone were each an entity_overlap advising groups=<flag>."
    rng = np.random.default_rng(0)
    n = 1000
    df = pd.DataFrame({"x": rng.normal(size=n), "is_new_customer": rng.integers(0, 2, n),
                       "premium_member": rng.random(n) < 0.3, "device": rng.choice(["mobile", "desktop", "tablet"], n),
                       "has_phone": rng.choice(["yes", "no"], n)})
    df["y"] = (df.x > 0).astype(int)
    assert "entity_overlap" not in [f.kind for f in tb.make_splits(df, "y").findings]


def test_labels_cleaned_after_the_split_are_no_reordering():
    "The target's values changed (relabelled rows), not its order: the splits still index the same rows."
    df = churn_frame()
    sp = tb.make_splits(df, "churn")
    cleaned = df.assign(churn=np.where(np.arange(len(df)) < 30, 1 - df.churn, df.churn))
    assert len(tb.baseline(cleaned, "churn", sp, models=["dummy"]))


@pytest.mark.parametrize("folds", [None, 3])
def test_a_time_gap_takes_whole_times_so_it_buys_distance_in_time(folds):
    "Probe 60: with 10 rows a day, gap=5 left out half of train's last day: valid began the next day, as with gap=0."
    df = days_frame(20, 10)
    sp = tb.make_splits(df, "y", strategy="time", time="t", n_folds=folds, test_size=0.2, gap=5)
    day = np.repeat(np.arange(20), 10)
    pairs = list(sp.folds) if folds else [(sp.train, sp.valid)]
    for a, b in pairs + [(pairs[-1][1], sp.test)]:  # each train and its valid, then the last valid and test
        assert day[b].min() - day[a].max() == 2  # a whole day between them: 10 rows, not 5
        assert set(np.flatnonzero(day == day[a].max())) <= set(a)  # no day cut in two
        assert not set(np.flatnonzero(day == day[a].max() + 1)) & (set(a) | set(b))
    assert not [f for f in sp.findings if f.kind == "time_leak"]
    untied = tb.make_splits(pd.DataFrame({"t": np.arange(100)}), time="t", n_folds=3, gap=5)
    assert [va.min() - tr.max() - 1 for tr, va in untied.folds] == [5, 5, 5]  # unique times: exactly gap rows
    with pytest.raises(ValueError, match="gap=5 rows leave no train rows before the first time fold"):
        tb.make_splits(days_frame(4, 10), time="t", n_folds=3, gap=5)  # its first fold starts on day 2


def test_a_gap_no_split_applies_is_refused():
    "Probe 72: make_splits(df, 'y', gap=5), with or without groups=, gave the split of gap=0, without a word."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "g": rng.integers(0, 20, 200), "y": rng.integers(0, 2, 200),
                       "t": rng.permutation(200)})
    for kw in (dict(), dict(groups="g"), dict(strategy="random")):
        with pytest.raises(ValueError, match=r"^gap=5 leaves rows out between the parts of a time split, but no "
                                             r"time column is given"):
            tb.make_splits(df, "y", gap=5, **kw)
    with pytest.raises(ValueError, match=r"^gap=5 .* but strategy='group' does not order rows by time"):
        tb.make_splits(df, "y", groups="g", time="t", strategy="group", gap=5)
    assert tb.make_splits(df, "y", time="t", gap=5).params["gap"] == 5  # a time split takes it


def test_summary_names_another_frame_and_lists_no_class_of_an_unused_category():
    """Probe 72: sp.summary(df.head(50)) failed with pandas' 'positional indexers are out-of-bounds'; a target
    category no row holds was a 'share unknown 0.0' column."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200),
                       "y": pd.Categorical(rng.choice(["no", "yes"], 200), categories=["no", "yes", "unknown"])})
    sp = tb.make_splits(df, "y")
    with pytest.raises(ValueError, match=r"^splits were made on a frame of 200 rows, but df has 50: they index "
                                         r"another frame's rows"):
        sp.summary(df.head(50))
    hand = Splits(train=np.arange(150), valid=np.arange(150, 250), test=np.array([], dtype=np.int64),
                  params={"target": "y"})
    with pytest.raises(ValueError, match=r"^splits.valid holds row position 249, out of range for a df of 200 "
                                         r"rows: these splits were made on another frame"):
        hand.summary(df)
    assert list(sp.summary(df).columns) == ["rows", "share no", "share yes"]


def test_inner_folds_that_cannot_be_made_name_inner_and_the_outer_fold():
    """Probe 72: nested_splits(outer=4, inner=10) on 12 groups said "groups column 'g' has 9 distinct groups,
    fewer than the 10 folds asked for" (the column has 12: the outer fold's train part has 9)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=120), "g": rng.integers(0, 12, 120), "y": rng.choice(["a", "b"], 120)})
    with pytest.raises(ValueError, match=r"^inner=10 folds cannot be made in outer fold 0's train part \(\d+ of 120 "
                                         r"rows, outer=4\): groups column 'g' has 9 distinct groups, fewer than the "
                                         r"10 folds asked for; lower inner \(or outer\)$"):
        nested_splits(df, "y", groups="g", outer=4, inner=10)


ZIPF_SIZES = [1, 1, 2, 1, 1, 3, 1, 1, 1, 25, 1, 2, 1, 1, 27, 1, 4, 1, 32, 1, 2, 1, 1, 82, 1, 5, 1, 92, 1, 1, 2, 1,
              142, 1, 3, 1, 1, 6, 1, 2]


@pytest.mark.parametrize("test_size", [0.0, 0.2])
def test_the_default_grouped_holdout_counts_rows_and_keeps_the_class_shares(test_size):
    """Probe 87: the stratified group holdout took m of 20 StratifiedGroupKFold folds: on groups of Zipf sizes
    train held 20% of the rows where 60% was asked, valid 38% (no test) with 14% class drift."""
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(len(ZIPF_SIZES)), ZIPF_SIZES)
    df = pd.DataFrame({"x": rng.normal(size=len(g)), "g": g, "y": rng.choice(["a", "b"], len(g))})
    share = df.y.value_counts(normalize=True)
    for seed in range(5):
        sp = tb.make_splits(df, "y", groups="g", valid_size=0.2, test_size=test_size, seed=seed)
        assert sp.strategy == "stratified_group"
        assert abs(len(sp.valid) / len(df) - 0.2) < 0.03 and abs(len(sp.test) / len(df) - test_size) < 0.03
        for part in parts(sp):
            assert (df.y.iloc[part].value_counts(normalize=True) - share).abs().max() < 0.03
        assert not {"split_size", "class_balance_drift", "group_overlap"} & {f.kind for f in sp.findings}


def test_a_stratified_group_holdout_keeps_class_shares_where_groups_lean_to_a_class():
    "Each group of its own class mix (a patient's diagnoses): rows and classes both near the shares asked."
    rng = np.random.default_rng(2)
    g = rng.integers(0, 300, 3000)
    leaning = rng.beta(0.5, 3, 300)  # each group's share of class 1
    df = pd.DataFrame({"x": rng.normal(size=3000), "g": g, "y": (rng.random(3000) < leaning[g]).astype(int)})
    share = df.y.mean()
    for seed in range(10):
        sp = tb.make_splits(df, "y", groups="g", valid_size=0.2, test_size=0.2, seed=seed)
        for part, asked in ((sp.valid, 0.2), (sp.test, 0.2), (sp.train, 0.6)):
            assert abs(len(part) / 3000 - asked) < 0.01 and abs(df.y.iloc[part].mean() - share) < 0.01


@pytest.mark.parametrize("strategy", ["group", "stratified_group"])
def test_a_grouped_holdout_with_a_test_part_keeps_a_group_too_big_to_hold_in_train(strategy):
    """Probe 87: one group of 101 of 120 rows: the test holdout took every small group, then 'these splits leave
    no train rows ... gap=0 ...; lower gap or the sizes' (stratified: the big group in valid, train 11 rows)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=120), "g": np.where(np.arange(120) < 101, 0, np.arange(120) % 15 + 1),
                       "y": rng.choice(["a", "b"], 120)})
    for seed in range(5):
        sp = tb.make_splits(df, "y", strategy=strategy, groups="g", test_size=0.2, seed=seed)
        assert set(df.g.iloc[sp.train]) == {0}  # the big group, and only it
        assert 8 <= len(sp.valid) <= 11 and 8 <= len(sp.test) <= 11  # the 19 small rows, shared as asked
        size = [f.message for f in sp.findings if f.kind == "split_size"]
        assert len(size) == 2 and all("the largest group holds 101 of 120 rows" in m for m in size)


def test_a_holdout_that_leaves_no_train_row_says_so_in_trainbooks_words():
    """Probe 87: a 1-row random split surfaced scikit-learn's 'With n_samples=1, test_size=0.2 ...' (test_size
    is trainbook's 0; 0.2 is valid_size); the no-train error told to 'lower gap' of a split with gap=0."""
    one = pd.DataFrame({"x": [1.0], "y": [0]})
    with pytest.raises(ValueError, match=r"^these splits leave no train rows: 1 rows, valid_size=0.2, "
                                         r"test_size=0.0; use more rows \(or lower valid_size / test_size\)$"):
        tb.make_splits(one, "y", strategy="random")
    with pytest.raises(ValueError, match=r"^these splits leave no train rows: 2 rows, .*test_size=0.5; use more"):
        tb.make_splits(pd.concat([one, one]), "y", strategy="random", test_size=0.5)


def test_audit_against_a_frame_of_another_length_names_the_splits_not_parts():
    "Probe 87: sp.audit(df.head(50)) said \"parts['train'] holds row position 99\": audit has no `parts`."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=100), "y": rng.integers(0, 2, 100)})
    sp = tb.make_splits(df, "y", seed=0)
    with pytest.raises(ValueError, match=r"^splits were made on a frame of 100 rows, but df has 50: they index "
                                         r"another frame's rows"):
        sp.audit(df.head(50))


def test_a_multi_label_target_is_refused_by_name():
    "Probe 113: lists of labels a row gave pandas' bare 'unhashable type: list', naming neither column nor cause."
    import pyarrow as pa
    df = pd.DataFrame({"x": np.arange(60.0), "tags": [[0, 1] if i % 3 else [1] for i in range(60)]})
    arrow = df.assign(tags=pd.array(df.tags.tolist(), dtype=pd.ArrowDtype(pa.list_(pa.int64()))))
    for frame, kind in ((df, "list"), (arrow, "list<item: int64>")):
        with pytest.raises(TypeError, match=f"target column 'tags' holds {kind}.*does not support multi-label"):
            tb.make_splits(frame, "tags")
    sp = tb.make_splits(df.assign(tags=df.tags.map(tuple)), "tags", seed=0)  # the advice: a class per label set
    assert sp.strategy == "stratified" and len(sp.train) + len(sp.valid) == 60


@pytest.mark.parametrize("as_set", [frozenset, tuple])
def test_a_label_set_target_is_stratified_as_one_label_a_set(as_set):
    """Probe 119, r_3: frozenset (and tuple) label sets, each one hashable label, failed in scikit-learn ('only 1
    member', or 'unknown' targets for folds). Each set is one class: its share is kept in every part and fold."""
    rng = np.random.default_rng(0)
    pool = [as_set(["a"]), as_set(["b"]), as_set(["c"]), as_set(["a", "b"])]
    df = pd.DataFrame({"x": rng.normal(size=400), "y": [pool[i] for i in rng.choice(4, 400, p=[.4, .3, .2, .1])]})
    whole = df.y.value_counts(normalize=True)
    sp = tb.make_splits(df, "y", strategy="stratified", seed=0)
    assert (df.y.iloc[sp.valid].value_counts(normalize=True) - whole).abs().max() < 0.02
    folds = tb.make_splits(df, "y", strategy="stratified", n_folds=3, seed=0)
    for _, valid in folds.folds:
        assert (df.y.iloc[valid].value_counts(normalize=True) - whole).abs().max() < 0.03
