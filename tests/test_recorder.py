"""trainbook.recorder: a hand-written loop with a `Recorder` gets what `fit` gives its own loop -- the same history,
the same findings, checkpoints that resume exactly after a Ctrl-C, the trackers -- and the shared pieces behave."""
import numpy as np
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.recorder import Recorder, run_callbacks

from helpers import TIMING, blobs, interrupted, mlp, same_weights

LOSS = nn.functional.cross_entropy


def data(n=256, seed=0):
    X, y = blobs(n, seed=seed)
    return tb.TensorLoader(X[:192], y[:192], batch_size=32, shuffle=True, seed=3), (X[192:], y[192:])


def model_rows(history):
    "The records about the model (not the machine's timings, not the diagnosis's evidence fit's NanGuard adds)."
    from trainbook.run import EVIDENCE
    return [r for r in history.rows() if r[3] not in TIMING and "/" not in r[3] and r[3] != "grad_norm"
            and (r[2], r[3]) not in EVIDENCE]


def hand_written(model, dl_train, valid, cfg, rec_kw=None, stop_at=None, resume=None):
    "A plain torch loop (the kind nanoGPT writes), told to trainbook through a Recorder."
    opt = torch.optim.AdamW(tb.param_groups(model, cfg.weight_decay), lr=cfg.lr)
    try:  # pytest is a plain script: there a Ctrl-C goes on out of the with block, the run as err.run
        with Recorder(cfg, parts={"model": model, "optimizer": opt, "loader": dl_train}, live=False,
                      resume=resume, **(rec_kw or {})) as rec:
            if resume: rec.restore(resume)  # the loader, a part, goes on where the interrupted run stopped
            for epoch in range(rec.state.epoch, cfg.epochs):
                dl_train.set_epoch(epoch)  # keeps the restored position in the epoch being resumed
                for xb, yb in dl_train:
                    if stop_at is not None and rec.state.step == stop_at: raise KeyboardInterrupt
                    loss = LOSS(model(xb), yb)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    rec.step(loss.detach())
                    rec.save()
                model.eval()
                with torch.no_grad(): rec.validate(LOSS(model(valid[0]), valid[1]))
                model.train()
                rec.save()
                if rec.should_stop: break
    except KeyboardInterrupt as err:
        if stop_at is None: raise
        tb.guard.forget_interrupt()  # the run it ended is resumed in this process
        return err.run
    return rec.finish()


def test_a_hand_written_loop_with_a_recorder_has_fits_history(tmp_path):
    cfg = tb.TrainConfig(epochs=3, lr=3e-3, device="cpu", seed=0)
    dl_train, (Xv, yv) = data()
    ran = tb.fit(mlp(seed=1), dl_train, [(Xv, yv)], loss_fn=LOSS, config=cfg, live=False)
    tb.seed_everything(0)
    mine = hand_written(mlp(seed=1), dl_train, (Xv, yv), cfg.replace(checkpoint_dir=str(tmp_path)))
    a, b = model_rows(ran.records), model_rows(mine.records)
    assert [r[:4] for r in a] == [r[:4] for r in b]  # the same records, in the same order
    assert np.allclose([r[4] for r in a], [r[4] for r in b], atol=1e-6, rtol=0)
    assert mine.metrics().columns[:2].tolist() == ["train_loss", "valid_loss"]
    assert tb.Run.load(tmp_path).records.rows() == mine.records.rows()
    # seen: the Recorder's Run said epoch 3 ("4 epochs") where fit's says 2, the last epoch (0-based) it was in
    assert mine.epoch == ran.epoch == 2 and tb.Run.load(tmp_path).epoch == 2
    assert "/ 3 epochs" in mine._repr_html_()


def test_a_planted_overfitting_run_gets_the_same_findings_as_fit(tmp_path):
    X, y = blobs(400, seed=4)
    noise = torch.rand(400, generator=torch.Generator().manual_seed(1)) < 0.25  # a quarter of the labels wrong
    y = torch.where(noise, torch.randint(0, 3, (400,), generator=torch.Generator().manual_seed(2)), y)
    dl_train = tb.TensorLoader(X[:80], y[:80], batch_size=16, shuffle=True, seed=1)  # few rows, a wide net
    cfg = tb.TrainConfig(epochs=60, lr=1e-2, device="cpu")
    big = lambda: mlp(h=256, seed=2)
    ran = tb.fit(big(), dl_train, [(X[80:], y[80:])], loss_fn=LOSS, config=cfg, live=False)
    tb.seed_everything(0)
    mine = hand_written(big(), dl_train, (X[80:], y[80:]), cfg.replace(checkpoint_dir=str(tmp_path)))
    kinds = lambda run: sorted((f.kind, f.severity) for f in run.findings if f.severity != "info")
    assert ("overfitting", "warning") in kinds(ran)
    assert kinds(mine) == kinds(ran)


def test_a_recorder_loop_resumes_exactly_after_ctrl_c(tmp_path):
    cfg = tb.TrainConfig(epochs=3, lr=3e-3, device="cpu", seed=0, checkpoint_dir=str(tmp_path / "a"))
    dl_train, valid = data()
    tb.seed_everything(0)
    whole_model = mlp(seed=1, dropout=0.2)  # dropout: the RNG must come back too
    whole = hand_written(whole_model, dl_train, valid, cfg)
    tb.seed_everything(0)
    cut_model = mlp(seed=1, dropout=0.2)
    cut_cfg = cfg.replace(checkpoint_dir=str(tmp_path / "b"))
    cut = hand_written(cut_model, dl_train, valid, cut_cfg, stop_at=9)  # in the second epoch
    assert cut.stopped == "interrupted" and cut.step == 9 and cut.epoch == 1
    resumed_model = mlp(seed=5, dropout=0.2)  # other weights: all of them come from the checkpoint
    resumed = hand_written(resumed_model, dl_train, valid, cut_cfg, resume=tmp_path / "b")
    assert resumed.step == whole.step and same_weights(resumed_model, whole_model)
    assert resumed.epoch == whole.epoch == 2
    assert [r[:4] for r in model_rows(resumed.records)] == [r[:4] for r in model_rows(whole.records)]


def test_run_epoch_is_the_last_epoch_the_run_was_in():
    "Seen: 3 epochs gave Run.epoch 3 (fit's: 2): closing an epoch moves the recorder on to the next one."
    cfg = tb.TrainConfig(monitor="train_loss")
    with Recorder(cfg, live=False, validates=False) as rec:
        rec.step(1.0)
        rec.end_epoch()
        assert rec.state.epoch == 1  # where a loop goes on: range(rec.state.epoch, epochs)
    assert rec.run.epoch == 0
    with Recorder(cfg, live=False, validates=False) as rec:
        rec.step(1.0)
        rec.end_epoch()
        rec.step(0.5)  # a step of epoch 1: the run ended in it
    assert rec.run.epoch == 1
    with Recorder(live=False) as rec:
        rec.validate(0.5, epoch=5)
    assert rec.run.epoch == 5
    with Recorder(tb.TrainConfig(patience=2), live=False) as rec:  # seen: 47 evaluations gave epoch 47
        for epoch in range(10):
            rec.step(1.0)
            rec.validate(1.0)
            if rec.should_stop: break
    assert rec.run.stopped == "early_stopping" and rec.run.epoch == epoch == 2


def test_tensor_values_are_read_in_batches_and_a_nonfinite_loss_stops():
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), live=False, validates=False, read_every=10)
    for i in range(5): rec.step(torch.tensor(1.0 / (i + 1)))
    assert len(rec.history) == 0  # nothing read yet: no per-step device sync
    rec.step(torch.tensor(float("nan")))
    rec.end_epoch()
    assert rec.history.series("loss").iloc[-1] != rec.history.series("loss").iloc[-1]  # NaN recorded
    assert rec.should_stop and rec.stop_reason == "nonfinite"
    run = rec.finish()
    assert run.stopped == "nonfinite" and any(f.kind == "nonfinite" for f in run.findings)


def test_bad_input_is_refused_at_the_door():
    with pytest.raises(TypeError, match=r"parts\['model'\] is a int"):
        Recorder(parts={"model": 3})
    with pytest.raises(ValueError, match="monitor"):
        Recorder(tb.TrainConfig(monitor="valid_f1"), metrics=["accuracy"])
    with pytest.raises(ValueError, match="read_every"):
        Recorder(read_every=0)


def test_a_value_that_cannot_be_recorded_is_refused_at_its_call():
    "Not later, at the batched read of some other step: named, and the step not counted."
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), live=False, validates=False, read_every=10)
    with pytest.raises(ValueError, match=r"Recorder.step: loss must be one value, got a tensor of shape \(3,\)"):
        rec.step(torch.ones(3))
    with pytest.raises(TypeError, match="Recorder.step: accuracy must be a number"): rec.step(0.5, accuracy="high")
    with pytest.raises(TypeError, match="loss is required"): rec.step(None)
    rec.step(torch.tensor(0.5))
    with pytest.raises(TypeError, match="Recorder.validate: loss must be a number"): rec.validate("low")
    rec.end_epoch()
    assert rec.state.step == 1 and list(rec.history.series("loss")) == [0.5]
    run = rec.finish()
    with pytest.raises(RuntimeError, match="run has ended"): rec.step(0.4)
    assert rec.finish() is run and run.step == 1


def test_callbacks_whose_state_cannot_be_checkpointed_fail_before_step_one():
    class KeepsNumpy(tb.Callback):
        def state_dict(self): return {"best": np.float64(0.5)}
    with pytest.raises(TypeError, match="could not be resumed"):
        run_callbacks([KeepsNumpy()], live=False)
    steps = []

    class Steps(tb.Callback):
        def after_step(self, state): steps.append(state.step)
    X, y = blobs(64)
    with pytest.raises(TypeError, match=r"state_dict\(\): \d+:KeepsNumpy.best is a numpy.float64"):
        tb.fit(mlp(), [(X, y)], loss_fn=LOSS, live=False, callbacks=[Steps(), KeepsNumpy()],
               config=tb.TrainConfig(epochs=1, device="cpu", monitor="train_loss"))
    assert steps == []


def test_parts_whose_state_cannot_be_checkpointed_fail_before_step_one(tmp_path):
    "Seen: numpy in a part's state_dict() was refused at the first checkpoint, after an epoch of steps."
    class NumpyModel:  # a numpy loop's model: torch.load(weights_only=True) refuses its state
        def __init__(self): self.w = np.zeros(3)
        def state_dict(self): return {"w": self.w}
        def load_state_dict(self, state): self.w = np.asarray(state["w"])
    folder = tmp_path / "run"
    refused = r"part's state_dict\(\): model.w is a numpy.ndarray.*before the first step"
    with pytest.raises(TypeError, match=refused):
        Recorder(tb.TrainConfig(checkpoint_dir=str(folder)), parts={"model": NumpyModel()}, live=False)
    assert not folder.exists()  # refused before the folder was claimed
    with Recorder(parts={"model": NumpyModel()}, live=False) as rec:  # no checkpoints: nothing to refuse
        rec.step(1.0)
        rec.validate(0.5)
    assert rec.run.stopped == "completed"


def test_ctrl_c_inside_after_validate_then_resume_writes_no_row_twice(tmp_path):
    X, y = blobs(192)
    cfg = tb.TrainConfig(epochs=3, lr=1e-2, device="cpu", checkpoint_dir=str(tmp_path))

    class CtrlCInValidation(tb.Callback):
        def after_validate(self, state):
            if state.epoch == 1: raise KeyboardInterrupt
    dl = tb.TensorLoader(X[:128], y[:128], batch_size=32)
    cut = interrupted(tb.fit, mlp(), dl, [(X[128:], y[128:])], loss_fn=LOSS, config=cfg, live=False,
                      callbacks=[CtrlCInValidation()])
    assert cut.stopped == "interrupted"
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(mlp(), dl, [(X[128:], y[128:])], loss_fn=LOSS, config=cfg, live=False, resume=tmp_path)
    whole = tb.fit(mlp(), dl, [(X[128:], y[128:])], loss_fn=LOSS, live=False,
                   config=cfg.replace(checkpoint_dir=str(tmp_path / "whole")))
    keys = [r[:4] for r in resumed.records.rows()]
    assert len(keys) == len(set(keys))  # no (step, epoch, split, name) twice
    assert [r[:4] for r in model_rows(resumed.records)] == [r[:4] for r in model_rows(whole.records)]
    assert np.allclose([r[4] for r in model_rows(resumed.records)], [r[4] for r in model_rows(whole.records)])


# --- the probe's findings: reads every read_every steps, last.pt kept, a refused resume, strings and flags ---

def first_stop(rec, steps=400, nan_at=3):
    "The step at which `should_stop` first turns True, with a NaN tensor loss at step `nan_at`."
    for s in range(1, steps):
        rec.step(torch.tensor(float("nan")) if s == nan_at else torch.tensor(0.5))
        if rec.should_stop: return s
    return None


def test_a_nan_tensor_loss_is_seen_within_read_every_steps():
    "read_every counts steps (as documented), not pending values: a NaN at step 3 stopped the run at step 200."
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), live=False, validates=False)
    assert rec.read_every == 50 and first_stop(rec) == 50
    assert rec.stop_reason == "nonfinite" and rec.finish().stopped == "nonfinite"
    m = nn.Linear(2, 1)  # an optimizer part adds the lr to each step's values: the same steps between reads
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), parts={"model": m, "optimizer": torch.optim.SGD(m.parameters(), 0.1)},
                   live=False, validates=False, read_every=10)
    assert first_stop(rec) == 10
    rec.finish()
    # still one read per read_every steps: nothing is read before
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), live=False, validates=False, read_every=10)
    for _ in range(9): rec.step(torch.tensor(0.5))
    assert len(rec.history) == 0
    rec.step(torch.tensor(0.5))
    assert len(rec.history.series("loss")) == 10
    rec.finish()


# One hand-written loop, run whole, killed (os._exit: no finish, no `with` exit) and resumed: the loader is a part, so
# a resume continues at its batch; dropout draws from the RNG, which comes back too
LOOP = r"""
import os, torch
from torch import nn
import trainbook as tb

def train(folder, kill_at=None, resume=None):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(64, 4, generator=g)
    dl = tb.TensorLoader(X, (X[:, 0] > 0).long(), batch_size=8, shuffle=True, seed=2)
    cfg = tb.TrainConfig(epochs=3, monitor="train_loss", checkpoint_dir=str(folder), checkpoint_every=5)
    rec = tb.Recorder(cfg, parts={"model": model, "optimizer": opt, "loader": dl}, live=False, validates=False,
                      resume=resume)
    for epoch in range(rec.state.epoch, cfg.epochs):
        for xb, yb in dl:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.step(loss.detach())
            if rec.state.step == kill_at: os._exit(3)
        rec.end_epoch()
    return model, rec.finish()
"""


def test_checkpoint_every_writes_last_pt_and_a_killed_recorder_run_resumes_from_it(tmp_path):
    "TrainConfig(checkpoint_every=...) was ignored: no last.pt unless the loop saved one, so a killed run was lost."
    import subprocess, sys
    space = {}
    exec(LOOP, space)
    whole_model, whole = space["train"](tmp_path / "whole")
    assert whole.stopped == "completed" and whole.step == 24
    assert torch.load(tmp_path / "whole" / "last.pt", weights_only=True)["step"] == 24  # written at the end too
    killed = tmp_path / "killed"
    code = LOOP + f"\ntrain({str(killed)!r}, kill_at=13)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr[-2000:]
    ckpt = torch.load(killed / "last.pt", weights_only=True)
    assert (ckpt["step"], ckpt["epoch"], ckpt["epoch_steps"]) == (10, 1, 2)  # every 5 steps: the last at 10
    with pytest.warns(UserWarning, match="which is gone"):  # the killed process's lock is taken over
        resumed_model, resumed = space["train"](killed, resume=killed)
    assert resumed.stopped == "completed" and resumed.step == 24
    assert same_weights(resumed_model, whole_model)
    assert [r[:4] for r in model_rows(resumed.records)] == [r[:4] for r in model_rows(whole.records)]


def test_the_last_good_last_pt_is_kept_after_a_nan_and_after_ctrl_c(tmp_path):
    m = nn.Linear(2, 1)
    parts = {"model": m, "optimizer": torch.optim.SGD(m.parameters(), 0.1)}
    cfg = tb.TrainConfig(monitor="train_loss", checkpoint_dir=str(tmp_path / "nan"), checkpoint_every=4)
    with Recorder(cfg, parts=parts, live=False, validates=False, read_every=100) as rec:
        for s in range(1, 10):
            rec.step(torch.tensor(float("nan") if s == 6 else 0.5))  # read at step 8, when last.pt is due
    assert rec.run.stopped == "nonfinite"
    assert torch.load(tmp_path / "nan" / "last.pt", weights_only=True)["step"] == 4  # not 8, not 9
    with pytest.raises(KeyboardInterrupt) as cut:  # (in a plain script, as pytest is, the Ctrl-C goes on)
        with Recorder(cfg.replace(checkpoint_dir=str(tmp_path / "cut")), parts=parts, live=False,
                      validates=False) as rec:
            for s in range(1, 8):
                rec.step(0.5)
            raise KeyboardInterrupt  # may come between the optimizer's step and rec.step: not a state to write
    assert rec.run.stopped == "interrupted" and cut.value.run is rec.run
    assert torch.load(tmp_path / "cut" / "last.pt", weights_only=True)["step"] == 4


def test_a_refused_resume_frees_the_folder_and_names_the_model_that_does_not_match(tmp_path):
    "The lock stayed with this process (the next fit there: RunFolderBusy), and a raw 'Missing key(s)' came out."
    from trainbook.checkpoint import folder_writer
    X, y = blobs(64)
    cfg = tb.TrainConfig(epochs=1, lr=1e-2, device="cpu", checkpoint_dir=str(tmp_path))
    ran = tb.fit(mlp(), [(X, y)], [(X, y)], loss_fn=LOSS, config=cfg, live=False)
    wrong = nn.Linear(8, 3)
    with pytest.raises(ValueError, match=r"cannot be resumed exactly: the model has no 0\.weight"):
        Recorder(cfg, parts={"model": wrong, "optimizer": torch.optim.AdamW(wrong.parameters())}, live=False,
                 resume=tmp_path)
    assert folder_writer(tmp_path) is None
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "last.pt").write_bytes((tmp_path / "last.pt").read_bytes()[:100])
    with pytest.raises(tb.CheckpointError, match="truncated"):
        Recorder(cfg.replace(checkpoint_dir=str(tmp_path / "broken")), parts={"model": mlp()}, live=False,
                 resume=tmp_path / "broken")
    assert folder_writer(tmp_path / "broken") is None
    bare = tmp_path / "bare"  # a run that kept no model: refused only when the parts are loaded, the folder claimed
    with Recorder(tb.TrainConfig(checkpoint_dir=str(bare), monitor="train_loss"), live=False, validates=False) as rec:
        rec.step(0.5)
    with pytest.raises(KeyError, match="holds no 'model' state"):
        Recorder(tb.TrainConfig(checkpoint_dir=str(bare), monitor="train_loss"), parts={"model": mlp()}, live=False,
                 validates=False, resume=bare)
    assert folder_writer(bare) is None
    resumed = tb.fit(mlp(), [(X, y)], [(X, y)], loss_fn=LOSS, config=cfg.replace(epochs=2), live=False,
                     resume=tmp_path)  # the folder is free
    assert resumed.step == ran.step + 1


@pytest.mark.parametrize("value", ["0.5", b"0.5", True, np.bool_(False), torch.tensor(True), np.array("0.5")])
def test_strings_and_flags_are_not_numbers(value):
    "float() takes '0.5' and True, so Recorder.step recorded them as losses."
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), live=False, validates=False)
    with pytest.raises(TypeError, match="Recorder.step: loss must be a number or a one-value tensor, got"):
        rec.step(value)
    with pytest.raises(TypeError, match="Recorder.step: accuracy must be a number"): rec.step(0.5, accuracy=value)
    with pytest.raises(TypeError, match="Recorder.validate: f1 must be a number"): rec.validate(0.3, f1=value)
    rec.step(np.float32(0.25))  # numbers of every kind still are
    rec.step(torch.tensor([0.5]), accuracy=np.array(0.75), n=3)
    rec.end_epoch()
    assert rec.state.step == 2 and list(rec.history.series("loss")) == [0.25, 0.5]
    rec.finish()


def test_epochs_given_to_validate_only_go_forward_and_are_ints():
    "Seen: validate(epoch=5) then validate(epoch=2) was taken: the history's epochs went backwards."
    with Recorder(live=False) as rec:
        rec.step(1.0)
        rec.validate(0.9, epoch=5)
        with pytest.raises(ValueError, match="epoch=2 is not after epoch 5"):
            rec.validate(0.8, epoch=2)
        with pytest.raises(ValueError, match="non-negative int"):
            rec.end_epoch(epoch=6.0)
        with pytest.raises(ValueError, match="epoch=5 is not after epoch 5"):  # it replaced epoch 5's records
            rec.validate(0.7, epoch=5)
        rec.step(1.0)
        rec.validate(0.6)  # counted on from the last one
    assert [r[1] for r in rec.run.records.rows() if r[2:4] == ("valid", "loss")] == [5, 6]


def test_a_validation_without_the_monitored_value_and_a_reserved_name_are_refused():
    "Seen: validate(accuracy=...) under monitor valid_loss ran 8 epochs with patience 2: early stopping never acted."
    with Recorder(tb.TrainConfig(patience=2), live=False) as rec:
        rec.step(1.0)
        with pytest.raises(ValueError, match="not 'loss', which early stopping.*monitor='valid_accuracy'"):
            rec.validate(accuracy=0.5)
        with pytest.raises(ValueError, match="epoch_loss is a train record the Recorder writes itself"):
            rec.step(0.7, epoch_loss=99.0)  # it made two epoch_loss rows for one epoch
        rec.validate(0.4, accuracy=0.5)
    assert rec.run.records.series("epoch_loss").tolist() == [1.0]
    with Recorder(tb.TrainConfig(monitor="valid_accuracy", mode="max", patience=1), metrics=["accuracy"],
                  live=False) as rec:
        for acc in (0.5, 0.4, 0.3):
            rec.step(1.0)
            rec.validate(accuracy=acc)  # metrics only: fine when the monitor is one of them
            if rec.should_stop: break
    assert rec.run.stopped == "early_stopping"


def test_a_recorder_never_finished_is_named_when_the_same_process_resumes_its_folder(tmp_path):
    "Seen: 'being written by process N ... Stop that run first', N being the user's own kernel, no way to stop it."
    from trainbook.checkpoint import folder_writer
    cfg = tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path), monitor="train_loss")
    left = Recorder(cfg, live=False, validates=False)  # its loop raised before finish(), outside a `with` block
    left.step(0.5)
    left.end_epoch()
    with pytest.raises(tb.RunFolderBusy, match=r"which is this process: a Recorder there was never finished") as e:
        Recorder(cfg, live=False, validates=False, resume=tmp_path)
    assert f"tb.release_run_dir({str(tmp_path)!r})" in str(e.value)
    tb.release_run_dir(tmp_path)  # what the message says: the folder is free again
    with Recorder(cfg, live=False, validates=False, resume=tmp_path) as rec:
        rec.step(0.4)
        holder = folder_writer(tmp_path)
        # seen: the left Recorder, finished now, wrote its run.json over this run's and freed this run's lock
        with pytest.raises(tb.RunFolderBusy, match=r"was freed .* this run does not write its .* there"):
            left.finish()
        assert folder_writer(tmp_path) == holder  # the running one keeps its folder
    assert rec.run.step == 2 and rec.run.run_dir == tmp_path
    assert tb.Run.load(tmp_path).step == 2 and folder_writer(tmp_path) is None


def test_a_resume_from_a_checkpoint_another_kind_of_run_wrote_says_so(tmp_path):
    "Seen: fit(resume=<a Recorder's run folder>) and Recorder(resume=<bare weights>) ended in a bare KeyError."
    from trainbook.checkpoint import folder_writer
    X, y = blobs(64)
    mine = tmp_path / "mine"
    with Recorder(tb.TrainConfig(checkpoint_dir=str(mine), monitor="train_loss"), parts={"model": mlp()},
                  live=False, validates=False) as rec:
        rec.step(0.5)
        rec.end_epoch()
    cfg = tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=str(mine))
    with pytest.raises(tb.CheckpointError, match=r"no 'batch_idx' entry.*written by a Recorder .*load_checkpoint"):
        tb.fit(mlp(), [(X, y)], [(X, y)], loss_fn=LOSS, config=cfg, live=False, resume=mine)
    tb.save_checkpoint(tmp_path / "weights.pt", model=mlp())
    with pytest.raises(tb.CheckpointError, match=r"no 'step' entry.*another kind of run \(entries: format"):
        Recorder(tb.TrainConfig(checkpoint_dir=str(tmp_path / "new")), parts={"model": mlp()}, live=False,
                 resume=tmp_path / "weights.pt")
    assert folder_writer(tmp_path / "new") is None and folder_writer(mine) is None


def test_a_recorder_that_stops_on_the_training_loss_in_place_of_valid_loss_says_so():
    "F18 in a hand-written loop: validates=False with patience under monitor 'valid_loss' follows train_loss."
    with Recorder(tb.TrainConfig(patience=1), live=False, validates=False) as rec:
        for loss in (1.0, 1.0, 1.0):
            rec.step(loss)
            rec.end_epoch()
            if rec.should_stop: break
    assert rec.run.stopped == "early_stopping"
    assert [f.data for f in rec.run.findings if f.kind == "monitor_fallback"] == [
        {"monitor": "valid_loss", "follows": "train_loss"}]


def test_recorder_argument_mistakes_are_named(tmp_path):
    "Probe 11: metrics='accuracy' was split into letters, parts=[model] and live='yes' were not named."
    rec = tb.Recorder(tb.TrainConfig(monitor="valid_accuracy", mode="max"), live=False, metrics="accuracy")
    rec.step(1.0)
    rec.validate(0.5, accuracy=0.7)
    assert rec.finish().best == 0.7
    with pytest.raises(TypeError, match=r"parts must be a dict of name -> object with state_dict\(\)"):
        tb.Recorder(live=False, parts=[torch.nn.Linear(2, 2)])
    with pytest.raises(ValueError, match=r"live must be 'auto', True or False"):
        tb.Recorder(live="yes")


def test_a_resume_with_nowhere_to_load_the_model_is_refused(tmp_path):
    "Probe 11: a Recorder resumed without parts= came back at its step with the fresh model's weights, in silence."
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tb.Recorder(tb.TrainConfig(checkpoint_dir=str(tmp_path)), parts={"model": model, "optimizer": opt},
                     live=False) as rec:
        rec.step(1.0)
        rec.validate(0.5)
    with pytest.raises(tb.CheckpointError, match=r"holds the state of the model and the optimizer, and this run "
                                                 r"has no model or optimizer to load it into"):
        tb.Recorder(tb.TrainConfig(), checkpoint_dir=str(tmp_path), resume=str(tmp_path), live=False)


def test_patience_zero_stops_at_the_first_evaluation_without_improvement_not_at_the_first_one():
    "Seen: TrainConfig(patience=0) stopped every run after its first (improving) evaluation."
    from trainbook.recorder import EarlyStopping
    es = EarlyStopping("valid_loss", "min", patience=0)
    for step, value in enumerate([3.0, 2.0, 1.0], 1):
        es.update(value, step, 0)
        assert not es.should_stop  # each one improved
    es.update(1.5, 4, 0)
    assert es.should_stop and es.best == 1.0


@pytest.mark.parametrize("stop", ["early_stopping", "max_steps"])
def test_a_recorder_run_left_after_its_stop_stays_stopped_when_resumed(tmp_path, stop):
    "Probe 54: killed after early stopping fired (or at max_steps), before finish(): the resume trained on."
    cfg = tb.TrainConfig(epochs=8, checkpoint_dir=str(tmp_path), **({"patience": 1} if stop == "early_stopping"
                                                                  else {"max_steps": 3}))
    left = Recorder(cfg, live=False)
    for step, valid in enumerate([0.5, 0.6, 0.7], 1):  # the valid loss rises: early stopping after the second
        left.step(1.0 / step)
        if not left.should_stop: left.validate(valid)
        left.save()
        if left.should_stop: break
    assert left.stop_reason == stop
    tb.release_run_dir(tmp_path)  # as a killed process's lock is taken over: left is never finished
    with Recorder(cfg, live=False, resume=tmp_path) as rec:
        assert rec.should_stop and rec.stop_reason == stop
    assert rec.run.stopped == stop and rec.run.step == left.state.step


def test_a_recorder_run_killed_in_its_second_epoch_names_its_last_pt_and_how_to_resume(tmp_path):
    "Probe 59: its first run.json comes just before its epoch-end last.pt, so a kill after it read last_path=None."
    import subprocess, sys
    killed = tmp_path / "killed"
    out = subprocess.run([sys.executable, "-c", LOOP + f"\ntrain({str(killed)!r}, kill_at=9)\n"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr[-2000:]
    run = tb.Run.load(killed)
    assert (run.stopped, run.step, run.last_path) == ("killed", 8, killed / "last.pt")
    advice = [f for f in run.findings if f.kind == "killed"][0].advice
    assert advice == f"continue it with tb.Recorder(..., resume={str(killed / 'last.pt')!r}) around the same loop"


@pytest.mark.parametrize("how", ["end_epoch", "validate"])
def test_an_epoch_closed_twice_at_one_step_counts_once_for_early_stopping(how):
    """Probe 65: a loop that closes an epoch twice with no step between (a helper that closes it too, a second
    validation) counted the repeat as an evaluation without improvement: patience=1 stopped at step 16 of 64."""
    dl, (Xv, yv) = data()
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(tb.TrainConfig(epochs=4, patience=1), parts={"model": model, "optimizer": opt}, live=False,
                  validates=how == "validate") as rec:
        for _ in range(4):
            one_epoch(rec, model, opt, dl)
            for _ in range(2):
                if how == "validate":
                    with torch.no_grad(): rec.validate(LOSS(model(Xv), yv))
                else: rec.end_epoch()
            if rec.should_stop: break
    assert rec.run.step == 4 * len(dl) and rec.run.stopped == "completed"


class NumpyModel:
    "A model that is no torch module: its state a list (a JAX or numpy user's)."
    def __init__(self): self.w = [0.0, 0.0]
    def state_dict(self): return {"w": list(self.w)}
    def load_state_dict(self, state): self.w = list(state["w"])


class NumpySGD:
    "An optimizer without param_groups."
    def __init__(self, lr): self.lr = lr
    def state_dict(self): return {"lr": self.lr}
    def load_state_dict(self, state): self.lr = state["lr"]


def test_a_model_and_optimizer_that_are_not_torch_objects_checkpoint_and_resume(tmp_path):
    """Probe 65: a numpy model under parts['model'] was saved but its resume raised (torch's strict= passed to its
    load_state_dict); a numpy optimizer under parts['optimizer'] raised AttributeError: 'param_groups'."""
    model, opt = NumpyModel(), NumpySGD(0.1)
    cfg = tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path))
    with Recorder(cfg, parts={"model": model, "optimizer": opt}, live=False, kind="numpy") as rec:
        for s in range(3):
            model.w[0] += 0.1
            rec.step(1.0 / (s + 1))
        rec.validate(0.5)
    again, opt2 = NumpyModel(), NumpySGD(0.5)
    with Recorder(cfg, parts={"model": again, "optimizer": opt2}, live=False, kind="numpy", resume=tmp_path) as rec2:
        pass
    assert again.w[0] == pytest.approx(0.3) and opt2.lr == 0.1 and rec2.state.step == 3


def test_a_loop_that_never_validates_is_told_so():
    """Probe 65: validates=True (the default) and patience=2, but rec.validate never called: the run ended 'completed'
    with no best.pt and no finding."""
    dl, _ = data()
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(tb.TrainConfig(epochs=2, patience=2), parts={"model": model, "optimizer": opt}, live=False) as rec:
        one_epoch(rec, model, opt, dl)
    assert [f.kind for f in rec.run.findings if f.severity == "warning"] == ["monitor_never_recorded"]
    assert "rec.validate(...) was never called" in rec.run.findings[-1].message


def one_epoch(rec, model, opt, dl):
    "A plain epoch of optimizer steps, each recorded with its loss (the epoch is not closed)."
    for xb, yb in dl:
        loss = LOSS(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
        rec.step(loss.detach())


def accumulation_case():
    "A model, 12 batches of 16 rows an epoch, and its SGD optimizer."
    torch.manual_seed(0)
    X, y = blobs(256, seed=0)
    model = mlp()
    return model, tb.TensorLoader(X[:192], y[:192], batch_size=16, shuffle=True, seed=3), \
        torch.optim.SGD(model.parameters(), lr=0.05)


def micro_batch_loop(rec, model, opt, dl, epochs, accumulate, per_micro_batch):
    "A loop with gradient accumulation that records each optimizer step, or (wrongly) each micro-batch."
    for epoch in range(epochs):
        for i, (xb, yb) in enumerate(dl):
            (LOSS(model(xb), yb) / accumulate).backward()
            if (i + 1) % accumulate == 0: opt.step(); opt.zero_grad()
            if per_micro_batch or (i + 1) % accumulate == 0: rec.step(LOSS(model(xb), yb).detach())
        rec.end_epoch()


@pytest.mark.parametrize("accumulate, per_micro_batch, said", [(4, True, True), (4, False, False), (1, True, False)])
def test_steps_recorded_per_micro_batch_are_said(tmp_path, accumulate, per_micro_batch, said):
    "rec.step once per micro-batch, where the optimizer steps every 4: the step count is 4x the optimizer's, said."
    model, dl, opt = accumulation_case()
    cfg = tb.TrainConfig(epochs=6, checkpoint_dir=tmp_path / "run")
    with Recorder(cfg, parts={"model": model, "optimizer": opt}, live=False, validates=False) as rec:
        micro_batch_loop(rec, model, opt, dl, cfg.epochs, accumulate, per_micro_batch)
    kinds = [f.kind for f in rec.run.findings]
    assert ("step_count_mismatch" in kinds) == said, kinds
    # resumed: the steps counted are this process's, not the checkpoint's step as well
    with Recorder(cfg, parts={"model": model, "optimizer": opt}, live=False, validates=False,
                  resume=tmp_path / "run", checkpoint_dir=tmp_path / "more") as more:
        micro_batch_loop(more, model, opt, dl, 1, 1, False)
    assert "step_count_mismatch" not in [f.kind for f in more.run.findings]


def test_a_loop_recording_once_an_epoch_is_told_every_optimizer_step():
    """Probe 81, r_1: recorded once an epoch (8 epochs of 12 steps), the warning said 84 optimizer steps, not 96:
    the optimizer's steps were counted from the first rec.step, after the first epoch's 12."""
    model, dl, opt = accumulation_case()
    with Recorder(tb.TrainConfig(epochs=8, checkpoint_dir=None), parts={"model": model, "optimizer": opt},
                  live=False, validates=False) as rec:
        for _ in range(8):
            losses = []
            for xb, yb in dl:
                loss = LOSS(model(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
                losses.append(loss.item())
            rec.step(sum(losses) / len(losses))  # once an epoch: the mistake the warning is for
            rec.end_epoch()
    said = [f for f in rec.run.findings if f.kind == "step_count_mismatch"]
    assert len(said) == 1 and "(8 steps recorded, 96 optimizer steps)" in said[0].message, said


def test_the_step_count_is_compared_from_a_restore_under_any_name_and_not_without_a_count(tmp_path):
    """Probe 74: a rollback with rec.restore() mid-run compared the optimizer's steps before it too (a false
    warning); an optimizer under parts['opt'] was not counted (nor its lr recorded); a SAM-like optimizer whose own
    step() is never called was said to have made 0 steps."""
    model, dl, opt = accumulation_case()
    with Recorder(tb.TrainConfig(checkpoint_dir=tmp_path / "run"), parts={"model": model, "optimizer": opt},
                  live=False, validates=False) as rec:
        micro_batch_loop(rec, model, opt, dl, 2, 1, False)
        rec.restore(tmp_path / "run" / "last.pt")  # back to the epoch's end: 24 steps recorded
        micro_batch_loop(rec, model, opt, dl, 1, 1, False)
    assert "step_count_mismatch" not in [f.kind for f in rec.run.findings]
    with Recorder(tb.TrainConfig(checkpoint_dir=None), parts={"model": model, "opt": opt}, live=False,
                  validates=False) as wrong:
        micro_batch_loop(wrong, model, opt, dl, 6, 4, True)
    assert len(wrong.history.series("lr", "train")) == wrong.state.step  # parts['opt'] is the optimizer
    assert "step_count_mismatch" in [f.kind for f in wrong.run.findings]  # and it is counted

    class SAM(torch.optim.Optimizer):  # steps through first_step/second_step: its own step() never runs
        def __init__(self, params, lr): super().__init__(params, {"lr": lr})
        def second_step(self):
            with torch.no_grad():
                for p in self.param_groups[0]["params"]: p -= self.param_groups[0]["lr"] * p.grad
    sam = SAM(model.parameters(), lr=0.05)
    with Recorder(tb.TrainConfig(checkpoint_dir=None), parts={"model": model, "optimizer": sam}, live=False,
                  validates=False) as rec:
        for xb, yb in dl:
            sam.zero_grad(); LOSS(model(xb), yb).backward(); sam.second_step()
            rec.step(LOSS(model(xb), yb).detach())
    assert "step_count_mismatch" not in [f.kind for f in rec.run.findings]


@pytest.mark.parametrize("name", ["prior_loss", "loss_se", "loss_sd"])
def test_a_validation_metric_under_a_name_of_the_diagnosis_evidence_is_refused(name):
    """Probe 91: validate(loss, prior_loss=0.25) (the user's own metric) was taken as the constant predictor's loss:
    the column left metrics() and diagnose said not_learning. Refused by name, as step refuses its own records."""
    with Recorder(tb.TrainConfig(), live=False, checkpoint_dir=None) as rec:
        rec.step(1.0)
        with pytest.raises(ValueError, match=f"Recorder.validate: {name} is a validation record.*my_{name}="):
            rec.validate(0.9, **{name: 0.25})
        rec.validate(0.9, old_model_loss=0.25)  # under another name: the user's metric, a column of its own
    assert rec.run.metrics().valid_old_model_loss.tolist() == [0.25]
    assert rec.run.records.series(name, "valid").empty


def warmup_loop(order, steps=8):
    "SGD with a linear warmup (lr 0.1 -> 1.0), its scheduler among the parts; each step in `order`. The lrs used."
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, end_factor=1.0, total_iters=steps)
    used = []
    with Recorder(parts={"model": model, "optimizer": opt, "scheduler": sched}, live=False, checkpoint_dir=None,
                  validates=False) as rec:
        for _ in range(steps):
            loss = LOSS(model(torch.randn(8, 4)), torch.randint(0, 2, (8,)))
            loss.backward()
            used.append(opt.param_groups[0]["lr"])
            for call in order:
                if call == "opt": opt.step()
                elif call == "sched": sched.step()
                else: rec.step(loss.detach())
            opt.zero_grad()
    return rec.run.records.series("lr").tolist(), used


@pytest.mark.parametrize("order", [("opt", "sched", "rec"), ("opt", "rec", "sched")])
def test_the_recorded_lr_is_the_one_each_optimizer_step_used(order):
    """Probe 91: with opt.step(); sched.step(); rec.step(loss) the lr recorded was the scheduler's next one, the
    whole warmup curve a step early. The lr is read as the optimizer's step begins, in either order."""
    recorded, used = warmup_loop(order)
    assert recorded == pytest.approx(used, abs=1e-12) and used[0] == pytest.approx(0.1)


def test_a_stream_that_never_closes_an_epoch_keeps_its_mean_loss_as_its_one_row(tmp_path):
    """Probe 91: 60 rec.step calls, validates=False, no end_epoch: run.metrics() held train_lr alone. The run is
    kept as one epoch at finish; resumed, the stream sums on and writes that row once, over every step."""
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.05)
    losses = [1.0 / (s + 1) for s in range(60)]
    with Recorder(parts={"optimizer": opt}, live=False, checkpoint_dir=None, validates=False) as rec:
        for v in losses: rec.step(v)
    table = rec.run.metrics()
    assert table.columns.tolist() == ["train_loss", "train_lr"] and len(table) == 1
    assert table.train_loss.iloc[0] == pytest.approx(np.mean(losses))
    cfg = tb.TrainConfig(checkpoint_dir=str(tmp_path))
    for part, resume in ((losses[:30], None), (losses[30:], tmp_path)):
        with Recorder(cfg, parts={"optimizer": opt}, live=False, validates=False, resume=resume) as rec:
            for v in part: rec.step(v)
    assert rec.run.records.series("epoch_loss").tolist() == pytest.approx([np.mean(losses)])
    assert tb.Run.load(rec.run.run_dir).metrics().train_loss.tolist() == pytest.approx([np.mean(losses)])


def test_a_ctrl_c_in_the_with_block_stops_a_script_and_lets_a_notebook_cell_go_on(monkeypatch):
    """Probe 114: a script's sweep went on after a Ctrl-C (`__exit__` swallowed it, as in a notebook). In a plain
    script the KeyboardInterrupt goes on out of the block, the run as `err.run`; in a kernel's cell the block ends the
    run and the cell goes on (its next run stops at the door)."""
    import IPython
    def ctrl_c_in_a_run():
        with Recorder(tb.TrainConfig(), live=False, validates=False) as rec:
            rec.step(0.5)
            raise KeyboardInterrupt
        return rec
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # a plain script
    with pytest.raises(KeyboardInterrupt) as cut: ctrl_c_in_a_run()
    assert cut.value.run.stopped == "interrupted" and cut.value.run is tb.last_run()
    tb.guard.forget_interrupt()
    kernel = type("ZMQShell", (), {"parent_header": {"header": {"msg_type": "execute_request", "msg_id": "cell 1"}}})()
    monkeypatch.setattr(IPython, "get_ipython", lambda: kernel)
    assert ctrl_c_in_a_run().run.stopped == "interrupted"  # the cell goes on
    with pytest.raises(KeyboardInterrupt, match="earlier in this cell"): Recorder(tb.TrainConfig(), live=False)


def test_a_recorder_run_continued_to_more_epochs_is_not_told_it_resumes_inexactly(tmp_path):
    "The any_loop tutorial's exact resume printed 'epochs: 3 → 8 ... not exactly as the original would have'."
    import warnings
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    def train(epochs, patience=None, resume=None):
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        cfg = tb.TrainConfig(epochs=epochs, lr=0.5, checkpoint_dir=str(tmp_path), monitor="valid_loss",
                             patience=patience)
        with tb.Recorder(cfg, parts={"model": model, "optimizer": opt}, live=False, resume=resume) as rec:
            for _ in range(rec.state.epoch, epochs):
                loss = nn.functional.cross_entropy(model(X), y)
                loss.backward(); opt.step(); opt.zero_grad()
                rec.step(loss.detach())
                rec.validate(loss.detach())
                rec.save()
        return rec.finish()
    first = train(3, patience=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing said: the loop's own plan (epochs, lr) is not the Recorder's
        on = train(5, patience=3, resume=first.run_dir)
    assert "resume_changed" not in [f.kind for f in on.findings] and on.step == 5
    changed = train(6, patience=1, resume=on.run_dir)  # a field the Recorder reads: listed
    (said,) = [f for f in changed.findings if f.kind == "resume_changed"]
    assert list(said.data["changes"]) == ["config.patience"]
