"Classical ML on the same footing: XGBoost recorded like a torch run, baselines, leakage-safe (nested) CV, imbalance tools."
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.linear_model import LogisticRegression

import trainbook as tb
from trainbook.classical import BoostedModel


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(as_frame=True).frame


def test_fit_xgboost_on_breast_cancer(cancer, tmp_path):
    sp = tb.make_splits(cancer, "target", strategy="stratified", test_size=0.2, seed=0)
    run = tb.fit_xgboost(cancer, "target", sp, live=False, checkpoint_dir=tmp_path / "xgb")
    scores = tb.score_model(run.model.predict_proba, cancer, "target", sp, "binary", [0, 1])
    assert scores["test_roc_auc"] >= 0.97
    h = run.records
    assert len(h.series("loss", "train")) == len(h.series("loss", "valid")) == run.step  # one point per round each
    valid = h.series("loss", "valid").to_numpy()
    assert run.stopped == "early_stopping" and run.step == run.best_epoch + 1 + 50
    assert run.best_epoch == int(np.argmin(valid))  # early stopping kept the best round
    loaded = BoostedModel.load(run.run_dir)  # model and preprocessor saved together
    assert np.allclose(loaded.predict_proba(cancer.drop(columns="target").head(20)),
                       run.model.predict_proba(cancer.drop(columns="target").head(20)))


def test_xgboost_history_feeds_diagnose_and_plot():
    "Deep trees on noisy labels overfit as boosting goes on: diagnose sees it in the same History a torch run writes."
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=400, n_features=20, n_informative=3, flip_y=0.3, random_state=0)
    df = pd.DataFrame(X).add_prefix("f").assign(y=y)
    sp = tb.make_splits(df, "y", seed=0)
    run = tb.fit_xgboost(df, "y", sp, params={"eta": 0.5, "max_depth": 8, "min_child_weight": 0},
                         num_rounds=80, early_stopping=None, live=False)
    assert "overfitting" in [f.kind for f in run.findings]
    names = {t.name for t in run.plot().data}
    assert {"train loss", "valid loss"} <= names


@pytest.mark.parametrize("loader, key", [(load_breast_cancer, "test_roc_auc"), (load_wine, "test_balanced_accuracy"),
                                         (load_diabetes, "test_r2")])
def test_baseline_dummy_is_worst(loader, key):
    df = loader(as_frame=True).frame
    sp = tb.make_splits(df, "target", test_size=0.25, seed=0)
    table = tb.baseline(df, "target", sp)
    assert list(table.index) == ["dummy", "linear", "xgboost"]
    assert table[key].idxmin() == "dummy" and table.loc["linear", key] > table.loc["dummy", key] + 0.2


class RecordingClassifier(BaseEstimator, ClassifierMixin):
    "Remembers the row ids it was fitted on and scored on (column 0 carries the id)."
    log = []
    def __init__(self, C=1.0): self.C = C
    def fit(self, X, y):
        X = np.asarray(X); self.classes_ = np.unique(y); self.fit_ids_ = set(X[:, 0].astype(int))
        self.model_ = LogisticRegression(C=self.C, max_iter=500).fit(X[:, 1:], y); return self
    def predict_proba(self, X):
        X = np.asarray(X); RecordingClassifier.log.append((self.fit_ids_, set(X[:, 0].astype(int))))
        return self.model_.predict_proba(X[:, 1:])
    def decision_function(self, X): return self.predict_proba(X)[:, 1]
    def predict(self, X): return self.classes_[self.predict_proba(X).argmax(1)]


def test_nested_cv_never_puts_a_group_on_both_sides():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"id": np.arange(n), "x": rng.normal(size=n), "g": rng.integers(0, 30, n)})
    df["y"] = (df.x + rng.normal(scale=0.5, size=n) > 0).astype(int)
    RecordingClassifier.log = []
    res = tb.nested_cv(RecordingClassifier(), {"C": [0.1, 1.0]}, df, "y", groups="g", outer=3, inner=2, preprocess=False)
    assert len(res["scores"]) == 3 and len(res["params"]) == 3
    group = dict(zip(df.id, df.g))
    assert len(RecordingClassifier.log) >= 3 * 2 * 2
    for fit_ids, scored_ids in RecordingClassifier.log:
        assert not {group[i] for i in fit_ids} & {group[i] for i in scored_ids}


class RecordingScaler(TransformerMixin, BaseEstimator):
    "A preprocessor that records the rows it was fitted on."
    fitted = []
    def fit(self, X, y=None): RecordingScaler.fitted.append(set(np.asarray(X)[:, 0].astype(int))); return self
    def transform(self, X): return np.asarray(X, dtype=float)[:, 1:]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # the recording preprocessor does not scale
def test_cross_validation_preprocessing_never_sees_the_held_out_fold(cancer):
    df = cancer.assign(row=np.arange(len(cancer)))[["row"] + list(cancer.columns)]
    sp = tb.make_splits(df, "target", n_folds=4, seed=0)
    RecordingScaler.fitted = []
    cv = tb.cross_validate(LogisticRegression(max_iter=3000), df, "target", sp, scoring="roc_auc", preprocessor=RecordingScaler())
    assert len(RecordingScaler.fitted) == 4 and cv.loc["mean", "roc_auc"] > 0.95
    for fitted, (tr, va) in zip(RecordingScaler.fitted, sp.folds):
        assert fitted == set(tr) and not fitted & set(va)


def test_threshold_tuned_on_validation_only():
    rng = np.random.default_rng(0)
    y = (rng.uniform(size=2000) < 0.1).astype(int)
    proba = np.clip(0.3 * y + rng.uniform(0, 0.5, 2000), 0, 1)
    t, f1 = tb.tune_threshold(y, proba, "f1")
    assert 0.3 < t < 0.6 and f1 >= tb.classification_metrics(y, proba)["f1"]
    tb_, bal = tb.tune_threshold(y, proba, "balanced_accuracy")
    assert bal >= tb.classification_metrics(y, proba)["balanced_accuracy"]
    t2, recall = tb.tune_threshold(y, proba, "recall_at_precision", min_precision=0.9)
    assert recall > 0.5
    with pytest.raises(ValueError, match="metric must be"): tb.tune_threshold(y, proba, "auc")
    assert tb.pr_curve_figure(y, proba, t).data


def test_imbalance_tools_on_torch_side():
    w = tb.class_weights(torch.tensor([0] * 90 + [1] * 10))
    assert torch.allclose(w, torch.tensor([100 / 180, 5.0]))
    logits, t = torch.randn(16), torch.randint(0, 2, (16,)).float()
    assert tb.focal_loss(logits, t, gamma=0) == pytest.approx(torch.nn.functional.binary_cross_entropy_with_logits(logits, t).item())
    assert tb.focal_loss(logits, t, gamma=2) < tb.focal_loss(logits, t, gamma=0)


def test_compare_nn_and_baselines(cancer):
    sp = tb.make_splits(cancer, "target", test_size=0.2, seed=0)
    table = tb.baseline(cancer, "target", sp, models=("dummy", "linear"))
    dl_train, dl_valid, dl_test, prep = tb.loaders_from_frame(cancer, "target", sp, batch_size=64)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(prep.n_features, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    tb.fit(net, dl_train, dl_valid, loss_fn=torch.nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=5, lr=1e-2))
    both, fig = tb.compare(table, {"mlp": tb.score_torch(net, {"valid": dl_valid, "test": dl_test}, "binary")})
    assert list(both.index) == ["dummy", "linear", "mlp"] and both.loc["mlp", "test_roc_auc"] > 0.95
    assert {t.name for t in fig.data} >= {"valid", "test"}


@pytest.mark.parametrize("make, match", [
    (lambda df: (df.assign(target=df.target.map({0: "a", 1: "b"})), {"task": "regression"}), "task=.regression. but the target .target. holds labels"),
    (lambda df: (df.assign(target=1), {}), "single class"),
    (lambda df: (df.assign(city="x"), {"preprocess": False}), "'city' are not numeric and preprocess=False"),
])
def test_bad_input(cancer, make, match):
    df, kw = make(cancer)
    sp = tb.make_splits(df, "target", strategy="random", seed=0)
    with pytest.raises(ValueError, match=match): tb.fit_xgboost(df, "target", sp, live=False, **kw)


def test_baseline_takes_one_model_by_name_and_names_a_wrong_models(cancer):
    "models='xgboost' was iterated letter by letter ('got x')."
    sp = tb.make_splits(cancer, "target", seed=0)
    assert list(tb.baseline(cancer, "target", sp, models="dummy").index) == ["dummy"]
    with pytest.raises(TypeError, match="models must be a list of model names"):
        tb.baseline(cancer, "target", sp, models=None)
    # two models of one name: the table kept the second alone, silently (probe 21)
    from sklearn.linear_model import LogisticRegression
    with pytest.raises(ValueError, match="the name.s. 'lr' appear more than once"):
        tb.baseline(cancer, "target", sp, models=[("lr", LogisticRegression(C=1)), ("lr", LogisticRegression())])


def test_a_class_only_in_the_test_rows_is_named_by_baseline_and_score_model(cancer):
    "baseline scores the test rows too: a class the train rows lack failed in scikit-learn as {-1}."
    df = cancer.assign(target=cancer.target.astype(str))
    sp = tb.make_splits(df, "target", test_size=0.2, seed=0)
    df.loc[df.index[sp.test[:2]], "target"] = "other"
    with pytest.raises(ValueError, match=r"test rows hold class\(es\) \['other'\] of target 'target' that the train"):
        tb.baseline(df, "target", sp, models=("dummy",))
    from sklearn.dummy import DummyClassifier
    model = DummyClassifier().fit(df.drop(columns="target").iloc[sp.train], df.target.iloc[sp.train])
    with pytest.raises(ValueError, match=r"test rows hold class\(es\) \['other'\]"):
        tb.score_model(model.predict_proba, df, "target", sp, "binary")


def test_cross_validate_and_score_model_refuse_splits_of_another_frame(cancer):
    longer = tb.make_splits(pd.concat([cancer, cancer], ignore_index=True), "target", seed=0)
    with pytest.raises(ValueError, match="splits were made on a frame of 1138 rows, but df has 569"):
        tb.cross_validate(LogisticRegression(max_iter=2000), cancer, "target", longer)
    with pytest.raises(TypeError, match="splits must be a tb.Splits"):
        tb.score_model(lambda X: np.zeros(len(X)), cancer, "target", None, "binary")


def test_an_estimator_class_is_refused_naming_the_argument_before_any_fit(cancer, monkeypatch):
    "models=[('lr', LogisticRegression)] (the class) failed in scikit-learn's clone, after the other models fitted."
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    sp = tb.make_splits(cancer, "target", seed=0)
    def no_fit(self, *args, **kwargs): raise AssertionError("a model was fitted before the class was refused")
    monkeypatch.setattr(Pipeline, "fit", no_fit)
    with pytest.raises(TypeError, match=r"models \('lr'\): LogisticRegression is a class.*"
                                        r"pass an instance: LogisticRegression\(\)"):
        tb.baseline(cancer, "target", sp, models=["dummy", ("lr", LogisticRegression)])
    with pytest.raises(TypeError, match=r"^estimator: .*pass an instance: LogisticRegression\(\)"):
        tb.cross_validate(LogisticRegression, cancer, "target", sp)
    with pytest.raises(TypeError, match=r"^preprocessor: .*pass an instance: StandardScaler\(\)"):
        tb.cross_validate(LogisticRegression(), cancer, "target", sp, preprocessor=StandardScaler)
    with pytest.raises(TypeError, match=r"^estimator: .*pass an instance: LogisticRegression\(\)"):
        tb.nested_cv(LogisticRegression, {"C": [1.0]}, cancer, "target", outer=2, inner=2)
    with pytest.raises(TypeError, match=r"got the class LogisticRegression"):  # not even in a list
        tb.baseline(cancer, "target", sp, models=LogisticRegression)


def test_ctrl_c_while_baseline_boosts_stops_baseline_instead_of_scoring_the_partial_model(cancer):
    "fit_xgboost turns a real SIGINT into a run 'interrupted' at round 3; baseline must not go on as if complete."
    import signal
    from trainbook.events import add_session_observer, remove_session_observer
    from helpers import ctrl_c_at
    sp = tb.make_splits(cancer, "target", seed=0)
    before = signal.getsignal(signal.SIGINT)
    add_session_observer("press_ctrl_c", lambda context: ctrl_c_at(3))
    try:
        with pytest.raises(KeyboardInterrupt, match="Ctrl-C while 'xgboost' trained") as e:
            tb.baseline(cancer, "target", sp, models=("xgboost", "dummy"))
    finally: remove_session_observer("press_ctrl_c")
    assert e.value.run.stopped == "interrupted" and e.value.run.step == 3  # the partial run, not a table row
    assert signal.getsignal(signal.SIGINT) is before  # the next Ctrl-C interrupts as usual


def test_the_frame_given_where_the_estimator_goes_is_named_with_the_calls_order():
    "nested_cv(df, 'y') bound df to estimator: Python's own error named df and target as missing."
    df = pd.DataFrame({"x": np.arange(60.0), "y": np.arange(60) % 2})
    with pytest.raises(TypeError, match=r"the estimator comes first, nested_cv\(estimator, param_grid, df, target\)"):
        tb.nested_cv(df, "y", outer=2, inner=2)
    with pytest.raises(TypeError, match=r"nested_cv needs df and target"):
        tb.nested_cv(LogisticRegression(), {"C": [1.0]}, df)
    splits = tb.make_splits(df, "y", seed=0)
    with pytest.raises(TypeError, match=r"the estimator comes first, cross_validate\(estimator, df, target"):
        tb.cross_validate(df, "y", splits, LogisticRegression())


def test_two_text_labels_have_one_positive_class_in_the_loaders_the_baseline_and_cross_validate():
    "'yes' is the majority and sorts last: the rarer 'no' is code 1 in the loaders too, as in the baseline (probe 12)."
    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    df = pd.DataFrame({"x": x, "y": np.where(x + rng.normal(size=400) > -1.0, "yes", "no")})
    assert (df.y == "yes").mean() > 0.7
    splits = tb.make_splits(df, "y", seed=0)
    *_, prep = tb.loaders_from_frame(df, "y", splits, batch_size=64)
    assert prep.classes == ["yes", "no"] and prep.encode_target(pd.Series(["no", "yes"])).tolist() == [1, 0]
    *_, named = tb.loaders_from_frame(df, "y", splits, batch_size=64, pos_label="yes")
    assert named.classes == ["no", "yes"]
    scores = tb.cross_validate(LogisticRegression(), df, "y", splits)  # its default scorers (average_precision)
    assert scores.loc["mean", "roc_auc"] > 0.6 and scores.loc["mean", "average_precision"] > 0


def test_a_scored_part_without_a_class_is_said_once_in_plain_words_not_by_sklearn():
    import warnings
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"x": rng.normal(size=n), "day": np.arange(n)})
    df["y"] = ((np.arange(n) < 300) & (rng.random(n) < 0.3)).astype(int)  # no positives in the late valid rows
    sp = tb.make_splits(df, "y", time="day")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        table = tb.baseline(df, "y", sp, models=["dummy", "linear", "xgboost"])
    assert table["valid_roc_auc"].isna().all()
    said = [str(w.message) for w in got]
    ours = [m for m in said if "lacks a class" in m]
    assert len(ours) == 1 and "valid has no rows of class(es) 1" in ours[0] and "NaN" in ours[0], said
    assert ours[0].startswith("a scored part lacks a class of target 'y'")
    assert not [w for w in got if "sklearn" in w.filename or "positive" in str(w.message)], said
    with warnings.catch_warnings(record=True) as got:  # score_model alone says it too
        warnings.simplefilter("always")
        tb.score_model(lambda X: np.full((len(X), 2), 0.5), df, "y", sp, "binary")
    assert [str(w.message) for w in got if "sklearn" not in w.filename] == ours
    assert not [w for w in got if "sklearn" in w.filename]


@pytest.mark.parametrize("kind", ["text", "numeric"])
def test_cross_validate_names_a_missing_target_value(kind):
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    df["y"] = np.where(df.a > 0.5, "pos", "neg") if kind == "text" else df.a * 2.0
    sp = tb.make_splits(df, "y", n_folds=3, seed=0)
    df.loc[5, "y"] = np.nan
    with pytest.raises(ValueError, match="target column 'y' has missing values: drop those rows first"):
        tb.cross_validate(LogisticRegression() if kind == "text" else Ridge(), df, "y", sp)


def test_compare_makes_a_model_name_of_two_tables_distinct_and_says_so(cancer):
    sp = tb.make_splits(cancer, "target", seed=0)
    full = tb.baseline(cancer, "target", sp, models=("dummy", "linear"))
    small = tb.baseline(cancer[["mean radius", "target"]], "target", sp, models=("dummy", "linear"))
    with pytest.warns(UserWarning, match=r"compare: .*'dummy', 'linear'.* in more than one table"):
        table, fig = tb.compare(full, small, {"mlp": {"valid_roc_auc": 0.9}})
    assert table.index.tolist() == ["dummy (table 1)", "linear (table 1)", "dummy (table 2)",
                                    "linear (table 2)", "mlp"]
    assert list(fig.data[0].x) == table.index.tolist()  # the chart keeps them apart too
    assert table.loc["linear (table 2)", "valid_roc_auc"] == small.loc["linear", "valid_roc_auc"]
    with pytest.raises(ValueError, match="compare: table 1 names 'dummy' twice"):
        tb.compare(pd.concat([full, full]))


def test_a_misspelled_scorer_is_refused_naming_scoring_before_any_fit(cancer, monkeypatch):
    "Probe 44: scoring='acuracy' failed in scikit-learn after the first fold's fit, naming neither scoring= nor 'accuracy'."
    sp = tb.make_splits(cancer, "target", n_folds=3, seed=0)
    def no_fit(self, *args, **kwargs): raise AssertionError("a model was fitted before the scorer was refused")
    monkeypatch.setattr(LogisticRegression, "fit", no_fit)
    refused = r"scoring='acuracy' is not a scikit-learn scorer \(did you mean 'accuracy'\?\)"
    with pytest.raises(ValueError, match=refused):
        tb.cross_validate(LogisticRegression(), cancer, "target", sp, scoring="acuracy")
    with pytest.raises(ValueError, match=refused):  # one name of a list
        tb.cross_validate(LogisticRegression(), cancer, "target", sp, scoring=["roc_auc", "acuracy"])
    with pytest.raises(ValueError, match=refused):  # was scikit-learn's InvalidParameterError listing ~50 names
        tb.nested_cv(LogisticRegression(), {"C": [1.0]}, cancer, "target", outer=2, inner=2, scoring="acuracy")


def test_compare_refuses_a_metric_no_column_has_naming_the_ones_it_has():
    "Probe 44: compare(metric='roc_acu') returned a chart without bars, silently."
    t = pd.DataFrame({"valid_roc_auc": [0.5, 0.6], "valid_average_precision": [0.4, 0.5]}, index=["dummy", "linear"])
    with pytest.raises(ValueError, match=r"metric='roc_acu': .*\(did you mean 'roc_auc'\?\); "
                                         r"its metrics: average_precision, roc_auc"):
        tb.compare(t, metric="roc_acu")
    assert len(tb.compare(t, metric="average_precision")[1].data) == 1  # a metric the table has: its bars


def fraud_frame(n=300, seed=0):
    "Two text labels, 'fraud' the rarer: the positive class, code 1."
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    df["y"] = np.where(df.a + rng.normal(size=n) > 1.0, "fraud", "ok")
    return df


@pytest.mark.parametrize("scoring", ["average_precision", "f1"])
def test_nested_cv_codes_two_text_labels_as_cross_validate_does(scoring):
    "Probe 60: nested_cv passed 'fraud'/'ok' to scikit-learn: pos_label=1 failed, after every inner grid search."
    df = fraud_frame()
    coded = df.assign(y=(df.y == "fraud").astype(int))
    got = tb.nested_cv(LogisticRegression(), {"C": [0.1, 1.0]}, df, "y", outer=3, inner=2, scoring=scoring)
    want = tb.nested_cv(LogisticRegression(), {"C": [0.1, 1.0]}, coded, "y", outer=3, inner=2, scoring=scoring)
    np.testing.assert_array_equal(got["scores"], want["scores"])
    assert got["params"] == want["params"]  # chosen on real inner scores, not on NaN


def test_a_scorer_that_cannot_score_the_target_is_refused_before_any_fit(cancer, monkeypatch):
    "F1 of one positive class on three classes failed after the fits (nested_cv: after every grid search)."
    wine = load_wine(as_frame=True).frame
    sp = tb.make_splits(wine, "target", n_folds=3, seed=0)
    def no_fit(self, *args, **kwargs): raise AssertionError("a model was fitted before the scorer was refused")
    monkeypatch.setattr(LogisticRegression, "fit", no_fit)
    refused = r"scoring='f1' cannot score the multiclass target 'target': .*average.*e\.g\. 'f1_macro'"
    with pytest.raises(ValueError, match=refused):
        tb.cross_validate(LogisticRegression(), wine, "target", sp, scoring=["f1_macro", "f1"])
    with pytest.raises(ValueError, match=refused):
        tb.nested_cv(LogisticRegression(), {"C": [1.0]}, wine, "target", outer=2, inner=2, scoring="f1")
    with pytest.raises(ValueError, match="nested_cv scores by one scorer"):
        tb.nested_cv(LogisticRegression(), {"C": [1.0]}, cancer, "target", outer=2, inner=2,
                     scoring=["roc_auc", "f1"])


def test_nested_cv_and_cross_validate_give_the_sample_std_of_the_fold_scores(cancer):
    "Probe 60: nested_cv's std was ddof=0, cross_validate's ddof=1: the same scores, two spreads."
    nested = tb.nested_cv(LogisticRegression(max_iter=2000), {"C": [1.0]}, cancer, "target", outer=3, inner=2)
    assert nested["std"] == pytest.approx(np.std(nested["scores"], ddof=1))
    cv = tb.cross_validate(LogisticRegression(max_iter=2000), cancer, "target",
                           tb.make_splits(cancer, "target", n_folds=3, seed=0))
    assert cv.loc["std", "roc_auc"] == pytest.approx(np.std(cv.loc[[0, 1, 2], "roc_auc"], ddof=1))


def test_compare_takes_a_cross_validate_table_as_one_model_with_its_std():
    "Probe 60: two cross_validate tables became rows '0 (table 1)' ... 'std (table 2)' and a chart without bars."
    df = fraud_frame()
    sp = tb.make_splits(df, "y", n_folds=3, seed=0)
    a = tb.cross_validate(LogisticRegression(), df, "y", sp)
    b = tb.cross_validate(LogisticRegression(C=1e-4), df, "y", sp)
    table, fig = tb.compare({"C=1": a, "C=1e-4": b})
    assert table.index.tolist() == ["C=1", "C=1e-4"]
    assert table.loc["C=1e-4", "cv_roc_auc"] == b.loc["mean", "roc_auc"]
    assert table.loc["C=1", "cv_average_precision_std"] == a.loc["std", "average_precision"]
    assert len(fig.data) == 1 and list(fig.data[0].error_y.array) == list(table["cv_roc_auc_std"])
    with pytest.warns(UserWarning, match=r"'LogisticRegression' in more than one table.*pass \{name: table\}"):
        table, _ = tb.compare(a, b)
    assert table.index.tolist() == ["LogisticRegression (table 1)", "LogisticRegression (table 2)"]
    mean_only, _ = tb.compare({"lr": a.loc[[0, 1, 2, "mean"]]})  # no std row: no std column
    assert "cv_roc_auc_std" not in mean_only.columns and mean_only.loc["lr", "cv_roc_auc"] == a.loc["mean", "roc_auc"]
    with pytest.raises(TypeError, match="compare: table 1 maps 'lr' to a DataFrame that is no cross_validate"):
        tb.compare({"lr": pd.DataFrame({"valid_roc_auc": [0.5]}, index=["dummy"])})
    # the metrics an error lists are their whole names, not what follows their first underscore
    with pytest.raises(ValueError, match=r"its metrics: average_precision, balanced_accuracy, roc_auc$"):
        tb.compare({"C=1": a, "C=1e-4": b}, metric="roc_acu")
    bare = {"m": {"roc_auc": 0.9, "balanced_accuracy": 0.8}}  # no '<split>_': named whole, apart
    with pytest.raises(ValueError, match=r"its metrics: none; columns not named '<split>_<metric>' "
                                         r"\(split: train, valid, test, cv\): roc_auc, balanced_accuracy$"):
        tb.compare(bare, metric="roc_auc")


def test_compare_draws_the_metric_named_whole():
    "Probe 63: metric='accuracy' drew balanced_accuracy too ('precision': average_precision); 'auc' drew two metrics."
    table = pd.DataFrame({"valid_accuracy": [0.8, 0.7], "valid_balanced_accuracy": [0.6, 0.65],
                          "valid_roc_auc": [0.9, 0.85], "valid_pr_auc": [0.5, 0.4]}, index=["a", "b"])
    _, fig = tb.compare(table, metric="accuracy")
    assert [list(t.y) for t in fig.data] == [[0.8, 0.7]]
    with pytest.raises(ValueError, match="no column '<split>_auc'"):
        tb.compare(table, metric="auc")
    _, fig = tb.compare(table)  # the usual first: roc_auc
    assert [list(t.y) for t in fig.data] == [[0.9, 0.85]]


def test_a_probability_scorer_of_a_regression_target_is_refused_with_trainbooks_message():
    "Probe 63: scoring='roc_auc' on a regression target gave a bare AttributeError about a DummyRegressor."
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=60)})
    df["r"] = df.a * 2 + rng.normal(size=60)
    sp = tb.make_splits(df, "r", strategy="random", n_folds=3)
    with pytest.raises(ValueError, match="scoring='roc_auc' cannot score the regression target 'r'"):
        tb.cross_validate(Ridge(), df, "r", sp, scoring="roc_auc")
