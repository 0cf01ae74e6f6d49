"""torch.distributed on CPU with gloo, 2 processes: DDP equals one process with the double batch, ranks stay identical,
FSDP weights load into a plain model, failures surface with the remote traceback, a killed worker is named with its
signal, a DDP run resumes exactly from its rank-0 checkpoint, and a launch that ends in any way leaves no process, no
folder and no state behind."""
import _thread, contextlib, json, os, signal, sys, tempfile, threading, time, types, warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import distributed
from trainbook.distributed import LaunchError, launch

N, B = 512, 16  # rows, per-rank batch


def data():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(N, 8, generator=g)
    return X, (X @ torch.randn(8, 3, generator=g)).argmax(1)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))


CFG = dict(epochs=3, lr=5e-3, schedule="warmup_cosine", warmup=0.1, clip_norm=1.0, device="cpu", log_every=4)


def ddp_train(batch, checkpoint_dir=None, stop_at=None, resume=None, accum=1):
    "Runs on every rank: train with a per-rank batch, checking after every step that all ranks hold the same weights."
    import torch.distributed as dist
    from trainbook.events import Callback

    class SameEverywhere(Callback):
        def __init__(self): self.mismatches = 0
        def after_step(self, state):
            flat = torch.cat([p.detach().reshape(-1) for p in state.model.parameters()])
            gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
            dist.all_gather(gathered, flat)
            self.mismatches += sum(not torch.equal(gathered[0], g) for g in gathered[1:])
            if stop_at and state.step == stop_at: state.control.request_stop()

    X, y = data()
    net, check = model(), SameEverywhere()
    run = tb.fit(net, tb.TensorLoader(X, y, batch_size=batch, shuffle=True, seed=1), tb.TensorLoader(X[:128], y[:128], batch_size=32),
                 loss_fn=nn.functional.cross_entropy, metrics="accuracy", live=False, callbacks=[check], resume=resume,
                 config=tb.TrainConfig(**CFG, checkpoint_dir=checkpoint_dir, accum_steps=accum))
    mismatches = torch.tensor(float(check.mismatches)); dist.all_reduce(mismatches)
    return {"state": {k: v.clone() for k, v in net.state_dict().items()}, "mismatches": int(mismatches), "run": run}


def single_train(batch, accum=1):
    X, y = data()
    net = model()
    run = tb.fit(net, tb.TensorLoader(X, y, batch_size=batch, shuffle=True, seed=1), tb.TensorLoader(X[:128], y[:128], batch_size=32),
                 loss_fn=nn.functional.cross_entropy, metrics="accuracy", live=False, config=tb.TrainConfig(**CFG, accum_steps=accum))
    return net.state_dict(), run


@pytest.fixture(scope="module")
def ddp_full():
    "One uninterrupted DDP run, shared: the reference for one process and for the resumed run."
    return launch(ddp_train, B, nprocs=2, timeout=300)


@pytest.mark.parametrize("accum", [1, 2])  # with accumulation, DDP syncs gradients once per window (no_sync before)
def test_ddp_matches_one_process_with_the_double_batch(accum, ddp_full):
    out = ddp_full if accum == 1 else launch(ddp_train, B, accum=accum, nprocs=2, timeout=300)
    state, run = single_train(2 * B, accum)
    assert out["mismatches"] == 0  # parameters identical across ranks after every step
    assert out["run"].step == run.step == 3 * N // (2 * B * accum)
    for k in state: assert torch.allclose(out["state"][k], state[k], atol=1e-5), k
    # validation is reduced across ranks: the same numbers as one process scoring every row
    assert out["run"].metrics()["valid_loss"].to_numpy() == pytest.approx(run.metrics()["valid_loss"].to_numpy(), abs=1e-4)


def test_ddp_resume_from_the_rank0_checkpoint_is_exact(tmp_path, ddp_full):
    full = ddp_full
    first = launch(ddp_train, B, str(tmp_path), 11, nprocs=2, timeout=300)  # stopped mid-epoch at step 11
    assert first["run"].stopped == "interrupted" and torch.load(tmp_path / "last.pt", weights_only=True)["step"] == 11
    resumed = launch(ddp_train, B, str(tmp_path), None, str(tmp_path / "last.pt"), nprocs=2, timeout=300)
    assert resumed["run"].stopped == "completed"
    for k in full["state"]: assert torch.equal(resumed["state"][k], full["state"][k]), k


def test_a_ddp_checkpoint_resumed_on_one_process_keeps_the_epochs_train_loss(tmp_path, ddp_full):
    """Probe 105: a 2-rank run stopped mid-epoch and resumed on one process gave that epoch's train_loss 0.758 where
    the uninterrupted run had 0.770: each step's loss was weighted by one rank's rows, then by all of them."""
    launch(ddp_train, B, str(tmp_path), 11, nprocs=2, timeout=300)  # stopped mid-epoch at step 11
    X, y = data()
    run = tb.fit(model(), tb.TensorLoader(X, y, batch_size=2 * B, shuffle=True, seed=1),
                 tb.TensorLoader(X[:128], y[:128], batch_size=32), loss_fn=nn.functional.cross_entropy,
                 metrics="accuracy", live=False, resume=tmp_path / "last.pt",
                 config=tb.TrainConfig(**CFG, checkpoint_dir=str(tmp_path)))
    full = ddp_full["run"].metrics()["train_loss"].to_numpy()
    assert run.metrics()["train_loss"].to_numpy() == pytest.approx(full, abs=1e-5)


def fsdp_train(checkpoint_dir):
    from torch.utils.data import DataLoader, TensorDataset
    X, y = data()
    valid = DataLoader(TensorDataset(X[:65], y[:65]), batch_size=B)  # 65 rows: 3 batches on rank 0, 2 on rank 1
    run = tb.fit(model(), tb.TensorLoader(X, y, batch_size=B, shuffle=True), valid,
                 loss_fn=nn.functional.cross_entropy, live=False, strategy="fsdp",
                 config=tb.TrainConfig(epochs=2, lr=5e-3, device="cpu", checkpoint_dir=checkpoint_dir))
    return run.stopped, run.step, run.records.last("loss", "valid")


def test_fsdp_runs_and_its_weights_load_into_a_plain_model(tmp_path):
    "FSDP: its weights load into a plain model, and its validation scores each of 65 rows once on uneven shards."
    stopped, step, valid_loss = launch(fsdp_train, str(tmp_path), nprocs=2, timeout=300)
    assert stopped == "completed" and step == 2 * N // (2 * B)
    plain = model()
    ckpt = tb.load_checkpoint(tmp_path / "last.pt", plain)
    assert ckpt["step"] == step
    X, y = data()
    with torch.no_grad(): plain_valid = nn.functional.cross_entropy(plain(X[:65]), y[:65]).item()
    assert valid_loss == pytest.approx(plain_valid, abs=1e-5)  # 65 rows, each once (padding would count 66)
    with torch.no_grad(): loss = nn.functional.cross_entropy(plain(X), y).item()
    with torch.no_grad(): untrained = nn.functional.cross_entropy(model()(X), y).item()
    assert loss < 0.8 * untrained  # the saved weights are the trained ones


def raises():
    import torch.distributed as dist
    if dist.get_rank() == 1: raise KeyError("no such column: 'label'")
    dist.barrier()


def test_a_worker_that_raises_gives_the_remote_traceback():
    with pytest.raises(LaunchError, match="rank 1 failed") as e:
        launch(raises, nprocs=2, timeout=120)
    assert "KeyError" in str(e.value) and "no such column" in str(e.value)
    assert "Traceback" in str(e.value)


def killed():
    import torch.distributed as dist
    if dist.get_rank() == 1: os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()  # rank 0 would wait here for ever without the launcher's clean-up


def test_a_killed_worker_is_named_with_its_signal_without_hanging():
    with pytest.raises((LaunchError, TimeoutError)) as e:
        launch(killed, nprocs=2, timeout=120)
    assert e.type is LaunchError  # torchrun noticed and ended the group well before the timeout
    assert "rank 1 was killed by signal SIGKILL (9)" in str(e.value)  # not "rank 0 failed", its consequence


def sleeper(folder):
    "Each rank starts a grandchild in a session of its own, records both pids, and sleeps: only a tree kill ends them."
    import subprocess, time
    import torch.distributed as dist
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    (Path(folder) / f"{dist.get_rank()}.pids").write_text(f"{os.getpid()} {child.pid}")
    time.sleep(600)


def running(pid):
    "Whether `pid` is a live process (a zombie waiting for its parent to reap it counts as ended)."
    try: stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError: return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    "A temp dir of the test's own, so leftovers of this launch (and only of it) can be looked for."
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def started_pids(folder):
    return [int(p) for f in Path(folder).glob("*.pids") for p in f.read_text().split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")
def test_a_timed_out_launch_leaves_no_process_and_no_folder(tmp_path, private_tmp, monkeypatch):
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    late = {"by": 0.0}
    def monotonic():  # launch's clock: an hour later once both workers (and their children) have started
        if not late["by"] and len(list(pids_dir.glob("*.pids"))) == 2: late["by"] = 3600.0
        return time.monotonic() + late["by"]
    clock = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    clock.monotonic = monotonic
    monkeypatch.setattr(distributed, "time", clock)
    with pytest.raises(TimeoutError, match="timeout=600s; they were stopped"):
        launch(sleeper, str(pids_dir), nprocs=2, timeout=600)
    assert late["by"]  # the timeout came from the clock, after every process had started
    pids = started_pids(pids_dir)
    assert len(pids) == 4  # both workers and both grandchildren had started
    assert [p for p in pids if running(p)] == []
    assert list(private_tmp.iterdir()) == []  # no trainbook-launch-* folder with the pickled arguments


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")
def test_ctrl_c_in_the_caller_stops_the_whole_tree(tmp_path, private_tmp):
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    def interrupt_once_started():
        deadline = time.monotonic() + 300
        while len(list(pids_dir.glob("*.pids"))) < 2 and time.monotonic() < deadline: time.sleep(0.1)
        _thread.interrupt_main()  # what Ctrl-C (or a notebook's interrupt) does to the cell running launch
    threading.Thread(target=interrupt_once_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        launch(sleeper, str(pids_dir), nprocs=2, timeout=600)
    pids = started_pids(pids_dir)
    assert len(pids) == 4 and [p for p in pids if running(p)] == []
    assert list(private_tmp.iterdir()) == []


def streams_then_fails(note):
    "Rank 0 streams one record (as fit does), then every rank fails."
    import torch.distributed as dist
    if dist.get_rank() == 0:
        with open(os.environ["TRAINBOOK_STREAM"], "a") as f: f.write(json.dumps([1, 0, "train", note, 0.5]) + "\n")
    dist.barrier()
    raise RuntimeError("failed after logging")


def test_history_is_the_callers_and_survives_a_failure(private_tmp):
    first, second = tb.History(), tb.History()
    with pytest.raises(LaunchError, match="failed after logging"):
        launch(streams_then_fails, "first", nprocs=2, timeout=120, history=first)
    with pytest.raises(LaunchError):
        launch(streams_then_fails, "second", nprocs=2, timeout=120, history=second)
    assert first.rows() == [(1, 0, "train", "first", 0.5)] and second.rows() == [(1, 0, "train", "second", 0.5)]
    assert not hasattr(launch, "history")  # no state on the function: a failed launch cannot leak the previous rows
    assert list(private_tmp.iterdir()) == []


def listening(pids):
    "The addresses the processes `pids` listen on."
    psutil = pytest.importorskip("psutil")
    out = []
    for pid in pids:
        try: conns = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error: continue
        out += [c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN]
    return out


def rendezvous_addresses(caller):
    """Run on each rank: what the rendezvous side listens on: the caller (which hosts the store) and torchrun's agent.
    Each rank is warned twice of one thing, as fit warns ("nothing is left to train")."""
    import warnings
    for _ in range(2): warnings.warn(f"nothing is left to train (rank {os.environ['RANK']})")
    return listening([caller, os.getppid()])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")
def test_the_standalone_rendezvous_listens_on_127_0_0_1_only():
    "... and rank 0's warnings reach the caller, once each (probe 13, f9: they went to a deleted log)."
    pytest.importorskip("psutil")
    with pytest.warns(UserWarning) as caught:
        addresses = launch(rendezvous_addresses, os.getpid(), nprocs=2, timeout=120)
    assert addresses and set(addresses) <= {"127.0.0.1", "::1"}, addresses
    said = [str(w.message) for w in caught if "nothing is left" in str(w.message)]
    assert said == ["rank 0: UserWarning: nothing is left to train (rank 0)"], said


def test_bad_arguments():
    with pytest.raises(ValueError, match="nprocs must be a positive int"): launch(raises, nprocs=0)
    with pytest.raises(ValueError, match="rdzv_endpoint"): launch(raises, nnodes=2)
    with pytest.raises(ValueError, match="needs torch.distributed"):
        X, y = data()
        tb.fit(model(), [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, strategy="ddp")


def test_a_signalled_rank_is_the_cause_even_when_a_peer_failed_first(tmp_path):
    "Seen on CI: rank 1 was SIGKILLed, rank 0 lost its peer and torchrun observed rank 0's failure first."
    (tmp_path / "launcher.log").write_text(
        "Failures:\n[1]:\n  time      : t\n  host      : h\n  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : -9 (pid: 12)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 12\n"
        "----\nRoot Cause (first observed failure):\n[0]:\n  time      : t\n  host      : h\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 11)\n  error_file: e\n")
    (tmp_path / "error-0.txt").write_text("Traceback: connection reset by peer")
    message = str(distributed._failure(tmp_path, 1))
    assert message.startswith("rank 1 was killed by signal SIGKILL (9) (then rank(s) 0 failed too)")


def test_an_aborted_rank_says_what_aborted_before_torchruns_traceback(tmp_path):
    "Seen on a loaded host: rank 1 SIGABRT, the message's 2000-character tail all torchrun's, the abort's words above it."
    (tmp_path / "launcher.log").write_text(
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n  what():  [enforce fail at "
        "gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 64 vs 48\n" + "torchrun noise\n" * 300 +
        "Failures:\n[0]:\n  rank      : 1 (local_rank: 1)\n  exitcode  : -6 (pid: 12)\n"
        "  traceback : Signal 6 (SIGABRT) received by PID 12\n")
    message = str(distributed._failure(tmp_path, 1))
    assert message.startswith("rank 1 was killed by signal SIGABRT (6)"), message[:200]
    assert "saying:\nterminate called after throwing an instance of 'gloo::EnforceNotMet'" in message
    assert "op.preamble.length <= op.nbytes. 64 vs 48" in message


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")
def test_a_second_ctrl_c_during_the_clean_up_leaves_no_process_frozen(tmp_path, private_tmp, monkeypatch):
    "Ctrl-C, then Ctrl-C again just after the clean-up froze the processes (SIGSTOP) and before it killed them."
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    main = threading.main_thread().ident
    original = distributed._signal
    def again_after_the_freeze(pids, sig):
        original(pids, sig)
        if sig == signal.SIGSTOP: signal.pthread_kill(main, signal.SIGINT)  # the user presses once more
    monkeypatch.setattr(distributed, "_signal", again_after_the_freeze)
    def interrupt_once_started():
        deadline = time.monotonic() + 300
        while not list(pids_dir.glob("*.pids")) and time.monotonic() < deadline: time.sleep(0.05)
        _thread.interrupt_main()
    threading.Thread(target=interrupt_once_started, daemon=True).start()
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            launch(sleeper, str(pids_dir), nprocs=1, timeout=600)
        pids = started_pids(pids_dir)
        assert len(pids) == 2 and [p for p in pids if running(p)] == []  # none left frozen (state T)
        assert list(private_tmp.iterdir()) == [] and signal.getsignal(signal.SIGINT) is before
    finally:  # a failure here must not leave frozen processes behind for the rest of the suite
        for pid in started_pids(pids_dir):
            with contextlib.suppress(ProcessLookupError): os.kill(pid, signal.SIGKILL)


# ---- probe 25: FSDP with metrics, an FSDP Run sent back, a 1-process checkpoint under FSDP, DDP with fewer
# validation rows than ranks, a rank that ends early, torchrun without a process group

SMALL = 128  # rows for the short launches below: 4 steps an epoch on 2 ranks x 16 rows


def small_fit(batch, strategy=None, metrics="accuracy", valid_rows=40, **config):
    "One fit on the first SMALL rows (a TensorLoader, so a launched one shards itself); returns (model, run)."
    X, y = data()
    net = model()
    run = tb.fit(net, tb.TensorLoader(X[:SMALL], y[:SMALL], batch_size=batch, shuffle=True, seed=1),
                 tb.TensorLoader(X[:valid_rows], y[:valid_rows], batch_size=16),
                 loss_fn=nn.functional.cross_entropy, metrics=metrics, strategy=strategy, live=False,
                 config=tb.TrainConfig(epochs=2, lr=5e-3, device="cpu", **config))
    return net, run


def full_weights(net):
    "The model's full weights, gathered on every rank (a collective under FSDP)."
    return {k: distributed.full_tensor(v).detach().clone() for k, v in net.state_dict().items()}


def valid_records(run):
    return [r for r in run.records.rows() if r[2] == "valid"]


def fsdp_with_metrics():
    net, run = small_fit(B, "fsdp")
    return {"run": run, "state": full_weights(net)}


def test_fsdp_with_metrics_trains_like_one_process_and_its_run_comes_back():
    """Probe 25: the metric check's forward under inference_mode made FSDP's gather buffers inference tensors
    (the first training step failed), and a returned FSDP Run could not be pickled (its model holds the
    process group)."""
    with pytest.warns(UserWarning, match=r"FSDP-sharded model \(FSDPSequential\).*comes back as None"):
        out = launch(fsdp_with_metrics, nprocs=2, timeout=300)
    run = out["run"]
    assert run.stopped == "completed" and run.step == 2 * SMALL // (2 * B) and run.model is None
    net, alone = small_fit(2 * B)  # one process, the double batch: the same steps
    for k, v in net.state_dict().items(): assert torch.allclose(out["state"][k], v, atol=1e-5), k
    ours, theirs = valid_records(run), valid_records(alone)
    assert [r[:4] for r in ours] == [r[:4] for r in theirs] and any(r[3] == "accuracy" for r in ours)
    assert [r[4] for r in ours] == pytest.approx([r[4] for r in theirs], abs=1e-5)


def stop_at(step):
    from trainbook.events import Callback
    class Stop(Callback):
        def after_step(self, state):
            if state.step == step: state.control.request_stop()
    return Stop()


def fsdp_resume(resume):
    X, y = data()
    net = model()
    tb.fit(net, tb.TensorLoader(X[:SMALL], y[:SMALL], batch_size=B, shuffle=True, seed=1), None,
           loss_fn=nn.functional.cross_entropy, strategy="fsdp", live=False, resume=resume,
           config=tb.TrainConfig(epochs=2, lr=5e-3, device="cpu", schedule="warmup_cosine", warmup=0.1))
    return full_weights(net)


def test_a_one_process_checkpoint_resumes_exactly_under_fsdp(tmp_path):
    "Probe 25: FSDP read the optimizer state by parameter names; one process writes it by numbers (KeyError)."
    X, y = data()
    def alone(checkpoint_dir=None, callbacks=()):
        net = model()
        tb.fit(net, tb.TensorLoader(X[:SMALL], y[:SMALL], batch_size=2 * B, shuffle=True, seed=1), None,
               loss_fn=nn.functional.cross_entropy, live=False, callbacks=callbacks,
               config=tb.TrainConfig(epochs=2, lr=5e-3, device="cpu", schedule="warmup_cosine", warmup=0.1,
                                     checkpoint_dir=checkpoint_dir))
        return net.state_dict()
    full = alone()
    alone(str(tmp_path), [stop_at(3)])  # mid-epoch: last.pt at step 3, Adam's moments in it
    assert torch.load(tmp_path / "last.pt", weights_only=True)["step"] == 3
    with pytest.warns(UserWarning, match="checkpoint_dir is None"):  # the resumed run writes no files
        resumed = launch(fsdp_resume, str(tmp_path / "last.pt"), nprocs=2, timeout=300)
    for k, v in full.items(): assert torch.allclose(resumed[k], v, atol=1e-6), k


def ddp_one_valid_row():
    _, run = small_fit(B, valid_rows=1)
    return run


def test_ddp_with_fewer_validation_rows_than_ranks_scores_the_rows_it_has():
    "Probe 25: the rank without a row all-reduced a shorter statistics vector (no class counts): an abort."
    run = launch(ddp_one_valid_row, nprocs=2, timeout=300)
    _, alone = small_fit(2 * B, valid_rows=1)
    ours, theirs = valid_records(run), valid_records(alone)
    assert [r[:4] for r in ours] == [r[:4] for r in theirs]  # loss, accuracy and prior_loss, each epoch
    assert [r[4] for r in ours] == pytest.approx([r[4] for r in theirs], abs=1e-5)


def test_a_rank_without_rows_takes_the_others_target_counts():
    "LossStats.take_layout: zeros laid out as the other ranks' counts (classes or values); None drops them."
    loss = nn.functional.cross_entropy
    seen, empty = tb.LossStats(loss), tb.LossStats(loss)
    pred, yb = torch.randn(5, 3), torch.tensor([0, 1, 2, 2, 1])
    seen.add(pred, yb, loss(pred, yb), 5)
    empty.take_layout(seen.layout())
    assert len(empty.flat()) == len(seen.flat()) and empty.flat().abs().sum() == 0
    empty.load_flat(seen.flat() + empty.flat())  # what the all-reduce gives
    assert empty.results()["prior_loss"] == pytest.approx(seen.results()["prior_loss"])
    mse = nn.functional.mse_loss
    values, none = tb.LossStats(mse), tb.LossStats(mse)
    p, t = torch.randn(4), torch.randn(4)
    values.add(p, t, mse(p, t), 4)
    none.take_layout(values.layout())
    assert len(none.flat()) == len(values.flat())
    values.take_layout(None)
    assert len(values.flat()) == 10 and values.layout() is None


def one_rank_stops(how):
    "Rank 1 leaves the run at step 2 (a stop requested on it alone, or sys.exit(0)); rank 0 trains on."
    import torch.distributed as dist
    from trainbook.events import Callback
    rank = dist.get_rank()
    class Leave(Callback):
        def after_step(self, state):
            if rank == 1 and state.step == 2:
                if how == "exit": sys.exit(0)
                state.control.request_stop()
    X, y = data()
    tb.fit(model(), tb.TensorLoader(X, y, batch_size=B), None, loss_fn=nn.functional.cross_entropy,
           live=False, callbacks=[Leave()], config=tb.TrainConfig(epochs=2, device="cpu"))


@pytest.mark.parametrize("how, said", [("exit", "it called sys.exit(0)"), ("stop", "its function returned")])
def test_a_rank_that_ends_early_is_named_as_the_cause(how, said):
    "Probe 25: rank 0's 'Connection closed by peer' was the whole message; rank 1, which left, went unnamed."
    with pytest.raises(LaunchError) as e:
        launch(one_rank_stops, how, nprocs=2, timeout=120)
    message = str(e.value)
    assert message.startswith(f"rank 1 ended early ({said}) while rank 0 was still running"), message[:300]
    assert "rank 0 then failed" in message and "Traceback" in message


def test_torchrun_without_a_process_group_is_warned_of(monkeypatch):
    "Probe 25: under torchrun without init_process_group, each rank trained all the data alone, unwarned."
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    with pytest.warns(UserWarning, match=r"WORLD_SIZE=2 \(RANK=1\).*init_process_group"):
        assert distributed.dist_info() == (0, 1)
    monkeypatch.setenv("WORLD_SIZE", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert distributed.dist_info() == (0, 1)


def test_a_return_value_that_cannot_be_pickled_says_what_to_return():
    "Rank 0's result is pickled for the caller: what cannot be says so (and an FSDP model comes back as None)"
    with pytest.raises(TypeError, match=r"return value \(a dict\) cannot be sent back .*return plain data"):
        distributed.result_bytes({"lock": threading.Lock()}, [])
    notes = []
    assert distributed.result_bytes({"w": torch.ones(2)}, notes) and notes == []  # plain data: no note


@pytest.mark.parametrize("engine", ["torchrun", "ray"])
def test_an_argument_that_cannot_be_pickled_is_named_before_any_worker_starts(engine):
    "Probe 66: launch(engine='ray') said only \"cannot pickle '_thread.lock' object\", naming no argument."
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lock = threading.Lock()
    def train(net, other=None): return None
    workers = {"nprocs": 2} if engine == "torchrun" else {"num_workers": 2}
    with pytest.raises(TypeError, match=r"launch: argument 1 \(Net\) cannot be pickled .*'_thread.lock'"):
        tb.launch(train, Net(), engine=engine, live=False, timeout=30, **workers)
    with pytest.raises(TypeError, match=r"launch: other \(lock\) cannot be pickled"):
        tb.launch(train, None, other=threading.Lock(), engine=engine, live=False, timeout=30, **workers)
