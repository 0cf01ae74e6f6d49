"""Held-out findings in the training core: Ctrl-C in fit's set-up, lr_find's suggestion, C=1 with a class
loss, accuracy on regression targets, the not-learning wording."""
import signal

import pytest
import torch
from torch import nn

import trainbook as tb
from helpers import blobs, interrupted, mlp

CE = nn.functional.cross_entropy


def _presses_ctrl_c_once():
    "A metric that presses Ctrl-C (a real SIGINT) the first time it is scored: in fit's set-up (try_validation)."
    pressed = []
    def metric(pred, yb):
        if not pressed:
            pressed.append(1)
            signal.raise_signal(signal.SIGINT)
        return (pred.argmax(-1) == yb).float().mean()
    return metric


def test_ctrl_c_during_fit_set_up_ends_an_interrupted_run_and_the_next_fit_works():
    "A Ctrl-C while fit sets up (where torch imports lazily) waits for the set-up; the run ends interrupted."
    X, y = blobs()
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, len(X), 32)]
    model, before = mlp(), signal.getsignal(signal.SIGINT)
    cfg = tb.TrainConfig(epochs=2, device="cpu")
    run = interrupted(tb.fit, model, batches, batches, loss_fn=CE, config=cfg, live=False,
                      metrics={"acc": _presses_ctrl_c_once()})  # (a plain script: the Ctrl-C goes on, with .run)
    assert run.step == 0
    assert tb.last_run() is run
    assert signal.getsignal(signal.SIGINT) is before  # the usual Ctrl-C is back
    tb.guard.forget_interrupt()  # (noted as any interrupted run: in a script the next run stops at its door)
    again = tb.fit(model, batches, loss_fn=CE, config=cfg, live=False)
    assert again.stopped == "completed" and again.step == 2 * len(batches)


def test_deferred_ctrl_c_a_second_press_interrupts_at_once():
    "The first Ctrl-C waits for the block's end; a second one raises KeyboardInterrupt inside the block."
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with tb.batch.DeferredCtrlC() as ctrl_c:
            signal.raise_signal(signal.SIGINT)
            reached.append("after the first")
            signal.raise_signal(signal.SIGINT)
            reached.append("after the second")
    assert reached == ["after the first"] and ctrl_c.pressed


def test_one_output_with_class_labels_and_cross_entropy_says_one_column_is_one_class():
    "(n, 1) logits, (n,) int labels, cross-entropy: the message names C=1 and fixes that work, not squeezing."
    X = torch.randn(64, 8)
    y = (X[:, 0] > 0).long()
    with pytest.raises(tb.ShapeMismatch) as caught:
        tb.fit(nn.Linear(8, 1), [(X, y)], loss_fn=CE, config=tb.TrainConfig(epochs=1, device="cpu"),
               live=False)
    message = str(caught.value)
    assert "1 column is 1 class" in message and "--loss bce" in message and "nn.Linear(..., 2)" in message
    assert "squeeze the prediction" not in message
    # both fixes it names train
    assert tb.fit(nn.Linear(8, 2), [(X, y)], loss_fn=CE, live=False).stopped == "completed"
    bce = lambda out, yb: nn.functional.binary_cross_entropy_with_logits(out.squeeze(-1), yb.float())
    assert tb.fit(nn.Linear(8, 1), [(X, y)], loss_fn=bce, live=False).stopped == "completed"
    # an elementwise loss on the same pair keeps its broadcasting message
    with pytest.raises(tb.ShapeMismatch, match=r"broadcast them to \(64, 64\)"):
        tb.check_loss_shapes(torch.zeros(64, 1), y.float(), nn.functional.mse_loss)


def test_accuracy_refuses_regression_targets_before_the_first_step():
    "metrics='accuracy' on float regression targets: fit refuses the run, naming the metric; 0/1 ones score."
    X = torch.randn(128, 8)
    y = X[:, :1] * 2
    batches = [(X[:64], y[:64]), (X[64:], y[64:])]
    model = nn.Linear(8, 1)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError, match="metric 'accuracy' failed.*not 0/1 labels"):
        tb.fit(model, batches, batches, loss_fn=nn.functional.mse_loss, metrics="accuracy", live=False,
               config=tb.TrainConfig(epochs=1, device="cpu"))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # no step was taken
    binary = tb.metrics.accuracy(torch.tensor([[1.0], [-1.0], [2.0]]), torch.tensor([[1.0], [0.0], [0.0]]))
    assert float(binary) == pytest.approx(2 / 3)


def test_not_learning_says_a_rising_loss_rose():
    "The not-learning message's words agree with its numbers: a loss that went up is not 'barely moved'."
    rising = tb.History([(s, 0, "train", "loss", 2.5 + 0.004 * s) for s in range(200)])
    found = [f for f in tb.diagnose(rising) if f.kind == "not_learning"]
    assert found and "rose instead of falling" in found[0].message and "barely" not in found[0].message
    flat = tb.History([(s, 0, "train", "loss", 1.0 - 1e-4 * s) for s in range(200)])
    assert "barely fell" in next(f for f in tb.diagnose(flat) if f.kind == "not_learning").message


def test_lr_find_stopped_gives_no_suggestion():
    "A sweep a Stop cut short covered only the smallest lrs: no suggestion (the doc's None), stopped=True."
    X, y = blobs()
    steps = iter(range(1000))
    found = tb.lr_find(mlp(), [(X[:64], y[:64])], CE, num_steps=50, stop=lambda: next(steps) >= 20)
    assert (len(found.lrs), found.stopped, found.suggestion) == (20, True, None)
    assert tb.lr_find(mlp(), [(X[:64], y[:64])], CE, num_steps=50).suggestion is not None


# --- probe 10: a TensorLoader pass left unfinished is no position -------------------------------------------------

def test_a_pass_left_unfinished_is_no_position_and_a_pass_under_way_is():
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    next(iter(dl))  # a peek: its iterator is dropped at once
    assert dl.state_dict()["position"] == 0
    it = iter(dl)
    next(it), next(it)
    assert dl.state_dict()["position"] == 2  # under way: a checkpoint now continues at batch 2
    other = tb.TensorLoader(X, y, batch_size=16)
    other.load_state_dict(dl.state_dict())
    assert torch.equal(next(iter(other))[0], next(it)[0])  # the restored pass goes on where it was
    it.close()
    assert dl.state_dict()["position"] == 0


@pytest.mark.parametrize("valid_batch", [16, 64])
def test_peeking_at_the_loaders_changes_no_batch_of_the_run(valid_batch):
    "Seen: a peek at dl_valid before fit(metrics=) lost epoch 0's first valid batch (one batch: no rows, a crash)."
    X, y = blobs(256)

    def run(peek):
        dl = tb.TensorLoader(X[:192], y[:192], batch_size=32, shuffle=True)
        dv = tb.TensorLoader(X[192:], y[192:], batch_size=valid_batch)
        if peek:
            next(iter(dv)), next(iter(dl))
            tb.dry_run(mlp(), dl, dv, nn.functional.cross_entropy)  # its trials save and load the positions
        torch.manual_seed(0)
        return tb.fit(mlp(), dl, dv, loss_fn=nn.functional.cross_entropy, metrics="accuracy", live=False,
                      config=tb.TrainConfig(epochs=2, lr=1e-2))
    a, b = run(False), run(True)
    assert a.step == b.step == 12
    assert a.metrics()["valid_loss"].tolist() == b.metrics()["valid_loss"].tolist()


class ImpatientCtrlC(tb.Callback):
    "Ctrl-C after step `at`, and again while the interrupted run writes its last.pt (from a callback's state_dict)."
    def __init__(self, at): self.at, self.pressed = at, 0
    def after_step(self, state):
        if state.step == self.at and not self.pressed:
            self.pressed = 1
            signal.raise_signal(signal.SIGINT)
    def state_dict(self):
        if self.pressed == 1:  # the checkpoint the first Ctrl-C asked for
            self.pressed = 2
            signal.raise_signal(signal.SIGINT)
        return {}
    def load_state_dict(self, state): pass


def test_a_second_ctrl_c_while_the_interrupted_run_saves_leaves_no_locked_folder(tmp_path):
    "Probe 54: the second Ctrl-C escaped fit's interrupt handler: no run end, run.json 'running', the folder locked."
    X, y = blobs(64)
    cfg = tb.TrainConfig(epochs=3, checkpoint_dir=str(tmp_path), checkpoint_every=2)
    model = mlp()
    run = interrupted(tb.fit, model, tb.TensorLoader(X, y, batch_size=16), loss_fn=nn.functional.cross_entropy,
                      config=cfg, live=False, callbacks=[ImpatientCtrlC(at=5)])
    assert run.step == 5
    assert tb.Run.load(tmp_path).stopped == "interrupted"
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(model, tb.TensorLoader(X, y, batch_size=16), loss_fn=nn.functional.cross_entropy,
                     config=cfg, live=False, resume=tmp_path)  # not refused: the folder was given back
    assert resumed.stopped == "completed" and resumed.step == 12


def test_a_third_ctrl_c_that_cuts_the_interrupted_save_still_gives_the_folder_back(tmp_path, monkeypatch):
    "Probe 57: the third press escaped fit with the folder locked by this live process; resume= was then refused."
    from trainbook.checkpoint import Checkpointer, folder_writer
    X, y = blobs(64)
    first, save = {"pressed": False}, Checkpointer.save

    class Press(tb.Callback):
        def after_step(self, state):
            if state.step == 5:
                first["pressed"] = True
                signal.raise_signal(signal.SIGINT)

    def impatient_save(self, *a, **k):  # two more presses as the interrupted run writes last.pt
        if first.pop("pressed", False):
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        return save(self, *a, **k)
    monkeypatch.setattr(Checkpointer, "save", impatient_save)
    cfg = tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=8), loss_fn=nn.functional.cross_entropy, config=cfg,
               live=False, callbacks=[Press()])
    assert folder_writer(tmp_path) is None  # given back
    monkeypatch.setattr(Checkpointer, "save", save)
    tb.guard._CUT_SHORT["execution"] = None  # the next cell
    with pytest.warns(UserWarning, match="nothing to resume"):  # nothing was saved: it starts anew
        run = tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=8), loss_fn=nn.functional.cross_entropy, config=cfg,
                     live=False, resume=tmp_path)
    assert run.stopped == "completed" and run.run_dir == tmp_path


def test_a_ctrl_c_while_a_recorder_writes_its_closing_checkpoint_waits_for_the_runs_end(tmp_path, monkeypatch):
    "Probe 57: one Ctrl-C during the `with` block's closing last.pt escaped finish(): no Run, no run.json, a lock."
    from trainbook.checkpoint import Checkpointer, folder_writer
    save = Checkpointer.save

    def pressed_while_saving(self, *a, **k):
        signal.raise_signal(signal.SIGINT)
        return save(self, *a, **k)
    cfg = tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path), monitor="train_loss")
    with pytest.raises(KeyboardInterrupt) as caught:  # a plain script: the Ctrl-C goes on once the run has ended
        with tb.Recorder(cfg, live=False, validates=False) as rec:
            rec.step(0.5)
            monkeypatch.setattr(Checkpointer, "save", pressed_while_saving)
    assert rec.run is not None and rec.run is caught.value.run and rec.run.stopped == "completed"
    assert tb.Run.load(tmp_path).stopped == "completed" and folder_writer(tmp_path) is None
    tb.guard._CUT_SHORT["execution"] = None  # (the press stops the rest of the cell, as after a run)
