"Reading runs back (trainbook.experiments): compare_runs over the params every kind of run carries."
import numpy as np
import pandas as pd
import pytest

import trainbook as tb
from trainbook.experiments import differing

pytest.importorskip("plotly")


def test_differing_compares_list_and_dict_params_by_their_text():
    "Seen: compare_runs on xgboost runs raised TypeError: unhashable type: 'list' (eval_metric: ['logloss', 'auc'])."
    same = {"eval_metric": ["logloss", "auc"], "lr": 0.1, "opts": {"a": 1, "b": [2]}}
    assert differing([same, dict(same)]) == []
    other = {**same, "eval_metric": ["logloss"], "opts": {"b": [2], "a": 1}}  # a dict's order is no difference
    assert differing([same, other]) == ["eval_metric"]
    assert differing([same, {"lr": 0.1}]) == ["eval_metric", "opts"]  # a missing value differs


def test_compare_runs_on_xgboost_runs_with_a_list_valued_param(tmp_path):
    pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    df["y"] = (df.a > 0).astype(int)
    sp = tb.make_splits(df, "y", seed=0)
    r1 = tb.fit_xgboost(df, "y", sp, num_rounds=8, early_stopping=None, live=False)
    r2 = tb.fit_xgboost(df, "y", sp, params={"max_depth": 2}, num_rounds=8, early_stopping=None,
                        checkpoint_dir=str(tmp_path / "xgb"), live=False)
    assert any(isinstance(v, list) for v in r1.extra["params"].values())  # what made the old code crash
    cmp = tb.compare_runs([r1, r2])
    assert "xgboost.max_depth" in cmp.table.columns  # the params as they are recorded, named by their library
    assert len(cmp.figure.data) == 2 and "xgboost.max_depth=2" in cmp.figure.data[1].name
    assert np.allclose(cmp.figure.data[1].y, r2.records.series("loss", "valid").to_numpy())
    loaded = tb.compare_runs([tb.Run.load(tmp_path / "xgb")])  # a run read from its folder
    assert len(loaded.figure.data) == 1
