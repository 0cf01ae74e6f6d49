"ParquetLoader: every row once per epoch, disjoint ranks, exact resume inside `fit`, prep on a sample, splits."
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import trainbook as tb
from trainbook.parquet import ParquetLoader, as_dataset, fit_prep
from trainbook.parquet_splits import split_files, write_split_column
from helpers import history_without_timing, interrupt_at, interrupted, same_weights

FEATURES = ["x0", "x1", "x2", "x3"]


def write_dataset(folder, files=3, rows=210, row_group=40, seed=0, extra=None):
    "Parquet files of 4 float features, a row id and a 0/1 label; uneven last row groups."
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for f in range(files):
        x = rng.normal(size=(rows, 4)).astype("float32")
        cols = {**{f"x{j}": x[:, j] for j in range(4)}, "row": np.arange(rows) + rows * f,
                "y": (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int64")}
        if extra: cols.update(extra(rng, rows))
        pq.write_table(pa.table(cols), folder / f"part-{f}.parquet", row_group_size=row_group)
    return folder


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "data")


def rows_of(dl):
    return torch.cat([xb[:, -1] for xb, _ in dl]).long().tolist()


def test_an_epoch_is_every_row_once_in_a_new_order_each_epoch(data):
    dl = ParquetLoader(data, "y", columns=FEATURES + ["row"], batch_size=50, shuffle_buffer=3, seed=2)
    assert len(dl) == 13  # 630 rows
    first, second = rows_of(dl), rows_of(dl)
    assert sorted(first) == sorted(second) == list(range(630))
    assert first != second and first != sorted(first)
    ordered = ParquetLoader(data, "y", columns=FEATURES + ["row"], batch_size=50, shuffle_buffer=0)
    assert rows_of(ordered) == list(range(630))  # no shuffling: file order


def test_two_ranks_see_disjoint_rows_that_cover_the_epoch(data):
    kw = dict(columns=FEATURES + ["row"], batch_size=32, shuffle_buffer=4, seed=5)
    ranks = [ParquetLoader(data, "y", rank=r, world_size=2, **kw) for r in range(2)]
    for dl in ranks: dl.set_epoch(3)
    seen = [rows_of(dl) for dl in ranks]
    assert len(ranks[0]) == len(ranks[1])  # same number of batches: DDP ranks never wait
    assert set(seen[0]).isdisjoint(seen[1])
    assert sorted(seen[0] + seen[1]) == list(range(630))
    # the DistributedSampler rule: rank r takes positions r, r + 2, ... of the one-process order
    single = ParquetLoader(data, "y", **kw)
    single.set_epoch(3)
    order = rows_of(single)
    assert seen[0] == order[0::2] and seen[1] == order[1::2]


def test_uneven_rows_are_padded_so_ranks_have_equal_batches(tmp_path):
    data = write_dataset(tmp_path / "data", files=1, rows=101, row_group=30)
    ranks = [ParquetLoader(data, "y", columns=FEATURES + ["row"], batch_size=10, rank=r, world_size=3)
             for r in range(3)]
    seen = [rows_of(dl) for dl in ranks]
    assert [len(s) for s in seen] == [34, 34, 34]
    assert set().union(*seen) == set(range(101))  # 1 row repeated twice to pad, none lost


def test_state_dict_resumes_at_the_same_batch_of_the_same_epoch(data):
    kw = dict(columns=FEATURES + ["row"], batch_size=25, shuffle_buffer=2, seed=7)
    dl = ParquetLoader(data, "y", **kw)
    dl.set_epoch(1)
    whole = [xb for xb, _ in dl]
    dl.set_epoch(1)
    it = iter(dl)
    for _ in range(9): next(it)  # stopped inside a buffer
    state = dl.state_dict()
    assert state["epoch"] == 1 and state["position"] == 9
    assert 0 < state["row"] and state["rng"] == [7, 1, state["buffer"]]
    fresh = ParquetLoader(data, "y", **kw)
    fresh.load_state_dict(state)
    rest = [xb for xb, _ in fresh]
    assert len(rest) == len(whole) - 9
    assert all(torch.equal(a, b) for a, b in zip(rest, whole[9:]))
    with pytest.raises(ValueError, match="seed"):
        ParquetLoader(data, "y", **{**kw, "seed": 8}).load_state_dict(state)


def test_a_pass_left_unfinished_is_no_position(data):
    "Probe 13, f13: after a fit stopped at max_steps, a plain pass over the loader yielded 408 of 600 rows, once."
    dl = ParquetLoader(data, "y", columns=FEATURES + ["row"], batch_size=25, shuffle_buffer=2, seed=7)
    every = sorted(rows_of(dl))
    it = iter(dl)
    for _ in range(4): next(it)
    it.close()  # abandoned (a break, a fit stopped at max_steps)
    assert dl.state_dict()["position"] == 0
    assert sorted(rows_of(dl)) == every  # the next pass reads the epoch whole
    model = nn.Sequential(nn.Linear(5, 2))
    tb.fit(model, dl, loss_fn=nn.functional.cross_entropy, live=False,
           config=tb.TrainConfig(epochs=1, max_steps=3, device="cpu", monitor="train_loss"))
    assert sorted(rows_of(dl)) == every


def _setup(data):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    dl = ParquetLoader(data, "y", columns=FEATURES, batch_size=32, shuffle_buffer=2, seed=3)
    dl_valid = ParquetLoader(data, "y", columns=FEATURES, batch_size=128, shuffle_buffer=0)
    return model, dl, dl_valid


def test_fit_resumed_mid_epoch_gives_the_weights_of_an_uninterrupted_run(data, tmp_path):
    cfg = tb.TrainConfig(epochs=2, lr=5e-3, device="cpu", schedule="warmup_cosine", warmup=0.2)
    ce = nn.functional.cross_entropy
    model, dl, dl_valid = _setup(data)
    full = tb.fit(model, dl, dl_valid, loss_fn=ce, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "a")))
    model2, dl, dl_valid = _setup(data)
    cut = cfg.replace(checkpoint_dir=str(tmp_path / "b"))
    first = interrupted(tb.fit, model2, dl, dl_valid, loss_fn=ce, live=False, config=cut, callbacks=[interrupt_at(27)])
    assert first.stopped == "interrupted" and first.epoch == 1  # 20 batches an epoch: step 27 is mid-epoch 1
    assert not same_weights(model2, model)
    model3, dl, dl_valid = _setup(data)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(model3, dl, dl_valid, loss_fn=ce, live=False, config=cut, resume=tmp_path / "b" / "last.pt")
    assert resumed.stopped == "completed"
    assert same_weights(model3, model)
    assert history_without_timing(resumed) == history_without_timing(full)


def test_prep_auto_is_fitted_on_a_recorded_sample_and_encodes_text(tmp_path):
    cities = lambda rng, n: {"city": rng.choice(["oslo", "rome", "lima"], n)}
    data = write_dataset(tmp_path / "data", extra=cities)
    dl = ParquetLoader(data, "y", columns=FEATURES + ["city"], batch_size=64, prep="auto", sample_rows=100, seed=1)
    info = dl.prep_sample
    assert info["rows"] == 100 and info["of_rows"] == 630 and info["seed"] == 1
    assert len(info["row_groups"]) == 3  # whole row groups of 40 rows until 100 rows are there
    xb, yb = next(iter(dl))
    assert xb.shape == (64, 4 + 3) and xb.dtype == torch.float32  # 4 scaled numbers, one-hot city
    assert yb.dtype == torch.int64 and set(yb.tolist()) <= {0, 1}
    prep, again = fit_prep(data, "y", FEATURES + ["city"], sample_rows=100, seed=1)
    assert again == {k: v for k, v in info.items() if k != "of_rows"}  # the same sample from the same seed
    assert prep.classes == [0, 1]


def test_prep_auto_on_a_split_column_samples_only_that_part(tmp_path):
    data = write_dataset(tmp_path / "raw")
    write_split_column(data, tmp_path / "marked", valid_size=0.5, seed=0)
    dl = ParquetLoader(tmp_path / "marked", "y", columns=FEATURES + ["row"], where=("split", "train"),
                       prep="auto", sample_rows=10_000)
    marked = pq.read_table(tmp_path / "marked").to_pandas()
    train = marked[marked.split == "train"]
    assert dl.prep_sample["rows"] == dl.prep_sample["of_rows"] == len(train) == dl.n
    scaler = dl.prep.preprocessor.named_transformers_["num"][-1]
    assert np.allclose(scaler.mean_, train[FEATURES].mean().to_numpy())  # train rows only (row: an id, dropped)
    assert not np.allclose(scaler.mean_, marked[FEATURES].mean().to_numpy())


def test_bad_input_is_refused_before_any_work(data):
    with pytest.raises(ValueError, match="target column 'label'"): ParquetLoader(data, "label")
    with pytest.raises(ValueError, match=r"columns: no column 'x00'.*did you mean 'x0'"):
        ParquetLoader(data, "y", columns=["x1", "x00"])
    with pytest.raises(ValueError, match="batch_size"): ParquetLoader(data, "y", batch_size=0)
    with pytest.raises(ValueError, match="rank"): ParquetLoader(data, "y", rank=2, world_size=2)
    with pytest.raises(FileNotFoundError, match="no Parquet"): ParquetLoader(data / "missing", "y")
    with pytest.raises(TypeError, match="source"): ParquetLoader(42, "y")


def test_text_columns_without_prep_are_refused_with_what_to_do(tmp_path):
    data = write_dataset(tmp_path / "data", extra=lambda rng, n: {"city": rng.choice(["a", "b"], n)})
    with pytest.raises(ValueError, match="prep='auto'"): ParquetLoader(data, "y")


def test_split_files_are_disjoint_stable_and_cover_the_dataset(tmp_path):
    data = write_dataset(tmp_path / "data", files=10, rows=20, row_group=20)
    parts = split_files(data, valid_size=0.3, seed=0)
    files = sorted(str(p) for p in data.glob("*.parquet"))
    assert sorted(parts["train"] + parts["valid"]) == files
    assert not set(parts["train"]) & set(parts["valid"])
    assert split_files(data, valid_size=0.3, seed=0) == parts
    dl = ParquetLoader(parts["valid"], "y", columns=FEATURES, batch_size=8)
    assert dl.n == 20 * len(parts["valid"])


def test_split_column_keeps_every_group_in_one_part(tmp_path):
    groups = lambda rng, n: {"user": rng.integers(0, 40, n)}
    data = write_dataset(tmp_path / "raw", extra=groups)
    counts = write_split_column(data, tmp_path / "marked", groups="user", valid_size=0.25, test_size=0.25, seed=3)
    marked = pq.read_table(tmp_path / "marked").to_pandas()
    assert sum(counts.values()) == 630 and set(counts) == {"train", "valid", "test"}
    assert (marked.groupby("user")["split"].nunique() == 1).all()
    for name in counts:
        dl = ParquetLoader(tmp_path / "marked", "y", columns=FEATURES + ["row"], where=("split", name),
                           batch_size=64, shuffle_buffer=2)
        assert dl.n == counts[name]
        assert sorted(rows_of(dl)) == sorted(marked.loc[marked.split == name, "row"].tolist())


def test_the_target_among_the_feature_columns_is_refused(data):
    with pytest.raises(ValueError, match="columns holds the target column 'y'.*drop 'y' from columns"):
        ParquetLoader(data, "y", columns=["x0", "y"])
    with pytest.raises(ValueError, match="drop 'y'"): fit_prep(data, "y", ["x0", "y"])


def frame(n, seed):
    r = np.random.default_rng(seed)
    return pd.DataFrame({"a": r.normal(size=n), "y": r.integers(0, 2, n)})


def test_write_split_column_refuses_an_out_dir_holding_an_earlier_copy_unless_overwrite(tmp_path):
    (tmp_path / "big").mkdir()
    for i in range(3): frame(30, i).to_parquet(tmp_path / "big" / f"f{i}.parquet")
    (tmp_path / "small").mkdir()
    frame(30, 9).to_parquet(tmp_path / "small" / "f.parquet")
    out = tmp_path / "out"
    write_split_column(tmp_path / "big", out)
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    with pytest.raises(ValueError, match="out_dir .* holds 3 part file.*overwrite=True"):
        write_split_column(tmp_path / "small", out)
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before  # refused before anything was written
    (out / "notes.txt").write_text("mine")
    counts = write_split_column(tmp_path / "small", out, overwrite=True)
    assert sorted(f.name for f in out.iterdir()) == ["notes.txt", "part-00000.parquet"]  # the old parts gone
    assert as_dataset(out).count_rows() == sum(counts.values()) == 30  # notes.txt is no part of the dataset
    # Parquet files this function did not write are never removed, even with overwrite
    frame(5, 1).to_parquet(out / "theirs.parquet")
    with pytest.raises(ValueError, match="theirs.parquet.*empty folder"):
        write_split_column(tmp_path / "small", out, overwrite=True)
    assert (out / "theirs.parquet").exists() and (out / "part-00000.parquet").exists()


def test_write_split_column_refuses_an_out_dir_that_is_holds_or_sits_in_the_source(tmp_path):
    src = tmp_path / "same"
    src.mkdir()
    frame(30, 0).to_parquet(src / "part-00000.parquet")
    data = (src / "part-00000.parquet").read_bytes()
    for out in (src, src / "marked", tmp_path):
        with pytest.raises(ValueError, match="out_dir .*source.*outside the source"):
            write_split_column(src, out, overwrite=True)
    with pytest.raises(ValueError, match="out_dir"):  # the source as a list of files
        write_split_column([src / "part-00000.parquet"], src, overwrite=True)
    assert (src / "part-00000.parquet").read_bytes() == data  # the user's file untouched
    assert sorted(p.name for p in src.iterdir()) == ["part-00000.parquet"]  # no folder made inside it


def test_a_target_with_missing_values_is_refused_with_their_count(tmp_path):
    f = frame(50, 0).astype({"y": float})
    f.loc[:5, "y"] = np.nan  # 6 nulls in the file
    f.to_parquet(tmp_path / "nulls.parquet")
    for prep in ("auto", None):
        with pytest.raises(ValueError, match="column 'y' has 6 missing value.*nulls.parquet.*drop or fill"):
            ParquetLoader(tmp_path / "nulls.parquet", "y", prep=prep)
    # NaN that is no Parquet null (and rows a where= filter keeps): refused when the row group is read
    y = np.r_[np.full(5, np.nan), np.arange(45) % 2].astype("float64")
    part = np.where(np.isnan(y), "b", "a")
    pq.write_table(pa.table({"a": np.arange(50.0), "y": y, "part": part}), tmp_path / "nan.parquet")
    with pytest.raises(ValueError, match="target column 'y' has 5 missing value.*row group 0 of nan.parquet"):
        list(ParquetLoader(tmp_path / "nan.parquet", "y", columns=["a"]))
    with pytest.raises(ValueError, match="has 5 missing"):
        list(ParquetLoader(tmp_path / "nan.parquet", "y", columns=["a"], where=("part", "b"), prep="auto"))
    kept = torch.cat([yb for _, yb in ParquetLoader(tmp_path / "nan.parquet", "y", columns=["a"],
                                                  where=("part", "a"))])
    assert len(kept) == 45 and not kept.isnan().any()


def test_a_class_outside_the_prep_sample_is_refused_and_classes_fixes_it(tmp_path):
    g = pd.DataFrame({"a": np.arange(400.0), "y": ["a"] * 399 + ["zzz"]})
    pq.write_table(pa.Table.from_pandas(g), tmp_path / "rare.parquet", row_group_size=50)
    dl = ParquetLoader(tmp_path / "rare.parquet", "y", batch_size=100, prep="auto", sample_rows=100)
    assert dl.prep.classes == ["a"]
    with pytest.raises(ValueError, match=r"holds class\(es\) \['zzz'\] in row group 7 of rare.parquet.*"
                                         r"every class.*classes="):
        list(dl)
    dl = ParquetLoader(tmp_path / "rare.parquet", "y", batch_size=100, prep="auto", sample_rows=100,
                       classes=["a", "zzz"])
    labels = torch.cat([yb for _, yb in dl])
    assert dl.prep.classes == ["a", "zzz"] and dl.prep.task == "binary"
    assert sorted(labels.tolist()) == [0] * 399 + [1]
    with pytest.raises(ValueError, match=r"classes=\['zzz'\] lacks class\(es\) \['a'\]"):
        fit_prep(tmp_path / "rare.parquet", "y", classes=["zzz"], sample_rows=100)


def test_messy_folders_are_refused_naming_the_file_and_the_columns(tmp_path):
    f = pd.DataFrame({"a": np.arange(50.0), "b": np.arange(50.0), "y": np.arange(50) % 2})
    for name in ("mixed", "zero", "extra", "readme"): (tmp_path / name).mkdir()
    f.to_parquet(tmp_path / "mixed" / "p1.parquet")
    f.drop(columns="b").to_parquet(tmp_path / "mixed" / "p2.parquet")
    with pytest.raises(ValueError, match=r"p2.parquet' lacks column\(s\) \['b'\].*p1.parquet"):
        ParquetLoader(tmp_path / "mixed", "y")
    f.drop(columns="b").to_parquet(tmp_path / "extra" / "p1.parquet")
    f.to_parquet(tmp_path / "extra" / "p2.parquet")
    with pytest.raises(ValueError, match=r"p2.parquet' adds column\(s\) \['b'\]"):
        ParquetLoader(tmp_path / "extra", "y")
    f.to_parquet(tmp_path / "zero" / "p1.parquet")
    (tmp_path / "zero" / "p2.parquet").write_bytes(b"")
    with pytest.raises(ValueError, match="p2.parquet' is empty"): ParquetLoader(tmp_path / "zero", "y")
    f.to_csv(tmp_path / "data.csv")
    with pytest.raises(ValueError, match="data.csv' is not a Parquet file"):
        ParquetLoader(tmp_path / "data.csv", "y")
    (tmp_path / "fake.parquet").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="fake.parquet' is not a Parquet file"):
        ParquetLoader([tmp_path / "fake.parquet"], "y")
    # a folder: only its *.parquet files are read; a README beside them is left out
    (tmp_path / "readme" / "README.txt").write_text("about the data")
    with pytest.raises(FileNotFoundError, match=r"no \*.parquet files.*README.txt"):
        ParquetLoader(tmp_path / "readme", "y")
    f.to_parquet(tmp_path / "readme" / "p1.parquet")
    assert ParquetLoader(tmp_path / "readme", "y").n == 50


def two_files(folder, change):
    "Two Parquet files of the same column names, `change` applied to the second one's frame."
    folder.mkdir()
    rng = np.random.default_rng(0)
    frames = [pd.DataFrame({"x0": rng.normal(size=40), "x1": rng.normal(size=40),
                            "y": rng.integers(0, 3, 40)}) for _ in range(2)]
    change(frames[1])
    for i, f in enumerate(frames): f.to_parquet(folder / f"f{i}.parquet")
    return folder


def test_files_with_a_column_of_another_type_are_refused_naming_file_and_column(tmp_path):
    def float_target(f): f["y"] = f["y"].astype(float)
    def text_feature(f): f["x1"] = "abc"
    for name, change, col in (("floaty", float_target, "y"), ("texty", text_feature, "x1")):
        folder = two_files(tmp_path / name, change)
        for prep in (None, "auto"):  # refused when the loader is made, before any batch
            with pytest.raises(ValueError, match=f"f1.parquet.*'{col}' is .* there but .* in the first file"):
                ParquetLoader(folder, "y", batch_size=20, prep=prep)
    # types of one kind in other widths (int32 beside int64, float32 beside double) read alike
    def narrower(f): f["y"], f["x0"] = f["y"].astype("int32"), f["x0"].astype("float32")
    folder = two_files(tmp_path / "narrow", narrower)
    for prep in (None, "auto"):
        dl = ParquetLoader(folder, "y", batch_size=20, shuffle_buffer=0, prep=prep)
        assert {yb.dtype for _, yb in dl} == {torch.int64} and sum(len(yb) for _, yb in dl) == 80


def test_write_split_column_refuses_missing_group_ids_naming_column_and_file(tmp_path):
    (tmp_path / "src").mkdir()
    frame(30, 0).assign(g=np.arange(30) // 3, h=1.0).to_parquet(tmp_path / "src" / "a.parquet")
    df = frame(30, 1).assign(g=pd.array(np.arange(30) // 3, dtype="Int64"),
                             h=np.where(np.arange(30) % 5 == 0, np.nan, 1.0))
    df.loc[::3, "g"] = pd.NA
    df.to_parquet(tmp_path / "src" / "b.parquet")
    with pytest.raises(ValueError, match="groups column 'g' has 10 missing group id.*b.parquet"):
        write_split_column(tmp_path / "src", tmp_path / "out", groups="g")
    assert not (tmp_path / "out").exists()  # refused before anything was written
    with pytest.raises(ValueError, match="missing group id"):  # NaN in a float column is missing too
        write_split_column(tmp_path / "src", tmp_path / "out", groups="h")
    df.dropna(subset=["g"]).assign(h=1.0).to_parquet(tmp_path / "src" / "b.parquet", index=False)
    assert sum(write_split_column(tmp_path / "src", tmp_path / "out", groups="g").values()) == 50


def test_write_split_column_accepts_an_empty_folder_or_one_holding_only_a_readme(tmp_path):
    (tmp_path / "src").mkdir()
    frame(30, 0).to_parquet(tmp_path / "src" / "a.parquet")
    for name, files in (("empty", {}), ("readme", {"README.md": "the split copy"})):
        out = tmp_path / name
        out.mkdir()
        for f, text in files.items(): (out / f).write_text(text)
        assert sum(write_split_column(tmp_path / "src", out).values()) == 30
        assert sorted(p.name for p in out.iterdir()) == sorted([*files, "part-00000.parquet"])


def test_prep_none_refuses_missing_feature_values_before_any_batch(tmp_path):
    "Probe 24: prep=None passed null features into the batches as NaN, without a word."
    gaps = pa.table({"a": pa.array([1.0, None, 3.0, 4.0]), "b": pa.array([1, None, 2, 5]), "c": [1.0] * 4,
                     "y": [0, 1, 0, 1], "part": ["x", "v", "x", "x"]})
    pq.write_table(gaps, tmp_path / "gaps.parquet")
    with pytest.raises(ValueError, match=r"feature column\(s\) \['a', 'b'\] have missing values.*"
                                         r"'a': 1 \(the first in gaps.parquet\).*prep='auto'"):
        ParquetLoader(tmp_path / "gaps.parquet", "y", columns=["a", "b", "c"])  # when made, not when read
    xb, _ = next(iter(ParquetLoader(tmp_path / "gaps.parquet", "y", columns=["a", "b", "c"], prep="auto")))
    assert not xb.isnan().any()  # imputed
    # where=: the footers count every row; only the rows it keeps count
    kept = ParquetLoader(tmp_path / "gaps.parquet", "y", columns=["a", "b", "c"], where=("part", "x"))
    assert not torch.cat([xb for xb, _ in kept]).isnan().any() and kept.n == 3
    with pytest.raises(ValueError, match=r"\['a', 'b'\] have missing values"):
        ParquetLoader(tmp_path / "gaps.parquet", "y", columns=["a", "b", "c"], where=("part", "v"))
    # a file written without statistics: refused when the row group is read
    pq.write_table(gaps, tmp_path / "bare.parquet", write_statistics=False)
    dl = ParquetLoader(tmp_path / "bare.parquet", "y", columns=["a", "c"])
    with pytest.raises(ValueError, match=r"\['a'\] have missing values.*row group 0 of bare.parquet"):
        next(iter(dl))


def test_a_column_all_missing_in_one_file_takes_its_type_from_the_others(tmp_path):
    "Probe 24: all null in the first file (arrow's null type), the column was 'not numeric' with prep=None."
    for first, second in (("0", "1"), ("1", "0")):  # the order of the files decides nothing
        folder = tmp_path / f"d{first}"
        folder.mkdir()
        pq.write_table(pa.table({"a": [1.0, 2.0], "b": pa.nulls(2), "y": [0, 1], "part": ["v", "v"]}),
                       folder / f"{first}.parquet")
        pq.write_table(pa.table({"a": [3.0, 4.0], "b": [1, 2], "y": [1, 0], "part": ["t", "t"]}),
                       folder / f"{second}.parquet")
        with pytest.raises(ValueError, match=r"\['b'\] have missing values.*'b': 2"):  # not "not numeric"
            ParquetLoader(folder, "y", columns=["a", "b"])
        dl = ParquetLoader(folder, "y", columns=["a", "b"], where=("part", "t"), shuffle_buffer=0)
        assert torch.cat([xb for xb, _ in dl]).tolist() == [[3.0, 1.0], [4.0, 2.0]]
    (tmp_path / "none").mkdir()
    pq.write_table(pa.table({"a": [1.0, 2.0], "b": pa.nulls(2), "y": [0, 1]}), tmp_path / "none" / "0.parquet")
    with pytest.raises(ValueError, match=r"\['b'\] are missing in every row of every file"):
        ParquetLoader(tmp_path / "none", "y")


def test_prep_auto_codes_a_text_target_as_loaders_from_frame_does(tmp_path):
    "Probe 24: fit_prep sorted the classes; loaders_from_frame codes the rarer of two text labels 1."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=200), "y": np.where(rng.random(200) < 0.2, "no", "yes")})
    splits = tb.make_splits(df, target="y", strategy="stratified", valid_size=0.2, seed=0)
    prep = tb.loaders_from_frame(df, "y", splits)[3]
    df.to_parquet(tmp_path / "d.parquet")
    dl = ParquetLoader(tmp_path / "d.parquet", "y", prep="auto", shuffle_buffer=0, batch_size=200)
    assert prep.classes == dl.prep.classes == fit_prep(tmp_path / "d.parquet", "y")[0].classes == ["yes", "no"]
    _, yb = next(iter(dl))
    assert yb.tolist() == (df["y"] == "no").astype(int).tolist()  # the rarer label is 1


def test_prep_none_refuses_nan_features_as_it_refuses_nulls_naming_column_and_file(tmp_path):
    "Probe 51: a null was refused, a NaN (Spark writes NaN, not null) went into the batches silently."
    x = np.arange(30, dtype=float)
    x[13] = np.nan
    pq.write_table(pa.table({"x": x, "z": np.ones(30), "y": np.arange(30) % 2}), tmp_path / "a.parquet",
                   row_group_size=10)
    dl = ParquetLoader(tmp_path / "a.parquet", "y", batch_size=8)
    with pytest.raises(ValueError, match=r"feature column\(s\) \['x'\] have missing or infinite values \(null, "
                                         r"NaN, ±inf\).*'x': 1 \(the first in row group 1 of a.parquet\)"):
        list(dl)
    x[13], z = 1.0, np.ones(30)
    z[25] = np.inf  # probe 52: ±inf went into the batches where NaN was refused
    pq.write_table(pa.table({"x": x, "z": z, "y": np.arange(30) % 2}), tmp_path / "b.parquet", row_group_size=10)
    with pytest.raises(ValueError, match=r"\['z'\] have missing or infinite values.*'z': 1 \(the first in row "
                                         r"group 2 of b.parquet\)"):
        list(ParquetLoader(tmp_path / "b.parquet", "y", batch_size=8))
    xb = torch.cat([xb for xb, _ in ParquetLoader(tmp_path / "a.parquet", "y", batch_size=8, prep="auto")])
    assert len(xb) == 30 and not xb.isnan().any()  # imputed


def test_a_prep_skips_row_groups_that_keep_no_row_a_where_filter_or_an_empty_file(tmp_path):
    "Probe 70: a buffer holding a row group with no row kept gave the FramePrep an empty frame mid-epoch."
    rng = np.random.default_rng(0)
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"x": rng.normal(size=200), "c": rng.choice(["a", "b"], 200),
                             "y": rng.integers(0, 2, 200)}), tmp_path / "src" / "a.parquet", row_group_size=4)
    counts = write_split_column(tmp_path / "src", tmp_path / "split", valid_size=0.2)
    train = ParquetLoader(tmp_path / "split", "y", columns=["x", "c"], prep="auto", where=("split", "train"))
    valid = ParquetLoader(tmp_path / "split", "y", columns=["x", "c"], prep=train.prep, where=("split", "valid"))
    assert sum(len(yb) for _, yb in valid) == valid.n == counts["valid"]  # 50 row groups, some with no valid row
    (tmp_path / "spark").mkdir()  # an empty partition's file (pyarrow writes it with one 0-row row group)
    pq.write_table(pa.table({"x": np.arange(20.0), "y": np.arange(20) % 2}), tmp_path / "spark" / "a.parquet")
    pq.write_table(pa.table({"x": pa.array([], pa.float64()), "y": pa.array([], pa.int64())}),
                   tmp_path / "spark" / "b.parquet")
    dl = ParquetLoader(tmp_path / "spark", "y", prep="auto")
    assert sorted(torch.cat([yb for _, yb in dl]).tolist()) == [0] * 10 + [1] * 10


def test_partition_folders_key_value_are_columns_as_spark_reads_them(tmp_path):
    "Probe 70: a Hive-partitioned folder lost its partition column: no feature, no where=, no target."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=300), "region": rng.choice(["eu", "us"], 300),
                       "y": rng.integers(0, 2, 300)})
    pq.write_to_dataset(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "hive", partition_cols=["region"],
                        basename_template="part-{i}.parquet")  # named alike in each folder (Spark's are too)
    assert sorted(as_dataset(tmp_path / "hive").schema.names) == ["region", "x", "y"]
    assert ParquetLoader(tmp_path / "hive", "y", prep="auto").columns == ["x", "region"]  # a feature by default
    eu = ParquetLoader(tmp_path / "hive", "y", columns=["x"], where=("region", "eu"), shuffle_buffer=0)
    assert eu.n == (df.region == "eu").sum()
    got = sorted(torch.cat([xb for xb, _ in eu])[:, 0].tolist())
    assert got == sorted(df.x[df.region == "eu"].astype("float32").tolist())
    by_region = ParquetLoader(tmp_path / "hive", "region", columns=["x"], prep="auto", shuffle_buffer=0)
    assert sorted(by_region.prep.classes) == ["eu", "us"] and by_region.n == 300  # the target too
    codes = torch.cat([yb for _, yb in by_region]).tolist()
    assert sorted(codes) == sorted((df.region == by_region.prep.classes[1]).astype(int).tolist())
    # the file lists of split_files keep it (one partition's files too), and write_split_column writes it
    parts = split_files(tmp_path / "hive", valid_size=0.5, seed=0)
    assert all("region" in as_dataset(files).schema.names for files in parts.values())
    write_split_column(tmp_path / "hive", tmp_path / "out")
    assert set(pd.read_parquet(tmp_path / "out")["region"]) == {"eu", "us"}
    # files under other keys than the first's: refused naming the file
    pq.write_table(pa.table({"x": [1.0], "y": [0]}), tmp_path / "hive" / "loose.parquet")
    with pytest.raises(ValueError, match=r"sits under partition folders \[.*\] but .*loose.parquet.*key=value"):
        as_dataset(tmp_path / "hive")


def test_split_files_tells_apart_files_of_one_name_in_partition_folders(tmp_path):
    "Probe 70: the hash of the file name alone put 20 part-0.parquet files (one a partition) in one part."
    import pyarrow.dataset as ds
    rng = np.random.default_rng(0)
    t = pa.table({"x": rng.normal(size=4000), "g": rng.integers(0, 20, 4000), "y": rng.integers(0, 2, 4000)})
    ds.write_dataset(t, tmp_path / "wd", format="parquet", partitioning=["g"], partitioning_flavor="hive")
    for seed in range(5):
        parts = split_files(tmp_path / "wd", valid_size=0.3, seed=seed)
        assert 2 <= len(parts["valid"]) <= 12 and len(parts["train"]) + len(parts["valid"]) == 20
    # a flat folder: the key is still the file's name, so moving the folder keeps the split
    flat = write_dataset(tmp_path / "flat", files=6)
    moved = write_dataset(tmp_path / "elsewhere" / "deeper", files=6)
    names = lambda parts: {k: [p.rsplit("/", 1)[-1] for p in v] for k, v in parts.items()}
    assert names(split_files(flat, valid_size=0.4, seed=1)) == names(split_files(moved, valid_size=0.4, seed=1))


def test_category_columns_read_alike_whatever_their_index_width_or_beside_text(tmp_path):
    "Probe 70: pandas category files (int8 and int16 dictionary indices, or beside plain text) were refused."
    rng = np.random.default_rng(0)
    for name, second in (("wide", pd.Categorical([f"k{i}" for i in range(300)])), ("text", ["a", "c"] * 150)):
        (tmp_path / name).mkdir()
        pd.DataFrame({"c": pd.Categorical(["a", "b"] * 150), "x": rng.normal(size=300),
                      "y": rng.integers(0, 2, 300)}).to_parquet(tmp_path / name / "0.parquet")
        pd.DataFrame({"c": second, "x": rng.normal(size=300),
                      "y": rng.integers(0, 2, 300)}).to_parquet(tmp_path / name / "1.parquet")
        dl = ParquetLoader(tmp_path / name, "y", prep="auto", batch_size=64)
        assert sum(len(yb) for _, yb in dl) == 600
    with pytest.raises(ValueError, match="'x0' is dictionary.* there but double in the first file"):  # beside numbers
        ParquetLoader(two_files(tmp_path / "num", lambda f: f.__setitem__("x0", pd.Categorical(["a"] * 40))),
                      "y", prep="auto")


def test_another_seed_draws_other_integer_groups(tmp_path):
    "Probe 70: write_split_column(groups=<int column>) gave one split for every seed (pandas keys text only)."
    rng = np.random.default_rng(0)
    g = rng.integers(0, 100, 2000)
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"g": g, "x": rng.normal(size=2000), "y": rng.integers(0, 2, 2000)}),
                   tmp_path / "src" / "p.parquet")
    def valid_groups(seed):
        write_split_column(tmp_path / "src", tmp_path / f"o{seed}", groups="g", valid_size=0.2, seed=seed)
        out = pd.read_parquet(tmp_path / f"o{seed}")
        assert out.groupby("g")["split"].nunique().max() == 1  # a group in one part
        return frozenset(out.g[out.split == "valid"])
    drawn = {valid_groups(seed) for seed in range(4)}
    assert len(drawn) == 4 and all(5 <= len(v) <= 40 for v in drawn)
    write_split_column(tmp_path / "src", tmp_path / "again", groups="g", valid_size=0.2, seed=2)
    again = pd.read_parquet(tmp_path / "again")
    assert frozenset(again.g[again.split == "valid"]) in drawn  # the same seed: the same groups


def test_a_new_folder_beside_a_single_source_file_is_a_fine_out_dir(tmp_path):
    "Probe 70: for ~/data/sales.parquet every out_dir under ~/data was refused as 'inside the source'."
    pq.write_table(pa.table({"x": np.arange(100.0), "y": np.arange(100) % 2}), tmp_path / "sales.parquet")
    counts = write_split_column(tmp_path / "sales.parquet", tmp_path / "sales-split", valid_size=0.2)
    assert sum(counts.values()) == 100
    with pytest.raises(ValueError, match="inside the source"):  # the file's own folder: it would mix with it
        write_split_column(tmp_path / "sales.parquet", tmp_path, valid_size=0.2)
    with pytest.raises(ValueError, match="inside the source"):  # a source folder: read whole, it reads the copy
        write_split_column(tmp_path / "sales-split", tmp_path / "sales-split" / "again", column="part")


def test_a_split_column_that_would_leave_a_part_empty_is_refused_and_nothing_is_kept(tmp_path):
    """Probe 77: three month= partitions as groups, valid_size=0.3: every group hashed to train, and the copy was
    written with 'valid': 0 in silence (its loader failed later); a text where= value on an int partition key said
    only 'no rows'."""
    t = pa.table({"x": np.arange(60.0), "month": [1, 2, 3] * 20, "y": [0, 1] * 30})
    pq.write_to_dataset(t, tmp_path / "src", partition_cols=["month"])
    with pytest.raises(ValueError, match=r"the groups of 'month' all hashed to other parts, leaving part\(s\) "
                                         r"\['valid'\] empty"):
        write_split_column(tmp_path / "src", tmp_path / "out", groups="month", valid_size=0.3, seed=0)
    assert list((tmp_path / "out").glob("*.parquet")) == []  # nothing half-made kept
    counts = write_split_column(tmp_path / "src", tmp_path / "rows", valid_size=0.3, seed=0)  # by rows: both parts
    assert counts["train"] and counts["valid"] and sum(counts.values()) == 60
    with pytest.raises(ValueError, match=r"where=\('month', '2'\): column 'month' holds int32 values, which a str "
                                         r"never equals"):
        ParquetLoader(tmp_path / "src", "y", columns=["x"], where=("month", "2"))
    assert len(ParquetLoader(tmp_path / "src", "y", columns=["x"], where=("month", 2), batch_size=64)) == 1


def test_a_group_id_hashes_by_its_value_not_its_width(tmp_path):
    """Probe 90: ids -200..199 as int32 in one file and int64 in another (files that read alike): pandas hashed
    the bits, so 69 negative groups had rows in train and in valid. A timestamp in us beside ns, the same."""
    rng = np.random.default_rng(0)
    ids = np.arange(-200, 200)
    stamps = np.datetime64("2024-01-01") + ids.astype("timedelta64[h]")
    for name, narrow, wide in (("ints", pa.array(ids, pa.int32()), pa.array(ids, pa.int64())),
                               ("times", pa.array(stamps.astype("datetime64[us]")),
                                pa.array(stamps.astype("datetime64[ns]")))):
        src = tmp_path / name
        src.mkdir()
        for f, g in (("a", narrow), ("b", wide)):
            pq.write_table(pa.table({"g": g, "x": rng.normal(size=400), "y": rng.integers(0, 2, 400)}),
                           src / f"{f}.parquet")
        write_split_column(src, tmp_path / f"{name}-out", groups="g", valid_size=0.3, seed=0)
        out = pd.read_parquet(tmp_path / f"{name}-out")
        assert out.groupby("g")["split"].nunique().max() == 1, name  # no group in two parts
    # int64 ids draw the parts they drew before the rule (pinned): existing copies keep their splits
    (tmp_path / "wide").mkdir()
    pq.write_table(pa.table({"g": np.arange(-50, 50), "y": np.zeros(100, "int64")}), tmp_path / "wide" / "a.parquet")
    write_split_column(tmp_path / "wide", tmp_path / "wide-out", groups="g", valid_size=0.3, seed=0)
    out = pd.read_parquet(tmp_path / "wide-out")
    assert sorted(out.g[out.split == "valid"]) == [-44, -38, -36, -33, -32, -31, -28, -27, -24, -14, -13, -9, -5,
                                                   -4, 4, 5, 6, 9, 14, 16, 18, 25, 26, 27, 30, 39, 48]


def test_a_source_folder_named_key_value_is_no_column_only_the_folders_below_it(tmp_path):
    """Probe 90: a run folder named seed=3 gave a constant feature 'seed', and lr=0.1 a refused text column 'lr':
    Spark's read.parquet('…/seed=3') has no column seed. Folders below the one given still are columns."""
    rng = np.random.default_rng(0)
    for name in ("seed=3", "lr=0.1"):
        (tmp_path / name).mkdir()
        pq.write_table(pa.table({"x0": rng.normal(size=20), "y": rng.integers(0, 2, 20)}),
                       tmp_path / name / "data.parquet")
        assert ParquetLoader(tmp_path / name, "y").columns == ["x0"]
        assert as_dataset(tmp_path / name).schema.names == ["x0", "y"]
    # a partitioned dataset inside such a folder: its own keys, not the folder's
    df = pd.DataFrame({"x": rng.normal(size=40), "region": ["eu", "us"] * 20, "y": rng.integers(0, 2, 40)})
    pq.write_to_dataset(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "run=7", partition_cols=["region"])
    assert sorted(as_dataset(tmp_path / "run=7").schema.names) == ["region", "x", "y"]
    assert ParquetLoader(tmp_path / "run=7", "y", columns=["x"], where=("region", "eu")).n == 20
    # a list of one partition's files keeps its key (split_files' lists of a partitioned folder read alike)
    eu = sorted(str(p) for p in (tmp_path / "run=7" / "region=eu").glob("*.parquet"))
    assert "region" in as_dataset(eu).schema.names


def test_a_file_rewritten_or_deleted_mid_epoch_is_named(tmp_path):
    """Probe 90: a file another job rewrote during an epoch gave pyarrow's 'Column cannot have more than one
    dictionary.' naming no file; now the file is named with what became of it (as a deleted one is)."""
    def dataset(name):
        folder = tmp_path / name
        folder.mkdir()
        for i in range(3):
            pq.write_table(pa.table({"row": np.arange(100) + 100 * i, "y": np.zeros(100, "int64")}),
                           folder / f"p{i}.parquet", row_group_size=50)
        return folder
    for name, change, error, said in (
            ("rewritten", lambda p: pq.write_table(pa.table({"row": np.arange(10), "y": np.zeros(10, "int64")}), p,
                                                   row_group_size=5), OSError, "was rewritten after the loader"),
            ("deleted", lambda p: p.unlink(), FileNotFoundError, "was deleted after the loader")):
        folder = dataset(name)
        dl = ParquetLoader(folder, "y", batch_size=50, shuffle_buffer=0)
        with pytest.raises(error, match=rf"Parquet file '.*p2\.parquet' {said}"):
            for k, _ in enumerate(dl):
                if k == 0: change(folder / "p2.parquet")


def test_a_decimal_column_is_one_number_not_a_category_per_amount(tmp_path):
    """Probe 117: a decimal128 price (money; Spark writes DecimalType so) was one-hot encoded by prep='auto', a
    category per distinct amount, and refused as 'not numeric' by prep=None."""
    import decimal, warnings
    rng, n = np.random.default_rng(0), 40
    amounts = [decimal.Decimal(f"{v:.2f}") for v in rng.normal(size=n) * 100]
    price = pa.array(amounts[:-1] + [None], pa.decimal128(10, 2))  # one missing: prep='auto' imputes it
    pq.write_table(pa.table({"x": rng.normal(size=n), "price": price, "y": np.arange(n) % 2}), tmp_path / "a.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 10 digits: float64 holds them, nothing to say
        auto = ParquetLoader(tmp_path, "y", columns=["x", "price"], prep="auto", shuffle_buffer=0, batch_size=n)
    assert auto.prep.n_features == 2  # x and price: two numbers
    xb, _ = next(iter(auto))
    assert xb.shape == (n, 2)
    p = np.array([float(v) for v in amounts[:-1]])
    p = np.append(p, np.median(p))  # the missing one imputed by the median, then all scaled
    assert np.allclose(xb[:, 1].numpy(), (p - p.mean()) / p.std(), atol=1e-5)
    # prep=None: a decimal is a number; its amounts reach the batches as they are
    pq.write_table(pa.table({"price": pa.array(amounts, pa.decimal128(10, 2)), "y": np.arange(n) % 2}),
                   tmp_path / "a.parquet")
    xb, _ = next(iter(ParquetLoader(tmp_path, "y", shuffle_buffer=0, batch_size=n)))
    assert torch.equal(xb[:, 0], torch.tensor([float(a) for a in amounts], dtype=torch.float32))
    # more digits than float64 holds: said once, when the loader is made
    wide = pa.array([decimal.Decimal("12345678901234567.89")] * n, pa.decimal128(20, 2))
    pq.write_table(pa.table({"price": wide, "y": np.arange(n) % 2}), tmp_path / "a.parquet")
    with pytest.warns(UserWarning, match=r"decimal column\(s\) \['price \(decimal128\(20, 2\)\)'\] .*rounded"):
        ParquetLoader(tmp_path, "y", shuffle_buffer=0)
