"Held-out testers' findings on the diagnostics and the NaN triage: each test one finding's repro, made small."
import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import trainbook as tb


def kinds(found): return [f.kind for f in found]


def epochs_run(train, valid, se, prior, steps_per_epoch=47, lr=None):
    "A history: step losses `train` (one a step), one valid loss (with its SE and the prior's loss) an epoch."
    h = tb.History()
    for s, v in enumerate(train, 1):
        e = (s - 1) // steps_per_epoch
        h.append(s, e, "train", "loss", float(v))
        if lr is not None: h.append(s, e, "train", "lr", float(lr[s - 1]))
    for e, v in enumerate(valid):
        s = min((e + 1) * steps_per_epoch, len(train))
        h.append(s, e, "train", "epoch_loss", float(np.mean(train[s - steps_per_epoch:s])))
        h.append(s, e, "valid", "loss", float(v))
        h.append(s, e, "valid", "loss_se", float(se))
        h.append(s, e, "valid", "prior_loss", float(prior))
    return h


def test_a_loss_3x_the_prior_is_said_to_end_above_it_not_at_it():
    "f4: unnormalized inputs: 100 → a jump to 330 → 5.3, valid 46 → 4.2, prior 1.37: worse than the prior."
    rng = np.random.default_rng(0)
    n = 470
    train = 5 + 95 * np.exp(-np.arange(n) / 60) * (1 + 0.2 * rng.standard_normal(n))
    train[:3] = [100.0, 150.0, 333.0]
    valid = [46.0, 27.3, 14.5, 11.5, 12.8, 5.3, 6.2, 6.0, 8.6, 4.2]
    found = tb.diagnose(epochs_run(train, valid, se=0.15, prior=1.37))
    # still no better than predicting the prior (3x its loss), and the message says where it ended: above it
    said = [f.message for f in found if "constant predictor" in f.message]
    assert said and all("ended above the constant predictor" in m for m in said), said
    assert not any("ended at the constant predictor" in f.message for f in found)
    # a run that did end at the prior, on both losses, within its noise: still named so
    flat = 1.37 + 0.05 * rng.standard_normal(n)
    flat[:3] = [1.4, 1.38, 1.39]
    stuck = tb.diagnose(epochs_run(flat, [1.372] * 10, se=0.01, prior=1.37))
    assert any(f.kind == "not_learning" and "constant predictor" in f.message for f in stuck)


def grads_history(grads: dict, weights: dict, steps=40):
    "Per-parameter gradient norms (a constant each, times a little noise) and weight norms."
    rng = np.random.default_rng(1)
    h = tb.History()
    for s in range(1, steps + 1):
        h.append(s, 0, "train", "loss", 1.0 / s)
        for k, g in grads.items(): h.append(s, 0, "train", f"grad_norm/{k}", g * (1 + 0.1 * rng.random()))
    for k, w in weights.items(): h.append(1, 0, "train", f"weight_norm/{k}", w)
    return h


def test_a_bias_beside_a_weight_fed_huge_inputs_is_not_structurally_zero():
    "f4: a first-layer bias's gradient 0.02 beside its weight's 900 (inputs ~1e4) is 2% of its own size."
    h = grads_history({"0.weight": 900.0, "0.bias": 0.02, "2.weight": 1700.0, "2.bias": 0.07},
                      {"0.weight": 20.0, "0.bias": 0.98, "2.weight": 5.0, "2.bias": 0.6})
    assert "structural_zero_gradients" not in kinds(tb.diagnose(h))
    # a bias before a norm: round-off of its layer's gradient and of its own size: still structural
    bn = grads_history({"0.weight": 1.0, "0.bias": 1e-8}, {"0.weight": 3.0, "0.bias": 0.5})
    zero = next(f for f in tb.diagnose(bn) if f.kind == "structural_zero_gradients")
    assert zero.data["parameters"] == ["0.bias"]
    # a short run logs each parameter once (probe 11, f8): that one log of round-off tells, and is not "vanishing"
    once = grads_history({"0.weight": 0.3, "0.bias": 2e-8, "1.weight": 0.06, "1.bias": 0.07},
                         {"0.weight": 2.4, "0.bias": 1.2, "1.weight": 4.0, "1.bias": 0.1}, steps=1)
    found = tb.diagnose(once)
    assert "vanishing_gradients" not in kinds(found), [f.message for f in found]
    assert next(f for f in found if f.kind == "structural_zero_gradients").data["parameters"] == ["0.bias"]
    # the same gradient in a real Linear → BatchNorm block trained 18 steps (one per-parameter log)
    torch.manual_seed(0)
    x = torch.randn(192, 4)
    dl = tb.TensorLoader(x, (x[:, 0] > 0).long(), batch_size=32)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    run = tb.fit(model, dl, dl, loss_fn=torch.nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=3, lr=1e-2, device="cpu"))
    assert len(run.records.series("grad_norm/0.bias")) == 1
    assert "vanishing_gradients" not in kinds(run.findings), [f.message for f in run.findings]
    assert "0.bias" in next(f for f in run.findings if f.kind == "structural_zero_gradients").data["parameters"]


def test_overfitting_quotes_logged_values_and_names_a_valid_set_never_better_than_the_prior():
    "f6: valid 1.546 → 6.1, above the prior 1.382 from the first evaluation: another distribution."
    valid = [1.546, 2.891, 3.942, 4.572, 4.97, 5.215, 5.44, 5.585, 5.78, 5.878, 5.953, 6.097]
    train = np.repeat(np.linspace(1.2, 0.24, len(valid)), 47)
    found = tb.diagnose(epochs_run(train, valid, se=0.05, prior=1.382))
    f = next(f for f in found if f.kind == "overfitting")
    assert "rose from 1.546 (epoch 0)" in f.message, f.message
    assert "never generalized" in f.message and "distribution shift" in f.advice
    assert "labels hold nothing the inputs predict" in f.advice  # shuffled labels look like this too (probe 15, f7)
    assert f.data["never_beat_prior"] is True
    # a classic overfit (below the prior first, then rising): the usual advice
    classic = [1.0, 0.7, 0.55, 0.5, 0.52, 0.56, 0.61, 0.66, 0.72, 0.78, 0.84, 0.9]
    found = tb.diagnose(epochs_run(train, classic, se=0.01, prior=1.382))
    g = next(f for f in found if f.kind == "overfitting")
    assert "stop earlier" in g.advice and not g.data["never_beat_prior"]
    assert f"rose from {classic[g.data['best_epoch']]:.4g}" in g.message
    # a train loss that rose again at the end (still below the best epoch's): "kept falling" was said (probe 15, f8)
    bent = np.concatenate([np.linspace(1.2, 0.2, 47 * 8), np.linspace(0.2, 0.35, 47 * 4)])
    h = epochs_run(bent, classic, se=0.01, prior=1.382)
    g = next(f for f in tb.diagnose(h) if f.kind == "overfitting")
    at_best = float(np.mean(bent[47 * g.data["best_epoch"]:47 * (g.data["best_epoch"] + 1)]))
    assert f"while train loss fell from {at_best:.4g} to {np.mean(bent[-47:]):.4g}" in g.message, g.message
    assert "kept falling" not in g.message
    # the same rise inside one evaluation's standard error (25 validation rows, say): a rise on those rows, which
    # the population need not share (probe 15, f3: 2-5% on 20,000 rows); an info that says so
    small = next(f for f in tb.diagnose(epochs_run(train, classic, se=0.5, prior=1.382)) if f.kind == "overfitting")
    assert small.severity == "info" and "inside one evaluation's standard error 0.5" in small.message
    assert g.severity == "warning"


def test_a_warmup_longer_than_the_run_is_named_not_the_model():
    "f1: the lr rose linearly all run (6% of its peak at the end): the schedule, not the model, is to blame."
    rng = np.random.default_rng(2)
    n = 315
    train = 1.37 + 0.03 * rng.standard_normal(n)
    lr = 1e-3 * np.arange(1, n + 1) / 5000
    valid = [1.382, 1.377, 1.369, 1.358, 1.343]
    found = tb.diagnose(epochs_run(train, valid, se=0.009, prior=1.372, steps_per_epoch=63, lr=lr))
    f = next(f for f in found if f.kind == "not_learning")
    assert "still rising" in f.message and "warmup" in f.advice and f.data["lr_still_rising"]
    # a warmup that ended (then a cosine decay): no such note
    done = np.where(np.arange(n) < 30, np.arange(1, n + 1) / 30, 0.5 * (1 + np.cos(np.pi * np.arange(n) / n)))
    found = tb.diagnose(epochs_run(train, valid, se=0.009, prior=1.372, steps_per_epoch=63, lr=1e-3 * done))
    assert not any("still rising" in f.message for f in found)


def test_gradients_after_the_loss_went_nonfinite_say_nothing():
    "6: a NaN at step 30; a parameter starved only after it is a broken model's, not vanishing gradients."
    h = tb.History()
    for s in range(1, 121):
        h.append(s, 0, "train", "loss", 1.0 if s < 30 else math.nan)
        h.append(s, 0, "train", "grad_norm/a.weight", 1.0)
        h.append(s, 0, "train", "grad_norm/b.weight", 1.0 if s < 30 else 1e-9)
    assert kinds(tb.diagnose(h)) == ["nonfinite"]


def nan_run(accum_steps, bad_row, tmp_path):
    "A fit whose training row `bad_row` holds a NaN (64-row batches, no shuffle): its nonfinite finding."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(1200, 8, generator=g), torch.randint(0, 3, (1200,), generator=g)
    X[bad_row, 3] = float("nan")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    run = tb.fit(model, tb.TensorLoader(X[:1000], y[:1000], batch_size=64, shuffle=False),
                 tb.TensorLoader(X[1000:], y[1000:], batch_size=200), loss_fn=nn.functional.cross_entropy,
                 live=False,
                 config=tb.TrainConfig(epochs=1, accum_steps=accum_steps, checkpoint_dir=str(tmp_path)))
    return next(f for f in run.findings if f.kind == "nonfinite")


def test_the_nan_finding_names_the_failing_batch_0_based(tmp_path):
    """f2: row 780 is in batch 12 (0-based), row 850 in batch 13; with accumulation of 4 the failing micro-batch is
    named too, with its window (12-15)."""
    f = nan_run(1, 780, tmp_path / "one")
    assert "batch 12, 0-based" in f.message and f.data["batch_idx"] == 12, f.message
    saved = torch.load(f.data["batch_path"], weights_only=False)
    assert saved["batch_idx"] == 12 and bool(torch.isnan(saved["xb"][780 - 12 * 64, 3]))
    f = nan_run(4, 850, tmp_path / "four")
    assert "batch 13, 0-based (in its accumulation window, micro-batches 12-15)" in f.message, f.message
    assert f.data["batch_idx"] == 13 and f.data["window"] == [12, 15]
    assert bool(torch.isnan(torch.load(f.data["batch_path"], weights_only=False)["xb"][850 - 13 * 64, 3]))


def test_early_stopping_on_a_rise_within_the_noise_is_noted():
    "f7: patience=1 on 100 valid rows stops on a rise under one standard error: an info finding says so."
    g = torch.Generator().manual_seed(0)
    W = torch.randn(8, 3, generator=g)
    X = torch.randn(700, 8, generator=g)
    y = (X @ W + torch.randn(700, 3, generator=g)).argmax(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    run = tb.fit(model, tb.TensorLoader(X[:600], y[:600], batch_size=32, shuffle=True),
                 tb.TensorLoader(X[600:], y[600:], batch_size=100), loss_fn=nn.functional.cross_entropy,
                 live=False, config=tb.TrainConfig(epochs=40, lr=3e-3, patience=1))
    assert run.stopped == "early_stopping"
    f = next(f for f in run.findings if f.kind == "early_stop_on_noise")
    assert f.severity == "info" and f.data["rise"] < f.data["standard_error"] and "min_delta" in f.advice


def test_early_stopping_on_a_real_rise_or_with_a_min_delta_says_nothing():
    "The note's boundary: a rise beyond one standard error, or a min_delta that already covers it: no note."
    from trainbook.triage import _stopped_on_noise

    def history(valid, se):
        h = tb.History()
        for e, v in enumerate(valid):
            h.append(10 * (e + 1), e, "valid", "loss", v)
            h.append(10 * (e + 1), e, "valid", "loss_se", se)
        return h
    noisy = history([0.34, 0.31, 0.28, 0.31], 0.05)
    assert _stopped_on_noise(noisy, tb.TrainConfig(patience=1)) is not None
    assert _stopped_on_noise(noisy, tb.TrainConfig(patience=1, min_delta=0.05)) is None
    assert _stopped_on_noise(history([0.34, 0.31, 0.28, 0.40], 0.05), tb.TrainConfig(patience=1)) is None
    assert _stopped_on_noise(noisy, tb.TrainConfig(patience=None)) is None
    # the advice asks for more patience than the run had (probe 23: patience=3 was told "3 or more")
    three = _stopped_on_noise(history([0.34, 0.31, 0.28, 0.29, 0.30, 0.29], 0.05), tb.TrainConfig(patience=3))
    assert "above its 3: 6 evaluations" in three.advice, three.advice


def test_a_memorized_training_set_is_overfitting_not_a_blow_up():
    """Probe 10: 40 rows of random labels, a wide MLP: the training loss falls to ~0 while the validation rises far
    above the constant predictor's, whose noise is wide. The training loss is not 'at the prior' by that noise."""
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(240, 8, generator=g), torch.randint(0, 3, (240,), generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 256), nn.ReLU(), nn.Linear(256, 3))
    run = tb.fit(model, tb.TensorLoader(X[:40], y[:40], batch_size=10, shuffle=True),
                 tb.TensorLoader(X[40:], y[40:], batch_size=200), loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=60, lr=1e-2))
    kinds = [f.kind for f in run.findings]
    assert "diverging" not in kinds and "overfitting" in kinds, kinds


# probe 32

def exploded(loss):
    "A history like probe 32's SGD(lr=1) on ×100 inputs: weight norms at step 1, gradient norms at step 10."
    h = tb.History()
    for s, v in enumerate(loss, 1): h.append(s, 0, "train", "loss", v)
    for name, w in (("0.weight", 28.2), ("0.bias", 1.45), ("2.weight", 79.7), ("2.bias", 0.228)):
        h.append(1, 0, "train", f"weight_norm/{name}", w)
    for name, g in (("0.weight", 1.57e17), ("0.bias", 9.7e14), ("2.weight", 2.5e16), ("2.bias", 0.637)):
        h.append(10, 0, "train", f"grad_norm/{name}", g)
    return h


def test_a_loss_that_blew_up_has_no_vanishing_gradients_from_its_exploded_layers():
    """32/1: the loss climbs ×2500 a step to 1e34 (NanGuard stops before any NaN is logged): the gradients
    at step 10 are the blown-up model's, against weights logged at step 1; 2.bias is not "1e5× smaller"."""
    found = tb.diagnose(exploded([15.1 * 2500.0 ** k for k in range(11)]))
    assert "diverging" in kinds(found) and "vanishing_gradients" not in kinds(found)
    # the same norms beside a loss that did not blow up: the rule still reads them (the cut, not a mute rule)
    assert "vanishing_gradients" in kinds(tb.diagnose(exploded([1.1] * 11)))


def test_a_fit_whose_loss_overflows_names_the_nan_and_no_vanishing_gradients(tmp_path):
    "32/1, the run itself: inputs ×100, SGD(lr=1): the loss overflows at step 12."
    g = torch.Generator().manual_seed(0)
    X = torch.randn(800, 10, generator=g)
    y = (X @ torch.randn(10, 3, generator=torch.Generator().manual_seed(123))).argmax(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 3))
    run = tb.fit(model, tb.TensorLoader(X * 100, y, batch_size=32, shuffle=False),
                 tb.TensorLoader(X[:256] * 100, y[:256], batch_size=256), loss_fn=nn.CrossEntropyLoss(),
                 optimizer=torch.optim.SGD(model.parameters(), lr=1.0), live=False,
                 config=tb.TrainConfig(epochs=3, lr=1.0, checkpoint_dir=str(tmp_path)))
    assert run.stopped == "nonfinite" and kinds(run.findings) == ["nonfinite"]


def test_a_schedule_that_set_the_lr_to_0_is_named():
    "32/2: a LambdaLR at 0 from step 16 of 375: not_learning names the lr, its advice starts with it."
    n = 375
    train = 1.0745 + 0.01 * np.random.default_rng(0).standard_normal(n)
    lr = np.where(np.arange(1, n + 1) < 16, 3e-4, 0.0)
    found = tb.diagnose(epochs_run(train, [1.0532] * 15, se=0.01, prior=1.0986, steps_per_epoch=25, lr=lr))
    f = next(f for f in found if f.kind == "not_learning")
    assert "learning rate was 0 from step 16 on (96% of the steps" in f.message
    assert f.advice.startswith("fix the lr schedule") and f.data["lr_zero_from_step"] == 16
    # a cosine that reaches 0 only at its last step is no stopped schedule
    cosine = 3e-4 * 0.5 * (1 + np.cos(np.pi * np.arange(1, n + 1) / n))
    found = tb.diagnose(epochs_run(train, [1.0532] * 15, se=0.01, prior=1.0986, steps_per_epoch=25,
                                   lr=cosine))
    assert not any("learning rate was 0" in f.message for f in found)


def waiting(share, step_time, steps_per_epoch=25, epochs=3):
    "A history whose epochs waited `share` of their time for data, at `step_time` s a step."
    h = tb.History()
    for e in range(epochs):
        end = (e + 1) * steps_per_epoch
        for s in range(end - steps_per_epoch + 1, end + 1): h.append(s, e, "train", "loss", 1.0 / s)
        h.append(end, e, "train", "data_wait", share)
        h.append(end, e, "train", "step_time", step_time)
    return h


def test_a_tiny_run_that_waited_a_third_of_its_time_is_no_slow_pipeline():
    "32/4: 34% of 75 steps of 1 ms (26 ms in all) is no time to win back; of 75 steps of 50 ms (1.3 s) it is."
    assert "slow_input_pipeline" not in kinds(tb.diagnose(waiting(0.34, 0.001)))
    f = next(f for f in tb.diagnose(waiting(0.34, 0.05)) if f.kind == "slow_input_pipeline")
    assert math.isclose(f.data["seconds_waited"], 0.34 * 0.05 * 75) and "1.28 s in all" in f.message


def test_an_lr_never_above_0_blames_no_schedule():
    "37/3: a param group frozen at lr 0 (the logged one), no scheduler: the lr is named, no schedule blamed."
    n = 375
    train = 1.0745 + 0.01 * np.random.default_rng(0).standard_normal(n)
    found = tb.diagnose(epochs_run(train, [1.0532] * 15, se=0.01, prior=1.0986, steps_per_epoch=25,
                                   lr=np.zeros(n)))
    f = next(f for f in found if f.kind == "not_learning")
    assert "schedule" not in f.message and "schedule" not in f.advice and f.data["lr_always_zero"]
    assert "(the first parameter group's) was 0 at every step" in f.message and "lr_zero_from_step" not in f.data


def lr_at_0_from_step_4(accum_steps, epochs, tmp_path):
    "A learnable task, LambdaLR 1 for 3 optimizer steps then 0; 32 optimizer steps in all."
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 4, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 if s < 3 else 0.0)
    return tb.fit(model, tb.TensorLoader(X, y, batch_size=16, shuffle=False),
                  tb.TensorLoader(X, y, batch_size=256), loss_fn=nn.CrossEntropyLoss(), optimizer=opt,
                  scheduler=sched, live=False,
                  config=tb.TrainConfig(epochs=epochs, lr=1e-2, seed=0, accum_steps=accum_steps,
                                        checkpoint_dir=str(tmp_path / str(accum_steps))))


def test_a_schedule_at_0_is_named_under_gradient_accumulation(tmp_path):
    "37/4: lr 0 from step 4 of 32: named with accum_steps=1 and =4 (its 3 steps at 0.01 learned 8%, then stood)."
    for accum_steps, epochs in ((1, 2), (4, 8)):
        run = lr_at_0_from_step_4(accum_steps, epochs, tmp_path)
        assert run.step == 32
        f = next((f for f in run.findings if f.kind == "not_learning"), None)
        assert f is not None, (accum_steps, run.findings)
        assert "the schedule stopped training" in f.message and f.data["lr_zero_from_step"] == 4
        assert f.advice.startswith("fix the lr schedule")


def test_a_loss_that_falls_on_at_a_logged_lr_of_0_is_no_stopped_schedule():
    "37/4: the logged lr (group 0's) at 0 from step 16 while the loss keeps falling: another group trains."
    n = 375
    train = 0.3 + 0.8 * np.exp(-np.arange(n) / 120) + 0.01 * np.random.default_rng(0).standard_normal(n)
    lr = np.where(np.arange(1, n + 1) < 16, 3e-4, 0.0)
    valid = [0.3 + 0.8 * np.exp(-25 * (e + 1) / 120) for e in range(15)]
    found = tb.diagnose(epochs_run(train, valid, se=0.01, prior=1.0986, steps_per_epoch=25, lr=lr))
    assert "not_learning" not in kinds(found) and not any("stopped training" in f.message for f in found)


def test_a_schedule_at_a_millionth_of_its_peak_is_named_as_one_at_0():
    "Probe 42: a LambdaLR factor of 1e-6 from step 16 (not exactly 0): the stalled loss was a generic not_learning."
    n = 375
    train = 1.0745 + 0.01 * np.random.default_rng(0).standard_normal(n)
    lr = np.where(np.arange(1, n + 1) < 16, 3e-4, 3e-10)
    found = tb.diagnose(epochs_run(train, [1.0532] * 15, se=0.01, prior=1.0986, steps_per_epoch=25, lr=lr))
    f = next(f for f in found if f.kind == "not_learning")
    assert "learning rate was 3e-10 from step 16 on (96% of the steps" in f.message
    assert f.advice.startswith("fix the lr schedule")
    # a step decay cut 10x twice (to 1% of its peak) stays unblamed: such an lr still moves the weights
    lr = np.where(np.arange(1, n + 1) < 16, 3e-4, 3e-6)
    found = tb.diagnose(epochs_run(train, [1.0532] * 15, se=0.01, prior=1.0986, steps_per_epoch=25, lr=lr))
    assert not any("the schedule stopped training" in f.message for f in found)


def test_a_validation_of_few_rows_is_said_once_with_its_noise():
    """Probe 50: a heavy-tailed regression validated on 8 rows: no finding at all without patience (with it, an
    info advising more patience); best.pt, early stopping and the overfitting judgement all read that loss."""
    torch.manual_seed(0)
    X = torch.randn(128, 4)
    y = X @ torch.ones(4, 1) + torch.distributions.StudentT(1.5).sample((128, 1))
    cfg = tb.TrainConfig(epochs=3, lr=1e-2, device="cpu")
    small = tb.fit(nn.Linear(4, 1), tb.TensorLoader(X[:120], y[:120], batch_size=16), [(X[120:], y[120:])],
                   loss_fn=nn.HuberLoss(), config=cfg, live=False)
    (f,) = [f for f in small.findings if f.kind == "small_validation"]
    assert f.severity == "warning" and f.data["rows"] == 8 and f.data["standard_error"] > 0
    assert f.message.startswith("the validation holds 8 rows: one evaluation's standard error is")
    enough = tb.fit(nn.Linear(4, 1), tb.TensorLoader(X[:64], y[:64], batch_size=16), [(X[64:], y[64:])],
                    loss_fn=nn.HuberLoss(), config=cfg, live=False)
    assert "small_validation" not in kinds(enough.findings)


def test_a_valid_loss_rising_inside_float_round_off_at_zero_is_not_overfitting():
    "Probe 50: a perfect run (train and valid ~1e-7, valid below train) was warned overfitting for 4.7e-9 → 1.1e-7."
    steps = np.arange(96)
    valid = np.array([4.7e-9, 1.2e-8, 3e-8, 5.5e-8, 8e-8, 9.5e-8, 1.1e-7, 1.07e-7])
    for scale in (1.0, 1e4):  # the same shape, 1e4 times larger: a rise far above the loss's round-off
        train = np.maximum(1.26 * np.exp(-steps / 4.0), 1.5e-7 * scale)
        found = tb.diagnose(epochs_run(train, valid * scale, se=1.9e-8 * scale, prior=1.386, steps_per_epoch=12))
        assert ("overfitting" in kinds(found)) == (scale > 1), (scale, kinds(found))


def test_overfitting_from_a_large_untrained_loss_is_found_above_its_round_off():
    """Probe 52: the round-off floor (eps32 × the untrained loss) hid a regression on unscaled targets whose valid
    loss climbed 5 → 30 from an MSE of 1e8; the floor holds only where valid does not end above train."""
    rng = np.random.default_rng(0)
    spe, epochs, best = 10, 30, 12
    for first, low, high in ((1e8, 5.0, 30.0), (1e6, 0.05, 0.3), (2.3, 1e-3, 3e-3)):
        rows = []
        for e in range(epochs):
            for s in range(spe):
                step = e * spe + s + 1
                frac = step / (epochs * spe)
                tl = float(np.exp(np.log(first) * (1 - frac) + np.log(low / 50) * frac)) * (1 + 0.01 * rng.standard_normal())
                rows.append((step, e, "train", "loss", tl))
            rows.append((step, e, "train", "epoch_loss", tl))
            v = low * (first / low) ** ((best - e) / best) if e <= best else low + (high - low) * (e - best) / (epochs - 1 - best)
            rows += [(step, e, "valid", "loss", v), (step, e, "valid", "loss_se", 0.02 * v)]
        found = tb.diagnose(pd.DataFrame(rows, columns=["step", "epoch", "split", "name", "value"]))
        assert "overfitting" in kinds(found), (first, kinds(found))


# probe 55


def test_a_loss_that_sums_its_rows_is_refused_before_any_step():
    """Bug 1: reduction='sum' logs the valid loss on the sum's scale while its standard error and the constant
    predictor's loss are per row (a healthy model was 'not learning'): fit and evaluate refuse it, naming the fix."""
    import functools
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 4, generator=g), torch.randint(0, 2, (64,), generator=g)
    dl = tb.TensorLoader(X, y, batch_size=16)
    model = nn.Linear(4, 2)
    before = model.weight.detach().clone()
    for summed in (nn.CrossEntropyLoss(reduction="sum"),
                   functools.partial(nn.functional.cross_entropy, reduction="sum")):
        with pytest.raises(ValueError, match=r"loss_fn \w+ adds up its rows' losses .*reduction='mean'"):
            tb.fit(model, dl, dl, loss_fn=summed, live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
        with pytest.raises(ValueError, match="reduction='mean'"): tb.evaluate(model, dl, summed)
        # the checklist's steps before fit read the loss as fit does
        with pytest.raises(ValueError, match="reduction='mean'"): tb.overfit_batch(model, next(iter(dl)), summed)
        with pytest.raises(ValueError, match="reduction='mean'"): tb.lr_find(model, dl, summed, num_steps=5)
    assert torch.equal(model.weight, before)  # refused before any step
    # the mean (the default), and a loss that keeps a value per row, are taken
    assert tb.evaluate(model, dl, nn.CrossEntropyLoss())["loss"] > 0
    assert tb.evaluate(model, dl, nn.CrossEntropyLoss(reduction="none"))["loss"] > 0


@pytest.mark.parametrize("lr, named", [(1e-7, True), (1e-2, False)])
def test_a_short_run_whose_weights_do_not_move_is_named_from_its_flat_validation(lr, named):
    """Probe 57: after the noise check, a 2-epoch run at lr 1e-7 (batches of 8, 60 steps: valid 0.663154 -> 0.663148)
    was silent (0/72 such short broken runs named, 42/72 before). Its steps are too noisy to tell; its two
    evaluations, flat and where the untrained model began, tell. The same run at a sensible lr stays quiet."""
    from torch.utils.data import DataLoader, TensorDataset
    g = torch.Generator().manual_seed(0)
    x = torch.randn(240, 4, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    xv = torch.randn(64, 4, generator=g)
    yv = (xv[:, 0] + 0.5 * xv[:, 1] > 0).long()
    dl = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    run = tb.fit(model, dl, DataLoader(TensorDataset(xv, yv), batch_size=16), loss_fn=nn.CrossEntropyLoss(),
                 live=False, config=tb.TrainConfig(epochs=2, lr=lr, device="cpu", seed=0))
    assert ("not_learning" in [f.kind for f in run.findings]) == named


@pytest.mark.parametrize("loss_kind", ["balanced", "bce"])
def test_a_model_with_no_signal_under_class_weights_or_bce_is_not_learning(loss_kind):
    """No signal in the inputs, 10% positives: with tb.class_weights the prior was read at the class frequencies (1.23,
    where ln 2 is the least a constant gets), and BCE had no prior at all, so a model that learned only the base rate
    (or nothing) ended with no finding."""
    torch.manual_seed(0)
    y = (torch.rand(2000) < 0.1).long()
    X = torch.randn(2000, 8)
    if loss_kind == "bce":
        y, loss_fn, out = y.float(), nn.BCEWithLogitsLoss(), [nn.Linear(32, 1), nn.Flatten(0)]
    else: loss_fn, out = nn.CrossEntropyLoss(weight=tb.class_weights(y[:1500])), [nn.Linear(32, 2)]
    train = tb.TensorLoader(X[:1500], y[:1500], batch_size=64, shuffle=True)
    valid = tb.TensorLoader(X[1500:], y[1500:], batch_size=250)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), *out)
    run = tb.fit(model, train, valid, loss_fn=loss_fn, config=tb.TrainConfig(epochs=5, lr=1e-2), live=False)
    assert "not_learning" in kinds(run.findings)


def test_overfitting_without_a_logged_standard_error_does_not_quote_one_of_0():
    "Probe 65: a Recorder's validate takes one number an evaluation; the message said 'standard error 0'."
    h = tb.History()
    train = np.exp(-np.arange(1, 401) / 60.0)
    valid = [0.8, 0.7, 0.65, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9]
    for s, v in enumerate(train, 1): h.append(s, (s - 1) // 40, "train", "loss", float(v))
    for e, v in enumerate(valid):
        h.append((e + 1) * 40, e, "train", "epoch_loss", float(np.mean(train[e * 40:(e + 1) * 40])))
        h.append((e + 1) * 40, e, "valid", "loss", v)
    found = [f for f in tb.diagnose(h) if f.kind == "overfitting"]
    assert found and "standard error not logged" in found[0].message and "standard error 0" not in found[0].message


def test_a_model_whose_weights_never_move_is_not_learning_even_under_the_prior():
    """Probe 67: at lr 1e-9 (or frozen) a model that happened to start under the constant predictor's loss was read
    as one that learned in its first tenth (the fall measured from the prior), so nothing was said; nor of ten
    bit-identical epochs logged per epoch (Keras)."""
    torch.manual_seed(0)
    X = torch.randn(640, 4)
    y = (X[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    data = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 512, 32)]
    tb.fit(model, data, loss_fn=nn.functional.cross_entropy, config=tb.TrainConfig(epochs=1, lr=1e-2), live=False)
    run = tb.fit(model, data, [(X[512:], y[512:])], loss_fn=nn.functional.cross_entropy,
                 config=tb.TrainConfig(epochs=6, lr=1e-9), live=False)
    found = {f.kind: f.message for f in run.findings}
    assert "the weights did not move" in found.get("not_learning", ""), found
    h = tb.History()
    for e in range(10):
        h.append(e + 1, e, "train", "loss", 1.0353)
        h.append(e + 1, e, "train", "epoch_loss", 1.0353)
        h.append(e + 1, e, "valid", "loss", 1.0663)
    assert [f.kind for f in tb.diagnose(h)] == ["not_learning"]
    moved = tb.History()
    for e in range(10):
        moved.append(e + 1, e, "train", "epoch_loss", 1.0 - 1e-4 * e)
        moved.append(e + 1, e, "train", "loss", 1.0 - 1e-4 * e)
    assert "the weights did not move" not in " ".join(f.message for f in tb.diagnose(moved))


# probe 89


def evaluations(valid, se, train, prior=None):
    "A history of epoch records alone: the valid loss (its SE, the prior's loss) and the train loss of each epoch."
    h = tb.History()
    for e, (v, s, t) in enumerate(zip(valid, se, train)):
        step = 10 * (e + 1)
        h.append(step, e, "train", "epoch_loss", t)
        h.append(step, e, "valid", "loss", v)
        h.append(step, e, "valid", "loss_se", s)
        if prior is not None: h.append(step, e, "valid", "prior_loss", prior)
    return h


# F6: a 3-class MLP (300 rows, 30 epochs): the valid loss bottoms at ~0.25 and climbs steadily to 0.40
F6_VALID = [0.6873, 0.4299, 0.336, 0.2882, 0.278, 0.3147, 0.262, 0.2976, 0.2573, 0.2672, 0.277, 0.2506, 0.2471, 0.2999,
            0.2838, 0.2657, 0.3194, 0.2818, 0.3147, 0.3392, 0.2978, 0.4149, 0.3309, 0.3707, 0.37, 0.3357, 0.3918,
            0.3584, 0.4061, 0.401]
F6_SE = [0.01736, 0.02176, 0.02504, 0.02813, 0.02985, 0.03445, 0.03103, 0.03655, 0.0335, 0.03668, 0.03974, 0.03629,
         0.03826, 0.04712, 0.04596, 0.04382, 0.05322, 0.04564, 0.05263, 0.05746, 0.0504, 0.06948, 0.05786, 0.0658,
         0.06663, 0.06115, 0.06956, 0.06393, 0.07236, 0.07336]
F6_TRAIN = [0.9558, 0.6521, 0.4758, 0.3897, 0.3546, 0.3288, 0.3004, 0.2658, 0.2569, 0.2371, 0.2223, 0.2213, 0.2104,
            0.1968, 0.1878, 0.1776, 0.1736, 0.1576, 0.1517, 0.1465, 0.1389, 0.1416, 0.1338, 0.1165, 0.125, 0.1124,
            0.1101, 0.101, 0.09632, 0.07838]


def test_a_steady_overfit_is_judged_against_the_noise_of_the_levels_it_compares():
    """Probe 89 F6: a rise of 47% (3.4 wiggles of one evaluation) over 18 epochs, a least-squares climb of 6 of its
    errors, was missed: the rise compares two averages (the last 6 evaluations' median, a 5-wide moving mean), whose
    noise is far under one evaluation's. The same curve flat after its bottom stays quiet."""
    [f] = tb.diagnose(evaluations(F6_VALID, F6_SE, F6_TRAIN, prior=1.089))
    assert f.kind == "overfitting" and f.severity == "warning"
    assert f.data["level_noise"] < f.data["wiggle"] and f.data["rise"] > f.data["threshold"]
    flat = F6_VALID[:13] + [F6_VALID[12] + (F6_VALID[i] - F6_VALID[i - 1]) * (-1) ** i for i in range(13, 30)]
    assert "overfitting" not in kinds(tb.diagnose(evaluations(flat, F6_SE, F6_TRAIN, prior=1.089)))


def test_the_overfitting_message_pairs_the_valid_and_train_loss_of_one_epoch():
    """Probe 89 E1: 'valid loss rose from 0.5829 (epoch 4) ... while train loss fell from 0.7531': 0.7531 was epoch
    0's train loss (read at another best than the epoch named); epoch 4's was 0.5352."""
    valid = [0.5809, 0.614, 0.5868, 0.612, 0.5829, 0.5867, 0.61, 0.6103, 0.6288, 0.6724, 0.6564, 0.6683, 0.6929,
             0.7153, 0.7359, 0.7282, 0.7869, 0.8012, 0.8311, 0.8892, 0.9312, 0.9197, 0.9841, 1.007, 1.083, 1.037,
             1.073, 1.091, 1.137, 1.193, 1.239, 1.28, 1.299, 1.306, 1.362, 1.388, 1.415, 1.456, 1.446, 1.488]
    se = [0.04658, 0.03822, 0.04131, 0.05048, 0.04557, 0.04525, 0.05022, 0.04771, 0.05421, 0.0622, 0.05718, 0.06058,
          0.06231, 0.06538, 0.06983, 0.06812, 0.07771, 0.0764, 0.07974, 0.08805, 0.09659, 0.09193, 0.1069, 0.1011,
          0.1124, 0.1127, 0.1169, 0.1175, 0.1296, 0.1337, 0.131, 0.1442, 0.146, 0.1466, 0.1545, 0.1588, 0.1609,
          0.1637, 0.1629, 0.1696]
    train = [0.7531, 0.6167, 0.5926, 0.5439, 0.5352, 0.5011, 0.4872, 0.4806, 0.4497, 0.432, 0.4089, 0.3961, 0.387,
             0.3853, 0.3327, 0.3012, 0.2924, 0.2593, 0.2434, 0.2168, 0.21, 0.1879, 0.1502, 0.135, 0.1256, 0.1132,
             0.09388, 0.0909, 0.0804, 0.06846, 0.05266, 0.04797, 0.04089, 0.04053, 0.03466, 0.025, 0.02771, 0.02232,
             0.01972, 0.0166]
    [f] = [f for f in tb.diagnose(evaluations(valid, se, train, prior=1.097)) if f.kind == "overfitting"]
    best = f.data["best_epoch"]
    assert f"valid loss rose from {valid[best]:.4g} (epoch {best})" in f.message
    assert f"train loss fell from {train[best]:.4g} to {train[-1]:.4g}" in f.message, f.message
    assert (f.data["train_from"], f.data["train_from_epoch"]) == (train[best], best)


def test_a_run_that_ended_above_the_prior_it_had_beaten_is_warned():
    """Probe 89 C3: batch size 1, Adam 3e-3: valid 1.098, 1.072, 0.910, then 1.844 at the last evaluation, 8.6 SEs
    above the constant predictor's 1.098 (7.8 below it the epoch before) while the step losses kept falling: no
    finding. The weights fit returns are worse than the prior: `unstable`, from the valid loss and its own SEs."""
    rng = np.random.default_rng(0)
    train = 1.1 * np.exp(-np.arange(600) / 900) * (1 + 0.1 * rng.standard_normal(600))

    def run(last_se):
        h = tb.History()
        for s, v in enumerate(train, 1): h.append(s, (s - 1) // 150, "train", "loss", float(v))
        for e, (v, se) in enumerate(zip([1.098, 1.072, 0.910, 1.844], [0.01016, 0.01362, 0.02403, last_se])):
            for name, value in (("loss", v), ("loss_se", se), ("prior_loss", 1.098)):
                h.append(150 * (e + 1), e, "valid", name, value)
        return h
    [f] = tb.diagnose(run(0.08671))
    assert (f.kind, f.severity, f.data["ended_above_prior"]) == ("unstable", "warning", True)
    assert "from 0.91 (epoch 2, 7.8 standard errors below) to 1.844 at the last evaluation (epoch 3, 8.6" in f.message
    # the last evaluation within 3 of its standard errors (0.4 each) of the prior: nothing to say
    assert tb.diagnose(run(0.4)) == []


def test_a_blow_up_whose_valid_loss_learned_after_is_not_said_never_to_recover():
    """Probe 89 B2: AdamW at lr 0.1 jumped at step 3 (1.35 → 1.67), then its valid loss fell to 0.431, 15 SEs under
    the constant predictor's 0.683, and climbed back to it. `diverging` said it 'never recovered' and 'never learned
    after'; it says what the run did. A run that never left the prior after its blow-up still never recovered."""
    rng = np.random.default_rng(0)
    s = np.arange(1, 381)
    dip = np.clip((s - 115) / 95, 0, 1) * np.clip((330 - s) / 30, 0, 1)  # down over 115-210, back by 330

    def run(depth):
        level = 0.69 - depth * dip
        train = level + 0.04 * rng.standard_normal(len(s))
        train[:3] = [0.678, 1.3456, 1.67]
        h = tb.History()
        for step, v in zip(s, train): h.append(int(step), int((step - 1) // 19), "train", "loss", float(v))
        for e in range(20):
            step = 19 * (e + 1)
            for name, value in (("loss", level[step - 1] - 0.02), ("loss_se", 0.017), ("prior_loss", 0.683)):
                h.append(step, e, "valid", name, float(value))
        return h
    [f] = [f for f in tb.diagnose(run(0.24)) if f.kind == "diverging"]
    assert "never" not in f.message + f.advice, f.message
    assert f.data["blowup_step"] == 3 and f.data["learned_after"]["epoch"] >= 10
    assert "though the valid loss fell after it to " in f.message and "it climbed back: it ended at" in f.message
    [f] = [f for f in tb.diagnose(run(0.0)) if f.kind == "diverging"]
    assert f.data["learned_after"] is None and "never recovered" in f.message


def test_a_frame_whose_validation_split_has_another_name_is_refused():
    "Probe 89: a tidy frame with split 'val' or 'validation' was read as one without validation: [] and no word."
    h = tb.History()
    for e in range(12):
        h.append(e, e, "train", "epoch_loss", 1 / (e + 1))
        h.append(e, e, "valid", "loss", 0.5 + 0.02 * (e - 5) ** 2)
    for name in ("val", "validation"):
        with pytest.raises(ValueError, match=rf"split\(s\) \['{name}'\] but no 'valid' split.*'{name}': 'valid'"):
            tb.diagnose(h.to_frame().replace({"split": {"valid": name}}))
    # a third split beside train and valid (a test set) is no mistake: read as before
    frame = pd.concat([h.to_frame(), h.to_frame().query("split == 'valid'").assign(split="test")])
    assert kinds(tb.diagnose(frame)) == ["overfitting"]


def test_thresholds_and_known_findings_are_checked_by_name():
    """Probe 89: Thresholds(overfit_rise="0.05") failed inside a rule ('can't multiply sequence'), NaN switched the
    rule off, a negative value was taken; known=["overfitting"] failed with "'str' object has no attribute"."""
    with pytest.raises(TypeError, match=r"Thresholds.overfit_rise must be a number, got '0.05' \(str\)"):
        tb.Thresholds(overfit_rise="0.05")
    for bad in (float("nan"), -1.0):
        with pytest.raises(ValueError, match=r"Thresholds.overfit_rise must be 0 or more \(math.inf turns its test off\)"):
            tb.Thresholds(overfit_rise=bad)
    assert tb.Thresholds(overfit_trend=math.inf).overfit_trend == math.inf  # a test switched off, on purpose
    with pytest.raises(TypeError, match="Thresholds.min_steps must be a whole number"): tb.Thresholds(min_steps=2.5)
    with pytest.raises(TypeError, match="Thresholds.overfit_z must be a number"): tb.Thresholds(overfit_z=True)
    assert tb.Thresholds(overfit_z=np.float32(2), min_steps=np.int64(5), blowup_z=0).min_steps == 5
    h = tb.History([(1, 0, "train", "loss", 1.0)])
    with pytest.raises(TypeError, match="known must hold trainbook Findings.*got str"):
        tb.diagnose(h, known=["overfitting"])


def test_a_blow_up_whose_valid_loss_fell_only_at_its_last_evaluation_is_not_said_to_climb_back():
    """Probe 96: AdamW at lr 0.3 on 50 validation rows: its valid loss fell to 0.9288 at its last evaluation, 3.8 SEs
    under the constant predictor's loss, and `diverging` said it 'climbed back' (nothing came after it), quoted
    the last evaluations' median as if it were the end, and rounded 3.77 standard errors to '4'."""
    rng = np.random.default_rng(0)
    s = np.arange(1, 381)
    train = 0.69 + 0.04 * rng.standard_normal(len(s))
    train[:3] = [0.678, 1.3456, 1.67]
    h = tb.History()
    for step, v in zip(s, train): h.append(int(step), int((step - 1) // 19), "train", "loss", float(v))
    for e in range(20):
        step = 19 * (e + 1)
        for name, value in (("loss", 0.4496 if e == 19 else 0.69), ("loss_se", 0.062), ("prior_loss", 0.683)):
            h.append(step, e, "valid", name, float(value))
    [f] = [f for f in tb.diagnose(h) if f.kind == "diverging"]
    assert "climbed back" not in f.message and "its last evaluation, epoch 19, 3.8 standard errors" in f.message
    assert "the median of its last evaluations" in f.message
    assert math.isclose(f.data["learned_after"]["below_prior_z"], (0.683 - 0.4496) / 0.062)


def test_a_count_of_thresholds_may_be_math_inf_as_its_error_says():
    "Probe 96: Thresholds(frozen_evals=-1) said 'math.inf turns its test off', and frozen_evals=math.inf was refused."
    with pytest.raises(ValueError, match=r"math.inf turns its test off"): tb.Thresholds(frozen_evals=-1)
    for name in ("frozen_evals", "overfit_after", "min_steps"):
        th = tb.Thresholds(**{name: math.inf})
        assert getattr(th, name) == math.inf
        assert tb.diagnose(epochs_run(np.linspace(1, 0.2, 94), [0.6, 0.5], 0.01, 0.69), thresholds=th) is not None
