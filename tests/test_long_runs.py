"""A long run with a checkpoint folder stays linear: the history goes into last.pt/best.pt as tensors
(buffers, not a pickled object per record), run.json's history is written without a json_safe walk per
record, and run.json snapshots are skipped while writing them would take more than ~5% of the time."""
import io, json, math, warnings

import numpy as np
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.checkpoint import SNAPSHOT_ALWAYS, SNAPSHOT_FREE, SNAPSHOT_SPACING, Checkpointer, read_checkpoint
from trainbook.run import RUNNING, history_json, json_safe, run_record_bytes
from helpers import blobs, mlp

ODD = (math.nan, math.inf, -math.inf)


def history(n=3000):
    "Records of several splits and names, non-finite values among them, more than the arrays' first size."
    h = tb.History()
    for s in range(n):
        h.append(s, s // 7, "train", "loss", ODD[s % 3] if s % 97 == 0 else 1.0 / (s + 1))
        if s % 5 == 0: h.append(s, s // 7, "valid", "accuracy", s / n)
    return h


def same_rows(a, b):
    "Equal records, NaN equal to NaN."
    same = lambda u, v: u == v or (math.isnan(u) and math.isnan(v))
    return len(a) == len(b) and all(x[:4] == y[:4] and same(x[4], y[4]) for x, y in zip(a, b))


def saved_and_loaded(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


def test_state_dict_is_tensors_that_round_trip_through_a_weights_only_load():
    h = history()
    state = h.state_dict()
    assert {k: v.dtype for k, v in state.items() if k != "vocab"} == {
        "step": torch.int64, "epoch": torch.int64, "split": torch.int32, "name": torch.int32,
        "value": torch.float64}
    assert state["vocab"] == {"split": ["train", "valid"], "name": ["loss", "accuracy"]}
    back = tb.History()
    back.load_state_dict(saved_and_loaded(state))
    assert same_rows(back.rows(), h.rows())
    assert [type(v) for v in back.rows()[0]] == [int, int, str, str, float]
    assert {str(v) for v in back.value if not math.isfinite(v)} == {"nan", "inf", "-inf"}


def test_state_dict_follows_appends_and_stop_and_a_returned_one_never_changes():
    "The arrays are kept and only new records encoded: later records, a new name and `stop` come out right."
    h = tb.History([(0, 0, "train", "loss", 1.0)])
    first = h.state_dict()
    for s in range(1, 2500): h.append(s, 0, "train", "loss" if s % 2 else "lr", float(s))
    h.append(2500, 1, "test", "f1", 0.5)
    assert first["step"].tolist() == [0] and first["vocab"]["name"] == ["loss"]
    for stop in (None, 1, 1700, -1):
        part = tb.History()
        part.load_state_dict(h.state_dict(stop))
        assert part.rows() == h.rows()[:stop]


def test_an_old_plain_list_state_dict_still_loads():
    "Checkpoints written before held plain lists (and a Flax checkpoint gives numpy arrays back): both load."
    old = {"step": [1, 2], "epoch": [0, 0], "split": ["train", "valid"], "name": ["loss", "loss"],
           "value": [0.5, math.inf]}
    h = tb.History()
    h.load_state_dict(saved_and_loaded(old))
    assert h.rows() == [(1, 0, "train", "loss", 0.5), (2, 0, "valid", "loss", math.inf)]
    flax = {k: np.asarray(v) if isinstance(v, torch.Tensor) else v for k, v in h.state_dict().items()}
    again = tb.History()
    again.load_state_dict(flax)
    assert again.rows() == h.rows()


def fit(folder, epochs=3, callbacks=()):
    X, y = blobs(n=64)
    dl = tb.TensorLoader(X, y, batch_size=16, shuffle=True)
    dv = tb.TensorLoader(X[:16], y[:16], batch_size=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tb.fit(mlp(), dl, dv, loss_fn=nn.functional.cross_entropy, live=False,
                      callbacks=list(callbacks),
                      config=tb.TrainConfig(epochs=epochs, device="cpu", checkpoint_dir=str(folder)))


def test_a_checkpoints_history_is_stored_as_tensors_and_resumes_exactly(tmp_path):
    run = fit(tmp_path)
    for name in ("last.pt", "best.pt"):
        saved = read_checkpoint(tmp_path / name)["history"]
        assert all(isinstance(saved[c], torch.Tensor) for c in tb.History.columns)
        assert isinstance(saved["vocab"]["name"], list)
    h = tb.History()
    h.load_state_dict(read_checkpoint(tmp_path / "last.pt")["history"])
    assert same_rows(h.rows(), run.records.rows()[:len(h)]) and len(h) > 0


def test_run_json_history_is_what_json_safe_wrote(tmp_path):
    "The fast writer gives what the old one (json_safe over every value) gave, odd column types included."
    h = history(500)
    odd = tb.History()  # numpy steps and float32 values (a History loaded from elsewhere): the json_safe path
    odd.load_state_dict({"step": [np.int64(1)], "epoch": [0], "split": ["train"], "name": ["loss"],
                         "value": [np.float32(0.5)]})
    for records in (h, odd, tb.History()):
        expected = json_safe({c: list(records.column(c)) for c in records.columns})
        assert json.loads(json.dumps(history_json(records))) == expected
        run = tb.Run(records=records, config=tb.TrainConfig(), stopped="completed")
        record = json.loads(run_record_bytes(run))
        assert record["history"] == expected and list(record)[:3] == ["format", "version", "stopped"]
    assert json.loads(json.dumps(history_json(h)))["value"][0] == "nan"  # strict JSON: no NaN token


class Clock:
    "A fake clock: each call gives the next time of `times`."
    def __init__(self, *times): self.times = iter(times)
    def __call__(self): return next(self.times)


def written_steps(folder, ck, calls, epoch=SNAPSHOT_ALWAYS):
    "Call write_run for each (step, final) at `epoch`; the step that run.json holds after each call."
    seen = []
    for step, final in calls:
        run = tb.Run(records=tb.History(), config=tb.TrainConfig(), stopped=RUNNING, step=step, epoch=epoch)
        ck.write_run(run, final=final)
        seen.append(json.loads((folder / "run.json").read_text())["step"])
    return seen


def test_snapshots_are_skipped_while_writing_them_would_cost_more_than_a_twentieth(tmp_path):
    "A write timed at 1 s: the next snapshot waits 20 s after it; the first and the final write always go."
    assert SNAPSHOT_SPACING == 20
    ck = Checkpointer(tmp_path, clock=Clock(0, 1,  # step 1: the first snapshot, 1 s to write
                                            10,  # step 2: 9 s after it, skipped
                                            20.5,  # step 3: 19.5 s after, skipped
                                            21, 21.5,  # step 4: 20 s after, written (0.5 s)
                                            30,  # step 5: 8.5 s < 10 s, skipped
                                            31, 40))  # step 6: the final write, at any time
    calls = [(1, False), (2, False), (3, False), (4, False), (5, False), (6, True)]
    assert written_steps(tmp_path, ck, calls) == [1, 1, 1, 4, 4, 6]


def test_snapshots_of_cheap_writes_are_all_written(tmp_path):
    "Writes under SNAPSHOT_FREE (a flat cost) delay no snapshot, however short the epochs; so do rare ones."
    assert SNAPSHOT_FREE == 0.01
    ck = Checkpointer(tmp_path, clock=Clock(0, 0.005, 0.006, 0.011, 0.012, 0.017))  # writes of 5 ms, 1 ms apart
    assert written_steps(tmp_path, ck, [(1, False), (2, False), (3, False)]) == [1, 2, 3]
    ck = Checkpointer(tmp_path, clock=Clock(0, 0.05, 2, 2.05, 4, 4.05))  # writes of 50 ms, 2 s apart
    assert written_steps(tmp_path, ck, [(1, False), (2, False), (3, False)]) == [1, 2, 3]


def test_every_epoch_end_before_snapshot_always_is_written_however_slow_the_machine(tmp_path):
    "Writes timed at 1 s, 1 s apart (a loaded machine): epochs 0-99 are each written; spacing starts at epoch 100."
    assert SNAPSHOT_ALWAYS == 100
    ck = Checkpointer(tmp_path, clock=Clock(*range(12)))
    early = [written_steps(tmp_path, ck, [(step, False)], epoch=SNAPSHOT_ALWAYS - 3 + step)[0] for step in (1, 2)]
    assert early == [1, 2]  # epochs 98 and 99
    assert written_steps(tmp_path, ck, [(3, False)], epoch=SNAPSHOT_ALWAYS) == [2]  # epoch 100: spaced


def test_a_run_folder_loads_as_the_run_that_wrote_it(tmp_path):
    "What a killed run leaves: the first snapshot holds the history so far; the final record equals the run."
    seen = []

    class Look(tb.Callback):
        def after_epoch(self, state):
            if state.epoch == 0: seen.append((tb.Run.load(tmp_path), list(state.history.rows())))

    run = fit(tmp_path, callbacks=[Look()])
    snapshot, rows = seen[0]
    assert snapshot.stopped == RUNNING and same_rows(snapshot.records.rows(), rows)
    loaded = tb.Run.load(tmp_path)
    assert same_rows(loaded.records.rows(), run.records.rows())
    assert (loaded.stopped, loaded.step, loaded.epoch, loaded.best, loaded.best_epoch) == (
        run.stopped, run.step, run.epoch, run.best, run.best_epoch)
    assert [f.kind for f in loaded.findings] == [f.kind for f in run.findings]



KILLED = """
import os, signal, sys, torch
from torch import nn
import trainbook as tb
from trainbook import checkpoint
checkpoint.SNAPSHOT_ALWAYS, checkpoint.SNAPSHOT_FREE, checkpoint.SNAPSHOT_SPACING = 0, 0.0, 1e9  # one snapshot
torch.manual_seed(0)
X, y = torch.randn(96, 4), torch.randint(0, 2, (96,))
model, cfg = nn.Linear(4, 2), tb.TrainConfig(epochs=10, checkpoint_dir=sys.argv[1])
class Kill(tb.Callback):  # killed at the first step of epoch 4: last.pt holds the end of epoch 3
    def after_step(self, state):
        if state.step == 13: os.kill(os.getpid(), signal.SIGKILL)
if sys.argv[2] == "fit":
    tb.fit(model, tb.TensorLoader(X, y, batch_size=32), tb.TensorLoader(X, y, batch_size=48),
           loss_fn=nn.functional.cross_entropy, live=False, callbacks=[Kill()], config=cfg)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with tb.Recorder(cfg, parts={"model": model, "optimizer": opt}, callbacks=[Kill()], live=False) as rec:
    for epoch in range(10):
        for xb, yb in tb.TensorLoader(X, y, batch_size=32):
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
            rec.step(loss.detach())
        rec.validate(nn.functional.cross_entropy(model(X), y).item())
"""


@pytest.mark.parametrize("loop", ["fit", "recorder"])
def test_a_killed_run_whose_snapshots_were_spaced_loads_to_its_last_epoch_from_last_pt(tmp_path, loop):
    """Snapshots spaced (as past SNAPSHOT_ALWAYS on a long run): run.json holds epoch 0 and last.pt epoch 3 when the
    run is killed; the folder loads with its history up to epoch 3."""
    import subprocess, sys
    done = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path), loop], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == -9, done.stderr[-2000:]
    assert json.loads((tmp_path / "run.json").read_text())["epoch"] == 0  # the one snapshot
    run = tb.Run.load(tmp_path)
    assert run.stopped == "killed" and (run.step, run.epoch) == (12, 3)  # 3 steps an epoch, epochs 0-3
    assert [r[1] for r in run.records.rows() if r[2:4] == ("valid", "loss")] == [0, 1, 2, 3]  # each epoch's
    assert "up to step 12 (epoch 3)" in next(f.message for f in run.findings if f.kind == "killed")
