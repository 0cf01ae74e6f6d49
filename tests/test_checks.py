"Every finding kind of check_data is raised where planted and not raised on clean data."
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

import trainbook as tb
from trainbook.columns import epoch_seconds


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(as_frame=True).frame


def kinds(report): return {f.kind for f in report.findings}


@pytest.mark.parametrize("loader, target", [(load_breast_cancer, "target"), (load_wine, "target"), (load_diabetes, "target")])
def test_clean_bundled_data_has_no_warnings(loader, target):
    report = tb.check_data(loader(as_frame=True).frame, target)
    assert report.ok and not [f for f in report.findings if f.severity != "info"], report.findings


def planted(cancer):
    df = cancer.head(200).copy()
    rng = np.random.default_rng(0)
    df["row_id"] = np.arange(len(df))                     # id_like_column
    df["const"] = 1                                       # constant_column
    df["mixed"] = [1 if i % 2 else "a" for i in range(len(df))]  # mixed_types
    df["city"] = [f"c{i}" for i in rng.integers(0, 150, len(df))]  # high_cardinality
    df["leak"] = df["target"] * 3.0 + rng.normal(0, 0.01, len(df))  # target_leak
    df.loc[df.index[:30], "mean radius"] = np.nan         # missing_values
    return df


@pytest.mark.parametrize("kind, column", [("id_like_column", "row_id"), ("constant_column", "const"), ("mixed_types", "mixed"),
                                          ("high_cardinality", "city"), ("target_leak", "leak"), ("missing_values", "mean radius")])
def test_planted_column_problems(cancer, kind, column):
    report = tb.check_data(planted(cancer), "target")
    assert column in {f.column for f in report.by_kind(kind)}
    assert column not in {f.column for f in tb.check_data(cancer, "target").by_kind(kind)}


def test_duplicates_and_conflicting_labels(cancer):
    df = pd.concat([cancer, cancer.head(4)], ignore_index=True)
    flipped = cancer.head(3).assign(target=lambda d: 1 - d.target)
    report = tb.check_data(pd.concat([df, flipped], ignore_index=True), "target")
    assert report.by_kind("duplicate_rows")[0].data["n_duplicates"] == 4
    (f,) = report.by_kind("conflicting_labels")
    # rows agreeing on 30 measurements are copies, not chance: a warning to check their labels, not an error
    assert (f.data["n_groups"], f.data["n_rows"], f.data["n_wrong_at_best"], f.severity) == (3, 9, 3, "warning")
    assert f.data["chance_pairs"] < 1 and "copies of one record" in f.message and report.ok
    assert f.data["rows"] == [0, 1, 2, 569, 570, 571, 573, 574, 575]  # each: the row, its copy, its flipped copy


def test_conflicting_labels_of_coarse_features_are_the_error_no_model_avoids():
    """Probe 48: a churn extract of plan attributes only (contract, payment, senior) was an ERROR 'check the
    labelling' in 120/120 frames; rows sharing codes whose outcomes differ are the features' limit, not a fault."""
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"contract": rng.choice(["month", "year", "two_year"], n),
                       "payment": rng.choice(["card", "bank", "check", "mail"], n), "senior": rng.integers(0, 2, n)})
    df["churn"] = (rng.random(n) < np.where(df.contract == "month", 0.5, 0.1)).astype(int)
    report = tb.check_data(df, "churn")
    (f,) = report.by_kind("conflicting_labels")
    assert report.ok and f.severity == "info" and f.data["chance_pairs"] >= 1
    # the ceiling: each group of identical feature rows predicted by its commonest label
    by_group = df.groupby(["contract", "payment", "senior"])["churn"]
    right = by_group.agg(lambda s: s.value_counts().iloc[0]).sum()
    assert f.data["n_wrong_at_best"] == n - right and f"more than {right / n:.1%} of all rows right" in f.message
    assert f.data["n_groups"] == int((by_group.nunique() > 1).sum())


def test_target_findings(cancer):
    df = cancer.copy()
    df.loc[df.index[:5], "target"] = np.nan
    assert "missing_target" in kinds(tb.check_data(df, "target"))
    imb = pd.concat([cancer[cancer.target == 1], cancer[cancer.target == 0].head(20)])
    r = tb.check_data(imb, "target")
    assert "class_imbalance" in kinds(r)
    rare = pd.concat([cancer, cancer.head(2).assign(target=2)], ignore_index=True)
    assert "rare_class" in kinds(tb.check_data(rare, "target"))
    assert "single_class" in kinds(tb.check_data(cancer.assign(target=1), "target"))


def test_time_findings(cancer):
    df = cancer.head(100).assign(t=np.r_[np.arange(50)[::-1], np.arange(50)])
    assert {"time_unsorted", "time_duplicates"} <= kinds(tb.check_data(df, "target", time="t"))
    assert not {"time_unsorted", "time_duplicates"} & kinds(tb.check_data(cancer.assign(t=np.arange(len(cancer))), "target", time="t"))


def test_serving_parity(cancer):
    train = cancer.assign(size=np.where(cancer["mean area"] > 600, "big", "small"))
    serving = train.drop(columns=["mean texture"]).head(200).copy()
    serving["mean radius"] = serving["mean radius"] * 10       # a unit change: distribution shift
    serving["worst area"] = serving["worst area"].astype(str)  # dtype change
    serving["size"] = "huge"                                   # unseen category
    serving["extra"] = 0
    r = tb.check_data(train, "target", serving=serving)
    got = {(f.kind, f.column) for f in r.findings}
    assert ("serving_missing_column", "mean texture") in got and ("dtype_mismatch", "worst area") in got
    assert ("unseen_categories", "size") in got and ("distribution_shift", "mean radius") in got
    shift = next(f for f in r.findings if f.kind == "distribution_shift" and f.column == "mean radius")
    assert shift.data["psi"] > 0.2 and "PSI" in shift.message
    clean = tb.check_data(train, "target", serving=train.sample(200, random_state=0))
    assert not [f for f in clean.findings if f.kind.startswith(("serving", "dtype", "unseen", "distribution"))]


def test_report_surface(cancer):
    r = tb.check_data(planted(cancer), "target")
    s = r.summary()
    assert s.loc["mean radius", "missing"] == 30 and s.loc["target", "role"] == "target"
    assert "DataReport" in r._repr_html_() and len(r.figures()) == 2


@pytest.mark.parametrize("call, match", [
    (lambda df: tb.check_data(df.iloc[:0], "target"), "df is empty"),
    (lambda df: tb.check_data(df, "target", groups="nope"), "groups column 'nope' not in DataFrame"),
    (lambda df: tb.check_data(df, "target", time="when"), "time column 'when' not in DataFrame"),
    (lambda df: tb.check_data(df.values, "target"), "pandas DataFrame"),
])
def test_bad_input(cancer, call, match):
    with pytest.raises((ValueError, TypeError), match=match): call(cancer)


@pytest.mark.parametrize("typo, near", [("traget", "target"), ("TARGET", "target"), ("Y", "y")])
def test_a_mistyped_target_raises_like_a_mistyped_groups_naming_the_nearest_column(cancer, typo, near):
    "Seen (F16): a typo in target= came back as a report with a missing_target finding, in groups= it raised."
    df = cancer.assign(y=cancer["target"])
    for arg, call in (("target", lambda: tb.check_data(df, typo)),
                      ("groups", lambda: tb.check_data(df, "target", groups=typo))):
        with pytest.raises(ValueError, match=rf"^{arg} column '{typo}' not in DataFrame \(did you mean '{near}'\?\)"):
            call()


@pytest.mark.parametrize("task", ["auto", "binary", "regression"])
def test_a_target_with_no_value_is_one_missing_target_error_not_a_crash(task):
    "Seen (F1): an all-NaN target crashed check_data with IndexError: index 0 is out of bounds."
    df = pd.DataFrame({"x": np.arange(30.0), "y": [np.nan] * 30})
    report = tb.check_data(df, "y", task=task)
    (f,) = [f for f in report.findings if f.column == "y"]
    assert (f.kind, f.severity, f.data["missing"]) == ("missing_target", "error", 30) and not report.ok
    assert "30 rows have no target" in f.message


# ids stored as floats (a join with missing keys turns int ids into floats): whole numbers, near-unique, wide span
ID_VALUES = np.random.default_rng(0).permutation(np.arange(100, 100 + 60 * 97, 97)).astype(float)


@pytest.mark.parametrize("name, is_id", [
    ("id", True), ("ID", True), ("uuid", True), ("user_id", True), ("user-id", True), ("user id", True),
    ("userId", True), ("customerID", True), ("UserID", True), ("order.id", True),
    ("amount_paid", False), ("humid", False), ("valid", False), ("grid", False), ("fluid", False), ("acid", False)])
def test_an_identifier_is_named_like_one_not_a_word_that_ends_in_id(name, is_id):
    "Seen (F3): near-unique floats named amount_paid and humid were taken for ids, and baseline dropped them."
    df = pd.DataFrame({name: ID_VALUES, "y": [0, 1] * 30})
    assert (tb.column_roles(df, "y")[name] == "identifier") == is_id
    assert bool(tb.check_data(df, "y", leak_check=False).by_kind("id_like_column")) == is_id


def test_a_float_with_fractions_is_no_identifier_whatever_its_name():
    "An id is a whole number: a measurement named like an id (a float with fractions) stays a feature."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"user_id": rng.gamma(2.0, 50.0, 60), "y": [0, 1] * 30})
    assert tb.column_roles(df, "y") == {"user_id": "numeric"}
    assert tb.column_roles(df.assign(user_id=ID_VALUES), "y") == {"user_id": "identifier"}


def test_features_whose_names_end_in_id_reach_the_model():
    "F3 end to end: amount_paid and humid are preprocessed as numbers, not dropped as identifiers."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"amount_paid": rng.gamma(2.0, 50.0, 200), "humid": rng.uniform(20, 90, 200),
                       "row_id": np.arange(200), "y": [0, 1] * 100})
    prep = tb.make_preprocessor(df, "y").fit(df.drop(columns="y"))
    assert list(prep.get_feature_names_out()) == ["amount_paid", "humid"]  # row_id: an id, left out


# --- target leaks (#22): one feature that predicts the target almost perfectly on its own ---------------------

def leak_frame(n=2000, seed=0, task="regression"):
    "Honest features with R² ~0.5 together; `strong` alone R² ~0.9 (classification: ~0.9 balanced accuracy)."
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    y = x1 + x2 * 0.3 + rng.normal(0, 1.0, n)  # R² of x1 and x2 together ~0.5
    df = pd.DataFrame({"x1": x1, "x2": x2})
    if task == "regression":
        df["strong"] = y + rng.normal(0, 0.33, n)  # an honest, strong proxy: R² ~0.9 alone
        df["y"] = y
    else:
        label = (y > 0).astype(int)
        df["strong"] = np.where(rng.random(n) < 0.9, label, 1 - label) + rng.normal(0, 0.2, n)  # ~90% right
        df["y"] = label
    return df.sort_values("y").reset_index(drop=True)  # rows in target order: folds must shuffle


def test_a_leaked_regression_target_is_flagged_with_its_evidence():
    "R² 0.998 from one column on data whose honest R² is ~0.5: a `target_leak` naming the column."
    df = leak_frame()
    rng = np.random.default_rng(1)
    df["leak"] = df.y + rng.normal(0, 0.045 * df.y.std(), len(df))  # R² ~0.998
    df["leak_curved"] = np.exp(df.y / 2)  # a monotone transform of the target: not linear, still a leak
    leaks = {f.column: f for f in tb.check_data(df, "y").findings if f.kind == "target_leak"}
    assert set(leaks) == {"leak", "leak_curved"}  # and not the honest strong feature
    f = leaks["leak"]
    assert f.data["metric"] == "R²" and f.data["score"] > 0.98 and f.data["constant_score"] == 0.0
    assert f.data["threshold"] == 0.98 and f.data["n_rows"] == len(df) and 0.98 < f.data["skill"] <= 1
    assert "held-out" in f.message and "R²" in f.message


def test_a_leaked_class_label_is_flagged_and_a_strong_honest_feature_is_not():
    df = leak_frame(task="binary")
    df["leak"] = df.y * 2 + 1 + np.random.default_rng(2).normal(0, 0.01, len(df))
    leaks = {f.column: f for f in tb.check_data(df, "y").findings if f.kind == "target_leak"}
    assert set(leaks) == {"leak"}
    f = leaks["leak"]
    assert f.data["metric"] == "balanced accuracy" and f.data["constant_score"] == 0.5 and f.data["score"] > 0.98
    multi = leak_frame(task="binary").assign(y=lambda d: pd.cut(d.x1, 3, labels=False))
    multi["code"] = multi.y.map({0: "low", 1: "mid", 2: "high"})  # the label, spelled out
    found = {f.column for f in tb.check_data(multi, "y").findings if f.kind == "target_leak"}
    assert "code" in found and "strong" not in found and "x2" not in found  # x1 defines y: it is flagged too
    assert tb.check_data(multi, "y").by_kind("target_leak")[0].data["constant_score"] == pytest.approx(1 / 3)


def test_ordinary_strong_features_raise_no_leak_hint():
    "Honest features up to R² ~0.95 (balanced accuracy ~0.9), on 300 to 2,000 rows and several seeds: no hint."
    for task in ("regression", "binary"):
        for seed, n in ((3, 2000), (4, 2000), (5, 300), (6, 300)):
            df = leak_frame(n=n, task=task, seed=seed)
            assert not tb.check_data(df, "y").by_kind("target_leak"), (task, seed, n)


def test_a_leak_in_a_small_frame_and_in_a_few_distinct_values_is_found():
    df = leak_frame(n=200, task="binary", seed=7)
    df["status"] = np.where(df.y == 1, "closed", "open")  # recorded after the outcome
    assert [f.column for f in tb.check_data(df, "y").by_kind("target_leak")] == ["status"]
    from trainbook.leaks import one_column_predictions
    x = np.repeat([0.0, 1.0, np.nan], 40)
    y = np.repeat([0, 1, 1], 40)
    assert (one_column_predictions(x, y, 2) == y).all()  # each value and the missing ones: a bin each


def test_a_categorical_targets_unused_categories_are_no_classes():
    "Seen: a category filtered away reported as a 0% class (class_imbalance, rare_class) and refused stratification."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=200),
                       "y": pd.Categorical(rng.choice(["a", "b"], 200), categories=["a", "b", "zz"])})
    assert not [f for f in tb.check_data(df, "y").findings if f.kind in ("class_imbalance", "rare_class")]
    assert tb.make_splits(df, "y").strategy == "stratified"
    assert list(df["y"].cat.categories) == ["a", "b", "zz"]  # the user's frame is left as it was


def test_a_series_given_as_the_target_is_named():
    "Seen: TypeError: unhashable type: 'Series'."
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    for call in (lambda: tb.check_data(df, df["y"]), lambda: tb.make_splits(df, df["y"])):
        with pytest.raises(TypeError, match=r"target must be a column's name, got a Series: pass the name"): call()


def test_a_matrix_given_for_the_frame_gets_the_line_that_makes_one():
    "Seen: check_data(X, 'y') on a tensor said only that df must be a DataFrame."
    import torch
    with pytest.raises(TypeError, match=r"got Tensor; make one from the matrix .*pd\.DataFrame\(X"):
        tb.check_data(torch.randn(8, 3), "y")
    with pytest.raises(TypeError, match=r"got list$"): tb.check_data([1, 2], "y")  # no matrix: nothing to add


def test_labels_equal_but_for_case_and_spaces_are_named_and_clean_labels_are_not():
    "'yes', 'Yes ' and 'YES' would be three classes: check_data says which labels, and how to make them one."
    import numpy as np
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=300), "y": rng.choice(["yes", "Yes ", "no", "NO", "maybe"], size=300)})
    (f,) = tb.check_data(df, "y").by_kind("label_variants")
    assert f.severity == "warning" and f.column == "y"
    assert sorted(map(sorted, f.data["variants"])) == [["NO", "no"], ["Yes ", "yes"]]
    assert "'yes' / 'Yes '" in f.message or "'Yes ' / 'yes'" in f.message
    df["y"] = df["y"].str.strip().str.lower()
    assert tb.check_data(df, "y").by_kind("label_variants") == []


def test_group_ids_written_several_ways_are_named():
    "Probe 12: 'P07' / 'p07 ' and 7 / '7' were separate groups: the same patient on both sides of a split."
    ids = ["P07", "p07 ", "P08", "P09"] * 25 + [7, "7"] * 5
    df = pd.DataFrame({"g": pd.Series(ids, dtype=object), "x": range(110), "y": [0, 1] * 55})
    (f,) = tb.check_data(df, "y", groups="g").by_kind("group_id_variants")
    assert f.severity == "warning" and sorted(map(sorted, f.data["variants"])) == [["7", "7"], ["P07", "p07 "]]
    clean = df.assign(g=df.g.astype(str).str.strip().str.upper())
    assert tb.check_data(clean, "y", groups="g").by_kind("group_id_variants") == []


def test_duplicate_rows_are_found_beside_a_row_id_column():
    "Probe 12: a row_id column made every row unique, so 100 copied rows went unreported."
    import numpy as np
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300), "y": rng.integers(0, 2, 300)})
    df = pd.concat([base, base.iloc[:100]], ignore_index=True).assign(row_id=np.arange(400))
    (f,) = tb.check_data(df, "y").by_kind("duplicate_rows")
    assert f.data["n_duplicates"] == 100 and "'row_id' left out" in f.message
    flipped = df.assign(y=np.r_[df.y[:300], 1 - df.y[300:]])  # the copies' labels flipped: conflicts too
    assert tb.check_data(flipped, "y").by_kind("conflicting_labels")[0].data["n_groups"] == 100


def test_a_time_column_of_text_is_an_error_of_check_data_as_it_is_of_the_split():
    "Probe 12: check_data(time=) said nothing of timestamps stored as text; make_splits(time=) then refused them."
    t = pd.Series(pd.date_range("2024-01-01", periods=60, freq="h"))
    df = pd.DataFrame({"t": t.astype(str), "x": range(60), "y": [0, 1] * 30})
    (f,) = tb.check_data(df, "y", time="t").by_kind("time_as_text")
    assert f.severity == "error" and "pd.to_datetime(df['t'])" in f.advice
    assert tb.check_data(df.assign(t=t), "y", time="t").by_kind("time_as_text") == []
    assert tb.check_data(df.assign(t=range(60)), "y", time="t").by_kind("time_as_text") == []


def test_times_of_several_zones_are_told_to_parse_with_utc_and_the_advice_works():
    n = 300
    rng = np.random.default_rng(0)
    instants = pd.date_range("2021-01-01", periods=n, freq="h", tz="UTC")
    zoned = [t.tz_convert("Europe/Paris" if i % 2 else "US/Eastern") for i, t in enumerate(instants)]
    mixed_aware = [t if i % 3 else t.tz_localize(None) for i, t in enumerate(instants)]
    for cells in (zoned, mixed_aware):
        df = pd.DataFrame({"x": rng.normal(size=n), "y": rng.integers(0, 2, n),
                           "signup": pd.Series(cells, dtype=object)})
        call = "df['signup'] = pd.to_datetime(df['signup'], utc=True)"
        with pytest.raises(TypeError, match=re.escape(call)): tb.make_splits(df, "y", time="signup")
        advice = [f.advice for f in tb.check_data(df, "y", time="signup", leak_check=False).findings
                  if f.kind == "mixed_time_zones"]  # timestamps, not text (probe 72)
        assert advice == [f"parse them first: {call}"]
        with pytest.raises((ValueError, TypeError)): pd.to_datetime(df["signup"])  # what utc=True avoids
        df["signup"] = pd.to_datetime(df["signup"], utc=True)
        assert len(tb.make_splits(df, "y", time="signup").valid)
    text = pd.DataFrame({"y": rng.integers(0, 2, n), "day": [f"2021-01-{1 + i % 28}" for i in range(n)]})
    with pytest.raises(TypeError, match=re.escape("pd.to_datetime(df['day'])")): tb.make_splits(text, "y", time="day")


def test_missing_times_are_one_error_saying_make_splits_refuses_them():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=600), "y": rng.integers(0, 2, 600),
                       "t": pd.date_range("2021", periods=600, freq="h")})
    df.loc[::90, "t"] = pd.NaT
    found = [f for f in tb.check_data(df, "y", time="t", leak_check=False).findings
             if f.column == "t" and f.kind == "missing_values"]
    assert [f.severity for f in found] == ["error"]
    assert "make_splits(time='t') refuses them" in found[0].message
    assert "df.dropna(subset=['t'])" in found[0].advice
    with pytest.raises(ValueError, match="time column 't' has 7 missing"): tb.make_splits(df, "y", time="t")
    plain = [f for f in tb.check_data(df, "y", leak_check=False).findings if f.kind == "missing_values"]
    assert [(f.column, f.severity) for f in plain] == [("t", "info")]  # not named as time: a feature's gaps


def test_a_count_target_taken_for_classes_is_said_to_be_maybe_a_regression():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=600), "visits": rng.poisson(5, 600)})
    report = tb.check_data(df, "visits", leak_check=False)
    said = [f for f in report.findings if f.kind == "task_inferred"]
    assert report.task == "multiclass" and len(said) == 1 and said[0].column == "visits"
    assert "counts" in said[0].message and "task='regression'" in said[0].advice
    for y, task in ((rng.integers(0, 4, 600), "auto"), (rng.integers(-6, 6, 600), "auto"),
                    (df.visits, "multiclass")):  # few classes, negative values, the task given
        found = tb.check_data(df.assign(visits=y), "visits", task=task, leak_check=False).findings
        assert not [f for f in found if f.kind == "task_inferred"]


def test_relabelled_copies_beside_one_amount_are_copies_and_a_missing_label_is_no_conflict():
    """Probe 49: 40 relabelled copies of rows (a continuous amount, two flags) were called coarse features: the
    copies counted as chance matches of the amount; a missing label beside a labelled twin was a conflict."""
    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({"amount": rng.lognormal(3, 1, n), "f1": rng.integers(0, 2, n), "f2": rng.integers(0, 2, n),
                       "y": rng.integers(0, 2, n)})
    copies = df.sample(40, random_state=0).assign(y=lambda d: 1 - d.y)
    (f,) = tb.check_data(pd.concat([df, copies], ignore_index=True), "y", leak_check=False).by_kind("conflicting_labels")
    assert f.severity == "warning" and f.data["n_groups"] == 40 and f.data["chance_pairs"] < 1
    unlabelled = df.head(10).assign(y=np.nan)
    assert not tb.check_data(pd.concat([df, unlabelled], ignore_index=True), "y",
                             leak_check=False).by_kind("conflicting_labels")


def test_arrow_text_columns_are_words_not_numbers_stored_as_text():
    """Probe 72: a column of words read with dtype_backend='pyarrow' was 'numbers stored as text', advised to
    pd.to_numeric(errors='coerce') (every value NaN): Arrow's parse leaves NaN, not missing, for a word."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    n = 120
    words = pd.Series(rng.choice(["red", "green", "blue"], n))
    for dtype in ("string[pyarrow]", pd.ArrowDtype(pa.string()), pd.ArrowDtype(pa.large_string())):
        df = pd.DataFrame({"color": words.astype(dtype), "key": [f"k{i:04d}x" for i in range(n)],
                           "dose": (rng.integers(1, 9, n) / 2).astype(str), "y": rng.integers(0, 2, n)})
        df["key"], df["dose"] = df.key.astype(dtype), df.dose.astype(dtype)
        report = tb.check_data(df, "y", leak_check=False)
        said = [f.column for f in report.by_kind("numbers_as_text")]
        assert said == ["dose"], dtype  # numbers stored as text are still said; words are not
        assert report.roles["color"] == "categorical" and report.roles["key"] == "identifier", dtype


def test_a_period_column_is_a_time_candidate_not_an_identifier():
    "Probe 72: monthly periods (make_splits(time=) takes them) were 'an identifier, not a feature'."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=120), "y": rng.integers(0, 2, 120),
                       "month": pd.period_range("2015-01", periods=120, freq="M")})
    report = tb.check_data(df, "y", leak_check=False)
    assert report.roles["month"] == "categorical"
    assert [(f.kind, f.severity) for f in report.findings if f.column == "month"] == [("time_candidate", "info")]
    assert "time='month'" in report.by_kind("time_candidate")[0].advice
    assert tb.column_roles(df, "y")["month"] == "categorical"


def test_one_column_given_as_both_groups_and_time_is_checked():
    "Probe 72: groups='z', time='z' stopped in the leak check with pandas' 'The column label 'z' is not unique.'"
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=100), "z": rng.integers(0, 5, 100), "y": rng.integers(0, 2, 100)})
    report = tb.check_data(df, "y", groups="z", time="z")
    assert report.ok and report.summary().loc["z", "role"] == "time"


CTRL_C_IN_TORCH_IMPORT = r'''
import signal, sys

class InterruptTorch:
    "A Ctrl-C in the middle of torch's import: as it reaches torch.nn, its operators are registered already."
    fired = False
    def find_spec(self, name, path=None, target=None):
        if name == "torch.nn" and not InterruptTorch.fired:
            InterruptTorch.fired = True
            signal.raise_signal(signal.SIGINT)
        return None

signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as a terminal gives it (not ignored)
sys.meta_path.insert(0, InterruptTorch())
import numpy as np, pandas as pd
import trainbook as tb
from trainbook.columns import epoch_seconds
df = pd.DataFrame({"x": np.arange(100.0) % 7, "y": np.arange(100) % 2})
try:
    tb.check_data(df, "y")
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
print("next call ok:", tb.check_data(df, "y").ok)
'''


def test_a_ctrl_c_while_the_first_check_imports_torch_is_delivered_after_it_and_the_session_works():
    """Probe 72: Ctrl-C during the first check_data (torch imported through trainbook.core) left a half-imported
    torch: every later call failed ("partially initialized module 'torch'"), or the interpreter aborted."""
    import os, subprocess, sys
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_TORCH_IMPORT], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["interrupted", "next call ok: True"]  # the Ctrl-C is not lost either


TWO_CTRL_C_IN_TORCH_IMPORT = r'''
import signal, sys

class TwoCtrlC:
    "Two Ctrl-Cs while torch's import is stalled (a slow file system): the second must cut it short."
    fired = False
    def find_spec(self, name, path=None, target=None):
        if name == "torch.nn" and not TwoCtrlC.fired:
            TwoCtrlC.fired = True
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        return None

signal.signal(signal.SIGINT, signal.default_int_handler)
sys.meta_path.insert(0, TwoCtrlC())
import trainbook as tb
from trainbook.columns import epoch_seconds
try:
    tb.fit
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
print("import finished:", "trainbook.loop" in sys.modules)
print("handler back:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
'''


def test_a_second_ctrl_c_while_a_public_name_imports_interrupts_at_once():
    "Probe 74, r_5: every Ctrl-C was held until the import ended: an import that hung could not be stopped at all."
    import os, subprocess, sys
    done = subprocess.run([sys.executable, "-c", TWO_CTRL_C_IN_TORCH_IMPORT], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    assert done.stdout.split("\n")[:3] == ["interrupted", "import finished: False", "handler back: True"], \
        (done.stdout, done.stderr[-2000:])


def test_iso_dates_read_from_a_csv_are_called_dates_with_the_call_that_parses_them():
    "Probe 75 #4: ISO date strings from a CSV were a high-cardinality category, the advice target or hash encoding."
    from helpers import iso_dates_from_csv
    df = iso_dates_from_csv()
    about = [f for f in tb.check_data(df, "y").findings if f.column == "signup"]
    assert [f.kind for f in about] == ["dates_as_text"], about
    assert "pd.to_datetime(df['signup'], format='ISO8601')" in about[0].advice
    assert "parse_dates=['signup']" in about[0].advice
    # what the preprocessing does with them (probe 75 #4, second round: it said 'one-hot encodes them')
    assert "preprocessing parses them into numeric parts" in about[0].message, about[0].message
    assert "one-hot encodes" not in about[0].message
    # shaped like dates but not dates, or words among them past 5% of the values: not called dates
    odd = df.assign(signup=df.signup.where(df.index > 20, "2023-13-45"))
    assert "dates_as_text" not in [f.kind for f in tb.check_data(odd, "y").findings]


def test_unique_timestamps_as_text_are_dates_not_an_identifier():
    "Probe 76 r_1: a CSV's timestamps, every one distinct, were id_like_column ('drop it'): dates come first."
    when = pd.date_range("2021-01-01", periods=200, freq="37min")
    df = pd.DataFrame({"when": when.strftime("%Y-%m-%dT%H:%M:%S"), "x": np.arange(200) % 7, "y": np.arange(200) % 2})
    report = tb.check_data(df, "y", leak_check=False)
    assert [f.kind for f in report.findings if f.column == "when"] == ["dates_as_text"]
    assert report.roles["when"] == "categorical"  # text until parsed; never 'identifier'


def test_a_few_values_that_are_no_date_are_named_and_the_column_stays_dates():
    "Probe 76 r_4: one typo among ISO dates made the column a silent category, named by nothing."
    days = pd.date_range("2021-01-01", periods=30, freq="D").strftime("%Y-%m-%d")
    df = pd.DataFrame({"d": np.resize(days, 120), "x": np.arange(120) % 5, "y": np.arange(120) % 2})
    df.loc[3, "d"], df.loc[4, "d"] = "2021-02-30", ""  # a typo; an empty string is a missing value
    about = {f.kind: f for f in tb.check_data(df, "y", leak_check=False).findings if f.column == "d"}
    assert set(about) == {"dates_as_text", "unparseable_dates"}, about
    bad = about["unparseable_dates"]
    assert "1 value(s) are not ISO dates: '2021-02-30' ×1" in bad.message and bad.data["examples"] == ["2021-02-30"]
    assert "missing dates (imputed)" in bad.message and "errors='coerce'" in bad.advice


def test_summer_time_offsets_in_one_column_are_dates_read_in_utc():
    "Probe 76 r_5: +01:00 and +02:00 in one column (to_csv of a tz-aware column) were not seen as dates."
    when = pd.date_range("2021-03-20", periods=120, freq="11h", tz="Europe/Oslo")
    df = pd.DataFrame({"when": [t.isoformat() for t in when], "y": np.arange(120) % 2})
    about = [f for f in tb.check_data(df, "y", leak_check=False).findings if f.column == "when"]
    assert [f.kind for f in about] == ["dates_as_text"] and "read in UTC" in about[0].message
    assert "format='ISO8601', utc=True" in about[0].advice


@pytest.mark.parametrize("unit", ["date32", "date64"])
def test_arrow_dates_are_checked_as_the_same_dates_in_numpy(unit):
    """Probe 119, finding 2: check_data on a date column read with dtype_backend='pyarrow' (date32[day][pyarrow])
    raised NotImplementedError 'dt.tz is not supported', with time= or without. Arrow dates are datetimes
    (columns.as_datetimes): the report is the one the same dates as numpy datetime64 give."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    n = 200
    day = pd.Series(pd.date_range("2021-01-01", periods=n, freq="D"))
    numpy_dates = pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n), "day": day,
                                "shipped": day + pd.Timedelta(days=2)})  # known after the row's time
    arrow_dates = numpy_dates.assign(**{c: numpy_dates[c].dt.date.astype(pd.ArrowDtype(getattr(pa, unit)()))
                                        for c in ("day", "shipped")})
    assert epoch_seconds(arrow_dates.day).tolist() == epoch_seconds(numpy_dates.day).tolist()
    for kw in ({}, {"time": "day"}):
        want = tb.check_data(numpy_dates, "y", **kw).findings
        got = tb.check_data(arrow_dates, "y", **kw).findings
        assert [(f.kind, f.column) for f in got if f.kind != "nullable_dtype"] == [(f.kind, f.column) for f in want]
        if kw: assert ("after_time", "shipped") in [(f.kind, f.column) for f in got]
