"A user's frame mistakes, at every entry point that takes a frame: named before any work, or handled."
import numpy as np
import pandas as pd
import pytest

import trainbook as tb


def frame(n=300, seed=0, task="binary"):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(list("xyz"), n)})
    df["y"] = (df.a + rng.normal(0, 1, n) > 0).astype(int) if task == "binary" else df.a * 2 + rng.normal(0, 1, n)
    return df


def kinds(report):
    return {(f.kind, f.column) for f in report.findings}


ENTRY_POINTS = {
    "check_data": lambda df: tb.check_data(df, "y"),
    "make_splits": lambda df: tb.make_splits(df, "y"),
    "loaders_from_frame": lambda df: tb.loaders_from_frame(df, "y", tb.make_splits(frame(), "y")),
    "make_preprocessor": lambda df: tb.make_preprocessor(df, "y"),
    "column_roles": lambda df: tb.column_roles(df, "y"),
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_duplicated_column_names_are_named_at_every_entry_point(entry):
    "#25: 'The truth value of a Series is ambiguous' from check_data."
    df = frame()
    dup = df.set_axis(["a", "a", "c", "y"], axis=1)
    with pytest.raises(ValueError, match=r"duplicated column names: 'a' ×2(.|\n)*duplicated\(\)"):
        ENTRY_POINTS[entry](dup)


def test_non_string_column_names_are_reported_and_refused_where_scikit_learn_would_misread_them():
    df = frame()
    mixed = df.rename(columns={"a": 0})
    assert ("non_string_column_names", None) in kinds(tb.check_data(mixed, "y"))
    assert "non_string_column_names" not in {k for k, _ in kinds(tb.check_data(df, "y"))}
    splits = tb.make_splits(mixed, "y")  # splitting reads only the target: fine
    for call in (lambda: tb.loaders_from_frame(mixed, "y", splits), lambda: tb.make_preprocessor(mixed, "y")):
        with pytest.raises(ValueError, match=r"not strings: 0 \(int\)(.|\n)*df.columns.map\(str\)"):
            call()
    # all-integer names (a frame from a numpy array): scikit-learn would read 1, 2 as positions
    ints = pd.DataFrame(np.random.default_rng(0).normal(size=(100, 3)))
    ints[3] = (ints[0] > 0).astype(int)
    with pytest.raises(ValueError, match="not strings: 0 \\(int\\), 1 \\(int\\), 2 \\(int\\)"):
        tb.loaders_from_frame(ints, 3, tb.make_splits(ints, 3))
    named = ints.set_axis(["f0", "f1", "f2", "y"], axis=1)
    assert tb.loaders_from_frame(named, "y", tb.make_splits(named, "y"))[3].n_features == 3


def test_an_infinite_regression_target_is_reported_and_refused_by_name():
    "#25: check_data said nothing, loaders_from_frame accepted it, XGBoost failed in C++."
    df = frame(task="regression")
    df.loc[7, "y"] = np.inf
    report = tb.check_data(df, "y")
    found = next(f for f in report.findings if f.kind == "infinite_values")
    assert found.column == "y" and found.severity == "error" and found.data["n_infinite"] == 1
    assert not report.ok and "drop those rows" in found.advice
    assert "target_leak" not in {f.kind for f in report.findings}  # the leak check skips the bad row
    splits = tb.make_splits(df, "y", strategy="random")
    with pytest.raises(ValueError, match=r"target column 'y' holds 1 infinite value"):
        tb.loaders_from_frame(df, "y", splits)


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_an_infinite_feature_is_named(value):
    "#25: an infinite feature failed inside scikit-learn without the column's name."
    df = frame()
    df.loc[[3, 9], "b"] = value
    found = next(f for f in tb.check_data(df, "y").findings if f.kind == "infinite_values")
    assert found.column == "b" and found.data["n_infinite"] == 2 and "replace" in found.advice
    with pytest.raises(ValueError, match=r"feature column\(s\) hold infinite values: 'b' \(2\)"):
        tb.loaders_from_frame(df, "y", tb.make_splits(df, "y"))
    df["b"] = df["b"].replace([np.inf, -np.inf], np.nan)  # the advice works
    assert tb.loaders_from_frame(df, "y", tb.make_splits(df, "y"))[3].n_features > 0


def test_a_nullable_frame_with_infinite_values_is_read_too():
    df = frame()
    df["b"] = pd.array(df["b"].to_numpy(), dtype="Float64")
    df.loc[0, "b"] = np.inf
    df.loc[1, "b"] = pd.NA
    assert ("infinite_values", "b") in kinds(tb.check_data(df, "y"))


@pytest.mark.parametrize("task", ["multiclass", "binary"])
def test_a_single_class_target_is_refused_like_make_splits_does(task):
    "#25: loaders_from_frame(task='multiclass') accepted one class (classes == [1])."
    df = frame().assign(y=1)
    splits = tb.make_splits(df, "y", strategy="random")
    with pytest.raises(ValueError, match=r"target 'y' has a single class \(1\) in the frame"):
        tb.loaders_from_frame(df, "y", splits, task=task)
    two = frame().assign(y=0, t=np.arange(300))
    two.loc[295:, "y"] = 1  # the second class only in the last rows, which a time split validates on
    splits = tb.make_splits(two, "y", strategy="time", time="t")
    with pytest.raises(ValueError, match="single class .* in the training rows"):
        tb.loaders_from_frame(two, "y", splits, task=task)


def test_a_1000_level_categorical_is_reported_and_not_one_hot_encoded_into_1000_columns():
    "#25: no finding, and ~1,000 one-hot columns."
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"city": [f"c{i}" for i in rng.integers(0, 1000, n)], "x": rng.normal(size=n),
                       "y": rng.integers(0, 2, n)})
    found = next(f for f in tb.check_data(df, "y", leak_check=False).findings if f.kind == "high_cardinality")
    assert found.column == "city" and found.data["n_unique"] > 900 and found.data["max_categories"] == 50
    assert "infrequent" in found.advice and "TargetEncoder" in found.advice
    *_, prep = tb.loaders_from_frame(df, "y", tb.make_splits(df, "y"))
    assert prep.n_features == 1 + 50  # x, 49 frequent cities and one 'infrequent' column
    assert any("infrequent" in name for name in prep.preprocessor.get_feature_names_out())
    full = tb.make_preprocessor(df, "y", max_categories=None).fit(df.drop(columns="y"))
    assert len(full.get_feature_names_out()) > 900  # the old behaviour, when asked for
    with pytest.raises(ValueError, match="max_categories must be an int >= 2 or None"):
        tb.make_preprocessor(df, "y", max_categories=1)
    few = pd.DataFrame({"c": list("abcde") * 20, "y": [0, 1] * 50})
    assert not any(f.kind == "high_cardinality" for f in tb.check_data(few, "y").findings)
    assert tb.make_preprocessor(few, "y").fit(few[["c"]]).get_feature_names_out().tolist() == \
        [f"c_{v}" for v in "abcde"]  # a handful of levels: one column each, as before


def test_score_model_without_classes_reads_them_from_the_training_rows():
    "#25: score_model(..., classes=None) on a classifier raised TypeError: NoneType has no len()."
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=200)})
    df["y"] = np.where(df.a + rng.normal(0, 0.5, 200) > 0, "yes", "no")
    splits = tb.make_splits(df, "y")
    model = LogisticRegression().fit(df[["a"]].iloc[splits.train], df.y.iloc[splits.train])
    scores = tb.score_model(model.predict_proba, df, "y", splits, "binary")
    given = tb.score_model(model.predict_proba, df, "y", splits, "binary", classes=["no", "yes"])
    assert scores == given and scores["valid_roc_auc"] > 0.8  # codes in the order predict_proba uses


@pytest.mark.parametrize("task, near", [("classification", ""),
                                        ("regresion", " (did you mean 'regression'?)")])
def test_an_unknown_task_is_refused_naming_task_and_the_accepted_ones(task, near):
    "Seen: loaders_from_frame(task='classification') was accepted, and trained a classifier of unknown kind."
    df = frame()
    splits = tb.make_splits(df, "y")
    message = (f"task={task!r} is not a task trainbook knows{near}; task must be one of 'auto', 'binary', "
               "'multiclass', 'regression': 'binary' or 'multiclass' for classes")
    for call in (lambda: tb.loaders_from_frame(df, "y", splits, task=task),
                 lambda: tb.check_data(df, "y", task=task)):  # one check, one message, wherever task= goes
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value).startswith(message)
    with pytest.raises(ValueError, match=r"task='auto' is not a task trainbook knows; task must be one of "
                                         r"'binary', 'multiclass', 'regression'"):
        tb.FramePrep(None, ["a"], "y", "auto")  # a fitted prep decodes by its task: it must be a real one
    assert tb.loaders_from_frame(df, "y", splits, task="binary")[3].task == "binary"


def test_a_task_the_target_cannot_be_is_refused_at_every_task_path():
    "Seen: task='binary' on 4 classes gave FramePrep(task=binary, classes=[0, 1, 2, 3]) and an XGBoost crash."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": np.arange(120.0), "k": np.arange(120) % 4, "r": rng.normal(size=120),
                       "s": np.where(np.arange(120) % 2, "a", "b")})
    cases = {("k", "binary"): r"task='binary' but the target 'k' has 4 classes \(0, 1, 2, 3\): use task='multiclass'",
             ("r", "multiclass"): r"task='multiclass' but the target 'r' holds fractional numbers \(120 distinct",
             ("s", "regression"): r"task='regression' but the target 's' holds labels \(.*'(a|b)'\), not numbers"}
    for (target, task), said in cases.items():
        frame_ = df[["x", target]]
        splits = tb.make_splits(frame_, target, strategy="random")
        for call in (lambda: tb.loaders_from_frame(frame_, target, splits, task=task),
                     lambda: tb.fit_xgboost(frame_, target, splits, num_rounds=2, live=False, task=task),
                     lambda: tb.baseline(frame_, target, splits, task=task, models=("dummy",)),
                     lambda: tb.check_data(frame_, target, task=task)):
            with pytest.raises(ValueError, match=said):
                call()
    # what a target can be is kept: 0/1 as multiclass, integer counts as a regression
    assert tb.loaders_from_frame(df[["x", "k"]], "k", tb.make_splits(df, "k"), task="regression")[3].task == "regression"
    two = df.assign(b=df.k % 2)[["x", "b"]]
    assert tb.loaders_from_frame(two, "b", tb.make_splits(two, "b"), task="multiclass")[3].task == "multiclass"


LIST_ENTRY_POINTS = {name: call for name, call in ENTRY_POINTS.items() if name != "make_splits"}
LIST_ENTRY_POINTS["baseline"] = lambda df: tb.baseline(df, "y", tb.make_splits(frame(), "y"),
                                                       models=("dummy",))


@pytest.mark.parametrize("entry", list(LIST_ENTRY_POINTS))
def test_a_list_valued_feature_column_is_named_at_every_feature_entry_point(entry):
    "Seen: df['tags'] = [[1, 2]] * n failed in pandas' words ('unhashable type: list')."
    df = frame()
    df["tags"] = [[1, 2]] * len(df)
    df["emb"] = [np.zeros(3)] * len(df)
    said = (r"feature column\(s\) whose cells hold several values: 'tags' \(list\), 'emb' \(ndarray\)"
            r"(.|\n)*\.tolist\(\), index=df.index\)")
    with pytest.raises(TypeError, match=said):
        LIST_ENTRY_POINTS[entry](df)


def test_a_list_valued_column_left_out_as_the_message_says_trains():
    df = frame()
    splits = tb.make_splits(df, "y")
    df["tags"] = [[1, 2]] * len(df)
    *_, prep = tb.loaders_from_frame(df, "y", splits, exclude=["tags"])
    assert "tags" not in prep.columns
    assert prep.n_features == tb.loaders_from_frame(frame(), "y", splits)[3].n_features
    expanded = pd.DataFrame(df["tags"].tolist(), index=df.index).add_prefix("tags_")  # as the message says
    expanded = df.drop(columns="tags").join(expanded)
    assert {"tags_0", "tags_1"} <= set(tb.column_roles(expanded, "y"))


@pytest.mark.parametrize("entry", list(LIST_ENTRY_POINTS))
def test_an_arrow_list_struct_or_map_column_is_named_at_every_feature_entry_point(entry):
    "Seen: a list column from read_parquet(dtype_backend='pyarrow') failed with ArrowNotImplementedError."
    pa = pytest.importorskip("pyarrow")
    df = frame()
    n = len(df)
    df["l"] = pd.Series([[i, i + 1] for i in range(n)], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    df["s"] = pd.Series([{"k": i} for i in range(n)], dtype=pd.ArrowDtype(pa.struct([("k", pa.int64())])))
    df["m"] = pd.Series([[("k", i)] for i in range(n)], dtype=pd.ArrowDtype(pa.map_(pa.string(), pa.int64())))
    df["ok"] = pd.Series(np.arange(n), dtype=pd.ArrowDtype(pa.int64()))  # one value a cell: not named
    said = (r"cells hold several values: 'l' \(list<item: int64>\[pyarrow\]\), 's' \(struct<k: int64>"
            r"\[pyarrow\]\), 'm' \(map<string, int64>\[pyarrow\]\); a feature")
    with pytest.raises(TypeError, match=said):
        LIST_ENTRY_POINTS[entry](df)


def test_a_frame_with_arrow_list_columns_splits_and_its_duplicates_are_found():
    "Seen: make_splits failed with 'unhashable type: numpy.ndarray' in its duplicate audit."
    pa = pytest.importorskip("pyarrow")
    n = 40
    key = [i if i < 30 else i - 30 for i in range(n)]  # rows 30..39 copy rows 0..9
    lists = [list(range(2000)) for _ in range(n)]
    for i, cells in enumerate(lists): cells[1000] = key[i]  # rows differ in the middle only
    df = pd.DataFrame({"a": np.zeros(n), "y": [0, 1] * 20})
    df["l"] = pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    splits = tb.make_splits(df, "y", strategy="random", seed=0)
    assert len(splits.train) + len(splits.valid) == n
    found = {f.kind: f for f in splits.findings}
    assert "duplicate_rows" in found
    # numpy's text of a 2000-long array elides its middle: each valid row would look like a copy
    copied = sum(key[r] in {key[t] for t in splits.train} for r in splits.valid)
    assert 0 < copied < len(splits.valid)
    assert found["duplicate_rows"].data["n_rows"] == copied


def test_a_misspelt_role_is_named_not_a_dropped_column():
    "Probe 12: roles={'x': 'numerc'} dropped x in silence."
    df = pd.DataFrame({"x": np.arange(20.0), "c": list("ab") * 10, "y": np.arange(20) % 2})
    with pytest.raises(ValueError, match=r"roles\['x'\] = 'numerc' is not a role \(did you mean 'numeric'\?\)"):
        tb.make_preprocessor(df, "y", roles={"x": "numerc", "c": "categorical"})


@pytest.mark.parametrize("arg", ["groups", "time"])
def test_the_target_named_again_as_groups_or_time_is_refused_before_any_work(arg):
    """Probe 72: check_data(df, 'y', groups='y') said OK; make_splits(df, 'y', time='y') put class 0 in train and
    class 1 in valid, with warnings alone."""
    df = frame()
    for call in (lambda: tb.check_data(df, "y", **{arg: "y"}), lambda: tb.make_splits(df, "y", **{arg: "y"}),
                 lambda: tb.nested_splits(df, "y", **{arg: "y"}),
                 lambda: tb.audit_parts(df, {"train": np.arange(200), "valid": np.arange(200, 300)}, "y",
                                        **{arg: "y"})):
        with pytest.raises(ValueError, match=rf"^{arg}='y' is the target column: {arg}= names .*never the label"):
            call()


def test_column_name_mistakes_are_answered_with_the_name_meant():
    """Probe 72: with int column names, check_data(df, '2') said "(did you mean '2'?)"; groups=['patient'] said
    "e.g. groups='y'" (the usual name of the target)."""
    rng = np.random.default_rng(0)
    ints = pd.DataFrame({0: rng.normal(size=60), 1: rng.normal(size=60), 2: rng.integers(0, 2, 60)})
    with pytest.raises(ValueError, match=r"target column '2' not in DataFrame \(the column is named by the int 2, "
                                         r"not the text '2'\)"):
        tb.check_data(ints, "2")
    df = frame().assign(patient=np.arange(300) // 3)
    with pytest.raises(TypeError, match=r"groups must be a column's name, got a list: pass the name, "
                                        r"e.g. groups='patient'$"):
        tb.make_splits(df, "y", groups=["patient"])
    with pytest.raises(TypeError, match=r"e.g. time='<column>'$"): tb.check_data(df, "y", time=["a", "b"])
    with pytest.raises(TypeError, match=r"got a Series: pass the name, e.g. groups='patient'$"):
        tb.check_data(df, "y", groups=df.patient)
