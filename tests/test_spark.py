"Spark DataFrames through the checklist: the pandas findings, leak-free parts, XGBoost on Spark, MLlib baselines."
import subprocess, sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("xgboost")

import trainbook as tb
from trainbook import spark as S, spark_splits as SS
from trainbook import spark_models as SM
from trainbook.splits import Splits


@pytest.fixture(scope="module")
def spark():
    "One local Spark for the whole module (local[2], UI off, 127.0.0.1), stopped after."
    session = S.spark_session(cores=2)
    yield session
    session.stop()


def messy(n=400, seed=0):
    "A frame with a finding of most kinds: missing, constant, id, text, numbers as text, duplicates, leak, imbalance."
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "user_id": np.arange(n),
        "x": rng.normal(size=n),
        "city": rng.choice(["oslo", "rome", "lima"], n),
        "zip": rng.integers(1000, 1100, n).astype(str),  # numbers stored as text
        "score": np.where(rng.random(n) < 0.1, "n/a", rng.normal(size=n).round(1).astype(str)),  # mixed
        "note": [f"customer wrote a long note number {i}" for i in range(n)],
        "one": 7,
        "when": pd.date_range("2024-01-01", periods=n, freq="h"),
        "y": (rng.random(n) < 0.08).astype(int),
    })
    df.loc[:29, "x"] = np.nan
    df["leak"] = df["y"] * 3.0 + 1
    df.iloc[-5:] = df.iloc[:5].to_numpy()  # 5 exact duplicate rows
    df = df.astype(dict(df.dtypes))
    # in time order: a Spark table has no row order, so only pandas could say `time_unsorted`
    return df.sort_values("when", kind="stable").reset_index(drop=True)


def kinds(findings):
    return sorted((f.kind, f.column) for f in findings)


def test_is_spark_frame_tells_a_spark_frame_without_importing_pyspark(spark):
    assert S.is_spark_frame(spark.range(2))
    assert not S.is_spark_frame(pd.DataFrame({"a": [1]}))
    code = ("import sys, pandas as pd, trainbook as tb\n"
            "tb.check_data(pd.DataFrame({'a': range(30), 'y': [0, 1] * 15}), 'y', leak_check=False)\n"
            "from trainbook.spark import is_spark_frame\n"
            "assert not is_spark_frame(pd.DataFrame())\n"
            "assert 'pyspark' not in sys.modules, 'pyspark imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_check_data_finds_what_pandas_finds(spark):
    df = messy()
    pandas_report = tb.check_data(df, "y", time="when")
    report = tb.check_data(spark.createDataFrame(df), "y", time="when")
    assert isinstance(report, S.SparkDataReport) and report.task == pandas_report.task == "binary"
    assert kinds(report.findings) == kinds(pandas_report.findings)
    expected = {("missing_values", "x"), ("constant_column", "one"), ("id_like_column", "user_id"),
                ("text_column", "note"), ("numbers_as_text", "zip"), ("mixed_types", "score"),
                ("duplicate_rows", None), ("class_imbalance", "y"), ("target_leak", "leak")}
    assert expected <= set(kinds(report.findings))
    assert report.roles == pandas_report.roles
    assert report.by_kind("duplicate_rows")[0].data["n_duplicates"] == 5
    assert report.summary().loc["x", "missing"] == pandas_report.summary().loc["x", "missing"] == 35


def test_check_data_on_groups_time_and_serving(spark):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"g": np.repeat(np.arange(50), 4).astype(float), "t": np.repeat(np.arange(100), 2),
                       "x": rng.normal(size=200), "y": rng.integers(0, 3, 200)})
    df.loc[:2, "g"] = np.nan
    serving = df.drop(columns=["x"]).assign(x=rng.normal(loc=3, size=200))
    pandas_report = tb.check_data(df, "y", groups="g", time="t", serving=serving)
    report = tb.check_data(spark.createDataFrame(df), "y", groups="g", time="t",
                           serving=spark.createDataFrame(serving))
    assert kinds(report.findings) == kinds(pandas_report.findings)
    assert {("missing_values", "g"), ("time_duplicates", "t"), ("distribution_shift", "x")} <= set(
        kinds(report.findings))


def pandas_splits(df, sdf, sp):
    "The pandas `Splits` holding the rows of each Spark part (a group split: the part follows the group id)."
    groups = sp.params["groups"]
    part_of = dict(sp.assign(sdf).select(groups, "__part").distinct().toPandas().itertuples(index=False))
    parts = df[groups].map(part_of).to_numpy()
    where = {name: np.flatnonzero(parts == name) for name in ("train", "valid", "test")}
    return Splits(where["train"], where["valid"], where["test"], strategy="group",
                  params={"target": "y", "groups": groups, "task": sp.params["task"]})


def test_grouped_split_never_puts_a_group_in_two_parts(spark):
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"patient": rng.integers(0, 120, 1500), "x": rng.normal(size=1500),
                       "y": rng.integers(0, 2, 1500)})
    sdf = spark.createDataFrame(df)
    sp = tb.make_splits(sdf, "y", strategy="group", groups="patient", valid_size=0.2, test_size=0.2, seed=4)
    assert isinstance(sp, SS.SparkSplits) and not [f for f in sp.findings if f.kind == "group_overlap"]
    frames = sp.frames(sdf)
    assert set(frames) == {"train", "valid", "test"}
    ids = {name: set(part.select("patient").distinct().toPandas()["patient"]) for name, part in frames.items()}
    assert not ids["train"] & ids["valid"] and not ids["train"] & ids["test"] and not ids["valid"] & ids["test"]
    assert {name: part.count() for name, part in frames.items()} == sp.sizes
    assert sum(sp.sizes.values()) == 1500
    # the same rule gives the same parts: the audit of the pandas positions agrees, the fingerprint is stable
    assert not [f for f in pandas_splits(df, sdf, sp).audit(df) if f.kind == "group_overlap"]
    again = tb.make_splits(sdf, "y", strategy="group", groups="patient", valid_size=0.2, test_size=0.2, seed=4)
    assert again.fingerprint == sp.fingerprint
    assert tb.make_splits(sdf, "y", strategy="group", groups="patient", seed=5).fingerprint != sp.fingerprint
    # a random split of the same rows puts patients on both sides, and the Spark audit says so
    leaky = tb.make_splits(sdf, "y", strategy="random", seed=0)
    overlap = [f for f in leaky.audit(sdf, groups="patient") if f.kind == "group_overlap"]
    assert overlap and overlap[0].data["n_shared"] > 10


def test_stratified_and_time_splits(spark):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"t": rng.permutation(1000), "x": rng.normal(size=1000),
                       "y": (rng.random(1000) < 0.2).astype(int)})
    sdf = spark.createDataFrame(df)
    strat = tb.make_splits(sdf, "y", strategy="stratified", valid_size=0.25, seed=1)
    counts = SS.part_class_counts(strat.assign(sdf), "y")
    for cls, total in df["y"].value_counts().items():
        assert abs(counts[("valid", cls)] - 0.25 * total) <= 1  # class shares equal up to a row per class
    timed = tb.make_splits(sdf, "y", strategy="time", time="t", valid_size=0.2, test_size=0.1, gap=25)
    parts = timed.assign(sdf).toPandas()
    span = parts.groupby("__part")["t"].agg(["min", "max", "size"])
    assert span.loc["train", "max"] + 25 < span.loc["valid", "min"]
    assert span.loc["valid", "max"] + 25 < span.loc["test", "min"]
    # as the pandas split counts: test 10% of the rows, valid 0.2/0.9 of the 875 before test's gap
    assert span.loc["test", "size"] == 100 and span.loc["valid", "size"] == 194
    assert parts["__part"].isna().sum() == 50  # the two gaps
    assert not [f for f in timed.findings if f.kind == "time_leak"]


def test_fit_xgboost_on_spark_matches_the_pandas_path(spark, tmp_path):
    rng = np.random.default_rng(0)
    n = 2400
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(list("pqr"), n),
                       "g": rng.integers(0, 400, n)})
    df["y"] = ((df.a + 0.7 * df.b + (df.c == "p") + rng.normal(scale=0.7, size=n)) > 0.4).astype(int)
    sdf = spark.createDataFrame(df)
    sp = tb.make_splits(sdf, "y", strategy="group", groups="g", seed=0)
    class Rounds(tb.Callback):  # probe 13, f11: callbacks= reached no observer on a Spark DataFrame
        def __init__(self): self.steps = 0
        def after_step(self, state): self.steps += 1
    seen = Rounds()
    run = tb.fit_xgboost(sdf, "y", sp, num_rounds=300, early_stopping=10, live=False,  # 2 workers: local[2]
                         checkpoint_dir=str(tmp_path / "spark"), callbacks=[seen])
    assert seen.steps == run.step > 0
    pd_run = tb.fit_xgboost(df, "y", pandas_splits(df, sdf, sp), num_rounds=300, early_stopping=10, live=False)
    assert run.kind == "xgboost" and run.extra["engine"] == "spark" and run.extra["num_workers"] == 2
    from trainbook.tracking import params_of  # a store records the rounds, not TrainConfig's torch fields
    assert params_of(run)["epochs"] == "300" and "lr" not in params_of(run) and "batch_size" not in params_of(run)
    assert run.stopped == "early_stopping"
    h = run.history
    rounds = h[(h.split == "valid") & (h.name == "loss")]
    assert len(rounds) == run.step and rounds.step.tolist() == list(range(1, run.step + 1))
    assert set(h[h.split == "valid"].name) == set(pd_run.history[pd_run.history.split == "valid"].name)
    # the saved model loads with plain XGBoost and scores pandas rows
    model = tb.BoostedModel.load(tmp_path / "spark")
    valid = df.iloc[pandas_splits(df, sdf, sp).valid]
    from sklearn.metrics import roc_auc_score
    auc = roc_auc_score(valid.y, model.predict_proba(valid)[:, 1])
    pd_auc = roc_auc_score(valid.y, pd_run.model.predict_proba(valid)[:, 1])
    assert auc > 0.8 and abs(auc - pd_auc) < 0.01
    assert np.allclose(model.predict_proba(valid), run.model.predict_proba(valid))


def test_mllib_baselines_come_in_the_pandas_table(spark):
    rng = np.random.default_rng(5)
    n = 800
    df = pd.DataFrame({"a": rng.normal(size=n), "c": rng.choice(list("pq"), n), "g": rng.integers(0, 100, n)})
    df.loc[:20, "a"] = np.nan
    df["y"] = ((df.a.fillna(0) + (df.c == "p") + rng.normal(scale=0.5, size=n)) > 0.5).astype(int)
    sdf = spark.createDataFrame(df)
    sp = tb.make_splits(sdf, "y", strategy="group", groups="g", seed=1)
    table = tb.baseline(sdf, "y", sp, models=("dummy", "linear", "gbt"))
    pandas_table = tb.baseline(df, "y", pandas_splits(df, sdf, sp), models=("dummy", "linear"))
    assert list(table.columns) == list(pandas_table.columns) and table.index.name == "model"
    assert list(table.index) == ["dummy", "linear", "gbt"]
    assert table.loc["dummy", "valid_roc_auc"] == pytest.approx(0.5)
    assert table.loc["linear", "valid_roc_auc"] > 0.8 and table.loc["gbt", "valid_roc_auc"] > 0.8
    assert abs(table.loc["linear", "valid_roc_auc"] - pandas_table.loc["linear", "valid_roc_auc"]) < 0.02


def test_bad_input_is_refused_with_what_to_do(spark):
    sdf = spark.createDataFrame(pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]}))
    with pytest.raises(ValueError, match="groups column 'g' not in"): tb.make_splits(sdf, "y", groups="g")
    with pytest.raises(ValueError, match="n_folds"): tb.make_splits(sdf, "y", n_folds=3)
    with pytest.raises(ValueError, match="needs groups"): tb.make_splits(sdf, "y", strategy="group")
    sp = tb.make_splits(spark.createDataFrame(pd.DataFrame({"x": np.arange(40.0), "y": [0, 1] * 20})), "y")
    with pytest.raises(TypeError, match="SparkSplits"):
        SM.fit_xgboost(sdf, "y", Splits(np.arange(2), np.arange(2, 4), np.array([], dtype=int)))
    with pytest.raises(ValueError, match="binary only"): tb.baseline(sdf, "y", sp, task="multiclass", models=("gbt",))
    with pytest.raises(ValueError, match="lacks column"): sp.frames(sdf.drop("x").withColumnRenamed("y", "z"))


def test_a_dotted_column_name_is_read_as_a_name_and_duplicated_names_are_refused(spark):
    "Seen: a feature 'a.b' or a target 'y.z' (common after flattening structs) failed in Spark's words."
    rng = np.random.default_rng(0)
    sdf = spark.createDataFrame(pd.DataFrame({"a.b": rng.normal(size=60), "g": rng.integers(0, 6, 60),
                                              "y.z": rng.integers(0, 2, 60)}))
    report = tb.check_data(sdf, "y.z", groups="g", leak_check=False)
    assert report.task == "binary"
    sp = tb.make_splits(sdf, "y.z", groups="g", strategy="group")
    assert sum(sp.summary(sdf)["rows"]) == 60 and "group_overlap" not in {f.kind for f in sp.findings}
    with pytest.raises(ValueError, match="duplicated column names: 'a'"):
        tb.check_data(sdf.toDF("a", "a", "y"), "y", leak_check=False)


def test_dots_and_backticks_in_names_reach_spark_as_names(spark):
    "Seen: a feature 'a.b' failed in baseline's select, a target 'la`b' in check_data's label count."
    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 2, n)
    sdf = spark.createDataFrame(pd.DataFrame({
        "a.b": y + rng.normal(size=n), "we`ird": rng.normal(size=n),
        "c.d": rng.choice(["u", "v", "w"], n),  # a category: StringIndexer and OneHotEncoder read it
        "s`x": np.where(rng.random(n) < 0.2, "n/a", rng.normal(size=n).round(2).astype(str)),  # try_cast
        "la`b": y}))
    report = tb.check_data(sdf, "la`b", leak_check=False)
    assert report.task == "binary"
    assert ("mixed_types", "s`x") in kinds(report.findings)
    sp = tb.make_splits(sdf, "la`b", seed=0)
    table = tb.baseline(sdf, "la`b", sp, models=("dummy", "linear", "xgboost"))
    assert list(table.index) == ["dummy", "linear", "xgboost"]
    assert table.loc["linear", "valid_roc_auc"] > table.loc["dummy", "valid_roc_auc"] + 0.1


def test_names_equal_but_for_case_are_refused_when_spark_ignores_case(spark):
    "Seen: columns 'A' and 'a' failed with Spark's AMBIGUOUS_REFERENCE deep inside check_data."
    sdf = spark.createDataFrame(pd.DataFrame({"A": [1.0, 2.0] * 20, "a": [3.0, 4.0] * 20, "y": [0, 1] * 20}))
    with pytest.raises(ValueError, match=r"equal but for case: 'A', 'a'.*rename them"):
        tb.check_data(sdf, "y", leak_check=False)
    with pytest.raises(ValueError, match="equal but for case"): tb.make_splits(sdf, "y")
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        assert tb.check_data(sdf, "y", leak_check=False).task == "binary"
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def test_spark_takes_ids_by_the_pandas_name_rule_and_refuses_a_mistyped_target(spark, monkeypatch):
    "F3, F15, F16 on Spark: the pandas name rule (humid no id, customerID one), a text form, a target typo raises."
    rng = np.random.default_rng(0)
    ids = rng.permutation(np.arange(100, 100 + 60 * 97, 97)).astype(float)  # whole floats, wide span
    df = pd.DataFrame({"humid": ids, "customerID": ids[::-1].copy(), "user_id": rng.gamma(2.0, 50.0, 60),
                       "y": [0, 1] * 30})
    report = tb.check_data(spark.createDataFrame(df), "y", leak_check=False)
    assert report.roles == tb.check_data(df, "y", leak_check=False).roles
    assert report.roles == {"humid": "numeric", "customerID": "identifier", "user_id": "numeric"}
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(obj))
    report._ipython_display_()
    assert shown[0]["text/plain"].startswith("DataReport (Spark) OK") and "customerID" in shown[0]["text/plain"]
    with pytest.raises(ValueError, match=r"^target column 'Y' not in the Spark DataFrame \(did you mean 'y'\?\)"):
        tb.check_data(spark.createDataFrame(df), "Y")


def test_group_split_holds_the_share_of_rows_not_of_groups(spark):
    rng = np.random.default_rng(0)
    n = 400  # one group of about 70% of the rows, 29 small ones
    df = pd.DataFrame({"a": rng.normal(size=n), "g": np.where(rng.random(n) < 0.7, 0, rng.integers(1, 30, n)),
                       "y": rng.integers(0, 2, n)})
    sdf = spark.createDataFrame(df)
    for test_size in (0.0, 0.1):
        sp = tb.make_splits(sdf, "y", strategy="group", groups="g", valid_size=0.2, test_size=test_size)
        asked = {"valid": 0.2, "test": test_size}
        for name, share in asked.items():  # within a quarter of the share asked, as pandas' split_size rule
            if share: assert abs(sp.sizes[name] / n - share) <= share / 4, sp.sizes
        assert not [f for f in sp.findings if f.kind in ("split_size", "group_overlap")]
        frames = sp.frames(sdf)
        ids = {name: set(part.select("g").distinct().toPandas()["g"]) for name, part in frames.items()}
        assert 0 in ids["train"] and all(not ids[a] & ids[b] for a in ids for b in ids if a < b)
        assert {name: part.count() for name, part in frames.items()} == sp.sizes


def test_a_time_split_on_tied_times_leaves_gap_rows_before_valid_and_test(spark):
    """Probe 87: 400 rows at 50 times, gap=10: no row left out before valid, 6 before test, and the split's own
    audit said 'fewer than gap=10 rows' twice (the pandas split leaves 11: whole times, at least the gap)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=400), "t": rng.integers(0, 50, 400), "y": rng.choice(["a", "b"], 400)})
    sdf = spark.createDataFrame(df)
    for gap in (1, 10, 25):
        sp = tb.make_splits(sdf, "y", time="t", gap=gap, test_size=0.2, seed=0)
        m = sp.assign(sdf).toPandas()
        t = {name: m.t[m.__part == name] for name in ("train", "valid", "test")}
        for a, b in (("train", "valid"), ("valid", "test")):
            between = int(((m.t > t[a].max()) & (m.t < t[b].min())).sum())
            assert between >= gap and m.t[m.__part.isna() & m.t.between(t[a].max(), t[b].min())].size == between
        assert not [f for f in sp.findings if f.kind == "time_leak"]


def test_a_time_split_puts_tied_times_on_the_side_the_pandas_split_does(spark):
    """Probe 117: 10 days x 100 rows, test_size=0.15: pandas gave 700/200/100 (the cut's day stays before it),
    Spark 600/200/200 (with gap=50: 500/200/100 against 400/200/200). Now the same rows in each part."""
    rng = np.random.default_rng(0)
    days = pd.DataFrame({"t": np.repeat(pd.date_range("2024-01-01", periods=10, freq="D").values, 100),
                         "x": rng.normal(size=1000), "y": rng.integers(0, 2, 1000)})
    ticks = pd.DataFrame({"t": rng.integers(0, 50, 400), "x": rng.normal(size=400), "y": rng.integers(0, 2, 400)})
    cases = [(days, 0.15, 0), (days, 0.15, 50), (days, 0.0, 0), (days, 0.0, 50), (ticks, 0.2, 0), (ticks, 0.2, 10)]
    for df, test_size, gap in cases:
        df = df.assign(row=np.arange(len(df)))
        kw = dict(strategy="time", time="t", valid_size=0.25, test_size=test_size, gap=gap)
        sp = tb.make_splits(spark.createDataFrame(df), "y", **kw)
        pp = tb.make_splits(df, "y", **kw)
        marked = sp.assign(spark.createDataFrame(df)).select("row", "__part").toPandas().set_index("row")["__part"]
        for name in ("train", "valid", "test"):
            rows = sorted(marked.index[marked == name])
            assert rows == sorted(df.row.to_numpy()[getattr(pp, name)]), (test_size, gap, name)
        assert sp.sizes == {k: len(getattr(pp, k)) for k in ("train", "valid", "test") if len(getattr(pp, k))}


def test_the_same_rows_under_another_group_id_are_copies_in_the_spark_audit(spark):
    "As the pandas audit (probe 87): the group column is left out of the duplicate-row comparison."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "g": rng.integers(0, 20, 200), "y": rng.integers(0, 2, 200)})
    marked = df.assign(__part=np.where(df.g < 15, "train", "valid"))
    copies = df[df.g < 15].head(6).assign(g=99, __part="valid")  # six train rows again, under a new id
    found = SS.spark_audit(spark.createDataFrame(pd.concat([marked, copies], ignore_index=True)), "y", groups="g")
    assert [f.data["n_rows"] for f in found if f.kind == "duplicate_rows"] == [6]


def test_group_split_warns_when_uneven_groups_miss_the_share(spark):
    df = pd.DataFrame({"g": np.repeat([0, 1, 2], [300, 50, 50]), "x": np.arange(400.0),
                       "y": np.arange(400) % 2})
    sp = tb.make_splits(spark.createDataFrame(df), "y", strategy="group", groups="g", valid_size=0.5)
    assert sp.sizes == {"train": 300, "valid": 100}  # the big group stays in train, both others held
    found = [f for f in sp.findings if f.kind == "split_size"]
    assert found and found[0].severity == "warning" and found[0].data["split"] == "valid"
    assert "25% of the rows, not the 50% asked" in found[0].message and "holds 300 of 400" in found[0].message


def test_check_data_refuses_array_map_and_struct_features_as_pandas_does(spark):
    from pyspark.sql import functions as F
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"a": rng.normal(size=60), "y": rng.integers(0, 2, 60)})
    pdf["arr"] = [list(rng.normal(size=3)) for _ in range(60)]
    with pytest.raises(TypeError, match="cells hold several values: 'arr'"):  # the pandas judgement
        tb.check_data(pdf, target="y")
    sdf = spark.createDataFrame(pdf)
    with pytest.raises(TypeError, match=r"cells hold several values: 'arr' \(array<double>\).*drop\('arr'\)"):
        tb.check_data(sdf, target="y")
    flat = sdf.drop("arr")
    for col, value in (("m", F.create_map(F.lit("k"), F.col("a"))), ("s", F.struct("a", "y"))):
        with pytest.raises(TypeError, match=f"several values: '{col}'"):
            tb.check_data(flat.withColumn(col, value), target="y")
    assert not tb.check_data(flat, target="y").by_kind("id_like_column")


def test_check_data_finds_a_label_copy_at_one_in_a_thousand(spark):
    "Probe 23's leak at 20 positives in 20,000 rows: the leak check's sample keeps every positive (as pandas')."
    rng = np.random.default_rng(0)
    y = np.zeros(20_000, dtype=int)
    y[rng.choice(20_000, 20, replace=False)] = 1
    df = pd.DataFrame({"x": rng.normal(size=20_000), "leak": y + rng.normal(0, 0.01, 20_000), "y": y})
    report = tb.check_data(spark.createDataFrame(df), "y")
    leaks = report.by_kind("target_leak")
    assert [f.column for f in leaks] == ["leak"] and "sample" in leaks[0].message, report.findings
    assert [f.column for f in tb.check_data(df, "y").by_kind("target_leak")] == ["leak"]  # as pandas says


def test_a_text_target_is_coded_as_the_pandas_path_codes_it(spark):
    "Probe 24: the Spark path sorted two text labels plainly; class_order makes the rarer one code 1 (positive)."
    from trainbook.data import class_order
    df = pd.DataFrame({"x": range(50), "y": ["yes"] * 40 + ["no"] * 10})
    assert SM._spark_classes(spark.createDataFrame(df), "y") == class_order(df.y) == ["yes", "no"]
    assert class_order({"yes": 40, "no": 10}) == ["yes", "no"]  # counts give the same order


def test_pysparks_warning_about_the_pandas_version_is_said_once_not_at_every_conversion(spark):
    import uuid, warnings
    text = f"PySpark does not yet fully support pandas >= 3.0.0 ({uuid.uuid4().hex})"  # unseen before this test
    with warnings.catch_warnings(record=True) as seen:
        S.spark_session()  # the session in use, and the filter
        for where in ("conversion.py", "functions.py", "conversion.py"):  # where PySpark warns, in turn
            warnings.warn_explicit(text, FutureWarning, where, 324)
    assert len([w for w in seen if "PySpark does not yet" in str(w.message)]) == 1


def test_conflicting_labels_are_counted_and_judged_as_pandas_does(spark):
    "Coarse features whose rows' outcomes differ: information with the ceiling; copies of a row labelled twice: a warning."
    rng = np.random.default_rng(0)
    n = 300
    coarse = pd.DataFrame({"contract": rng.choice(["month", "year", "two_year"], n),
                           "payment": rng.choice(["card", "bank", "check", "mail"], n),
                           "senior": rng.integers(0, 2, n), "churn": rng.integers(0, 2, n)})
    fine = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "y": rng.integers(0, 2, n)})
    fine = pd.concat([fine, fine.head(4).assign(y=lambda d: 1 - d.y)], ignore_index=True)
    for df, target, severity in ((coarse, "churn", "info"), (fine, "y", "warning")):
        (mine,) = tb.check_data(spark.createDataFrame(df), target, leak_check=False).by_kind("conflicting_labels")
        (theirs,) = tb.check_data(df, target, leak_check=False).by_kind("conflicting_labels")
        assert mine.severity == theirs.severity == severity
        keys = ("n_groups", "n_rows", "n_wrong_at_best")
        assert [mine.data[k] for k in keys] == [theirs.data[k] for k in keys]


def test_make_splits_refuses_nan_targets_groups_and_times_as_pandas_does(spark):
    "Probe 51: a double NaN is not null in Spark; the NaN target rows went into the parts, NaN ids made one group."
    nan = float("nan")
    rows = [(float(i), nan if i in (4, 5) else float(i % 10), nan if i in (1, 2, 3) else float(i % 2),
             nan if i == 7 else float(i)) for i in range(100)]
    sdf = spark.createDataFrame(rows, "x double, g double, t double, w double")
    pdf = sdf.toPandas()
    said = "target column 't' has 3 missing values"
    with pytest.raises(ValueError, match=said): tb.make_splits(pdf, "t", strategy="random")
    with pytest.raises(ValueError, match=said): tb.make_splits(sdf, "t", strategy="random")
    labelled = sdf.where("not isnan(t)")
    said = "groups column 'g' has 2 missing group id"
    with pytest.raises(ValueError, match=said): tb.make_splits(labelled.toPandas(), "t", groups="g")
    with pytest.raises(ValueError, match=said): tb.make_splits(labelled, "t", groups="g")
    with pytest.raises(ValueError, match="time column 'w' has 1 missing value"):
        tb.make_splits(labelled, "t", strategy="time", time="w")


def test_a_time_split_on_text_dates_is_refused_up_front_with_the_fix(spark):
    "Probe 51: Spark cast the text to double and died with CAST_INVALID_INPUT and a Java stack."
    import datetime
    day = lambda i: str(datetime.date(2024, 1, 1) + datetime.timedelta(days=i))
    sdf = spark.createDataFrame([(float(i), i % 2, day(i)) for i in range(60)], "x double, y long, day string")
    with pytest.raises(TypeError, match="time column 'day' holds str values, which sort as text"):
        tb.make_splits(sdf.toPandas(), "y", strategy="time", time="day")
    with pytest.raises(TypeError, match=r"time column 'day' holds string values, which sort as text.*"
                                        r"F\.to_timestamp"):
        tb.make_splits(sdf, "y", strategy="time", time="day")
    with pytest.raises(TypeError, match="sort as text"): tb.make_splits(sdf, "y", time="day")  # 'auto' too


def test_check_data_finds_infinities_id_variants_and_text_times_as_pandas_does(spark):
    "Probe 51: Spark's check_data was silent on ±inf (an error in pandas), ids written two ways, text times."
    import datetime
    n = 120
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=n), "cust": [f"C{i % 12}" for i in range(n)],
                       "day": [str(datetime.date(2021, 1, 1) + datetime.timedelta(days=i)) for i in range(n)],
                       "y": rng.integers(0, 2, n)})
    df.loc[[3, 40], "x"], df.loc[90, "x"] = np.inf, -np.inf
    df.loc[[5, 17], "cust"], df.loc[29, "cust"] = "c1 ", "c5"
    pandas_report = tb.check_data(df, "y", groups="cust", time="day", leak_check=False)
    report = tb.check_data(spark.createDataFrame(df), "y", groups="cust", time="day", leak_check=False)
    wanted = {("infinite_values", "x"), ("group_id_variants", "cust"), ("time_as_text", "day")}
    assert wanted <= set(kinds(pandas_report.findings))
    assert wanted <= set(kinds(report.findings))
    (inf,) = report.by_kind("infinite_values")
    assert inf.severity == "error" and "3 infinite value(s) in this feature (+inf ×2, -inf ×1)" in inf.message
    assert not report.ok
    (variants,) = report.by_kind("group_id_variants")
    assert variants.message == pandas_report.by_kind("group_id_variants")[0].message
    (text,) = report.by_kind("time_as_text")
    assert text.severity == "error" and "F.to_timestamp" in text.advice


def test_fit_xgboost_refuses_infinite_features_up_front_naming_the_column(spark, tmp_path):
    "Probe 51: Spark boosting failed late, in the preprocessing, with sklearn's message naming no column."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a.b": rng.normal(size=200), "c d": rng.normal(size=200)})
    df["y"] = (df["a.b"] > 0).astype(int)
    df.loc[[5, 50, 150], "c d"] = np.inf
    sdf = spark.createDataFrame(df)
    sp = tb.make_splits(sdf, "y", strategy="random")
    with pytest.raises(ValueError, match=r"feature column 'c d' has 3 infinite value\(s\): replace them"):
        SM.fit_xgboost(sdf, "y", sp, num_rounds=2, live=False, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before any work


def test_features_named_like_spark_counts_are_checked_as_pandas_checks_them(spark):
    "Probe 70: a feature named 'count' or 'k' met the conflicting-labels counts' own names: AMBIGUOUS_REFERENCE."
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"count": rng.integers(0, 3, n), "k": rng.integers(0, 2, n), "rows": rng.integers(0, 2, n),
                       "__n": rng.integers(0, 2, n), "y": rng.integers(0, 2, n)})  # coarse: labels conflict
    mine = tb.check_data(spark.createDataFrame(df), "y", leak_check=False)
    theirs = tb.check_data(df, "y", leak_check=False)
    assert mine.by_kind("conflicting_labels") and kinds(mine.findings) == kinds(theirs.findings)
    keys = ("n_groups", "n_rows", "n_wrong_at_best")
    assert [mine.by_kind("conflicting_labels")[0].data[k] for k in keys] == \
        [theirs.by_kind("conflicting_labels")[0].data[k] for k in keys]
    # numbers mixed with words in a text column named 'count': its words counted by a name of its own
    text = pd.DataFrame({"count": np.where(np.arange(n) % 10 == 0, "n/a", (np.arange(n) * 1.5).astype(str)),
                         "y": rng.integers(0, 2, n)})
    (mixed,) = tb.check_data(spark.createDataFrame(text), "y", leak_check=False).by_kind("mixed_types")
    assert mixed.column == "count" and mixed.data["values"] == {"n/a": 30}
    assert S.unused_name(["a", "__n", "___N"], "n") == "____n"  # Spark compares names ignoring case


def test_a_random_split_warns_of_entities_and_one_period_as_pandas_does(spark):
    "Probe 70: a random Spark split of a user's rows said nothing where pandas warns entity_overlap (and one_period)."
    rng = np.random.default_rng(1)
    n = 800
    df = pd.DataFrame({"user": rng.integers(0, 60, n), "x": rng.normal(size=n), "y": rng.integers(0, 2, n),
                       "when": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 10_000, n), "min")})
    sdf = spark.createDataFrame(df)
    wanted = {"entity_overlap", "one_period"}
    mine = tb.make_splits(sdf, "y", strategy="random", seed=0).findings
    theirs = tb.make_splits(df, "y", strategy="random", seed=0).findings
    assert {f.kind for f in mine} & wanted == {f.kind for f in theirs} & wanted == wanted
    (entity,) = [f for f in mine if f.kind == "entity_overlap"]
    assert entity.column == "user" and entity.data["n_ids"] == 60 and "groups='user'" in entity.advice
    assert entity.data["n_shared"] > entity.data["n_ids"] / 2
    # split by the entity (and by time): neither is said
    grouped = tb.make_splits(sdf, "y", strategy="group", groups="user", seed=0).findings
    timed = tb.make_splits(sdf, "y", strategy="time", time="when").findings
    assert "entity_overlap" not in {f.kind for f in grouped} and "one_period" not in {f.kind for f in timed}
    # a unique row id or a flag names no entity; a float column is no id
    plain = df.assign(user=np.arange(n), flag=rng.integers(0, 2, n), x_id=rng.normal(size=n)).drop(columns="when")
    assert not {f.kind for f in tb.make_splits(spark.createDataFrame(plain), "y", strategy="random").findings} & wanted


def test_the_spark_options_reach_through_tb_baseline_fit_xgboost_check_data_and_make_splits(spark, tmp_path):
    """Probe 70: tb.fit_xgboost(num_workers=, sample_rows=), tb.baseline(score_rows=, role_rows=, models='dummy'),
    tb.check_data(sample_rows=, exact_limit=), tb.make_splits(exact_limit=)."""
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"x": rng.normal(size=n), "g": rng.integers(0, 40, n)})
    df["y"] = (df.x + rng.normal(scale=0.5, size=n) > 0).astype(int)
    sdf = spark.createDataFrame(df)
    sp = tb.make_splits(sdf, "y", strategy="group", groups="g", seed=0)
    table = tb.baseline(sdf, "y", sp, models="dummy", score_rows=50, role_rows=100)  # one model by name
    assert list(table.index) == ["dummy"] and table.loc["dummy", "valid_roc_auc"] == pytest.approx(0.5)
    run = tb.fit_xgboost(sdf, "y", sp, num_rounds=3, live=False, num_workers=1, sample_rows=60)
    assert run.extra["num_workers"] == 1 and run.extra["prep_sample_rows"] <= 60
    with pytest.raises(ValueError, match="sample_rows must be a positive int"):
        tb.fit_xgboost(sdf, "y", sp, num_rounds=3, live=False, sample_rows=0)
    with pytest.raises(ValueError, match="overwrite=True is not supported on a Spark"):  # said by spark_models now
        tb.fit_xgboost(sdf, "y", sp, live=False, overwrite=True)
    # a pandas frame: the Spark-only options are refused by name, before any work
    splits = tb.make_splits(df, "y", strategy="group", groups="g", seed=0)
    with pytest.raises(ValueError, match="fit_xgboost: num_workers, sample_rows are for a Spark DataFrame only"):
        tb.fit_xgboost(df, "y", splits, live=False, num_workers=1, sample_rows=10)
    with pytest.raises(ValueError, match="baseline: role_rows is for a Spark DataFrame only; leave it out"):
        tb.baseline(df, "y", splits, role_rows=10)
    # check_data and make_splits too (the options of their Spark paths, refused on pandas)
    assert tb.check_data(sdf, "y", sample_rows=50, exact_limit=10).sample_rows == 50  # 400 rows: 5000 by default
    assert tb.make_splits(sdf, "y", strategy="random", exact_limit=10).strategy == "random"
    with pytest.raises(ValueError, match="check_data: sample_rows, exact_limit are for a Spark DataFrame only"):
        tb.check_data(df, "y", sample_rows=50, exact_limit=10)
    with pytest.raises(ValueError, match="make_splits: exact_limit is for a Spark DataFrame only"):
        tb.make_splits(df, "y", exact_limit=10)


def test_fit_xgboost_on_spark_names_the_best_round_without_early_stopping_and_refuses_raw_margins(spark, tmp_path):
    """Probe 114's Spark twin: without early stopping run.best/best_epoch were the last round's while lower valid
    losses came before (the pandas path names the history's best; the model keeps every round), and
    binary:logitraw's logloss is xgboost.spark's on raw margins: refused before any work."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    df["y"] = ((df.a + rng.normal(scale=1.5, size=300)) > 0).astype(int)  # noisy: the valid loss turns back up
    sdf = spark.createDataFrame(df)
    sp = tb.make_splits(sdf, "y", strategy="random", seed=0)
    with pytest.raises(ValueError, match=r"'binary:logitraw' is not supported on Spark"):
        SM.fit_xgboost(sdf, "y", sp, params={"objective": "binary:logitraw"}, num_rounds=5, live=False,
                       checkpoint_dir=tmp_path / "raw")
    assert not (tmp_path / "raw").exists()  # before any work
    run = SM.fit_xgboost(sdf, "y", sp, params={"eta": 0.5, "max_depth": 6}, num_rounds=40, early_stopping=None,
                         live=False)
    valid = run.history[(run.history.split == "valid") & (run.history.name == "loss")].value.to_numpy()
    assert run.best_epoch == int(np.argmin(valid)) < 39 and run.best == pytest.approx(valid.min())
    assert run.extra["best_iteration"] == 39  # the model predicts with every round
