"""The run folder under a user's mistakes and bad moments: overwrite=True beside a live run or a refused resume,
resumes compared without a checkpoint_dir, from best.pt, past the run's epochs; findings kept over a resume;
Run.load of a moved folder, of a checkpoint, of a folder of versions; run files readable by the folder's group."""
import json, os, shutil, stat, warnings

import numpy as np
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.checkpoint import prepare_run_dir
from trainbook.folder_lock import RunFolderBusy, release_run_dir
from trainbook.run import RunFileError
from helpers import CtrlCInSetUp, blobs, history_without_timing, interrupted, mlp, same_weights

CE = nn.functional.cross_entropy


def data(seed=0):
    X, y = blobs(n=96, seed=seed)
    return tb.TensorLoader(X, y, batch_size=32, shuffle=True), tb.TensorLoader(X[:32], y[:32], batch_size=32)


def fit(folder, epochs=2, model=None, **kw):
    dl_train, dl_valid = kw.pop("batches", None) or data()
    cfg = tb.TrainConfig(epochs=epochs, device="cpu", checkpoint_dir=None if folder is None else str(folder),
                         **kw.pop("config", {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tb.fit(model if model is not None else mlp(), dl_train, dl_valid, loss_fn=kw.pop("loss_fn", CE),
                      config=cfg, live=False, **kw)


def files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}


def test_overwrite_beside_a_live_run_is_refused_before_any_file_is_removed(tmp_path):
    "Seen: overwrite=True deleted last.pt, best.pt and run.json of the run writing there, then raised RunFolderBusy."
    fit(tmp_path)
    before = files(tmp_path)
    prepare_run_dir(tmp_path, resume=tmp_path)  # a live writer (this process) holds the folder, as a running fit does
    try:
        with pytest.raises(RunFolderBusy, match="is being written by process"): fit(tmp_path, overwrite=True)
        assert files(tmp_path) == before
    finally: release_run_dir(tmp_path)


def test_a_refused_resume_with_overwrite_leaves_the_target_folder_as_it_was(tmp_path):
    "Seen: the resume was refused after overwrite=True had emptied checkpoint_dir: the run there was lost."
    a, b = tmp_path / "a", tmp_path / "b"
    fit(a)
    fit(b)
    before = files(b)
    wider = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    with pytest.raises(ValueError, match="cannot be resumed exactly"):
        fit(b, epochs=3, model=wider, resume=a, overwrite=True)
    assert files(b) == before and tb.checkpoint.folder_writer(b) is None



def test_a_refused_run_leaves_no_new_folder_behind(tmp_path):
    "Seen: a refused resume (or a missing checkpoint) left the new, empty checkpoint_dir that was checked."
    fit(tmp_path / "a")
    wider = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    with pytest.raises(ValueError, match="cannot be resumed exactly"):
        fit(tmp_path / "new" / "b", epochs=3, model=wider, resume=tmp_path / "a")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fit(tmp_path / "new" / "c", epochs=3, resume=tmp_path / "nope")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="checkpoint_dir=.*afile.* is a file"):
        fit(tmp_path / "afile" / "d")
    assert not (tmp_path / "new").exists()

def test_a_resume_without_checkpoint_dir_is_compared_like_any_other(tmp_path):
    "Seen: checkpoint_dir=None skipped every check: torch's size-mismatch error, no warning for a changed lr."
    fit(tmp_path)
    wider = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    before = {k: v.clone() for k, v in wider.state_dict().items()}
    with pytest.raises(ValueError, match=r"cannot be resumed exactly: .*0.weight has shape \(16, 8\) in the checkpoint and \(32, 8\)"):
        fit(None, epochs=3, model=wider, resume=tmp_path)
    assert all(torch.equal(v, wider.state_dict()[k]) for k, v in before.items())  # nothing was loaded
    run = fit(None, epochs=3, resume=tmp_path, config={"lr": 3e-3})
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert "config.lr: 0.001 → 0.003" in changed.message


def test_an_optimizer_with_other_parameter_groups_is_refused_before_the_model_is_touched(tmp_path):
    "Seen: torch's 'different number of parameter groups', after the checkpoint's weights were loaded into the model."
    fit(tmp_path)
    model = mlp()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=r"parameter groups held \[2, 2\] parameters and now hold \[4\]"):
        fit(tmp_path, epochs=3, model=model, resume=tmp_path, optimizer=torch.optim.AdamW(model.parameters()))
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def test_other_data_or_another_loss_is_a_resume_change(tmp_path):
    fit(tmp_path)
    run = fit(tmp_path, epochs=3, resume=tmp_path, batches=data(seed=1),
              loss_fn=nn.CrossEntropyLoss(label_smoothing=0.1))
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert "data_fingerprint" in changed.data["changes"] and changed.data["changes"]["loss"] == ["cross_entropy", "CrossEntropyLoss"]


@pytest.mark.parametrize("schedule", ["warmup_cosine", "one_cycle", "constant"])
def test_a_resume_given_another_lr_trains_at_it(tmp_path, schedule):
    "Probe 13, f2: config.lr 0.005 → 0.1 was listed as a change, but the restored optimizer kept 0.005."
    fit(tmp_path / "a", epochs=2, config={"lr": 5e-3, "schedule": schedule})
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    same = fit(tmp_path / "a", epochs=4, resume=tmp_path / "a", config={"lr": 5e-3, "schedule": schedule})
    higher = fit(tmp_path / "b", epochs=4, resume=tmp_path / "b", config={"lr": 0.1, "schedule": schedule})
    after = lambda run: run.records.series("lr")[lambda s: s.index > run.step // 2]
    np.testing.assert_allclose(after(higher).to_numpy(), 20 * after(same).to_numpy(), rtol=1e-9)
    change = next(f for f in higher.findings if f.kind == "resume_changed")
    assert "config.lr: 0.005 → 0.1 (applied: the restored optimizer and schedule scaled to it)" in change.message
    # an optimizer the user made is used as given: config.lr is not its lr, so its change scales nothing
    torch.manual_seed(0)
    own = mlp()
    fit(tmp_path / "c", epochs=2, model=own, optimizer=torch.optim.SGD(own.parameters(), lr=0.05),
        config={"lr": 5e-3, "schedule": schedule})
    again = fit(tmp_path / "c", epochs=3, model=own, optimizer=torch.optim.SGD(own.parameters(), lr=0.05),
                resume=tmp_path / "c", config={"lr": 0.1, "schedule": schedule})
    assert after(again).max() <= 0.05 + 1e-12
    assert "(applied" not in next(f for f in again.findings if f.kind == "resume_changed").message


def test_a_resume_from_best_pt_redoes_no_epoch_end_and_branches_off(tmp_path):
    """Seen: best.pt held the position before its epoch's end, so a resume recorded that validation twice (and early
    stopping counted it as no improvement); and it continued in place, over the run's later last.pt and run.json."""
    run = fit(tmp_path, epochs=4)
    best_epoch = run.best_epoch
    before = files(tmp_path)
    resumed = fit(tmp_path, epochs=4, resume=tmp_path / "best.pt")
    assert files(tmp_path) == before and resumed.run_dir == tmp_path / "version_1"  # the run it came from is kept
    # seen: the versioned folder's note advised "to continue the earlier run pass resume=<folder>", as if none was given
    [note] = [f for f in resumed.findings if f.kind == "run_dir_versioned"]
    assert "goes on from" in note.message and "best.pt" in note.message and "resume=" not in note.advice
    valid = resumed.history.query("split == 'valid' and name == 'loss'")
    assert list(valid.epoch) == list(range(4))  # each epoch validated once
    kept = run.history.query(f"epoch <= {best_epoch}").drop(columns="value")
    assert resumed.history.query(f"epoch <= {best_epoch}").drop(columns="value").equals(kept)


def test_a_resumed_run_keeps_the_findings_made_before_it_stopped(tmp_path):
    "Seen: a skipped non-finite step's finding of epoch 0 was gone from the resumed run and its run.json."
    X, y = blobs(n=96)
    X[40] = float("nan")  # batch 1 of each epoch (no shuffling)
    batches = (tb.TensorLoader(X, y, batch_size=32), tb.TensorLoader(X[:32], y[:32], batch_size=32))

    class StopAfterFirstEpoch(tb.Callback):
        def after_epoch(self, state):
            if state.epoch == 0: state.control.request_stop()

    full = fit(tmp_path / "full", epochs=3, batches=batches, config={"on_nonfinite": "skip"})
    fit(tmp_path / "cut", epochs=3, batches=batches, config={"on_nonfinite": "skip"}, callbacks=[StopAfterFirstEpoch()])
    resumed = fit(tmp_path / "cut", epochs=3, batches=batches, config={"on_nonfinite": "skip"}, resume=tmp_path / "cut")
    steps = lambda run: [f.data.get("step") for f in run.findings if f.kind == "nonfinite"]
    assert steps(resumed) == steps(full) and len(steps(full)) == 3
    assert steps(tb.Run.load(tmp_path / "cut")) == steps(full)


def test_a_resume_past_the_runs_epochs(tmp_path):
    "Seen: a finished run resumed said epoch=0; a run cut inside epoch 2 resumed with epochs=2 said 'completed'."
    done = fit(tmp_path / "done", epochs=2)
    with pytest.warns(UserWarning, match="already trained 2 epoch\\(s\\), TrainConfig.epochs=2: nothing is left"):
        again = tb.fit(mlp(), *data(), loss_fn=CE, live=False, resume=tmp_path / "done",
                       config=tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=str(tmp_path / "done")))
    assert (again.epoch, again.step, again.stopped) == (done.epoch, done.step, "completed") == (1, done.step, "completed")

    class StopAt(tb.Callback):
        def after_step(self, state):
            if state.step == 7: state.control.request_stop()
    fit(tmp_path / "cut", epochs=4, callbacks=[StopAt()])  # 3 steps an epoch: step 7 is inside epoch 2
    with pytest.raises(ValueError, match=r"stopped inside epoch 3 \(after batch 1\), past TrainConfig.epochs=2"):
        fit(tmp_path / "cut", epochs=2, resume=tmp_path / "cut")
    assert tb.checkpoint.folder_writer(tmp_path / "cut") is None


def test_run_load_of_a_moved_folder_a_checkpoint_and_a_folder_of_versions(tmp_path):
    fit(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "moved")
    moved = tb.Run.load(tmp_path / "moved")
    assert moved.run_dir == tmp_path / "moved" and moved.best_path == tmp_path / "moved" / "best.pt"
    assert moved.last_path == tmp_path / "moved" / "last.pt"  # not the folder it was copied from
    assert history_without_timing(tb.Run.load(tmp_path / "moved" / "last.pt")) == history_without_timing(moved)
    os.makedirs(tmp_path / "runs")
    for name in ("version_0", "version_1"): shutil.copytree(tmp_path / "a", tmp_path / "runs" / name)
    with pytest.raises(RunFileError, match="it holds the runs version_0, version_1: pass one of those folders"):
        tb.Run.load(tmp_path / "runs")
    with pytest.raises(TypeError, match="Run.load takes a run folder or its run.json"): tb.Run.load(5)


@pytest.mark.parametrize("change, said", [
    (lambda r: r.update(extra=[1]), "malformed run record"),
    (lambda r: r.update(best="abc"), "malformed run record"),
    (lambda r: r["history"]["value"].pop(), "the history's columns differ in length"),
    (lambda r: r.update(stopped="banana"), "stopped='banana', which is no stop reason"),  # probe 14, f6
    (lambda r: r.update(step=-5), "holds step=-5: counts are whole numbers >= 0"),
    (lambda r: r.update(best_epoch="two"), "holds best_epoch='two': counts are whole numbers >= 0"),  # probe 22
])
def test_a_malformed_run_record_is_a_run_file_error(tmp_path, change, said):
    fit(tmp_path)
    record = json.loads((tmp_path / "run.json").read_text())
    change(record)
    (tmp_path / "run.json").write_text(json.dumps(record))
    with pytest.raises(RunFileError, match=said): tb.Run.load(tmp_path)


def test_run_files_have_the_mode_open_gives_and_a_home_path_is_expanded(tmp_path, monkeypatch):
    "Seen: mkstemp's owner-only 0600 on every run file; '~/runs' made a folder named '~' in the working folder."
    fit(tmp_path)
    for name in ("last.pt", "best.pt", "run.json"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o666 & ~tb.core._UMASK
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run = fit("~/runs")
    assert run.run_dir == tmp_path / "home" / "runs" and not (tmp_path / "~").exists()
    assert tb.Run.load("~/runs").step == run.step


def test_a_run_still_going_loads_as_running(tmp_path):
    "Run.load of a snapshot whose writer lives says 'running' (a killed one says 'killed': tests/test_store.py)."
    seen = []
    class Peek(tb.Callback):
        def after_epoch(self, state): seen.append(tb.Run.load(state.run_dir))
    run = fit(tmp_path, callbacks=[Peek()])
    assert [r.stopped for r in seen] == ["running", "running"] and not any(f.kind == "killed" for f in seen[0].findings)
    assert tb.Run.load(tmp_path).stopped == run.stopped == "completed"


def test_a_relative_checkpoint_dir_is_recorded_as_the_folder_it_named(tmp_path, monkeypatch):
    "Seen: run_dir 'ck' and last_path 'ck/last.pt' were relative: after os.chdir, resume=run.last_path failed."
    monkeypatch.chdir(tmp_path)
    run = fit("ck")
    assert run.run_dir == tmp_path / "ck" and run.last_path == tmp_path / "ck" / "last.pt"
    assert tb.Run.load(tmp_path / "ck").run_dir == tmp_path / "ck"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    again = fit("ck", epochs=3, resume=run.last_path)  # the checkpoint found from here; its own folder kept
    assert again.run_dir == tmp_path / "elsewhere" / "ck" and again.epoch == 2 and again.step > run.step


def test_a_system_exit_inside_fit_ends_the_run_and_frees_its_folder(tmp_path):
    "Seen: SystemExit from a callback (IPython catches it) left the run 'running' and its folder locked."
    class Exit(tb.Callback):
        def after_step(self, state):
            if state.step == 5: raise SystemExit(3)  # in epoch 1: last.pt holds epoch 0
    with pytest.raises(SystemExit) as caught:
        fit(tmp_path, callbacks=[Exit()])
    assert caught.value.run.stopped == "failed" and tb.Run.load(tmp_path).stopped == "failed"
    assert tb.checkpoint.folder_writer(tmp_path) is None
    assert fit(tmp_path, epochs=2, resume=tmp_path).stopped == "completed"  # resumable: not RunFolderBusy


def test_an_empty_resume_is_refused_not_read_as_the_working_folder(tmp_path, monkeypatch):
    "Seen: resume='' (an unset RESUME variable) was Path('') = the working folder: a run there was resumed unasked."
    fit(tmp_path / "old")
    monkeypatch.chdir(tmp_path / "old")  # the working folder holds another run's last.pt
    with pytest.raises(ValueError, match=r"resume='' names no checkpoint .* resume=None for a new run"):
        fit(tmp_path / "new", epochs=3, resume="")
    assert not (tmp_path / "new" / "last.pt").exists()
    with pytest.raises(TypeError, match=r"resume=True picks no folder: pass the run folder"):
        fit(tmp_path / "new", epochs=3, resume=True)


def test_run_load_takes_any_of_a_runs_files_and_names_a_mistyped_one(tmp_path):
    "Seen: Run.load('run/model.json') of a boosting run: 'not a trainbook run record'; last.keras: a utf-8 error."
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    df["y"] = (df.a + df.b > 0).astype(int)
    boosted = tb.fit_xgboost(df, "y", tb.make_splits(df, target="y", seed=0), num_rounds=5, live=False,
                             checkpoint_dir=tmp_path)
    for name in ("model.json", "boosted.json", "prep.skops"):
        assert tb.Run.load(tmp_path / name).step == boosted.step
    (tmp_path / "last.keras").write_bytes(b"PK\x03\x04 a Keras model's zip")  # the file a keras run keeps
    assert tb.Run.load(tmp_path / "last.keras").kind == "xgboost"
    with pytest.raises(RunFileError, match=r"run\.jsn'.*\(did you mean 'run\.json'\?\)"):
        tb.Run.load(tmp_path / "run.jsn")


def test_a_lock_left_empty_by_a_run_killed_as_it_started_is_taken_over(tmp_path):
    "Seen: an empty .trainbook-run made resume= and overwrite=True fail with RecursionError, and new runs version_N."
    fit(tmp_path / "run")
    (tmp_path / "run" / ".trainbook-run").write_text("")  # killed between creating the lock and writing it
    with pytest.warns(UserWarning, match=r"had an unreadable lock \(\.trainbook-run: empty or damaged"):
        resumed = tb.fit(mlp(), *data(), loss_fn=CE, live=False, resume=tmp_path / "run",
                         config=tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(tmp_path / "run")))
    assert resumed.run_dir == tmp_path / "run" and resumed.epoch == 2
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / ".trainbook-run").write_text('{"host": ')  # a damaged lock, no run's files
    assert fit(tmp_path / "fresh").run_dir == tmp_path / "fresh"  # not fresh/version_1
    assert sorted(p.name for p in (tmp_path / "fresh").iterdir()) == ["best.pt", "last.pt", "run.json"]


def test_a_truncated_last_pt_names_the_best_pt_beside_it(tmp_path):
    "Seen: a last.pt cut short by a full disk was refused without a word of the best.pt that could still be resumed."
    fit(tmp_path, epochs=2)
    raw = (tmp_path / "last.pt").read_bytes()
    (tmp_path / "last.pt").write_bytes(raw[:len(raw) // 2])
    with pytest.raises(tb.CheckpointError, match="truncated") as e:
        fit(tmp_path, epochs=3, resume=tmp_path)
    assert f"resume={str(tmp_path / 'best.pt')!r}" in str(e.value)
    (tmp_path / "best.pt").unlink()
    with pytest.raises(tb.CheckpointError, match="truncated") as e:  # no best.pt: nothing named
        fit(tmp_path, epochs=3, resume=tmp_path)
    assert "best.pt" not in str(e.value)


def test_run_load_refuses_another_format_or_a_newer_version_and_keeps_config_fields_it_does_not_know(tmp_path):
    """Seen: a run.json with format 'trainbook-run-v2', version 99 and a new config field loaded without a word,
    and the field was dropped; RUN_VERSION was written but never read."""
    from trainbook.run import RUN_FORMAT, RUN_VERSION, write_run_record
    fit(tmp_path / "a", epochs=1)
    file = tmp_path / "a" / "run.json"
    record = json.loads(file.read_text())
    assert (record["format"], record["version"]) == (RUN_FORMAT, RUN_VERSION)
    def load(**changes):
        changed = tmp_path / "changed"
        changed.mkdir(exist_ok=True)
        (changed / "run.json").write_text(json.dumps({**record, **changes}))
        return tb.Run.load(changed)
    with pytest.raises(RunFileError, match=r"'.*changed/run.json' is a 'trainbook-run-v2' record, not a trainbook "
                                           r"run record \(format 'trainbook-run'\)"):
        load(format="trainbook-run-v2")
    with pytest.raises(RunFileError, match=rf"'.*changed/run.json' was written by a newer trainbook \(run record "
                                           rf"version 99; this trainbook reads version {RUN_VERSION}\): upgrade"):
        load(version=99)
    with pytest.raises(RunFileError, match=r"version 'x'"): load(version="x")
    with pytest.warns(UserWarning, match=r"config has fields this trainbook does not know: grad_checkpointing"):
        run = load(config={**record["config"], "grad_checkpointing": True})
    assert run.extra["unknown_config"] == {"grad_checkpointing": True}
    write_run_record(run, tmp_path / "again.json")  # written back as it came: the field stays in the config
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["config"]["grad_checkpointing"] is True and "unknown_config" not in again["extra"]
    assert tb.Run.load(file).config == run.config  # a record as this trainbook writes it: read without a word


def test_run_html_escapes_its_error_and_folder(tmp_path):
    "Seen: a loss's error text and a checkpoint folder holding <, >, & were put in the run's HTML raw."
    def bad_loss(pred, yb):  # in training only: dl_valid's first batch, scored before any step, is no run yet
        if torch.is_grad_enabled(): raise RuntimeError("bad value <b>BOLD</b> & <img src=x onerror=alert(1)>")
        return nn.functional.cross_entropy(pred, yb)
    with pytest.raises(RuntimeError) as e:
        fit(tmp_path / "runs" / "<b>a&b</b>", epochs=1, loss_fn=bad_loss)
    page = e.value.run._repr_html_()
    assert "<b>BOLD</b>" not in page and "<img" not in page and "<b>a&b</b>" not in page
    assert "bad value &lt;b&gt;BOLD&lt;/b&gt; &amp; &lt;img" in page and "&lt;b&gt;a&amp;b&lt;/b&gt;</code>" in page
    typed = tb.Run(records=tb.History(), config=tb.TrainConfig(), stopped="failed",
                   error="TypeError(\"got <class 'str'>\")")
    assert "got &lt;class &#x27;str&#x27;&gt;" in typed._repr_html_()  # the type's name shows in a browser


def test_run_html_names_the_monitor_it_followed_without_validation_data():
    "Seen: a run without dl_valid said 'best valid_loss 2.008 at epoch 2' of its training loss."
    X, y = blobs(n=96)
    run = fit(None, epochs=3, batches=(tb.TensorLoader(X, y, batch_size=32), None))
    page = run._repr_html_()
    assert f"best train_loss {run.best:.4g} at epoch {run.best_epoch}" in page and "best valid_loss" not in page
    assert run.monitor_followed() == "train_loss"
    assert "best valid_loss" in fit(None, epochs=2)._repr_html_()  # with validation data: what it follows


def test_repeated_findings_are_grouped_in_the_runs_repr_and_html():
    "Seen: a metric NaN at every validation made a repr of 184 'nonfinite' and 138 KB of HTML."
    from trainbook.core import Finding
    nan = [Finding("nonfinite", "warning", f"validation at epoch {i} gave valid_m=nan") for i in range(184)]
    findings = nan + [Finding("overfitting", "warning", "the gap grows")]
    run = tb.Run(records=tb.History(), config=tb.TrainConfig(), stopped="completed", findings=findings)
    assert repr(run) == "Run(stopped='completed', step=0, epoch=0, findings=['nonfinite ×184', 'overfitting'])"
    page = run._repr_html_()
    assert page.count("tb-finding tb-warning") == 2 and "nonfinite ×184" in page and len(page) < 5000
    assert "validation at epoch 0 gave" in page and "validation at epoch 1 gave" not in page
    assert run.findings == findings  # the run keeps each


def test_restore_best_loads_the_best_evaluations_weights(tmp_path):
    "fit returns the last step's weights (early stopping or not); run.restore_best(model) puts best.pt's back."
    import torch
    from torch import nn
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 4, generator=g), torch.randint(0, 2, (64,), generator=g)
    Xv, yv = torch.randn(32, 4, generator=g), torch.randint(0, 2, (32,), generator=g)  # noise: it overfits
    torch.manual_seed(0)  # (the weights, as the data: which tests ran before in this worker moves nothing)
    model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
    run = tb.fit(model, [(X, y)], [(Xv, yv)], loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=30, lr=3e-2, checkpoint_dir=str(tmp_path), device="cpu"))
    best = torch.load(run.run_dir / "best.pt", weights_only=True)["model"]
    assert run.best_epoch < run.epoch  # the last epoch is not the best one
    assert not all(torch.equal(v, best[k]) for k, v in model.state_dict().items())
    assert run.restore_best(model) is run
    assert all(torch.equal(v, best[k]) for k, v in model.state_dict().items())
    with pytest.raises(ValueError, match="kept no folder"):
        tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False,
               config=tb.TrainConfig(epochs=1, device="cpu")).restore_best(model)


def test_the_run_folder_warning_points_at_the_users_fit(tmp_path):
    "Seen: reusing a checkpoint_dir warned from trainbook/loop.py with an internal source line."
    import warnings
    import torch
    from torch import nn
    X, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    cfg = tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path), device="cpu")
    tb.fit(nn.Linear(4, 2), [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, config=cfg)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tb.fit(nn.Linear(4, 2), [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, config=cfg)
    said = [w for w in seen if "version_" in str(w.message) or str(tmp_path) in str(w.message)]
    assert said and all(w.filename == __file__ for w in said), [(w.filename, str(w.message)) for w in seen]


# ---- probe 22: overwrite replaces only an earlier run's files, and only once the new run has its own; a resumed
# run's folder holds the best it reports; restore_best says what is missing

def best_pt(folder):
    return torch.load(folder / "best.pt", weights_only=True)


def holds(model, state):
    return all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


def test_overwrite_resuming_from_the_folders_own_best_pt_keeps_it(tmp_path):
    "Probe 22, f1: resume=<folder>/best.pt with overwrite=True deleted best.pt for good; the run still reported its best."
    first = fit(tmp_path, epochs=3)
    best = best_pt(tmp_path)
    # lr 1e3: the resumed epochs never beat the restored best, whose weights only best.pt holds
    again = fit(tmp_path, epochs=5, resume=tmp_path / "best.pt", overwrite=True, config={"lr": 1e3})
    assert (again.best, again.best_epoch) == (first.best, first.best_epoch) and again.step > best["step"]
    assert again.best_path == tmp_path / "best.pt"
    model = mlp(seed=5)
    tb.Run.load(tmp_path).restore_best(model)
    assert holds(model, best["model"])
    assert tb.Run.load(tmp_path).step == again.step  # the earlier run's last.pt and run.json went


def test_overwrite_keeps_the_earlier_run_when_the_new_one_fails_before_writing_a_file(tmp_path):
    "Probe 22, f2: overwrite=True deleted the earlier run's files before the new run's first step, which then failed."
    fit(tmp_path)
    before = files(tmp_path)
    typo = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))  # 5 inputs: the data has 8
    with pytest.raises(RuntimeError, match="dl_valid's first batch"): fit(tmp_path, model=typo, overwrite=True)
    assert files(tmp_path) == before  # refused at set-up: nothing touched
    with pytest.raises(RuntimeError) as err:  # without a dl_valid, at the first step: a failed run
        fit(tmp_path, model=typo, overwrite=True, batches=(data()[0], None))
    assert files(tmp_path) == before and tb.Run.load(tmp_path).stopped == "completed"  # as it was, run.json too
    failed = err.value.run
    assert (failed.stopped, failed.step, failed.last_path, failed.best_path) == ("failed", 0, None, None)
    assert tb.checkpoint.folder_writer(tmp_path) is None
    again = fit(tmp_path, epochs=1, overwrite=True)  # a run that writes its files replaces the earlier ones
    assert sorted(files(tmp_path)) == ["best.pt", "last.pt", "run.json"] and files(tmp_path) != before
    assert tb.Run.load(tmp_path).step == again.step


def test_a_ctrl_c_while_the_earlier_files_go_leaves_the_rest_to_the_next_write(tmp_path, monkeypatch):
    "The earlier run's files go one at a time once the new run wrote one: a Ctrl-C in between, the next write ends it."
    from pathlib import Path
    from trainbook.run import Handover
    fit(tmp_path)
    handover = Handover(tmp_path, ["last.pt", "best.pt", "run.json"])
    assert handover.is_earlier("last.pt")
    tb.save_checkpoint(tmp_path / "last.pt", model=mlp(), step=0)  # the new run's first file
    assert not handover.is_earlier("last.pt")
    unlink = Path.unlink
    def cut(self, *args, **kwargs):  # the first removal is done, then Ctrl-C
        monkeypatch.setattr(Path, "unlink", unlink)
        unlink(self, *args, **kwargs)
        raise KeyboardInterrupt
    monkeypatch.setattr(Path, "unlink", cut)
    with pytest.raises(KeyboardInterrupt): handover.apply()
    assert sorted(files(tmp_path)) == ["last.pt", "run.json"]
    handover.apply()
    assert sorted(files(tmp_path)) == ["last.pt"] and handover.earlier == {}
    assert tb.load_checkpoint(tmp_path)["step"] == 0  # the new run's


def test_overwrite_leaves_your_own_files_and_removes_an_earlier_runs(tmp_path):
    "Probe 22, f3: overwrite=True deleted a model.json of the user's in a folder that held no run."
    for name, overwrite in (("a", True), ("b", False)):
        mine = tmp_path / name
        mine.mkdir()
        (mine / "model.json").write_text('{"layers": [8, 16, 3]}')  # your own file, a run file's name
        run = fit(mine, overwrite=overwrite)
        assert run.run_dir == mine and (mine / "model.json").read_text() == '{"layers": [8, 16, 3]}'
        assert not any(f.kind == "run_dir_versioned" for f in run.findings)  # the folder held no run
    fit(tmp_path / "c")
    (tmp_path / "c" / "model.json").write_text("{}")  # beside a torch run: yours still (probe 26, f9)
    fit(tmp_path / "c", overwrite=True)
    assert sorted(files(tmp_path / "c")) == ["best.pt", "last.pt", "model.json", "run.json"]
    assert (tmp_path / "c" / "model.json").read_text() == "{}"


def test_a_branch_that_never_beats_the_restored_best_holds_its_best_pt(tmp_path):
    "Probe 22, f4: a resume into version_1 (or another checkpoint_dir) reported a best, but its folder had no best.pt."
    first = fit(tmp_path / "a", epochs=3)
    best = best_pt(tmp_path / "a")
    for resume, folder in ((tmp_path / "a" / "best.pt", tmp_path / "a"), (tmp_path / "a", tmp_path / "b")):
        branch = fit(folder, epochs=5, resume=resume, config={"lr": 1e3})
        assert branch.run_dir in (tmp_path / "a" / "version_1", tmp_path / "b")
        assert (branch.best, branch.best_epoch) == (first.best, first.best_epoch)
        assert branch.best_path == branch.run_dir / "best.pt"
        model = mlp(seed=5)
        branch.restore_best(model)
        assert holds(model, best["model"])
        loaded = mlp(seed=6)
        tb.Run.load(branch.run_dir).restore_best(loaded)  # read back from its folder too
        assert holds(loaded, best["model"])


def test_restore_best_names_a_missing_folder_or_file_and_a_model_that_does_not_fit(tmp_path):
    "Probe 22, f6: a moved folder read as 'the run saved no best evaluation'; another shape, torch's bare error."
    run = fit(tmp_path / "a")
    shutil.move(tmp_path / "a", tmp_path / "moved")
    with pytest.raises(FileNotFoundError, match="run's folder .* does not exist any more .*Run.load"):
        run.restore_best(mlp())
    moved = tb.Run.load(tmp_path / "moved")
    with pytest.raises(ValueError, match=r"moved/best.pt does not fit this model: size mismatch for 0.weight"):
        moved.restore_best(mlp(h=32))
    (tmp_path / "moved" / "best.pt").unlink()
    with pytest.raises(FileNotFoundError, match=r"the run's best \(valid_loss .* at epoch \d\) was saved there"):
        moved.restore_best(mlp())


def test_a_resume_with_other_batches_in_a_plain_list_is_a_resume_change(tmp_path):
    "Probe 22, f7: a list of (xb, yb) batches had no fingerprint: other data resumed without a word."
    def listed(seed):
        X, y = blobs(n=96, seed=seed)
        return [(X[i:i + 32], y[i:i + 32]) for i in range(0, 96, 32)], [(X[:32], y[:32])]
    fit(tmp_path / "a", batches=listed(0))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    changes = lambda run: next((f.data["changes"] for f in run.findings if f.kind == "resume_changed"), {})
    assert "data_fingerprint" not in changes(fit(tmp_path / "a", epochs=3, resume=tmp_path / "a", batches=listed(0)))
    assert "data_fingerprint" in changes(fit(tmp_path / "b", epochs=3, resume=tmp_path / "b", batches=listed(1)))


# ---- probe 26: an overwrite run replaces the earlier run at its first run.json (its first epoch's end, or
# its end); stopped, failed or killed before, the folder holds the earlier run whole, none of the new one's

EARLIER = ".trainbook-earlier"


class StopAt:
    "A callback that asks the loop to stop after optimizer step `step` (a Stop button; no Ctrl-C)."
    def __init__(self, step): self.step = step

    def after_step(self, state):
        if state.step == self.step: state.control.stop = True


class RaiseAt:
    "A callback that raises at optimizer step `step`."
    def __init__(self, step): self.step = step

    def after_step(self, state):
        if state.step == self.step: raise RuntimeError("boom")


def said(seen, text):
    return [str(w.message) for w in seen if text in str(w.message)]


@pytest.mark.parametrize("stop", ["ctrl_c", "control.stop"])
def test_an_overwrite_run_stopped_at_its_first_step_keeps_the_earlier_run_whole(tmp_path, stop):
    "Probe 26, f1: a Ctrl-C (or a Stop) at the new run's first step deleted the earlier best.pt and run.json."
    from helpers import ctrl_c_at
    earlier = fit(tmp_path, epochs=2)
    before = files(tmp_path)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        go = lambda: tb.fit(mlp(seed=1), *data(), loss_fn=CE, live=False, overwrite=True,
                            config=tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=str(tmp_path)),
                            callbacks=[ctrl_c_at(1) if stop == "ctrl_c" else StopAt(1)])
        run = interrupted(go) if stop == "ctrl_c" else go()  # a script's Ctrl-C goes on out of fit, with .run
    assert (run.stopped, run.step, run.run_dir) == ("interrupted", 1, tmp_path)
    assert files(tmp_path) == before and not (tmp_path / EARLIER).exists()  # run.json too
    assert said(seen, "keeps the earlier run as it was (last.pt, best.pt, run.json)"), [str(w) for w in seen]
    loaded = tb.Run.load(tmp_path)
    assert (loaded.stopped, loaded.step, loaded.best) == ("completed", earlier.step, earlier.best)
    assert (run.last_path, run.best_path) == (None, None) and tb.checkpoint.folder_writer(tmp_path) is None
    with pytest.raises(FileNotFoundError, match="kept the earlier run's files and none of this run's"):
        run.restore_best(mlp())  # the folder's best.pt is the earlier run's, not this one's
    model = mlp(seed=5)
    loaded.restore_best(model)
    assert holds(model, best_pt(tmp_path)["model"])


def test_an_overwrite_run_that_fails_after_its_first_checkpoints_leaves_none_of_its_files(tmp_path):
    "Probe 26, f1: a run that wrote last.pt (and a best.pt the earlier had not), then failed, replaced it."
    fit(tmp_path, epochs=2)
    (tmp_path / "best.pt").unlink()  # an earlier run without a best.pt: the new run's best.pt is its own file
    before = files(tmp_path)
    with pytest.raises(RuntimeError, match="boom") as err:
        fit(tmp_path, model=mlp(seed=1), overwrite=True, callbacks=[RaiseAt(2)],
            config={"checkpoint_every": 1, "eval_every": 1})
    assert err.value.run.stopped == "failed" and err.value.run.step == 2
    assert files(tmp_path) == before and not (tmp_path / EARLIER).exists()  # its best.pt gone, last.pt back
    assert tb.Run.load(tmp_path).stopped == "completed"


def test_an_overwrite_run_replaces_the_earlier_at_its_first_epochs_end(tmp_path):
    """Probe 26, f1/f10: the earlier run stays restorable until the new run's first run.json; a Ctrl-C
    after it keeps the new run."""
    from helpers import interrupt_at
    fit(tmp_path, epochs=2)
    (tmp_path / "last.msgpack").write_bytes(b"earlier")  # an earlier run's file the new one never writes
    before = files(tmp_path)
    seen_at = {}

    class Look:
        def after_step(self, state):
            if state.step == 2:  # the new run's last.pt of step 1 written (checkpoint_every=1), no run.json
                now = files(tmp_path)
                seen_at[2] = (torch.load(tmp_path / "last.pt", weights_only=True)["step"],
                              now["run.json"] == before["run.json"], now["best.pt"] == before["best.pt"],
                              now["last.msgpack"] == before["last.msgpack"], (tmp_path / EARLIER).is_dir())

        def after_epoch(self, state):
            if state.epoch == 0:  # its first run.json written: the earlier files it did not write over go
                seen_at["epoch 0"] = ((tmp_path / "last.msgpack").exists(), (tmp_path / EARLIER).exists(),
                                      json.loads((tmp_path / "run.json").read_text())["stopped"])

    run = interrupted(fit, tmp_path, epochs=3, model=mlp(seed=1), overwrite=True, callbacks=[Look(), interrupt_at(4)],
                      config={"checkpoint_every": 1})
    assert seen_at[2] == (1, True, True, True, True)  # the earlier run whole beside the new last.pt, and kept
    assert seen_at["epoch 0"] == (False, False, "running")
    assert run.stopped == "interrupted" and run.last_path == tmp_path / "last.pt"  # committed: kept
    loaded = tb.Run.load(tmp_path)
    assert (loaded.stopped, loaded.step) == ("interrupted", 4)
    assert sorted(files(tmp_path)) == ["best.pt", "last.pt", "run.json"]


KILLED_AT_STEP_2 = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from test_run_folder import fit, mlp

class Kill:
    def after_step(self, state):
        if state.step == 2: os.kill(os.getpid(), signal.SIGKILL)  # last.pt of step 1 written, no run.json yet

fit({folder!r}, model=mlp(seed=1), overwrite=True, callbacks=[Kill()], config={{"checkpoint_every": 1}})
"""


def test_an_overwrite_run_killed_before_its_first_run_json_leaves_the_earlier_run_to_the_next_one(tmp_path):
    "Probe 26, f10: a SIGKILL after the new last.pt left it beside the earlier best.pt and finished run.json."
    import subprocess, sys
    from pathlib import Path
    earlier = fit(tmp_path / "a", epochs=2)
    before = files(tmp_path / "a")
    script = KILLED_AT_STEP_2.format(tests=str(Path(__file__).parent), folder=str(tmp_path / "a"))
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert child.returncode == -9, child.stderr[-2000:]
    assert (tmp_path / "a" / EARLIER).is_dir() and files(tmp_path / "a") != before  # the new last.pt is there
    for name in ("b", "c"): shutil.copytree(tmp_path / "a", tmp_path / name)
    # Run.load puts the earlier run back first, and says so
    with pytest.warns(UserWarning, match=r"run.json \(killed\?\): the earlier run is put back as it was"):
        loaded = tb.Run.load(tmp_path / "a")
    assert (loaded.stopped, loaded.step, loaded.best) == ("completed", earlier.step, earlier.best)
    assert files(tmp_path / "a") == before and not (tmp_path / "a" / EARLIER).exists()
    # a new run's claim does too: the folder holds the earlier run, so the new run takes version_1
    new = fit(tmp_path / "b", epochs=1)
    assert new.run_dir == tmp_path / "b" / "version_1" and files(tmp_path / "b") == before
    # resume= the folder goes on from the earlier run's last.pt, not the killed run's
    resumed = fit(tmp_path / "c", epochs=3, resume=tmp_path / "c")
    first = history_without_timing(earlier)
    assert history_without_timing(resumed)[:len(first)] == first
    assert resumed.step == earlier.step + 3 and not (tmp_path / "c" / EARLIER).exists()


def test_a_ctrl_c_while_the_earlier_run_is_put_back_leaves_the_rest_to_the_next_reader(tmp_path, monkeypatch):
    "Probe 26: the earlier files go back one by one; a Ctrl-C in between (twice): Run.load or a claim ends it"
    from pathlib import Path
    from helpers import interrupt_at
    from trainbook.run import RUN_FILES
    fit(tmp_path, epochs=2)
    before = files(tmp_path)
    replace, calls = os.replace, []
    def cut(src, dst):  # every second file put back: Ctrl-C
        if Path(src).parent.name == EARLIER and Path(src).name in RUN_FILES:
            calls.append(src)
            if len(calls) % 2 == 0: raise KeyboardInterrupt
        replace(src, dst)
    monkeypatch.setattr(os, "replace", cut)
    with pytest.raises(KeyboardInterrupt):
        fit(tmp_path, model=mlp(seed=1), overwrite=True, callbacks=[interrupt_at(1)])
    monkeypatch.undo()
    assert len(calls) == 4 and (tmp_path / EARLIER).is_dir()  # put back twice, cut twice: run.json still out
    assert tb.checkpoint.folder_writer(tmp_path) is None  # the folder is free all the same
    with pytest.warns(UserWarning, match="the earlier run is put back as it was"):
        assert tb.Run.load(tmp_path).stopped == "completed"
    assert files(tmp_path) == before and not (tmp_path / EARLIER).exists()


def test_a_shared_name_is_a_runs_file_only_beside_a_boosting_runs_record(tmp_path):
    "Probe 26, f9: model.json beside a torch run's run.json counted as the run's; overwrite=True removed it."
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "last.pt").write_bytes(b"")
    (tmp_path / "model.json").write_text("{}")
    assert tb.run.earlier_run_files(tmp_path) == ["last.pt", "run.json"]
    (tmp_path / "boosted.json").write_text("{}")  # a boosting run's record: model.json is its model
    assert tb.run.earlier_run_files(tmp_path) == ["last.pt", "boosted.json", "model.json", "run.json"]


def test_restore_best_of_a_keras_run_says_it_keeps_no_best_pt_and_where_its_weights_are(tmp_path):
    "Probe 26, f7: restore_best on a Keras run said its best.pt 'has been deleted or moved': it had none."
    (tmp_path / "last.keras").write_bytes(b"")
    run = tb.Run(records=tb.core.History(), config=tb.TrainConfig(), stopped="completed", kind="keras",
                 run_dir=tmp_path, best=0.5, best_epoch=1)
    with pytest.raises(ValueError, match=r"this keras run writes none: its folder holds last.keras.*"
                                         r"restore_best_weights=True") as err:
        run.restore_best(mlp())
    assert "deleted or moved" not in str(err.value)


def test_run_load_of_a_folder_with_last_pt_and_no_run_json_yet_says_how_to_go_on(tmp_path):
    "Probe 26, f10: killed before its first run.json, Run.load said a fit 'writes one' though a resume works."
    tb.save_checkpoint(tmp_path / "last.pt", model=mlp(), step=1)
    with pytest.raises(RunFileError, match=r"holds last.pt but no run.json yet: .*its first epoch's end.*"
                                           r"a fit with resume=.* goes on from last.pt"):
        tb.Run.load(tmp_path)


def test_keras_and_boosting_overwrite_runs_stopped_before_their_first_record_keep_the_earlier_run(tmp_path):
    "Probe 26: the same promise on the other paths through the Checkpointer (Keras; XGBoost: model.json)."
    keras = pytest.importorskip("keras")
    pytest.importorskip("xgboost")
    import pandas as pd
    fit(tmp_path, epochs=2)
    before = files(tmp_path)
    X = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")

    class Interrupt(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1: raise KeyboardInterrupt

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = tb.keras_callback(live=False, checkpoint_dir=tmp_path, overwrite=True)
    with pytest.warns(UserWarning, match="keeps the earlier run as it was"), pytest.raises(KeyboardInterrupt):
        model.fit(X, (X[:, 0] > 0).astype("int32"), epochs=2, verbose=0, callbacks=[cb, Interrupt()])
    assert cb.run.stopped == "interrupted" and files(tmp_path) == before and not (tmp_path / EARLIER).exists()

    df = pd.DataFrame(X, columns=list("abcd")).assign(y=(X[:, 0] > 0).astype(int))
    splits = tb.make_splits(df, "y", seed=0)
    with pytest.warns(UserWarning, match="keeps the earlier run as it was"):
        boosted = tb.fit_xgboost(df, "y", splits, num_rounds=5, live=False, checkpoint_dir=tmp_path,
                                 overwrite=True, callbacks=[StopAt(1)])
    assert boosted.stopped == "interrupted" and files(tmp_path) == before  # its model.json and the rest: gone
    assert tb.Run.load(tmp_path).kind == "torch"
    done = tb.fit_xgboost(df, "y", splits, num_rounds=5, live=False, checkpoint_dir=tmp_path, overwrite=True)
    assert done.stopped == "completed" and "model.json" in files(tmp_path)
    assert "best.pt" not in files(tmp_path)  # a run that completes replaces the earlier one


def test_a_reader_sees_the_earlier_run_whole_while_an_overwrite_run_checkpoints_before_its_first_record(tmp_path):
    "Probe 28: checkpoint_every wrote the new last.pt beside the earlier run.json; Run.load and resume read a mix."
    earlier = fit(tmp_path)
    seen = {}

    class Read(tb.Callback):
        def after_step(self, state):
            if state.step != 3: return  # checkpoint_every=2 wrote the new run's last.pt at step 2
            loaded = tb.Run.load(tmp_path)
            seen["load"] = (loaded.step, loaded.last_path.parent.name)
            seen["resume"] = torch.load(tb.checkpoint.checkpoint_file(tmp_path), weights_only=False)["step"]

    fit(tmp_path, epochs=1, overwrite=True, callbacks=[Read()], config={"checkpoint_every": 2})
    assert seen["load"] == (earlier.step, ".trainbook-earlier") and seen["resume"] == earlier.step, seen
    assert tb.Run.load(tmp_path).step != earlier.step  # committed at its epoch's end: the new run's


def test_restore_best_names_a_best_pt_that_is_a_folder(tmp_path):
    "Probe 35: best.pt replaced by a folder was said to be 'deleted or moved since'."
    run = fit(tmp_path / "a")
    (tmp_path / "a" / "best.pt").unlink()
    (tmp_path / "a" / "best.pt").mkdir()
    with pytest.raises(IsADirectoryError, match=r"a/best.pt is a folder, not a checkpoint file"):
        run.restore_best(mlp())


def test_a_folder_whose_run_stopped_in_set_up_is_taken_again_and_resume_there_starts_anew(tmp_path):
    """Probe 44: a Ctrl-C in fit's set-up left only run.json (interrupted, step 0); resume= that folder raised
    'no run to resume', and a plain rerun went to version_1 with a warning advising that very resume=."""
    X, y = blobs(n=64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    cfg = tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path))
    first = interrupted(tb.fit, CtrlCInSetUp(X.shape[1], 3), dl, loss_fn=CE, config=cfg, live=False)
    assert (first.stopped, first.step, sorted(files(tmp_path))) == ("interrupted", 0, ["run.json"])
    tb.guard.forget_interrupt()  # (noted as any interrupted run: in a script the next run stops at its door)
    with pytest.raises(FileNotFoundError, match=r"stopped \(interrupted\) at step 0, before its first checkpoint"):
        tb.checkpoint_file(tmp_path)
    with pytest.warns(UserWarning, match="nothing to resume: this run starts anew"):
        resumed = tb.fit(nn.Linear(X.shape[1], 3), dl, loss_fn=CE, config=cfg, resume=tmp_path, live=False)
    assert resumed.stopped == "completed" and resumed.run_dir == tmp_path and not list(tmp_path.glob("version_*"))
    assert [f.kind for f in resumed.findings if f.kind == "nothing_to_resume"] == ["nothing_to_resume"]
    # a plain rerun into such a folder takes it too, with no warning
    shutil.rmtree(tmp_path); tmp_path.mkdir()
    interrupted(tb.fit, CtrlCInSetUp(X.shape[1], 3), dl, loss_fn=CE, config=cfg, live=False)
    tb.guard.forget_interrupt()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = tb.fit(nn.Linear(X.shape[1], 3), dl, loss_fn=CE, config=cfg, live=False)
    assert again.run_dir == tmp_path and tb.Run.load(tmp_path).step == again.step > 0
    # a folder that holds real work keeps its protection: the next run takes a version folder
    assert fit(tmp_path, epochs=1).run_dir == tmp_path / "version_1"


def test_a_record_with_steps_or_history_is_kept_however_the_run_stopped(tmp_path):
    "Only a record of no step, no best and no history is taken over: anything else is an earlier run's work."
    record = {"stopped": "interrupted", "step": 0, "best": None, "history": {"step": [], "name": []}}
    for change, kept in [({}, False), ({"step": 3}, True), ({"history": {"step": [0], "name": ["epoch"]}}, True),
                         ({"best": 0.5}, True)]:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({**record, **change}))
        taken, _ = prepare_run_dir(folder)
        assert (taken != folder) == kept and (folder / "run.json").exists() == kept
        release_run_dir(taken)


def test_a_folder_a_run_is_writing_says_so_to_run_load_resume_and_the_next_run(tmp_path):
    """Probe 44: while a fit held the folder's lock (in its first epoch: no run.json, no last.pt yet), Run.load sent
    the user to version_1 and resume= said 'no run to resume there'; neither said a run was in progress there."""
    taken, _ = prepare_run_dir(tmp_path)  # this process holds the lock, as a fit in another thread does
    try:
        second, note = prepare_run_dir(tmp_path)
        assert second == tmp_path / "version_1" and "is in use: a run is in progress there" in note.message
        assert f"resume={str(tmp_path)!r}" in note.advice and "once that run has ended" in note.advice
        release_run_dir(second)
        assert fit(second, epochs=1).run_dir == second  # a run beside it, finished
        with pytest.raises(RunFileError, match=r"yet: a run is in progress there \(its lock is held by process "
                                               rf"{os.getpid()} .*since .*version_1 beside it are other runs"):
            tb.Run.load(tmp_path)
        with pytest.raises(FileNotFoundError, match=r"has no last.pt yet: a run is in progress there .*wait until"):
            tb.checkpoint_file(tmp_path)
    finally:
        release_run_dir(taken)
    with pytest.raises(RunFileError, match="no run record at"):  # once it has gone: no word of one in progress
        tb.Run.load(tmp_path)


def test_a_run_taking_a_folder_whose_run_stopped_in_set_up_does_not_write_over_your_files(tmp_path):
    "Probe 45: such a folder is taken again, so fit_xgboost wrote its model.json over yours there (it assumed version_1)."
    from trainbook.run import refuse_own_files
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"step": 0, "best": None, "history": {}, "stopped": "interrupted"}))
    (folder / "model.json").write_text("{}")  # yours
    with pytest.raises(FileExistsError, match="holds model.json, which no trainbook run wrote"):
        refuse_own_files(folder, ["model.json", "boosted.json"])
    (folder / "run.json").write_text(json.dumps({"step": 5, "best": None, "history": {}, "stopped": "interrupted"}))
    refuse_own_files(folder, ["model.json", "boosted.json"])  # a run with steps: the new one goes to version_1


def test_resume_from_a_recorder_stopped_before_its_first_checkpoint_says_so(tmp_path):
    """Probe 46: a Recorder Ctrl-C'd in its first epoch left run.json ('interrupted', step 3) and no last.pt; resume=
    that folder said 'no run to resume there', which run.json contradicts. The step-0 case starts anew (above)."""
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(KeyboardInterrupt):  # (in a plain script, as pytest is, the Ctrl-C goes on out of the block)
        with tb.Recorder(tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path)),
                         parts={"model": model, "optimizer": opt}, live=False) as rec:
            for _ in range(3): rec.step(1.0)
            raise KeyboardInterrupt  # before the first epoch's end: the Recorder saves no last.pt
    tb.guard.forget_interrupt()  # this test starts runs in that folder again
    assert (rec.run.stopped, rec.run.step, sorted(files(tmp_path))) == ("interrupted", 3, ["run.json"])
    said = r"stopped \(interrupted\) at step 3, before its first checkpoint: it wrote no last.pt.*overwrite=True"
    with pytest.raises(FileNotFoundError, match=said):
        tb.checkpoint_file(tmp_path)
    with pytest.raises(FileNotFoundError, match=said):
        tb.Recorder(tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path)), parts={"model": model, "optimizer": opt},
                    live=False, resume=tmp_path)
    with tb.Recorder(tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path)), parts={"model": model, "optimizer": opt},
                     live=False, overwrite=True) as again:  # what the message says: a new run in that folder
        again.step(1.0)
    assert again.run.run_dir == tmp_path and tb.Run.load(tmp_path).stopped == "completed"


def test_a_killed_runs_advice_names_the_call_that_resumes_it():
    "Probe 59: a killed Keras run was told fit(..., resume='.../last.keras'); Flax and Recorder runs fit( too."
    from pathlib import Path
    from trainbook.run import Run, resume_advice
    said = {kind: resume_advice(Run(tb.History(), tb.TrainConfig(), "killed", kind=kind, epoch=2,
                                    last_path=Path("/r") / name))
            for kind, name in [("torch", "last.pt"), ("custom", "last.pt"), ("flax", "last.msgpack"),
                               ("keras", "last.keras"), ("transformers", "checkpoint-40")]}
    assert said["torch"] == "continue it with fit(..., resume='/r/last.pt')"
    assert said["custom"].startswith("continue it with tb.Recorder(..., resume='/r/last.pt')")
    assert said["flax"] == "continue it with fit_flax(..., resume='/r/last.msgpack')"
    assert "keras.saving.load_model('/r/last.keras')" in said["keras"] and "initial_epoch=3" in said["keras"]
    assert said["transformers"] == "continue it with trainer.train(resume_from_checkpoint='/r/checkpoint-40')"


def test_loading_a_folder_whose_run_died_before_its_first_record_says_so(tmp_path):
    "Probe 59: a boosting run killed mid-run left its lock only; Run.load said 'expected a run folder holding run.json'."
    import subprocess, sys
    child = subprocess.run([sys.executable, "-c", "import os, sys; from trainbook.checkpoint import prepare_run_dir; "
                            f"prepare_run_dir({str(tmp_path)!r}); os._exit(0)"], capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    with pytest.raises(RunFileError, match=r"a run started there \(process \d+ on .*\) and its process ended, before "
                                            r"its first run.json"):
        tb.Run.load(tmp_path)


def test_a_copy_of_a_running_runs_folder_resumes_and_loads_its_own_files(tmp_path, monkeypatch):
    """Probe 93: `cp -r` of a folder while its run goes carried the lock, so a resume from the copy was refused
    (RunFolderBusy, 'stop that run first') though nothing writes the copy; a copy without last.pt had `last_path`
    naming the original's file (a resume from it wrote there); `Run.load('runs/a')` kept the relative path, which
    named nothing after a change of working directory."""
    copies = []
    class Copy(tb.Callback):  # a backup taken while the run goes, at its first epoch's end
        def after_epoch(self, state):
            if state.epoch == 0: shutil.copytree(tmp_path / "live", tmp_path / "copy")
    fit(tmp_path / "live", epochs=3, callbacks=[Copy()])
    assert (tmp_path / "copy" / ".trainbook-run").is_file()  # the lock came along, naming this (live) process
    with pytest.warns(UserWarning, match="holds a lock copied from another folder"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="(?!.*lock copied)")
            resumed = tb.fit(mlp(), *data(), loss_fn=CE, live=False, resume=tmp_path / "copy",
                             config=tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(tmp_path / "copy")))
    assert resumed.stopped == "completed" and resumed.run_dir == tmp_path / "copy"
    shutil.copytree(tmp_path / "live", tmp_path / "slim")
    (tmp_path / "slim" / "last.pt").unlink()
    slim = tb.Run.load(tmp_path / "slim")
    assert slim.last_path is None and slim.best_path == tmp_path / "slim" / "best.pt"
    monkeypatch.chdir(tmp_path)
    here = tb.Run.load("live")
    assert here.run_dir == tmp_path / "live" and here.last_path == tmp_path / "live" / "last.pt"


def test_a_killed_runs_finding_says_the_step_its_history_goes_up_to():
    "Probe 93: a run killed mid-epoch was said to have its history 'up to epoch 2', an epoch it never finished."
    from trainbook.run import Run, mark_killed
    run = Run(tb.History([(14, 2, "train", "loss", 0.5)]), tb.TrainConfig(), "running", step=14, epoch=2)
    mark_killed(run)
    [found] = [f for f in run.findings if f.kind == "killed"]
    assert "goes up to step 14 (epoch 2), its last checkpoint or record" in found.message


def test_a_folder_renamed_while_its_run_goes_is_followed_and_free_when_the_run_ends(tmp_path):
    """Probes 99, 107: `mv runs/a runs/a_keep` during the run kept the renamed folder locked by this process (its
    resume refused); then the run wrote on at the old path, over the files of a run that had trained there since."""
    X, y = blobs(64, d=5)
    data = [(X[i:i + 8], y[i:i + 8]) for i in range(0, 64, 8)]
    folder, kept = tmp_path / "a", tmp_path / "a_keep"

    class Rename:
        def after_epoch(self, state):
            if state.epoch != 0: return
            os.rename(folder, kept)
            other = tb.fit(nn.Linear(5, 3), data, None, loss_fn=nn.functional.cross_entropy, live=False,
                           config=tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(folder)))
            assert other.run_dir == folder  # another run takes the old path meanwhile

    cfg = tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(folder))
    with pytest.warns(UserWarning, match="renamed or moved while its run went on: the run follows it"):
        run = tb.fit(nn.Linear(5, 3), data, None, loss_fn=nn.functional.cross_entropy, callbacks=[Rename()],
                     live=False, config=cfg)
    assert run.run_dir == kept and run.last_path == kept / "last.pt"
    assert tb.Run.load(kept).step == run.step == 24  # the whole run, in the folder it was moved to
    assert tb.Run.load(folder).step == 8  # the other run's files, not written over
    assert not (kept / ".trainbook-run").exists()
    again = tb.fit(nn.Linear(5, 3), data, None, loss_fn=nn.functional.cross_entropy, live=False, resume=kept,
                   config=tb.TrainConfig(epochs=4, device="cpu", checkpoint_dir=str(kept)))
    assert again.run_dir == kept  # resumed in place, not refused as written by this process


def test_a_folder_deleted_while_its_run_goes_gets_no_more_files(tmp_path):
    X, y = blobs(64, d=5)
    data = [(X[i:i + 8], y[i:i + 8]) for i in range(0, 64, 8)]
    folder = tmp_path / "a"

    class Delete:
        def after_epoch(self, state):
            if state.epoch == 0: shutil.rmtree(folder)

    with pytest.warns(UserWarning, match="was deleted while its run went on"):
        run = tb.fit(nn.Linear(5, 3), data, None, loss_fn=nn.functional.cross_entropy, callbacks=[Delete()],
                     live=False, config=tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(folder)))
    assert run.stopped == "completed" and not folder.exists() and run.last_path is None


def test_a_copy_taken_mid_run_loads_as_a_snapshot(tmp_path):
    "Probes 93, 99: Run.load of a folder copied while its run went on said only 'running', as if it went on there."
    class Copy(tb.Callback):
        def after_epoch(self, state):
            if state.epoch == 1: shutil.copytree(tmp_path / "live", tmp_path / "copy")  # run.json of epoch 0 in it
    fit(tmp_path / "live", epochs=3, callbacks=[Copy()])
    copied = tb.Run.load(tmp_path / "copy")
    assert copied.stopped == "running" and [f.kind for f in copied.findings][-1:] == ["snapshot"]
    assert not [f for f in tb.Run.load(tmp_path / "live").findings if f.kind == "snapshot"]
