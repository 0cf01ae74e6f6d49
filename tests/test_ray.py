"""Ray as an engine, on a local Ray (2 CPUs, 127.0.0.1, no dashboard): 2 Ray Train workers give the weights and history
of torchrun's 2 processes and of one process with the double batch; rank 0's history streams to the caller; each worker
reads its own rows of a Ray Dataset and of a plain DataLoader; in the same launch, a worker killed mid-run is restarted
and fit resumes exactly (to the bit) from Ray's last checkpoint by itself; a worker that raises is named with its
traceback; a Tune search runs trials two at a time with ASHA stopping some (pruned) and a killed one failed, with the
Optuna path's study table, and its best config re-fitted gives its best value; a Ray Dataset is a loader."""
import importlib.util, logging, os, signal, subprocess, sys, threading, time, warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook import ray_engine, ray_local
from trainbook.distributed import LaunchError
from test_shard_loader import assert_halves, rows_seen

if importlib.util.find_spec("ray") is None: pytest.skip("needs ray (pip install trainbook[ray])", allow_module_level=True)

N, B = 256, 16  # rows, per-rank batch
CFG = dict(epochs=3, lr=5e-3, schedule="warmup_cosine", warmup=0.1, clip_norm=1.0, device="cpu", log_every=4)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    "One local Ray for the module (start-up is slow on 2 cores): 2 CPUs, 127.0.0.1, no dashboard, no usage stats."
    import ray
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ.pop("RAY_ADDRESS", None)
    ray_engine.init_local(num_cpus=2)
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    yield ray
    ray.shutdown()


def data():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(N, 8, generator=g)
    return X, (X @ torch.randn(8, 3, generator=g)).argmax(1)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))


def train(batch, checkpoint_dir=None, kill_marker=None, store=None, shard=False):
    "Runs on every rank (Ray or torchrun) or alone: train with a per-rank batch; optionally die once mid-run."
    import torch.distributed as dist
    from trainbook.events import Callback

    class KillOnce(Callback):
        def after_step(self, state):  # rank 1 dies mid-epoch 1, once Ray registered epoch 0's checkpoint
            if dist.get_rank() != 1 or state.step != 12 or os.path.exists(kill_marker): return
            # Ray's controller registers a reported checkpoint when it next polls the workers (every 2 s): a crash
            # before that resumes from the checkpoint before. Wait for Ray's own record of it, then die.
            deadline = time.monotonic() + 120
            while not any(Path(store).rglob("checkpoint_manager_snapshot.json")) and time.monotonic() < deadline:
                time.sleep(0.05)
            Path(kill_marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)

    class Start(Callback):
        def before_fit(self, state): self.step = state.step  # after the resume: the checkpoint's step

    start = Start()
    callbacks = [start]  # in a Ray worker, fit attaches RayReport by itself (a session observer)
    if kill_marker: callbacks.append(KillOnce())
    X, y = data()
    net = model()
    run = tb.fit(net, tb.TensorLoader(X, y, batch_size=batch, shuffle=True, seed=1),
                 tb.TensorLoader(X[:64], y[:64], batch_size=32), loss_fn=nn.functional.cross_entropy,
                 metrics="accuracy", live=False, callbacks=callbacks,
                 config=tb.TrainConfig(**CFG, checkpoint_dir=checkpoint_dir))
    out = {"state": {k: v.clone() for k, v in net.state_dict().items()}, "run": run, "start_step": start.step}
    if shard:  # rows of this worker's shard of the Ray Dataset, summed over the workers
        rows = sum(len(b["y"]) for b in ray_engine.dataset_shard("train").iter_batches(batch_size=64))
        counts = [None] * dist.get_world_size()
        dist.all_gather_object(counts, rows)
        out["shard_rows"] = counts
        out["dataloader"] = rows_seen()  # fit on a plain DataLoader: each worker its own rows
    return out


TIMINGS = {"data_wait", "step_time", "samples_per_s", "peak_memory_mb"}  # records that measure the machine, not the run


def learning(rows): return [r for r in rows if r[3] not in TIMINGS]


def max_diff(a, b): return max((a[k] - b[k]).abs().max().item() for k in a)


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory, local_ray):
    """2 Ray Train workers, each with batch B; rank 1 killed once mid-run (Ray restarts the group, fit resumes by
    itself); rank 0's history streamed into `streamed`; a Ray Dataset sharded. One launch for all of it: a launch
    costs ~60 s on 2 cores, and a run that is exact after a restart is exact without one."""
    import ray
    store = tmp_path_factory.mktemp("ray-store")
    streamed = tb.History()
    ds = ray.data.from_items([{"x": float(i), "y": i % 3} for i in range(100)])
    marker = store / "killed-once"
    out = ray_engine.launch(train, B, checkpoint_dir=str(store / "ckpt"), shard=True, kill_marker=str(marker),
                            store=str(store), num_workers=2, max_failures=1, storage_path=str(store),
                            datasets={"train": ds}, history=streamed, live=False, timeout=600)
    return out, streamed, store, marker


def test_two_ray_workers_one_killed_mid_run_match_torchrun_and_one_process_with_the_double_batch(ray_run):
    """Ray's 2 workers, rank 1 killed once mid-run, give torchrun's uninterrupted run to the bit: no resume= given,
    fit in the workers Ray restarted resumed from the last checkpoint reported (worker_resume), exactly."""
    out, streamed, store, marker = ray_run
    by_torchrun = tb.launch(train, B, nprocs=2, timeout=300)
    net = model()
    X, y = data()
    single = tb.fit(net, tb.TensorLoader(X, y, batch_size=2 * B, shuffle=True, seed=1),
                    tb.TensorLoader(X[:64], y[:64], batch_size=32), loss_fn=nn.functional.cross_entropy,
                    metrics="accuracy", live=False, config=tb.TrainConfig(**CFG))
    assert marker.exists()  # rank 1 was killed once
    # the restarted workers resumed from epoch 0's checkpoint (8 steps), the last one reported before the kill
    assert out["start_step"] == N // (2 * B) and by_torchrun["start_step"] == 0
    assert out["run"].stopped == "completed"
    # ... in its own folder (probe 13, f4: the restart went on in version_1, the folder kept the failed attempt)
    assert Path(out["run"].run_dir).resolve() == (store / "ckpt").resolve() and not (store / "ckpt" / "version_1").exists()
    assert tb.Run.load(store / "ckpt").stopped == "completed"
    assert out["run"].step == by_torchrun["run"].step == single.step == 3 * N // (2 * B)
    for k in out["state"]: assert torch.equal(out["state"][k], by_torchrun["state"][k]), k
    assert max_diff(out["state"], net.state_dict()) <= 1e-6
    assert learning(out["run"].records.rows()) == learning(by_torchrun["run"].records.rows())
    ray_m, one_m = out["run"].metrics(), single.metrics()
    assert list(ray_m.columns) == list(by_torchrun["run"].metrics().columns)
    for col in ray_m.columns:  # train_loss (epoch mean), valid_loss, valid_accuracy, train_lr
        assert ray_m[col].to_numpy() == pytest.approx(one_m[col].to_numpy(), abs=1e-5), col
    # the caller received rank 0's whole history while the run went (then the DataLoader fit's rows, as torchrun's),
    # no record twice: the rows sent again after the restart replaced the first ones
    rows = out["run"].records.rows()
    assert streamed.rows()[:len(rows)] == rows and len(streamed.rows()) > len(rows)
    # each worker read its own shard of the Ray Dataset: together, every row once
    assert sum(out["shard_rows"]) == 100 and min(out["shard_rows"]) > 0
    # fit gave a plain DataLoader a DistributedSampler: disjoint halves of every epoch's rows
    assert_halves(out["dataloader"]["rows"])
    # each epoch was reported to Ray with rank 0's last.pt: Ray kept the checkpoints in storage_path
    assert len(list(store.rglob("last.pt"))) >= 3


def fails():
    import torch.distributed as dist
    if dist.get_rank() == 1: raise KeyError("no such column: 'label'")


def test_a_worker_that_raises_is_named_with_its_traceback():
    with pytest.raises(LaunchError, match="rank 1 failed") as e:
        ray_engine.launch(fails, num_workers=2, live=False, timeout=300)
    assert "KeyError" in str(e.value) and "no such column" in str(e.value) and "Traceback" in str(e.value)


def sleeper():
    time.sleep(600)


def test_a_timed_out_launch_on_the_users_ray_stops_its_run(local_ray):
    "Seen: the controller, the workers and the launch thread went on after the TimeoutError, holding CPUs."
    import threading
    with pytest.raises(TimeoutError, match="it was stopped"):
        ray_engine.launch(sleeper, num_workers=2, live=False, timeout=5)  # starting, or sleeping: stopped
    assert local_ray.is_initialized()  # the user's Ray goes on
    assert not [t for t in threading.enumerate() if t.name == "trainbook-ray-launch"]
    deadline = time.monotonic() + 60  # Ray hands a killed actor's CPUs back as it notices the death
    while local_ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline: time.sleep(0.1)
    assert local_ray.available_resources().get("CPU", 0) == 2  # both free: the next launch can run


def long_fit():
    X, y = data()
    return tb.fit(model(), tb.TensorLoader(X, y, batch_size=B, shuffle=True), loss_fn=nn.functional.cross_entropy,
                  live=False, config=tb.TrainConfig(epochs=10_000, device="cpu", monitor="train_loss"))


def test_a_ctrl_c_in_a_launch_on_the_users_ray_frees_its_cpus(local_ray):
    """Seen: KeyboardInterrupt came back at once, but the run went on, both CPUs held (a Ctrl-C inside
    Thread.join marked the running launch thread as ended, so the run was never aborted)."""
    import _thread, threading
    streamed = tb.History()

    def ctrl_c():  # once rank 0's rows stream in: the workers hold their CPUs
        deadline = time.monotonic() + 300
        while len(streamed) == 0 and time.monotonic() < deadline: time.sleep(0.1)
        _thread.interrupt_main()

    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        ray_engine.launch(long_fit, num_workers=2, live=False, history=streamed, timeout=600)
    assert len(streamed) > 0  # interrupted mid-run, not while starting
    deadline = time.monotonic() + 10  # launch waited for the placement group: only Ray's resource view may lag
    while local_ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline: time.sleep(0.1)
    assert local_ray.available_resources().get("CPU", 0) == 2  # both free: the next launch can run
    assert local_ray.is_initialized()  # the user's Ray goes on
    assert not [t for t in threading.enumerate() if t.name == "trainbook-ray-launch"]


def test_a_dead_worker_is_named_by_its_rank():
    "What Ray says when a worker's process died (no traceback of ours): the rank, and what killed it."
    class WorkerGroupError(Exception):  # the shape of ray.train.WorkerGroupError
        worker_failures = {1: RuntimeError("The actor died unexpectedly before finishing this task")}
    message = str(ray_engine._failure(WorkerGroupError("failed"), {}))
    assert message.startswith("rank 1 died (killed, or out of memory)") and "actor died" in message
    # rank 0 raised because it lost rank 1: the dead rank is the cause
    both = str(ray_engine._failure(WorkerGroupError("failed"), {0: "Traceback ...\nConnectionResetError"}))
    assert both.startswith("rank 1 died (then rank(s) 0 failed too)")
    # both raised: the first traceback to arrive is the cause (rank 0 lost its peer in a collective after rank 1 raised)
    raised = str(ray_engine._failure(WorkerGroupError("failed"), {1: "Traceback\nKeyError", 0: "Traceback\nGloo"}))
    assert raised.startswith("rank 1 failed (then rank(s) 0 failed too):\nTraceback\nKeyError")


def killed():
    import torch.distributed as dist
    if dist.get_rank() == 1: os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # rank 0 holds its CPU until the run is stopped


def test_a_killed_worker_on_the_users_ray_is_named_and_its_run_leaves_nothing_held(local_ray):
    """Probe 117: a SIGKILLed worker made Ray Train's controller fail before it removed the placement group, so the
    user's 2 CPUs stayed held (rank 0 alive in it) after the LaunchError, which named no rank (Ray's actor id only)."""
    from ray.util import placement_group_table
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        with pytest.raises(LaunchError, match="rank 1 died") as e:
            ray_engine.launch(killed, num_workers=2, live=False, timeout=300)
    assert not [w for w in told if str(w.message).startswith("launch")]  # the CPUs came back within the bound
    assert "actor died" in str(e.value)  # what Ray said about it
    # launch raised once the run's placement group was gone (its CPUs free again)
    assert [g["state"] for g in placement_group_table().values() if g["state"] != "REMOVED"] == []
    deadline = time.monotonic() + 10  # launch waited for the placement group: only Ray's resource view may lag
    while local_ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline: time.sleep(0.1)
    assert local_ray.available_resources().get("CPU", 0) == 2  # both free: the next launch can run


def test_a_dead_worker_named_only_by_its_actor_is_named_by_its_rank():
    "Ray Train's controller error names the dead actor (its id): the rank the worker registered under it."
    class ActorDiedError(Exception): actor_id = "ab12"

    class ControllerError(Exception):  # the shape of ray.train.ControllerError
        controller_failure = ActorDiedError("The actor died unexpectedly before finishing this task")
    message = str(ray_engine._failure(ControllerError("failed"), {}, {"ab12": 1, "cd34": 0}))
    assert message.startswith("rank 1 died (killed, or out of memory)") and "actor died" in message
    unknown = str(ray_engine._failure(ControllerError("failed"), {}, {"cd34": 0}))  # died before it registered
    assert unknown.startswith("the Ray Train run failed")


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_workers must be a positive int"): ray_engine.launch(fails, num_workers=0)
    with pytest.raises(TypeError, match="resources_per_worker must be a dict"):
        ray_engine.launch(fails, resources_per_worker=2)
    with pytest.raises(ValueError, match="max_concurrent must be a positive integer"):
        ray_engine.search(lambda c: 0.0, {"lr": (1e-3, 1e-1)}, 2, max_concurrent=0)
    with pytest.raises(ValueError, match=r"space\['lr'\]"): ray_engine.search(lambda c: 0.0, {"lr": (1, 0)}, 2)


def test_the_local_ray_starts_quietly_with_token_authentication(local_ray):
    "Ray's start-up notes stay out of the cell: its driver logs warnings only; token auth (its default) stays on."
    import logging
    assert logging.getLogger("ray").getEffectiveLevel() == logging.WARNING
    assert os.environ.get("RAY_AUTH_MODE") == "token"  # what Ray turned on for the new local cluster
    notes = logging.getLogger(ray_local.AUTH_LOGGER)
    assert not notes.filters  # the filter lived for the start-up only
    record = lambda msg: logging.LogRecord(ray_local.AUTH_LOGGER, logging.WARNING, "", 0, msg, None, None)
    quiet = ray_engine.LocalNotes()
    assert not quiet.filter(record("Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=..."))
    assert quiet.filter(record("Token authentication is disabled for this Ray cluster. Anyone with access..."))


def test_import_trainbook_loads_no_ray():
    code = "import sys, trainbook, trainbook.ray_engine; trainbook.launch; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- search: Ray Tune with Optuna's sampler and ASHA

def make_net(width=16):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 3))


def objective_for(kill_marker, meeting):
    """fit_objective on the small problem; one trial (the first to end an epoch) kills itself after its first report;
    on Ray, each trial waits at its start until two trials have started (files in `meeting`), so two do run at once
    however long Ray takes to start the second one's process."""
    X, y = data()
    objective = tb.fit_objective(make_net, tb.TensorLoader(X[:192], y[:192], batch_size=32, shuffle=True),
                                 tb.TensorLoader(X[192:], y[192:], batch_size=64), nn.functional.cross_entropy,
                                 tb.TrainConfig(epochs=4, device="cpu"))

    def with_a_kill(config):
        from trainbook.events import Callback

        class KillOnce(Callback):
            def after_epoch(self, state):
                if state.epoch == 0 and ray_engine.in_trial():
                    try: os.close(os.open(kill_marker, os.O_CREAT | os.O_EXCL))  # one trial only
                    except FileExistsError: return
                    os.kill(os.getpid(), signal.SIGKILL)

        class Meet(Callback):
            def before_fit(self, state):
                if not ray_engine.in_trial(): return
                Path(meeting, f"{os.getpid()}-{time.time_ns()}").touch()
                deadline = time.monotonic() + 120
                while len(os.listdir(meeting)) < 2 and time.monotonic() < deadline: time.sleep(0.05)

        config.callbacks = [*config.callbacks, Meet(), KillOnce()]
        return objective(config)

    with_a_kill.base_config = objective.base_config
    return with_a_kill


SPACE = {"lr": ("log", 1e-4, 1e-1), "width": [8, 32], "weight_decay": 0.0}


def test_ray_search_runs_trials_in_parallel_stops_some_early_and_records_a_killed_one(tmp_path):
    (tmp_path / "started").mkdir()
    objective = objective_for(str(tmp_path / "killed"), str(tmp_path / "started"))
    storage = str(tmp_path / "s.db")
    # a study the Optuna path began: the Ray search resumes it from its storage (one study, one table)
    tb.search(objective, SPACE, 2, storage=storage, study_name="study", live=False)
    ctrl_c = signal.getsignal(signal.SIGINT)
    result = ray_engine.search(objective, SPACE, 6, max_concurrent=2, storage=storage, study_name="study",
                               grace_period=1, reduction_factor=2, live=False)
    # Tune's own Ctrl-C handler (it ends a search) is gone with the search: the next Ctrl-C interrupts again
    assert signal.getsignal(signal.SIGINT) is ctrl_c
    trials = result.trials
    assert trials.number.tolist() == list(range(8))  # the study grew: 2 trials of the Optuna path, then Ray's 6
    by_optuna, by_ray = trials[:2], trials[2:]
    states = by_ray.state.value_counts().to_dict()
    assert states.get("COMPLETE", 0) >= 1 and states.get("PRUNED", 0) >= 1, states
    assert states.get("FAIL", 0) == 1, states  # the killed trial
    # probe 90: a pruned trial keeps what it reported (its value: the last), as tb.search's pruned trials do
    pruned = [t for t in result.study.trials if t.state.name == "PRUNED"]
    assert all(t.intermediate_values and t.value == t.intermediate_values[t.last_step] for t in pruned), \
        [(t.number, t.intermediate_values, t.value) for t in pruned]
    # two at a time: some trial started before another ended, in another process (Meet makes sure Ray had the
    # chance; with max_concurrent=1 the first trial would wait in vain)
    spans = list(zip(by_ray.user_attrs_started, by_ray.user_attrs_ended, by_ray.user_attrs_worker))
    assert any(s1 < e2 and s2 < e1 and w1 != w2 for i, (s1, e1, w1) in enumerate(spans)
               for (s2, e2, w2) in spans[i + 1:]), spans
    # the Optuna path's table: what its trials record (params from the same space, config, worker, how the run
    # stopped...), Ray's completed trials record too
    filled = [c for c in trials.columns if by_optuna[c].notna().all()]
    done = by_ray[by_ray.state == "COMPLETE"]
    assert done[filled].notna().all().all(), done[filled].isna().sum().to_dict()
    # findings of each trial are recorded
    assert all(isinstance(f, list) for f in by_ray.user_attrs_findings.dropna())
    # the best of Ray's trials, fitted again here, gives its value; the study's best is the best of all
    best = done.loc[done.value.idxmin()]
    again = objective(tb.tuning.TrialConfig(dict(best.user_attrs_config), None, []))
    assert again.best == pytest.approx(best.value, abs=1e-6)
    assert result.best_value == trials[trials.state == "COMPLETE"].value.min()


def test_a_trial_asha_stops_keeps_the_report_it_was_stopped_on():
    """Probe 90: Tune hands the report ASHA stops a trial on to the scheduler and to the searcher's
    on_trial_complete, never to its on_trial_result: a trial stopped at its first report was PRUNED with no
    intermediate value and value NaN; one stopped later lacked its last value. Driven as Tune drives it."""
    import optuna
    from trainbook.study import make_sampler
    from trainbook.space import suggest
    stopped = {"first", "later"}  # what StoppingASHA marks
    StoppingASHA, StudySearch, *_ = ray_engine._ray_classes()
    searcher = StudySearch(stopped, space=lambda trial: suggest(trial, {"x": (0.0, 1.0)}), metric="objective",
                           mode="min", study_name="s", storage=optuna.storages.InMemoryStorage(),
                           sampler=make_sampler(0))
    for tid in ("first", "later", "done"): searcher.suggest(tid)
    # as TuneReport sends them: ASHA reads the best so far (objective), the study records each value from 0
    report = lambda it, value, best=None: {"training_iteration": it, "objective": value if best is None else best,
                                           "value": value, "report": it - 1, "step": 6 * it}
    searcher.on_trial_complete("first", report(1, 0.9))  # stopped at its first report
    searcher.on_trial_result("later", report(1, 0.8))
    searcher.on_trial_complete("later", report(2, 0.85, best=0.8))  # stopped at its second, worse than its first
    searcher.on_trial_result("done", report(1, 0.5))
    searcher.on_trial_result("done", {"final": True, "objective": 0.4, "training_iteration": 2})
    searcher.on_trial_complete("done", {"final": True, "objective": 0.4, "training_iteration": 2})
    first, later, done = searcher._ot_study.trials
    assert (first.state.name, first.intermediate_values, first.value) == ("PRUNED", {0: 0.9}, 0.9)
    # probe 101, r_6: the values themselves, numbered from 0 (Ray stored the best so far from 1), as tb.search
    assert (later.state.name, later.intermediate_values, later.value) == ("PRUNED", {0: 0.8, 1: 0.85}, 0.85)
    assert (done.state.name, done.intermediate_values, done.value) == ("COMPLETE", {0: 0.5}, 0.4)  # final: no step


def test_both_engines_record_one_trial_alike(tmp_path):
    "Probe 101, r_6: the same run's intermediate values: each validation's, from 0 (Ray stored the best so far from 1)."
    X, y = data()
    dl_train = tb.TensorLoader(X[:192], y[:192], batch_size=64)
    dl_valid = tb.TensorLoader(X[192:], y[192:], batch_size=64)

    def make_model(hidden=13):
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 3))

    objective = (make_model, dl_train, dl_valid, nn.CrossEntropyLoss(), tb.TrainConfig(epochs=4, device="cpu"))
    space = {"lr": [0.7]}  # a loss that goes up and down: the best so far differs from the values
    by_optuna = tb.search(objective, space, 1, storage=str(tmp_path / "o.db"), study_name="o", live=False)
    by_ray = ray_engine.search(objective, space, 1, max_concurrent=1, storage=str(tmp_path / "r.db"),
                               study_name="r", live=False)
    curve = by_optuna.study.trials[0].intermediate_values
    assert list(curve) == [0, 1, 2, 3] and curve != {k: min(list(curve.values())[:k + 1]) for k in curve}, curve
    assert by_ray.study.trials[0].intermediate_values == pytest.approx(curve)


def test_ray_choices_of_any_type_and_a_study_refused_for_its_direction_as_under_tb_search(tmp_path):
    """Probe 108, r_4/r_5 under Ray: a tuple, a class as choices (Optuna samples their labels) reach each trial as the
    space's own objects and come back in the trials table and best_config; r_6: a trial refused for the direction
    records it, so the search of the right direction makes that study again."""
    db = str(tmp_path / "s.db")
    space = {"x": (0.0, 1.0), "s": [(1, 2), (3, (4, 5))], "cls": [nn.ReLU, nn.Tanh]}

    def objective(config):
        if config["s"] not in space["s"] or config["cls"] not in space["cls"]: raise TypeError(f"given {config}")
        return config["x"] + len(config["s"])

    res = ray_engine.search(objective, space, 2, max_concurrent=1, storage=db, study_name="c", live=False)
    assert res.states == {"COMPLETE": 2}
    assert res.best_config["cls"] in space["cls"] and res.best_config["s"] in space["s"]
    assert set(res.trials.params_s) <= set(space["s"]) and set(res.trials.params_cls) <= set(space["cls"])
    X, y = data()

    def accuracy(config):  # monitors an accuracy: a search that minimizes refuses its run
        return tb.fit(make_net(), tb.TensorLoader(X[:192], y[:192], batch_size=64),
                      tb.TensorLoader(X[192:], y[192:], batch_size=64), loss_fn=nn.functional.cross_entropy,
                      metrics="accuracy", live=False,
                      config=tb.TrainConfig(epochs=1, device="cpu", monitor="valid_accuracy", mode="max",
                                            lr=config["lr"]))

    lr, db = {"lr": ("log", 1e-3, 1e-1)}, str(tmp_path / "a.db")
    with pytest.raises(RuntimeError, match=r"no trial of study 'acc' completed.*pass direction='maximize'"):
        ray_engine.search(accuracy, lr, 1, max_concurrent=1, storage=db, study_name="acc", live=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        again = ray_engine.search(accuracy, lr, 1, max_concurrent=1, storage=db, study_name="acc",
                                  direction="maximize", live=False)
    assert again.states == {"COMPLETE": 1} and again.study.direction.name == "MAXIMIZE"
    assert any("made again to maximize" in str(w.message) for w in said), [str(w.message) for w in said]


def test_a_ray_trial_knows_its_number_and_a_search_that_completes_none_says_why(tmp_path):
    "Probe 21: config.trial was None under Ray (the docs' objectives read config.trial.number); no reason given."
    seen = tmp_path / "seen"
    seen.mkdir()

    def objective(config):
        (seen / f"{config.trial.number}-{sorted(config.trial.params)}").touch()
        with pytest.raises(AttributeError, match=r"has .number and .params, not .should_prune"):
            config.trial.should_prune()
        raise ValueError(f"trial {config.trial.number} refused")

    with pytest.raises(RuntimeError, match=r"no trial of study 's' completed.*ValueError: trial [01] refused"):
        ray_engine.search(objective, {"x": (0.0, 2.0)}, 2, max_concurrent=1, storage=str(tmp_path / "s.db"),
                          study_name="s", live=False)
    assert sorted(p.name for p in seen.iterdir()) == ["0-['x']", "1-['x']"]  # the config holds x alone


def test_a_ray_dataset_is_a_loader():
    import ray
    X, y = data()
    ds = ray.data.from_items([{"x": X[i].tolist(), "y": int(y[i])} for i in range(N)])
    loader = ray_engine.RayLoader(ds, target="y", batch_size=64)
    xb, yb = next(iter(loader))
    assert xb.shape == (64, 8) and xb.dtype == torch.float32 and yb.shape == (64,)
    run = tb.fit(model(), loader, loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=3, lr=1e-2, device="cpu", monitor="train_loss"))
    losses = run.metrics()["train_loss"].to_numpy()
    assert run.step == 3 * N // 64 and losses[-1] < losses[0]
    with pytest.raises(ValueError, match="target column 'label' not in the dataset"):
        next(iter(ray_engine.RayLoader(ds, target="label")))


def test_a_ray_loader_checks_its_columns_from_the_schema_when_made():
    "A missing or misspelt column, the target among the features, a text column: refused by name when made."
    import numpy as np, pandas as pd, ray
    r = np.random.default_rng(0)
    pdf = pd.DataFrame({"a": r.normal(size=50), "b": r.normal(size=50), "y": r.integers(0, 2, 50)})
    ds = ray.data.from_pandas(pdf)
    with pytest.raises(ValueError, match="features: no column 'bb' in the dataset .did you mean 'b'"):
        ray_engine.RayLoader(ds, "y", features=["a", "bb"])
    with pytest.raises(ValueError, match="features holds the target column 'y'.*drop 'y' from features"):
        ray_engine.RayLoader(ds, "y", features=["a", "y"])
    with pytest.raises(ValueError, match="target column 'yy' not in the dataset .did you mean 'y'"):
        ray_engine.RayLoader(ds, "yy")
    text = ray.data.from_pandas(pdf.assign(s="x"))
    with pytest.raises(ValueError, match=r"column\(s\) 's' \(string\).*drop_columns\(\['s'\]\)"):
        ray_engine.RayLoader(text, "y")
    # not a feature, but Ray makes every column of a batch a tensor (torch's TypeError at the first batch)
    with pytest.raises(ValueError, match="'s'"): ray_engine.RayLoader(text, "y", features=["a"])
    xb, yb = next(iter(ray_engine.RayLoader(text.drop_columns(["s"]), "y", features=["b"], batch_size=50)))
    assert torch.equal(xb[:, 0], torch.tensor(pdf.b.to_numpy(), dtype=torch.float32))
    assert torch.equal(yb, torch.tensor(pdf.y.to_numpy()))
    # nulls (a column some files lack, a null label) reach a batch as NaN: named, not a NaN loss at step 1 (probe 13)
    holes = ray.data.from_pandas(pdf.assign(b=pdf.b.where(pdf.index != 7), y=pdf.y.where(pdf.index != 9)))
    with pytest.raises(ValueError, match=r"column\(s\) 'y', 'b' of the Ray Dataset hold missing values"):
        next(iter(ray_engine.RayLoader(holes, "y", batch_size=50)))


def test_a_ray_search_judges_trials_as_tb_search_and_its_timeout_lets_running_trials_finish(tmp_path):
    """Probe 71, r_1/r_2/r_6/r_7: under Ray a diverged run was COMPLETE with its best before diverging, a numpy
    number failed its trial, a failed trial had no reason, and the timeout killed the running trials. Both trials
    here start before the timeout and run past it: they finish, judged as tb.search judges them; no third starts."""
    timeout = 20  # both trials start well within it, even on a loaded machine (a trial starts in 2-6 s)
    after = time.time() + timeout + 3  # past the search's deadline (counted from a moment after this)
    X, y = data()

    def objective(config):
        import numpy as np
        while time.time() < after: time.sleep(0.2)  # running when the timeout passes
        if config.trial.number == 1: return np.float32(config["lr"])

        class Blow(tb.Callback):  # the weights go NaN after the first validation: the next step's loss is NaN
            def after_validate(self, state): next(state.model.parameters()).data.fill_(float("nan"))
        return tb.fit(model(), tb.TensorLoader(X[:192], y[:192], batch_size=32),
                      tb.TensorLoader(X[192:], y[192:], batch_size=64), loss_fn=nn.functional.cross_entropy,
                      live=False, callbacks=[Blow()], config=tb.TrainConfig(epochs=3, device="cpu"))

    with pytest.warns(UserWarning, match=r"search: 1 of 2 trials failed: trial 0 \(lr="):
        res = ray_engine.search(objective, {"lr": ("log", 1e-3, 1e-1)}, 3, max_concurrent=2, timeout=timeout,
                                storage=str(tmp_path / "s.db"), study_name="t", grace_period=3, live=False)
    diverged, number = res.study.trials
    assert [t.state.name for t in res.study.trials] == ["FAIL", "COMPLETE"]  # the third never started
    assert diverged.user_attrs["stopped"] == "nonfinite" and "nonfinite" in diverged.user_attrs["finding"]
    assert diverged.user_attrs["fail_reason"].startswith("trial 0 (lr=")
    assert res.stopped == "completed" and res.best_trial == 1
    assert number.value == pytest.approx(number.params["lr"]) and "stopped" not in number.user_attrs


def test_a_ctrl_c_stops_a_ray_search_as_interrupted(tmp_path):
    """Probe 71, r_3: Ctrl-C during a Ray search returned stopped == 'completed' (Tune's own handler ended it
    silently). It is 'interrupted', as under tb.search: the finished trial kept, the stopped one FAIL, not failed."""
    db, never = tmp_path / "s.db", str(tmp_path / "never")

    def objective(config):
        deadline = time.monotonic() + 120
        while config.trial.number > 0 and not os.path.exists(never) and time.monotonic() < deadline:
            time.sleep(0.2)  # until the Ctrl-C stops it
        return config["lr"]

    def ctrl_c_once_trial_0_completed():
        import optuna
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try: first = optuna.load_study(study_name="c", storage=f"sqlite:///{db}").trials[:1]
            except Exception: first = []  # not made yet
            if first and first[0].state.name == "COMPLETE": break
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c_once_trial_0_completed, daemon=True).start()
    tune_log, told = logging.getLogger("ray.tune.tune"), Told()
    tune_log.addHandler(told)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            res = ray_engine.search(objective, {"lr": ("log", 1e-3, 1e-1)}, 4, max_concurrent=2, storage=str(db),
                                    study_name="c", live=False)
    finally: tune_log.removeHandler(told)
    states = [t.state.name for t in res.study.trials]
    assert res.stopped == "interrupted" and res.best_trial == 0, (res.stopped, states)
    assert states[0] == "COMPLETE" and set(states[1:]) <= {"FAIL"}, states  # none left RUNNING
    assert not [w for w in said if "failed" in str(w.message)], [str(w.message) for w in said]
    # probe 101, r_7: Tune's 'Tuner.restore(path=...)' named a folder the search removes; the study continues it
    assert not [m for m in told.messages if "Tuner.restore" in m], told.messages
    assert (f"search interrupted: study 'c' in {db} keeps its finished trials; continue it with "
            f"search(..., study_name='c', storage={str(db)!r}, engine='ray')") in [str(w.message) for w in said]


class Told(logging.Handler):
    "The messages a logger passed on."
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record): self.messages.append(record.getMessage())


def test_a_ctrl_c_inside_a_ray_trial_ends_the_search_as_under_tb_search(tmp_path):
    """Probe 78, r_2: an objective's own KeyboardInterrupt (trial 1) marked the search 'interrupted', yet Tune
    started trials 2 and 3 and one of them became the best. Now it ends the search: no trial starts after it, the
    trial running beside it is stopped (FAIL, not counted as failed), as tb.search stops at the interrupt."""
    started = tmp_path / "started"
    started.mkdir()

    def objective(config):
        number = config.trial.number
        (started / str(number)).touch()
        if number == 1: raise KeyboardInterrupt
        deadline = time.monotonic() + 120
        while number == 0 and time.monotonic() < deadline: time.sleep(0.2)  # running when trial 1 is pressed
        return config["x"]

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        res = ray_engine.search(objective, {"x": (0.0, 1.0)}, 4, max_concurrent=2, storage=str(tmp_path / "s.db"),
                                study_name="k", live=False)
    states = [t.state.name for t in res.study.trials]
    assert res.stopped == "interrupted" and res.best_trial == -1, (res.stopped, states)
    # trial 0 may be stopped before its objective began; trials 2 and 3 never start
    assert states == ["FAIL", "FAIL"] and {"1"} <= {p.name for p in started.iterdir()} <= {"0", "1"}
    assert [str(w.message) for w in said if "search" in str(w.message)] == [
        f"search interrupted: study 'k' in {tmp_path / 's.db'} keeps its finished trials; continue it with "
        f"search(..., study_name='k', storage={str(tmp_path / 's.db')!r}, engine='ray')",
        "search interrupted before any trial of study 'k' completed: {'FAIL': 2}"]
