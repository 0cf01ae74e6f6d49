"The audit of a split refuses a time column it cannot order, as make_splits does, with the same message."
import numpy as np
import pandas as pd
import pytest

import trainbook as tb


def days(n=20):
    return pd.DataFrame({"x": np.arange(n) * 1.0, "y": [0, 1] * (n // 2),
                         "t": pd.date_range("2021-01-01", periods=n)})


HONEST = {"train": np.arange(15), "valid": np.arange(15, 20)}


def refusals(df):
    "The errors of make_splits(time='t') and of audit_parts(time='t') on `df`: (type, message) each."
    out = []
    calls = (lambda: tb.make_splits(df, "y", time="t"), lambda: tb.audit_parts(df, HONEST, "y", time="t"))
    for call in calls:
        with pytest.raises((TypeError, ValueError)) as e: call()
        out.append((e.type, str(e.value)))
    return out


@pytest.mark.parametrize("missing", [pd.NaT, "nan"])
def test_the_time_audit_refuses_missing_times_rather_than_miss_a_leak(missing):
    "Probe 30: one NaT (or a float NaN) in train made every comparison False: a planted leak, no finding."
    df = days()
    if missing == "nan": df["t"] = np.arange(20.0)
    leaky = {"train": np.arange(1, 16), "valid": np.r_[0, 16:20]}  # the first time planted in valid
    assert "time_leak" in [f.kind for f in tb.audit_parts(df, leaky, "y", time="t")]
    df.loc[5, "t"] = pd.NaT if missing is pd.NaT else np.nan
    with pytest.raises(ValueError, match=r"time column 't' has 1 missing value\(s\).*dropna\(subset=\['t'\]"):
        tb.audit_parts(df, leaky, "y", time="t")
    (a, msg_split), (b, msg_audit) = refusals(df)
    assert a is b is ValueError and msg_split == msg_audit


def test_the_time_audit_refuses_dates_as_text_as_make_splits_does():
    "Probe 30: dates as text compared as text: an honest split was a time_leak error."
    df = days().assign(t=lambda d: d.t.dt.strftime("%Y-%-m-%-d"))
    (a, msg_split), (b, msg_audit) = refusals(df)
    assert a is b is TypeError and msg_split == msg_audit
    assert "time column 't'" in msg_audit and "sort as text" in msg_audit
    assert "pd.to_datetime(df['t'])" in msg_audit


def test_times_mixing_zones_are_refused_with_the_column_and_utc_true():
    "Probe 30: the audit raised pandas' 'Cannot compare tz-naive and tz-aware'; make_splits: 'sort as text'."
    t = pd.date_range("2021-01-01", periods=20)
    df = days().assign(t=list(t[:10].tz_localize("UTC")) + list(t[10:]))
    (a, msg_split), (b, msg_audit) = refusals(df)
    assert a is b is TypeError and msg_split == msg_audit
    assert "time column 't' holds timestamps that mix time zones" in msg_audit and "as text" not in msg_audit
    assert "pd.to_datetime(df['t'], utc=True)" in msg_audit


def test_timestamps_of_mixed_zones_get_the_same_words_from_check_data_and_make_splits():
    "Probe 72: check_data called zone-mixed Timestamps text ('time_as_text'); make_splits named the zones."
    n = 60
    t = pd.Series([pd.Timestamp("2021-01-01", tz="UTC" if i % 2 else "Asia/Tokyo") + pd.Timedelta(hours=i)
                   for i in range(n)], dtype=object)
    df = pd.DataFrame({"x": np.arange(n) * 0.5 % 7, "y": np.arange(n) % 2, "t": t})
    (found,) = [f for f in tb.check_data(df, "y", time="t", leak_check=False).findings
                if f.column == "t" and f.severity == "error"]
    with pytest.raises(TypeError) as refused: tb.make_splits(df, "y", time="t")
    words = "holds timestamps that mix time zones"
    assert found.kind == "mixed_time_zones" and found.message.startswith(words) and words in str(refused.value)
    assert "text" not in found.message and "utc=True" in found.advice
    text = tb.check_data(df.assign(t=[f"2021-1-{i % 28 + 1}" for i in range(n)]), "y", time="t", leak_check=False)
    assert [f.kind for f in text.findings if f.severity == "error"] == ["time_as_text"]


def test_parts_that_share_row_positions_are_an_error_and_no_copies():
    """Probe 72: Splits(train=0..79, valid=70..99) was audited as '10 valid row(s) have an identical copy in
    train' (a warning), where loaders_from_frame refuses it: the same rows trained on and scored."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=100), "y": rng.integers(0, 2, 100)})
    sp = tb.Splits(train=np.arange(0, 80), valid=np.arange(70, 100), test=np.array([], dtype=np.int64),
                   params={"target": "y"})
    found = sp.audit(df)
    (shared,) = [f for f in found if f.kind == "shared_rows"]
    assert shared.severity == "error" and shared.data["n_rows"] == 10 and shared.data["rows"][:3] == [70, 71, 72]
    assert not [f for f in found if f.kind == "duplicate_rows"]  # the rows themselves, not copies
    copied = pd.concat([df, df.iloc[:5]], ignore_index=True)  # rows 100..104 copy rows 0..4
    parts = {"train": np.arange(0, 80), "valid": np.r_[np.arange(78, 100), np.arange(100, 105)]}
    found = tb.audit_parts(copied, parts, "y")
    assert [(f.kind, f.data["n_rows"]) for f in found if f.kind in ("shared_rows", "duplicate_rows")] == \
        [("shared_rows", 2), ("duplicate_rows", 5)]


def test_an_empty_part_is_left_out_of_the_audit():
    """Probe 87: an empty test part (test_size=0) gave missing_class and class_balance_drift, `[]` an IndexError
    inside numpy, and an empty earlier part with time= 'zero-size array to reduction operation maximum'."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "y": rng.integers(0, 2, 200),
                       "t": pd.date_range("2021-01-01", periods=200, freq="h")})
    sp = tb.make_splits(df.drop(columns="t"), "y", seed=0)
    assert not tb.audit_parts(df.drop(columns="t"), {"train": sp.train, "valid": sp.valid, "test": sp.test}, "y")
    assert not tb.audit_parts(df, {"train": np.arange(150), "valid": [], "test": np.arange(150, 200)}, "y", time="t")
    assert not tb.audit_parts(df, {"train": np.array([], dtype=int), "valid": np.arange(150, 200)}, "y", time="t")
    late = tb.audit_parts(df, {"train": np.arange(50, 200), "valid": [], "test": np.arange(50)}, "y", time="t")
    assert [f.kind for f in late] == ["time_leak"]  # what is there is still audited


def test_the_same_rows_under_another_group_id_are_copies():
    """Probe 87: train rows copied into valid under a new id (an entity registered twice) were no duplicate_rows:
    the group column was compared as a feature. Like a row id, it is left out, and the finding says so."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=300), "x2": rng.normal(size=300),
                       "pid": [f"P{v:02d}" for v in rng.integers(0, 30, 300)], "y": rng.integers(0, 2, 300)})
    sp = tb.make_splits(df, "y", groups="pid", seed=0)
    assert "duplicate_rows" not in [f.kind for f in sp.findings]  # rows of one group are on one side
    again = pd.concat([df, df.iloc[sp.train[:10]].assign(pid="Z99")], ignore_index=True)
    found = tb.audit_parts(again, {"train": sp.train, "valid": np.r_[sp.valid, 300:310]}, "y", groups="pid")
    copies = [f for f in found if f.kind == "duplicate_rows"]
    assert [f.data["n_rows"] for f in copies] == [10] and "'pid' left out" in copies[0].message
    assert not [f for f in found if f.kind == "group_overlap"]


def test_a_row_id_is_known_by_its_values_not_its_name():
    """Probe 113: 40 copies under new row numbers went unnamed when the row number was called 'pid', 'row',
    'record' or 'customer' (only names like 'id' counted). A column unique per row that is an id by its values
    (a sequence, a key) or its name is left out, and named; a unique measurement stays a feature."""
    rng = np.random.default_rng(12)
    base = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400), "y": rng.integers(0, 2, 400)})
    copied = pd.concat([base, base.iloc[rng.choice(400, 40, replace=False)]], ignore_index=True)
    keys = [f"K{v:06d}" for v in rng.permutation(10**6)[:440]]
    for name, ids in [("pid", np.arange(440)), ("row", rng.permutation(440)), ("record", keys),
                      ("customer", rng.permutation(10**6)[:440])]:
        f = copied.assign(**{name: ids})
        sp = tb.make_splits(f, "y", seed=0)
        key = f[["a", "b", "y"]].apply(tuple, axis=1)
        hand = int(key.iloc[sp.valid].isin(set(key.iloc[sp.train])).sum())
        (dup,) = [x for x in sp.findings if x.kind == "duplicate_rows" and x.data["splits"] == ["train", "valid"]]
        assert hand > 0 and dup.data["n_rows"] == hand and f"{name!r} left out" in dup.message, (name, dup)
        clean = base.assign(**{name: ids[:400]})  # no copies: no finding, with the id left out
        assert not [x for x in tb.make_splits(clean, "y", seed=0).findings if x.kind == "duplicate_rows"], name
    # a unique amount in cents is a measurement: rows equal on a few levels but for it are no copies
    levels = pd.DataFrame({"shop": rng.integers(0, 3, 400), "cents": rng.permutation(10**7)[:400],
                           "y": rng.integers(0, 2, 400)})
    assert not [x for x in tb.make_splits(levels, "y", seed=0).findings if x.kind == "duplicate_rows"]
    assert tb.RowHashes(levels.assign(pid=np.arange(400))).row_ids == ["pid"]


def test_dates_and_ordered_categories_are_times_and_a_refusal_gives_its_true_reason():
    """Probe 113: bool, ordered-categorical and datetime.date time columns were all refused 'because they sort as
    text'. Dates (as datetimes) and an ordered categorical (its categories' order) are times; a bool and an
    unordered categorical are refused for what they are, with a fix that fits."""
    n = 40
    base = pd.DataFrame({"x": np.arange(n, dtype=float), "y": np.arange(n) % 2})
    stamps = pd.Series(pd.date_range("2021-01-01", periods=n)).sample(frac=1, random_state=0).reset_index(drop=True)
    as_dt = tb.make_splits(base.assign(t=stamps), "y", time="t")
    as_dates = tb.make_splits(base.assign(t=[d.date() for d in stamps]), "y", time="t")
    assert (as_dates.train.tolist(), as_dates.valid.tolist()) == (as_dt.train.tolist(), as_dt.valid.tolist())
    quarters = ["q1", "q2", "q3", "q4"]
    q = pd.Categorical(np.repeat(quarters[::-1], 10), categories=quarters, ordered=True)  # q4 rows come first
    sp = tb.make_splits(base.assign(t=q), "y", time="t")
    assert set(q[sp.valid]) == {"q4"} and set(q[sp.train]) <= {"q1", "q2", "q3"}
    leak = tb.audit_parts(base.assign(t=q), {"train": np.arange(10, 40), "valid": np.arange(10)}, "y", time="t")
    assert "time_leak" not in [f.kind for f in leak]  # rows 0-9 are q4: after every train row
    late = tb.audit_parts(base.assign(t=q), {"train": np.arange(30), "valid": np.arange(30, 40)}, "y", time="t")
    assert [f.data["n_rows"] for f in late if f.kind == "time_leak"] == [10]  # q1 rows after q4 ones: a leak
    assert not [f for f in tb.check_data(base.assign(t=q), "y", time="t").findings if f.severity == "error"]
    refused = {"bool": (np.arange(n) > 20, "bool values (True/False): two values", "pass the column"),
               "unordered": (pd.Categorical(np.repeat(quarters, 10)), "unordered categories ('q1', 'q2', 'q3', ...)",
                             "ordered=True"),
               "dates as text": (pd.Categorical(stamps.dt.strftime("%Y-%-m-%-d")), "sort as text",
                                 "pd.to_datetime(df['t'])")}
    for name, (t, why, fix) in refused.items():
        for call in (lambda: tb.make_splits(base.assign(t=t), "y", time="t"),
                     lambda: tb.audit_parts(base.assign(t=t), HONEST, "y", time="t")):
            with pytest.raises(TypeError) as e: call()
            assert why in str(e.value) and fix in str(e.value), (name, str(e.value))
            assert name == "dates as text" or "sort as text" not in str(e.value), name
        (f,) = [f for f in tb.check_data(base.assign(t=t), "y", time="t").findings if f.severity == "error"]
        assert why in f.message and fix in f.advice, (name, f)
    # Spark's schema check says the same of a boolean column (its fix is for text: not given for flags)
    f = tb.checks.time_as_text_finding("t", "boolean", "sdf = sdf.withColumn('t', F.to_timestamp(F.col('t')))")
    assert "two values" in f.message and "sort as text" not in f.message and "to_timestamp" not in f.advice


@pytest.mark.parametrize("name, start", [("day", 0), ("year", 1600), ("step", 0)])
def test_the_time_column_is_never_a_row_id(name, start):
    """Probe 119, finding 1: an integer time column (01a_leaks' own `day = np.arange(600)`, a year, a step) was
    taken for a row id and left out, so a time split warned that every valid row copied a train row (none
    does). The split's time column is its order: it stays a feature; a true copy (same time too) is still found."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({name: start + np.arange(600), "dow": np.arange(600) % 7,
                       "promo": rng.integers(0, 2, 600), "y": np.cumsum(rng.normal(size=600))})
    assert not df.drop(columns="y").duplicated().any()
    sp = tb.make_splits(df, "y", time=name)
    assert "duplicate_rows" not in [f.kind for f in sp.findings]
    parts = {"train": sp.train, "valid": sp.valid}
    assert "duplicate_rows" not in [f.kind for f in tb.audit_parts(df, parts, "y", time=name)]
    # a row copied whole (its time too) into another part is still a copy
    copied = pd.concat([df, df.iloc[sp.train[:3]]], ignore_index=True)
    found = tb.audit_parts(copied, {"train": sp.train, "valid": np.r_[sp.valid, 600:603]}, "y")
    assert [f.data["n_rows"] for f in found if f.kind == "duplicate_rows"] == [3]


def test_dates_mixed_with_a_datetime_are_refused_for_what_they_are():
    "Probe 119, r_6: date objects with one datetime among them were refused as values that 'sort as text'."
    import datetime
    days = list(pd.date_range("2021-01-01", periods=60, freq="D").date)
    days[3] = datetime.datetime(2021, 1, 4, 12, 0)
    df = pd.DataFrame({"x": np.arange(60) * 0.37 % 1, "y": np.arange(60) % 2, "t": pd.Series(days, dtype=object)})
    with pytest.raises(TypeError, match=r"date and datetime.datetime objects mixed .* parse them first: "
                                        r"df\['t'\] = pd.to_datetime\(df\['t'\]\)") as err:
        tb.make_splits(df, "y", time="t")
    assert "text" not in str(err.value)
