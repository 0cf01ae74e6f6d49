"""Held-out findings on distributed runs, loaders and the Recorder: a validation split over ranks scores every
row once; a misspelt `backend` is refused before torchrun starts; `sys.exit(0)` in a worker is a clean end; a
Recorder loop that calls `set_epoch` resumes exactly. (A Ray launch that times out on the user's Ray:
tests/test_ray.py.)"""
import sys

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainbook as tb
from trainbook.distributed import launch, shard_loader
from trainbook.guard import forget_interrupt


def rows_of(loaders) -> list:
    "Every target value the loaders yield, over all their batches."
    return sorted(v for dl in loaders for *_, yb in dl for v in yb.tolist())


# --- 1. validation over ranks: each row scored once ---------------------------------------------------------

def test_unpadded_shards_read_every_row_exactly_once():
    X, y = torch.randn(65, 3), torch.arange(65)
    padded = [tb.TensorLoader(X, y, batch_size=16, shuffle=True, rank=r, world_size=2) for r in (0, 1)]
    assert len(rows_of(padded)) == 66  # training keeps DistributedSampler's padding: equal steps per rank
    once = [shard_loader(dl, r, 2, pad=False) for r, dl in enumerate(padded)]
    assert rows_of(once) == list(range(65))
    assert [len(dl) for dl in once] == [3, 2]  # 33 and 32 rows: uneven batch counts
    assert padded[0].pad and rows_of(padded) != rows_of(once)  # the user's loader is left as it was
    data = TensorDataset(X, y)
    for shuffle in (False, True):
        halves = [shard_loader(DataLoader(data, batch_size=16, shuffle=shuffle), r, 2, pad=False)
                  for r in (0, 1)]
        for dl in halves: dl.sampler.set_epoch(1)
        assert rows_of(halves) == list(range(65))
        assert [len(dl.sampler) for dl in halves] == [33, 32]


def _score_on_ranks():
    "On each rank: the validation of a fixed model over its unpadded shard of 65 rows, reduced over ranks."
    import torch.distributed as dist
    from trainbook.evaluation import evaluate
    g = torch.Generator().manual_seed(0)
    X = torch.randn(65, 8, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    valid = tb.TensorLoader(X, y, batch_size=16)  # made in the worker: it takes its rank's rows by itself
    shard = shard_loader(valid, dist.get_rank(), dist.get_world_size(), pad=False)
    scored = dict(evaluate(net, shard, nn.functional.cross_entropy, "accuracy"))
    # fit's own validation under DDP (an lr too small to move a weight): the same rows, each once
    run = tb.fit(net, tb.TensorLoader(X, y, batch_size=16), valid, loss_fn=nn.functional.cross_entropy,
                 metrics="accuracy", live=False, config=tb.TrainConfig(epochs=1, lr=1e-30, device="cpu"))
    last = run.metrics().iloc[-1]
    return scored, {"loss": float(last["valid_loss"]), "accuracy": float(last["valid_accuracy"])}


def test_a_validation_over_two_ranks_scores_each_of_its_65_rows_once():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(65, 8, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    one = dict(tb.evaluate(net, tb.TensorLoader(X, y, batch_size=16), nn.functional.cross_entropy,
                           "accuracy"))
    # evaluate, then fit
    for two in launch(_score_on_ranks, nprocs=2, backend="gloo", live=False, timeout=300):
        assert two["accuracy"] == pytest.approx(one["accuracy"], abs=1e-7)  # k/65, not k'/66
        assert two["loss"] == pytest.approx(one["loss"], rel=1e-5)


# --- 3. and 4. torchrun: the backend checked at the door; sys.exit(0) is a clean end ------------------------

def test_a_misspelt_backend_is_refused_before_any_process_starts():
    with pytest.raises(ValueError, match=r"backend must be 'auto' or one of .*gloo.*got 'glo'"):
        launch(lambda: 1, nprocs=2, backend="glo", live=False)


def _rank1_exits_cleanly():
    import torch.distributed as dist
    if dist.get_rank() == 1: sys.exit(0)
    return "rank 0's value"


def test_sys_exit_0_in_a_worker_is_a_clean_end_of_that_rank():
    assert launch(_rank1_exits_cleanly, nprocs=2, backend="gloo", live=False, timeout=300) == "rank 0's value"
    from trainbook.distributed import clean_exit
    assert clean_exit(SystemExit(0)) and clean_exit(SystemExit(None)) and clean_exit(SystemExit())
    assert not clean_exit(SystemExit(1)) and not clean_exit(SystemExit("a message"))
    assert not clean_exit(KeyError())


# --- 5. a Recorder loop that calls set_epoch resumes exactly ------------------------------------------------

def test_set_epoch_of_the_restored_epoch_keeps_the_loaders_position():
    X, y = torch.arange(40.).unsqueeze(1), torch.arange(40)
    dl = tb.TensorLoader(X, y, batch_size=4, shuffle=True, seed=3)
    dl.set_epoch(2)
    whole = [yb.tolist() for _, yb in dl]
    dl.set_epoch(2)
    it = iter(dl)
    for _ in range(4): next(it)
    state = dl.state_dict()
    again = tb.TensorLoader(X, y, batch_size=4, shuffle=True, seed=3)
    again.load_state_dict(state)
    again.set_epoch(2)  # what a loop does at the start of the epoch it resumes
    assert [yb.tolist() for _, yb in again] == whole[4:]
    again.load_state_dict(state)
    again.set_epoch(3)  # another epoch: from its first batch
    assert len([yb for _, yb in again]) == len(dl)


def _recorder_run(model, opt, dl, X, y, folder, epochs, resume=None, kill=None):
    "The any_loop tutorial's loop: set_epoch at each epoch's start, a checkpoint every 3 steps, a Ctrl-C"
    cfg = tb.TrainConfig(epochs=epochs, checkpoint_dir=folder, checkpoint_every=3)
    parts = {"model": model, "optimizer": opt, "loader": dl}
    try:
        with tb.Recorder(cfg, parts=parts, live=False, resume=resume) as rec:
            for epoch in range(rec.state.epoch, epochs):
                dl.set_epoch(epoch)
                for xb, yb in dl:
                    loss = nn.functional.cross_entropy(model(xb), yb)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                    rec.step(loss.detach())
                    if kill and rec.state.step == kill: raise KeyboardInterrupt  # a Ctrl-C inside epoch 1
                with torch.no_grad(): rec.validate(nn.functional.cross_entropy(model(X), y))
                rec.save()
    except KeyboardInterrupt as err:  # outside a notebook the Ctrl-C goes on, its run as err.run
        assert kill and err.run.stopped == "interrupted"
        forget_interrupt()  # (the script would stop here; the test resumes on purpose)
        return err.run
    return rec.finish()


def test_a_recorder_loop_stopped_mid_epoch_resumes_exactly_despite_set_epoch(tmp_path):
    X = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))
    y = (X[:, 0] > 0).long()

    def fresh():
        return tb.TensorLoader(X, y, batch_size=32, shuffle=True)  # 8 batches an epoch

    tb.seed_everything(0)
    w = nn.Linear(8, 2)
    whole = _recorder_run(w, torch.optim.Adam(w.parameters(), 1e-2), fresh(), X, y, tmp_path / "whole", 4)
    tb.seed_everything(0)
    p = nn.Linear(8, 2)
    cut = _recorder_run(p, torch.optim.Adam(p.parameters(), 1e-2), fresh(), X, y, tmp_path / "cut", 4,
                        kill=13)
    assert cut.step == 13
    q = nn.Linear(8, 2)
    resumed = _recorder_run(q, torch.optim.Adam(q.parameters(), 1e-2), fresh(), X, y, tmp_path / "cut", 4,
                            resume=tmp_path / "cut")
    assert resumed.step == whole.step == 32
    assert all(torch.equal(a, b) for a, b in zip(q.state_dict().values(), w.state_dict().values()))


def test_ray_workers_that_can_never_be_placed_are_named_before_any_work():
    "Probe 13, f1: 3 workers on a 2-CPU local Ray (or 2 workers and a dataset) waited silently until the timeout."
    from trainbook.ray_engine import check_resources
    two = {"CPU": 2.0, "memory": 1e9}
    assert check_resources(two, 2, False, None, None) is None
    said = check_resources(two, 3, False, None, None)
    assert said.startswith("num_workers=3 × 1 CPU each needs 3 CPU; this Ray has 2") and "{'CPU': 0.67}" in said
    said = check_resources(two, 2, False, None, {"train": object()})  # Ray Data reads with a free CPU
    assert "and one more for Ray Data to read the datasets" in said and "{'CPU': 0.5}" in said
    assert check_resources(two, 2, False, {"CPU": 0.5}, {"train": object()}) is None
    MaterializedDataset = type("MaterializedDataset", (), {})  # its blocks already made: no read task waits
    assert check_resources(two, 2, False, None, {"train": MaterializedDataset()}) is None
    assert "needs 2 GPU; this Ray has 0" in check_resources(two, 2, True, None, None)


def test_a_launched_fit_with_live_false_still_streams_its_records_to_the_caller(tmp_path, monkeypatch):
    "Probe 13, f7: under torchrun, fit(live=False) attached no stream: launch(history=...) stayed empty."
    import json
    stream = tmp_path / "history.jsonl"
    monkeypatch.setenv("TRAINBOOK_STREAM", str(stream))  # what launch sets for its workers
    x = torch.randn(64, 4)
    dl = tb.TensorLoader(x, (x[:, 0] > 0).long(), batch_size=16)
    run = tb.fit(nn.Linear(4, 2), dl, dl, loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=2, device="cpu"))
    streamed = [tuple(json.loads(line)) for line in stream.read_text().splitlines()]
    assert streamed == [tuple(r) for r in run.records.rows()] and len(streamed) > 10


def test_a_misspelt_launch_option_and_a_bool_nprocs_are_named_before_any_process():
    "Probe 13, f12 and f15: nprocs=True failed inside torchrun; num_worker=1 reached fn after Ray's start-up."
    def job(x, scale=1.0): return x * scale
    with pytest.raises(TypeError, match=r"launch: job\(x, scale=1.0\) cannot be called with these arguments "
                                        r"\(got an unexpected keyword argument 'nproc'\) \(nproc=: did you mean 'nprocs'\?\)"):
        launch(job, 2, nproc=2)
    with pytest.raises(TypeError, match=r"\(num_worker=: did you mean 'num_workers'\?\)"):
        launch(job, 2, engine="ray", num_worker=1)  # refused before Ray is imported or started
    with pytest.raises(ValueError, match="nprocs must be a positive int, got True"):
        launch(job, 2, nprocs=True)


def test_the_ray_search_checks_its_space_as_tb_search_and_fails_trials_left_running():
    "Probe 13, f5 and f10: epochs from a float range failed in every Ray trial; an interrupted search left RUNNING trials."
    import optuna
    from trainbook.ray_engine import search
    from trainbook.tuning import fail_running
    x = torch.randn(32, 4)
    dl = tb.TensorLoader(x, (x[:, 0] > 0).long(), batch_size=16)
    objective = (lambda: nn.Linear(4, 2), dl, dl, nn.functional.cross_entropy, tb.TrainConfig(epochs=2))
    with pytest.raises(ValueError, match=r"space\['epochs'\]: \(1.0, 3.0\) gives epochs=1.0, which TrainConfig refuses"):
        search(objective, {"epochs": (1.0, 3.0)}, 2)  # before Ray starts
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    study.tell(study.ask(), 1.0)
    older, mine = study.ask(), study.ask()  # another search's trial (running elsewhere), and this one's
    assert fail_running(study, lambda t: t.number >= 2) == [2]  # the Ray search's own (from its first trial on)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "RUNNING", "FAIL"]


def test_a_ctrl_c_while_a_local_ray_starts_leaves_none_of_its_processes(monkeypatch):
    "Probe 13, f6: a Ctrl-C inside ray.init left its raylet's agents running, re-parented to init."
    import subprocess
    ray = pytest.importorskip("ray")
    from trainbook import ray_engine
    started = []

    def init_then_ctrl_c(**kwargs):  # Ray has started its processes when the Ctrl-C comes
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]))
        raise KeyboardInterrupt
    monkeypatch.setattr(ray, "init", init_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        ray_engine.init_local(num_cpus=1)
    assert started[0].wait(timeout=30) is not None  # killed, not left running
