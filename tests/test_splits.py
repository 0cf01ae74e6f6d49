"Splits: groups never shared, time order kept with the gap, stratification holds, seeds reproduce, the audit catches leaks."
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_wine

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
    sp = tb.make_splits(df, "y", gap=np.int64(2), n_folds=np.int64(3), valid_size=np.float32(0.2))  # numpy's numbers
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
