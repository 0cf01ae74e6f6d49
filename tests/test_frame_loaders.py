"From a frame to loaders: preprocessing fitted on train rows only, labels mapped, serving reproduces training."
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes

import trainbook as tb
from trainbook.data import FramePrep


@pytest.fixture(scope="module")
def cancer():
    df = load_breast_cancer(as_frame=True).frame
    df["kind"] = np.where(df.target == 1, "benign", "malignant")  # string classes
    df["size"] = pd.cut(df["mean area"], 3, labels=["s", "m", "l"]).astype(str)
    return df.drop(columns="target")


def test_preprocessor_sees_only_train_rows(cancer):
    sp = tb.make_splits(cancer, "kind", test_size=0.2, seed=0)
    # plant huge values in valid and test rows: a scaler fitted on them would move
    df = cancer.copy()
    df.loc[df.index[np.r_[sp.valid, sp.test]], "mean radius"] = 1e6
    dl_train, dl_valid, dl_test, prep = tb.loaders_from_frame(df, "kind", sp, batch_size=32)
    scaler = prep.preprocessor.named_transformers_["num"][-1]
    imputer = prep.preprocessor.named_transformers_["num"].named_steps["simpleimputer"]
    col = prep.preprocessor.transformers_[0][2].index("mean radius")
    assert scaler.mean_[col] == pytest.approx(cancer["mean radius"].iloc[sp.train].mean())
    assert imputer.statistics_[col] == pytest.approx(cancer["mean radius"].iloc[sp.train].median())
    assert len(dl_train.tensors[0]) == len(sp.train) and len(dl_test.tensors[0]) == len(sp.test)


def test_labels_and_serving(cancer, tmp_path):
    sp = tb.make_splits(cancer, "kind", seed=0)
    dl_train, dl_valid, dl_test, prep = tb.loaders_from_frame(cancer, "kind", sp)
    assert dl_test is None and prep.classes == ["benign", "malignant"] and prep.task == "binary"
    _, yb = next(iter(dl_valid))
    assert yb.dtype == torch.int64 and prep.decode(yb[:3]) == cancer.kind.iloc[sp.valid[:3]].tolist()
    path = prep.save(tmp_path / "prep.skops")
    loaded = FramePrep.load(path)
    new_rows = cancer.drop(columns="kind").head(5)
    assert torch.equal(loaded.transform_for_serving(new_rows), prep.transform(new_rows))
    with pytest.raises(ValueError, match="columns missing for serving: mean radius"):
        loaded.transform_for_serving(new_rows.drop(columns="mean radius"))


def test_regression_targets_and_balanced_sampling():
    df = load_diabetes(as_frame=True).frame
    sp = tb.make_splits(df, "target", seed=0)
    dl_train, *_ , prep = tb.loaders_from_frame(df, "target", sp)
    assert prep.task == "regression" and dl_train.tensors[1].shape == (len(sp.train), 1)
    imb = load_breast_cancer(as_frame=True).frame
    imb = pd.concat([imb[imb.target == 1], imb[imb.target == 0].head(30)], ignore_index=True)
    sp = tb.make_splits(imb, "target", seed=0)
    dl, *_ = tb.loaders_from_frame(imb, "target", sp, batch_size=64, balanced=True)
    drawn = torch.cat([yb for _, yb in dl])
    assert 0.4 < drawn.float().mean() < 0.6  # about half from each class, though class 0 is ~8% of rows


def test_group_and_time_columns_are_not_features():
    df = pd.DataFrame({"x": np.arange(100.0), "g": np.arange(100) % 10, "y": np.arange(100) % 2})
    sp = tb.make_splits(df, "y", groups="g")
    *_, prep = tb.loaders_from_frame(df, "y", sp)
    assert prep.columns == ["x"]
