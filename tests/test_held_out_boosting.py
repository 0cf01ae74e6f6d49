"Held-out testers' findings on boosting, its model folders and the classification metrics, each pinned down."
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import trainbook as tb
from trainbook import data as tbdata
from trainbook.gbdt import BoostedModel, ModelFileError
from trainbook.gbdt_inputs import frame_xy
from trainbook.data import class_order
from trainbook.metrics import class_weights, classification_metrics, loss_vs_constant

pytest.importorskip("lightgbm")
pytest.importorskip("catboost")

ONE_THREAD = {"lightgbm": {"num_threads": 1}, "catboost": {"thread_count": 1}, "xgboost": {"nthread": 1}}


def signal_frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=list("abc"))
    df["cat"] = rng.choice(["u", "v", "w"], n)
    df["y"] = (df.a + (df.cat == "u") + rng.normal(size=n) * .5 > 0.5).astype(int)
    return df


@pytest.fixture(scope="module")
def catboost_model():
    df = signal_frame()
    sp = tb.make_splits(df, "y", seed=0)
    run = tb.fit_catboost(df, "y", sp, params=ONE_THREAD["catboost"], num_rounds=30, live=False)
    return run.model, df.iloc[sp.valid].drop(columns="y")


# f1: CatBoost's rows go through the training-schema check the other libraries' rows go through

def test_catboost_parses_a_number_sent_as_text_as_the_number(catboost_model):
    model, rows = catboost_model
    as_text = rows.assign(a=rows.a.astype(str))
    np.testing.assert_allclose(model.predict_proba(as_text), model.predict_proba(rows))


@pytest.mark.parametrize("change, column", [(lambda v: v.assign(a="oops"), "'a'"),
                                            (lambda v: v.drop(columns="a"), "a")])
def test_catboost_refuses_junk_or_a_missing_column_naming_it(catboost_model, change, column):
    model, rows = catboost_model
    with pytest.raises(ValueError, match="do not fit the training schema") as e: model.predict_proba(change(rows))
    assert column in str(e.value)


# f2: the positive class of two text labels is the rarer one, or the one named; metrics refuse labels clearly

def fraud_frame(n=800, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=list("abc"))
    df["y"] = np.where(df.a + rng.normal(size=n) * 0.7 > 1.6, "fraud", "ok")
    return df


def test_the_rarer_text_label_is_the_positive_class_and_pos_label_names_another():
    y = pd.Series(["ok"] * 9 + ["fraud"])
    assert class_order(y) == ["ok", "fraud"]
    assert class_order(y, pos_label="ok") == ["fraud", "ok"]
    assert class_order(pd.Series([1, 0, 0, 0])) == [0, 1]  # numbers: the greater stays positive
    with pytest.raises(ValueError, match="pos_label='nope' is not a class"): class_order(y, pos_label="nope")
    assert frame_xy(pd.DataFrame({"y": y}), "y", "binary")[2] == ["ok", "fraud"]


def test_baseline_scores_pr_auc_for_the_rare_text_class():
    df = fraud_frame()
    share = (df.y == "fraud").mean()
    sp = tb.make_splits(df, "y", seed=0)
    tab = tb.baseline(df, "y", sp, models=("dummy",))
    valid_share = (df.y.iloc[sp.valid] == "fraud").mean()
    assert share < 0.2 and tab.loc["dummy", "valid_pr_auc"] == pytest.approx(valid_share)
    ok = tb.baseline(df, "y", sp, models=("dummy",), pos_label="ok")  # the other class, named
    assert ok.loc["dummy", "valid_pr_auc"] == pytest.approx(1 - valid_share)


def test_tune_threshold_names_y_true_on_text_labels():
    from trainbook.classical import tune_threshold
    with pytest.raises(ValueError, match="y_true must be class codes"):
        tune_threshold(np.array(["ok", "fraud", "ok"]), np.array([0.2, 0.9, 0.1]))
    assert tune_threshold(np.array([0, 1, 0, 1]), np.array([0.2, 0.9, 0.1, 0.7]))[1] == pytest.approx(1.0)


def test_a_boosted_run_records_its_positive_class_and_takes_pos_label():
    df = fraud_frame()
    sp = tb.make_splits(df, "y", seed=0)
    run = tb.fit_xgboost(df, "y", sp, params=ONE_THREAD["xgboost"], num_rounds=5, live=False)
    assert run.extra["positive_class"] == "fraud" and run.model.prep.classes == ["ok", "fraud"]
    run = tb.fit_xgboost(df, "y", sp, params=ONE_THREAD["xgboost"], num_rounds=5, live=False, pos_label="ok")
    assert run.extra["positive_class"] == "ok"
    with pytest.raises(ValueError, match="pos_label='OK' is not a class"):
        tb.fit_xgboost(df, "y", sp, num_rounds=5, live=False, pos_label="OK")


def test_classification_metrics_pos_label_and_label_errors():
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.1).astype(int)
    p = np.clip(y * 0.3 + rng.random(200) * 0.7, 0, 1)
    m1 = classification_metrics(y, p)
    m0 = classification_metrics(1 - y, 1 - p, pos_label=0)  # the same class scored, coded 0
    assert m1 == pytest.approx(m0)
    with pytest.raises(ValueError, match="y_true must be class codes 0..k-1, got 'ok', 'fraud'"):
        classification_metrics(np.where(y == 1, "fraud", "ok")[::-1], p)
    with pytest.raises(ValueError, match=r"y_true holds codes 1..3, but 3 classes.*pass y - 1"):
        classification_metrics(np.array([1, 2, 3, 1]), np.full((4, 3), 1 / 3))
    # NaN probabilities (a model that blew up) are named, not scikit-learn's "Input contains NaN"
    p[[3, 7]] = np.nan
    for call in (lambda: classification_metrics(y, p), lambda: tb.tune_threshold(y, p)):
        with pytest.raises(ValueError, match=r"proba holds non-finite values \(NaN or ±inf\) in 2 of 200 rows "
                                             r"\(first: row 3\)"):
            call()


def test_class_weights_names_its_argument_on_text_or_one_based_labels():
    with pytest.raises(ValueError, match="y must be class codes"): class_weights(["a", "b", "b"])
    with pytest.raises(ValueError, match=r"y: class code\(s\) \[0\] have no rows \(labels 1..k\? pass y - 1\)"):
        class_weights([1, 2, 2])
    np.testing.assert_allclose(class_weights([0, 0, 0, 1]).numpy(), [2 / 3, 2.0])


# f3: the patience rounds after the best round are no overfitting; a long rise without early stopping is

def overfit_frame(n=2000):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"x{i}" for i in range(10)])
    df["y"] = (df.x0 + df.x1 + rng.normal(size=n) * 0.5 > 0).astype(int)
    return df


def test_early_stopping_patience_is_not_called_overfitting_but_a_long_rise_is():
    df = overfit_frame()
    sp = tb.make_splits(df, "y", seed=0)
    params = {**ONE_THREAD["lightgbm"], "learning_rate": 0.3}
    stopped = tb.fit_lightgbm(df, "y", sp, params=params, num_rounds=300, early_stopping=50, live=False)
    assert stopped.stopped == "early_stopping"
    assert "overfitting" not in [f.kind for f in stopped.findings]
    ran_on = tb.fit_lightgbm(df, "y", sp, params=params, num_rounds=300, early_stopping=None, live=False)
    assert "overfitting" in [f.kind for f in ran_on.findings]


# f4: a boosted.json of another format is refused, naming both formats

@pytest.mark.parametrize("fmt", ["trainbook.boosted/99", "sklearn.pickle/1"])
def test_another_boosted_format_is_refused(catboost_model, tmp_path, fmt):
    model, _ = catboost_model
    folder = model.save(tmp_path / "m")
    meta = json.loads((folder / "boosted.json").read_text())
    (folder / "boosted.json").write_text(json.dumps({**meta, "format": fmt}))
    with pytest.raises(ModelFileError, match=f"format '{fmt}', but this trainbook reads 'trainbook.boosted/2'"):
        BoostedModel.load(folder)


# f7: a misspelt parameter is refused before any work

@pytest.mark.parametrize("fit, typo, near", [(tb.fit_lightgbm, "num_leavs", "num_leaves"),
                                             (tb.fit_xgboost, "max_dept", "max_depth")])
def test_a_misspelt_parameter_is_refused_with_the_nearest_name(fit, typo, near, tmp_path):
    df = signal_frame()
    sp = tb.make_splits(df, "y", seed=0)
    with pytest.raises(ValueError, match=f"params\\['{typo}'\\] is not a .* parameter \\(did you mean '{near}'\\?\\)"):
        fit(df, "y", sp, params={typo: 2}, num_rounds=5, live=False, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before any work


def test_known_names_and_aliases_pass_and_a_missing_list_blocks_nothing(monkeypatch):
    df = signal_frame()
    sp = tb.make_splits(df, "y", seed=0)
    tb.fit_lightgbm(df, "y", sp, params={"num_threads": 1, "min_child_samples": 5, "subsample": 0.9},
                    num_rounds=3, live=False)
    tb.fit_xgboost(df, "y", sp, params={"nthread": 1, "eta": 0.3, "eval_metric": "aucpr", "subsample": 0.9},
                   num_rounds=3, live=False)
    def no_list(self, params): raise AttributeError("no parameter table in this version")
    monkeypatch.setattr(tb.gbdt.LightGBMLibrary, "unknown_params", no_list)
    tb.fit_lightgbm(df, "y", sp, params={"num_threads": 1, "num_leavs": 2}, num_rounds=3, live=False)


# f8: a save that fails on the way leaves the model saved before loadable; a file path is refused

def test_a_failed_save_keeps_the_old_model_loadable(catboost_model, tmp_path, monkeypatch):
    model, rows = catboost_model
    df = signal_frame(seed=1)
    sp = tb.make_splits(df, "y", seed=0)
    new = tb.fit_xgboost(df, "y", sp, params=ONE_THREAD["xgboost"], num_rounds=5, live=False).model
    folder = tmp_path / "m"
    new.save(folder)
    before = BoostedModel.load(folder).predict_proba(rows)
    def full_disk(self, path, *a, **k): raise OSError(28, "No space left on device")
    monkeypatch.setattr(tbdata.FramePrep, "save", full_disk)
    with pytest.raises(OSError, match="No space left"): model.save(folder)  # a catboost model over xgboost's
    monkeypatch.undo()
    np.testing.assert_array_equal(BoostedModel.load(folder).predict_proba(rows), before)
    assert sorted(p.name for p in folder.iterdir()) == ["boosted.json", "model.json", "prep.skops"]


def test_saving_to_a_file_path_names_the_argument(catboost_model, tmp_path):
    model, _ = catboost_model
    path = tmp_path / "a_file"
    path.write_text("x")
    with pytest.raises(NotADirectoryError, match="folder=.*a_file.* is a file"): model.save(path)


# f9: a model no better than the constant predictor is named

def test_a_pure_noise_target_is_not_learning_and_a_signal_is_not():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(1500, 5)), columns=list("abcde"))
    df["y"] = rng.integers(0, 2, 1500)
    sp = tb.make_splits(df, "y", seed=0)
    noise = tb.fit_xgboost(df, "y", sp, params=ONE_THREAD["xgboost"], num_rounds=300, live=False)
    found = [f for f in noise.findings if f.kind == "not_learning"]
    assert len(found) == 1 and "constant predictor" in found[0].message
    df = signal_frame()
    sp = tb.make_splits(df, "y", seed=0)
    signal = tb.fit_xgboost(df, "y", sp, params=ONE_THREAD["xgboost"], num_rounds=50, live=False)
    assert "not_learning" not in [f.kind for f in signal.findings]


def test_loss_vs_constant_measures_the_difference_and_its_noise():
    y = np.array([0, 1, 1, 0, 1, 0, 0, 0])
    same = loss_vs_constant(y, y, np.full(8, 3 / 8), "binary")
    assert same["difference"] == pytest.approx(0) and same["difference_se"] == pytest.approx(0)
    better = loss_vs_constant(y, y, np.where(y == 1, 0.9, 0.1), "binary")
    assert better["difference"] < 0 and better["constant_loss"] == pytest.approx(same["loss"])
    reg = loss_vs_constant(np.arange(4.0), np.arange(4.0), np.full(4, 1.5), "regression")
    assert reg["difference"] == pytest.approx(0)


# a category never seen in training is warned of when a boosted model predicts, as transform_for_serving warns

@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_predict_warns_of_categories_unseen_in_training(library, tmp_path):
    df = signal_frame(200)
    sp = tb.make_splits(df, "y", seed=0)
    fit = getattr(tb, f"fit_{library}")
    model = fit(df, "y", sp, params=ONE_THREAD[library], num_rounds=5, live=False, checkpoint_dir=tmp_path).model
    rows = df.drop(columns="y").head(5)
    for m in (model, BoostedModel.load(tmp_path)):  # the categories travel with the saved model
        with pytest.warns(UserWarning, match="unseen_categories \\[cat\\]: 5 row\\(s\\).*'NEVER_SEEN'"):
            m.predict(rows.assign(cat="NEVER_SEEN"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # known categories: not a word
            m.predict_proba(rows)


def test_int_categories_served_as_floats_are_read_as_new_and_the_warning_says_to_cast(tmp_path):
    # 1.0 for a trained 1 (one NaN makes an int column float): the model matches categories by text, so its
    # predictions change; the warning is true, and its advice (cast back) gives the trained predictions
    rng = np.random.default_rng(0)
    store = rng.choice([1, 2, 3], 300)
    df = pd.DataFrame({"x": rng.normal(size=300), "store": pd.Categorical(store)})
    df["y"] = (store == 2).astype(int)
    sp = tb.make_splits(df, "y", strategy="random", seed=0)
    model = tb.fit_xgboost(df, "y", sp, params=ONE_THREAD["xgboost"], num_rounds=20, live=False,
                           checkpoint_dir=tmp_path).model
    rows = df.drop(columns="y").head(6)
    floats = rows.astype({"store": float})
    with pytest.warns(UserWarning, match=r"6 of these rows equal a training category as a number.*"
                                         r"'(\d)\.0' is not '\1'.*astype\('Int64'\)"):
        p_float = model.predict_proba(floats)
    assert not np.allclose(p_float, model.predict_proba(rows))  # read as new: the warning is no false alarm
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cast as the advice says: the trained predictions, not a word
        cast = floats.astype({"store": "Int64"})
        np.testing.assert_allclose(model.predict_proba(cast), model.predict_proba(rows))
    with pytest.warns(UserWarning, match="unseen_categories") as caught:  # a new number: no cast would help
        model.predict_proba(rows.astype({"store": float}).assign(store=4.0))
    assert not any("as a number" in str(w.message) for w in caught)
