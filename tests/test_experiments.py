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


def test_a_run_folder_where_a_run_id_goes_names_run_load(tmp_path, monkeypatch):
    "Probe 92: load_run('runs/a') on a fit's checkpoint_dir advised 'turn tracking on with tb.track()'."
    import torch
    from torch import nn
    monkeypatch.chdir(tmp_path)
    X = torch.randn(32, 4)
    tb.fit(nn.Linear(4, 2), tb.TensorLoader(X, (X[:, 0] > 0).long(), batch_size=16), loss_fn=nn.CrossEntropyLoss(),
           config=tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir="runs/a"), live=False)
    for given in ("runs/a", "runs/a/run.json", str(tmp_path / "runs" / "a")):
        with pytest.raises(ValueError, match=r"run_id: .* is a path on disk, not an MLflow run id: .*"
                                             r"loads with tb\.Run\.load\("):
            tb.load_run(given)
    with pytest.raises(ValueError, match=r"run_id: 'runs/b' looks like a path .* names nothing in"):
        tb.load_run("runs/b")
    with pytest.raises(ValueError, match=r"runs_or_ids: 'runs/a' is a path .*tb\.Run\.load\('runs/a'\) and pass the Run"):
        tb.compare_runs(["runs/a"])
    assert tb.Run.load("runs/a").step == 2  # what the advice gives
    # an id is still an id: no store here (or, with tracking on, no such run), the old answer
    with pytest.raises(ValueError, match="no tracking store|no run '0123"):
        tb.load_run("0123456789abcdef0123456789abcdef")
