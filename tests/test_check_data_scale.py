"""`check_data` on big frames: each column coded once, the duplicate checks on those codes, the same findings
as the pandas calls they replace, and a note before a check of more than a million rows."""""
import warnings

import numpy as np
import pandas as pd
import pytest

import trainbook as tb
import trainbook.live
from trainbook.columns import column_roles


def messy(n=400, seed=0):
    "Every dtype a table brings: NaN, pd.NA, None, mixed Python types, numbers as text, ids, text, datetimes."
    rng = np.random.default_rng(seed)
    num = rng.normal(size=n)
    num[rng.random(n) < 0.2] = np.nan
    obj = rng.choice(np.array(["1", "2", "n/a", None, np.nan, 3, 3.0, True, "x"], dtype=object), n)
    words = ["the", "cat", "sat", "on", "mat", "dog", "ran"]
    df = pd.DataFrame({
        "num": num, "num_inf": np.where(rng.random(n) < 0.05, np.inf, num),
        "int_id": rng.permutation(n), "user_id": rng.permutation(n).astype(float),
        "Int": pd.array(rng.integers(0, 5, n), dtype="Int64"),
        "cat": pd.Categorical(rng.choice(list("abc"), n), categories=list("abcd")),
        "obj_mixed": obj, "text_nums": pd.Series(rng.integers(0, 9, n)).astype(str),
        "padded": pd.Series(rng.permutation(n)).map("{:06d}".format),
        "hi_txt": pd.Series(rng.integers(0, n, n)).astype(str).radd("u_"),
        "mid": pd.Series(rng.integers(0, 60, n)).astype(str).radd("c_"),
        "mostly_nums": pd.Series(np.where(rng.random(n) < 0.1, "bad",
                                          rng.normal(size=n).round(2).astype(str))),
        "words": [" ".join(rng.choice(words, 6)) + f" {i}" for i in range(n)],
        "when": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 50, n), unit="D"),
        "whentz": (pd.Timestamp("2020-01-01")
                   + pd.to_timedelta(rng.integers(0, 10**6, n), unit="s")).tz_localize("UTC"),
        "dur": pd.to_timedelta(rng.integers(0, 9, n), unit="h"),
        "flag": rng.random(n) < 0.5, "nflag": pd.array(rng.random(n) < 0.5, dtype="boolean"),
        "const": 1, "nullstr": pd.Series(rng.choice(["a", None], n), dtype="string"),
        "grp": rng.integers(0, 30, n),
        "y": rng.integers(0, 2, n),
    })
    df.loc[rng.random(n) < 0.05, "y"] = 2
    return df


def cases() -> dict:
    "name -> (frame, check_data keywords)."
    base = messy()
    small = base[["num", "cat", "mid", "y"]].head(60)
    return {
        "messy_groups_time": (base, dict(target="y", groups="grp", time="when")),
        "dups": (pd.concat([small, small.head(20)], ignore_index=True), dict(target="y")),
        "conflicts": (pd.concat([small, small.head(20).assign(y=lambda d: (d.y + 1) % 3)], ignore_index=True),
                      dict(target="y")),
        "objtarget": (small.assign(y=pd.Series([None, np.nan, "a", "b"] * 15, dtype=object).to_numpy()),
                      dict(target="y", leak_check=False)),
        "nan_rows": (pd.DataFrame({"a": [np.nan] * 30 + [1.0] * 30, "b": [None] * 30 + ["x"] * 30,
                                   "y": [0, 1] * 30}), dict(target="y")),
        "big_ints": (pd.DataFrame({"k": [str(2**64 + i) for i in range(30)] + ["-5"] * 30, "y": [0, 1] * 30}),
                     dict(target="y")),
    }


# (kind, column, message) of each finding, as check_data gave them before the columns were coded once
# (DataFrame.duplicated, groupby(...).nunique(), Series.nunique and pd.to_numeric per call)
ID_400 = "near-unique (400 distinct values in 400 rows): an identifier, not a feature"
BEFORE = {
    'messy_groups_time': [
        ('missing_values', 'num', '77 missing values (19.2%)'),
        ('infinite_values', 'num_inf', '27 infinite value(s) in this feature (+inf ×27, -inf ×0)'),
        ('missing_values', 'num_inf', '71 missing values (17.8%)'),
        ('id_like_column', 'int_id', ID_400),
        ('id_like_column', 'user_id', ID_400),
        ('nullable_dtype', 'Int', 'pandas nullable dtype Int64 (missing values are pd.NA)'),
        ('missing_values', 'obj_mixed', '90 missing values (22.5%)'),
        ('mixed_types', 'obj_mixed', "numbers mixed with 80 value(s) that are not: 'n/a' ×43, 'x' ×37"),
        ('numbers_as_text', 'text_nums', 'all 400 values are numbers stored as text (dtype str), so they are read '
         'as categories'),
        ('id_like_column', 'padded', ID_400),
        ('high_cardinality', 'hi_txt', '246 categories for 400 rows (1.6 rows per category)'),
        ('high_cardinality', 'mid', '60 categories for 400 rows (6.7 rows per category)'),
        ('high_cardinality', 'mostly_nums', '230 categories for 400 rows (1.7 rows per category)'),
        ('mixed_types', 'mostly_nums', "numbers mixed with 45 value(s) that are not: 'bad' ×45"),
        ('text_column', 'words', 'long free text: left out of the features by default'),
        ('time_candidate', 'whentz', 'a datetime: as a feature it becomes numeric parts (year, month, day of '
         'week, day of year, hour, elapsed time), never categories'),
        ('nullable_dtype', 'nflag', 'pandas nullable dtype boolean (missing values are pd.NA)'),
        ('constant_column', 'const', 'a single value (1)'),
        ('missing_values', 'nullstr', '204 missing values (51.0%)'),
        ('nullable_dtype', 'nullstr', 'pandas nullable dtype string (missing values are pd.NA)'),
        ('constant_column', 'nullstr', "a single value ('a')"),
        ('class_imbalance', 'y', 'minority class 2 is 4.2% of rows (17 rows; majority 50.0%)'),
        ('time_unsorted', 'when', 'rows are not in time order'),
        ('time_duplicates', 'when', '350 rows share a timestamp with an earlier row'),
    ],
    'dups': [
        ('missing_values', 'num', '12 missing values (15.0%)'),
        ('duplicate_rows', None, '21 exact duplicate rows'),
        ('class_imbalance', 'y', 'minority class 2 is 6.2% of rows (5 rows; majority 48.8%)'),
    ],
    'conflicts': [
        ('missing_values', 'num', '12 missing values (15.0%)'),
        ('duplicate_rows', None, '1 exact duplicate rows'),
        ('conflicting_labels', 'y', '20 groups of identical feature rows carry different labels (40 rows; no model '
         'gets more than 75.0% of all rows right): rows agreeing on every feature are rare by chance here '
         '(about 0.33 such pairs expected), so these may be copies of one record'),
    ],
    'objtarget': [
        ('missing_values', 'num', '10 missing values (16.7%)'),
        ('missing_target', 'y', '30 rows have no target'),
    ],
    'nan_rows': [
        ('missing_values', 'a', '30 missing values (50.0%)'),
        ('constant_column', 'a', 'a single value (1.0)'),
        ('missing_values', 'b', '30 missing values (50.0%)'),
        ('constant_column', 'b', "a single value ('x')"),
        ('duplicate_rows', None, '56 exact duplicate rows'),
        ('conflicting_labels', 'y', '2 groups of identical feature rows carry different labels (60 rows; no model gets '
         'more than 50.0% of all rows right): expected of coarse features (codes, bands, answers shared by '
         'rows whose outcomes differ)'),
    ],
    'big_ints': [
        ('id_like_column', 'k', 'near-unique (31 distinct values in 60 rows): an identifier, not a feature'),
        ('duplicate_rows', None, '28 exact duplicate rows'),
        ('conflicting_labels', 'y', '1 group of identical feature rows carries different labels (30 rows; no model '
         'gets more than 75.0% of all rows right): rows agreeing on every feature are rare by chance here '
         '(about 0 such pairs expected), so these may be copies of one record'),
    ],
}


def run(name):
    df, kw = cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tb.check_data(df, **kw)


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_findings_are_those_of_the_pandas_calls_they_replace(name):
    assert [(f.kind, f.column, f.message) for f in run(name).findings] == BEFORE[name]


def test_roles_are_those_of_before():
    assert column_roles(messy(), "y") == {
        "num": "numeric", "num_inf": "numeric", "int_id": "identifier", "user_id": "identifier",
        "Int": "numeric",
        "cat": "categorical", "obj_mixed": "categorical", "text_nums": "categorical", "padded": "identifier",
        "hi_txt": "categorical", "mid": "categorical", "mostly_nums": "categorical", "words": "text",
        "when": "datetime", "whentz": "datetime", "dur": "timedelta", "flag": "boolean", "nflag": "boolean",
        "const": "constant", "nullstr": "constant", "grp": "numeric"}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_counts_agree_with_pandas(name):
    "Distinct values, duplicate rows, label conflicts: as Series.nunique, DataFrame.duplicated, groupby say."
    df, kw = cases()[name]
    report = run(name)
    for f in report.findings:
        if "n_unique" in f.data: assert f.data["n_unique"] == df[f.column].nunique()
    dup = df.duplicated(keep="first")
    found = report.by_kind("duplicate_rows")
    assert (found[0].data["n_duplicates"] if found else 0) == int(dup.sum())
    if found: assert found[0].data["rows"] == df.index[dup][:20].tolist()
    features = [c for c in df.columns if c != "y"]
    # a missing label is no label (probe 49): conflicts are among the labelled rows
    labels = df.dropna(subset=["y"]).groupby(features, dropna=False, sort=False, observed=True)["y"].nunique()
    found = report.by_kind("conflicting_labels")
    assert (found[0].data["n_groups"] if found else 0) == int((labels > 1).sum())


def wide(n=1000, seed=0):
    "Ten columns of 300 values: the rows' codes outgrow int64 and are renumbered on the way; 50 rows copied."
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"c{i}": rng.integers(0, 300, n).astype(float) for i in range(10)})
    df["y"] = rng.integers(0, 2, n)
    df.loc[rng.random(n) < 0.1, "c3"] = np.nan
    copies = df.sample(50, random_state=0)
    return pd.concat([df, copies, copies.head(10).assign(y=lambda d: 1 - d.y)], ignore_index=True)


def test_rows_renumbered_on_the_way_are_compared_exactly():
    df = wide()
    report = tb.check_data(df, "y", leak_check=False)
    dup = df.duplicated(keep="first")
    assert report.by_kind("duplicate_rows")[0].data["rows"] == df.index[dup][:20].tolist()
    assert report.by_kind("duplicate_rows")[0].data["n_duplicates"] == int(dup.sum()) == 50
    labels = df.groupby([f"c{i}" for i in range(10)], dropna=False, sort=False)["y"].nunique(dropna=False)
    assert report.by_kind("conflicting_labels")[0].data["n_groups"] == int((labels > 1).sum()) == 10


class Calls:
    "Counts calls of pandas functions by the length of what they were given."
    def __init__(self, monkeypatch, n):
        self.n, self.factorized, self.full = n, [], []
        real_factorize = pd.factorize

        def factorize(values, *args, **kwargs):
            if isinstance(values, pd.Series): self.factorized.append(values.name)
            return real_factorize(values, *args, **kwargs)
        monkeypatch.setattr(pd, "factorize", factorize)
        for owner, name in ((pd.Series, "nunique"), (pd.Series, "unique"), (pd.DataFrame, "duplicated"),
                            (pd.DataFrame, "groupby")):
            self._count(monkeypatch, owner, name)

    def _count(self, monkeypatch, owner, name):
        real = getattr(owner, name)

        def counted(obj, *args, **kwargs):
            if len(obj) == self.n: self.full.append(f"{owner.__name__}.{name}")
            return real(obj, *args, **kwargs)
        monkeypatch.setattr(owner, name, counted)


def test_each_column_is_coded_once_and_rows_are_never_rehashed(monkeypatch):
    "One pd.factorize per column for roles, counts, duplicates, conflicts; no whole-column nunique/groupby."
    df = messy(n=3000)
    calls = Calls(monkeypatch, len(df))
    tb.check_data(df, "y", groups="grp", time="when", task="multiclass", leak_check=False)  # no infer_task
    assert sorted(calls.factorized, key=str) == sorted(df.columns, key=str)  # each once
    assert calls.full == []


def test_string_columns_are_parsed_once_per_distinct_value(monkeypatch):
    "A 200-value string column of 5,000 rows: pd.to_numeric reads its 200 distinct strings, never 5,000 rows."
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"city": pd.Series(rng.integers(0, 200, 5000)).astype(str).radd("c_"),
                       "zip": pd.Series(rng.permutation(5000)).map("{:05d}".format),
                       "y": rng.integers(0, 2, 5000)})
    sizes, real = [], pd.to_numeric

    def to_numeric(values, *args, **kwargs):
        sizes.append(len(values))
        return real(values, *args, **kwargs)
    monkeypatch.setattr(pd, "to_numeric", to_numeric)
    report = tb.check_data(df, "y", leak_check=False)
    assert report.roles == {"city": "categorical", "zip": "identifier"}
    assert max(sizes) == 5000 and sizes.count(5000) == 1  # the 5,000 distinct zip codes, once


@pytest.mark.parametrize("rows, noted", [(1_000_000, False), (1_000_001, True)])
def test_a_check_of_more_than_a_million_rows_says_so_first(monkeypatch, rows, noted):
    shown = []
    monkeypatch.setattr(trainbook.live, "show_output", lambda obj, **kw: shown.append(obj))
    df = pd.DataFrame({"x": np.arange(rows) % 7, "y": np.arange(rows) % 2})
    tb.check_data(df, "y", leak_check=False)
    if not noted:
        assert shown == []
        return
    assert len(shown) == 1
    assert shown[0]["text/plain"].startswith("check_data: 1,000,001 rows × 2 columns, about ")
