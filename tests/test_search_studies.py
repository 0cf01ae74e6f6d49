"""Probe 101: what a search gives back and how a study is joined. `best_config` holds the values the best trial ran
with (a tuple, a class), also when that trial ran in an earlier call; a search without validation data is refused
(the tuple form) or said (a plain objective); a study whose trials all failed for the wrong direction is made again
to the right one; a new study name beside others is said, with the near one; a range, a set or timeout=True are
refused at the door."""
import warnings

import pytest
from torch import nn

import trainbook as tb
from trainbook.space import choice_labels, config_values

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
    # probe 108: in a database too (Optuna samples the choices' labels, which it keeps as they are): continued
    db = str(tmp_path / "s.db")
    tb.search(objective, space, 1, storage=db, study_name="s", live=False)
    again = tb.search(objective, space, 1, storage=db, study_name="s", live=False)
    assert again.states == {"COMPLETE": 2} and seen[1]["layers"] in space["layers"]


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


# ---- probe 108: choices Optuna cannot store as they are; a study's direction and objectives when joined

def choose(seen):
    "An objective that keeps what each trial was given."
    def objective(config):
        seen[config.trial.number] = dict(config)
        return config["x"]
    return objective


def test_tuple_class_function_and_numpy_choices_run_in_a_database_and_come_back_as_themselves(tmp_path):
    """r_4: tuple choices crashed the search at trial 10 (the sampler read the stored trials: 'CategoricalDistribution
    does not support dynamic value space'); r_5: a function, a class or np.int64 as a choice failed trial 0 with
    'Object of type ... is not JSON serializable'. Optuna samples their labels; the objective, the trials table and
    best_config get the space's own objects, in this call and in a continued study."""
    np = pytest.importorskip("numpy")
    space = {"x": (0.0, 1.0), "s": [(1, 2), (3, (4, 5))], "act": [abs, round], "cls": [nn.ReLU, nn.Tanh],
             "width": [np.int64(8), np.int64(16)], "opt": [None, "adam"]}
    db, seen = str(tmp_path / "s.db"), {}
    res = tb.search(choose(seen), space, 12, storage=db, study_name="s", live=False)  # TPE reads the study from 10
    assert res.states == {"COMPLETE": 12}
    for number, config in seen.items():
        assert all(any(config[k] is c for c in space[k]) for k in ("s", "act", "cls", "width")), config
    assert {seen[n]["s"] for n in seen} == {(1, 2), (3, (4, 5))}  # both drawn
    trials = res.trials
    for column in ("s", "act", "cls", "width"):
        assert trials[f"params_{column}"].tolist() == [seen[n][column] for n in trials.number], column
    # a new call (the labels again, from a new process's space) continues it; its best is the space's objects
    later = tb.search(choose(seen), space, 2, storage=db, study_name="s", live=False)
    assert later.states == {"COMPLETE": 14}
    assert later.best_config == seen[later.best_trial] and later.best_config["cls"] is seen[later.best_trial]["cls"]
    assert type(later.best_config["width"]) is np.int64
    assert config_values({"x": 0.5, "width": "8"}, space, {"width": "np.int64(16)"})["width"] == 16  # the label wins
    # the labels: a JSON-plain list is given to Optuna as it is (studies made before stay as they were)
    assert choice_labels([2, "a", None, 2.5, True]) is None
    assert choice_labels([(1, 2), abs, nn.ReLU, np.int64(8)]) == ["(1, 2)", "abs", "ReLU", "np.int64(8)"]
    one, two = choice_labels([lambda: 1, lambda: 2])  # no address: by what each does, the same each run
    assert one.startswith("<lambda> #") and one != two and choice_labels([lambda: 2, lambda: 1]) == [two, one]


def test_true_1_0_false_stay_apart(tmp_path):
    "Minor: Optuna finds a sampled choice by ==, so [True, 1, 0, False] in a database gave True for 1, 0 for False."
    seen = {}
    space = {"x": (0.0, 1.0), "flag": [True, 1, 0, False]}
    res = tb.search(choose(seen), space, 16, storage=str(tmp_path / "s.db"), study_name="s", live=False)
    given = {(type(c["flag"]), c["flag"]) for c in seen.values()}
    assert given == {(bool, True), (int, 1), (int, 0), (bool, False)}, given
    assert [(type(v), v) for v in res.trials.params_flag] == [(type(seen[n]["flag"]), seen[n]["flag"])
                                                              for n in res.trials.number]


@pytest.mark.filterwarnings("ignore:Choices for a categorical distribution")  # Optuna's, reading the old study
def test_a_study_made_before_the_labels_is_refused_with_what_to_do(tmp_path):
    "A study whose tuple choices Optuna was given as they are (before labels) is named, not continued wrongly."
    db = str(tmp_path / "s.db")
    old = optuna.create_study(storage=f"sqlite:///{db}", study_name="old")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna's own: 'should be a tuple of None, bool, int, float and str'
        old.optimize(lambda t: len(t.suggest_categorical("s", [(1, 2), (3, 4)])), n_trials=1)
    with pytest.raises(ValueError, match=r"space\['s'\]: study 'old' in .* was made by an earlier trainbook.*"
                                         r"pass a new study_name"):
        tb.search(lambda c: 0.0, {"s": [(1, 2), (3, 4)]}, 1, storage=db, study_name="old", live=False)
    assert len(optuna.load_study(study_name="old", storage=f"sqlite:///{db}").trials) == 1


def test_a_study_whose_trials_failed_for_another_reason_keeps_them_and_its_direction(tmp_path):
    "r_6: a maximized study whose trials failed for a NaN was deleted and made again to minimize by direction=None."
    db, space = str(tmp_path / "s.db"), {"x": (0.0, 1.0)}
    with pytest.raises(RuntimeError, match="no trial of study 'acc' completed"):
        tb.search(lambda c: float("nan"), space, 3, storage=db, study_name="acc", direction="maximize", live=False)
    with pytest.raises(ValueError, match=r"study 'acc' in .* already exists and maximizes: pass "
                                         r"direction='maximize' to continue it, or a new study_name to minimize"):
        tb.search(lambda c: c["x"], space, 1, storage=db, study_name="acc", live=False)
    kept = optuna.load_study(study_name="acc", storage=f"sqlite:///{db}")
    assert kept.direction.name == "MAXIMIZE" and [t.state.name for t in kept.trials] == ["FAIL"] * 3
    assert all("fail_reason" in t.user_attrs for t in kept.trials)
    res = tb.search(lambda c: c["x"], space, 1, storage=db, study_name="acc", direction="maximize", live=False)
    assert res.states == {"FAIL": 3, "COMPLETE": 1}


def test_a_multi_objective_study_is_refused_by_name(tmp_path):
    "r_7: Optuna's bare 'This attribute is not available during multi-objective optimization'."
    db = str(tmp_path / "s.db")
    optuna.create_study(storage=f"sqlite:///{db}", study_name="multi", directions=["minimize", "maximize"])
    with pytest.raises(ValueError, match=r"study 'multi' in .* has 2 objectives \(minimize, maximize\): tb.search "
                                         r"drives single-objective studies.*pass a new study_name"):
        tb.search(lambda c: c["x"], {"x": (0.0, 1.0)}, 1, storage=db, study_name="multi", live=False)


def test_n_trials_may_be_a_numpy_integer_but_not_a_bool(tmp_path):
    np = pytest.importorskip("numpy")
    res = tb.search(lambda c: c["x"], {"x": (0.0, 1.0)}, np.int64(2), storage=str(tmp_path / "s.db"), live=False)
    assert res.states == {"COMPLETE": 2}
    for bad in (True, np.bool_(True), 2.0):
        with pytest.raises(ValueError, match="n_trials must be a positive integer"):
            tb.search(lambda c: c["x"], {"x": (0.0, 1.0)}, bad, storage=str(tmp_path / "t.db"), live=False)


def test_choices_of_one_str_are_two_configs_and_lambdas_keep_their_labels_in_any_order(tmp_path):
    """Probe 110: `(16,)` beside `"(16,)"` was one config (the second never trained, valued as the first), and two
    lambdas were labelled by their place, so a continued study with them swapped mapped every trial to the other."""
    ran = []

    def objective(config):
        ran.append(config["width"])
        return 0.0 if config["width"] == "(16,)" else 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tb.search(objective, {"width": [(16,), "(16,)"]}, 6, storage=f"sqlite:///{tmp_path / 's.db'}",
                        study_name="w", live=False, seed=0)
    assert {repr(w) for w in ran} == {"(16,)", "'(16,)'"} and res.best_config["width"] == "(16,)"
    relu, gelu = (lambda: nn.ReLU()), (lambda: nn.GELU())
    assert choice_labels([relu, gelu]) == choice_labels([gelu, relu])[::-1]  # by what each does, not its place

    class Same:
        def __repr__(self): return "Same()"

    with pytest.warns(UserWarning, match=r"space\['act'\]: some choices look alike"):
        tb.search(lambda config: 0.0, {"act": [Same(), Same()]}, 1, storage=f"sqlite:///{tmp_path / 's.db'}",
                  study_name="same", live=False)


def test_a_continued_study_whose_constant_changed_trains_its_configs_again(tmp_path):
    "A repeat is the same sampled values and the same constants: a space whose constant changed is another config."
    ran = []

    def objective(config):
        ran.append((config["x"], config["c"]))
        return float(config["x"])

    db = f"sqlite:///{tmp_path / 's.db'}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tb.search(objective, {"x": [1, 2], "c": 5}, 6, storage=db, study_name="c", live=False, seed=0)
        tb.search(objective, {"x": [1, 2], "c": 6}, 2, storage=db, study_name="c", live=False, seed=1)
    assert {c for _, c in ran} == {5, 6}  # the first trial of the new constant trained, not taken as a repeat
