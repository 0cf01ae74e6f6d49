"""Tracking under faults (trainbook.store and the tracker): a server that dies mid-run, a URI nothing listens on,
Ctrl-C while a run's end waits, a tracked process SIGKILLed, bad param names, track=False/True. A real MLflow server
is started once for the module on 127.0.0.1 and stopped by its pid; the test reaches it through a TCP proxy it can
cut and restore, which is what a client sees when a server goes away and comes back."""
import json, os, re, shutil, signal, socket, subprocess, sys, textwrap, threading, time
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import store as st

from helpers import blobs, mlp

mlflow = pytest.importorskip("mlflow")
from mlflow.entities import ViewType  # noqa: E402
LOSS = nn.functional.cross_entropy


def fit(epochs=3, **kw):
    X, y = blobs(192)
    cfg = kw.pop("config", None) or tb.TrainConfig(epochs=epochs, lr=1e-2, device="cpu")
    return tb.fit(mlp(), tb.TensorLoader(X[:128], y[:128], batch_size=32), tb.TensorLoader(X[128:], y[128:]),
                  loss_fn=LOSS, config=cfg, live=False, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    "A TCP proxy on 127.0.0.1 to a target port; `cut()` drops it (connections refused), `restore()` listens again."
    def __init__(self, target: int):
        self.target, self.port, self.conns, self.sock = target, free_port(), [], None
        self.restore()

    def restore(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(64)
        threading.Thread(target=self._accept, args=(self.sock,), daemon=True).start()

    def _accept(self, sock):
        while True:
            try: client, _ = sock.accept()
            except OSError: return  # cut
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while data := a.recv(65536): b.sendall(data)
        except OSError: pass
        finally:
            for s in (a, b):
                try: s.shutdown(socket.SHUT_RDWR)
                except OSError: pass

    def cut(self):
        try: self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: a closed fd alone may keep listening
        except OSError: pass
        self.sock.close()
        for c in self.conns:
            try: c.shutdown(socket.SHUT_RDWR)
            except OSError: pass
            c.close()
        self.conns = []


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    "One MLflow tracking server for the module, on 127.0.0.1, stopped by its pid at the end."
    folder = tmp_path_factory.mktemp("server")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--backend-store-uri", f"sqlite:///{folder}/m.db", "--workers", "1",
                             # artifacts served by the server (mlflow-artifacts:/ URIs), as a team's server does
                             "--artifacts-destination", str(folder / "artifacts")],
                            stdout=subprocess.DEVNULL, stderr=open(folder / "log.txt", "w"), start_new_session=True)
    try:
        for _ in range(240):  # it answers /health when it is up (no fixed sleep decides anything)
            if proc.poll() is not None: pytest.fail(f"mlflow server exited: {(folder / 'log.txt').read_text()[-2000:]}")
            try:
                st.check_server(f"http://127.0.0.1:{port}", timeout=1)
                break
            except ConnectionError: time.sleep(0.5)
        else: pytest.fail("mlflow server did not answer within 120 s")
        yield port
    finally:  # killed, not asked: its graceful stop took ~11 s of the suite, and nothing of it is kept
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def sqlite_uri(tmp_path_factory):
    "One SQLite store for the module (MLflow's tables cost seconds to create); each test has its own experiment."
    uri = f"sqlite:///{tmp_path_factory.mktemp('store')}/m.db"
    tb.track(uri, experiment="setup")
    tb.untrack()
    return uri


@pytest.fixture(autouse=True)
def spool_here(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINBOOK_SPOOL", str(tmp_path / "spool"))
    yield
    tb.untrack()


def test_a_server_gone_mid_fit_costs_seconds_and_the_run_arrives_after_sync(server, capsys):
    proxy = Proxy(server)
    uri = f"http://127.0.0.1:{proxy.port}"
    tb.track(uri, experiment="server-gone", flush_every=0, wait=2)

    class CutAfterFirstEpoch(tb.Callback):
        def after_epoch(self, state):
            if state.epoch == 0: proxy.cut()
    t0 = time.monotonic()
    with pytest.warns(UserWarning, match="the run is kept in"):
        run = fit(epochs=4, callbacks=[CutAfterFirstEpoch()])
    took = time.monotonic() - t0
    assert run.stopped == "completed"
    # the bound is wait=2 s after training; the margin covers a slow machine, not minutes of MLflow retries
    assert took < 60, took
    assert len(st.spooled(uri)) == 1
    tb.untrack()
    proxy.restore()
    capsys.readouterr()
    delivered = tb.sync(uri)
    assert len(delivered) == 1 and st.spooled(uri) == []
    assert "View run" not in capsys.readouterr().out  # MLflow's links, a line a run delivered (probe 14, f10)
    client = mlflow.MlflowClient(uri)
    got = client.get_run(delivered[0])
    assert got.info.status == "FINISHED" and got.data.tags["stopped"] == "completed"
    steps = [m.step for m in client.get_metric_history(delivered[0], "valid_loss")]
    assert sorted(set(steps)) == sorted(run.records.series("loss", "valid").index.tolist())  # every epoch, once
    assert len(steps) == len(set(steps))
    assert tb.load_run(delivered[0], uri=uri).records.rows() == run.records.rows()


def test_a_uri_nothing_listens_on_fails_fast_and_says_what_was_tried():
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(ConnectionError,
                       match=f"uri 'http://127.0.0.1:{port}': no MLflow tracking server answers there"):
        tb.track(f"http://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 30  # seconds, not MLflow's four minutes of retries
    assert tb.active_tracker() is None


def test_ctrl_c_while_a_run_end_waits_returns_the_run(sqlite_uri):
    tracker = tb.track(sqlite_uri, experiment="ctrl-c", wait=60)
    gate, main = threading.Event(), threading.main_thread().ident
    real = tracker.client.set_terminated  # the run's end only (log_batch also writes params as the run opens)

    pressed = []

    def stuck(*a, **k):
        "A store that stopped answering at the run's end; the user presses Ctrl-C (a real SIGINT) once meanwhile."
        if not pressed:  # one press: a second call (the spool's own write) must not interrupt whatever runs next
            pressed.append(True)
            signal.pthread_kill(main, signal.SIGINT)
            gate.wait(30)
        return real(*a, **k)
    tracker.client.set_terminated = stuck
    try:
        with pytest.warns(UserWarning, match="Ctrl-C; the run is kept in"):
            run = fit(epochs=1)
    finally: gate.set()
    assert isinstance(run, tb.Run) and run.stopped == "completed"
    assert len(st.spooled(tracker.uri)) == 1


def test_a_sigkilled_tracked_run_is_killed_in_runs_and_loads_to_its_last_epoch(tmp_path, sqlite_uri):
    uri = sqlite_uri
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import torch, trainbook as tb
        from helpers import blobs, mlp
        tracker = tb.track({uri!r}, experiment="killed", flush_every=0)
        class Die(tb.Callback):
            def after_epoch(self, state):
                if state.epoch == 1:
                    tracker.wait()  # its epochs are in the store, its best and findings not (its end writes them)
                    os.kill(os.getpid(), signal.SIGKILL)
        X, y = blobs(192)
        tb.fit(mlp(), tb.TensorLoader(X[:128], y[:128], batch_size=32), tb.TensorLoader(X[128:], y[128:]),
               loss_fn=torch.nn.functional.cross_entropy, live=False, callbacks=[Die()],
               config=tb.TrainConfig(epochs=5, device="cpu", checkpoint_dir={str(tmp_path / "run")!r}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    table = tb.runs("killed", uri=uri)
    assert list(table.status) == ["KILLED"]
    run = tb.load_run(table.run_id[0], uri=uri)
    assert run.stopped == "killed" and [f.kind for f in run.findings][-1:] == ["killed"]
    assert len(run.records.series("loss", "valid")) == 2  # epochs 0 and 1: up to its last finished epoch
    # probe 59, f7: its row says what its record says (its end, which writes these tags, never came)
    row = table.iloc[0]
    assert mlflow.MlflowClient(uri).get_run(row.run_id).data.metrics["valid_loss"] > 0  # the store has its epochs
    assert (row.stopped, row.monitor, row.best) == ("killed", run.monitor_followed(), run.best)
    assert row.findings.split(", ")[0] == "killed:error" and row.valid_loss == run.metrics().valid_loss.iloc[-1]
    cmp = tb.compare_runs(table, uri=uri).table.iloc[0]  # its table as well
    assert (cmp.best, cmp.stopped, cmp.findings) == (row.best, "killed", row.findings)
    from_folder = tb.Run.load(tmp_path / "run")  # its writer is gone: killed, and how to go on
    assert from_folder.records.rows() == run.records.rows() and from_folder.stopped == "killed"
    assert f"resume={str(tmp_path / 'run' / 'last.pt')!r}" in from_folder.findings[-1].advice
    shutil.copytree(tmp_path / "run", tmp_path / "copy")  # a copy's advice names the copy's last.pt
    assert f"resume={str(tmp_path / 'copy' / 'last.pt')!r}" in tb.Run.load(tmp_path / "copy").findings[-1].advice
    # resumed in its folder (probe 14, f1): the folder's run.json is now the resumed run's, which load_run gave as
    # the killed run's record ("completed", 48 steps); the killed run's own record is gone, and that is said
    tb.track(uri, experiment="killed")
    try:
        X, y = blobs(192)
        resumed = tb.fit(mlp(), tb.TensorLoader(X[:128], y[:128], batch_size=32), tb.TensorLoader(X[128:], y[128:]),
                         loss_fn=torch.nn.functional.cross_entropy, live=False, resume=tmp_path / "run",
                         config=tb.TrainConfig(epochs=5, device="cpu", checkpoint_dir=tmp_path / "run"))
    finally: tb.untrack()
    assert resumed.stopped == "completed"
    with pytest.raises(ValueError, match=r"now holds another run's record \(stopped='completed'"):
        tb.load_run(table.run_id[0], uri=uri)
    assert tb.load_run(resumed.extra["mlflow_run_id"], uri=uri).stopped == "completed"


def test_a_run_sigkilled_before_its_first_write_has_its_params_a_sane_end_and_its_curve(tmp_path, sqlite_uri):
    uri = sqlite_uri
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import torch, trainbook as tb
        from helpers import blobs, mlp
        tracker = tb.track({uri!r}, experiment="early", flush_every=3600)  # no metric write before the kill
        class Die(tb.Callback):
            def after_step(self, state):
                if state.step == 5:  # the first step of epoch 1: epoch 0 is in the run folder only
                    tracker.wait()  # the store has opened the run (nothing else was handed over)
                    os.kill(os.getpid(), signal.SIGKILL)
        X, y = blobs(192)
        tb.fit(mlp(), tb.TensorLoader(X[:128], y[:128], batch_size=32), tb.TensorLoader(X[128:], y[128:]),
               loss_fn=torch.nn.functional.cross_entropy, live=False, callbacks=[Die()],
               config=tb.TrainConfig(epochs=5, lr=0.01, device="cpu",
                                     checkpoint_dir={str(tmp_path / "run")!r}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    table = tb.runs("early", uri=uri)  # marks it KILLED
    killed = table.run_id[0]
    got = mlflow.MlflowClient(uri).get_run(killed)
    assert got.info.status == "KILLED" and not got.data.metrics  # killed before any metric reached the store
    assert got.data.params["lr"] == "0.01" and got.data.params["epochs"] == "5"  # written when it was opened
    assert got.info.end_time >= got.info.start_time and table.duration_s[0] >= 0
    run = tb.load_run(killed, uri=uri)
    valid = list(run.records.series("loss", "valid").values)
    assert len(valid) == 1 and table.best[0] == run.best  # epoch 0, from its folder, as load_run reads it
    tb.track(uri, experiment="early")
    fit(epochs=1, config=tb.TrainConfig(epochs=1, lr=0.05, device="cpu"))
    cmp = tb.compare_runs(tb.runs("early", uri=uri), uri=uri)
    curve = next(t for t in cmp.figure.data if "lr=0.01" in t.name)  # named by its param, not '—'
    assert list(curve.y) == valid
    row = cmp.table.loc[got.info.run_name]
    assert row["lr"] == "0.01" and row["stopped"] == "killed" and row["best"] == run.best
    shutil.rmtree(tmp_path / "run")  # its folder gone too: the message says what is left, not "trainbook's?"
    with pytest.raises(ValueError, match=r"has no run.json artifact: it ended \(KILLED\) before its record was "
                                         r"uploaded, and kept no run.json in .*: the store holds its params"):
        tb.load_run(killed, uri=uri)


def test_bad_param_names_cost_nothing_else(sqlite_uri):
    uri = sqlite_uri
    tb.track(uri, experiment="names")
    odd = {"a@b!#": 1, "k" * 300: 2, "fine": 3}
    with tb.tracking.run_params(**odd):
        run = fit(epochs=1)
    got = mlflow.MlflowClient(uri).get_run(run.extra["mlflow_run_id"]).data
    assert got.params["fine"] == "3" and got.params["lr"] == "0.01"  # the config's params are all there
    assert got.params["a_b__"] == "1" and sum(1 for k in got.params if k.startswith("kkkk")) == 1
    renamed = json.loads(got.tags["trainbook.renamed_params"])
    assert set(renamed.values()) == {"a@b!#", "k" * 300}
    assert "valid_loss" in got.metrics  # the first metrics were written too


def count_runs(uri):
    "Every run in the store, whatever its lifecycle stage (deleted ones too) or status."
    client = mlflow.MlflowClient(uri)
    return len(client.search_runs([e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)],
                                  run_view_type=ViewType.ALL, max_results=50000))


def test_track_false_leaves_the_store_unchanged_and_track_true_needs_a_store(sqlite_uri):
    uri = sqlite_uri
    tb.track(uri, experiment="opt-out")
    fit(epochs=1)
    before = count_runs(uri)
    fit(epochs=1, track=False)
    assert count_runs(uri) == before  # no run at all: not a deleted one, not a RUNNING one
    tb.untrack()
    steps = []

    class Steps(tb.Callback):
        def after_step(self, state): steps.append(state.step)
    with pytest.raises(ValueError, match=r"call tb.track\(\) first"):
        fit(epochs=1, track=True, callbacks=[Steps()])
    assert steps == []  # refused before any step


def test_the_experiment_is_filed_as_model_training(sqlite_uri):
    uri = sqlite_uri
    tracker = tb.track(uri, experiment="kind")
    exp = tracker.client.get_experiment(tracker.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


def test_run_load_equals_the_fit_run_and_load_run(tmp_path, sqlite_uri):
    uri = sqlite_uri
    tb.track(uri, experiment="same")
    run = fit(epochs=3, config=tb.TrainConfig(epochs=3, lr=1e-2, device="cpu", checkpoint_dir=str(tmp_path / "r")))
    from_folder, from_store = tb.Run.load(run.run_dir), tb.load_run(run.extra["mlflow_run_id"], uri=uri)
    for other in (from_folder, from_store):
        assert other.records.rows() == run.records.rows()
        assert [(f.kind, f.severity, f.message, f.data) for f in other.findings] == \
               [(f.kind, f.severity, f.message, f.data) for f in run.findings]
        assert other.config == run.config and other.stopped == run.stopped and other.step == run.step


def test_a_hung_server_is_a_connection_error_naming_it(monkeypatch):
    "A server that accepts connections and never answers (SIGSTOPped, overloaded): an error naming it."
    monkeypatch.setattr("trainbook.experiments.READ_WAIT", 1.0)  # the bound is what is tested, not its 5 s
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)  # the kernel accepts; nothing ever reads or answers
        uri = f"http://127.0.0.1:{hung.getsockname()[1]}"
        with pytest.raises(ConnectionError, match=f"uri '{uri}': no MLflow tracking server answers there"):
            tb.runs(uri=uri)
        with pytest.raises(ConnectionError, match=uri): tb.load_run("0" * 32, uri=uri)


def test_read_limits_bound_mlflow_requests_and_keep_your_own(monkeypatch):
    for name in st.READ_LIMITS: monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(st, "_BOUND", {})
    st.bound_http()
    name = "MLFLOW_HTTP_REQUEST_TIMEOUT"
    with st.read_limits(): assert os.environ[name] == st.READ_LIMITS[name]
    assert os.environ[name] == st.HTTP_LIMITS[name]  # restored
    monkeypatch.setenv(name, "42")  # yours
    with st.read_limits(): assert os.environ[name] == "42"


def test_two_projects_default_stores_have_two_spools(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    st.spool("sqlite:///mlruns.db", {"name": "r", "tags": {}, "record": {}})
    assert len(st.spooled("sqlite:///mlruns.db")) == 1
    assert st.spooled(f"sqlite:///{tmp_path / 'a' / 'mlruns.db'}") == st.spooled("sqlite:///mlruns.db")
    monkeypatch.chdir(tmp_path / "b")
    assert st.spooled("sqlite:///mlruns.db") == []  # project b's store is another store


def test_a_folder_is_the_store_in_it_and_a_new_db_path_is_the_file(tmp_path):
    assert st.resolve_uri(str(tmp_path / "new")) == f"sqlite:///{tmp_path / 'new' / 'mlruns.db'}"
    assert st.resolve_uri(str(tmp_path / "runs.db")) == f"sqlite:///{tmp_path / 'runs.db'}"
    with pytest.raises(ValueError, match="uri .* is a folder"): st.resolve_uri(f"sqlite:///{tmp_path}")
    with pytest.raises(ValueError, match="uri is blank"): st.resolve_uri("   ")
    with pytest.raises(ValueError, match="uri is blank"): tb.track("")  # probe 14, f8: it was the default store
    assert tb.active_tracker() is None


def test_a_relative_file_store_uri_is_made_absolute_where_it_is_given(tmp_path, monkeypatch):
    "MLflow keeps `file:./mlruns` relative: after os.chdir the tracker's store was another folder."
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind this switch
    assert st.resolve_uri("file:./mlruns") == (tmp_path / "mlruns").as_uri()
    assert st.resolve_uri("file:mlruns") == (tmp_path / "mlruns").as_uri()
    assert st.resolve_uri(f"file://{tmp_path}/x") == f"file://{tmp_path}/x"  # absolute: as it is


# --- the store trainbook opened, not MLflow's global one; bounded waits; refusals at the door -----------------------

def test_load_run_reads_the_artifact_through_the_server_it_was_given(server, tmp_path, monkeypatch):
    "Seen: load_run read run.json through MLflow's global tracking URI, so a server's mlflow-artifacts:/ was 'missing'."
    monkeypatch.chdir(tmp_path)  # MLflow's global default (sqlite:///mlflow.db here) is not the server
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = f"http://127.0.0.1:{server}"
    tb.track(uri, experiment="load-from-server")
    run = fit(epochs=2)
    rid = run.extra["mlflow_run_id"]
    assert mlflow.MlflowClient(uri).get_run(rid).info.artifact_uri.startswith("mlflow-artifacts:")
    assert tb.load_run(rid).records.rows() == run.records.rows()  # the active tracker's server
    tb.untrack()
    assert tb.load_run(rid, uri=uri).records.rows() == run.records.rows()  # a server named by uri=


@pytest.fixture
def read_only_folder(tmp_path):
    "A folder nothing can be written in: a read-only tmpfs for root (who ignores permission bits), else mode 555."
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try: yield folder
        finally: folder.chmod(0o755)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0: pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode().strip()}")
    try: yield folder
    finally: subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_store_in_a_read_only_folder_is_refused_at_once_naming_the_argument(read_only_folder):
    "Seen: track() sat in MLflow's ~100 s of engine retries, then raised sqlite's 'unable to open database file'."
    db, below = read_only_folder / "mlruns.db", f"sqlite:///{read_only_folder}/sub/m.db"
    unwritable = rf"{re.escape(str(read_only_folder))}.* is not writable.*pass a store in a folder you can write"
    # the one rule, in store: before any engine is made (the old code passed this in silence)
    with pytest.raises(ValueError, match=rf"storage '{re.escape(str(db))}': .*" + unwritable):
        st.make_sqlite_folder(f"sqlite:///{db}", "storage", str(db))
    with pytest.raises(ValueError, match=rf"uri '{re.escape(str(db))}': .*" + unwritable):
        tb.track(str(db))
    with pytest.raises(ValueError, match=rf"uri '{re.escape(below)}': .*" + unwritable):
        tb.track(below)  # its folder would be made there
    assert tb.active_tracker() is None
    pytest.importorskip("optuna")
    from trainbook.study import make_storage
    with pytest.raises(ValueError, match=rf"storage '{re.escape(str(db))}': .*" + unwritable):
        make_storage(str(db))  # search's storage: the same rule


@pytest.mark.parametrize("given, meant", [
    ("sqlite:/ABS/x.db", "sqlite:////ABS/x.db"),  # one slash: an absolute path was meant
    ("sqlite://ABS/x.db", "sqlite:////ABS/x.db"),  # two: SQLAlchemy reads a host, then x.db here
    ("sqlite:x.db", "sqlite:///x.db"),  # none: a relative path
])
def test_a_sqlite_uri_with_too_few_slashes_is_refused_with_the_form_meant(tmp_path, monkeypatch, given, meant):
    "Seen: search() wrote its study to ./sqlite:/tmp/x.db, track() raised SQLAlchemy's 'Could not parse'."
    monkeypatch.chdir(tmp_path)
    given, meant = (s.replace("/ABS", str(tmp_path)) for s in (given, meant))
    refused = rf"'{re.escape(given)}'.*pass '{re.escape(meant)}'"
    with pytest.raises(ValueError, match="uri " + refused): tb.track(given)
    with pytest.raises(ValueError, match="storage " + refused):
        st.make_sqlite_folder(f"sqlite:///{given}", "storage", given)  # the URL tuning builds of a 'path'
    with pytest.raises(ValueError, match="storage " + refused): st.database_url(given, "storage")
    assert list(tmp_path.iterdir()) == []  # no folder named 'sqlite:' in the working folder
    assert st.sqlite_path(f"sqlite:///{tmp_path}/a.db") == tmp_path / "a.db"
    assert st.sqlite_path("sqlite:///rel.db") == Path("rel.db") and st.sqlite_path("sqlite://") is None
    assert st.database_url("study.db", "storage") == "sqlite:///study.db"


def test_a_server_whose_api_hangs_makes_track_give_up_in_its_read_bound_naming_it(monkeypatch):
    "Seen: /health answered, the API hung: track() blocked 37 s and raised MLflow's 'Max retries exceeded'."
    import http.server, socketserver
    release = threading.Event()

    class HealthOnly(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/health"):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"OK")
                return
            release.wait()  # the API never answers (until the test ends)
        do_POST = do_GET

        def log_message(self, *args): pass
    hung = socketserver.ThreadingTCPServer(("127.0.0.1", 0), HealthOnly)
    hung.daemon_threads = True
    threading.Thread(target=hung.serve_forever, daemon=True).start()
    uri = f"http://127.0.0.1:{hung.server_address[1]}"
    # your own (short) request timeout is kept, so the bound is seconds here; trainbook's retries are what is tested
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "1")
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    try:  # the check's second request, MLflow's API, waits its 5 s: no run of MLflow's retries after it
        with pytest.raises(ConnectionError, match=rf"uri '{uri}': no MLflow tracking server answers there \(GET "
                                                  rf"{uri}/health: HTTP 200.*GET {uri}/api/2.0/mlflow/experiments/"
                                                  r"search\?max_results=1 for 5 s"):
            tb.track(uri)
    finally:
        release.set()
        hung.shutdown()
        hung.server_close()
    assert tb.active_tracker() is None


def test_an_optuna_file_given_as_the_store_and_a_store_given_as_the_storage_are_refused_untouched(tmp_path, sqlite_uri):
    "Probe 14, f4: each tool added its tables to the other's file, then failed with a message naming neither argument."
    import sqlite3
    tables = lambda path: sorted(r[0] for r in sqlite3.connect(path).execute(
        "SELECT name FROM sqlite_master WHERE type='table'"))
    study = tmp_path / "optuna.db"
    tb.search(lambda c: c["x"], {"x": (0.0, 1.0)}, 2, storage=str(study), study_name="keep", live=False)
    store = sqlite_uri[len("sqlite:///"):]
    before = tables(study), tables(store)
    with pytest.raises(ValueError, match=r"uri '.*optuna.db': .* holds an Optuna study \(\d+ tables: .*studies.*not an "
                                         r"MLflow store; it is left as it is"):
        tb.track(str(study))
    with pytest.raises(ValueError, match=r"storage '.*m.db': .* holds an MLflow store .*not an Optuna study"):
        tb.search(lambda c: c["x"], {"x": (0.0, 1.0)}, 2, storage=store, study_name="s", live=False)
    assert (tables(study), tables(store)) == before and tb.active_tracker() is None
    other = tmp_path / "app.db"  # someone else's data: refused too, by what it is not
    with sqlite3.connect(other) as db: db.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(ValueError, match=r"holds another application's data \(1 tables: customers"):
        tb.track(f"sqlite:///{other}")


@pytest.mark.parametrize("given, meant", [("http//127.0.0.1:5000", "http://127.0.0.1:5000"),
                                          ("sqlite//mlruns.db", "sqlite:///mlruns.db")])
def test_a_scheme_missing_its_colon_is_refused_with_the_uri_meant(tmp_path, monkeypatch, given, meant):
    "Probe 29, f4: 'http//127.0.0.1:5000' became a local store in ./http/127.0.0.1:5000/mlruns.db, in silence."
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=rf"uri '{re.escape(given)}'.*did you mean '{re.escape(meant)}'"):
        tb.track(given)
    assert list(tmp_path.iterdir()) == []  # no folder 'http' or 'sqlite' made
    assert st.resolve_uri(f"./{given}").startswith(f"sqlite:///{tmp_path}/")  # the way to name such a folder


def test_an_artifact_location_that_refuses_files_costs_the_files_not_the_status(sqlite_uri, tmp_path):
    "Probe 29, f2: the run stayed RUNNING (then KILLED), spooled for ever, the warning naming no path."
    (tmp_path / "afile").write_text("")  # a location under a file: refused whoever runs the test
    location = str(tmp_path / "afile" / "art")
    mlflow.MlflowClient(sqlite_uri).create_experiment("refused-artifacts", artifact_location=location)
    tb.track(sqlite_uri, experiment="refused-artifacts", flush_every=0, wait=30)
    with pytest.warns(UserWarning) as said:
        run = fit(epochs=2)
    messages = [str(w.message) for w in said if "trainbook tracking" in str(w.message)]
    assert len(messages) == 1 and location in messages[0] and "run.json" in messages[0], messages
    got = mlflow.MlflowClient(sqlite_uri).get_run(run.extra["mlflow_run_id"])
    assert got.info.status == "FINISHED" and got.data.tags["stopped"] == "completed"
    assert "valid_loss" in got.data.metrics and st.spooled(sqlite_uri) == []  # nothing left for sync


def active_runs(uri, experiment):
    client = mlflow.MlflowClient(uri)
    return client.search_runs([client.get_experiment_by_name(experiment).experiment_id])


def retried_create(tracker, until=None):
    """MLflow's create_run through a stalled server: its first try makes a run whose answer is lost, the retry
    (after `until` is set) makes another and is answered; later creates are plain."""
    real, tries = tracker.client.create_run, []

    def create(*a, **k):
        if tries: return real(*a, **k)
        tries.append(real(*a, **k))  # made in the store; the answer never comes back
        if until is not None: assert until.wait(60)
        return real(*a, **k)
    tracker.client.create_run = create


def test_a_retried_create_leaves_one_mlflow_run(sqlite_uri):
    "Probe 29, f1: a lost create answer left a RUNNING copy beside the run (KILLED by the next tb.track)."
    retried_create(tb.track(sqlite_uri, experiment="retried-create", flush_every=0))
    run = fit(epochs=2)
    (only,) = active_runs(sqlite_uri, "retried-create")
    assert only.info.run_id == run.extra["mlflow_run_id"] and only.info.status == "FINISHED"


def test_a_run_spooled_while_its_create_hung_is_delivered_as_one_run_and_learns_its_id(sqlite_uri):
    "Probe 29, f1: one fit gave three MLflow runs (two RUNNING copies), and run.extra kept mlflow_run_id None."
    tracker, answered = tb.track(sqlite_uri, experiment="stalled-create", flush_every=0, wait=0.5), threading.Event()
    retried_create(tracker, until=answered)
    try:
        with pytest.warns(UserWarning, match="did not answer in 0.5 s; the run is kept in"):
            run = fit(epochs=3)
    finally: answered.set()  # the server answers again
    assert tracker.wait(60) and run.extra.get("mlflow_run_id") is None
    (delivered,) = tb.sync()
    (only,) = active_runs(sqlite_uri, "stalled-create")
    assert only.info.run_id == delivered and only.info.status == "FINISHED"
    steps = [m.step for m in tracker.client.get_metric_history(delivered, "valid_loss")]
    assert steps == run.records.series("loss", "valid").index.tolist()  # every epoch, once
    assert run.extra["mlflow_run_id"] == delivered  # the Run fit returned learns where it went
    with pytest.warns(UserWarning, match="recorded already"): assert tb.log_run(run) == delivered
    del run.extra["mlflow_run_id"]  # a Run that never learned its id (gone while the run was spooled)
    with pytest.warns(UserWarning, match="recorded already"): assert tb.log_run(run) == delivered  # by its key
    assert len(active_runs(sqlite_uri, "stalled-create")) == 1


def test_a_database_url_whose_driver_has_an_underscore_is_a_url_and_a_home_path_is_expanded():
    "Probe 45: 'oracle+cx_oracle://...' (no scheme to urllib) became sqlite:///oracle+cx_oracle:..., '~/s.db' a folder '~'."
    from pathlib import Path
    from trainbook.store import database_url
    assert database_url("oracle+cx_oracle://u:p@h/db", "storage") == "oracle+cx_oracle://u:p@h/db"
    assert database_url("~/s.db", "storage") == f"sqlite:///{Path.home() / 's.db'}"
    with pytest.raises(ValueError, match=r"unknown scheme 'orcle\+cx_oracle' \(did you mean 'oracle'\?\)"):
        database_url("orcle+cx_oracle://u:p@h/db", "storage")


# --- probe 79: what answers at a tracking URI, a scheme's case, MLflow 3's file store -------------------------------

@contextmanager
def http_service(handler):
    "A web service on 127.0.0.1 (threads of this process) for the block; yields its URI."
    import http.server
    service = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    service.daemon_threads = True
    threading.Thread(target=service.serve_forever, daemon=True).start()
    try: yield f"http://127.0.0.1:{service.server_address[1]}"
    finally:
        service.shutdown()
        service.server_close()


def answering(status: int, kind: str, body: bytes):
    "A handler that answers every GET with `status`, `kind` and `body`."
    return routes(lambda path, headers: (status, kind, body))


@pytest.mark.parametrize("answer", [
    (404, "text/html", b"<!DOCTYPE HTML><html><head><title>Jupyter Server</title></head><body>404</body></html>"),
    (404, "application/json", b'{"message": "Not Found", "reason": null}'),  # a JSON API, not MLflow's
    (200, "text/html", b"<html><head><title>Sign in</title></head></html>")],  # a login page, even at /health
    ids=["html-404", "json-404", "html-200"])
def test_another_web_service_at_the_uri_is_refused_naming_uri_and_what_answered(answer):
    "Probe 79, f2: any answer below 500 at /health counted as a server; track() then gave MLflow's error with the page."
    with http_service(answering(*answer)) as uri:
        with pytest.raises(ConnectionError, match=rf"uri '{uri}': no MLflow tracking server answers there \(another "
                                                  rf"web service does: GET {uri}/health: HTTP {answer[0]}") as caught:
            tb.track(uri, experiment="not-mlflow")
    assert "<html" not in str(caught.value).lower() and "check the port" in str(caught.value)
    assert tb.active_tracker() is None


def routes(answer):
    "A handler answering each GET with `answer(path, headers)` -> (status, kind, body); `.seen` lists the paths asked."
    import http.server
    seen = []

    class Routes(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Authorization")))
            status, kind, body = answer(self.path, self.headers)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args): pass
    Routes.seen = seen
    return Routes


WALL = "Basic dXNlcjpwdw=="  # user:pw


def behind_a_wall(path, headers):
    "MLflow behind basic auth: 401 without user:pw, MLflow's search answer with them."
    if headers.get("Authorization") != WALL: return 401, "text/plain", b"Unauthorized"
    return 200, "application/json", b'{"experiments": [{"experiment_id": "0", "name": "Default"}]}'


def test_a_server_that_wants_credentials_says_which_to_set_and_takes_them(tmp_path, monkeypatch):
    "Probe 84, f5: without credentials track() ended in MLflow's raw 'error code 401 != 200', naming no variable."
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.mlflow/credentials of yours
    for name in ("USERNAME", "PASSWORD", "TOKEN", "AUTH"):
        monkeypatch.delenv(f"MLFLOW_TRACKING_{name}", raising=False)
    handler = routes(behind_a_wall)
    with http_service(handler) as uri:
        with pytest.raises(PermissionError, match=rf"uri '{uri}': the tracking server wants credentials and none are "
                                                  r"set .*MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD \(or "
                                                  r"MLFLOW_TRACKING_TOKEN\)"):
            tb.track(uri)
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "user")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong")
        with pytest.raises(PermissionError, match=rf"uri '{uri}': the tracking server refused the credentials sent"):
            st.check_server(uri)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw")
        assert st.check_server(uri) is None  # sent as MLflow's client sends them
        monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD")
        monkeypatch.setenv("MLFLOW_TRACKING_AUTH", "my_plugin")  # a plugin signs MLflow's requests: its client judges
        assert st.check_server(uri) is None
    assert handler.seen[-3] == ("/api/2.0/mlflow/experiments/search?max_results=1", WALL)  # the right ones
    assert tb.active_tracker() is None


def test_a_url_with_user_and_password_is_checked_with_them_and_never_shows_the_password(tmp_path, monkeypatch):
    "Probe 109, finding 3: http://user:pw@host was 'no server answers (Name or service not known)', password shown."
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("USERNAME", "PASSWORD", "TOKEN", "AUTH"):
        monkeypatch.delenv(f"MLFLOW_TRACKING_{name}", raising=False)
    handler = routes(behind_a_wall)
    with http_service(handler) as uri:
        with_pw = uri.replace("http://", "http://user:pw@")
        assert st.check_server(with_pw) is None  # the user:pw of the URL, sent as requests sends it for MLflow
        assert handler.seen[-1] == ("/api/2.0/mlflow/experiments/search?max_results=1", WALL)
        with pytest.raises(PermissionError, match=r"user:\*\*\*@.*refused the credentials") as err:
            st.check_server(uri.replace("http://", "http://user:s3cret@"))
        assert "s3cret" not in str(err.value)
    with pytest.raises(ConnectionError, match=r"user:\*\*\*@.*no MLflow tracking server answers") as err:
        st.check_server(uri.replace("http://", "http://user:s3cret@"), timeout=1)  # the service is gone
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize("answer", [
    lambda path, headers: (200, "application/json", b'{"status": "ok"}'),  # JSON 200 for every path
    lambda path, headers: ((200, "text/plain", b"OK") if path == "/health" else  # a health page like MLflow's
                           (404, "text/html", b"<html><title>Not Found</title></html>"))],
    ids=["json-200-everywhere", "health-ok-html-404"])
def test_a_service_whose_api_is_not_mlflows_is_refused_whatever_its_health_says(answer):
    """Probe 84, f2/f5: JSON 200 everywhere was taken for MLflow (runs recorded in experiment ''); /health 'OK' with
    HTML 404s ended in MLflow's raw 404 quoting the page."""
    handler = routes(answer)
    with http_service(handler) as uri:
        with pytest.raises(ConnectionError, match=rf"uri '{uri}': no MLflow tracking server answers there \(another "
                                                  r"web service does") as caught:
            tb.track(uri, experiment="not-mlflow")
    assert "<html" not in str(caught.value).lower()
    assert [path for path, _ in handler.seen] == ["/health", "/api/2.0/mlflow/experiments/search?max_results=1"]
    assert tb.active_tracker() is None


def test_mlflows_api_answer_is_its_search_result_or_its_error():
    assert st._mlflow_api(200, "application/json", '{"experiments": []}')
    assert st._mlflow_api(200, "application/json", "{}")  # no experiments: protobuf's JSON leaves the list out
    assert st._mlflow_api(404, "application/json", '{"error_code": "ENDPOINT_NOT_FOUND", "message": "x"}')
    assert not st._mlflow_api(200, "application/json", '{"status": "ok"}')
    assert not st._mlflow_api(200, "application/json", '{"experiments": "none"}')
    assert not st._mlflow_api(404, "application/json", '{"message": "Not Found"}')


def test_sync_against_a_server_that_never_answers_asks_it_first_and_keeps_the_runs(server, monkeypatch):
    "Probe 84, f1: sync on the active tracker skipped the /health question: 2 spooled runs, a mute server, 65 s."
    proxy = Proxy(server)
    uri = f"http://127.0.0.1:{proxy.port}"
    tracker = tb.track(uri, experiment="mute-sync", flush_every=0)
    run = fit(epochs=1, track=False)
    for name in ("a", "b"):
        st.spool(uri, {"experiment": "mute-sync", "run_id": None, "name": name, "params": {}, "tags": {},
                       "status": "FINISHED", "record": run.to_dict()})
    tried = []
    monkeypatch.setattr(tracker, "deliver", lambda entry: tried.append(entry) or "0" * 32)
    monkeypatch.setattr(st, "READ_WAIT", 0.5)  # the bound is what is tested, not its 5 s
    proxy.cut()
    with socket.socket() as mute:  # the kernel accepts; nothing ever reads or answers
        mute.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        mute.bind(("127.0.0.1", proxy.port))
        mute.listen(16)
        with pytest.raises(ConnectionError, match=rf"uri '{uri}': no MLflow tracking server answers there \(GET "
                                                  rf"{uri}/health for 0.5 s.*the 2 spooled run\(s\) stay spooled: "
                                                  r"call tb.sync\(\) again"):
            tb.sync()
    assert tried == [] and len(st.spooled(uri)) == 2  # no delivery tried: both wait


def test_a_proxy_that_does_not_know_health_but_forwards_mlflow_is_a_server(server):
    "A proxy answering /health with its own 404 page, forwarding MLflow's API: judged by the API, accepted."
    import http.server, urllib.error, urllib.request

    class Forward(http.server.BaseHTTPRequestHandler):
        def forward(self):
            if self.path.startswith("/health"): return self.send_error(404)  # its own HTML page
            length = int(self.headers.get("Content-Length") or 0)
            request = urllib.request.Request(f"http://127.0.0.1:{server}{self.path}", method=self.command,
                                             data=self.rfile.read(length) if length else None,
                                             headers={"Content-Type": self.headers.get("Content-Type", "")})
            try: answer = urllib.request.urlopen(request, timeout=60)
            except urllib.error.HTTPError as e: answer = e
            with answer: body = answer.read()
            self.send_response(answer.getcode())
            self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

        def log_message(self, *args): pass
    with http_service(Forward) as uri:
        tracker = tb.track(uri, experiment="behind-a-proxy", flush_every=0)
        try:
            run = fit(epochs=1)
            tracker.wait()
            assert list(tb.runs(uri=uri).run_id) == [run.extra["mlflow_run_id"]]
        finally: tb.untrack()


def test_a_capitalised_scheme_is_the_lower_case_uri():
    "Probe 79, f5: 'HTTP://' skipped the /health check and said a server that never answered 'stopped answering'."
    port = free_port()
    with pytest.raises(ConnectionError, match=rf"uri 'http://127.0.0.1:{port}': no MLflow tracking server answers "
                                              rf"there \(GET http://127.0.0.1:{port}/health") as caught:
        tb.track(f"HTTP://127.0.0.1:{port}")
    assert "stopped answering" not in str(caught.value)
    assert st.resolve_uri("HTTPS://example.org:5000") == "https://example.org:5000"
    assert st.resolve_uri("SQLite:////tmp/x.db") == "sqlite:////tmp/x.db"
    assert st.database_url("SQLITE:///s.db", "storage") == "sqlite:///s.db"  # SQLAlchemy knows no 'SQLITE'


def test_a_file_store_is_refused_naming_uri_unless_mlflow_is_told_to_open_it(tmp_path, monkeypatch):
    "Probe 79, f4: a file: URI failed with MLflow's raw 'maintenance mode' error, which 16a_store said it replaced."
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    new = tmp_path / "new"
    with pytest.raises(ValueError, match=rf"uri 'file://{new}' is an MLflow file store.*pass a SQLite store instead"
                                         r".*or set MLFLOW_ALLOW_FILE_STORE=true"):
        tb.track(f"file://{new}")
    assert not new.exists() and tb.active_tracker() is None
    # MLflow 2's ./mlruns, given as a folder: its runs would hide behind a new mlruns.db in it
    old = tmp_path / "mlruns"
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.MlflowClient(old.as_uri()).create_experiment("before")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    with pytest.raises(ValueError, match=rf"uri '{old}' is an MLflow file store.*mlflow migrate-filestore "
                                         rf"--source {old} --target sqlite:///{tmp_path}/mlruns.db"):
        tb.track(str(old))
    assert not (old / "mlruns.db").exists()
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # you insist: MLflow opens it, and so does trainbook
    assert st.resolve_uri(str(old)) == st.resolve_uri(f"file://{old}") == old.as_uri()
    tracker = tb.track(str(old), experiment="before")
    tb.untrack()
    assert tracker.experiment_id == mlflow.MlflowClient(old.as_uri()).get_experiment_by_name("before").experiment_id


@pytest.mark.parametrize("switch", [False, True], ids=["file-store-off", "file-store-on"])
@pytest.mark.parametrize("given, meant", [("file://./mlruns", "'file:./mlruns'"), ("file://mlruns", "'file:///mlruns'"),
                                          ("FILE://tmp/runs/g", "'file:///tmp/runs/g'")])
def test_a_file_uri_whose_slashes_start_a_host_is_refused_with_the_uri_meant(tmp_path, monkeypatch, given, meant,
                                                                            switch):
    "Probe 84, f3: with the switch file://./mlruns made its store at /mlruns; without, it was offered /mlruns.db."
    monkeypatch.chdir(tmp_path)
    if switch: monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    else: monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    before = os.path.exists("/mlruns")
    with pytest.raises(ValueError, match=rf"uri {re.escape(repr(given))}: in a file: URI '//' starts a host name "
                                         rf".*{re.escape(meant)}"):
        tb.track(given)
    assert os.path.exists("/mlruns") == before and list(tmp_path.iterdir()) == []
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    assert st.resolve_uri(f"file://localhost{tmp_path}/m") == f"file://localhost{tmp_path}/m"  # this host: a path
