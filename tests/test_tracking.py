"Experiment memory: runs recorded in MLflow (a temporary SQLite store), listed, loaded, compared, sent to TensorBoard."
import inspect, json, subprocess, sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import tracking
from trainbook.core import announce

from helpers import blobs, mlp

mlflow = pytest.importorskip("mlflow")
LOSS = nn.functional.cross_entropy
HAS_STAGE1 = "track" in inspect.signature(tb.fit).parameters  # fit(track=...), fit_start/epoch_end announced


def loaders(n=192, seed=0):
    X, y = blobs(n, seed=seed)
    dl_train = tb.TensorLoader(X[:128], y[:128], batch_size=16, shuffle=True)
    return dl_train, tb.TensorLoader(X[128:], y[128:], batch_size=64)


def fit(epochs=3, lr=1e-2, **kw):
    dl_train, dl_valid = loaders()
    cfg = tb.TrainConfig(epochs=epochs, lr=lr, device="cpu", log_every=2)
    return tb.fit(mlp(), dl_train, dl_valid, loss_fn=LOSS, config=cfg, metrics="accuracy", live=False, **kw)


def xgboost_run():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(200, 4)), columns=list("abcd"))
    df["y"] = (df.a + df.b > 0).astype(int)
    sp = tb.make_splits(df, "y", seed=0)
    return tb.fit_xgboost(df, "y", sp, num_rounds=12, early_stopping=None, live=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    "One SQLite store for the module (MLflow's tables cost seconds to create); each test has its own experiment."
    folder = tmp_path_factory.mktemp("mlflow")
    tb.track(f"sqlite:///{folder}/mlruns.db")  # creates the tables
    tb.untrack()
    yield f"sqlite:///{folder}/mlruns.db", folder
    tb.untrack()


@pytest.fixture
def tracker(store, request):
    t = tb.track(store[0], experiment=request.node.name, flush_every=0)
    yield t
    tb.untrack()


def epochs_run(run): return len(run.metrics())


def test_fit_and_xgboost_runs_recorded(tracker, store, request):
    r1, r2 = fit(epochs=3, lr=1e-2), fit(epochs=4, lr=3e-3)
    xrun = xgboost_run()
    tracker.wait()
    assert "mlflow_run_id" in xrun.extra  # fit_xgboost announces its run like fit does
    table = tb.runs()
    ids = [r.extra["mlflow_run_id"] for r in (r1, r2, xrun)]
    assert sorted(table.run_id) == sorted(ids)
    assert set(table.kind) == {"torch", "xgboost"}
    # the same runs through MLflow's own API on the same URI
    mlflow.set_tracking_uri(store[0])
    try: found = mlflow.search_runs(experiment_names=[request.node.name])
    finally: mlflow.set_tracking_uri(None)
    assert sorted(found.run_id) == sorted(ids)
    by_id = found.set_index("run_id")
    client = mlflow.MlflowClient(store[0])
    for run, rid in zip((r1, r2, xrun), ids):
        assert by_id.loc[rid, "tags.stopped"] == run.stopped
        assert by_id.loc[rid, "params.epochs"] == str(run.config.epochs)
        valid = client.get_metric_history(rid, "valid_loss")
        train = client.get_metric_history(rid, "train_loss")
        assert len(valid) == len(train) == epochs_run(run)  # one point per epoch (per boosting round)
        expected = run.records.series("loss", "valid")
        assert [m.step for m in sorted(valid, key=lambda m: m.step)] == list(expected.index)
        assert np.allclose([m.value for m in sorted(valid, key=lambda m: m.step)], expected.to_numpy())
        assert tb.load_run(rid).records.rows() == run.records.rows()  # the whole history, step by step
    assert by_id.loc[ids[0], "params.lr"] == "0.01" and by_id.loc[ids[1], "params.lr"] == "0.003"
    assert by_id.loc[ids[2], "params.xgboost.objective"] == "binary:logistic"  # the library's own parameters
    assert by_id.loc[ids[0], "tags.precision"] == "fp32" and by_id.loc[ids[0], "tags.device"] == "cpu"
    assert by_id["tags.trainbook_version"].notna().all() and by_id["tags.torch_version"].notna().all()


def test_loaded_run_keeps_findings_and_config(tracker):
    run = fit(epochs=2, track=False)  # a run made before tracking: log_run records it
    made_up = tb.Finding("overfitting", "warning", "made up for the test", data={"onset_epoch": 1, "best_epoch": 0})
    run.findings.append(made_up)
    rid = tb.log_run(run)
    back = tb.load_run(rid)
    assert back.config == run.config and back.stopped == run.stopped
    same = lambda findings: [(f.kind, f.severity, f.data) for f in findings]
    assert same(back.findings) == same(run.findings)
    tags = mlflow.MlflowClient(tracker.uri).get_run(rid).data.tags
    assert tags["finding.overfitting"] == "warning" and "overfitting:warning" in tags["findings"]


def test_no_write_per_step(tracker):
    calls = []
    real = tracker.client.log_batch
    tracker.client.log_batch = lambda *a, **k: calls.append(len(k.get("metrics", ()))) or real(*a, **k)
    run = fit(epochs=3)
    tracker.wait()
    assert run.step == 24  # 8 optimizer steps per epoch
    assert len(calls) <= 3 + 4  # at most one metric write per epoch, plus the start and the end
    assert sum(calls) < 2 * run.step  # the step records (loss, lr) are not each a metric point


@pytest.mark.skipif(not HAS_STAGE1, reason="needs the epoch_end announcement")
def test_metrics_reach_the_store_while_training(tracker):
    seen = []
    class Peek(tb.Callback):
        "At each epoch's end, counts the valid_loss points the store holds (the tracker, an observer, runs first)."
        def after_epoch(self, state):
            tracker.wait()
            (rec,) = tracker.recording.values()
            seen.append(len(tracker.client.get_metric_history(rec.run_id, "valid_loss")))
    fit(epochs=3, callbacks=[Peek()])
    assert seen == [1, 2, 3]  # each epoch's point is in the store before the user's after_epoch looks


def test_tracking_off_records_nothing(store, request):
    tb.track(store[0], experiment=request.node.name)
    fit(epochs=1)
    tb.track(False)
    assert tb.active_tracker() is None
    run = fit(epochs=1)
    assert "mlflow_run_id" not in run.extra
    assert len(tb.runs(request.node.name, uri=store[0])) == 1


@pytest.mark.skipif(not HAS_STAGE1, reason="needs fit(track=...)")
def test_track_false_opts_one_run_out(tracker):
    kept, skipped = fit(epochs=1), fit(epochs=1, track=False)
    table = tb.runs()
    assert list(table.run_id) == [kept.extra["mlflow_run_id"]] and "mlflow_run_id" not in skipped.extra


@pytest.mark.skipif(not HAS_STAGE1, reason="needs announce('run') for failed runs")
def test_failed_run_recorded_as_failed(tracker):
    calls = []
    def loss_fn(out, yb):
        calls.append(1)
        if len(calls) > 12: raise RuntimeError("boom")
        return LOSS(out, yb)
    dl_train, dl_valid = loaders()
    with pytest.raises(RuntimeError, match="boom"):
        tb.fit(mlp(), dl_train, dl_valid, loss_fn=loss_fn, config=tb.TrainConfig(epochs=3, device="cpu"),
               live=False)
    table = tb.runs()
    assert list(table.status) == ["FAILED"] and list(table.stopped) == ["failed"]


def test_run_params_and_compare(tracker):
    with tracking.run_params(hidden=16):
        a = fit(epochs=2, lr=1e-2)
    with tracking.run_params(hidden=32):
        b = fit(epochs=2, lr=1e-2)
    table = tb.runs()
    assert "hidden" in table.columns and "lr" not in table.columns  # only what differs is a key param
    cmp = tb.compare_runs(table)
    assert len(cmp.figure.data) == 2 and list(cmp.table.columns[:1]) == ["hidden"]
    hover = {t.name: t.hovertemplate for t in cmp.figure.data}
    assert any("hidden = 32" in h for h in hover.values()) and any("hidden = 16" in h for h in hover.values())
    mixed = tb.compare_runs([a, b.extra["mlflow_run_id"]], metric="train_loss")  # in memory and recorded
    assert np.allclose(mixed.figure.data[0].y, a.records.series("epoch_loss").to_numpy())
    assert np.allclose(mixed.figure.data[1].y, b.records.series("epoch_loss").to_numpy())
    browser = tb.RunBrowser()
    browser.select.value = (table.run_id[0],)
    assert len(browser.figure.data) == 1
    browser.select.value = ()
    assert len(browser.figure.data) == 0


def test_two_runs_trained_at_once_in_two_threads_keep_their_own_run_params(tracker):
    "Seen: run_params was one stack for the process: a run trained under who='A' was recorded with who='B'."
    import threading
    inside, ending = threading.Barrier(2, timeout=120), threading.Barrier(2, timeout=120)

    class BothEnd(tb.Callback):  # neither block closes before both runs opened (and read their params)
        def after_fit(self, state): ending.wait()
    runs, errors = {}, []

    def train(who):
        try:
            with tracking.run_params(who=who):
                inside.wait()  # both blocks are open before either run starts
                runs[who] = fit(epochs=1, callbacks=[BothEnd()])
        except Exception as e: errors.append(e)
    threads = [threading.Thread(target=train, args=(who,)) for who in "AB"]
    for t in threads: t.start()
    for t in threads: t.join()
    assert errors == []
    tracker.wait()
    client = mlflow.MlflowClient(tracker.uri)
    for who, run in runs.items():
        assert client.get_run(run.extra["mlflow_run_id"]).data.params["who"] == who
        assert run.extra["run_params"] == {"who": who}  # kept with the run it was recorded for
    with tracking.run_params(who="outer"):
        with tracking.run_params(hidden=8): assert tracking.context_params() == {"who": "outer", "hidden": 8}
        assert tracking.context_params() == {"who": "outer"}  # nested blocks still stack in one thread
    assert tracking.context_params() == {}


def test_metric_names_one_safe_key_apart_stay_two_metrics_in_the_store(tracker):
    "Seen: 'acc@1' and 'acc_1' were both written as valid_acc_1, their points mixed at the same steps."
    dl_train, dl_valid = loaders()
    top1 = lambda out, yb: float((out.argmax(1) == yb).float().mean())
    const = lambda out, yb: 0.123
    run = tb.fit(mlp(), dl_train, dl_valid, loss_fn=LOSS, config=tb.TrainConfig(epochs=2, device="cpu"),
                 metrics={"acc@1": top1, "acc_1": const}, live=False)
    tracker.wait()
    rid = run.extra["mlflow_run_id"]
    client = mlflow.MlflowClient(tracker.uri)
    got = client.get_run(rid).data
    renamed = json.loads(got.tags["trainbook.renamed_metrics"])  # MLflow key -> the name as written
    key = next(k for k, name in renamed.items() if name == "valid_acc@1")
    assert key != "valid_acc_1" and "valid_acc_1" not in renamed  # a name MLflow takes keeps its own key
    for name, stored in (("acc@1", key), ("acc_1", "valid_acc_1")):
        points = sorted((m.step, m.value) for m in client.get_metric_history(rid, stored))
        want = run.records.series(name, "valid")
        assert points == list(zip(want.index, want.to_numpy()))  # one series each, one point per epoch
    table = tb.runs()
    assert np.isclose(table.loc[0, "valid_acc@1"], run.records.series("acc@1", "valid").iloc[-1])
    assert np.isclose(table.loc[0, "valid_acc_1"], 0.123)
    for metric, name in (("valid_acc@1", "acc@1"), ("valid_acc_1", "acc_1")):
        curve = tb.compare_runs([rid], metric=metric).figure.data[0]
        assert np.allclose(curve.y, run.records.series(name, "valid").to_numpy())
    assert tb.load_run(rid).records.rows() == run.records.rows()


def event_scalars(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    scalars = {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}
    return {tag: ([e.step for e in events], [e.value for e in events]) for tag, events in scalars.items()}


def expected_scalars(run):
    h = run.records
    return {f"{s}/{n}": (list(h.series(n, s).index), h.series(n, s).to_numpy()) for s, n in h.names()}


def assert_same(got, want):
    assert sorted(got) == sorted(want)
    for tag, (steps, values) in want.items():
        assert got[tag][0] == steps, tag
        assert np.allclose(got[tag][1], values, rtol=1e-6, atol=1e-7), tag  # TensorBoard keeps float32


def test_tensorboard_export_equals_history(tmp_path):
    run = fit(epochs=2)
    run.to_tensorboard(tmp_path / "tb")
    assert_same(event_scalars(tmp_path / "tb"), expected_scalars(run))
    # a second export into the same folder mixes two runs' events (probe 14, f5): said
    with pytest.warns(UserWarning, match=r"already holds 1 event file\(s\).*give each run its own folder"):
        fit(epochs=1).to_tensorboard(tmp_path / "tb")


def test_track_writes_tensorboard_while_training(tmp_path):
    tb.track(tensorboard=tmp_path / "runs", use_mlflow=False)
    try: run = fit(epochs=2)
    finally: tb.untrack()
    (folder,) = (tmp_path / "runs").iterdir()  # one subfolder per run
    assert_same(event_scalars(folder), expected_scalars(run))


def test_bad_input(store):
    with pytest.raises(ValueError, match="experiment"): tb.track(store[0], experiment="")
    with pytest.raises(ValueError, match="nothing would be recorded"): tb.track(use_mlflow=False)
    with pytest.raises(ValueError, match="not found"): tb.runs("no such experiment", uri=store[0])
    with pytest.raises(ValueError, match="no tracking store"): tb.runs(uri=f"sqlite:///{store[1]}/none.db")
    with pytest.raises(ValueError, match="metric"): tb.compare_runs([fit(epochs=1)], metric="loss")
    with pytest.raises(TypeError, match="runs_or_ids"): tb.compare_runs([1, 2])


def test_listener_errors_are_warnings_not_failures(tracker, monkeypatch):
    monkeypatch.setattr(tracker.client, "create_run", lambda *a, **k: 1 / 0)
    with pytest.warns(UserWarning, match="tracking"):
        run = fit(epochs=1)
        tracker.wait()
    assert run.stopped == "completed"


def test_import_stays_light():
    code = ("import sys, trainbook, trainbook.tracking, trainbook.tuning; "
            "print([m for m in ('mlflow', 'optuna', 'tensorboard') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = out.stdout.strip()
    assert out == "[]"


def test_runs_carry_a_data_fingerprint_that_follows_the_data(tracker, store):
    same_a, same_b = fit(epochs=1), fit(epochs=1, lr=3e-3)
    X, y = blobs(192, seed=5)
    other = tb.fit(mlp(), tb.TensorLoader(X[:128], y[:128], batch_size=16), tb.TensorLoader(X[128:], y[128:]),
                   loss_fn=LOSS, config=tb.TrainConfig(epochs=1, device="cpu"), live=False)
    xrun = xgboost_run()
    tracker.wait()
    prints = [r.extra["data_fingerprint"] for r in (same_a, same_b, other, xrun)]
    assert all(prints) and prints[0] == prints[1] and len(set(prints[1:])) == 3
    assert xrun.extra["split_fingerprint"]  # a GBDT run records its split as fit does
    client = mlflow.MlflowClient(store[0])
    for run in (same_a, other, xrun):
        recorded = client.get_run(run.extra["mlflow_run_id"]).data.tags
        assert recorded["data_fingerprint"] == run.extra["data_fingerprint"]


def test_artifacts_are_the_run_record_and_the_figure_and_a_broken_figure_keeps_the_record(tracker, monkeypatch):
    client = mlflow.MlflowClient(tracker.uri)
    run = fit(epochs=2)
    tracker.wait()
    rid = run.extra["mlflow_run_id"]
    assert sorted(a.path for a in client.list_artifacts(rid)) == ["curves.html", "run.json"]
    html = Path(client.download_artifacts(rid, "curves.html")).read_text()
    assert "Plotly.newPlot" in html and "cdn.plot.ly" in html  # plotly.js from its CDN: kilobytes, not megabytes
    monkeypatch.setattr(tb.Run, "plot", lambda self, **kw: 1 / 0)
    with pytest.warns(UserWarning, match="write_figure failed"):
        broken = fit(epochs=1)
        tracker.wait()
    rid = broken.extra["mlflow_run_id"]
    assert [a.path for a in client.list_artifacts(rid)] == ["run.json"]
    assert client.get_run(rid).info.status == "FINISHED"
    assert tb.load_run(rid).step == broken.step


def test_a_run_shorter_than_flush_every_is_its_params_when_opened_then_one_write(store, request):
    t = tb.track(store[0], experiment=request.node.name, flush_every=3600)
    written = []
    log_batch = t.client.log_batch
    t.client.log_batch = lambda run_id, **kw: written.append(kw) or log_batch(run_id, **kw)
    try:
        run = fit(epochs=3, lr=3e-3)
        t.wait()
    finally: tb.untrack()
    # the params when the store opens the run (a run killed at its first step has them), the rest at its end
    assert len(written) == 2 and written[0]["params"] and not written[0].get("metrics")
    # params are write-once: the end adds only the loaders' batch size, seen at the first step (probe 100)
    assert [p.key for p in written[1]["params"]] == ["batch_size"] and written[1]["metrics"] and written[1]["tags"]
    data = mlflow.MlflowClient(store[0]).get_run(run.extra["mlflow_run_id"]).data
    assert data.params["epochs"] == "3" and data.params["lr"] == "0.003" and data.params["model"] == "Sequential"
    assert data.tags["stopped"] == run.stopped and "valid_loss" in data.metrics


# --- a store that fails for a moment, a TensorBoard folder that cannot be written ---------------------------

def stored_steps(uri, run_id, key):
    return sorted(m.step for m in mlflow.MlflowClient(uri).get_metric_history(run_id, key))


@pytest.mark.parametrize("lost", ["one epoch's write", "one epoch's write and the run's end"])
def test_a_failed_metric_write_is_resent_and_nothing_is_doubled(store, request, tmp_path, monkeypatch, lost):
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    t = tb.track(store[0], experiment=request.node.name, flush_every=0)
    real, calls, ends = t.client.log_batch, [], []

    def blip(run_id, **kw):
        "The store drops the third write (a network blip), and in the second case the first end write too."
        calls.append(1)
        end = any(tag.key == "stopped" for tag in kw.get("tags", ()))
        if end and "end" in lost and not ends:
            ends.append(1)
            raise ConnectionError("blip at the end")
        if len(calls) == 3: raise ConnectionError("blip")
        return real(run_id, **kw)
    t.client.log_batch = blip
    try:
        with pytest.warns(UserWarning, match="write failed"):
            run = fit(epochs=6)
            t.wait()
    finally: tb.untrack()
    rid = run.extra["mlflow_run_id"]
    if "end" in lost:  # the run's end could not be written: spooled, then delivered by sync
        assert len(tracking.spooled(store[0])) == 1
        assert tb.sync(store[0]) == [rid]
    assert tracking.spooled(store[0]) == []  # nothing left waiting (no spool at all in the first case)
    want = list(run.records.series("loss", "valid").index)
    assert stored_steps(store[0], rid, "valid_loss") == want  # every epoch, once: the lost one resent
    assert stored_steps(store[0], rid, "train_loss") == want
    assert stored_steps(store[0], rid, "best") == [run.step]  # a summary value is one point, not one per try


def test_delivering_a_spooled_run_fills_a_gap_in_the_middle_once(tracker):
    "A run the store holds in part (a write lost mid-run, an answer lost on its way): sync adds what lacks."
    from mlflow.entities import Metric
    run = fit(epochs=6, track=False)
    valid = run.records.series("loss", "valid")
    rid = tracker.client.create_run(tracker.experiment_id).info.run_id
    kept = [Metric("valid_loss", float(v), 0, int(s)) for s, v in valid.items() if s != valid.index[2]]
    tracker.client.log_batch(rid, metrics=kept + [Metric("best", float(run.best), 0, run.step)])
    entry = {"run_id": rid, "name": "gap", "params": {}, "tags": {}, "status": "FINISHED",
             "record": run.to_dict()}
    assert tracker.deliver(entry) == rid
    assert stored_steps(tracker.uri, rid, "valid_loss") == list(valid.index)  # the middle one added, once
    assert stored_steps(tracker.uri, rid, "best") == [run.step]


def test_a_spooled_run_is_delivered_once_into_its_own_experiment(store, request, tmp_path, monkeypatch, capsys):
    "Probe 14, f2-f3: a spooled run went to the syncing tracker's experiment; two sessions syncing at once sent it twice."
    import os
    from trainbook import store as st
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    run = fit(epochs=2, track=False)
    own, other = f"{request.node.name}-A", f"{request.node.name}-B"
    entry = lambda name: {"experiment": own, "run_id": None, "name": name, "params": {}, "tags": {},
                          "status": "FINISHED", "record": run.to_dict()}
    first, taken, stale = (st.spool(store[0], entry(n)) for n in ("first", "taken", "stale"))
    held = st.claim_spooled(taken)  # another live session (this process) is delivering it
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    os.rename(stale, stale.with_name(f"{stale.name}.{dead.pid}.claimed"))  # a session that died while delivering
    tb.track(store[0], experiment=other)
    try: said = capsys.readouterr().out
    finally: tb.untrack()
    assert f"2 spooled run(s) recorded in {store[0]}: 2 in experiment {own!r}" in said, said
    client = mlflow.MlflowClient(store[0])
    names = lambda exp: sorted(r.info.run_name for r in client.search_runs(
        [client.get_experiment_by_name(exp).experiment_id]))
    assert names(own) == ["first", "stale"]  # each once, in its own experiment; the held one left to its session
    assert client.get_experiment_by_name(other) is None or names(other) == []
    assert [p.name for p in st.spooled(store[0])] == [] and held.exists()
    assert not first.exists()


def test_tensorboard_folder_that_is_a_file_is_refused_before_any_run(store, tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    with pytest.raises(ValueError, match="tensorboard=.*is a file"): tb.track(store[0], tensorboard=afile)
    with pytest.raises(ValueError, match="tensorboard=.*inside"):
        tb.track(store[0], tensorboard=afile / "runs")
    assert tb.active_tracker() is None


def test_tensorboard_that_is_no_folder_is_refused_naming_it(store):
    "Probe 92: track(tensorboard=123) gave os's 'expected str, bytes or os.PathLike object, not int'."
    for given in (123, True):
        with pytest.raises(TypeError, match=rf"tensorboard must be a folder to write under .* got \w+ {given}"):
            tb.track(store[0], tensorboard=given)
    assert tb.active_tracker() is None


def test_a_failing_tensorboard_writer_is_reported_as_such_and_the_store_keeps_the_run(
        store, request, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    t = tb.track(store[0], experiment=request.node.name, tensorboard=tmp_path / "runs", flush_every=0)
    monkeypatch.setattr(tracking, "write_scalars", lambda writer, rows: 1 / 0)  # TensorBoard's disk fails
    try:
        with pytest.warns(UserWarning) as caught:
            run = fit(epochs=3)
            t.wait()
    finally: tb.untrack()
    said = [str(w.message) for w in caught if "trainbook tracking" in str(w.message)]
    assert len(said) == 1 and "TensorBoard" in said[0] and "not affected" in said[0]  # once: TensorBoard
    assert tracking.spooled(store[0]) == []  # the store write did not fail: nothing spooled
    rid = run.extra["mlflow_run_id"]
    assert mlflow.MlflowClient(store[0]).get_run(rid).info.status == "FINISHED"
    assert stored_steps(store[0], rid, "valid_loss") == list(run.records.series("loss", "valid").index)
    assert stored_steps(store[0], rid, "best") == [run.step]


# --- reading back: names as written, errors that name the argument ------------------------------------------

def test_compare_runs_finds_a_metric_under_its_safe_name_and_names_a_missing_one(tracker):
    dl_train, dl_valid = loaders()
    top1 = lambda out, yb: float((out.argmax(1) == yb).float().mean())
    run = tb.fit(mlp(), dl_train, dl_valid, loss_fn=LOSS, config=tb.TrainConfig(epochs=2, device="cpu"),
                 metrics={"acc@1": top1}, live=False)
    rid = run.extra["mlflow_run_id"]
    cmp = tb.compare_runs([rid], metric="valid_acc@1")  # stored as valid_acc_1
    assert np.allclose(cmp.figure.data[0].y, run.records.series("acc@1", "valid").to_numpy())
    missing = r"metric 'valid_acc': none of the runs has it \(did you mean 'valid_acc@1'"  # the name as written
    with pytest.raises(ValueError, match=missing):
        tb.compare_runs([rid], metric="valid_acc")
    with pytest.raises(ValueError, match="none of the runs has it"):
        tb.compare_runs([run], metric="valid_top5")  # a Run in memory too


def test_runs_and_load_run_errors_name_the_argument(tracker):
    empty = tb.runs()
    assert len(empty) == 0 and {"run_id", "status", "stopped", "best"} <= set(empty.columns)
    assert list(empty[["run_id", "status"]].columns) == ["run_id", "status"]
    refused = r"filter \"stopped = 'completed'\" is not an MLflow search filter.*tags\."
    with pytest.raises(ValueError, match=refused):
        tb.runs(filter="stopped = 'completed'")
    with pytest.raises(ValueError, match="max_results must be"): tb.runs(max_results=0)
    with pytest.raises(ValueError, match="run_id: no run 'nope'"): tb.load_run("nope")
    with pytest.raises(ValueError, match="runs_or_ids: no run 'nope'"): tb.compare_runs(["nope"])


def test_track_checks_the_uri_before_mlflow_sees_it(store, tmp_path):
    with pytest.raises(ValueError, match=r"uri 'mlfow://foo': unknown scheme 'mlfow'.*http:"):
        tb.track("mlfow://foo")
    with pytest.raises(ValueError, match=r"unknown scheme 'htp' \(did you mean 'http'\?\)"):
        tb.track("htp://127.0.0.1:5000")
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(ValueError, match="uri .* is not an SQLite database"): tb.track(f"sqlite:///{text}")
    with pytest.raises(ValueError, match="uri .* is not an SQLite database"): tb.track(str(text))
    assert tb.active_tracker() is None
    folder = store[1]  # a folder: its mlruns.db is the store
    try: assert tb.track(str(folder), experiment="by-folder").uri == store[0]
    finally: tb.untrack()


def test_log_run_of_a_run_recorded_already_returns_its_id(tracker):
    run = fit(epochs=1)
    tracker.wait()
    rid = run.extra["mlflow_run_id"]
    with pytest.warns(UserWarning, match="recorded already"): assert tb.log_run(run) == rid
    assert list(tb.runs().run_id) == [rid]  # no second MLflow run


def test_sync_without_a_store_makes_none_and_track_leaves_no_spool_folder(store, request, tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tb.sync() == [] and not (tmp_path / "mlruns.db").exists()
    tb.track(store[0], experiment=request.node.name)
    tb.untrack()
    assert not (tmp_path / "spool").exists()  # a spool folder is made only when a run is spooled


@pytest.mark.parametrize("inside", [False, True], ids=["the-file", "under-the-file"])
def test_to_tensorboard_into_a_file_is_refused_naming_logdir_before_writing(tmp_path, inside):
    "A file as logdir failed inside TensorFlow's file system; it is refused first, naming logdir= and the file."
    afile = tmp_path / "somefile.txt"
    afile.write_text("not a folder")
    run = fit(epochs=1)
    logdir = afile / "logs" if inside else afile
    what = r"is inside .*somefile\.txt, a file" if inside else "is a file"
    with pytest.raises(ValueError, match=rf"logdir='[^']*somefile\.txt[^']*' {what}; pass a folder"):
        run.to_tensorboard(logdir)
    assert afile.read_text() == "not a folder"
    assert [p.name for p in tmp_path.iterdir()] == ["somefile.txt"]  # nothing written beside it


@pytest.mark.parametrize("where", ["store", "file:store"], ids=["folder", "file-uri"])
def test_a_relative_store_and_tensorboard_folder_stay_where_track_was_called(tmp_path, monkeypatch, where):
    "A relative file: store (and tensorboard= folder) followed os.chdir: the second fit's run went elsewhere."
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind this switch
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    for name in ("a/store", "b"): (tmp_path / name).mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    t = tb.track(where, tensorboard="boards", flush_every=0)
    try:
        first = fit(epochs=1)
        t.wait()
        monkeypatch.chdir(tmp_path / "b")
        second = fit(epochs=1)
        t.wait()
        listed = set(tb.runs().run_id)
    finally: tb.untrack()
    ids = {first.extra.get("mlflow_run_id"), second.extra.get("mlflow_run_id")}
    assert None not in ids and listed == ids  # both runs in the one store track() was given
    assert len(list((tmp_path / "a" / "boards").iterdir())) == 2  # a TensorBoard folder per run, both there
    assert list((tmp_path / "b").iterdir()) == []  # nothing written into the new working folder


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "catboost"])
def test_a_boosting_run_records_its_own_settings_and_no_torch_field(tracker, store, lib):
    "lr, batch_size, weight_decay... of TrainConfig never applied to a boosting run; class_weight did."
    pytest.importorskip(lib)
    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    df["y"] = (df.a + rng.normal(size=300) > 1.0).astype(int)
    sp = tb.make_splits(df, "y", strategy="stratified", seed=0)
    one_thread = {"xgboost": {"nthread": 1}, "lightgbm": {"num_threads": 1},
                  "catboost": {"thread_count": 1}}[lib]
    fit_boosted = getattr(tb, f"fit_{lib}")
    runs = [fit_boosted(df, "y", sp, params=one_thread, num_rounds=8, live=False, **kw)
            for kw in ({}, {"class_weight": "balanced"})]
    tracker.wait()
    client = mlflow.MlflowClient(store[0])
    plain, weighted = [client.get_run(r.extra["mlflow_run_id"]).data.params for r in runs]
    torch_only = {"lr", "batch_size", "weight_decay", "schedule", "precision", "device", "accum_steps"}
    assert not torch_only & set(plain), sorted(torch_only & set(plain))
    assert plain["epochs"] == "8" and plain["patience"] == "50" and plain["seed"] == "0"
    assert plain["class_weight"] == "None" and weighted["class_weight"] == "balanced"
    assert {k for k in plain if plain[k] != weighted.get(k)} == {"class_weight"}
    assert tracking.params_of(runs[1]) == weighted  # what params_of says of the run is what the store holds


def stored_curves(client, run_id: str, names) -> dict:
    "Each named metric's values in the store, in step order."
    return {n: [m.value for m in sorted(client.get_metric_history(run_id, n), key=lambda m: m.step)] for n in names}


def keras_run(batches: bool):
    "A Keras run with an lr schedule (Keras writes an epoch's lr after its loss) and a train metric."
    import os
    os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported anywhere
    keras = pytest.importorskip("keras")
    X, y = (t.numpy() for t in blobs(192))
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = tb.keras_callback(live=False, batches=batches)
    schedule = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.01 * 0.5 ** epoch)
    model.fit(X[:128], y[:128], validation_data=(X[128:], y[128:]), epochs=3, batch_size=32, verbose=0,
              callbacks=[cb, schedule])
    return cb.run


@pytest.mark.parametrize("producer", ["fit", "keras", "keras_batches"])
def test_the_store_holds_the_per_epoch_view_run_metrics_shows(tracker, producer):
    """Probe 59, f4: a Keras run's lr, written after its epoch_loss, never reached the store, and metrics_of (what
    runs() shows of a run the store has no metrics of) gave the epoch before's; with batches=True its per-batch
    running accuracy went in at every step, beside a train_epoch_accuracy no table names."""
    if producer == "fit":
        dl_train, dl_valid = loaders()
        cfg = tb.TrainConfig(epochs=3, lr=1e-2, schedule="warmup_cosine", warmup=0.2, device="cpu", log_every=2)
        run = tb.fit(mlp(), dl_train, dl_valid, loss_fn=LOSS, config=cfg, metrics="accuracy", live=False)
    else: run = keras_run(batches=producer == "keras_batches")
    tracker.wait()
    table = run.metrics()
    assert {"train_loss", "valid_loss", "valid_accuracy", "train_lr"} <= set(table.columns)
    assert producer == "fit" or "train_accuracy" in table.columns
    assert table.train_lr.nunique() == 3  # the schedule moved it every epoch
    client = mlflow.MlflowClient(tracker.uri)
    rid = run.extra["mlflow_run_id"]
    stored = stored_curves(client, rid, table.columns)
    for name in table.columns:
        assert np.allclose(stored[name], table[name].dropna().to_numpy()), (name, stored[name], list(table[name]))
        assert tracking.metrics_of(run)[name] == pytest.approx(table[name].dropna().iloc[-1])
    assert "train_epoch_accuracy" not in client.get_run(rid).data.metrics


def test_runs_names_the_monitor_the_run_followed(tracker):
    "Probe 59, f2: a fit without validation data follows train_loss; runs() said monitor='valid_loss' beside its best."
    X, y = blobs(128)
    run = tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=32), None, loss_fn=LOSS, live=False,
                 config=tb.TrainConfig(epochs=2, device="cpu"))
    assert run.monitor_followed() == "train_loss" and run.config.monitor == "valid_loss"
    row = tb.runs().iloc[0]
    assert row.monitor == "train_loss" and row.best == pytest.approx(run.best)
    assert mlflow.MlflowClient(tracker.uri).get_run(row.run_id).data.tags["monitor"] == "train_loss"


@pytest.mark.parametrize("folder", [False, True])
def test_runs_shows_a_live_run_running_and_no_evidence_column(tracker, tmp_path, folder):
    """Probe 59, notes: a live run's stopped column was NaN, and runs() listed the diagnosis's evidence
    (valid_loss_se, valid_loss_sd, valid_prior_loss) as metrics, which run.metrics() leaves out."""
    from trainbook.run import EVIDENCE, record_key
    seen = []
    class Peek(tb.Callback):
        "runs() in the middle of the run: its first epoch is in the store (the tracker, an observer, runs first)."
        def after_epoch(self, state):
            if state.epoch == 0: seen.append(tb.runs().iloc[0])
    dl_train, dl_valid = loaders()
    cfg = tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=tmp_path / "run" if folder else None)
    run = tb.fit(mlp(), dl_train, dl_valid, loss_fn=LOSS, config=cfg, live=False, callbacks=[Peek()])
    live = seen[0]
    assert live.status == "RUNNING" and live.stopped == "running" and live.valid_loss > 0
    if folder: assert live.monitor == "valid_loss"  # its record so far (run.json) says what its end will
    evidence = {record_key(*e) for e in EVIDENCE}
    assert ("valid", "loss_se") in run.records.names()  # recorded, for the diagnosis
    table = tb.runs()
    assert table.stopped[0] == "completed" and not evidence & set(table.columns), evidence & set(table.columns)
    assert not evidence & set(tracking.metrics_of(run))
    assert not evidence & set(mlflow.MlflowClient(tracker.uri).get_run(table.run_id[0]).data.metrics)


def ms(seconds: float) -> int: return int(seconds * 1000)


@pytest.mark.parametrize("lost", ["start", "end"])
def test_a_run_sync_delivers_keeps_its_own_start_and_end_and_its_place_in_runs(store, request, tmp_path,
                                                                               monkeypatch, lost):
    """Probe 79, f1: a spooled run delivered by sync was stored as started and ended at the sync (lasting under a
    second) and listed by tb.runs() as newer than runs recorded after it."""
    import time
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    experiment = request.node.name
    t = tb.track(store[0], experiment=experiment, flush_every=0)

    def down(*a, **k): raise ConnectionError("the store is down")
    if lost == "start": t.client.create_run = down  # the store never saw the run: sync creates it
    else:  # the store made the run, its end write failed: sync ends it
        real = t.client.log_batch
        t.client.log_batch = lambda run_id, **kw: (down() if any(tag.key == "stopped" for tag in kw.get("tags", ()))
                                                  else real(run_id, **kw))
    before = time.time()
    with pytest.warns(UserWarning, match="the run is kept in"):
        spooled = fit(epochs=2)
    after = time.time()
    tb.untrack()
    later = tb.log_run(fit(epochs=1, track=False), uri=store[0], experiment=experiment)  # recorded before the sync
    (rid,) = tb.sync(store[0])
    info = mlflow.MlflowClient(store[0]).get_run(rid).info
    assert ms(before) <= info.start_time <= info.end_time <= ms(after)  # when it ran, not when it was synced
    assert spooled.extra["mlflow_run_id"] == rid
    assert list(tb.runs(experiment, uri=store[0]).run_id) == [later, rid]  # newest first: it ran before `later`


def test_a_run_spooled_without_its_times_is_dated_by_its_spool_file(store, request, tmp_path, monkeypatch):
    "A spool file of a trainbook that kept no times: its end is when the file was written, its start that less its length."
    import os
    from trainbook import store as st
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    run = fit(epochs=1, track=False)
    run.extra["seconds"] = 90.0
    path = st.spool(store[0], {"experiment": request.node.name, "run_id": None, "name": "old", "params": {},
                               "tags": {}, "status": "FINISHED", "record": run.to_dict()})
    written = 1_700_000_000  # the file's time, seconds
    os.utime(path, (written, written))
    (rid,) = tb.sync(store[0])
    info = mlflow.MlflowClient(store[0]).get_run(rid).info
    assert (info.start_time, info.end_time) == (ms(written) - 90_000, ms(written))


# --- probe 84: sync bounded, a Ctrl-C during sync --------------------------------------------------------------------

def spool_runs(uri: str, experiment: str, n: int) -> list:
    "`n` spool files of one finished run for the store at `uri`."
    from trainbook import store as st
    run = fit(epochs=1, track=False)
    return [st.spool(uri, {"experiment": experiment, "run_id": None, "name": f"r{i}", "params": {}, "tags": {},
                           "status": "FINISHED", "record": run.to_dict()}) for i in range(n)]


def test_a_sync_stops_at_the_first_run_the_store_does_not_answer_for_and_keeps_the_rest(tracker, tmp_path, monkeypatch):
    "Probe 84, f1: each spooled run waited out MLflow's retries (~30 s a run against a mute server)."
    import requests
    from trainbook import store as st
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    spool_runs(tracker.uri, tracker.experiment, 3)
    real, tried = tracker.deliver, []

    def timed_out(entry):
        tried.append(entry["name"])
        raise requests.exceptions.ReadTimeout("read timed out")
    monkeypatch.setattr(tracker, "deliver", timed_out)
    with pytest.warns(UserWarning, match=r"3 spooled run\(s\) stay spooled .*call tb.sync\(\) again"):
        assert tracker.sync() == []
    assert len(tried) == 1  # gave up after the first timeout, not one timeout a run
    assert len(st.spooled(tracker.uri)) == 3
    monkeypatch.setattr(tracker, "deliver", real)
    assert len(tb.sync()) == 3 and st.spooled(tracker.uri) == []  # the next sync delivers them all


def test_a_ctrl_c_during_sync_puts_the_run_back_for_this_sessions_next_sync(tracker, tmp_path, monkeypatch):
    "Probe 84, f4: the run being delivered stayed claimed by the live kernel: every later sync skipped it."
    from trainbook import store as st
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    (path,) = spool_runs(tracker.uri, tracker.experiment, 1)
    real = tracker.deliver

    def ctrl_c(entry): raise KeyboardInterrupt
    monkeypatch.setattr(tracker, "deliver", ctrl_c)
    with pytest.raises(KeyboardInterrupt): tracker.sync()
    assert st.spooled(tracker.uri) == [path]  # under its own name again, not held by this (live) process
    monkeypatch.setattr(tracker, "deliver", real)
    (rid,) = tb.sync()
    assert st.spooled(tracker.uri) == [] and list(tb.runs(tracker.experiment, uri=tracker.uri).run_id) == [rid]


def test_an_experiment_the_store_gives_no_id_is_refused_naming_uri(store, monkeypatch):
    "Probe 84, f2: a store answering without an id (experiment '') took runs that were recorded nowhere."
    monkeypatch.setattr(tracking, "_experiment_id", lambda client, name, uri: "")
    with pytest.raises(ConnectionError, match=rf"uri '{store[0]}': the store gave experiment 'x' no id"):
        tb.track(store[0], experiment="x")
    assert tb.active_tracker() is None
