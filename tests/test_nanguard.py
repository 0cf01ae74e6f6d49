"A planted NaN: the run stops with a finding naming the module and step; the saved batch reproduces it; last.pt loads."
import copy

import torch
from torch import nn

import trainbook as tb
from trainbook.diagnostics import locate_nonfinite
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
    assert f.data["module"] == "2" and f.data["inputs_finite"] is True and f.data["step"] == 24
    assert "module '2'" in f.message and f.severity == "error"
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
