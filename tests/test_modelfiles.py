"Saved boosted models under tampering: every bad file is a named error, raised in this very process (a crash in a native loader would end the test run)."
import json, re, shutil, warnings, zipfile

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

import trainbook as tb
from trainbook.gbdt import BoostedModel, ModelFileError
from trainbook.modelfiles import (boosted_meta_sha256, check_catboost_file, check_lightgbm_text, check_xgboost_json,
                                  file_sha256)

pytest.importorskip("lightgbm")
pytest.importorskip("catboost")

ONE_THREAD = {"lightgbm": {"num_threads": 1}, "catboost": {"thread_count": 1}, "xgboost": {"nthread": 1}}


@pytest.fixture(scope="module")
def frame():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    return pd.DataFrame(X).add_prefix("f").assign(y=y)


@pytest.fixture(scope="module")
def saved(frame, tmp_path_factory):
    "One saved folder per library (trained once for the module)."
    sp = tb.make_splits(frame, "y", seed=0)
    out = {}
    for lib in ("xgboost", "lightgbm", "catboost"):
        folder = tmp_path_factory.mktemp(lib)
        fit = getattr(tb, f"fit_{lib}")
        run = fit(frame, "y", sp, params=ONE_THREAD[lib], num_rounds=15, early_stopping=None, live=False,
                  checkpoint_dir=folder)
        out[lib] = run.run_dir
    return out


def copy(saved, lib, tmp_path):
    return shutil.copytree(saved[lib], tmp_path / lib)


def resign(folder):
    "Record the files' current sha256 in boosted.json: only the structural checks stand between the file and the library."
    meta = json.loads((folder / "boosted.json").read_text())
    meta["sha256"] = {name: file_sha256(folder / name) for name in meta["sha256"]}
    meta["meta_sha256"] = boosted_meta_sha256(meta)
    (folder / "boosted.json").write_text(json.dumps(meta))


def edit_meta(folder, **changes):
    "Change boosted.json as a forger would, its own digest made again: the checks behind that digest must hold."
    meta = json.loads((folder / "boosted.json").read_text())
    meta.update(changes)
    meta["meta_sha256"] = boosted_meta_sha256(meta)
    (folder / "boosted.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_saved_folder_records_checksums_and_loads(saved, frame, lib):
    meta = json.loads((saved[lib] / "boosted.json").read_text())
    assert set(meta["sha256"]) == {meta["model_file"], "prep.skops"}
    model = BoostedModel.load(saved[lib])
    assert model.predict_proba(frame.drop(columns="y")).shape == (len(frame), 2)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_a_changed_file_fails_its_checksum(saved, lib, tmp_path):
    folder = copy(saved, lib, tmp_path)
    path = folder / json.loads((folder / "boosted.json").read_text())["model_file"]
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01  # one bit
    path.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="sha256 differs") as e: BoostedModel.load(folder)
    assert e.value.path == path


@pytest.mark.parametrize("lib", ["xgboost", "catboost"])
def test_a_model_file_that_is_a_folder_is_named_as_one(saved, lib, tmp_path):
    "Probe 14, f11: a folder in the model file's place was 'listed in boosted.json, missing'; the checks: 'no such file'."
    folder = copy(saved, lib, tmp_path)
    path = folder / json.loads((folder / "boosted.json").read_text())["model_file"]
    path.unlink()
    path.mkdir()
    with pytest.raises(IsADirectoryError, match="listed in boosted.json as a file, is a folder"): BoostedModel.load(folder)
    check = tb.check_xgboost_json if lib == "xgboost" else tb.check_catboost_file
    with pytest.raises(IsADirectoryError, match=r"is a folder, not .* file: pass the file"): check(path)


def lgb_variants(text):
    first = text.index("Tree=1")
    return {
        "truncated": (text[:first], "no 'end of trees' line"),
        "truncated in its parameters": (text[:text.index("end of parameters")], "without its 'end of parameters'"),
        "split_feature out of range": (re.sub(r"split_feature=\d", "split_feature=7", text, count=1),
                                       "a split on feature 7, expected features 0..4"),
        "huge num_leaves": (text.replace("num_leaves=", "num_leaves=2000000000", 1).replace("tree_sizes=", "x=", 1),
                            "num_leaves = 2000000000"),
        "arrays shorter than num_leaves": (re.sub(r"num_leaves=(\d+)", lambda m: f"num_leaves={int(m[1]) + 5}", text,
                                                  count=1).replace("tree_sizes=", "x=", 1), "leaf_value: expected"),
        "child out of range": (re.sub(r"left_child=-?\d+", "left_child=9", text, count=1).replace("tree_sizes=", "x=", 1),
                               "left child points outside"),
        "tree_sizes wrong": (text.replace("tree_sizes=", "tree_sizes=1", 1), "tree_sizes"),
        "no header": (text.replace("max_feature_idx=", "max_feature=", 1), "no max_feature_idx= line"),
        "garbage": ("\x00\x01binary junk", "not a LightGBM text model"),
        "empty": ("", "the file is empty"),
    }


@pytest.mark.parametrize("variant", list(lgb_variants("tree\nTree=1\nend of parameters")))
def test_tampered_lightgbm_file_is_a_named_error_not_an_abort(saved, frame, variant, tmp_path):
    folder = copy(saved, "lightgbm", tmp_path)
    path = folder / "model.txt"
    text, match = lgb_variants(path.read_text())[variant]
    path.write_text(text)
    resign(folder)
    with pytest.raises(ModelFileError, match=re.escape(match)) as e: BoostedModel.load(folder)
    assert e.value.path == path and str(path) in str(e.value)


def xgb_tree(doc, i=0):
    return doc["learner"]["gradient_booster"]["model"]["trees"][i]


def xgb_variants():
    def split_out(doc): xgb_tree(doc)["split_indices"][0] = 5
    def child_out(doc): xgb_tree(doc, 1)["right_children"][0] = 10_000
    def cycle(doc): xgb_tree(doc)["left_children"][1], xgb_tree(doc)["right_children"][1] = 1, 2
    def short(doc): xgb_tree(doc)["split_conditions"].pop()
    def fewer_trees(doc): doc["learner"]["gradient_booster"]["model"]["trees"].pop()
    def wider(doc): doc["learner"]["learner_model_param"]["num_feature"] = "9"
    return {"split_indices out of range": (split_out, "split on feature 5, expected features 0..4"),
            "child out of range": (child_out, "tree 1: a right child points outside"),
            "a node as its own child": (cycle, "two parents"),
            "arrays of different lengths": (short, "split_conditions: expected"),
            "tree count": (fewer_trees, "num_trees says 15 trees, the file holds 14"),
            "feature count vs the saved preprocessing": (wider, "takes 9 features, its saved preprocessing makes 5")}


@pytest.mark.parametrize("variant", list(xgb_variants()))
def test_tampered_xgboost_file_is_refused_before_predict_could_crash(saved, frame, variant, tmp_path):
    folder = copy(saved, "xgboost", tmp_path)
    path = folder / "model.json"
    doc = json.loads(path.read_text())
    change, match = xgb_variants()[variant]
    change(doc)
    path.write_text(json.dumps(doc))
    resign(folder)
    with pytest.raises(ModelFileError, match=re.escape(match)) as e: BoostedModel.load(folder)
    assert e.value.path == path


@pytest.mark.parametrize("content, match", [(b"\xff\xfe garbage", "not JSON text"), (b"[1, 2]", "no 'learner'"),
                                            (b"", "the file is empty")])
def test_garbage_xgboost_file(saved, content, match, tmp_path):
    folder = copy(saved, "xgboost", tmp_path)
    (folder / "model.json").write_bytes(content)
    resign(folder)
    with pytest.raises(ModelFileError, match=re.escape(match)): BoostedModel.load(folder)


@pytest.mark.parametrize("cut, match", [(lambda raw: raw[:len(raw) // 2], "truncated"),
                                        (lambda raw: b"XXXX" + raw[4:], "expected the 'CBM1' header"),
                                        (lambda raw: raw[:6], "truncated")])
def test_tampered_catboost_file(saved, cut, match, tmp_path):
    folder = copy(saved, "catboost", tmp_path)
    path = folder / "model.cbm"
    path.write_bytes(cut(path.read_bytes()))
    resign(folder)
    with pytest.raises(ModelFileError, match=re.escape(match)) as e: BoostedModel.load(folder)
    assert e.value.path == path


def test_checks_accept_what_the_libraries_write(saved):
    assert check_xgboost_json(saved["xgboost"] / "model.json", n_features=5) == 15
    assert check_lightgbm_text(saved["lightgbm"] / "model.txt", n_features=5) == 15
    assert check_catboost_file(saved["catboost"] / "model.cbm") is None


def zip_without_schema(path):
    with zipfile.ZipFile(path, "w") as z: z.writestr("other.txt", "hello")


@pytest.mark.parametrize("make, match", [
    (lambda p: p.write_bytes(b""), "the file is empty (0 bytes)"),
    (lambda p: p.write_bytes(b"not a zip at all"), "not a zip archive"),
    (zip_without_schema, "a zip archive without schema.json"),
])
def test_malformed_prep_skops_is_named(saved, make, match, tmp_path):
    folder = copy(saved, "lightgbm", tmp_path)
    path = folder / "prep.skops"
    make(path)
    with pytest.raises(ValueError, match=re.escape(match)) as e: tb.FramePrep.load(path)
    assert str(path) in str(e.value) and "FramePrep.save" in str(e.value)
    resign(folder)
    with pytest.raises(ModelFileError, match=re.escape(match)) as e: BoostedModel.load(folder)
    assert e.value.path == path


@pytest.mark.parametrize("content, match", [
    ('{"format": "something else", "model": "model.txt"}', "no library, model_file, best_iteration"),
    ("[1, 2, 3]", "a JSON list"),
    ("{not json", "not JSON"),
    ('{"library": "sklearn", "model_file": "model.txt", "best_iteration": 3}', "library 'sklearn'"),
    ('{"library": "lightgbm", "model_file": "model.txt", "best_iteration": -1}', "best_iteration must be"),
    ('{"library": "lightgbm", "model_file": "model.txt", "best_iteration": 99}', "holds 15 rounds"),
])
def test_boosted_json_in_another_layout_is_named(saved, content, match, tmp_path):
    folder = copy(saved, "lightgbm", tmp_path)
    (folder / "boosted.json").write_text(content)
    with pytest.raises(ModelFileError, match=re.escape(match)) as e: BoostedModel.load(folder)
    assert e.value.path == folder / "boosted.json"


@pytest.mark.parametrize("name", ["../outside.json", "/etc/passwd", "sub/../../outside.json"])
def test_paths_in_boosted_json_stay_in_the_folder(saved, name, tmp_path):
    folder = copy(saved, "xgboost", tmp_path)
    shutil.copy(folder / "model.json", tmp_path / "outside.json")  # a valid model, outside the folder
    edit_meta(folder, model_file=name)
    with pytest.raises(ModelFileError, match="leaves the folder"): BoostedModel.load(folder)
    edit_meta(folder, model_file="model.json", sha256={name: "0" * 64})
    with pytest.raises(ModelFileError, match="leaves the folder"): BoostedModel.load(folder)


def test_a_symlink_out_of_the_folder_is_refused(saved, tmp_path):
    folder = copy(saved, "xgboost", tmp_path)
    shutil.move(folder / "model.json", tmp_path / "elsewhere.json")
    (folder / "model.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(ModelFileError, match="leaves the folder"): BoostedModel.load(folder)


def test_missing_files_are_named(saved, tmp_path):
    folder = copy(saved, "xgboost", tmp_path)
    with pytest.raises(FileNotFoundError, match="has no boosted.json"): BoostedModel.load(tmp_path)
    (folder / "model.json").unlink()
    with pytest.raises(FileNotFoundError, match="model.json: listed in boosted.json, missing"):
        BoostedModel.load(folder)


def test_a_folder_saved_before_checksums_still_loads_with_structural_checks(saved, frame, tmp_path):
    folder = copy(saved, "xgboost", tmp_path)
    meta = json.loads((folder / "boosted.json").read_text())
    (folder / "boosted.json").write_text(json.dumps({k: meta[k] for k in ("library", "model_file", "best_iteration")}))
    assert BoostedModel.load(folder).predict(frame.head(3)).shape == (3,)
    doc = json.loads((folder / "model.json").read_text())
    xgb_tree(doc)["split_indices"][0] = 50
    (folder / "model.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFileError, match="split on feature 50"): BoostedModel.load(folder)


def test_a_folder_saved_before_checksums_warns_once_that_its_files_are_checked_for_structure_only(saved, frame,
                                                                                                  tmp_path):
    """Probe 112, f3: another run's prep.skops loaded into such a folder without a word (its predictions moved by
    0.81). The warning says how to save it again; saved so, a swapped file is refused by its digest."""
    folder = copy(saved, "xgboost", tmp_path)
    meta = json.loads((folder / "boosted.json").read_text())
    (folder / "boosted.json").write_text(json.dumps({k: meta[k] for k in ("library", "model_file", "best_iteration")}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BoostedModel.load(folder)
    (said,) = [str(w.message) for w in caught]
    assert "records no sha256" in said and "checked for their structure only" in said
    advice = re.search(r"tb\.(BoostedModel\.load\(.*\)\.save\(.*\))$", said).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eval(advice, {"BoostedModel": BoostedModel})  # the advice, as written, records the digests
    assert set(json.loads((folder / "boosted.json").read_text())["sha256"]) == {"model.json", "prep.skops"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = BoostedModel.load(folder)
    assert np.array_equal(again.predict_proba(frame.head(20)), model.predict_proba(frame.head(20)))
    shutil.copy(saved["catboost"] / "prep.skops", folder / "prep.skops")
    with pytest.raises(ModelFileError, match="prep.skops: its sha256 differs"): BoostedModel.load(folder)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_a_changed_best_round_in_boosted_json_is_refused_by_its_own_digest(saved, frame, lib, tmp_path):
    """Probe 119, finding 3: one bit flipped in boosted.json ('best_iteration': 14 -> 10) loaded without a word, and
    the model predicted with four rounds fewer (probabilities moved by 0.09): the files had digests, boosted.json
    none. Its `meta_sha256` covers the rest of its content; whitespace is no content."""
    folder = copy(saved, lib, tmp_path)
    path = folder / "boosted.json"
    raw = path.read_bytes()
    assert b'"best_iteration": 14' in raw
    path.write_bytes(raw.replace(b'"best_iteration": 14', b'"best_iteration": 10'))  # '4' -> '0': one bit
    with pytest.raises(ModelFileError, match=r"differs from the digest it recorded of itself") as e:
        BoostedModel.load(folder)
    assert e.value.path == path
    path.write_bytes(json.dumps(json.loads(raw)).encode())  # the same content, laid out otherwise: loads
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = BoostedModel.load(folder)
    assert np.array_equal(same.predict_proba(frame.head(20)), BoostedModel.load(saved[lib]).predict_proba(frame.head(20)))


def test_no_single_bit_flip_of_boosted_json_loads_another_model(saved, frame, tmp_path):
    "Probe 119, finding 3: every one-bit change of boosted.json is refused, or loads the very same model."
    folder = copy(saved, "xgboost", tmp_path)
    path = folder / "boosted.json"
    raw = path.read_bytes()
    want = BoostedModel.load(saved["xgboost"]).predict_proba(frame.head(50))
    silent = []
    for pos in range(len(raw)):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x04
        path.write_bytes(bytes(flipped))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = BoostedModel.load(folder).predict_proba(frame.head(50))
        except (ModelFileError, FileNotFoundError):
            continue
        if not np.array_equal(got, want): silent.append(pos)
    assert silent == []


def test_a_folder_saved_before_boosted_json_digested_itself_loads_with_one_warning(saved, frame, tmp_path):
    "Its files are checked by their digests; its own content is not: one warning says so, and how to save it again."
    folder = copy(saved, "lightgbm", tmp_path)
    meta = json.loads((folder / "boosted.json").read_text())
    del meta["meta_sha256"]
    (folder / "boosted.json").write_text(json.dumps(meta))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BoostedModel.load(folder)
    (said,) = [str(w.message) for w in caught]
    assert "records no digest of its own content" in said and ".save(" in said
    model.save(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = BoostedModel.load(folder)
    assert np.array_equal(again.predict_proba(frame.head(20)), model.predict_proba(frame.head(20)))


XGB_KINDS = {
    "multiclass": {"objective": "multi:softprob", "num_class": 3},
    "regression": {"objective": "reg:squarederror"},
    "dart": {"booster": "dart", "objective": "binary:logistic", "rate_drop": 0.3},
    "gblinear": {"booster": "gblinear", "objective": "binary:logistic"},
    "exact with pruned nodes": {"tree_method": "exact", "objective": "binary:logistic", "gamma": 5.0, "max_depth": 8},
    "parallel trees": {"num_parallel_tree": 3, "subsample": 0.5, "objective": "binary:logistic"},
    "multi-output trees": {"multi_strategy": "multi_output_tree", "objective": "multi:softprob", "num_class": 3},
}


@pytest.mark.parametrize("kind", list(XGB_KINDS))
def test_the_xgboost_checks_accept_every_kind_of_model(kind, tmp_path):
    "No false alarm: whatever XGBoost writes, its checks accept (and the model still loads and predicts)."
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = rng.integers(0, 3, 300) if "num_class" in XGB_KINDS[kind] else (X[:, 0] > 0).astype(int)
    booster = xgb.train({**XGB_KINDS[kind], "nthread": 1}, xgb.DMatrix(X, label=y), num_boost_round=6)
    booster.save_model(tmp_path / "m.json")
    rounds = check_xgboost_json(tmp_path / "m.json", n_features=6)
    assert rounds == (None if kind == "gblinear" else 6)
    assert tb.booster_library("xgboost").load(tmp_path / "m.json", 6).num_boosted_rounds() == 6


@pytest.mark.parametrize("kind", ["multiclass", "categorical", "linear_tree", "constant", "regression"])
def test_the_lightgbm_checks_accept_every_kind_of_model(kind, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 5))).add_prefix("f").assign(c=rng.integers(0, 8, 400))
    y = (X.f0 + (X.c % 2) > 0.5).astype(int)
    params, kw = {"objective": "binary"}, {}
    if kind == "multiclass": params, y = {"objective": "multiclass", "num_class": 3}, rng.integers(0, 3, 400)
    if kind == "categorical": params, kw = {"objective": "binary", "max_cat_to_onehot": 2}, {"categorical_feature": ["c"]}
    if kind == "linear_tree": params = {"objective": "binary", "linear_tree": True}
    if kind == "constant": params = {"objective": "binary", "min_data_in_leaf": 1000}  # one-leaf trees
    if kind == "regression": params, y = {"objective": "regression"}, X.f1.to_numpy()
    booster = lgb.train({**params, "verbosity": -1, "num_threads": 1}, lgb.Dataset(X, y, **kw), num_boost_round=6)
    booster.save_model(tmp_path / "m.txt")
    assert check_lightgbm_text(tmp_path / "m.txt", n_features=6) == booster.current_iteration()
    assert tb.booster_library("lightgbm").load(tmp_path / "m.txt", 6).current_iteration() == booster.current_iteration()
