"""Probe 127: the journey in a plain Python script, Ctrl-C at many moments (held out from the other tests)."""
import os, signal
from datetime import datetime, timezone

import pytest
import torch
from torch import nn

import trainbook as tb

from helpers import blobs, ctrl_c_at, executing, interrupted, mlp

optuna = pytest.importorskip("optuna")


def loaders():
    X, y = blobs(n=96)
    cut = int(len(X) * 0.75)
    return (tb.TensorLoader(X[:cut], y[:cut], batch_size=16, shuffle=True, seed=0),
            tb.TensorLoader(X[cut:], y[cut:], batch_size=32))


def sigint_objective(press_at: int):
    """A search objective that fits one epoch, and at trial `press_at` gets a real SIGINT while it builds its model
    (outside fit), as a Ctrl-C in a terminal would land."""
    dl_train, dl_valid = loaders()
    def objective(config):
        if config.trial.number == press_at: os.kill(os.getpid(), signal.SIGINT)
        model = mlp()
        return tb.fit(model, dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), callbacks=config.callbacks,
                      config=tb.TrainConfig(epochs=1, lr=config["lr"], device="cpu"), live=False)
    return objective


def test_a_ctrl_c_outside_a_trials_fit_stops_a_plain_script(tmp_path):
    """A script whose search got a Ctrl-C while the objective built trial 1's model went on past the partial search
    (search returned it, stopped 'interrupted', and the script exited 0): it now stops, the study kept."""
    db = tmp_path / "s.db"
    space = lambda trial: {"lr": [0.01, 0.02, 0.03][trial.number]}
    with pytest.raises(KeyboardInterrupt, match=r"search interrupted: a Ctrl-C stopped it outside a trial's run "
                       r"\(in the objective, or between trials\), so the script stops here\. Study '[^']+' in "
                       r".*s\.db keeps its 1 finished trial\(s\)") as caught:
        tb.search(sigint_objective(1), space, 3, storage=str(db), live=False)
    res = caught.value.result
    assert caught.value.run is None and res.stopped == "interrupted"
    assert f"study_name={res.study.study_name!r}, storage={str(db)!r}" in str(caught.value)
    stored = optuna.load_study(study_name=res.study.study_name, storage=f"sqlite:///{db}")
    assert [t.state.name for t in stored.trials] == ["COMPLETE", "FAIL"]  # trial 2 never ran
    assert res.best_trial == 0


def test_in_a_notebook_a_ctrl_c_outside_a_trials_fit_returns_the_search(tmp_path, kernel):
    "In a Jupyter kernel's cell the same search returns, stopped 'interrupted', as before."
    executing(kernel, "cell 1", datetime.now(timezone.utc))
    space = lambda trial: {"lr": [0.01, 0.02, 0.03][trial.number]}
    res = tb.search(sigint_objective(1), space, 3, storage=str(tmp_path / "s.db"), live=False)
    assert res.stopped == "interrupted" and res.best_trial == 0
    assert [t.state.name for t in res.study.trials] == ["COMPLETE", "FAIL"]


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_a_ctrl_c_ending_a_boosting_run_names_its_model_not_a_missing_last_pt(lib, tmp_path):
    """A script's Ctrl-C at round 3 of a boosting run with a checkpoint_dir said 'its folder ... holds no last.pt',
    as if nothing were kept; the folder holds the model of its rounds (BoostedModel.load), and a boosting run has
    no resume=. The message now says so."""
    from sklearn.datasets import load_breast_cancer
    df = load_breast_cancer(as_frame=True).frame
    sp = tb.make_splits(df, "target", seed=0)
    folder = tmp_path / "boost"
    fit = getattr(tb, f"fit_{lib}")
    with pytest.raises(KeyboardInterrupt) as caught:
        fit(df, "target", sp, num_rounds=40, live=False, checkpoint_dir=folder, callbacks=[ctrl_c_at(3)])
    said = str(caught.value)
    assert caught.value.run.stopped == "interrupted" and caught.value.run.step == 3
    assert "holds no last.pt" not in said
    assert f"tb.BoostedModel.load({str(folder)!r})" in said and "no resume=" in said and "round 3" in said
    model = tb.BoostedModel.load(folder)  # what the message points at loads, and predicts
    assert model.predict_proba(df.drop(columns="target").head()).shape == (5, 2)


def test_a_ctrl_c_in_a_recorders_with_block_names_the_run_and_its_resume(tmp_path):
    """A script's Ctrl-C inside a hand loop recorded with tb.Recorder stopped it with a bare 'KeyboardInterrupt': no
    word of the run it ended, its folder or the resume= that goes on (fit's says them). It now says what fit's does,
    the run as err.run, and the resume it names continues the run."""
    from trainbook.guard import forget_interrupt
    dl_train, dl_valid = loaders()
    xv, yv = [torch.cat(t) for t in zip(*dl_valid)]

    def train(folder, resume=None, press_after=None):
        model = mlp()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        cfg = tb.TrainConfig(epochs=3, checkpoint_dir=folder)
        with tb.Recorder(cfg, parts={"model": model, "optimizer": opt, "loader": dl_train}, live=False,
                         resume=resume) as rec:
            for epoch in range(rec.state.epoch, cfg.epochs):
                dl_train.set_epoch(epoch)
                for xb, yb in dl_train:
                    loss = nn.functional.cross_entropy(model(xb), yb)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    rec.step(loss.detach())
                    if rec.state.step == press_after: os.kill(os.getpid(), signal.SIGINT)  # mid-epoch
                with torch.no_grad(): rec.validate(nn.functional.cross_entropy(model(xv), yv))
                rec.save()
        rec.finish()
        return model

    whole = train(tmp_path / "whole")
    folder = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt, match=r"a Ctrl-C stopped the run: the script stops here \(that run is "
                       r"tb\.last_run\(\), stopped at step 7; its folder .* holds last\.pt: go on from it with "
                       r"resume=") as caught:
        train(folder, press_after=7)  # (5 steps an epoch: last.pt is epoch 0's end)
    assert caught.value.run.stopped == "interrupted" and caught.value.run.step == 7
    assert caught.value.run is tb.last_run()
    forget_interrupt()
    resumed = train(folder, resume=str(folder))
    assert all(torch.equal(a, b) for a, b in zip(resumed.state_dict().values(), whole.state_dict().values()))


def test_in_a_notebook_the_cells_next_fit_after_a_search_a_ctrl_c_stopped_outside_fit_stops_at_its_door(
        tmp_path, kernel):
    """A cell that searches and then fits the best config: a Ctrl-C in trial 1's objective, outside its fit, returned
    the search and the cell went on to train the final model (one inside the fit stopped the cell there). The cell's
    next fit now stops at its door, as after any interrupted run; the next cell trains."""
    executing(kernel, "cell 1", datetime.now(timezone.utc))
    space = lambda trial: {"lr": [0.01, 0.02, 0.03][trial.number]}
    res = tb.search(sigint_objective(1), space, 3, storage=str(tmp_path / "s.db"), live=False)
    assert res.stopped == "interrupted"
    dl_train, dl_valid = loaders()
    with pytest.raises(KeyboardInterrupt, match="not started: a Ctrl-C stopped a run earlier in this cell"):
        tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), live=False,
               config=tb.TrainConfig(epochs=1, **res.best_config))
    executing(kernel, "cell 2", datetime.now(timezone.utc))
    assert tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), live=False,
                  config=tb.TrainConfig(epochs=1)).stopped == "completed"
