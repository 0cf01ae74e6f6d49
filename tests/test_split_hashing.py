"make_splits hashes a frame's rows once per call, a SplitBuilder once for its snapshot, with the same audit results."
import numpy as np
import pandas as pd
import pytest

import trainbook as tb
from trainbook.audit import RowHashes, audit_parts
from trainbook.splits import make_splits, nested_splits


def messy(n=300, seed=0, lists=False):
    "NaN and None, mixed objects, categoricals with NaN, text, zoned times, nullable ints; 40 rows copied."
    r = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": np.where(np.arange(n) % 7 == 0, np.nan, r.normal(size=n).round(1)),
        "k": pd.array(np.where(np.arange(n) % 5 == 0, None, r.integers(0, 4, n)), dtype="Int64"),
        "o": pd.Series(r.choice(np.array([1, "1", 2.5, None, np.nan, "a"], dtype=object), n), dtype=object),
        "c": pd.Categorical(r.choice(["u", "v", None], n), categories=["u", "v", "w"]),
        "s": pd.Series(r.choice(["p", "q", None], n), dtype="string"),
        "when": pd.date_range("2024-01-01", periods=n, freq="h", tz="Europe/Oslo"),
        "g": r.integers(0, 25, n), "t": r.permutation(n), "y": r.integers(0, 2, n)})
    if lists: df["l"] = [[i % 3, "a"] if i % 4 else {"k": i % 2} for i in range(n)]
    return pd.concat([df, df.iloc[:40]], ignore_index=True)


FRAMES = [messy(), messy(seed=1, lists=True)]
SETTINGS = [dict(), dict(n_folds=4), dict(groups="g", n_folds=3), dict(groups="g", test_size=0.2),
            dict(time="t", gap=3, test_size=0.2), dict(strategy="random", valid_size=0.3)]


def pandas_codes(df, features):
    "The row hashes the audit compared before RowHashes: the features' frame hashed whole, by pandas."
    try: h = pd.util.hash_pandas_object(df[features], index=False).to_numpy()
    except TypeError:  # unhashable cells: object columns as their text
        with np.printoptions(threshold=10**9):
            h = pd.util.hash_pandas_object(df[features].apply(
                lambda s: s.astype(str) if s.dtype == object else s), index=False).to_numpy()
    return pd.factorize(h)[0]


def result(sp):
    "What a split must keep: positions, fingerprint and findings."
    return (sp.fingerprint, [p.tolist() for p in (sp.train, sp.valid, sp.test)],
            [(f.kind, f.message, repr(f.data)) for f in sp.findings])


@pytest.mark.parametrize("df", FRAMES, ids=["messy", "with lists"])
def test_row_codes_group_rows_as_pandas_hashes_of_the_whole_frame(df):
    hashes = RowHashes(df)
    for features in ([c for c in df.columns if c != "y"], list(df.columns), ["x", "o"], ["c", "s"]):
        codes, n_codes = hashes.codes(features)
        np.testing.assert_array_equal(codes, pandas_codes(df, features))
        assert n_codes == codes.max() + 1


@pytest.mark.parametrize("df", FRAMES, ids=["messy", "with lists"])
def test_the_audit_counts_copies_and_shared_groups_as_the_pairwise_intersection(df):
    parts = {"train": np.arange(0, 200), "valid": np.arange(150, 300), "test": np.arange(300, len(df))}
    found = audit_parts(df, parts, target="y", groups="g")
    h = pandas_codes(df, [c for c in df.columns if c != "y"])
    copies = {(f.data["splits"][0], f.data["splits"][1]): f.data["n_rows"] for f in found
              if f.kind == "duplicate_rows"}
    groups = {tuple(f.data["splits"]): f.data["n_shared"] for f in found if f.kind == "group_overlap"}
    shared = {tuple(f.data["splits"]): f.data["n_rows"] for f in found if f.kind == "shared_rows"}
    for a, b in [("train", "valid"), ("train", "test"), ("valid", "test")]:
        itself = np.isin(parts[b], parts[a])  # a row at a position of both parts is itself, not a copy
        n = int((np.isin(h[parts[b]], np.intersect1d(h[parts[a]], h[parts[b]])) & ~itself).sum())
        assert copies.get((a, b), 0) == n
        assert shared.get((a, b), 0) == int(itself.sum())
        assert groups.get((a, b), 0) == len(np.intersect1d(df.g.iloc[parts[a]], df.g.iloc[parts[b]]))
    assert copies[("train", "test")] == 40  # the copied rows 0..39 are in train, their copies in test
    assert shared == {("train", "valid"): 50}  # positions 150..199 in both: an error of their own (probe 72)


@pytest.mark.parametrize("df", FRAMES, ids=["messy", "with lists"])
def test_given_row_hashes_change_no_result(df):
    hashes = RowHashes(df)
    for kw in SETTINGS:
        assert result(make_splits(df, "y", **kw, row_hashes=hashes)) == result(make_splits(df, "y", **kw))
    assert any(f.kind == "duplicate_rows" for f in make_splits(df, "y", row_hashes=hashes).findings)


def counting_hashes(monkeypatch) -> list:
    "Columns hashed by pd.util.hash_pandas_object, counted (a frame counts its columns)."
    hashed, real = [], pd.util.hash_pandas_object
    def count(obj, *args, **kwargs):
        hashed.extend(obj.columns if isinstance(obj, pd.DataFrame) else [obj.name])
        return real(obj, *args, **kwargs)
    monkeypatch.setattr(pd.util, "hash_pandas_object", count)
    return hashed


def test_make_splits_hashes_each_feature_column_once_per_call(monkeypatch):
    df, features = FRAMES[0], [c for c in FRAMES[0].columns if c != "y"]
    hashed = counting_hashes(monkeypatch)
    make_splits(df, "y", n_folds=4, test_size=0.2)  # the parts and four folds audited
    assert sorted(hashed) == sorted(features)
    hashed.clear()
    make_splits(df, "y", n_folds=4, row_hashes=RowHashes(df))
    assert sorted(hashed) == sorted(df.columns)  # RowHashes(df) hashes every column, make_splits none
    hashed.clear()
    nested_splits(df, "y", groups="g", outer=3, inner=2)  # df once, then each outer train part once
    assert len(hashed) == 4 * len(df.columns)


def test_split_builder_hashes_its_frame_once(monkeypatch):
    pytest.importorskip("ipywidgets")
    hashed = counting_hashes(monkeypatch)
    sb = tb.SplitBuilder(FRAMES[0], target="y")
    assert sorted(hashed) == sorted(FRAMES[0].columns)
    for control, value in [("valid_size", 0.3), ("n_folds", 3), ("target", "t"), ("groups", "g")]:
        getattr(sb, control).value = value
        assert sb.splits is not None, sb.error
    assert len(hashed) == len(FRAMES[0].columns)  # new settings and a new target: nothing hashed again
    assert result(sb.splits) == result(make_splits(FRAMES[0], "t", valid_size=0.3, n_folds=3, groups="g"))


def test_split_builder_splits_its_frame_as_it_was_when_made():
    pytest.importorskip("ipywidgets")
    df = messy()
    before = df.copy()
    sb = tb.SplitBuilder(df, target="y")
    df.loc[:, "x"] = 0.0  # changed in place after the builder was made: many more copies, other values
    df.loc[df.index[:50], "y"] = 1
    sb.valid_size.value = 0.3
    expected = result(make_splits(before, "y", valid_size=0.3))
    assert result(sb.splits) == expected
    assert result(make_splits(df, "y", valid_size=0.3)) != expected  # the change matters to the audit
    pd.testing.assert_frame_equal(sb.df, before)


def test_row_hashes_of_another_frame_are_refused():
    df = FRAMES[0]
    with pytest.raises(ValueError, match="row_hashes were made on a frame of 340 rows, but df has 300"):
        make_splits(df.iloc[:300], "y", row_hashes=RowHashes(df))
    with pytest.raises(ValueError, match=r"row_hashes hold no hashes of column\(s\) \['x'\]"):
        make_splits(df, "y", row_hashes=RowHashes(df.drop(columns="x")))
    with pytest.raises(TypeError, match="row_hashes must be the RowHashes of this df"):
        make_splits(df, "y", row_hashes=pd.util.hash_pandas_object(df))
