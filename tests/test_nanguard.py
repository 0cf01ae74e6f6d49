"A planted NaN: the run stops with a finding naming the module and step; the saved batch reproduces it; last.pt loads."
import copy

import torch
from torch import nn

import trainbook as tb
from trainbook.recorder import Recorder
from trainbook.triage import locate_nonfinite
from helpers import blobs


class DivideByZeroFrom(nn.Module):
    "Divides by zero from its n-th training forward call on (a bug that appears mid-run)."
    def __init__(self, n): super().__init__(); self.n, self.calls = n, 0
    def forward(self, x):
        if self.training: self.calls += 1
        return x / 0 if self.calls >= self.n else x


def test_planted_nan_is_named(tmp_path):
    X, y = blobs(n=320)
    dl = tb.TensorLoader(X, y, batch_size=32)  # 10 steps an epoch
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), DivideByZeroFrom(25), nn.Linear(16, 3))
    run = tb.fit(model, dl, [(X[:64], y[:64])], loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=5, device="cpu", checkpoint_dir=str(tmp_path)))
    assert run.stopped == "nonfinite" and run.step == 24
    f = next(f for f in run.findings if f.kind == "nonfinite")
    # the failing step numbered as the history numbers steps: 24 completed (the last logged loss is step 24's),
    # the 25th failed
    assert f.data["module"] == "2" and f.data["inputs_finite"] is True
    assert f.data["step"] == 25 and f.data["completed_steps"] == 24
    assert run.records.series("loss", "train").index.max() == 24
    assert "step 25" in f.message and "module '2'" in f.message and f.severity == "error"
    assert f.data["batch_path"].endswith("nonfinite_step25.pt")
    # the saved batch reproduces the failure
    saved = torch.load(f.data["batch_path"], weights_only=True)
    assert locate_nonfinite(model, saved["xb"])["module"] == "2"
    # the last good checkpoint (end of epoch 2, step 20) loads and is finite
    clean = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Identity(), nn.Linear(16, 3))
    ckpt = tb.load_checkpoint(run.last_path, clean)
    assert ckpt["step"] == 20 and all(torch.isfinite(p).all() for p in clean.parameters())
    # the user's weights were not updated by the bad step
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_nan_in_the_data_is_blamed_on_the_data():
    X, y = blobs(n=64)
    X[5, 0] = float("nan")
    run = tb.fit(nn.Sequential(nn.Linear(8, 3)), [(X, y)], loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    f = next(f for f in run.findings if f.kind == "nonfinite")
    assert f.data["batch_finite"] is False and "batch itself" in f.message


class RootFrom(nn.Module):
    "sqrt of an exact 0 from the n-th training call: a finite forward whose backward is inf · 0 = NaN."
    def __init__(self, n): super().__init__(); self.n, self.calls = n, 0
    def forward(self, x):
        if self.training: self.calls += 1
        return x if self.calls < self.n else torch.sqrt(x * 0.0) + x


def test_nan_made_in_the_backward_pass_names_the_backward_operation():
    "NaN gradients from sqrt at 0: the weights, not a module's forward, are blamed; anomaly mode names the op."
    X, y = blobs(n=320)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), RootFrom(15), nn.Linear(16, 3))
    run = tb.fit(model, tb.TensorLoader(X, y, batch_size=32), loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=3, device="cpu", clip_norm=1.0))
    f = next(f for f in run.findings if f.kind == "nonfinite")
    # step 15's gradients were NaN (its loss was finite, logged); step 16's forward met the NaN weights
    assert run.records.series("loss", "train").index.max() == 15 and f.data["step"] == 16
    assert f.data["weights_finite"] is False and "0.weight" in f.data["nonfinite_parameters"]
    assert "already non-finite" in f.message and "gradients of step 15" in f.message
    # the backward re-run (on a copy of step 15's finite weights) names the op and the forward line
    assert f.data["backward_op"] == "MulBackward0" and "torch.sqrt(x * 0.0)" in f.data["forward_line"]
    assert "MulBackward0" in f.message and "epsilon" in f.advice
    assert run.findings is not None and f in run.findings


def test_nan_gradients_without_a_gradient_norm_say_how_to_name_the_operation():
    "Without clipping the loop computes no norm at step 15: the finding blames the weights and says what to set."
    X, y = blobs(n=320)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), RootFrom(15), nn.Linear(16, 3))
    run = tb.fit(model, tb.TensorLoader(X, y, batch_size=32), loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=3, device="cpu"))
    f = next(f for f in run.findings if f.kind == "nonfinite")
    assert f.data["weights_finite"] is False and "backward_op" not in f.data
    assert "backward pass" in f.message and "clip_norm=" in f.advice


def test_a_nan_validation_loss_is_one_nonfinite_finding():
    "The loop names a NaN valid loss as it happens; diagnose, reading the NaN in the history at the end, does not "
    "name it a second time (the history alone, diagnosed later, still gets it)."
    X, y = blobs(n=64)
    Xv = X[:32].clone()
    Xv[3, 0] = float("nan")
    run = tb.fit(nn.Sequential(nn.Linear(8, 3)), [(X, y)], [(Xv, y[:32])], loss_fn=nn.functional.cross_entropy,
                 live=False, config=tb.TrainConfig(epochs=3, device="cpu"))
    assert run.stopped == "nonfinite"
    bad = [f for f in run.findings if f.kind == "nonfinite"]
    assert len(bad) == 1 and "validation at epoch 0" in bad[0].message, run.findings
    later = [f for f in tb.diagnose(run.records) if f.kind == "nonfinite"]
    assert [(f.data["split"], f.data["epoch"]) for f in later] == [("valid", 0)]


def test_a_nan_loss_told_to_a_recorder_is_one_nonfinite_finding():
    "A hand-written loop's Recorder records the NaN loss and names it; the diagnosis at the end does not repeat it."
    rec = Recorder(tb.TrainConfig(monitor="train_loss"), live=False, validates=False)
    for v in (1.0, 0.5, float("nan")): rec.step(torch.tensor(v))
    run = rec.finish()
    assert run.stopped == "nonfinite" and run.records.series("loss").isna().any()
    assert [f.kind for f in run.findings].count("nonfinite") == 1, run.findings


def test_a_loss_that_overflows_on_huge_outputs_is_said_so_not_log_0():
    "Probe 15, f7: predictions of ~1e19 squared by MSE overflowed; the finding said 'log(0) or a division by zero'."
    X = torch.randn(64, 4)
    model = nn.Linear(4, 1)
    with torch.no_grad(): model.weight.fill_(1e19)  # weights an lr past the stability limit grew to
    run = tb.fit(model, [(X, torch.randn(64, 1))], loss_fn=nn.functional.mse_loss, live=False,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    f = next(f for f in run.findings if f.kind == "nonfinite")
    assert "the forward pass is finite on a re-run (outputs up to" in f.message and "log(0)" not in f.advice
    assert "overflow the loss" in f.advice and f.data["output_largest"] > 1e18
    # a loss made non-finite by log(0) on ordinary outputs keeps its advice
    def log_loss(pred, y): return torch.log(pred.clamp(max=0) * 0).mean()
    run = tb.fit(nn.Linear(4, 1), [(X, torch.randn(64, 1))], loss_fn=log_loss, live=False,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    assert "log(0)" in next(f for f in run.findings if f.kind == "nonfinite").advice
