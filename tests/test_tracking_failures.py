"""Tracking when things go wrong (probe 100): a run in neither store nor spool said so, one spelling of a server, log_run
bounded and spooled, deleted MLflow runs, a refused upload, a new store made by two processes, the loaders' batch size,
and a tracker thread that imports nothing."""
import os, re, subprocess, sys, textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import store as st, tracking

mlflow = pytest.importorskip("mlflow")


def fit(epochs=2, batch_size=16, **kw):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(96, 4, generator=g)
    y = (X[:, 0] > 0).long()
    dl, dv = tb.TensorLoader(X[:64], y[:64], batch_size=batch_size), tb.TensorLoader(X[64:], y[64:], batch_size=32)
    return tb.fit(nn.Linear(4, 2), dl, dv, loss_fn=nn.CrossEntropyLoss(), live=False,
                  config=tb.TrainConfig(epochs=epochs, lr=0.05, device="cpu"), **kw)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    "One SQLite store for the module (MLflow's tables cost seconds); each test has its own experiment."
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder}/mlruns.db"
    tb.track(uri)
    tb.untrack()
    yield uri
    tb.untrack()


@pytest.fixture
def tracker(store, request, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    t = tb.track(store, experiment=request.node.name, flush_every=0)
    yield t
    tb.untrack()


def test_a_run_neither_the_store_nor_the_spool_takes_is_said_not_recorded_and_log_run_records_it(
        store, request, tmp_path, monkeypatch):
    "Finding 1: only 'start failed' and 'after_fit failed ... NotADirectoryError' were said; the run was lost silently."
    spool = tmp_path / "spool"
    spool.write_text("a file where the spool folder goes")  # a full or read-only disk alike
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(spool))
    t = tb.track(store, experiment=request.node.name, flush_every=0)
    try:
        real = t.client.create_run
        t.client.create_run = lambda *a, **k: 1 / 0  # the store takes no writes
        with pytest.warns(UserWarning) as said:
            run = fit()
            t.wait()
        text = " | ".join(str(w.message) for w in said)
        assert "NOT recorded" in text and str(spool) in text and "tb.log_run(run)" in text, text
        assert "switched off" not in text  # the tracker's callback did not fail
        assert run.extra.get("mlflow_run_id") is None
        t.client.create_run = real  # the store is back: the run the user still holds is recorded
        rid = tb.log_run(run)
        assert mlflow.MlflowClient(store).get_run(rid).info.status == "FINISHED"
    finally: tb.untrack()


def test_a_server_has_one_spelling_and_one_spool(tmp_path, monkeypatch):
    "Finding 2: a run spooled under http://host:port/ was never delivered by track()/sync() of http://host:port."
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    assert tb.tracking.tracking_uri("http://LocalHost:5000/") == "http://localhost:5000"
    assert tb.tracking.tracking_uri("https://u:PassWord@Host/mlflow/") == "https://u:PassWord@host/mlflow"
    path = st.spool("http://127.0.0.1:5000/", {"name": "r", "params": {}, "tags": {}, "status": "FINISHED",
                                               "record": {}})
    assert st.spooled("http://127.0.0.1:5000") == [path]  # what track() and sync() of either spelling deliver


def test_a_default_port_is_no_second_spelling(tmp_path, monkeypatch):
    "Probe 109, finding 4: a run spooled under http://host:80 was never delivered by tb.sync('http://host')."
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    assert tb.tracking.tracking_uri("http://127.0.0.1:80/") == "http://127.0.0.1"
    assert tb.tracking.tracking_uri("HTTPS://u:pw@Host:443/mlflow") == "https://u:pw@host/mlflow"
    assert tb.tracking.tracking_uri("http://[::1]:80") == "http://[::1]"
    assert tb.tracking.tracking_uri("http://host:443") == "http://host:443"  # not http's default
    path = st.spool("http://127.0.0.1:80", {"name": "r", "params": {}, "tags": {}, "status": "FINISHED", "record": {}})
    assert st.spooled("http://127.0.0.1") == [path]


@pytest.mark.parametrize("uri, why", [("http://127.0.0.1:notaport", "Port could not be cast"),
                                      ("http://127.0.0.1:99999", "Port out of range"),
                                      ("http://[::1:5000", "Invalid IPv6 URL"), ("http://", "names no server")])
def test_a_server_url_with_a_broken_host_or_port_is_refused_naming_uri(uri, why):
    "Probe 109, finding 5: http.client's bare InvalidURL, urllib's bare 'Invalid IPv6 URL', 'did you mean http://?'."
    with pytest.raises(ValueError, match=rf"uri '{re.escape(uri)}'.*{why}.*pass http://host:port"):
        tb.track(uri)


@pytest.mark.parametrize("uri", ["http:/127.0.0.1:5000", "http:///127.0.0.1:5000"])
def test_a_server_url_short_of_its_slashes_is_refused_at_once_naming_uri(uri):
    "Finding 6: MLflow's raw InvalidUrlException came after seconds."
    with pytest.raises(ValueError, match=r"uri 'http:/+127.0.0.1:5000'.*did you mean 'http://127.0.0.1:5000'"):
        tb.track(uri)


def test_log_run_to_a_store_that_does_not_answer_spools_the_run_and_names_the_uri(tracker):
    "Finding 3: MLflow's raw 'Max retries exceeded' after 2.4 s (32 s hung), and nothing spooled."
    import requests
    run = fit(track=False)

    def lost(*a, **k): raise requests.exceptions.ConnectionError("Max retries exceeded (connection refused)")
    tracker.client.search_runs = lost  # the server is gone
    try:
        with pytest.raises(ConnectionError, match=f"{tracker.uri}.*kept in .*tb.sync") as err:
            tb.log_run(run)
    finally: del tracker.client.search_runs  # the server is back
    assert "Max retries" not in str(err.value)
    assert len(st.spooled(tracker.uri)) == 1
    [rid] = tracker.sync()
    assert run.extra["mlflow_run_id"] == rid  # the Run the user holds learns its id
    assert tracker.client.get_run(rid).info.status == "FINISHED"


def test_log_run_of_a_run_deleted_in_mlflow_records_it_anew(tracker):
    "Finding 4: 'recorded already' and the deleted run's id, which tb.runs() does not list."
    run = fit()
    tracker.wait()
    old = run.extra["mlflow_run_id"]
    tracker.client.delete_run(old)  # as the MLflow UI does
    with pytest.warns(UserWarning, match=f"{old} was deleted.*recorded anew.*restore_run"):
        rid = tb.log_run(run)
    assert rid != old and tracker.client.get_run(rid).info.lifecycle_stage == "active"
    assert list(tb.runs().run_id) == [rid]
    with pytest.warns(UserWarning, match="recorded already"): assert tb.log_run(run) == rid  # once


def test_a_spooled_run_whose_mlflow_run_was_deleted_is_delivered_as_a_new_run_said_once(tracker):
    "Finding 5: every sync said 'could not be delivered yet' and blamed refused metric names; the file stayed."
    run = fit(track=False)
    old = tracker.client.create_run(tracker.experiment_id).info.run_id  # created before the server died
    tracker.client.delete_run(old)  # then deleted in the UI
    entry = {"run_id": old, "name": "half", "params": {}, "tags": {tracking.RUN_KEY: "k-half"},
             "status": "FINISHED", "record": run.to_dict()}
    path = st.spool(tracker.uri, entry)
    with pytest.warns(UserWarning, match=f"'half': its MLflow run {old} was deleted.*as a new run") as said:
        [rid] = tracker.sync()
    assert not any("refused" in str(w.message) for w in said)
    assert rid != old and not path.exists() and tracker.sync() == []
    assert tracker.client.get_run(rid).info.status == "FINISHED"


def test_a_refused_upload_is_said_by_load_run_and_log_run_uploads_it_later(tracker, monkeypatch):
    "Finding 8: load_run said the run 'ended before its record was uploaded'; log_run said 'recorded already'."
    real = tracking.artifact_repository

    class Refusing:
        def log_artifacts(self, folder): raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(tracking, "artifact_repository", lambda *a: Refusing())
    with pytest.warns(UserWarning, match="could not be uploaded"):
        run = fit()
        tracker.wait()
    rid = run.extra["mlflow_run_id"]
    with pytest.raises(ValueError, match="location refused it when the run ended.*tb.log_run") as err:
        tb.load_run(rid)
    assert "before its record was uploaded" not in str(err.value)
    monkeypatch.setattr(tracking, "artifact_repository", real)  # the location takes files again
    with pytest.warns(UserWarning, match="uploaded now"): assert tb.log_run(run) == rid
    assert tb.load_run(rid).records.rows() == run.records.rows()
    assert tracking.UPLOAD_REFUSED not in tracker.client.get_run(rid).data.tags


def test_a_new_store_that_cannot_be_made_is_an_error_naming_uri(tmp_path, monkeypatch):
    "Finding 7 (its message): SQLAlchemy's or alembic's raw error when two processes made one new store."
    from sqlalchemy.exc import OperationalError

    def racing(*a, **k): raise OperationalError("ALTER TABLE", {}, Exception("duplicate column name: step"))
    monkeypatch.setattr(tracking, "_experiment_id", racing)
    uri = f"sqlite:///{tmp_path}/mlruns.db"
    with pytest.raises(RuntimeError, match=r"uri .*mlruns.db.*another process.*call tb.track\(\) again"):
        tb.track(uri)


CHILD = """
import os, sys, tempfile
os.environ["TRAINBOOK_SPOOL"] = tempfile.mkdtemp()
import trainbook as tb
try: tb.track(sys.argv[1], experiment="same"); tb.untrack(); print("ok")
except Exception as e: print("FAIL", type(e).__name__, str(e).splitlines()[0][:200])
"""


def test_two_processes_making_one_new_store_both_track_it(tmp_path):
    "Finding 7: one of two processes died with 'duplicate column name: step' (4 tries of 4 in the probe)."
    uri = f"sqlite:///{tmp_path}/mlruns.db"
    ps = [subprocess.Popen([sys.executable, "-c", CHILD, uri], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].strip().splitlines()[-1:] for p in ps]
    assert outs == [["ok"], ["ok"]], outs


def test_the_batch_size_recorded_is_the_loaders(tracker):
    "Finding 9: a run on batches of 16 was recorded with batch_size=64, the config's default."
    run = fit(batch_size=16)
    tracker.wait()
    assert tracker.client.get_run(run.extra["mlflow_run_id"]).data.params["batch_size"] == "16"
    assert tracking.params_of(run)["batch_size"] == "16"
    unseen = fit(batch_size=16, track=False)  # a run no tracker saw: no batch size it cannot know
    assert "batch_size" not in tracking.params_of(unseen)


def test_the_tracker_thread_imports_nothing(tmp_path):
    "Seen once: 'module trainbook.data has no attribute TensorLoader': a module half imported by two threads at once."
    code = textwrap.dedent(f"""
        import os, sys, threading
        os.environ["TRAINBOOK_SPOOL"] = {str(tmp_path / "spool")!r}
        late = []
        def hook(event, args):  # an import the tracker's thread makes itself (a module not loaded yet)
            if event == "import" and args[0] not in sys.modules and threading.current_thread().name.startswith("trainbook-track"):
                late.append(args[0])
        sys.addaudithook(hook)
        import torch
        from torch import nn
        import trainbook as tb
        t = tb.track({str(tmp_path)!r}, experiment="imports", flush_every=0, tensorboard={str(tmp_path / "tb")!r})
        X = torch.randn(96, 4); y = (X[:, 0] > 0).long()
        run = tb.fit(nn.Linear(4, 2), tb.TensorLoader(X[:64], y[:64], batch_size=16),
                     tb.TensorLoader(X[64:], y[64:], batch_size=32), loss_fn=nn.CrossEntropyLoss(), live=False,
                     config=tb.TrainConfig(epochs=2, device="cpu"))
        t.wait(); tb.untrack()
        assert run.extra["mlflow_run_id"]
        print("LATE", sorted(set(late)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "LATE []" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


def test_a_process_stuck_making_a_new_store_is_waited_for_a_bounded_time(tmp_path, monkeypatch):
    "Another process holding the new store's lock (stuck making its tables) is not waited for without end."
    import fcntl
    from trainbook import store
    monkeypatch.setattr(store, "MAKING_WAIT", 0.2)
    held = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # as the other process holds it (flock locks are per open file)
    try:
        with pytest.raises(TimeoutError, match="making this new store's tables"):
            with store.making_store(f"sqlite:///{tmp_path / 'mlflow.db'}"): pass
    finally: os.close(held)


def test_log_run_completes_a_run_whose_end_never_reached_the_store(tracker):
    "Probe 109, finding 1: log_run said 'recorded already' of a half-written run, left RUNNING with half its points."
    tracker._finish = lambda *a: None  # the run's end never reaches the store (a server that hung, then came back)
    try:
        run = fit(epochs=3)
        tracker.wait()
    finally: del tracker._finish
    rid = run.extra["mlflow_run_id"]
    assert tracker.client.get_run(rid).info.status == "RUNNING"
    with pytest.warns(UserWarning, match=f"{rid} .* left unfinished.*written now"): assert tb.log_run(run) == rid
    got = tracker.client.get_run(rid)
    steps = [m.step for m in tracker.client.get_metric_history(rid, "valid_loss")]
    ref = [s for (s, e, split, n, v) in run.records.rows() if split == "valid" and n == "loss"]
    assert (got.info.status, got.data.tags.get("stopped"), steps) == ("FINISHED", "completed", ref)
    assert "duration_s" in got.data.metrics and list(tb.runs().run_id) == [rid]  # its summary, and no copy
    with pytest.warns(UserWarning, match="recorded already"): assert tb.log_run(run) == rid  # once


def test_log_run_to_a_server_that_does_not_answer_spools_the_run_without_a_tracker(tmp_path, monkeypatch):
    "Probe 109, finding 2: with no tb.track() of that store, log_run raised 'no server answers' and spooled nothing."
    import socket
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    tb.untrack()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once closed
    run = fit(track=False)
    with pytest.raises(ConnectionError, match=rf"uri '{uri}': no MLflow tracking server answers.*kept in .*tb.sync"):
        tb.log_run(run, uri=uri, experiment="later")
    [path] = st.spooled(uri)  # what tb.sync(uri) delivers once the server is up
    entry = __import__("json").loads(path.read_text())
    assert entry["experiment"] == "later" and entry["tags"][tracking.RUN_KEY] == run.extra["mlflow_run_key"]
