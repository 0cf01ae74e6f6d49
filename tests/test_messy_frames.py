"Real-world tables: every dtype pandas users have, from check_data to split to loaders to baseline, XGBoost and serving."
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

import trainbook as tb
from trainbook.columns import column_roles
from trainbook.data import FramePrep


def messy_frame(n=240, seed=0):
    "Each dtype of the issue, with pd.NA where pandas allows it, and six duplicated rows (their ids repeat too)."
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    df = pd.DataFrame({
        "row_id": rng.permutation(n),
        "when": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24, n), unit="h"),
        "day": pd.Timestamp("2023-06-01") + pd.to_timedelta(rng.integers(0, 300, n), unit="D"),  # dates only
        "when_tz": pd.date_range("2024-03-01", periods=n, freq="37min", tz="Europe/Oslo"),
        "visits": pd.array(rng.integers(0, 9, n), dtype="Int64"),
        "spend": pd.array(x * 10 + 50, dtype="Float64"),
        "member": pd.array(rng.random(n) > 0.5, dtype="boolean"),
        "city": pd.Series(rng.choice(["Oslo", "Lima", "Pune", "Kyiv"], n), dtype="string"),
        "plan": pd.Categorical(rng.choice(["free", "pro"], n), categories=["free", "pro", "team"]),
        "wait": pd.to_timedelta(rng.integers(0, 600, n), unit="s"),
        "note": [f"customer {i} wrote a long note about the {w} service" for i, w in enumerate(rng.choice(["good", "bad"], n))],
        "region": "EU",
        "y": (x + rng.normal(0, 0.5, n) > 0).astype(int),
    })
    df.loc[df.index[::7], "visits"] = pd.NA
    df.loc[df.index[::9], "member"] = pd.NA
    df.loc[df.index[::11], "city"] = pd.NA
    df.loc[df.index[::13], "spend"] = pd.NA
    return pd.concat([df, df.head(6)], ignore_index=True)


EXPECTED_ROLES = {"row_id": "identifier", "when": "datetime", "day": "datetime", "when_tz": "datetime", "visits": "numeric",
                  "spend": "numeric", "member": "boolean", "city": "categorical", "plan": "categorical", "wait": "timedelta",
                  "note": "text", "region": "constant"}


@pytest.fixture(scope="module")
def df(): return messy_frame()


@pytest.fixture(scope="module")
def prepared(df):
    sp = tb.make_splits(df, "y", strategy="auto", seed=0)
    return sp, tb.loaders_from_frame(df, "y", sp, batch_size=32, drop_last=True)


def by_column(findings, kind): return {f.column: f for f in findings if f.kind == kind}


def test_roles_are_decided_once_and_shown(df, prepared):
    assert column_roles(df, "y") == EXPECTED_ROLES
    report = tb.check_data(df, "y")
    assert report.summary()["role"].to_dict() == {**EXPECTED_ROLES, "y": "target"}
    *_, prep = prepared[1]
    used = {c: r for c, r in EXPECTED_ROLES.items() if r != "constant"}
    assert {c: r for c, r in prep.roles.items() if r != "constant"} == used
    assert "dropped: row_id (identifier), note (text), region (constant)" in repr(prep)


def test_check_data_names_each_column(df):
    report = tb.check_data(df, "y")
    assert set(by_column(report.findings, "id_like_column")) == {"row_id"}  # found though duplicated rows repeat the id
    assert set(by_column(report.findings, "time_candidate")) == {"when", "day", "when_tz"}  # never ids
    assert set(by_column(report.findings, "nullable_dtype")) == {"visits", "spend", "member", "city"}
    assert set(by_column(report.findings, "text_column")) == {"note"}
    assert set(by_column(report.findings, "constant_column")) == {"region"}
    assert report.by_kind("duplicate_rows")[0].data["n_duplicates"] == 6


def test_an_id_among_duplicates_and_a_unique_timestamp():
    rng = np.random.default_rng(1)
    base = pd.DataFrame({"row_id": np.arange(100), "x": rng.normal(size=100),
                         "t": pd.date_range("2024-01-01", periods=100, freq="h"), "y": np.arange(100) % 2})
    df = pd.concat([base, base.head(3)], ignore_index=True)  # ids 0..99 with three repeated rows
    report = tb.check_data(df, "y")
    assert set(by_column(report.findings, "id_like_column")) == {"row_id"}
    assert "t" in by_column(report.findings, "time_candidate")


def test_mixed_numbers_are_shown_with_counts_and_advice():
    rng = np.random.default_rng(2)
    dose = rng.normal(5, 1, 120).round(2).astype(object)
    dose[::10] = "n/a"
    dose[5] = "?"
    df = pd.DataFrame({"dose": dose, "y": np.arange(120) % 2})
    f = by_column(tb.check_data(df, "y").findings, "mixed_types")["dose"]
    assert f.data["values"] == {"n/a": 12, "?": 1} and "'n/a' ×12" in f.message
    assert "pd.to_numeric(df['dose'], errors='coerce')" in f.advice


def test_decimals_and_bools_held_as_objects_are_not_called_text():
    """Probe 12, f10: an object column of Decimals, or of bools with None, was 'numbers stored as text'. Probe 121:
    Decimals are numbers (float64, as Parquet's decimals are read), so nothing is said of them."""
    import decimal
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"price": [decimal.Decimal(str(round(v, 2))) for v in rng.normal(50, 10, 200)],
                       "flag": pd.Series([None if i % 7 == 0 else bool(i % 3) for i in range(200)], dtype=object),
                       "zip": rng.integers(1000, 1100, 200).astype(str), "y": np.arange(200) % 2})
    report = tb.check_data(df, "y")
    found = by_column(report.findings, "numbers_as_text")
    assert "price" not in found and report.roles["price"] == "numeric"
    assert "True/False held as Python objects" in found["flag"].message
    assert found["flag"].advice == "convert them: df['flag'] = df['flag'].astype('boolean')"
    assert "numbers stored as text" in found["zip"].message


def test_messages_show_values_as_written_not_numpy_reprs():
    "Probe 12, f11: 'single class (np.int64(1))'; the user wrote 1."
    df = pd.DataFrame({"x": np.arange(60.0), "c": 1, "y": np.r_[np.zeros(58, int), [2, 2]]})
    msgs = " | ".join(f.message for f in tb.check_data(df, "y").findings)
    assert "a single value (1)" in msgs and "minority class 2 " in msgs and "np." not in msgs, msgs
    with pytest.raises(ValueError, match=r"single class \(1\)$"):
        tb.make_splits(df.assign(y=1), "y", strategy="stratified")
    with pytest.raises(ValueError, match=r"got -1.0$"):
        tb.TrainConfig(lr=np.float64(-1))


def test_missing_group_ids_are_an_error_in_check_and_split(df):
    holes = df.assign(customer=(df.index // 3).astype(float).where(df.index % 40 != 0))
    f = by_column(tb.check_data(holes, "y", groups="customer").findings, "missing_values")["customer"]
    assert f.severity == "error" and "7 rows have no group id" in f.message
    with pytest.raises(ValueError, match=r"groups column 'customer' has 7 missing group id\(s\)") as err:
        tb.make_splits(holes, "y", groups="customer")
    assert "dropna(subset=['customer'])" in str(err.value) and "its own id" in str(err.value)


def test_preprocessor_features_per_role(df, prepared):
    sp, (dl_train, dl_valid, _, prep) = prepared
    names = list(prep.preprocessor.get_feature_names_out())
    for col, hours in (("when", True), ("day", False), ("when_tz", True)):
        parts = [f"{col}_{p}" for p in ("year", "month", "day_of_week", "day_of_year", "hour", "elapsed_days")
                 if hours or p != "hour"]
        assert [n for n in names if n in parts] == parts and len(parts) <= 8  # numeric parts, never a one-hot block
    assert [n for n in names if n.startswith("plan_")] == ["plan_free", "plan_pro", "plan_team"]  # declared categories kept
    assert {"visits", "spend", "member", "wait"} <= set(names)
    assert not {n for n in names if n.startswith(("row_id", "note", "region"))}
    # visits, spend | member | 4 cities | 3 plans | when 6, day 5, when_tz 6 | wait
    assert len(names) == prep.n_features == 2 + 1 + 4 + 3 + 6 + 5 + 6 + 1
    xb, _ = next(iter(dl_train))
    assert xb.shape == (32, prep.n_features) and not torch.isnan(xb).any()
    dates = prep.preprocessor.named_transformers_["datetime"][0]
    origin = df["when"].iloc[sp.train].min()
    assert dates.kw_args["origins"][0] == (origin - pd.Timestamp(0)).total_seconds()  # the training minimum


def test_datetime_as_the_only_non_numeric_column_through_baseline_and_xgboost():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.normal(size=150), "t": pd.date_range("2024-01-01", periods=150, freq="D")})
    df["y"] = (df.x > 0).astype(int)
    sp = tb.make_splits(df, "y", seed=0)
    table = tb.baseline(df, "y", sp)
    assert list(table.index) == ["dummy", "linear", "xgboost"] and table.loc["linear", "valid_roc_auc"] > 0.9
    run = tb.fit_xgboost(df, "y", sp, num_rounds=10, live=False)
    assert run.model.prep.n_features == 1 + 5  # x, and five parts of a date without times of day


def test_messy_frame_trains_everywhere(df, prepared):
    sp, (dl_train, dl_valid, _, prep) = prepared
    assert all(len(yb) == 32 for _, yb in dl_train)  # drop_last: no 1-row batch for BatchNorm
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(prep.n_features, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 2))
    run = tb.fit(model, dl_train, dl_valid, loss_fn=torch.nn.CrossEntropyLoss(),
                 config=tb.TrainConfig(epochs=2, lr=1e-2), live=False)
    assert run.stopped == "completed" and np.isfinite(run.metrics()["valid_loss"]).all()
    table = tb.baseline(df, "y", sp)
    assert table.loc["linear", "valid_roc_auc"] > 0.7
    xrun = tb.fit_xgboost(df, "y", sp, num_rounds=20, live=False)
    assert xrun.stopped in ("completed", "early_stopping")
    assert set(xrun.model.predict(df.drop(columns="y").head(4))) <= {0, 1}


def serving_rows(df):
    new = df.drop(columns="y").tail(6).copy()
    new["spend"] = new["spend"].astype(object)
    new.loc[new.index[0], "spend"] = "n/a"
    new["when"] = new["when"].astype(str)
    new.loc[new.index[1], "when"] = "yesterday"
    new["city"] = new["city"].astype(object)
    new.loc[new.index[2], "city"] = "Rome"
    return new


def test_serving_fails_once_listing_every_bad_column(df, prepared):
    *_, prep = prepared[1]
    bad = serving_rows(df).drop(columns=["visits", "note"]).assign(wait=1.5)  # note is dropped: it need not be sent
    with pytest.raises(ValueError) as err:
        prep.transform_for_serving(bad)
    msg = str(err.value)
    assert msg.startswith("4 column(s) do not fit the training schema") and "columns missing for serving: visits" in msg
    assert "'spend': 1 value(s) are not numbers: 'n/a' ×1" in msg and "'when': 1 value(s) are not ISO dates: 'yesterday'" in msg
    assert "'wait': dtype float64 (numeric), but the model was trained on timedelta values" in msg
    aware = serving_rows(df).assign(when=lambda d: pd.to_datetime(d["when"], errors="coerce").dt.tz_localize("UTC"),
                                    spend=1.0)
    with pytest.raises(ValueError, match="'when': time zone"):
        prep.transform(aware)


def test_serving_report_mode_serves_the_good_rows(df, prepared):
    *_, prep = prepared[1]
    new = serving_rows(df)
    report = prep.transform_for_serving(new, errors="report")
    assert list(report.rows) == list(new.index[2:]) and report.features.shape == (4, prep.n_features)
    assert not report.ok and {(f.kind, f.column) for f in report.findings} == {
        ("unparseable_values", "spend"), ("unparseable_values", "when"), ("unseen_categories", "city")}
    clean = new.iloc[2:].assign(spend=lambda d: d.spend.astype(float), when=lambda d: pd.to_datetime(d.when))
    with pytest.warns(UserWarning, match=r"unseen_categories \[city\]: 1 row\(s\)"):
        served = prep.transform_for_serving(clean)
    assert torch.allclose(served, report.features)
    as_text = df.drop(columns="y").head(5).astype({"visits": str, "wait": str})  # numbers and durations as clean text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.allclose(prep.transform_for_serving(as_text), prep.transform(df.head(5)), equal_nan=True)


def test_serving_refuses_infinite_numbers_naming_the_column_and_serves_the_other_rows(df, prepared):
    *_, prep = prepared[1]
    new = df.drop(columns="y").tail(6).copy()
    new.loc[new.index[0], "spend"] = np.inf  # a nullable Float64 column
    new.loc[new.index[1], "visits"] = pd.NA  # missing is fine: imputed as in training
    with pytest.raises(ValueError) as err:
        prep.transform_for_serving(new)
    assert "'spend': 1 value(s) are ±inf" in str(err.value) and "replace([np.inf, -np.inf], np.nan)" in str(err.value)
    report = prep.transform_for_serving(new, errors="report")
    assert list(report.rows) == list(new.index[1:]) and torch.isfinite(report.features).all()
    assert [(f.kind, f.column, f.data["n_rows"]) for f in report.findings] == [("infinite_values", "spend", 1)]
    as_text = new.astype({"spend": object})
    as_text.loc[as_text.index[0], "spend"] = "-inf"  # text that parses to a number, but not a finite one
    with pytest.raises(ValueError, match="'spend': 1 value"):
        prep.transform(as_text)


def test_saved_prep_keeps_roles_and_serves(df, prepared, tmp_path):
    *_, prep = prepared[1]
    loaded = FramePrep.load(prep.save(tmp_path / "prep.skops"))
    rows = df.drop(columns="y").tail(8)
    assert loaded.roles == prep.roles and torch.equal(loaded.transform_for_serving(rows), prep.transform(rows))
    with pytest.raises(ValueError, match="'spend': 1 value"):
        loaded.transform_for_serving(serving_rows(df))


@pytest.mark.parametrize("loader", [load_breast_cancer, load_wine, load_diabetes])
def test_bundled_clean_frames_find_nothing_new(loader):
    frame = loader(as_frame=True).frame
    report = tb.check_data(frame, "target")
    assert report.findings == [] and set(report.roles.values()) == {"numeric"}


def test_serving_text_for_booleans_and_dates_with_mixed_zones(df, prepared):
    *_, prep = prepared[1]
    new = df.drop(columns="y").head(3).astype({"member": object, "when": object})
    new["member"] = ["yes", "maybe", None]
    new["when"] = ["2024-01-01T00:00:00+01:00", "2024-01-02T00:00:00+05:00", "2024-01-03"]  # trained naive
    report = prep.transform_for_serving(new, errors="report")
    found = {f.column: f for f in report.findings}
    assert found["member"].kind == "unparseable_values" and found["member"].data["examples"] == ["maybe"]
    assert found["when"].kind == "dtype_mismatch" and len(report.rows) == 0


def test_a_target_mixing_numbers_and_strings_is_named_at_every_target_path():
    "Seen: make_splits and loaders_from_frame failed in numpy's words ('<' not supported between int and str)."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=60), "y": [1 if i % 2 else "x" for i in range(60)]})
    for call in (lambda: tb.make_splits(df, "y"), lambda: tb.check_data(df, "y"),
                 lambda: tb.loaders_from_frame(df, "y", tb.make_splits(df.assign(y=0), "y", strategy="random"))):
        with pytest.raises(TypeError, match=r"the target 'y' mixes numbers and strings \(e.g. 1 and 'x'\)"):
            call()
    tb.make_splits(df.assign(y=df.y.astype(str)), "y")  # as the message says: one kind, then it splits


def test_multiindex_columns_are_refused_with_the_flattening_line():
    "Seen: check_data failed in pandas' words on MultiIndex columns while make_splits took them."
    df = pd.DataFrame(np.zeros((8, 2)), columns=pd.MultiIndex.from_tuples([("f", "a"), ("t", "y")]))
    for call in (lambda: tb.check_data(df, ("t", "y")), lambda: tb.make_splits(df, ("t", "y"))):
        with pytest.raises(TypeError, match=r"MultiIndex columns \(2 levels.*'_'.join"): call()


def test_a_frame_with_a_list_column_splits_and_its_duplicates_are_still_found():
    "Seen: make_splits failed in pandas' words (unhashable type: 'list') in its duplicate audit."
    df = pd.DataFrame({"a": np.arange(40.) % 20, "tags": [[i % 20, 1] for i in range(40)], "y": [0, 1] * 20})
    splits = tb.make_splits(df, "y", strategy="random", seed=0)
    assert len(splits.train) + len(splits.valid) + len(splits.test) == 40
    assert "duplicate_rows" in {f.kind for f in splits.findings}  # rows equal in every column, lists included


MIXED_LABELS = {
    "category of 1 and 'b'": (pd.Categorical([1 if i % 2 else "b" for i in range(60)]),
                              r"mixes numbers and strings \(e.g. 1 and 'b'\)"),
    "True and 'no'": ([True if i % 3 == 0 else "no" for i in range(60)],
                      r"mixes booleans and strings \(e.g. True and 'no'\)"),
    "True and 2": ([True if i % 3 == 0 else 2 for i in range(60)],
                   r"mixes numbers and booleans \(e.g. 2 and True\)"),
}


@pytest.mark.parametrize("labels, said", list(MIXED_LABELS.values()), ids=list(MIXED_LABELS))
def test_a_categorical_or_bool_target_mixing_kinds_is_named_at_every_target_path(labels, said):
    "Seen: a category target [1, 'b'] and an object target [True, 'no'] failed in Python's words."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=60), "y": labels})
    other = tb.make_splits(df.assign(y=0), "y", strategy="random")
    for call in (lambda: tb.make_splits(df, "y"), lambda: tb.check_data(df, "y"),
                 lambda: tb.loaders_from_frame(df, "y", other)):
        with pytest.raises(TypeError, match=said + r": its labels must be one kind.*astype\(str\)"):
            call()
    tb.make_splits(df.assign(y=df.y.astype(str)), "y")  # as the message says: one kind, then it splits
    bools = pd.Series([i % 2 == 0 for i in range(60)], dtype=object)
    tb.make_splits(df.assign(y=bools), "y")  # bools alone (object dtype) are one kind
