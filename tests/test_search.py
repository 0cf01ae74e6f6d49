"Search with Optuna: pruning from the monitored value, the best trial, a shared SQLite study, tracked trials."
import subprocess, sys, textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.tuning import Pruning, StudyPanel

from helpers import blobs, mlp

optuna = pytest.importorskip("optuna")
ROOT = Path(__file__).resolve().parent.parent


def loaders():
    X, y = blobs(256, seed=1)
    dl_train = tb.TensorLoader(X[:192], y[:192], batch_size=32, shuffle=True)
    return dl_train, tb.TensorLoader(X[192:], y[192:], batch_size=64)


def make_model(hidden=16):
    return mlp(h=hidden)


def form(epochs=5, **cfg):
    dl_train, dl_valid = loaders()
    config = tb.TrainConfig(epochs=epochs, device="cpu", **cfg)
    return (make_model, dl_train, dl_valid, nn.CrossEntropyLoss(), config)


def test_median_pruner_prunes_and_best_is_the_minimum(tmp_path):
    res = tb.search(form(), {"lr": ("log", 1e-4, 0.3), "hidden": ("int", 4, 32)}, 12,
                    storage=str(tmp_path / "s.db"), study_name="prune", pruner="median", live=False)
    trials = res.trials
    assert len(trials) == 12
    pruned, done = trials[trials.state == "PRUNED"], trials[trials.state == "COMPLETE"]
    assert len(pruned) >= 1
    assert res.best_value == done.value.min()
    assert res.best_trial == int(done.number[done.value.idxmin()])
    for n in pruned.number:  # a pruned trial is a run that the loop stopped early, as "pruned"
        run = res.runs[n]
        assert run.stopped == "pruned" and run.epoch < 4
    assert res.best_run.best == res.best_value and res.best_run.model is not None
    others = [r for n, r in res.runs.items() if n != res.best_trial]
    assert all(r.model is None for r in others)  # only the best keeps its weights
    assert set(res.best_config) == {"lr", "hidden"}


def test_pruning_callback_stops_the_run_as_pruned():
    class Trial:
        "Prunes at its second report."
        def __init__(self): self.values = []
        def report(self, value, step): self.values.append((step, value))
        def should_prune(self): return len(self.values) == 2
    trial = Trial()
    dl_train, dl_valid = loaders()
    run = tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), callbacks=[Pruning(trial)], live=False,
                 config=tb.TrainConfig(epochs=5, device="cpu"))
    assert run.stopped == "pruned" and run.epoch == 1
    assert [s for s, _ in trial.values] == [0, 1]
    monitored = list(run.records.series("loss", "valid").to_numpy())
    assert [v for _, v in trial.values] == monitored


def test_study_panel_overlays_the_trials_in_place():
    panel = StudyPanel(n_trials=2, mode="widget", every=0)
    panel.start(0, {"lr": 0.01})
    figure = panel.figure
    panel.report(0, 8, 0.9)
    panel.report(0, 16, 0.5)
    assert list(figure.data[0].y) == [0.9, 0.5]  # redrawn while the trial runs
    panel.end(0, "complete", (0, 0.5))
    panel.start(1, {"lr": 0.1})
    panel.report(1, 8, 1.2)
    panel.end(1, "pruned", (0, 0.5))
    assert panel.figure is figure and [t.line.dash for t in figure.data] == [None, "dash"]
    assert figure.layout.title.text == "trial 2 of 2 done, 1 pruned; best valid_loss 0.5 (trial 0: lr=0.01)"


WORKER = textwrap.dedent("""
    import sys, trainbook as tb
    res = tb.search(lambda c: (c["x"] - 0.3) ** 2, {"x": (0.0, 1.0)}, 4, storage=sys.argv[1],
                    study_name="shared", seed=None, live=False)
""")


def test_two_processes_share_one_sqlite_study(tmp_path):
    db = tmp_path / "shared.db"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", WORKER, str(db)]
    procs = [subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    study = optuna.load_study(study_name="shared", storage=f"sqlite:///{db}")
    trials = study.get_trials()
    assert len(trials) == 8 and sorted(t.number for t in trials) == list(range(8))
    assert len({t.user_attrs["worker"] for t in trials}) == 2  # both processes added trials to the one study


def test_trials_are_tracked_and_tagged(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    tb.track(f"sqlite:///{tmp_path}/mlruns.db", experiment="search")
    try:
        res = tb.search(form(epochs=2), {"lr": ("log", 1e-3, 1e-1)}, 3, storage=str(tmp_path / "s.db"),
                        study_name="tagged", pruner="none", live=False)
        table = tb.runs(filter="tags.study = 'tagged'")
    finally: tb.untrack()
    assert sorted(table.run_id) == sorted(r.extra["mlflow_run_id"] for r in res.runs.values())
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlruns.db")
    assert sorted(client.get_run(rid).data.tags["trial"] for rid in table.run_id) == ["0", "1", "2"]
    assert sorted(float(v) for v in table.lr) == sorted(t.params["lr"] for t in res.study.trials)


def test_function_objective_callable_space_and_direction(tmp_path):
    dl_train, dl_valid = loaders()
    def space(trial):  # Optuna's define-by-run form
        return {"lr": trial.suggest_float("lr", 1e-3, 1e-1, log=True), "epochs": 2}
    def objective(config):
        cfg = tb.TrainConfig(epochs=config["epochs"], lr=config["lr"], monitor="valid_accuracy", mode="max",
                             device="cpu")
        return tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), config=cfg,
                      metrics="accuracy", callbacks=config.callbacks, live=False)
    with pytest.raises(ValueError, match="direction='maximize'"):  # accuracy is maximized: not the default
        tb.search(objective, space, 1, storage=str(tmp_path / "a.db"), live=False)
    res = tb.search(objective, space, 3, storage=str(tmp_path / "b.db"), direction="maximize", pruner="none",
                    live=False)
    assert res.best_config["epochs"] == 2  # constants are part of the best config
    assert res.best_value == max(t.value for t in res.study.trials)
    def forgetful(config):  # its fit never gets the pruning callback
        return tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), live=False,
                      config=tb.TrainConfig(epochs=1, lr=config["lr"], device="cpu"))
    with pytest.warns(UserWarning, match="callbacks=config.callbacks"):
        tb.search(forgetful, {"lr": ("log", 1e-3, 1e-1)}, 1, storage=str(tmp_path / "d.db"), live=False)
    base = form(epochs=2, monitor="valid_loss")
    res = tb.search(base, {"lr": ("log", 1e-3, 1e-1)}, 2, storage=str(tmp_path / "c.db"), pruner="none",
                    live=False)
    assert res.study.direction.name == "MINIMIZE"


@pytest.mark.parametrize("kw, match", [
    (dict(n_trials=0), "n_trials"),
    (dict(pruner="sometimes"), "pruner"),
    (dict(space={"lr": ("log", -1, 1)}), "space\\['lr'\\]"),
    (dict(space={"lr": ("exp", 1, 2, 3)}), "space\\['lr'\\]"),
    (dict(objective=(1, 2, 3)), "5-tuple|\\(model_factory"),
    (dict(direction="down"), "direction"),
])
def test_bad_input(tmp_path, kw, match):
    args = dict(objective=lambda c: 0.0, space={"x": (0.0, 1.0)}, n_trials=1, storage=str(tmp_path / "x.db"),
                live=False)
    args.update(kw)
    with pytest.raises((ValueError, TypeError), match=match):
        tb.search(args.pop("objective"), args.pop("space"), args.pop("n_trials"), **args)
    assert not (tmp_path / "x.db").exists()  # refused at the door, before a study was made
