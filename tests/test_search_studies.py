"""Probe 101: what a search gives back and how a study is joined. `best_config` holds the values the best trial ran
with (a tuple, a class), also when that trial ran in an earlier call; a search without validation data is refused
(the tuple form) or said (a plain objective); a study whose trials all failed for the wrong direction is made again
to the right one; a new study name beside others is said, with the near one; a range, a set or timeout=True are
refused at the door."""
import warnings

import pytest
from torch import nn

import trainbook as tb
from trainbook.tuning import config_values

from helpers import blobs, mlp

optuna = pytest.importorskip("optuna")


def loaders():
    X, y = blobs(128, seed=1)
    return tb.TensorLoader(X[:96], y[:96], batch_size=32), tb.TensorLoader(X[96:], y[96:], batch_size=32)


def said(fn):
    "What `fn()` returns, and the messages of the warnings it gave."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught]


def test_best_config_is_what_the_best_trial_ran_with_also_when_an_earlier_call_ran_it(tmp_path):
    "r_2: a tuple choice and a class constant came back as their str: make_model(**res.best_config) built another."
    seen = {}
    space = {"layers": [(16,), (32, 16)], "act": nn.ReLU, "x": (0.0, 1.0)}

    def objective(config):
        seen[config.trial.number] = dict(config)
        return config["x"] + len(config["layers"])

    storage = optuna.storages.InMemoryStorage()  # a database would keep the tuple choices as lists: see below
    first = tb.search(objective, space, 4, storage=storage, study_name="s", live=False)
    assert first.best_config == seen[first.best_trial]
    # a later call's best is a trial of the first call: read from the study, each value mapped to the space's own
    later = tb.search(lambda c: 100.0, space, 1, storage=storage, study_name="s", live=False)
    assert later.best_trial == first.best_trial and later.best_config == seen[first.best_trial]
    assert later.best_config["act"] is nn.ReLU and isinstance(later.best_config["layers"], tuple)
    assert config_values({"flag": True, "n": 1}, {"flag": [1, True], "n": [True, 1]}) == {"flag": True, "n": 1}
    assert config_values({"flag": True}, {"flag": [1, True]})["flag"] is True  # True is not the choice 1
    # in a database the tuple choices come back as lists, which Optuna refuses to continue with: said, with the fix
    db = str(tmp_path / "s.db")
    tb.search(objective, space, 1, storage=db, study_name="s", live=False)
    with pytest.raises(ValueError, match=r"space\['layers'\]: study 's' in .* keeps the choices \(\(16,\), \(32, 16\)\) as "
                                         r"\(\[16\], \[32, 16\]\).*give choices as strings.*\['\(16,\)', '\(32, 16\)'\]"):
        tb.search(objective, space, 1, storage=db, study_name="s", live=False)


def test_a_search_without_validation_data_is_refused_or_said(tmp_path):
    "r_8: dl_valid=None searched on the training loss, pruning off, without a word."
    dl_train, _ = loaders()
    objective = (lambda hidden=8: mlp(h=hidden), dl_train, None, nn.CrossEntropyLoss(),
                 tb.TrainConfig(epochs=1, device="cpu"))
    with pytest.raises(ValueError, match=r"dl_valid is None, so no trial has a valid_loss.*monitor='train_loss'"):
        tb.search(objective, {"lr": ("log", 1e-3, 1e-1)}, 1, storage=str(tmp_path / "s.db"), live=False)
    assert not (tmp_path / "s.db").exists()  # before any study
    meant = (*objective[:4], tb.TrainConfig(epochs=1, device="cpu", monitor="train_loss"))
    res, messages = said(lambda: tb.search(meant, {"lr": ("log", 1e-3, 1e-1)}, 1, storage=str(tmp_path / "t.db"),
                                           live=False))
    assert res.states == {"COMPLETE": 1} and not [m for m in messages if "validation" in m], messages
    # a plain objective that fits without dl_valid: its trials are said, and record what their value is of
    def plain(config):
        return tb.fit(mlp(h=8), dl_train, None, loss_fn=nn.CrossEntropyLoss(), live=False,
                      config=tb.TrainConfig(epochs=1, lr=config["lr"], device="cpu"))
    res, messages = said(lambda: tb.search(plain, {"lr": ("log", 1e-3, 1e-1)}, 2, storage=str(tmp_path / "u.db"),
                                           live=False))
    assert [m for m in messages if m.startswith("search: trial(s) 0, 1 had no validation data") and
            "best train_loss" in m], messages
    assert [t.user_attrs["monitor"] for t in res.study.trials] == ["train_loss", "train_loss"]


def test_a_study_whose_trials_failed_for_the_direction_is_continued_as_the_error_advises(tmp_path):
    "r_1: the advised continuation (same study_name, direction='maximize') was refused: the study minimized."
    db = str(tmp_path / "s.db")
    dl_train, dl_valid = loaders()
    cfg = tb.TrainConfig(epochs=1, device="cpu", monitor="valid_accuracy", mode="max")

    def objective(config):
        return tb.fit(mlp(h=8), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), metrics="accuracy",
                      config=cfg.replace(lr=config["lr"]), live=False)

    space = {"lr": ("log", 1e-3, 1e-1)}
    with pytest.raises(ValueError, match="pass direction='maximize'") as err:
        tb.search(objective, space, 2, storage=db, study_name="acc", live=False)
    assert "continue it with search(..., study_name='acc'" in " ".join(err.value.__notes__)
    res, messages = said(lambda: tb.search(objective, space, 2, storage=db, study_name="acc", live=False,
                                           direction="maximize"))
    assert res.states == {"COMPLETE": 2} and res.study.direction.name == "MAXIMIZE"
    assert f"study 'acc' in {db} minimized and no trial of it finished (1 failed): made again to maximize" in messages
    # a study with a finished trial keeps its direction: refused, naming both ways on
    with pytest.raises(ValueError, match=r"already exists and maximizes: pass direction='maximize' to continue it, "
                                         r"or a new study_name to minimize"):
        tb.search(lambda c: c["lr"], space, 1, storage=db, study_name="acc", direction="minimize", live=False)


def test_a_new_study_name_beside_others_is_said_with_the_near_one(tmp_path):
    "r_5: a typo ('mpl' for 'mlp') started an empty study silently, reported as if it were the one meant."
    db, objective, space = str(tmp_path / "s.db"), lambda c: (c["x"] - 1) ** 2, {"x": (-3.0, 3.0)}
    _, messages = said(lambda: tb.search(objective, space, 2, storage=db, study_name="mlp", live=False))
    assert not [m for m in messages if "is new" in m], messages  # the storage held no other study
    _, messages = said(lambda: tb.search(objective, space, 1, storage=db, study_name="mlp", live=False))
    assert not [m for m in messages if "is new" in m], messages  # joined
    _, messages = said(lambda: tb.search(objective, space, 1, storage=db, study_name="mpl", live=False))
    assert f"study 'mpl' is new in {db}, which holds 1 other(s): 'mlp' (did you mean 'mlp'?); it starts empty " \
           "(pass an existing study_name to continue one)" in messages
    _, messages = said(lambda: tb.search(objective, space, 1, storage=db, live=False))
    assert not [m for m in messages if "is new" in m], messages  # a dated name of its own is never a typo


@pytest.mark.parametrize("kw, match", [
    (dict(space={"hidden": range(4, 8)}), r"space\['hidden'\]: a range would reach every trial as one constant; "
                                          r"for choices give a list, \[4, 5, 6, 7\], or for an integer range "
                                          r"\('int', 4, 7\)"),
    (dict(space={"hidden": {8, 4}}), r"space\['hidden'\]: a set would reach every trial as one constant; for "
                                     r"choices give a list, \[4, 8\]$"),
    (dict(space={"hidden": frozenset({"a"})}), r"space\['hidden'\]: a frozenset"),
    (dict(timeout=True), "timeout must be a positive number of seconds, got True"),
])
def test_a_range_a_set_or_timeout_true_is_refused_at_the_door(tmp_path, kw, match):
    "r_3: a range or a set was a constant, failing in torch inside trial 0; r_4: timeout=True was 1 second."
    args = {"space": {"hidden": [4, 8]}, "storage": str(tmp_path / "s.db"), "live": False, **kw}
    with pytest.raises(ValueError, match=match):
        tb.search(lambda c: 0.0, args.pop("space"), 2, **args)
    assert not (tmp_path / "s.db").exists()
