"Probe 134: a Flax loss whose mean runs over its labels (class weights, a declared ignore_index) is averaged as torch's."
import functools

import numpy as np
import pytest
import torch

jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
nnx = pytest.importorskip("flax.nnx")
import jax.numpy as jnp

import trainbook as tb
from trainbook.jax_parts import loss_on_torch
from trainbook.triage import LossStats

W = np.array([1.0, 5.0, 0.2], np.float32)


def weighted_ce(logits, labels, weight=None, ignore_index=None):
    "Σ w[y]·l / Σ w[y] over the labels not at ignore_index (F.cross_entropy(weight=, ignore_index=)'s mean)."
    kept = jnp.ones(labels.shape, bool) if ignore_index is None else labels != ignore_index
    safe = jnp.where(kept, labels, 0)
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, safe)
    w = (jnp.ones_like(losses) if weight is None else jnp.asarray(weight)[safe]) * kept
    return (losses * w).sum() / w.sum()


def cross_entropy(logits, labels, weight=W):  # a class weight as the keyword's default
    return weighted_ce(logits, labels, weight)


def cross_entropy_w(logits, labels, weight=None):  # a class weight from a partial
    return weighted_ce(logits, labels, weight)
cross_entropy_w.__name__ = "cross_entropy"


class Lin(nnx.Module):
    def __init__(self): self.l = nnx.Linear(4, 3, rngs=nnx.Rngs(0))
    def __call__(self, x): return self.l(x)


class Tok(nnx.Module):
    def __init__(self):
        self.e, self.o = nnx.Embed(7, 8, rngs=nnx.Rngs(0)), nnx.Linear(8, 3, rngs=nnx.Rngs(1))
    def __call__(self, x): return self.o(self.e(x))


def frozen(model, tr, va, loss_fn):
    "fit_flax for one epoch at an lr that leaves the model as it was: its records are the loss of the model as built."
    cfg = tb.TrainConfig(epochs=1, lr=1e-12, schedule="constant", weight_decay=0.0)
    run = tb.fit_flax(model, optax.sgd, tr, va, loss_fn=loss_fn, config=cfg, live=False, track=False)
    h = run.history
    last = lambda name, split: float(h[(h.name == name) & (h.split == split)].value.iloc[-1])
    return last("epoch_loss", "train"), last("loss", "valid"), tb.evaluate_flax(model, va, loss_fn)["loss"]


def whole(model, batches, **kw):
    X, y = (np.concatenate([b[i] for b in batches]) for i in (0, 1))
    return float(weighted_ce(model(jnp.asarray(X)), jnp.asarray(y), **kw))


@pytest.mark.parametrize("loss_fn", [cross_entropy, functools.partial(cross_entropy_w, weight=W)],
                         ids=["default", "partial"])
def test_class_weighted_flax_loss_is_the_whole_epochs_weighted_mean(loss_fn):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(96, 4)).astype(np.float32), rng.integers(0, 3, 96).astype(np.int32)
    y[:16], y[64:72] = 1, 1  # batches of heavy labels: the batches' weights differ from their rows
    tr = [(X[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    va = [(X[64:80], y[64:80]), (X[80:96], y[80:96])]
    model = Lin()
    epoch, valid, evaluated = frozen(model, tr, va, loss_fn)
    # before: batches weighed by rows, 1.6427 / 1.5215 against 1.6177 / 1.4544
    assert epoch == pytest.approx(whole(model, tr, weight=W), abs=1e-5)
    assert valid == pytest.approx(whole(model, va, weight=W), abs=1e-5)
    assert evaluated == pytest.approx(valid, abs=1e-6)


def test_masked_token_cross_entropy_that_declares_ignore_index_trains():
    "A Flax `cross_entropy` with ignore_index=-100 in its signature: its -100 labels are no labels past the outputs."
    def cross_entropy(logits, labels, weight=W, ignore_index=-100):
        return weighted_ce(logits, labels, weight, ignore_index)
    rng = np.random.default_rng(1)
    X = rng.integers(0, 7, (48, 6)).astype(np.int32)
    Y = (X % 3).astype(np.int32)
    Y[rng.random(Y.shape) < 0.4] = -100
    Y[:8, 3:], Y[:8, :3] = -100, 1
    tr = [(X[i:i + 8], Y[i:i + 8]) for i in range(0, 32, 8)]
    va = [(X[32:40], Y[32:40]), (X[40:48], Y[40:48])]
    model = Tok()
    epoch, valid, evaluated = frozen(model, tr, va, cross_entropy)  # before: ValueError, labels run from -100 to 2
    assert epoch == pytest.approx(whole(model, tr, weight=W, ignore_index=-100), abs=1e-5)
    assert valid == pytest.approx(whole(model, va, weight=W, ignore_index=-100), abs=1e-5)
    assert evaluated == pytest.approx(valid, abs=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_users_flax_cross_entropy_gets_torchs_validation_statistics(weighted):
    "loss_sd and prior_loss of a user's Flax cross_entropy (no per_element) equal nn.CrossEntropyLoss's."
    def cross_entropy(logits, labels): return weighted_ce(logits, labels)  # named as torch's, no weight
    flax_fn = functools.partial(cross_entropy_w, weight=W) if weighted else cross_entropy
    torch_fn = torch.nn.CrossEntropyLoss(weight=torch.from_numpy(W) if weighted else None)
    g = torch.Generator().manual_seed(0)
    p, y = torch.randn(64, 3, generator=g), torch.randint(0, 3, (64,), generator=g)
    got, want = LossStats(loss_on_torch(flax_fn)), LossStats(torch_fn)
    for i in range(0, 64, 16):
        pb, yb = p[i:i + 16], y[i:i + 16]
        got.add(pb, yb, torch.tensor(float(flax_fn(jnp.asarray(pb.numpy()), jnp.asarray(yb.numpy())))), 16)
        want.add(pb, yb, torch_fn(pb, yb), 16)
    got, want = got.results(), want.results()
    # before: unweighted no prior_loss (a warning) and loss_sd 0.653 (the batches' spread); weighted loss_sd 1.045
    assert got["prior_loss"] == pytest.approx(want["prior_loss"], abs=1e-4)
    assert got["loss_sd"] == pytest.approx(want["loss_sd"], abs=1e-4)


def test_recorder_validates_inside_an_epoch_every_k_steps():
    "validate(close_epoch=False) every 4 steps of 8-step epochs: each recorded at its step, the epochs closed twice."
    from torch import nn
    torch.manual_seed(0)
    m = nn.Linear(3, 1)
    opt = torch.optim.SGD(m.parameters(), 0.05)
    X, Xv = torch.randn(128, 3), torch.randn(32, 3)
    y, yv = X.sum(1, keepdim=True), Xv.sum(1, keepdim=True)
    vals, losses = [], []
    with tb.Recorder(tb.TrainConfig(epochs=2), parts={"model": m, "optimizer": opt}, live=False, track=False,
                     checkpoint_dir=None) as rec:
        for epoch in range(2):
            for i in range(8):
                opt.zero_grad()
                loss = nn.functional.mse_loss(m(X[16 * i:16 * i + 16]), y[16 * i:16 * i + 16])
                loss.backward()
                opt.step()
                rec.step(loss)
                losses.append(float(loss))
                if (i + 1) % 4: continue
                with torch.no_grad(): vals.append((rec.state.step, float(nn.functional.mse_loss(m(Xv), yv))))
                if i == 7: rec.validate(vals[-1][1], epoch=epoch)  # before: the second one in an epoch raised
                else: rec.validate(vals[-1][1], close_epoch=False)
    h = rec.run.history
    valid = h[(h.split == "valid") & (h.name == "loss")]
    assert valid.step.tolist() == [s for s, _ in vals]
    assert valid.value.tolist() == pytest.approx([v for _, v in vals])
    assert valid.epoch.tolist() == [0, 0, 1, 1]
    epoch_loss = h[(h.split == "train") & (h.name == "epoch_loss")]
    assert epoch_loss.value.tolist() == pytest.approx([np.mean(losses[:8]), np.mean(losses[8:])])
    assert rec.run.best == pytest.approx(min(v for _, v in vals))
    with pytest.raises(ValueError, match="close_epoch=False ends none"):
        tb.Recorder(live=False, track=False).validate(0.1, epoch=0, close_epoch=False)


def test_recorder_inside_epoch_validations_count_for_patience():
    "Early stopping counts the validations inside an epoch, as fit's eval_every: patience 1, a worse one stops."
    with tb.Recorder(tb.TrainConfig(epochs=3, patience=1), live=False, track=False, checkpoint_dir=None) as rec:
        for value in (0.5, 0.6, 0.7):
            rec.step(1.0)
            rec.validate(value, close_epoch=False)
            if rec.should_stop: break
    assert rec.run.stopped == "early_stopping"
    assert rec.run.best == pytest.approx(0.5)


def test_recorder_refuses_a_typo_of_a_declared_metric():
    rec = tb.Recorder(tb.TrainConfig(epochs=1), live=False, track=False, metrics=["accuracy"], checkpoint_dir=None)
    with pytest.raises(ValueError, match="'acuracy' is not in metrics=\\['accuracy'\\] \\(did you mean 'accuracy'\\?\\)"):
        rec.validate(0.3, acuracy=0.9)  # before: recorded as valid/acuracy, the accuracy never seen
    assert len(rec.history) == 0
    rec.validate(0.3, accuracy=0.9, f1=0.5)  # a name near none of them is the user's own
    rec.finish()


@pytest.mark.parametrize("kw, match", [(dict(overwrite="no"), "overwrite must be True or False, got 'no'"),
                                       (dict(run_dir=123), "run_dir must be a folder")])
def test_trainer_callback_refuses_wrong_argument_types(kw, match):
    pytest.importorskip("transformers")
    with pytest.raises(TypeError, match=match):  # before: 'no' was taken as True; 123 failed in pathlib's words
        tb.trainer_callback(live=False, **kw)
