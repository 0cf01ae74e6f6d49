"From a frame to loaders: preprocessing fitted on train rows only, labels mapped, serving reproduces training."
import warnings
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


def test_multi_input_batches_stay_aligned_resume_and_shard():
    X1, X2, y = torch.arange(20).unsqueeze(1), torch.arange(20).float().repeat(3, 1).T, torch.arange(20)
    dl = tb.TensorLoader(X1, X2, y, batch_size=6, shuffle=True, seed=2)
    batches = list(dl)
    assert all(isinstance(xb, tuple) and len(xb) == 2 for xb, _ in batches)
    for (a, b), yb in batches: assert torch.equal(a.squeeze(1), yb) and torch.equal(b[:, 0].long(), yb)
    dl.set_epoch(0)
    it = iter(dl)
    next(it)
    resumed = tb.TensorLoader(X1, X2, y, batch_size=6, shuffle=True, seed=2)
    resumed.load_state_dict(dl.state_dict())
    assert [yb.tolist() for _, yb in resumed] == [yb.tolist() for _, yb in batches[1:]]
    shards = [tb.TensorLoader({"a": X1, "b": X2}, y, batch_size=4, shuffle=True, rank=r, world_size=2) for r in range(2)]
    seen = [(xb["a"].squeeze(1), yb) for s in shards for xb, yb in s]
    assert all(torch.equal(a, yb) for a, yb in seen) and sorted(v for _, yb in seen for v in yb.tolist()) == list(range(20))


def test_dict_batches_and_bad_input():
    ids, y = torch.arange(10).unsqueeze(1), torch.arange(10)
    batch = next(iter(tb.TensorLoader({"input_ids": ids, "labels": y}, batch_size=4)))
    assert set(batch) == {"input_ids", "labels"} and torch.equal(batch["labels"], y[:4])
    with pytest.raises(ValueError, match=r"tensors\[0\]\['b'\] has 3"):
        tb.TensorLoader({"a": ids, "b": ids[:3]}, y)
    with pytest.raises(TypeError, match=r"tensors\[0\]\['a'\] must be a torch.Tensor"):
        tb.TensorLoader({"a": [1, 2]}, y)


def test_two_input_model_trains_from_a_three_tensor_loader():
    torch.manual_seed(0)
    a, b = torch.randn(64, 3), torch.randn(64, 2)
    y = (a[:, 0] + b[:, 1] > 0).long()
    class TwoInputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fa, self.fb = torch.nn.Linear(3, 2), torch.nn.Linear(2, 2)
        def forward(self, xa, xb): return self.fa(xa) + self.fb(xb)
    run = tb.fit(TwoInputs(), tb.TensorLoader(a, b, y, batch_size=16, shuffle=True), tb.TensorLoader(a, b, y, batch_size=32),
                 loss_fn=torch.nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=3, lr=0.05), live=False)
    losses = run.metrics()["valid_loss"]
    assert run.stopped == "completed" and losses.iloc[-1] < losses.iloc[0]


def test_drop_last_in_loaders_from_frame(cancer):
    sp = tb.make_splits(cancer, "kind", seed=0)
    dl_train, dl_valid, _, _ = tb.loaders_from_frame(cancer, "kind", sp, batch_size=100, drop_last=True, shuffle=False)
    assert [len(yb) for _, yb in dl_train] == [100] * (len(sp.train) // 100)
    assert sum(len(yb) for _, yb in dl_valid) == len(sp.valid)  # never drops validation rows
    with pytest.raises(ValueError, match="drop_last=True with batch_size=1000 leaves no batch"):
        tb.loaders_from_frame(cancer, "kind", sp, batch_size=1000, drop_last=True)


@pytest.mark.parametrize("n_batches", [1, 2, 3, 5])
def test_a_pass_left_in_the_middle_does_not_shorten_the_next_one(n_batches):
    "#25: a dry run took 3 batches of a 3-batch loader and the next pass found none. Resuming still works."
    y = torch.arange(4 * n_batches)
    dl = tb.TensorLoader(y.unsqueeze(1).float(), y, batch_size=4)
    full = [yb.tolist() for _, yb in dl]
    assert len(full) == n_batches
    first = next(iter(dl))  # a pass abandoned after one batch
    assert first[1].tolist() == full[0]
    for taken in range(1, n_batches + 1):
        it = iter(dl)
        for _ in range(taken): next(it)
        assert [yb.tolist() for _, yb in dl] == full, taken  # the next pass is whole
    it = iter(dl)
    next(it)
    state = dl.state_dict()
    resumed = tb.TensorLoader(y.unsqueeze(1).float(), y, batch_size=4)
    resumed.load_state_dict(state)
    assert [yb.tolist() for _, yb in resumed] == full[1:]  # a loaded position continues the epoch once
    assert [yb.tolist() for _, yb in resumed] == full


def test_exclude_takes_one_name_and_names_a_column_the_frame_lacks():
    "Seen: exclude='txt' was list('txt'): column 'x' dropped, 'txt' kept; a misspelt name ignored."
    df = pd.DataFrame({"x": np.arange(40.0), "txt": ["a b"] * 40, "y": [0, 1] * 20})
    sp = tb.make_splits(df, "y")
    assert tb.loaders_from_frame(df, "y", sp, exclude="txt")[3].columns == ["x"]
    with pytest.raises(ValueError, match=r"exclude: no column 'tx' in the DataFrame \(did you mean 'txt'\?\)"):
        tb.loaders_from_frame(df, "y", sp, exclude=["tx"])


def test_a_list_of_batches_is_fingerprinted_on_its_length_and_a_sample_of_batches():
    "Probe 22, f7: a plain list of (xb, yb) batches had no fingerprint (None), so a resume on other data was silent."
    X, y = torch.randn(64, 5, generator=torch.Generator().manual_seed(0)), torch.arange(64) % 2
    batches = [(X, y)] * 200_000
    fingerprint = tb.fingerprint_data(batches)
    assert fingerprint is not None
    # a sample of evenly spaced batches, not 200,000 of them: one between two sampled ones is not read
    assert tb.fingerprint_data(batches[:1000] + [(X + 1, y)] + batches[1001:]) == fingerprint
    assert tb.fingerprint_data(list(batches)) == fingerprint
    assert tb.fingerprint_data(batches[:-1]) != fingerprint  # its length counts
    assert tb.fingerprint_data(batches[:-1] + [(X, 1 - y)]) != fingerprint  # the last batch is always hashed
    assert tb.fingerprint_data([{"x": X, "y": y}]) == tb.fingerprint_data([{"y": y, "x": X}])  # dicts: by key
    assert tb.fingerprint_data([(X, ["a"] * 64)]) is None  # batches of something else than tensors: none


def test_a_custom_preprocessor_with_sparse_output_and_weights_that_draw_nothing():
    "Probe 24: scikit-learn's default sparse one-hot failed in numpy; all-zero or NaN weights failed in torch."
    import numpy as np, pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(0, 1, 300), "shop": rng.choice([f"s{i}" for i in range(40)], 300)})
    df["y"] = (df.x > 0).astype(int)
    splits = tb.make_splits(df, target="y", strategy="stratified", valid_size=0.2, seed=0)
    ct = ColumnTransformer([("oh", OneHotEncoder(handle_unknown="ignore"), ["shop"]), ("x", StandardScaler(), ["x"])])
    dl_train, _, _, prep = tb.loaders_from_frame(df, "y", splits, preprocessor=ct)
    xb, _ = next(iter(dl_train))
    dense = ct.transform(df.iloc[splits.train][["x", "shop"]]).toarray()
    assert xb.dtype == torch.float32 and xb.shape[1] == dense.shape[1] == 41
    assert torch.allclose(prep.transform(df.iloc[splits.train[:5]]), torch.as_tensor(dense[:5], dtype=torch.float32))
    X, y = torch.randn(10, 3), torch.arange(10) % 2
    for bad in (torch.zeros(10), torch.full((10,), float("nan")), -torch.ones(10), torch.ones(10, 2)):
        with pytest.raises(ValueError, match="finite, non-negative numbers, one per row, not all 0"):
            tb.TensorLoader(X, y, weights=bad)
    # numpy (sklearn's compute_sample_weight), a list, a column (n, 1): one weight a row (probe 26)
    for given in (np.ones(10), [1.0] * 10, torch.ones(10, 1)):
        xb, yb = next(iter(tb.TensorLoader(X, y, batch_size=5, weights=given)))
        assert xb.shape == (5, 3) and yb.shape == (5,)


# a custom preprocessor: its files load again, its numbers and categories checked at serving as the default's

def small_frame(n=120, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], n)})
    df["y"] = (df.a + (df.c == "x") > 0.5).astype(int)
    return df


def custom_prep(df, transformer, columns):
    from sklearn.compose import ColumnTransformer
    sp = tb.make_splits(df, "y", seed=0)
    return tb.loaders_from_frame(df, "y", sp, preprocessor=ColumnTransformer([("mine", transformer, columns)]))[-1]


def _double(x): return x * 2  # module-level: skops saves it by a name that imports back


def test_save_refuses_a_lambda_or_local_function_before_writing(tmp_path):
    from sklearn.preprocessing import FunctionTransformer
    def local(x): return x * 2
    for func, name in ((lambda x: x * 2, "<lambda>"), (local, "local")):
        prep = custom_prep(small_frame(), FunctionTransformer(func), ["a", "b"])
        with pytest.raises(ValueError, match="cannot be saved to load again") as e: prep.save(tmp_path / "p.skops")
        assert name in str(e.value) and "module-level function" in str(e.value)
        assert not (tmp_path / "p.skops").exists()  # nothing written
    prep = custom_prep(small_frame(), FunctionTransformer(_double), ["a", "b"])  # a module's function: saved
    loaded = FramePrep.load(prep.save(tmp_path / "p.skops"), trusted=[f"{__name__}._double"])
    rows = small_frame().head(4)
    assert torch.equal(loaded.transform(rows), prep.transform(rows))


def test_custom_preprocessor_names_junk_in_a_numeric_column_and_warns_of_unseen_categories(tmp_path):
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    rows = small_frame().drop(columns="y").head(5)
    prep = custom_prep(small_frame(), StandardScaler(), ["a", "b"])
    with pytest.raises(ValueError, match="'a': 5 value\\(s\\) are not numbers: 'abc'"):
        prep.transform_for_serving(rows.assign(a="abc"))
    as_text = rows.assign(a=rows.a.astype(str))  # numbers sent as text: parsed, as the default path does
    assert torch.equal(prep.transform_for_serving(as_text), prep.transform(rows))
    prep = FramePrep.load(custom_prep(small_frame(), OneHotEncoder(handle_unknown="ignore"), ["c"])
                          .save(tmp_path / "p.skops"))  # the schema travels with the file
    with pytest.warns(UserWarning, match="unseen_categories \\[c\\].*'NEW'"):
        prep.transform_for_serving(rows.assign(c="NEW"))


def test_a_class_only_in_valid_is_named_as_baseline_names_it():
    """Probe 47: a time split left class 'late' to valid only; loaders_from_frame said 'labels unseen in training:
    late' (and pandas warned of a deprecated Categorical), where baseline names the rows and what to do."""
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"t": pd.date_range("2024-01-01", periods=n, freq="D"), "x": rng.normal(size=n)})
    df["label"] = np.where(df.x > 0, "pos", "neg")
    df.loc[n - 3:, "label"] = "late"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        splits = tb.make_splits(df, "label", strategy="time", time="t")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no pandas deprecation on the way
        with pytest.raises(ValueError) as err:
            tb.loaders_from_frame(df, "label", splits, batch_size=64)
    assert str(err.value).startswith("valid rows hold class(es) ['late'] of target 'label' that the train rows lack "
                                     "(3 row(s): 197, 198, 199)")


def test_iso_dates_held_as_text_are_preprocessed_as_the_datetimes_they_are():
    "Probe 75 #4: a CSV's ISO dates were a category, one-hot encoded (49 columns): now the date step parses them."
    from helpers import iso_dates_from_csv
    from trainbook.data import feature_columns
    text = iso_dates_from_csv()  # what a user gets from a CSV
    text["signup"] = text["signup"].where(text.index % 9 > 0)  # some dates missing: imputed, as a datetime's
    parsed = text.assign(signup=pd.to_datetime(text["signup"]))
    sp = tb.make_splits(text, "y", test_size=0.2, seed=0)
    *as_text, prep = tb.loaders_from_frame(text, "y", sp)
    *as_dates, prep_dates = tb.loaders_from_frame(parsed, "y", sp)
    assert prep.roles == {"signup": "datetime", "x": "numeric"} and feature_columns(text, "y") == (["signup", "x"], [])
    assert prep.n_features == prep_dates.n_features == 6  # 5 date parts and x, never a one-hot block
    for a, b in zip(as_text, as_dates): assert torch.equal(a.tensors[0], b.tensors[0])  # train, valid, test
    # serving: text or datetimes, the same numbers
    assert torch.equal(prep.transform_for_serving(text), prep_dates.transform_for_serving(parsed))
    assert torch.equal(prep.transform_for_serving(parsed), prep_dates.transform_for_serving(text))
    # make_preprocessor on its own (a Pipeline, a baseline): its date step parses them, fit and transform alike
    X_text, X_dates = text.drop(columns="y"), parsed.drop(columns="y")
    tf = tb.make_preprocessor(text, "y").fit(X_text)
    assert np.array_equal(tf.transform(X_text), tb.make_preprocessor(parsed, "y").fit(X_dates).transform(X_dates))
    # a value that is no date is a missing date (imputed), named in a warning: never a silent NaN
    bad = text.head(4).assign(signup=["2023-01-02", "soon", None, "2023-02-03"])
    with pytest.warns(UserWarning, match=r"column 'signup': 1 value\(s\) are not ISO dates \('soon' ×1\): read as "
                                         r"missing dates \(imputed\)"):
        X_bad = tf.transform(bad.drop(columns="y"))
    dates = np.char.startswith(tf.get_feature_names_out().astype(str), "signup_")
    assert np.array_equal(X_bad[1, dates], X_bad[2, dates])  # 'soon' as the missing date of row 2
    report = prep.transform_for_serving(bad, errors="report")
    assert list(report.rows) == [0, 2, 3] and [f.kind for f in report.findings] == ["unparseable_values"]


def _date_frames(when, n=None):
    "(frame of dates as text, the same frame parsed) with a feature x and a label y."
    rng = np.random.default_rng(0)
    n = len(when)
    parsed = pd.DataFrame({"when": when, "x": rng.normal(size=n), "y": rng.integers(0, 2, n)})
    return parsed.assign(when=[t.isoformat() if hasattr(t, "isoformat") else t for t in when]), parsed


def test_unique_timestamps_as_text_give_the_matrix_of_the_parsed_column():
    "Probe 76 r_1: a CSV's timestamps, every one distinct, were taken for an identifier and dropped."
    text, parsed = _date_frames(pd.date_range("2021-01-01", periods=200, freq="37min"))
    assert tb.columns.feature_roles(text, "y")["when"] == "datetime"
    sp = tb.make_splits(parsed, "y", seed=0)
    *as_text, prep = tb.loaders_from_frame(text, "y", sp)
    *as_dates, _ = tb.loaders_from_frame(parsed, "y", sp)
    assert prep.roles["when"] == "datetime" and prep.n_features == 7  # 6 date parts and x, nothing dropped
    for a, b in zip(as_text[:2], as_dates[:2]):  # train, valid
        assert torch.allclose(a.tensors[0], b.tensors[0], atol=1e-6)


@pytest.mark.parametrize("served", ["03/08/2021", "3 August 2021", 20210803])
def test_serving_reads_dates_with_trainings_parser_only(served):
    "Probe 76 r_2, r_3: '03/08/2021' was read month first, 20210803 in an object column as 1970, in silence."
    text, parsed = _date_frames(pd.DatetimeIndex(np.resize(pd.date_range("2021-01-01", periods=30), 120)))
    for frame in (text, parsed):  # trained on date text, and on datetimes
        *_, prep = tb.loaders_from_frame(frame, "y", tb.make_splits(frame, "y", seed=0))
        new = pd.DataFrame({"when": pd.Series([served, "2021-08-03"], dtype=object), "x": [0.0, 0.0]})
        report = prep.transform_for_serving(new, errors="report")
        assert list(report.rows) == [1] and [f.kind for f in report.findings] == ["unparseable_values"]
        assert str(served) in report.findings[0].message and "not ISO dates" in report.findings[0].message


def test_a_typo_among_date_text_is_a_missing_date_not_a_one_hot_block():
    "Probe 76 r_4: one typo turned the whole column into 32 one-hot columns, named by nothing."
    text, parsed = _date_frames(pd.DatetimeIndex(np.resize(pd.date_range("2021-01-01", periods=30), 120)))
    text.loc[3, "when"], text.loc[4, "when"] = "2021-02-30", ""  # a typo; an empty string is missing
    sp = tb.make_splits(text, "y", seed=0)
    with pytest.warns(UserWarning, match="'2021-02-30' ×1"):
        *_, prep = tb.loaders_from_frame(text, "y", sp)
    assert prep.roles["when"] == "datetime" and prep.n_features == 6  # 5 date parts and x


def test_summer_time_offsets_are_read_in_utc():
    "Probe 76 r_5: +01:00 and +02:00 in one column (to_csv of a tz-aware column) were one-hot encoded."
    when = pd.DatetimeIndex(np.resize(pd.date_range("2021-03-20", periods=30, freq="11h", tz="Europe/Oslo"), 120))
    text, parsed = _date_frames(when)
    assert text["when"].str[-6:].nunique() == 2  # two offsets
    sp = tb.make_splits(text, "y", seed=0)
    *as_text, prep = tb.loaders_from_frame(text, "y", sp)
    *as_utc, _ = tb.loaders_from_frame(parsed.assign(when=when.tz_convert("UTC")), "y", sp)
    assert prep.roles["when"] == "datetime"
    for a, b in zip(as_text[:2], as_utc[:2]):  # train, valid
        assert torch.allclose(a.tensors[0], b.tensors[0], atol=1e-6)
    assert torch.allclose(prep.transform_for_serving(text), prep.transform_for_serving(parsed), atol=1e-6)
