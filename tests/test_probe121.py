"""Probe 121: messy frames and Parquet files as a first cell meets them (Decimal objects, where= on decimals,
the audit's multi-label target, Arrow durations, ...)."""
import decimal

import numpy as np
import pandas as pd
import pytest
import torch

import trainbook as tb
from trainbook.audit import audit_parts
from trainbook.checks import infer_task


def _standardized(train: np.ndarray, part: np.ndarray) -> np.ndarray:
    "What the numeric step does, by hand: the train rows' median for missing values, then their mean and std."
    med = np.nanmedian(train)
    train, part = np.where(np.isnan(train), med, train), np.where(np.isnan(part), med, part)
    return (part - train.mean()) / train.std()


def test_decimal_objects_are_numbers_not_categories():
    "Seen: a column of decimal.Decimal (money from a database driver) one-hot encoded into 51 columns."
    rng = np.random.default_rng(0)
    n = 300
    price = [None if rng.random() < 0.1 else decimal.Decimal(f"{v:.2f}") for v in rng.normal(10, 3, n)]
    df = pd.DataFrame({"price": pd.Series(price, dtype=object), "x": rng.normal(size=n),
                       "y": rng.integers(0, 2, n)})
    kinds = {(f.kind, f.column) for f in tb.check_data(df, "y").findings}
    assert ("numbers_as_text", "price") not in kinds and ("high_cardinality", "price") not in kinds, kinds
    splits = tb.make_splits(df, "y", seed=0)
    _, dl_valid, _, prep = tb.loaders_from_frame(df, "y", splits)
    assert prep.roles["price"] == "numeric" and prep.n_features == 2
    values = np.array([np.nan if p is None else float(p) for p in price])
    X = torch.cat([xb for xb, _ in dl_valid]).numpy()
    col = list(prep.preprocessor.get_feature_names_out()).index("price")
    np.testing.assert_allclose(X[:, col], _standardized(values[splits.train], values[splits.valid]), atol=1e-5)
    # served as Decimal objects or as float64: the same matrix
    as_floats = prep.transform(df.assign(price=values).iloc[splits.valid])
    torch.testing.assert_close(prep.transform(df.iloc[splits.valid]), as_floats)


def test_a_decimal_target_is_a_regression():
    "Seen: amounts held as Decimal taken for 179 classes (multiclass), each a rare class."
    y = pd.Series([decimal.Decimal(f"{v:.2f}") for v in np.random.default_rng(1).normal(size=200) * 3])
    assert infer_task(y) == "regression"
    assert infer_task(pd.Series([decimal.Decimal("1"), decimal.Decimal("0")] * 10)) == "binary"  # whole: classes


def test_text_and_mixed_objects_stay_categories():
    "Text, and Decimals mixed with words, are no numbers: only a column of numbers (missing ones aside) is."
    from trainbook.columns import dtype_family
    assert dtype_family(pd.Series(["a", "b"], dtype=object)) == "categorical"
    assert dtype_family(pd.Series([decimal.Decimal("1.5"), "n/a"], dtype=object)) == "categorical"
    assert dtype_family(pd.Series([decimal.Decimal("1.5"), True], dtype=object)) == "categorical"
    assert dtype_family(pd.Series([None, decimal.Decimal("1.5"), 2, np.nan], dtype=object)) == "numeric"
    assert dtype_family(pd.Series([[1, 2], None], dtype=object)) == "categorical"  # lists: asked, not raised


@pytest.fixture
def decimal_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(0)
    fee = [decimal.Decimal(v) for v in rng.choice(["0.10", "0.20", "1.00"], 400)]
    table = pa.table({"fee": pa.array(fee, pa.decimal128(6, 2)), "x": rng.normal(size=400),
                      "s": rng.choice(["a", "b"], 400), "y": rng.integers(0, 2, 400)})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=64)
    return tmp_path / "d.parquet", fee


@pytest.mark.parametrize("value", [0.1, 0.2, 1, decimal.Decimal("0.2")])
def test_where_on_a_decimal_column_compares_as_the_batches_read_it(decimal_parquet, value):
    "Seen: where=('fee', 0.1) on a decimal128 column: 'the Parquet dataset has no rows' (121 rows are 0.10)."
    path, fee = decimal_parquet
    want = sum(f == decimal.Decimal(str(value)) for f in fee)
    dl = tb.ParquetLoader(path, "y", columns=["x"], batch_size=50, where=("fee", value))
    assert dl.n == want and sum(len(yb) for _, yb in dl) == want
    auto = tb.ParquetLoader(path, "y", columns=["x"], batch_size=50, where=("fee", value), prep="auto")
    assert auto.prep_sample["rows"] == want


@pytest.mark.parametrize("where", [("s", 1), ("x", "0.1"), ("fee", "0.10")])
def test_where_of_another_type_is_refused_by_column(decimal_parquet, where):
    "A value no row of its column can equal: refused when the loader is made, naming the column and its type."
    with pytest.raises(ValueError, match=f"column {where[0]!r} holds"):
        tb.ParquetLoader(decimal_parquet[0], "y", columns=["x"], where=where)


def _lists(n: int) -> list:
    return [[0, 1] if i % 2 else [1] for i in range(n)]


@pytest.mark.parametrize("arg", ["target", "groups", "time"])
def test_lists_in_target_groups_or_time_are_named_everywhere(arg):
    """Seen: audit_parts(df, parts, target='y') on a target of lists (and Splits.audit, check_data, make_splits'
    groups=) raised pandas' raw "unhashable type: 'list'"; make_splits alone named the target."""
    df = pd.DataFrame({"x": np.arange(20.0), "y": [0, 1] * 10, "g": np.repeat(np.arange(5), 4)})
    splits = tb.make_splits(df, "y", strategy="random")
    col = {"target": "y", "groups": "g", "time": "x"}[arg]
    df[col] = _lists(20)
    parts = {"train": splits.train, "valid": splits.valid}
    calls = [lambda: audit_parts(df, parts, **{arg: col}), lambda: tb.check_data(df, **{arg: col}),
             lambda: tb.make_splits(df, strategy="random", **{arg: col})]
    if arg == "target": calls.append(lambda: splits.audit(df))
    else: calls.append(lambda: splits.audit(df, **{arg: col}))
    for call in calls:
        with pytest.raises(TypeError, match=f"{arg} column {col!r} holds list values"):
            call()


def test_label_sets_and_composite_ids_are_one_value():
    "Tuples are one (hashable) value a row: a label set, an id of two parts; the audit takes them."
    df = pd.DataFrame({"x": np.arange(20.0), "y": [(0,), (0, 1)] * 10, "g": [(i % 5, "a") for i in range(20)]})
    found = audit_parts(df, {"train": np.arange(0, 20, 2), "valid": np.arange(1, 20, 2)}, target="y", groups="g")
    assert [f.kind for f in found if f.kind == "group_overlap"] == ["group_overlap"]  # 5 ids on both sides


def test_arrow_durations_are_seconds_like_numpy_timedeltas():
    """Seen: a duration[s][pyarrow] column (read_parquet(dtype_backend='pyarrow') of a timedelta) taken for an
    identifier (dropped) or one-hot encoded; make_splits(time=) on it said it 'sorts as text'."""
    rng = np.random.default_rng(0)
    n = 300
    td = pd.Series(pd.to_timedelta(rng.integers(0, 10**5, n), unit="s")).where(rng.random(n) > 0.1)
    df = pd.DataFrame({"d": td, "x": rng.normal(size=n), "y": rng.integers(0, 2, n)})
    arrow = df.assign(d=td.astype("duration[s][pyarrow]"))
    splits = tb.make_splits(df, "y", seed=0)
    _, dl_valid, _, prep = tb.loaders_from_frame(df, "y", splits)
    _, arrow_valid, _, arrow_prep = tb.loaders_from_frame(arrow, "y", splits)
    assert arrow_prep.roles["d"] == "timedelta"
    X = torch.cat([xb for xb, _ in dl_valid])
    torch.testing.assert_close(torch.cat([xb for xb, _ in arrow_valid]), X)
    torch.testing.assert_close(prep.transform(arrow.iloc[splits.valid]), X)  # served as Arrow to a numpy prep
    kept = arrow.dropna()
    by_time = tb.make_splits(kept, "y", strategy="time", time="d")
    numpy_time = tb.make_splits(df.dropna(), "y", strategy="time", time="d")
    np.testing.assert_array_equal(by_time.valid, numpy_time.valid)
    assert not [f for f in by_time.audit(kept) if f.kind == "time_leak"]


def test_a_parquet_bool_column_with_nulls_is_a_flag_as_in_pandas(tmp_path):
    """Seen: ParquetLoader(prep='auto') on a bool column with nulls one-hot encoded it (to_pandas gives objects:
    categories, 2 columns) where loaders_from_frame reads the same column as a flag with the mode imputed."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(0)
    flags = [None if rng.random() < 0.1 else bool(v) for v in rng.random(400) < 0.5]
    pq.write_table(pa.table({"b": pa.array(flags, pa.bool_()), "x": rng.normal(size=400),
                             "y": rng.integers(0, 2, 400)}), tmp_path / "b.parquet", row_group_size=100)
    dl = tb.ParquetLoader(tmp_path / "b.parquet", "y", batch_size=1000, shuffle_buffer=0, prep="auto")
    assert dl.prep.roles["b"] == "boolean" and dl.prep.n_features == 2
    X = torch.cat([xb for xb, _ in dl])[:, list(dl.prep.preprocessor.get_feature_names_out()).index("b")]
    known = pd.Series(flags).dropna().astype(bool)
    want = [float(known.mode()[0]) if v is None else float(v) for v in flags]
    np.testing.assert_array_equal(X.numpy(), np.array(want, dtype=np.float32))


def test_zero_padded_codes_are_not_advised_into_numbers():
    "Seen: zip codes '02139' got numbers_as_text, a warning advising pd.to_numeric (02139 -> 2139, an amount)."
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"zip": rng.choice(["02139", "10001", "94105"], 200), "x": rng.normal(size=200),
                       "amount": [f"{v:.2f}" for v in rng.normal(100, 5, 200)], "y": rng.integers(0, 2, 200)})
    report = tb.check_data(df, "y")
    (zip_finding,) = [f for f in report.findings if f.column == "zip"]
    assert zip_finding.severity == "info" and "to_numeric" not in zip_finding.advice and "'02139'" in \
        zip_finding.message
    (amounts,) = [f for f in report.by_kind("numbers_as_text") if f.column == "amount"]  # amounts: still told
    assert amounts.severity == "warning" and "pd.to_numeric(df['amount']" in amounts.advice


@pytest.mark.parametrize("index, severity", [
    (pd.date_range("2024", periods=100, freq="D", name="day"), "warning"),
    (pd.period_range("2000-01", periods=100, freq="M"), "warning"),
    (pd.MultiIndex.from_arrays([np.arange(100) // 10, pd.date_range("2024", periods=100)], names=["store", "day"]),
     "warning"),
    (pd.Index(np.arange(100) % 20, name="patient_id"), "info")])
def test_an_index_that_holds_data_is_said(index, severity):
    "Seen: a daily series with its dates in the index: a random split and no word (the index is never read)."
    df = pd.DataFrame({"x": np.arange(100.0), "y": [0, 1] * 50}, index=index)
    (found,) = tb.check_data(df, "y").by_kind("index_not_read")
    assert found.severity == severity and "reset_index()" in found.advice
    assert ("time=" in found.advice) == (severity == "warning")
    plain = df.reset_index(drop=True)
    assert not tb.check_data(plain, "y").by_kind("index_not_read")
    assert not tb.check_data(plain.iloc[::2], "y").by_kind("index_not_read")  # rows filtered: positions, no data


def test_no_features_left_names_the_splits_column():
    "Seen: 'no feature columns left after removing the target and `exclude`', with no exclude= given."
    df = pd.DataFrame({"t": np.arange(100) // 5, "y": [0, 1] * 50})
    splits = tb.make_splits(df, "y", strategy="time", time="t")
    with pytest.raises(ValueError, match=r"target 'y' and exclude=\['t'\] \(loaders_from_frame leaves out the "
                                         r"splits' groups and time"):
        tb.loaders_from_frame(df, "y", splits)


def test_timestamp_and_date_objects_are_not_called_text():
    "Seen: Timestamps of two zones (an object column) and datetime.date objects were 'dates held as text'."
    stamps = [pd.Timestamp("2024-01-01 10:00", tz="UTC") + pd.Timedelta(hours=i) for i in range(60)]
    zoned = [t.tz_convert("Asia/Tokyo" if i % 2 else "America/New_York") for i, t in enumerate(stamps)]
    for values, held in ((zoned, "Python Timestamp objects"), ([t.date() for t in stamps[::24]] * 20, None)):
        df = pd.DataFrame({"when": pd.Series(values[:60], dtype=object), "x": np.arange(60.0), "y": [0, 1] * 30})
        (found,) = tb.check_data(df, "y").by_kind("dates_as_text")
        assert "held as text" not in found.message and (held is None or held in found.message)


def test_served_cells_that_hold_lists_are_refused_by_column():
    """Seen: serving rows whose category cells held lists (a JSON payload's ['a']) were served as the text "['a']",
    an unseen category, a row of zeros, with a warning; training refuses such a column by name."""
    rng = np.random.default_rng(13)
    train = pd.DataFrame({"x": rng.normal(size=300), "c": rng.choice(["a", "b"], 300), "y": rng.integers(0, 2, 300)})
    prep = tb.loaders_from_frame(train, "y", tb.make_splits(train, "y", seed=0))[3]
    served = train.iloc[:5].drop(columns="y").assign(c=[["a"], "b", "a", ("a",), "b"])
    with pytest.raises(ValueError, match=r"'c': 2 value\(s\) hold several values"):
        prep.transform_for_serving(served)
    report = prep.transform_for_serving(served, errors="report")
    assert list(report.rows) == [1, 2, 4]
    torch.testing.assert_close(report.features, prep.transform(served.iloc[[1, 2, 4]]))
    found = tb.check_data(train, "y", serving=served, leak_check=False).findings
    assert [(f.kind, f.severity) for f in found if f.column == "c"] == [("nested_values", "error")]


@pytest.mark.parametrize("held", ["ints", "bools"])
def test_an_object_target_folds_as_its_values_do(held):
    """Seen: a target of whole numbers held as Python objects (df['y'].astype(object)) with n_folds: scikit-learn's
    raw 'Supported target types are: (binary, multiclass). Got unknown'; the holdout alone worked."""
    rng = np.random.default_rng(14)
    y = rng.integers(0, 3, 300) if held == "ints" else rng.random(300) < 0.3
    df = pd.DataFrame({"x": rng.normal(size=300), "y": y})
    for kw in (dict(n_folds=4), dict(n_folds=4, test_size=0.1)):
        want = tb.make_splits(df, "y", strategy="stratified", seed=3, **kw)
        got = tb.make_splits(df.assign(y=df.y.astype(object)), "y", strategy="stratified", seed=3, **kw)
        assert got.fingerprint == want.fingerprint


def test_dates_beyond_the_nanosecond_range_are_read():
    """Seen: a datetime64[s] column holding 9999-12-31 (an expiry date's 'never') or date objects of the 1600s:
    pandas' raw OutOfBoundsDatetime from check_data, make_splits and loaders_from_frame (epoch_seconds)."""
    from trainbook.columns import epoch_seconds
    t = pd.Series(np.array(["2024-01-01", "9999-12-31", "NaT", "1500-06-15"], dtype="datetime64[s]"))
    np.testing.assert_array_equal(epoch_seconds(t)[[0, 1, 3]], [1704067200.0, 253402214400.0, -14817513600.0])
    assert np.isnan(epoch_seconds(t)[2])
    rng = np.random.default_rng(0)
    expires = pd.Series(pd.to_datetime(["2024-01-01"] * 200).astype("datetime64[s]"))
    expires = expires + pd.to_timedelta(rng.integers(0, 300, 200), unit="D")
    expires.iloc[::10] = np.datetime64("9999-12-31", "s")
    df = pd.DataFrame({"expires": expires, "x": rng.normal(size=200), "y": rng.integers(0, 2, 200)})
    assert tb.check_data(df, "y").by_kind("time_candidate")
    splits = tb.make_splits(df, "y", seed=0)
    _, dl_valid, _, prep = tb.loaders_from_frame(df, "y", splits)
    X = torch.cat([xb for xb, _ in dl_valid]).numpy()
    days = epoch_seconds(expires) / 86400
    elapsed = days - days[splits.train].min()
    want = (elapsed[splits.valid] - elapsed[splits.train].mean()) / elapsed[splits.train].std()
    np.testing.assert_allclose(X[:, list(prep.preprocessor.get_feature_names_out()).index("expires_elapsed_days")],
                               want, atol=1e-5)


def test_audit_parts_refuses_index_labels_that_are_not_positions():
    """Seen: audit_parts(frame, {'train': train_df.index, 'valid': valid_df.index}) on a shuffled frame read the
    labels as positions and audited other rows: 5 planted copies found of 10, in silence."""
    from sklearn.model_selection import train_test_split
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "z": rng.normal(size=200), "y": rng.integers(0, 2, 200)})
    train_df, valid_df = train_test_split(df.sample(frac=1, random_state=1), test_size=0.25, random_state=0)
    valid_df = valid_df.copy()
    valid_df.iloc[:10, :] = train_df.iloc[:10, :].to_numpy()  # 10 valid rows copy train rows
    frame = pd.concat([train_df, valid_df])
    with pytest.raises(TypeError, match=r"parts\['train'\] is a pandas Index, whose values are row labels"):
        audit_parts(frame, {"train": train_df.index, "valid": valid_df.index}, target="y")
    positions = {"train": frame.index.get_indexer(train_df.index), "valid": frame.index.get_indexer(valid_df.index)}
    (dup,) = [f for f in audit_parts(frame, positions, target="y") if f.kind == "duplicate_rows"]
    assert dup.data["n_rows"] == 10  # the advice: all 10 copies
    plain = frame.reset_index(drop=True)  # labels are positions: an Index is taken as it is
    assert audit_parts(plain, {"train": pd.RangeIndex(150), "valid": pd.RangeIndex(150, 200)}, target="y")


@pytest.mark.parametrize("ids", ["ints", "digits", "codes"])
def test_an_entity_column_is_named_before_the_split(ids):
    """Seen: customer_id with 5 rows a customer: check_data said nothing (int ids) or advised pd.to_numeric (ids as
    digit text); only make_splits' audit named the entity, after a random split had mixed them."""
    rng = np.random.default_rng(1)
    values = rng.integers(1000, 1080, 400)
    values = {"ints": values, "digits": values.astype(str), "codes": np.array([f"C{v}" for v in values])}[ids]
    df = pd.DataFrame({"customer_id": values, "x": rng.normal(size=400), "y": rng.integers(0, 2, 400)})
    found = [f for f in tb.check_data(df, "y").findings if f.column == "customer_id"]
    (entity,) = [f for f in found if f.kind == "entity_column"]
    assert "groups='customer_id'" in entity.advice and not any("to_numeric" in f.advice for f in found)
    assert not tb.check_data(df, "y", groups="customer_id").by_kind("entity_column")
    quiet = pd.DataFrame({"device": rng.choice(["mobile", "desktop"], 400), "premium_member": rng.integers(0, 2, 400),
                          "customer_score": rng.normal(size=400), "order_id": np.arange(400), "y": df.y})
    assert not tb.check_data(quiet, "y").by_kind("entity_column")


def test_a_name_that_is_the_index_is_said_so():
    "Seen: time='day' where 'day' names the index: 'not in DataFrame; columns are: x, y', with 'day' on screen."
    df = pd.DataFrame({"x": np.arange(50.0), "y": [0, 1] * 25}, index=pd.date_range("2024", periods=50, name="day"))
    for call in (lambda: tb.check_data(df, "y", time="day"), lambda: tb.make_splits(df, "y", strategy="time", time="day")):
        with pytest.raises(ValueError, match=r"time column 'day' not in DataFrame \(the index's name: df = "
                                             r"df.reset_index\(\) makes it a column\)"):
            call()
    assert tb.make_splits(df.reset_index(), "y", strategy="time", time="day").valid.min() == 40
