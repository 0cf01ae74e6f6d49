"""fit_lightgbm / fit_catboost / fit_xgboost vs the plain library call on the same data and rounds, interleaved, CPU time.

Run: .venv/bin/python bench/gbdt_overhead.py [--rows 20000] [--rounds 200] [--repeats 5] [--libs lightgbm,catboost,xgboost]
Both sides fit the same preprocessing on the train rows (CatBoost: none, numeric columns as they are), evaluate train and valid every round and train one thread;
the wrapper also records every round into a History (through the library's callback API), runs diagnose and builds
the Run. Target: wrapper / plain <= 1.10.
"""
import argparse, statistics, time

import pandas as pd
from sklearn.datasets import make_classification

import trainbook as tb
from trainbook.data import make_preprocessor


def frames(df, sp):
    train, valid = df.iloc[sp.train], df.iloc[sp.valid]
    pre = make_preprocessor(train, "y").fit(train.drop(columns="y"))
    return pre.transform(train.drop(columns="y")), train.y.to_numpy(), pre.transform(valid.drop(columns="y")), valid.y.to_numpy()


def plain_lightgbm(df, sp, rounds):
    import lightgbm as lgb
    X, y, Xv, yv = frames(df, sp)
    dtrain = lgb.Dataset(X, label=y)
    dvalid = lgb.Dataset(Xv, label=yv, reference=dtrain)
    params = {"objective": "binary", "metric": ["binary_logloss", "auc"], "learning_rate": 0.1, "num_leaves": 31,
              "seed": 0, "verbosity": -1, "num_threads": 1}
    return lgb.train(params, dtrain, num_boost_round=rounds, valid_sets=[dtrain, dvalid], valid_names=["train", "valid"])


def plain_catboost(df, sp, rounds):
    import catboost as cb
    train, valid = df.iloc[sp.train], df.iloc[sp.valid]  # CatBoost's own way: the columns as they are (as fit_catboost)
    X, y, Xv, yv = train.drop(columns="y"), train.y.to_numpy(), valid.drop(columns="y"), valid.y.to_numpy()
    model = cb.CatBoost({"loss_function": "Logloss", "custom_metric": ["AUC"], "learning_rate": 0.1, "depth": 6,
                         "random_seed": 0, "verbose": False, "allow_writing_files": False, "thread_count": 1,
                         "iterations": rounds})
    return model.fit(cb.Pool(X, y), eval_set=cb.Pool(Xv, yv))


def plain_xgboost(df, sp, rounds):
    import xgboost as xgb
    X, y, Xv, yv = frames(df, sp)
    dtrain, dvalid = xgb.DMatrix(X, label=y), xgb.DMatrix(Xv, label=yv)
    params = {"objective": "binary:logistic", "eval_metric": ["logloss", "auc"], "tree_method": "hist", "eta": 0.1,
              "max_depth": 6, "seed": 0, "nthread": 1}
    return xgb.train(params, dtrain, num_boost_round=rounds, evals=[(dtrain, "train"), (dvalid, "valid")], verbose_eval=False)


PLAIN = {"lightgbm": plain_lightgbm, "catboost": plain_catboost, "xgboost": plain_xgboost}
ONE_THREAD = {"lightgbm": {"num_threads": 1}, "catboost": {"thread_count": 1}, "xgboost": {"nthread": 1}}


def wrapper(lib):
    fit = getattr(tb, f"fit_{lib}")
    return lambda df, sp, rounds: fit(df, "y", sp, params=ONE_THREAD[lib], num_rounds=rounds, early_stopping=None, live=False)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--libs", default="lightgbm,catboost,xgboost")
    a = ap.parse_args()
    X, y = make_classification(n_samples=a.rows, n_features=30, n_informative=10, random_state=0)
    df = pd.DataFrame(X).add_prefix("f").assign(y=y)
    sp = tb.make_splits(df, "y", seed=0)
    print(f"{a.rows} rows × 30 features, {a.rounds} rounds, 1 thread, CPU seconds, median of {a.repeats} interleaved")
    for lib in a.libs.split(","):
        runners = {"plain": PLAIN[lib], "trainbook": wrapper(lib)}
        for fn in runners.values(): fn(df, sp, 3)  # warm-up: imports, first allocations
        times = {k: [] for k in runners}
        for _ in range(a.repeats):
            for k, fn in runners.items():
                t = time.process_time()
                fn(df, sp, a.rounds)
                times[k].append(time.process_time() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"  {lib:>9}: plain {med['plain']:7.3f} s, fit_{lib} {med['trainbook']:7.3f} s, "
              f"ratio {med['trainbook'] / med['plain']:.3f}")
