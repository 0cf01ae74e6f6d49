"""fit_xgboost (preprocessing + per-round History callback) vs plain xgboost.train on the same data and rounds, interleaved.

Run: .venv/bin/python bench/xgboost_overhead.py [--rows 20000] [--rounds 200] [--repeats 5]
Both sides preprocess with the same ColumnTransformer fitted on the train rows, build DMatrix objects and
train with train/valid evaluation each round; fit_xgboost also records every round into a History.
"""
import argparse, statistics, time

import numpy as np
import pandas as pd
import xgboost as xgb
from sklearn.datasets import make_classification

import trainbook as tb
from trainbook.data import make_preprocessor


def plain(df, sp, rounds, params):
    train, valid = df.iloc[sp.train], df.iloc[sp.valid]
    pre = make_preprocessor(train, "y").fit(train.drop(columns="y"))
    dtrain = xgb.DMatrix(pre.transform(train.drop(columns="y")), label=train.y)
    dvalid = xgb.DMatrix(pre.transform(valid.drop(columns="y")), label=valid.y)
    return xgb.train(params, dtrain, num_boost_round=rounds, evals=[(dtrain, "train"), (dvalid, "valid")], verbose_eval=False)


def ours(df, sp, rounds, params):
    return tb.fit_xgboost(df, "y", sp, params=params, num_rounds=rounds, early_stopping=None, live=False)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    X, y = make_classification(n_samples=a.rows, n_features=30, n_informative=10, random_state=0)
    df = pd.DataFrame(X).add_prefix("f").assign(y=y)
    sp = tb.make_splits(df, "y", seed=0)
    params = {"objective": "binary:logistic", "eval_metric": ["logloss", "auc"], "tree_method": "hist", "eta": 0.1,
              "max_depth": 6, "seed": 0, "nthread": 1}
    runners = {"plain xgboost.train": plain, "fit_xgboost": ours}
    for fn in runners.values(): fn(df, sp, 5, params)  # warm-up
    times = {k: [] for k in runners}
    for _ in range(a.repeats):
        for k, fn in runners.items():
            t = time.perf_counter(); fn(df, sp, a.rounds, params); times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"xgboost {xgb.__version__}: {a.rows} rows × 30 features, {a.rounds} rounds, 1 thread, median of {a.repeats} interleaved")
    for k, v in med.items(): print(f"  {k:>20}: {v * 1000:8.1f} ms")
    print(f"  ratio fit_xgboost / plain: {med['fit_xgboost'] / med['plain xgboost.train']:.3f}")
