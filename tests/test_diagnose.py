"diagnose on real runs: overfitting found with a sensible onset, a healthy run left alone, divergence and not-learning named."
import pandas as pd
import pytest
import torch
from torch import nn
from sklearn.datasets import load_digits

import trainbook as tb


@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    perm = torch.randperm(len(d.target), generator=torch.Generator().manual_seed(0))
    return torch.tensor(d.data, dtype=torch.float32)[perm] / 16, torch.tensor(d.target)[perm]


def kinds(run): return [f.kind for f in run.findings]


def run_mlp(X, y, Xv, yv, width, epochs, lr, batch=32, seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    return tb.fit(model, tb.TensorLoader(X, y, batch_size=batch, shuffle=True), tb.TensorLoader(Xv, yv, batch_size=512),
                  loss_fn=nn.functional.cross_entropy, live=False,
                  config=tb.TrainConfig(epochs=epochs, lr=lr, weight_decay=0.0, device="cpu"))


def test_overfitting_on_a_real_overfitting_run(digits):
    "A large MLP on 100 digits: valid loss turns up while train loss keeps falling."
    X, y = digits
    run = run_mlp(X[:100], y[:100], X[1000:], y[1000:], width=512, epochs=60, lr=3e-3)
    f = next(f for f in run.findings if f.kind == "overfitting")
    valid = run.records.series("loss", "valid", index="epoch")
    best = int(valid.idxmin())
    assert f.data["best_epoch"] == best and f.data["onset_epoch"] == best + 1
    assert 2 <= f.data["onset_epoch"] <= 40 and f.data["gap"] > 0.3


def test_healthy_run_is_not_flagged(digits):
    X, y = digits
    run = run_mlp(X[:1200], y[:1200], X[1200:], y[1200:], width=64, epochs=8, lr=3e-3)
    assert run.metrics()["valid_loss"].iloc[-1] < 0.3
    assert not [f for f in run.findings if f.severity != "info"], run.findings


def test_huge_lr_diverges(digits):
    X, y = digits
    run = run_mlp(X[:800], y[:800], X[1200:], y[1200:], width=64, epochs=6, lr=3.0)
    assert {"diverging", "nonfinite"} & set(kinds(run))


def test_not_learning_when_the_lr_is_tiny(digits):
    X, y = digits
    run = run_mlp(X[:800], y[:800], X[1200:], y[1200:], width=64, epochs=4, lr=1e-7)
    assert "not_learning" in kinds(run)


def test_diagnose_accepts_history_run_and_frame(digits):
    X, y = digits
    run = run_mlp(X[:100], y[:100], X[1000:], y[1000:], width=512, epochs=60, lr=3e-3)
    a, b, c = tb.diagnose(run), tb.diagnose(run.records), tb.diagnose(run.history)
    assert [f.kind for f in a] == [f.kind for f in b] == [f.kind for f in c]
    with pytest.raises(TypeError, match="history must be"): tb.diagnose([1, 2, 3])


def test_slow_input_pipeline_is_named():
    h = tb.History()
    for e in range(3): h.append(e, e, "train", "data_wait", 0.6)
    assert [f.kind for f in tb.diagnose(h)] == ["slow_input_pipeline"]


def test_gradient_findings():
    h = tb.History()
    for s in range(50):
        h.append(s, 0, "train", "grad_norm", 1.0 if s < 25 else 500.0)
        h.append(s, 0, "train", "grad_norm/0.weight", 1.0)
        h.append(s, 0, "train", "grad_norm/9.weight", 1e-9)
    got = {f.kind: f for f in tb.diagnose(h)}
    assert "exploding_gradients" in got and got["vanishing_gradients"].data["parameters"] == ["9.weight"]
