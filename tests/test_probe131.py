"Probe 131: data checks on wide, tall and odd frames (check_data's cost on 2,000 columns, Parquet, Spark, Decimal)."
import numpy as np, pandas as pd, pytest
import trainbook as tb
from trainbook import columns, leaks


def _dates_reference(s):
    "dates_as_text as it was before the early exit: every sampled value parsed."
    if columns.dtype_family(s) != "categorical" or isinstance(s.dtype, pd.CategoricalDtype): return False
    values = s.dropna()
    sample = values.sample(min(len(values), 2000), random_state=0)
    try: parsed = columns.parse_dates(sample, utc=None)
    except (ValueError, TypeError, OverflowError): return False
    present = int(columns._date_text(sample).notna().sum())
    return present > 0 and int(parsed.notna().sum()) >= columns.DATE_SHARE * present


def _text_reference(s):
    "_is_text as it was before the early exit."
    values = s.dropna()
    if len(values) < 5 or isinstance(s.dtype, pd.CategoricalDtype): return False
    sample = values.sample(min(len(values), 2000), random_state=0).astype(str)
    return bool(sample.str.split().str.len().median() >= 4 and sample.nunique() >= 0.5 * len(sample))


@pytest.mark.parametrize("n", [40, 500, 2600])
def test_dates_as_text_same_answer_with_the_early_exit(n):
    rng = np.random.default_rng(n)
    dates = pd.date_range("2020-01-01", periods=n, freq="h").astype(str).to_numpy(dtype=object)
    for share in (0.0, 0.02, 0.04, 0.05, 0.06, 0.1, 0.5, 1.0):  # values that are no date, at random rows
        for first in (False, True):  # or all of them first, where the early exit reads
            s = dates.copy()
            k = int(round(share * n))
            at = np.arange(k) if first else rng.choice(n, k, replace=False)
            s[at] = rng.choice(["n/a", "", "x", "12/03/2021", "?"], k)
            col = pd.Series(s)
            assert columns.dates_as_text(col) == _dates_reference(col), (share, first)


def test_dates_as_text_tells_words_without_parsing(monkeypatch):
    "A column of words is no dates, told from its first values: the parse (4 ms a column) is not run."
    def refuse(*a, **k): raise AssertionError("parse_dates called for a column of words")
    monkeypatch.setattr(columns, "parse_dates", refuse)
    assert not columns.dates_as_text(pd.Series(np.random.default_rng(0).choice(list("abcde"), 500)))


@pytest.mark.parametrize("seed", range(6))
def test_is_text_same_answer_with_the_early_exit(seed):
    rng = np.random.default_rng(seed)
    n = [30, 400, 2500][seed % 3]
    words = np.array(["alpha", "beta", "gamma", "delta", "eps"])
    for long_share in (0.0, 0.3, 0.49, 0.5, 0.51, 0.7, 1.0):
        k = rng.binomial(n, long_share)
        lengths = np.r_[rng.integers(4, 8, k), rng.integers(1, 4, n - k)]
        rng.shuffle(lengths)
        s = pd.Series([" ".join(rng.choice(words, m)) + f" {i % (seed + 2)}" * (i % 2) for i, m in enumerate(lengths)])
        assert columns._is_text(s) == _text_reference(s), long_share


def test_encoding_found_among_many_columns_without_pairwise_comparisons(monkeypatch):
    """A target encoding among 300 level columns and 300 numeric ones is found, told for all numeric columns at
    once: not one np.array_equal per (level column, numeric column) pair (2,000 columns: 960,000 calls, 13 s)."""
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({**{f"c{i}": rng.choice(list("abcdef"), n) for i in range(300)},
                       **{f"f{i}": rng.normal(size=n) for i in range(300)}})
    df["y"] = rng.integers(0, 2, n)
    df["zip"] = rng.choice([f"z{i}" for i in range(30)], n)
    df["zip_te"] = df.groupby("zip")["y"].transform("mean")
    df["zip_f0"] = df.groupby("zip")["f0"].transform("mean")  # one value a level, and no leak
    calls = []
    real = np.array_equal
    monkeypatch.setattr(np, "array_equal", lambda *a, **k: calls.append(1) or real(*a, **k))
    found = leaks.encoding_findings(df, "y", "binary", set(), np.arange(n))
    assert [(f.column, f.data["level_column"]) for f in found] == [("zip_te", "zip")]
    assert len(calls) < 100


def test_prefix_told_on_distinct_values():
    "A status whose leading word is the outcome ('Approved-12') is a prefix view; labels with one word each are none."
    y = np.random.default_rng(1).integers(0, 2, 300)
    status = pd.Series([("Approved-" if v else "Denied-") + str(i) for i, v in enumerate(y)])
    assert set(leaks._prefix(status)) == {"approved", "denied"}
    assert leaks._prefix(pd.Series(list("abcab") * 20)) is None
    assert leaks._prefix(pd.Series(["Ab1", "ab2", "AB3"] * 20)) is None  # one prefix


def test_names_entity_email_share():
    "Addresses on at least 90% of the first 200 values name people; fewer do not."
    emails = [f"u{i % 40}@ex.com" for i in range(200)]
    assert columns.names_entity("contact", pd.Series(emails))
    assert columns.names_entity("contact", pd.Series(emails[:180] + ["none"] * 20))  # 90%
    assert not columns.names_entity("contact", pd.Series(emails[:179] + ["none"] * 21))
    assert not columns.names_entity("contact", pd.Series([None] * 10, dtype=object))


def test_decimals_rounded_by_float64_are_said():
    "Decimals of 20 significant digits (294 distinct) read as float64 (7 distinct): check_data and the loaders say so."
    import warnings
    from decimal import Decimal
    rng = np.random.default_rng(0)
    big = [Decimal("123456789012345678.") + Decimal(int(i)) / 100 for i in rng.integers(0, 10_000, 300)]
    df = pd.DataFrame({"balance": big, "fee": [Decimal("1.25")] * 150 + [Decimal("0.1")] * 150,
                       "x": rng.normal(size=300), "y": rng.integers(0, 2, 300)})
    found = tb.check_data(df, "y", leak_check=False).by_kind("float64_precision")
    assert [f.column for f in found] == ["balance"]  # 'fee' fits float64: nothing said
    d = found[0].data
    assert (d["rounded"], d["read"], d["distinct"]) == (300, 300, len(set(big)))
    assert d["distinct_as_float"] == len(set(map(float, big))) < d["distinct"]
    splits = tb.make_splits(df, "y", seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tb.loaders_from_frame(df, "y", splits, batch_size=64)
    said = [str(w.message) for w in caught if "float64 holds" in str(w.message)]
    assert len(said) == 1 and "'balance'" in said[0]
    assert columns.rounded_decimals(pd.Series([Decimal("0.1"), Decimal("123456789012345"), 3, 2.5])) is None


def test_entity_by_counts_is_names_entity_from_counts():
    "The rule Spark reads from counts says what the pandas rule says from the values."
    rng = np.random.default_rng(0)
    n = 400
    cases = {"customer_id": rng.integers(0, 90, n), "patient": rng.choice([f"p{i}" for i in range(60)], n),
             "device": rng.choice(list("ab"), n), "contact": [f"u{i}@ex.com" for i in rng.integers(0, 70, n)],
             "segment": rng.choice(list("abcdefgh"), n), "humid": rng.integers(0, 90, n)}
    for name, values in cases.items():
        s = pd.Series(values)
        emails = float(s.astype(str).str.fullmatch(columns.EMAIL_PATTERN).mean())
        assert columns.entity_by_counts(name, s.nunique(), len(s), emails) == columns.names_entity(name, s), name


def test_spark_check_data_names_entities_as_pandas_does():
    "An id, an entity's name and email addresses whose rows repeat: entity_column from Spark as from pandas (3/3)."
    pytest.importorskip("pyspark")
    from trainbook import spark as S
    session = S.spark_session(cores=2)
    try:
        rng = np.random.default_rng(0)
        n = 600
        df = pd.DataFrame({"customer_id": rng.integers(0, 120, n), "patient": rng.choice([f"p{i}" for i in range(80)], n),
                           "email": [f"u{i}@ex.com" for i in rng.integers(0, 100, n)],
                           "segment": rng.choice(list("abc"), n), "x": rng.normal(size=n), "y": rng.integers(0, 2, n)})
        kinds = lambda report: sorted((f.kind, f.column, f.message) for f in report.findings)
        on_pandas = kinds(tb.check_data(df, "y", leak_check=False))
        on_spark = kinds(tb.check_data(session.createDataFrame(df), "y", leak_check=False))
        assert [c for k, c, _ in on_pandas if k == "entity_column"] == ["customer_id", "email", "patient"]
        assert [f for f in on_spark if f[0] == "entity_column"] == [f for f in on_pandas if f[0] == "entity_column"]
        grouped = tb.check_data(session.createDataFrame(df), "y", groups="customer_id", leak_check=False)
        assert not grouped.by_kind("entity_column")  # groups= given: the split keeps entities whole already
    finally:
        session.stop()


def test_numbers_stored_as_text_are_said_by_both_loaders(tmp_path):
    """Amounts held as text ('51.3') are one-hot encoded by loaders_from_frame and ParquetLoader alike (51 inputs): both
    now say so, and how to make them numbers; zero-padded codes and ids in digits are left alone."""
    import warnings
    rng = np.random.default_rng(0)
    amount = rng.normal(50, 10, 400).round(1)
    df = pd.DataFrame({"x": rng.normal(size=400), "amount": amount.astype(str),
                       "zip": [f"0{i:04d}" for i in rng.integers(0, 300, 400)], "y": (amount > 50).astype(int)})
    path = tmp_path / "t.parquet"
    df.to_parquet(path, row_group_size=100)
    def said(make):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            made = make()
        return made, [str(w.message) for w in caught if "numbers stored as text" in str(w.message)]
    (dl, _, _, _), on_frame = said(lambda: tb.loaders_from_frame(df, "y", tb.make_splits(df, "y", seed=0)))
    pq, on_parquet = said(lambda: tb.ParquetLoader(path, "y", batch_size=64, prep="auto"))
    assert next(iter(dl))[0].shape[1] == next(iter(pq))[0].shape[1]  # the two paths agree
    assert len(on_frame) == len(on_parquet) == 1 and all("'amount'" in m and "pd.to_numeric" in m
                                                         for m in on_frame + on_parquet)
    assert not columns.amounts_as_text(df["zip"], "zip")
    assert not columns.amounts_as_text(pd.Series(["1", "2"] * 50), "flag")  # two levels: categories are fine
    assert not columns.amounts_as_text(pd.Series([str(i) for i in range(50)] + ["n/a"]), "dose")  # not all numbers


def test_complex_columns_are_refused_by_name():
    "A complex feature or target: float64 keeps the real part only, so check_data and the loaders name it first."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"z": rng.normal(size=100) + 1j, "x": rng.normal(size=100), "y": rng.integers(0, 2, 100)})
    for call in (lambda: tb.check_data(df, "y"), lambda: tb.make_preprocessor(df, "y"),
                 lambda: tb.loaders_from_frame(df, "y", tb.make_splits(df, "y", seed=0))):
        with pytest.raises(TypeError, match=r"complex-valued column\(s\): 'z' \(complex128\)"): call()
    with pytest.raises(TypeError, match="'x'"): tb.check_data(df.assign(x=df.z, z=1.0), "x")  # the target
    assert tb.check_data(df.assign(z=df.z.to_numpy().real), "y", leak_check=False).ok


def test_true_false_objects_with_none_are_booleans_in_both_loaders(tmp_path):
    "An object column of True/False/None: one 0/1 input from loaders_from_frame, as ParquetLoader reads the same rows."
    import warnings
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"b": pd.Series(rng.choice([True, False, None], 300), dtype=object),
                       "x": rng.normal(size=300), "y": rng.integers(0, 2, 300)})
    df.to_parquet(tmp_path / "b.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dl, _, _, prep = tb.loaders_from_frame(df, "y", tb.make_splits(df, "y", seed=0))
    pq = tb.ParquetLoader(tmp_path / "b.parquet", "y", batch_size=64, prep="auto")
    assert next(iter(dl))[0].shape[1] == next(iter(pq))[0].shape[1] == 2
    report = tb.check_data(df, "y", leak_check=False)
    assert report.roles["b"] == "boolean" and report.by_kind("numbers_as_text")[0].severity == "info"
    assert report.by_kind("missing_values")[0].data["missing"] == int(df.b.isna().sum())
    assert columns.dtype_family(pd.Series([True, "yes", None], dtype=object)) == "categorical"  # a mix stays text


def test_whole_numbers_float64_merges_are_said():
    "uint64 values 2**64-5 .. 2**64-1 are one number as float64: check_data and the loaders say so; 2**53 says nothing."
    import warnings
    rng = np.random.default_rng(0)
    x = np.full(200, np.iinfo(np.uint64).max, dtype=np.uint64) - rng.integers(0, 5, 200).astype(np.uint64)
    df = pd.DataFrame({"x": x, "ok": np.full(200, 2**53) - rng.integers(0, 5, 200), "z": rng.normal(size=200),
                       "y": rng.integers(0, 2, 200)})
    found = tb.check_data(df, "y", leak_check=False).by_kind("float64_precision")
    assert [f.column for f in found] == ["x"]
    assert (found[0].data["distinct"], found[0].data["distinct_as_float"]) == (len(np.unique(x)), 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tb.make_preprocessor(df, "y")
    assert [w for w in caught if "2**53" in str(w.message) and "'x'" in str(w.message)]
    assert columns.rounded_integers(pd.Series([2**60, 2**60 + 2**10], dtype="Int64")) is None  # still distinct
