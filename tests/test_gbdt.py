"LightGBM and CatBoost beside XGBoost: one boosting core, the same Run, History, early stopping, saving and diagnostics."
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine, make_classification

import trainbook as tb
from trainbook.classical import BoostedModel

pytest.importorskip("lightgbm")
pytest.importorskip("catboost")

ONE_THREAD = {"lightgbm": {"num_threads": 1}, "catboost": {"thread_count": 1}, "xgboost": {"nthread": 1}}
FIT = {"lightgbm": lambda *a, **k: tb.fit_lightgbm(*a, **k), "catboost": lambda *a, **k: tb.fit_catboost(*a, **k),
       "xgboost": lambda *a, **k: tb.fit_xgboost(*a, **k)}


def fit(lib, df, target, sp, params=None, **kw):
    return FIT[lib](df, target, sp, params={**ONE_THREAD[lib], **(params or {})}, live=False, **kw)


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(as_frame=True).frame


@pytest.mark.parametrize("lib", ["lightgbm", "catboost"])
def test_breast_cancer_best_round_and_reload(lib, cancer, tmp_path):
    sp = tb.make_splits(cancer, "target", strategy="stratified", test_size=0.2, seed=0)
    run = fit(lib, cancer, "target", sp, checkpoint_dir=tmp_path / lib)
    scores = tb.score_model(run.model.predict_proba, cancer, "target", sp, "binary", [0, 1])
    assert scores["test_roc_auc"] >= 0.97
    h = run.records
    train, valid = h.series("loss", "train"), h.series("loss", "valid")
    assert list(train.index) == list(valid.index) == list(range(1, run.step + 1))  # one train and one valid point per round
    assert len(h.series("epoch_loss", "train")) == run.step
    assert run.kind == lib and run.stopped == "early_stopping" and run.step == run.best_epoch + 1 + 50
    assert run.best_epoch == int(np.argmin(valid.to_numpy())) and run.best == valid.min()  # the best round is kept
    X = cancer.drop(columns="target")
    loaded = BoostedModel.load(run.run_dir)  # model (native format) and preprocessing saved together
    assert loaded.library == lib and loaded.best_iteration == run.best_epoch
    assert np.array_equal(loaded.predict_proba(X), run.model.predict_proba(X))
    assert not any(p.suffix in (".pkl", ".pickle") for p in run.run_dir.iterdir())


@pytest.mark.parametrize("lib", ["lightgbm", "catboost"])
def test_prediction_uses_the_best_round_not_the_last(lib, cancer):
    sp = tb.make_splits(cancer, "target", strategy="stratified", seed=0)
    run = fit(lib, cancer, "target", sp, params={"learning_rate": 0.5}, early_stopping=5)
    X = cancer.drop(columns="target").iloc[sp.valid]
    valid_loss = tb.classification_metrics(cancer.target.iloc[sp.valid], run.model.predict_proba(X))["log_loss"]
    assert valid_loss == pytest.approx(run.best, rel=1e-4)  # the model predicts as at its best round


@pytest.mark.parametrize("lib", ["lightgbm", "catboost"])
def test_overfitting_found_as_rounds_go_on(lib):
    "Deep trees on noisy labels, no early stopping: diagnose sees valid loss rise while train loss falls."
    X, y = make_classification(n_samples=400, n_features=20, n_informative=3, flip_y=0.3, random_state=0)
    df = pd.DataFrame(X).add_prefix("f").assign(y=y)
    sp = tb.make_splits(df, "y", seed=0)
    params = {"lightgbm": {"learning_rate": 0.5, "num_leaves": 255, "min_data_in_leaf": 1},
              "catboost": {"learning_rate": 0.5, "depth": 8, "l2_leaf_reg": 0}}[lib]  # no shrinkage: a clear rise
    run = fit(lib, df, "y", sp, params=params, num_rounds=80, early_stopping=None)
    valid = run.records.series("loss", "valid").to_numpy()
    assert run.stopped == "completed" and run.step == 80 and run.extra["best_iteration"] == 79  # the model: every round
    assert run.best_epoch == int(np.argmin(valid)) < 79  # the best its history holds, as fit's
    assert "overfitting" in [f.kind for f in run.findings]
    assert {"train loss", "valid loss"} <= {t.name for t in run.plot().data}


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_balanced_class_weight_lifts_the_rare_class(lib):
    X, y = make_classification(n_samples=600, n_features=8, weights=[0.9], flip_y=0.05, random_state=0)
    df = pd.DataFrame(X).add_prefix("f").assign(y=y)
    sp = tb.make_splits(df, "y", strategy="stratified", seed=0)
    plain = fit(lib, df, "y", sp, num_rounds=30, early_stopping=None)
    weighted = fit(lib, df, "y", sp, num_rounds=30, early_stopping=None, class_weight="balanced")
    X = df.drop(columns="y")
    assert weighted.model.predict_proba(X)[:, 1].mean() > 1.3 * plain.model.predict_proba(X)[:, 1].mean()


@pytest.mark.parametrize("lib", ["lightgbm", "catboost"])
@pytest.mark.parametrize("loader, task", [(load_wine, "multiclass"), (load_diabetes, "regression")])
def test_multiclass_and_regression(lib, loader, task, tmp_path):
    df = loader(as_frame=True).frame
    sp = tb.make_splits(df, "target", seed=0)
    run = fit(lib, df, "target", sp, num_rounds=40, checkpoint_dir=tmp_path)
    X = df.drop(columns="target")
    assert run.extra["task"] == task
    assert np.array_equal(BoostedModel.load(tmp_path).predict(X), run.model.predict(X))
    scores = tb.score_model(run.model.predict_proba if task == "multiclass" else run.model.predict, df, "target", sp, task,
                            run.extra["classes"])
    assert scores["valid_balanced_accuracy"] > 0.85 if task == "multiclass" else scores["valid_r2"] > 0.2


def messy(n=400, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"city": rng.choice(["oslo", "rome", "lima", None], n), "x": rng.normal(size=n)})
    df.loc[rng.uniform(size=n) < 0.1, "x"] = np.nan
    df["y"] = (df.city.isin(["oslo", "lima"]) ^ (df.x > 1)).astype(int)
    return df


def test_catboost_takes_categoricals_natively_and_lightgbm_one_hot():
    df = messy()
    sp = tb.make_splits(df, "y", seed=0)
    crun = fit("catboost", df, "y", sp, num_rounds=60)
    assert crun.model.booster.get_cat_feature_indices() == [1] and crun.records.last("auc", "valid") > 0.95
    lrun = fit("lightgbm", df, "y", sp, num_rounds=60)
    assert "city_rome" in lrun.model.prep.preprocessor.get_feature_names_out()  # one-hot, like XGBoost
    unseen = df.head(5).assign(city="paris")  # a category never seen in training still predicts
    assert crun.model.predict_proba(unseen).shape == lrun.model.predict_proba(unseen).shape == (5, 2)


def test_preprocessing_fitted_on_train_rows_only():
    "A category that only valid rows have gets no one-hot column: the encoder never saw those rows."
    df = messy()
    sp = tb.make_splits(df, "y", seed=0)
    df.loc[df.index[sp.valid[:20]], "city"] = "valid-only"
    run = fit("lightgbm", df, "y", sp, num_rounds=5)
    assert not any("valid-only" in n for n in run.model.prep.preprocessor.get_feature_names_out())


def test_baseline_takes_every_library(cancer):
    sp = tb.make_splits(cancer, "target", test_size=0.25, seed=0)
    table = tb.baseline(cancer, "target", sp, models=("dummy", "lightgbm", "catboost"))
    assert list(table.index) == ["dummy", "lightgbm", "catboost"]
    assert (table.loc[["lightgbm", "catboost"], "test_roc_auc"] > table.loc["dummy", "test_roc_auc"] + 0.3).all()


@pytest.mark.parametrize("kw, match", [
    ({"early_stopping": 0}, "early_stopping must be None or a positive int"),
    ({"num_rounds": 0}, "num_rounds must be a positive int"),
    ({"class_weight": "auto"}, "class_weight must be None or 'balanced'"),
    ({"task": "regression", "class_weight": "balanced"}, "needs a classification target"),
])
@pytest.mark.parametrize("lib", ["lightgbm", "catboost"])
def test_bad_input(lib, kw, match, cancer):
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(ValueError, match=match): fit(lib, cancer, "target", sp, **kw)


def test_baseline_refuses_unknown_models_before_fitting(cancer):
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(ValueError, match="models: each item is one of dummy, linear, xgboost, lightgbm, catboost"):
        tb.baseline(cancer, "target", sp, models=("dummy", "lgbm"))


# --- every fit_* and baseline with nullable / NA dtypes, infinite values, duplicated names --------------------------

def nullable_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"i": pd.array(rng.integers(0, 5, n), dtype="Int64"),
                       "b": pd.array(rng.random(n) > 0.5, dtype="boolean"),
                       "s": pd.array(rng.choice(["a", "b", "c"], n), dtype="string"),
                       "f": pd.array(rng.normal(size=n), dtype="Float64")})
    for c in df.columns: df.loc[df.index[::7], c] = pd.NA
    df["y"] = ((df.f.fillna(0).to_numpy(dtype=float) > 0) ^ (rng.random(n) < 0.1)).astype(int)
    return df


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
@pytest.mark.parametrize("preprocess", [True, False])
def test_nullable_dtypes_with_pd_na_in_every_library(lib, preprocess, tmp_path):
    df = nullable_frame()
    if not preprocess: df = df.drop(columns="s")  # as-is features must be numeric
    sp = tb.make_splits(df, "y", seed=0)
    run = fit(lib, df, "y", sp, num_rounds=20, preprocess=preprocess, checkpoint_dir=tmp_path)
    X = df.drop(columns="y")
    assert run.model.predict_proba(X).shape == (len(df), 2)
    assert run.records.last("loss", "valid") < 0.69  # it learned from the Float64 column with its NAs
    assert np.allclose(BoostedModel.load(run.run_dir).predict_proba(X), run.model.predict_proba(X))


def test_baseline_with_nullable_dtypes():
    df = nullable_frame()
    sp = tb.make_splits(df, "y", seed=0)
    table = tb.baseline(df, "y", sp, models=("dummy", "linear", "xgboost", "lightgbm", "catboost"))
    assert table.valid_roc_auc.drop("dummy").min() > 0.7


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost", "baseline"])
@pytest.mark.parametrize("where", ["target", "feature"])
def test_infinite_values_fail_before_any_work_naming_the_column(lib, where, tmp_path):
    df = load_diabetes(as_frame=True).frame
    column = "target" if where == "target" else "bmi"
    df.loc[df.index[[3, 17]], column] = [np.inf, -np.inf]
    sp = tb.make_splits(df, "target", seed=0)
    match = f"{where} column '{column}' has 2 infinite value\\(s\\) \\(rows 3, 17\\)"
    with pytest.raises(ValueError, match=match):
        if lib == "baseline": tb.baseline(df, "target", sp)
        else: fit(lib, df, "target", sp, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # before any work: not even the run folder


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost", "baseline"])
def test_duplicated_column_names_are_named(lib, cancer):
    df = pd.concat([cancer, cancer[["mean radius", "mean area"]]], axis=1)
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(ValueError, match="duplicated column names: 'mean radius' ×2, 'mean area' ×2"):
        if lib == "baseline": tb.baseline(df, "target", sp)
        else: fit(lib, df, "target", sp)


# --- observers: the session's (tracking) and the run's own callbacks hear every boosting run ------------------------

class Recorder(tb.Callback):
    def __init__(self): self.events, self.valid, self.run = [], [], None
    def before_fit(self, state): self.events.append("before_fit")
    def after_step(self, state): self.events.append("after_step")
    def after_validate(self, state):
        self.events.append("after_validate")
        self.valid.append(state.valid["loss"])
    def after_epoch(self, state): self.events.append("after_epoch")
    def after_fit(self, state):
        self.events.append("after_fit")
        self.run = state.run


@pytest.fixture
def session_track():
    "A stand-in for `tb.track()`: a 'track' session observer that records what it was given."
    from trainbook.events import add_session_observer, remove_session_observer
    made = []
    def factory(context):
        made.append((context, Recorder()))
        return made[-1][1]
    add_session_observer("track", factory)
    yield made
    remove_session_observer("track")


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_every_fit_is_heard_by_the_session_and_its_callbacks(lib, cancer, session_track):
    sp = tb.make_splits(cancer, "target", seed=0)
    own = Recorder()
    run = fit(lib, cancer, "target", sp, num_rounds=12, early_stopping=None, callbacks=[own])
    [(context, tracker)] = session_track
    assert context == {"kind": lib, "settings": run.extra["settings"]}  # the run's kind, what describes it
    for r in (own, tracker):
        assert r.events[0] == "before_fit" and r.events[-1] == "after_fit" and r.run is run
        assert r.events.count("after_step") == r.events.count("after_validate") == 12
        assert r.events.count("after_epoch") == 2  # every 10 rounds, and the last ones
        assert r.valid == list(run.records.series("loss", "valid").to_numpy())
    fit(lib, cancer, "target", sp, num_rounds=3, track=False)
    assert len(session_track) == 1  # track=False: the session's tracker is not attached


def test_track_true_without_a_store_fails_before_any_work(cancer, tmp_path):
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(ValueError, match="call tb.track\\(\\) first"):
        fit("lightgbm", cancer, "target", sp, track=True, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_a_callback_stop_request_ends_training_keeping_the_model(lib, cancer):
    class Prune(tb.Callback):
        def after_validate(self, state):
            if state.step == 4: state.control.request_stop("pruned")
    sp = tb.make_splits(cancer, "target", seed=0)
    run = fit(lib, cancer, "target", sp, num_rounds=50, callbacks=[Prune()])
    assert (run.stopped, run.step) == ("pruned", 4)
    assert run.model.predict_proba(cancer.drop(columns="target")).shape == (len(cancer), 2)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_ctrl_c_ends_a_boosting_run_as_interrupted_with_its_model(lib, cancer):
    """A real SIGINT to this process (as Jupyter's interrupt sends it) in round 3: training ends with the model so
    far; in a plain script (pytest is one) the Ctrl-C then goes on with the run, as fit's does, and the script's
    next run stops at its door."""
    import signal
    from helpers import ctrl_c_at, interrupted
    sp = tb.make_splits(cancer, "target", seed=0)
    before = signal.getsignal(signal.SIGINT)
    run = interrupted(fit, lib, cancer, "target", sp, num_rounds=50, callbacks=[ctrl_c_at(3)])
    assert run.step == 3 and tb.last_run() is run
    assert run.model.predict_proba(cancer.head()).shape == (5, 2)
    assert signal.getsignal(signal.SIGINT) is before  # the usual Ctrl-C is back
    with pytest.raises(KeyboardInterrupt, match="not started: a Ctrl-C stopped a run earlier in this script"):
        fit(lib, cancer, "target", sp, num_rounds=5)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_ctrl_c_in_a_notebook_cell_returns_the_boosting_run_and_stops_the_cells_next_run(lib, cancer, kernel):
    "In a kernel the interrupted run is returned (the cell shows it); the same cell's next run stops at its door."
    from helpers import ctrl_c_at, executing
    sp = tb.make_splits(cancer, "target", seed=0)
    executing(kernel, "cell 1", None)
    run = fit(lib, cancer, "target", sp, num_rounds=50, callbacks=[ctrl_c_at(3)])
    assert (run.stopped, run.step) == ("interrupted", 3)
    with pytest.raises(KeyboardInterrupt, match="a Ctrl-C stopped a run earlier in this cell"):
        fit(lib, cancer, "target", sp, num_rounds=5)
    executing(kernel, "cell 2", None)
    assert fit(lib, cancer, "target", sp, num_rounds=5).stopped == "completed"  # the next cell trains


def test_a_failing_fit_keeps_its_run_and_tells_the_observers(cancer):
    class Boom(tb.Callback):
        def after_step(self, state):
            if state.step == 2: raise RuntimeError("boom")
    seen = Recorder()
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(RuntimeError, match="boom") as e: fit("xgboost", cancer, "target", sp, callbacks=[Boom(), seen])
    assert e.value.run.stopped == "failed" and e.value.run.step == 2 and seen.run is e.value.run



class RaiseAt(tb.Callback):
    "Raises `exc` in round `step`, as a failing callback (or a Ctrl-C landing inside one) does."
    def __init__(self, step, exc): self.step, self.exc = step, exc
    def after_step(self, state):
        if state.step == self.step: raise self.exc


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
@pytest.mark.parametrize("kind, stopped", [(RuntimeError, "failed"), (KeyboardInterrupt, "interrupted")])
def test_a_boosting_run_ended_by_an_exception_reports_the_best_its_history_holds(lib, kind, stopped, cancer,
                                                                                  tmp_path):
    "As fit's failed run, and as the same run stopped by a request: its best round, in the Run and its run.json."
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(kind) as e:
        fit(lib, cancer, "target", sp, {"learning_rate": 0.8}, num_rounds=30, early_stopping=None,
            checkpoint_dir=tmp_path, callbacks=[RaiseAt(8, kind())])
    run = e.value.run
    valid = run.records.series("loss", "valid").to_numpy()
    assert run.stopped == stopped and len(valid) == 8
    assert (run.best_epoch, run.best) == (int(valid.argmin()), pytest.approx(valid.min()))
    assert run.extra["best_step"] == run.best_epoch + 1  # the plot marks it
    loaded = tb.Run.load(run.run_dir)
    assert (loaded.best, loaded.best_epoch) == (run.best, run.best_epoch)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
@pytest.mark.parametrize("kind, stopped", [(ValueError, "failed"), (KeyboardInterrupt, "interrupted")])
def test_a_callbacks_own_exception_comes_back_from_every_library(lib, kind, stopped, cancer):
    "CatBoost's callback hook would raise a CatBoostError (a text) in its place: the user's `except` would miss it."
    exc = kind("my callback's error")
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(kind) as e:
        fit(lib, cancer, "target", sp, num_rounds=20, early_stopping=None, callbacks=[RaiseAt(5, exc)])
    assert e.value is exc and tb.last_run() is exc.run
    assert (exc.run.stopped, exc.run.error, exc.run.step) == (stopped, repr(exc), 5)

def test_three_fits_share_one_signature():
    import inspect
    sigs = {lib: inspect.signature(getattr(tb, f"fit_{lib}")) for lib in ("xgboost", "lightgbm", "catboost")}
    assert sigs["xgboost"] == sigs["lightgbm"] == sigs["catboost"]
    assert {"track", "callbacks"} <= set(sigs["xgboost"].parameters)
    from trainbook.classical import fit_xgboost, BoostedModel as Old  # the old home still imports
    assert fit_xgboost is tb.fit_xgboost and Old is BoostedModel


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_a_boosting_run_folder_is_a_run_folder(lib, cancer, tmp_path):
    "run.json written, the writer's lock released at the end, and the next run given the folder takes a version folder."
    sp = tb.make_splits(cancer, "target", seed=0)
    run = fit(lib, cancer, "target", sp, num_rounds=15, checkpoint_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".", "run"))) == ["run.json"]  # no lock
    loaded = tb.Run.load(tmp_path)
    assert loaded.records.rows() == run.records.rows() and loaded.kind == lib and loaded.step == run.step == 15
    assert loaded.best == run.best and loaded.config == run.config and loaded.stopped == run.stopped
    model = (tmp_path / run.model.lib.model_file).read_bytes()
    with pytest.warns(UserWarning, match="already holds a run"):
        again = fit(lib, cancer, "target", sp, num_rounds=5, checkpoint_dir=tmp_path)
    assert again.run_dir == tmp_path / "version_1" and [f.kind for f in again.findings][-1] == "run_dir_versioned"
    assert (tmp_path / run.model.lib.model_file).read_bytes() == model  # the first run's model, untouched


# --- the splits and the classes checked against the frame, before any work ------------------------------------------

def rare_class_frame(n=300, seed=0):
    "Classes 0-2, and class 7 in the last row only, which the splits put in the valid rows."
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "y": rng.choice([0, 1, 2], n)})
    df.loc[n - 1, "y"] = 7
    sp = tb.make_splits(df, "y", strategy="random", seed=seed)
    sp.train = np.array([i for i in range(n - 1) if i % 5])
    sp.valid = np.array([i for i in range(n) if i % 5 == 0 or i == n - 1])
    return df, sp


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost", "baseline"])
def test_a_class_only_in_the_valid_rows_is_named_before_any_work(lib, tmp_path):
    "XGBoost and CatBoost failed in C++ on the code -1, LightGBM trained on it, baseline failed in scikit-learn."
    df, sp = rare_class_frame()
    match = r"valid rows hold class\(es\) \[7\] of target 'y' that the train rows lack \(1 row\(s\): 299\)"
    with pytest.raises(ValueError, match=match):
        if lib == "baseline": tb.baseline(df, "y", sp)
        else: fit(lib, df, "y", sp, num_rounds=5, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def splits_of(case, df):
    "Splits that do not belong to `df`, one way or another."
    if case == "none": return None
    if case == "longer": return tb.make_splits(pd.concat([df, df], ignore_index=True), "y", seed=0)
    if case == "shorter": return tb.make_splits(df.iloc[:100], "y", seed=0)
    if case == "positions":  # splits that did not record their frame's rows (made by hand, or by an older trainbook)
        sp = tb.make_splits(pd.concat([df, df], ignore_index=True), "y", seed=0)
        del sp.params["n_rows"]
        return sp
    sp = tb.make_splits(df, "y", seed=0)
    sp.params["n_rows"] = 250  # the frame's rows, as make_splits may record them
    return sp


@pytest.mark.parametrize("case, error, match", [
    ("none", TypeError, r"splits must be a tb.Splits from tb.make_splits\(df, target, ...\).*got NoneType"),
    ("longer", ValueError, r"splits were made on a frame of 600 rows, but df has 300"),
    ("shorter", ValueError, r"splits were made on a frame of 100 rows, but df has 300"),
    ("positions", ValueError, r"splits.train holds row position 5\d\d, out of range for a df of 300 rows"),
    ("recorded", ValueError, r"splits were made on a frame of 250 rows, but df has 300"),
])
@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost", "baseline"])
def test_splits_of_another_frame_are_named(lib, case, error, match, tmp_path):
    "Splits of a shorter frame trained on a part silently, of a longer one failed in pandas, None in an attribute."
    df, _ = rare_class_frame()
    df["y"] = df.y.clip(upper=2)
    sp = splits_of(case, df)
    with pytest.raises(error, match=match):
        if lib == "baseline": tb.baseline(df, "y", sp)
        else: fit(lib, df, "y", sp, num_rounds=5, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_splits_changed_by_hand_stay_welcome(cancer):
    "A part subsampled or moved by hand is no other frame's: only positions outside the frame are."
    sp = tb.make_splits(cancer, "target", seed=0)
    sp.train = sp.train[::2]
    run = fit("xgboost", cancer, "target", sp, num_rounds=5)
    assert run.step == 5


@pytest.mark.parametrize("lib, params, names", [
    ("xgboost", {"eval_metric": "auc"}, ["logloss", "auc"]),
    ("xgboost", {"eval_metric": ["aucpr", "error"]}, ["logloss", "aucpr", "error"]),
    ("lightgbm", {"metric": "auc"}, ["binary_logloss", "auc"]),
    ("lightgbm", {"metric": "auc,binary"}, ["binary_logloss", "auc"]),  # binary: LightGBM's name of its log loss
    ("catboost", {"eval_metric": "AUC"}, ["Logloss", "auc"]),
])
def test_a_metric_set_in_params_is_recorded_by_its_name_beside_the_loss(lib, params, names, cancer):
    "AUC was recorded as the loss (falsely `not_learning`), and early stopping followed it."
    sp = tb.make_splits(cancer, "target", strategy="stratified", seed=0)
    run = fit(lib, cancer, "target", sp, params=params, num_rounds=300, early_stopping=10)
    if lib != "catboost": assert run.extra["params"][{"xgboost": "eval_metric", "lightgbm": "metric"}[lib]] == names
    valid = run.records.series("loss", "valid")
    assert len(run.records.series(names[1].lower(), "valid")) == len(valid) == run.step  # by its own name
    X, y = cancer.drop(columns="target").iloc[sp.valid], cancer.target.iloc[sp.valid]
    log_loss = tb.classification_metrics(y, run.model.predict_proba(X))["log_loss"]
    assert run.best == pytest.approx(log_loss, rel=1e-3)  # the loss is the log loss, at the kept round
    assert "not_learning" not in [f.kind for f in run.findings]
    if lib != "catboost":  # early stopping watched the valid loss (CatBoost's eval_metric picks its best round)
        assert run.stopped == "early_stopping" and run.best_epoch == int(np.argmin(valid.to_numpy()))


def test_an_objective_of_ones_own_takes_its_first_loss_metric(cancer):
    "With the user's objective, the loss is the first of their metrics that is no score."
    sp = tb.make_splits(cancer, "target", seed=0)
    run = fit("xgboost", cancer, "target", sp, num_rounds=5,
              params={"objective": "binary:logitraw", "eval_metric": ["auc", "error"]})
    assert run.extra["params"]["eval_metric"] == ["error", "auc"]
    h = run.records
    assert len(h.series("loss", "valid")) == len(h.series("auc", "valid")) == 5 and not len(h.series("error", "valid"))


def test_overwrite_replaces_an_earlier_boosting_run_and_the_advice_names_no_other_flag(cancer, tmp_path):
    "The versioned-folder warning advised resume= and overwrite=, which fit_* did not take (a TypeError)."
    sp = tb.make_splits(cancer, "target", seed=0)
    fit("xgboost", cancer, "target", sp, num_rounds=5, checkpoint_dir=tmp_path)
    with pytest.warns(UserWarning, match="already holds a run.*pass overwrite=True") as caught:
        again = fit("lightgbm", cancer, "target", sp, num_rounds=5, checkpoint_dir=tmp_path)
    assert again.run_dir == tmp_path / "version_1"
    [advice] = [f.advice for f in again.findings if f.kind == "run_dir_versioned"]
    assert "overwrite=True" in advice and "resume" not in advice
    assert not any("resume=" in str(w.message) for w in caught)
    third = fit("lightgbm", cancer, "target", sp, num_rounds=7, checkpoint_dir=tmp_path, overwrite=True)
    assert third.run_dir == tmp_path and "run_dir_versioned" not in [f.kind for f in third.findings]
    assert not (tmp_path / "model.json").exists()  # the XGBoost run's model went with it
    assert BoostedModel.load(tmp_path).library == "lightgbm" and tb.Run.load(tmp_path).step == 7
    assert (tmp_path / "version_1" / "model.txt").is_file()  # the other run's folder: untouched


def test_numpy_ints_are_taken_and_wrong_kinds_are_named(cancer):
    sp = tb.make_splits(cancer, "target", seed=0)
    run = fit("xgboost", cancer, "target", sp, num_rounds=np.int64(6), early_stopping=np.int32(3))
    assert run.config.epochs == 6 and run.config.patience == 3 and type(run.config.epochs) is int
    for kw, match in [({"early_stopping": True}, "early_stopping must be None or a positive int"),
                      ({"num_rounds": True}, "num_rounds must be a positive int"),
                      ({"num_rounds": 5.0}, "num_rounds must be a positive int"),
                      ({"overwrite": "yes"}, "overwrite must be True or False")]:
        with pytest.raises(TypeError, match=match): fit("xgboost", cancer, "target", sp, **kw)
    with pytest.raises(TypeError, match=r"params must be a dict of xgboost's parameters.*got list \(dict\(params\)"):
        tb.fit_xgboost(cancer, "target", sp, params=[("eta", 0.1)], live=False)



@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
@pytest.mark.parametrize("live", ["no", "false", 1])
def test_a_live_that_is_no_setting_is_refused_before_any_work(lib, live, cancer, tmp_path):
    """Probe 91: fit_*(live="no") trained the whole run, "no" read as truthy (live curves on), while fit, Recorder,
    keras_callback and fit_flax refuse it. The one check of every trainer's live= (check_live), before the folder."""
    sp = tb.make_splits(cancer, "target", seed=0)
    with pytest.raises(ValueError, match=r"live must be 'auto', True or False .*got"):
        FIT[lib](cancer, "target", sp, params=ONE_THREAD[lib], num_rounds=2, live=live, checkpoint_dir=tmp_path / "r")
    assert not (tmp_path / "r").exists()

def time_frame(n=300, seed=0):
    "A naive datetime, a tz-aware one and a duration, each with a missing value; y follows the time of day."
    rng = np.random.default_rng(seed)
    when = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 90 * 24, n), unit="h")
    df = pd.DataFrame({"x": rng.normal(size=n), "when": when,
                       "when_tz": when.tz_localize("UTC").tz_convert("Europe/Paris"),
                       "wait": pd.to_timedelta(when.hour * 60, unit="m")})
    df["y"] = ((when.hour >= 12) ^ (rng.random(n) < 0.05)).astype(int)
    for i, c in enumerate(["when", "when_tz", "wait"]): df.loc[df.index[i], c] = pd.NaT
    return df


@pytest.mark.parametrize("column,role",
                         [("when", "datetime"), ("when_tz", "datetime"), ("wait", "timedelta")])
def test_catboost_takes_datetime_and_duration_features_as_the_others_do(column, role, tmp_path):
    df = time_frame()[["x", column, "y"]]
    sp = tb.make_splits(df, "y", seed=0)
    run = fit("catboost", df, "y", sp, num_rounds=40, checkpoint_dir=tmp_path)
    X = df.drop(columns="y")  # the raw column, as in training
    assert run.model.prep.roles[column] == role  # served as a datetime / duration, never as a number
    assert run.records.last("loss", "valid") < 0.4  # it learned from the time column
    loaded = BoostedModel.load(run.run_dir)
    assert np.array_equal(loaded.predict_proba(X), run.model.predict_proba(X))
    assert set(loaded.predict(X)) <= {0, 1}


def test_catboost_takes_iso_date_text_as_the_dates_it_is(tmp_path):
    "Probe 76: a CSV's timestamps (ISO text, each one distinct) went to CatBoost as a category of one row each."
    df = time_frame()[["x", "when", "y"]]
    text = df.assign(when=df.when.dt.strftime("%Y-%m-%dT%H:%M:%S").where(df.when.notna(), None))
    sp = tb.make_splits(df, "y", seed=0)
    as_text, as_dates = fit("catboost", text, "y", sp, num_rounds=40), fit("catboost", df, "y", sp, num_rounds=40)
    assert as_text.model.prep.roles["when"] == "datetime"
    assert np.allclose(as_text.model.predict_proba(text.drop(columns="y")),
                       as_dates.model.predict_proba(df.drop(columns="y")))


def test_catboost_serving_a_naive_datetime_to_a_tz_aware_model_names_the_column():
    df = time_frame()[["x", "when_tz", "y"]]
    run = fit("catboost", df, "y", tb.make_splits(df, "y", seed=0), num_rounds=10)
    X = df.drop(columns="y")
    tokyo = X.assign(when_tz=X.when_tz.dt.tz_convert("Asia/Tokyo"))  # the same instants: the same answers
    assert np.allclose(run.model.predict_proba(tokyo), run.model.predict_proba(X))
    with pytest.raises(ValueError, match="'when_tz': time zone: datetime64.* in serving, tz-aware"):
        run.model.predict(X.assign(when_tz=X.when_tz.dt.tz_localize(None)))


def test_baseline_catboost_with_datetime_and_duration_features():
    df = time_frame()
    sp = tb.make_splits(df, "y", seed=0)
    table = tb.baseline(df, "y", sp, models=("dummy", "xgboost", "lightgbm", "catboost"))
    assert (table.valid_roc_auc.drop("dummy") > 0.9).all()


def three_animals(n=600):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 4))
    df = pd.DataFrame(X, columns=list("abcd"))
    df["y"] = np.array(["cat", "dog", "eel"])[np.argmax(X[:, :3] + rng.normal(size=(n, 3)) * 0.7, 1)]
    return df


def test_objectives_that_predict_margins_or_classes_still_give_class_probabilities(cancer):
    "binary:logitraw predicts margins, multi:softmax class codes: predict_proba is their sigmoid, softmax."
    import xgboost as xgb
    from scipy.special import expit, softmax
    sp = tb.make_splits(cancer, "target", seed=0)
    run = fit("xgboost", cancer, "target", sp, num_rounds=30, early_stopping=None,
              params={"objective": "binary:logitraw"})
    X = cancer.drop(columns="target").iloc[sp.valid]
    margin = run.model.booster.predict(xgb.DMatrix(run.model.prep.transform(X).numpy()), output_margin=True)
    assert margin.min() < 0 < 1 < margin.max()  # margins, not probabilities
    proba = run.model.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba[:, 1], expit(margin), atol=1e-6)
    assert np.array_equal(run.model.predict(X), (margin > 0).astype(int))  # split at margin 0, not at 0.5
    df = three_animals()
    sp = tb.make_splits(df, "y", strategy="stratified", seed=0)
    run = fit("xgboost", df, "y", sp, num_rounds=30, early_stopping=None,
              params={"objective": "multi:softmax"})
    X = df.drop(columns="y").iloc[sp.valid]
    margins = run.model.booster.predict(xgb.DMatrix(run.model.prep.transform(X).numpy()), output_margin=True)
    proba = run.model.predict_proba(X)
    assert proba.shape == (len(X), 3) and np.allclose(proba, softmax(margins, axis=1), atol=1e-6)
    labels = run.model.predict(X)
    assert set(labels) == {"cat", "dog", "eel"} and (labels == df.y.iloc[sp.valid]).mean() > 0.6
    loaded = BoostedModel(run.model.booster, run.model.prep, run.model.best_iteration)  # from the booster
    assert np.array_equal(loaded.predict_proba(X), proba)


@pytest.mark.parametrize("lib, objective", [("xgboost", "binary:hinge"), ("xgboost", "reg:squarederror"),
                                            ("lightgbm", "regression"), ("lightgbm", "xentlambda"),
                                            ("catboost", "RMSE"), ("xgboost", "multi:softprob"),
                                            ("lightgbm", "multiclassova")])
def test_a_classifier_objective_without_class_probabilities_is_refused_before_any_work(lib, objective, cancer,
                                                                                      tmp_path):
    sp = tb.make_splits(cancer, "target", seed=0)
    key = "loss_function" if lib == "catboost" else "objective"
    with pytest.raises(ValueError, match=rf"params\['{key}'\]='{objective}' gives no binary class probabilit"
                                         r"ies.*or use (?!.*multi)"):  # the advice: binary objectives only
        fit(lib, cancer, "target", sp, params={key: objective}, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before the run folder is made


def test_catboost_focal_loss_gives_probabilities(cancer):
    sp = tb.make_splits(cancer, "target", seed=0)
    run = fit("catboost", cancer, "target", sp, num_rounds=20,
              params={"loss_function": "Focal:focal_alpha=0.5;focal_gamma=2"})
    X = cancer.drop(columns="target").iloc[sp.valid]
    features = run.model.lib.features(run.model.prep, X)
    raw = run.model.booster.predict(features, prediction_type="RawFormulaVal", ntree_end=run.best_epoch + 1)
    from scipy.special import expit
    assert np.allclose(run.model.predict_proba(X)[:, 1], expit(raw))  # the focal loss' probability, not raw


def test_a_boosting_run_keeps_the_settings_that_describe_it(cancer):
    "Its rounds, patience, seed and class_weight: no torch field (lr, batch_size) it never used."
    sp = tb.make_splits(cancer, "target", seed=0)
    for lib in ("xgboost", "lightgbm", "catboost"):
        run = fit(lib, cancer, "target", sp, num_rounds=7, early_stopping=3, class_weight="balanced", seed=2)
        assert run.extra["settings"] == {"epochs": 7, "patience": 3, "seed": 2, "task": "binary",
                                         "class_weight": "balanced", "preprocess": True, "positive_class": 1}
        assert tb.Run.from_dict(run.to_dict()).extra["settings"] == run.extra["settings"]  # run.json has them


def test_a_boosting_run_never_writes_over_your_own_model_json(cancer, tmp_path):
    "Probe 28: your own model.json and prep.skops alone in a folder are no run: fit_xgboost wrote over them."
    sp = tb.make_splits(cancer, "target", seed=0)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "model.json").write_text("my model")
    (mine / "prep.skops").write_text("my prep")
    with pytest.raises(FileExistsError, match="holds model.json, prep.skops, which no trainbook run wrote"):
        fit("xgboost", cancer, "target", sp, num_rounds=5, checkpoint_dir=mine)
    assert (mine / "model.json").read_text() == "my model" and (mine / "prep.skops").read_text() == "my prep"
    # beside an earlier torch run: a version folder of its own (nothing of yours replaced); overwrite: refused
    (mine / "last.pt").write_bytes(b"an earlier run")
    run = fit("xgboost", cancer, "target", sp, num_rounds=5, checkpoint_dir=mine)
    assert run.run_dir.name == "version_1" and (mine / "model.json").read_text() == "my model"
    with pytest.raises(FileExistsError, match="holds model.json, prep.skops"):
        fit("xgboost", cancer, "target", sp, num_rounds=5, checkpoint_dir=mine, overwrite=True)
    assert (mine / "last.pt").read_bytes() == b"an earlier run"


def rare_positives(n=2000, seed=0, signal=True):
    "About 7% positives; with `signal` one strong feature, else pure noise features."
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-(-5.0 + 3.0 * df.a)))).astype(int)
    return df if signal else df.assign(a=rng.normal(size=n))


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_balanced_weights_judge_the_valid_loss_weighted_as_the_training_was(lib):
    "A balanced model leans to the rare class: on the plain valid log loss it lost to the plain class shares and was "
    "called `not_learning` although it ranked well. The valid rows weigh as the train rows do, in its record, early "
    "stopping and the constant predictor; pure-noise features are still `not_learning`."
    from sklearn.metrics import log_loss
    df = rare_positives()
    sp = tb.make_splits(df, "y", test_size=0.25, seed=0)
    per_class = tb.class_weights(df.y.iloc[sp.train].to_numpy()).numpy()
    run = fit(lib, df, "y", sp, num_rounds=150, class_weight="balanced")
    yv = df.y.iloc[sp.valid].to_numpy()
    proba = run.model.predict_proba(df.iloc[sp.valid].drop(columns="y"))
    # the recorded (early-stopping) valid loss is the weighted one, at the best round the model predicts with
    assert run.best == pytest.approx(log_loss(yv, proba, sample_weight=per_class[yv]), rel=1e-4)
    assert "not_learning" not in [f.kind for f in run.findings]
    noise = fit(lib, rare_positives(signal=False), "y", sp, num_rounds=150, class_weight="balanced")
    found = [f for f in noise.findings if f.kind == "not_learning"]
    assert len(found) == 1 and "weighted class shares" in found[0].message
    assert found[0].data["constant_loss"] == pytest.approx(np.log(2))  # balanced: equal shares


def test_loss_vs_constant_weighs_rows_by_their_class():
    from trainbook.metrics import loss_vs_constant
    y = np.array([0] * 6 + [1] * 2)
    w = np.array([8 / 12, 8 / 4])  # balanced: each class weighs the same in total
    shares = loss_vs_constant(y, y, np.full(8, 0.5), "binary", class_weight=w)
    assert shares["constant_loss"] == pytest.approx(np.log(2)) and shares["difference"] == pytest.approx(0)
    p = np.where(y == 1, 0.8, 0.3)
    c = loss_vs_constant(y, y, p, "binary", class_weight=w)
    want = -(6 * w[0] * np.log(0.7) + 2 * w[1] * np.log(0.8)) / (6 * w[0] + 2 * w[1])
    assert c["loss"] == pytest.approx(want) and c["loss_name"] == "weighted log loss"
    plain = loss_vs_constant(y, y, p, "binary")  # equal weights: the plain means and std(ddof=1) / sqrt(n)
    d = -np.log(np.where(y == 1, 0.8, 0.7)) + np.log(np.where(y == 1, 0.25, 0.75))
    assert plain["difference_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(8))
    assert loss_vs_constant(y, y, p, "binary", class_weight=[1.0, 1.0]) == {**plain, "loss_name": "weighted log loss"}
    with pytest.raises(ValueError, match="one weight per class"): loss_vs_constant(y, y, p, "binary", class_weight=[1.0])


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_a_boolean_column_served_as_text_is_parsed_by_every_library(lib, tmp_path):
    "CatBoost's preprocessing put a bool among the numbers, so 'True'/'False' from a CSV were 'not numbers'."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "flag": rng.random(300) < 0.4})
    df["y"] = ((df.a > 0) ^ df.flag).astype(int)
    sp = tb.make_splits(df, "y", seed=0)
    run = fit(lib, df, "y", sp, num_rounds=20, checkpoint_dir=tmp_path)
    X = df.iloc[sp.valid].drop(columns="y")
    model = BoostedModel.load(tmp_path)  # the schema as saved
    want = run.model.predict_proba(X)
    for words in ({True: "True", False: "False"}, {True: "yes", False: "no"}):
        np.testing.assert_array_equal(model.predict_proba(X.assign(flag=X.flag.map(words))), want)
    with pytest.raises(ValueError, match="'flag': .*not booleans"):
        model.predict_proba(X.assign(flag="maybe"))
    assert model.prep.roles["flag"] == "boolean"  # served as make_preprocessor's booleans are


def test_a_model_ahead_of_the_constant_predictor_by_2_to_3_standard_errors_is_a_weak_signal_not_not_learning():
    "Probe 62: a model of ROC-AUC 0.877, 2.9 SEs ahead of the constant predictor, was told its features carry no signal."
    from trainbook.gbdt_findings import constant_finding
    rng = np.random.default_rng(0)
    y_train, y_valid = rng.integers(0, 2, 400), rng.integers(0, 2, 200)
    noise = rng.normal(0, 0.05, 200)
    seen = []
    for shift in (0.0, 0.015, 0.02, 0.03):  # towards the right class: from no signal to a clear one
        p = np.clip(0.5 + shift * (2 * y_valid - 1) + noise, 0.01, 0.99)
        c = tb.metrics.loss_vs_constant(y_train, y_valid, p, "binary")
        z = -c["difference"] / c["difference_se"]  # standard errors ahead: -1.7, 1.3, 2.3, 4.3
        found = [(f.kind, f.severity) for f in constant_finding(y_train, y_valid, p, "binary")]
        assert found == ([] if z > 3 else [("weak_signal", "info")] if z > 2 else [("not_learning", "warning")]), z
        seen.append(tuple(found))
    assert seen == [(("not_learning", "warning"),)] * 2 + [(("weak_signal", "info"),), ()]


def test_a_whole_boosting_run_is_judged_by_the_constant_predictor_not_the_train_loss_rule():
    """Probe 64: a run 2.8 and 3.4 standard errors ahead of the constant predictor still got the torch loop's
    not_learning ('the training loss barely fell ... try lr_find'), beside a weak_signal saying the opposite; a run
    with no signal is not_learning by the constant predictor's test."""
    found = {}
    for coef, seed in [(0.35, 0), (0.4, 3), (0.0, 0)]:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(1500, 3))
        df = pd.DataFrame(X, columns=list("abc"))
        df["y"] = (rng.random(1500) < 1 / (1 + np.exp(-coef * X[:, 0]))).astype(int)
        sp = tb.make_splits(df, "y", strategy="stratified", seed=0)
        run = tb.fit_xgboost(df, "y", sp, params={"max_depth": 2, "eta": 0.05, "nthread": 1}, num_rounds=200,
                             early_stopping=30, live=False)
        found[coef] = {f.kind: f.message for f in run.findings}
    assert "not_learning" not in found[0.35] and "not_learning" not in found[0.4] and "weak_signal" in found[0.4]
    assert "constant predictor" in found[0.0]["not_learning"]


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_binary_logitraw_records_the_log_loss_of_its_probabilities(cancer, class_weight):
    """Probe 114: XGBoost computes logloss on binary:logitraw's raw margins: the recorded train loss went below 0,
    early stopping kept round 2 on it, and run.best said 0.104 where the kept model's log loss was 0.476. Its logloss
    and error are computed on the margins' probabilities (weighted as the rows are), as binary:logistic's."""
    from sklearn.metrics import log_loss
    sp = tb.make_splits(cancer, "target", test_size=0.2, seed=0)
    run = fit("xgboost", cancer, "target", sp, num_rounds=100, early_stopping=5, class_weight=class_weight,
              params={"objective": "binary:logitraw", "eval_metric": ["logloss", "error"]})
    valid = cancer.iloc[sp.valid]
    y = valid.target.to_numpy()
    weight = None if class_weight is None else tb.class_weights(cancer.target.iloc[sp.train].to_numpy()).numpy()[y]
    p = run.model.predict_proba(valid)[:, 1]
    assert run.best == pytest.approx(log_loss(y, p, sample_weight=weight), rel=1e-4)  # the kept model's own
    wrong = (p > 0.5) != y
    error = wrong.mean() if weight is None else (weight * wrong).sum() / weight.sum()
    assert run.records.series("error", "valid").iloc[run.best_epoch] == pytest.approx(error, rel=1e-4)
    assert run.records.series("loss", "train").min() > 0  # a log loss
    same = fit("xgboost", cancer, "target", sp, num_rounds=100, early_stopping=5, class_weight=class_weight)
    assert run.best == pytest.approx(same.best, rel=0.1)  # binary:logistic trains the same log loss


def test_params_xgboost_would_compute_wrongly_or_fail_on_are_refused_by_name(cancer):
    "A Python function as eval_metric reached XGBoost (a C++ trace); rmse of logitraw's margins means nothing."
    sp = tb.make_splits(cancer, "target", test_size=0.2, seed=0)
    def my_metric(predt, dtrain): return "mine", 0.0
    for metric in (my_metric, ["auc", my_metric]):
        with pytest.raises(ValueError, match=r"params\['eval_metric'\] holds a Python function \(my_metric\).*"
                                             r"custom_metric="):
            fit("xgboost", cancer, "target", sp, num_rounds=5, params={"eval_metric": metric})
    with pytest.raises(ValueError, match=r"params\['eval_metric'\] 'rmse' with objective 'binary:logitraw'"):
        fit("xgboost", cancer, "target", sp, num_rounds=5, params={"objective": "binary:logitraw", "eval_metric": "rmse"})


@pytest.mark.parametrize("lib, key, takes", [("lightgbm", "metric", "feval="),
                                             ("catboost", "eval_metric", "get_final_error"),
                                             ("catboost", "custom_metric", "get_final_error")])
def test_a_python_function_as_a_metric_is_refused_by_name_in_every_library(lib, key, takes, cancer):
    """Probe 119, findings 4 and 5: fit_lightgbm trained on with a function as params['metric'] (never called, yet
    listed in run.extra['params']); fit_catboost failed on one as eval_metric with CatBoost's raw errors ("'list'
    object has no attribute '_jited'"). Each is refused before any work, naming the parameter and what it takes,
    as fit_xgboost refuses one; CatBoost's own metric objects (evaluate, is_max_optimal, get_final_error) still pass."""
    sp = tb.make_splits(cancer, "target", test_size=0.2, seed=0)
    calls = []
    def my_metric(preds, data):
        calls.append(1)
        return "mine", 0.5, False
    for metric in (my_metric, ["AUC" if lib == "catboost" else "auc", my_metric]):
        with pytest.raises(ValueError, match=rf"params\['{key}'\] holds a Python function \(my_metric\).*{takes}"):
            fit(lib, cancer, "target", sp, num_rounds=5, params={key: metric})
    assert calls == []

    class Mine:  # CatBoost's user-defined metric: an object, not a function
        def is_max_optimal(self): return False
        def evaluate(self, approxes, target, weight): return 0.0, 1.0
        def get_final_error(self, error, weight): return error / weight
    assert tb.gbdt.booster_library("catboost").refused_params({"eval_metric": Mine()}) is None


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_without_early_stopping_the_best_is_the_lowest_valid_loss_and_the_model_holds_every_round(lib, cancer):
    """Probe 114: without early stopping run.best and best_epoch were the last round's, while lower valid losses were
    recorded earlier. They are the history's best, as fit's; the model is the last round's (extra best_iteration)."""
    sp = tb.make_splits(cancer, "target", test_size=0.2, seed=0)
    run = fit(lib, cancer, "target", sp, num_rounds=100, early_stopping=None)
    valid = run.records.series("loss", "valid").to_numpy()
    assert run.stopped == "completed" and run.step == 100
    assert run.best_epoch == int(np.argmin(valid)) < 99 and run.best == valid.min()  # (this data overfits late)
    assert run.extra["best_step"] == run.best_epoch + 1  # the plot marks the best round
    assert run.extra["best_iteration"] == run.model.best_iteration == 99  # the model predicts with every round
