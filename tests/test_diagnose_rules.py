"Each rule's boundary on made-up histories: the run's own noise decides, not a constant tuned on other runs."
import dataclasses
import math
import re

import numpy as np
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.loss_checks import ShapeMismatch
from trainbook.triage import confident_wrong, per_example_loss


def kinds(found): return [f.kind for f in found]


def small_batch_run(batch, steps=5000, spike_at=None, seed=0, with_spread=True):
    "A healthy run's history at `batch` rows: heavy-tailed per-example losses (gamma 0.5) on a falling curve."
    rng = np.random.default_rng(seed)
    h = tb.History()
    t = np.arange(1, steps + 1)
    mean = 0.2 + 0.9 * np.exp(-t / 800)
    loss = mean * rng.gamma(0.5, 2.0, size=(steps, batch)).mean(1)
    if spike_at is not None: loss[spike_at - 1] = mean[spike_at - 1] + 6.0
    per_epoch = 250
    for s, v in zip(t, loss): h.append(int(s), int((s - 1) // per_epoch), "train", "loss", float(v))
    for e, s in enumerate(range(per_epoch, steps + 1, per_epoch)):
        m = float(mean[s - 1])
        h.append(s, e, "train", "epoch_loss", float(loss[s - per_epoch:s].mean()))
        h.append(s, e, "train", "samples_per_s", batch / 1e-3)
        h.append(s, e, "train", "step_time", 1e-3)
        h.append(s, e, "valid", "loss", m * 1.05 + 0.01 * float(rng.standard_normal()))
        if with_spread:
            h.append(s, e, "valid", "loss_se", m * math.sqrt(2) / math.sqrt(500))
            h.append(s, e, "valid", "loss_sd", m * math.sqrt(2))
        h.append(s, e, "valid", "prior_loss", 1.1)
    return h


def test_batch_4_noise_is_not_spikes_but_a_bad_batch_is():
    "Batch 4: one hard row lifts a batch loss many times; the per-example sd / √4 says that is chance."
    for seed in range(3):
        assert "loss_spikes" not in kinds(tb.diagnose(small_batch_run(4, seed=seed))), seed
    spikes = next(f for f in tb.diagnose(small_batch_run(4, spike_at=3000)) if f.kind == "loss_spikes")
    assert spikes.data["steps"] == [3000]
    # batch 512 on the same scale: its chance spread is √128 times smaller, and the same bad batch stands out
    assert "loss_spikes" not in kinds(tb.diagnose(small_batch_run(512)))
    big = next(f for f in tb.diagnose(small_batch_run(512, spike_at=3000)) if f.kind == "loss_spikes")
    assert big.data["steps"] == [3000]


def evaluations(valid, se=0.02, train_fall=True):
    "A history of epochs: train loss falling, the given valid losses, each with its standard error."
    h = tb.History()
    for e, v in enumerate(valid):
        step = 10 * (e + 1)
        for s in range(step - 9, step + 1): h.append(s, e, "train", "loss", 1.0 / (1 + 0.1 * s))
        h.append(step, e, "train", "epoch_loss", 1.0 / (1 + e) if train_fall else 0.5)
        h.append(step, e, "valid", "loss", v)
        h.append(step, e, "valid", "loss_se", se)
    return h


def test_one_noisy_last_evaluation_is_not_overfitting():
    "The issue's run: 0.323-0.328 for a while, then 0.346 once: one point, within the noise: no finding."
    valid = [0.9, 0.6, 0.45, 0.38, 0.35, 0.335, 0.328, 0.325, 0.323, 0.326, 0.324, 0.327, 0.325, 0.323, 0.346]
    assert "overfitting" not in kinds(tb.diagnose(evaluations(valid, se=0.012)))


def test_a_sustained_rise_is_overfitting_with_its_evidence():
    valid = [0.9, 0.6, 0.45, 0.38, 0.35, 0.36, 0.38, 0.41, 0.44, 0.47, 0.5, 0.53, 0.56]
    f = next(f for f in tb.diagnose(evaluations(valid, se=0.012)) if f.kind == "overfitting")
    assert f.data["best_epoch"] == 4 and f.data["onset_epoch"] == 5
    assert f.data["rise"] > f.data["threshold"] and f.data["standard_error"] == pytest.approx(0.012)
    # the same rise inside a much larger standard error, with a noisy (not steady) climb: no finding
    noisy = [0.9, 0.6, 0.45, 0.38, 0.35, 0.45, 0.33, 0.47, 0.36, 0.46, 0.37, 0.5, 0.38]
    assert "overfitting" not in kinds(tb.diagnose(evaluations(noisy, se=0.3)))


def collapse_run(blow_up: bool, end_at_prior: bool, steps=400):
    "A training loss that (maybe) blows up early, then sits at the constant predictor's loss 1.386 (or learns)."
    rng = np.random.default_rng(0)
    prior = math.log(4)
    h, losses = tb.History(), []
    for s in range(1, steps + 1):
        if blow_up and 3 <= s <= 6: v = 8.0  # 5x the untrained loss: under the peak rule, so the collapse decides
        elif end_at_prior: v = prior + 0.02 * float(rng.standard_normal())
        else: v = prior * math.exp(-s / 80) + 0.1
        if s == 1: v = 1.5  # the untrained model's loss
        h.append(s, (s - 1) // 40, "train", "loss", v)
        losses.append(v)
    for e in range(steps // 40):
        step = 40 * (e + 1)
        # the epoch's mean of its steps, as fit records it; the valid loss of weights that move, to its SE's tenth
        v = prior + 0.005 + 0.001 * float(rng.standard_normal()) if end_at_prior else prior * math.exp(-step / 80) + 0.12
        h.append(step, e, "train", "epoch_loss", float(np.mean(losses[step - 40:step])))
        h.append(step, e, "valid", "loss", v)
        h.append(step, e, "valid", "loss_se", 0.01)
        h.append(step, e, "valid", "prior_loss", prior)
    return h


def test_a_collapse_to_the_prior_is_not_learning():
    "A blow-up, then the class prior's loss for the rest: diverging, said as such; no blow-up: not learning."
    found = tb.diagnose(collapse_run(blow_up=True, end_at_prior=True))
    diverging = next(f for f in found if f.kind == "diverging")
    assert "constant predictor" in diverging.message and diverging.data["at_prior"] is True
    # without the prior on record, the loss ends 8% under the untrained one: the old rule called it learning
    stuck = next(f for f in tb.diagnose(collapse_run(blow_up=False, end_at_prior=True)) if f.kind == "not_learning")
    assert "constant predictor" in stuck.message and stuck.data["prior_loss"] == pytest.approx(math.log(4))
    assert "capacity (a linear model cannot fit a non-linear task" in stuck.advice  # probe 15, f7: XOR, linear
    assert not [f for f in tb.diagnose(collapse_run(blow_up=False, end_at_prior=False)) if f.severity != "info"]


def gradient_history(zero_bias: bool):
    h = tb.History()
    for s in range(10, 510, 10):
        h.append(s, 0, "train", "grad_norm", 1.0)
        h.append(s, 0, "train", "grad_norm/0.weight", 0.5)
        h.append(s, 0, "train", "grad_norm/0.bias", 0.0 if zero_bias else 0.3)
        h.append(s, 0, "train", "grad_norm/3.weight", 0.4)
    return h


def test_a_structurally_zero_bias_is_info_not_vanishing():
    "A conv bias before BatchNorm: exactly 0 at every log, said once as info with the fix that fits it."
    found = tb.diagnose(gradient_history(zero_bias=True))
    assert kinds(found) == ["structural_zero_gradients"]
    f = found[0]
    assert f.severity == "info" and f.data["parameters"] == ["0.bias"]
    assert "bias=False" in f.advice and "ReLU" not in f.advice
    assert tb.diagnose(gradient_history(zero_bias=False)) == []


def test_a_real_batchnorm_cnn_gets_no_vanishing_warning():
    "Conv biases before BatchNorm in a real run: info, not a warning (every CNN+BN run was flagged)."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(256, 1, 8, 8, generator=g), torch.randint(0, 3, (256,), generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(256, 3))
    run = tb.fit(model, tb.TensorLoader(X, y, batch_size=32), tb.TensorLoader(X, y, batch_size=256),
                 loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=3, device="cpu"))
    assert "vanishing_gradients" not in kinds(run.findings)
    zero = next(f for f in run.findings if f.kind == "structural_zero_gradients")
    assert zero.data["parameters"] == ["0.bias"]


@pytest.mark.parametrize("loss_fn", [
    lambda p, y: ((p - y) ** 2).mean(),  # hand-written: no torch name to recognise
    lambda p, y: (p - y).abs().mean(),
    nn.MSELoss(),
], ids=["handwritten_mse", "lambda_l1", "MSELoss"])
def test_a_broadcast_shape_is_an_error_before_the_first_step(loss_fn):
    "(n, 1) against (n,) broadcasts to (n, n) whatever the loss: refused before any step, before ExampleLosses."
    X, y = torch.randn(64, 3), torch.randn(64)
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    before = [p.detach().clone() for p in model.parameters()]
    for callbacks in ([], [tb.ExampleLosses(tb.TensorLoader(X, y, batch_size=64))]):
        with pytest.raises(ShapeMismatch, match=r"\(16, 1\).*\(16,\)|\(64, 1\).*\(64,\)"):
            tb.fit(model, tb.TensorLoader(X, y, batch_size=16), loss_fn=loss_fn, callbacks=callbacks, live=False,
                   config=tb.TrainConfig(epochs=1, device="cpu"))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_a_loss_that_aligns_the_shapes_itself_is_accepted():
    "A loss that squeezes (n, 1) to (n,) before comparing is not a broadcast: it trains."
    X, y = torch.randn(64, 3), torch.randn(64)
    run = tb.fit(nn.Linear(3, 1), tb.TensorLoader(X, y, batch_size=16), live=False,
                 loss_fn=lambda p, t: nn.functional.mse_loss(p.squeeze(-1), t),
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.stopped == "completed"


def test_top_losses_takes_every_form_of_loss():
    "A module, a function with `reduction`, a lambda returning per-row values, a lambda returning a mean."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(40, 3, generator=g), torch.randint(0, 2, (40,), generator=g)
    net = nn.Linear(3, 2)
    forms = [nn.CrossEntropyLoss(), nn.functional.cross_entropy,
             lambda o, t: nn.functional.cross_entropy(o, t, reduction="none"),
             lambda o, t: nn.functional.cross_entropy(o, t)]
    tables = [tb.top_losses(net, [(X[:25], y[:25]), (X[25:], y[25:])], fn, k=5) for fn in forms]
    for t in tables[1:]:
        assert t.index.tolist() == tables[0].index.tolist()
        assert np.allclose(t["loss"].to_numpy(), tables[0]["loss"].to_numpy(), atol=1e-6)
    # per_example_loss: one call where the loss allows it, None with one_call for a mean-only loss
    out = net(X)
    assert per_example_loss(forms[3], out, y, one_call=True) is None
    assert per_example_loss(forms[2], out, y, one_call=True).shape == (40,)


def test_evaluate_records_the_standard_error_and_the_prior():
    "evaluate's .stats: per-example sd / √n and the class prior's cross entropy; fit records them per epoch."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(300, 4, generator=g), torch.randint(0, 3, (300,), generator=g)
    net = nn.Linear(4, 3)
    res = tb.evaluate(net, tb.TensorLoader(X, y, batch_size=64), nn.functional.cross_entropy)
    per_row = nn.functional.cross_entropy(net(X), y, reduction="none").detach()
    assert res.stats["loss_se"] == pytest.approx(float(per_row.std() / math.sqrt(300)), rel=1e-4)
    p = torch.bincount(y, minlength=3).double() / 300
    assert res.stats["prior_loss"] == pytest.approx(float(-(p * p.log()).sum()), rel=1e-5)
    assert set(res) == {"loss"}  # the results a monitor, a progress bar or a tracker reads are unchanged
    # a mean-only loss: the spread between the batches instead
    mean_only = tb.evaluate(net, tb.TensorLoader(X, y, batch_size=64), lambda o, t: nn.functional.cross_entropy(o, t))
    assert mean_only.stats["spread_from"] == "batches" and mean_only.stats["loss_se"] > 0
    # regression under an MSE-like loss: the targets' variance
    yr = 2 * X[:, 0]
    reg = tb.evaluate(nn.Linear(4, 1), tb.TensorLoader(X, yr, batch_size=64),
                      lambda o, t: nn.functional.mse_loss(o.squeeze(-1), t))
    assert reg.stats["prior_loss"] == pytest.approx(float(yr.double().var(unbiased=False)), rel=1e-4)
    run = tb.fit(net, tb.TensorLoader(X, y, batch_size=64), tb.TensorLoader(X, y, batch_size=100),
                 loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=2, device="cpu"))
    assert len(run.records.series("loss_se", "valid")) == 2 and len(run.records.series("prior_loss", "valid")) == 2


def test_label_noise_is_spread_over_classes_a_class_not_yet_learned_is_not():
    "Confident learning: flipped labels put confidently-wrong rows in every class; a minority class the model "
    "has not learned yet puts them all in that one class."
    rng = np.random.default_rng(0)
    n, k = 3000, 3
    true = rng.integers(0, k, n)
    probs = np.full((n, k), 0.05)
    probs[np.arange(n), true] = 0.9
    noisy = true.copy()
    flip = rng.random(n) < 0.3
    noisy[flip] = (true[flip] + rng.integers(1, k, flip.sum())) % k
    share, focus = confident_wrong(noisy, probs)
    assert share > 0.2 and focus < 0.5
    # a minority class (10% of rows, labels right) predicted as class 0 with the majority's confidence
    labels = np.where(rng.random(n) < 0.1, 2, rng.integers(0, 2, n))
    guess = probs.copy()
    guess[labels == 2] = [0.92, 0.04, 0.04]
    guess[labels != 2] = 0.05
    guess[labels != 2, labels[labels != 2]] = 0.9
    share, focus = confident_wrong(labels, guess)
    assert share > 0.05 and focus == 1.0
    h = tb.History()
    for e in range(6):
        h.append(e, e, "train", "confident_wrong", share)
        h.append(e, e, "train", "confident_wrong_focus", focus)
    assert "label_noise" not in kinds(tb.diagnose(h))


def test_a_growing_history_is_read_incrementally_with_the_same_verdicts():
    "The live diagnosis after each epoch reads only the new rows; its findings equal a fresh diagnosis'."
    full = small_batch_run(16, steps=3000, spike_at=2000)
    rows = list(full.rows())
    growing = tb.History()
    for end in (1000, 2100, len(rows)):
        for r in rows[len(growing):end]: growing.append(*r)
        again = tb.History(list(growing.rows()))
        assert [(f.kind, f.data.get("steps")) for f in tb.diagnose(growing)] == \
               [(f.kind, f.data.get("steps")) for f in tb.diagnose(again)]
    assert "loss_spikes" in kinds(tb.diagnose(growing))


def test_a_rise_after_a_warm_restart_is_the_schedule_not_a_spike():
    "The loss jumps where the logged lr jumped back up (a warm restart): no spike; the same jump elsewhere is one."
    def run(lr_jump_at):
        h = small_batch_run(512, steps=3000, spike_at=2000)
        for s in range(1, 3001):
            h.append(s, (s - 1) // 250, "train", "lr", 1e-3 if s < lr_jump_at else 1e-2)
        return h
    assert "loss_spikes" not in kinds(tb.diagnose(run(lr_jump_at=1999)))
    assert "loss_spikes" in kinds(tb.diagnose(run(lr_jump_at=2600)))


def noisy_label_history(valid_fall: float, epochs: int = 10, others: float = 0.8) -> tb.History:
    "ExampleLosses' evidence of 25% confidently-wrong rows spread over classes, the rest fitted only to `others` "
    "of their untrained loss; the train loss falls 0.02 an epoch, the valid loss `valid_fall` (SE 0.02)."
    h = tb.History()
    for e in range(epochs):
        h.append(e, e, "train", "confident_wrong", 0.25)
        h.append(e, e, "train", "confident_wrong_focus", 0.3)
        h.append(e, e, "train", "stuck_share", 0.25)
        h.append(e, e, "train", "others_loss", others)
        h.append(e, e, "train", "epoch_loss", 1.3 - 0.02 * e)
        h.append(e, e, "valid", "loss", 1.32 - valid_fall * e)
        h.append(e, e, "valid", "loss_se", 0.02)
    return h


def test_label_noise_the_models_fit_does_not_carry_to_held_out_rows():
    "Heavy noise caps the fit of the rest: then the evidence is a train loss that falls on while the valid loss "
    "does not follow, by more than noise_gap_z of its standard errors; falling together is learning, not noise."
    th = tb.Thresholds()
    # over the later 5 epochs the train loss falls 0.10; the valid loss 0.0: 5 SEs short, it memorizes
    found = [f for f in tb.diagnose(noisy_label_history(valid_fall=0.0)) if f.kind == "label_noise"]
    assert len(found) == 1 and found[0].data["not_carried_z"] == pytest.approx(5.0)
    assert "held-out" in found[0].message
    # the valid loss follows the train loss down (0.09 of 0.10: half an SE short): a model still learning
    assert "label_noise" not in kinds(tb.diagnose(noisy_label_history(valid_fall=0.018)))
    # the boundary: short by just over / just under noise_gap_z standard errors
    over = (0.10 - (th.noise_gap_z + 0.1) * 0.02) / 5
    under = (0.10 - (th.noise_gap_z - 0.1) * 0.02) / 5
    assert "label_noise" in kinds(tb.diagnose(noisy_label_history(valid_fall=over)))
    assert "label_noise" not in kinds(tb.diagnose(noisy_label_history(valid_fall=under)))
    # the rows confidently wrong all in one class: a class not learned yet, whatever the gap
    h = noisy_label_history(valid_fall=0.0)
    for e in range(10): h.append(e, e, "train", "confident_wrong_focus", 1.0)
    assert "label_noise" not in kinds(tb.diagnose(h))


def test_overfitting_onset_is_the_lowest_evaluation_at_the_smoothed_bottom():
    "A steep fall into a slow rise: a moving mean puts the bottom one epoch late; the low of the convex fit "
    "around it is the lowest evaluation, the best epoch, and the onset the one after it."
    v = [1.0, 0.8, 0.6, 0.45, 0.35, 0.30, 0.31, 0.32, 0.335, 0.35, 0.365, 0.38, 0.395, 0.41, 0.425, 0.44]
    h = tb.History()
    for e, value in enumerate(v):
        h.append(e, e, "train", "epoch_loss", 1.0 / (e + 1))
        h.append(e, e, "valid", "loss", value)
    found = [f for f in tb.diagnose(h) if f.kind == "overfitting"]
    assert len(found) == 1
    assert found[0].data["best_epoch"] == 5 and found[0].data["onset_epoch"] == 6



def overfit_finding(valid, se=0.01):
    "The overfitting finding of `evaluations(valid, se)`."
    return next(f for f in tb.diagnose(evaluations(valid, se=se)) if f.kind == "overfitting")


FALL = [1.0, 0.7, 0.5, 0.4, 0.34]  # epochs 0-4
RISE = [0.33, 0.36, 0.39, 0.42, 0.45, 0.48, 0.51, 0.54]  # epochs 12-19


def test_a_flat_bottom_puts_the_onset_at_its_centre_and_says_it_is_flat():
    "The valid loss exactly flat over epochs 5-11: the lowest of them is any one; the best is the centre."
    f = overfit_finding(FALL + [0.30] * 7 + RISE)
    assert f.data["best_range"] == [5, 11]
    assert f.data["best_epoch"] == 8 and f.data["onset_epoch"] == 9
    assert "flat within noise over epochs 5-11" in f.message


def test_a_bottom_flat_within_noise_is_reported_as_a_stretch():
    "Epochs 5-11 differ by less than the evaluation-to-evaluation noise: the finding names the stretch."
    jitter = [0.002, -0.003, 0.001, -0.002, 0.003, -0.001, 0.002, -0.002, 0.001, -0.003, 0.002, -0.001, 0.003,
              -0.002]
    base = FALL + [0.30] * 7 + RISE
    f = overfit_finding([b + jitter[i % len(jitter)] for i, b in enumerate(base)])
    first, last = f.data["best_range"]
    assert 5 <= first and last <= 11 and last - first >= 3
    assert first <= f.data["best_epoch"] <= last and f.data["onset_epoch"] == f.data["best_epoch"] + 1
    assert f"flat within noise over epochs {first}-{last}" in f.message


def test_a_sharp_v_puts_the_onset_after_its_lowest_evaluation():
    "A fall and a rise that meet at epoch 5: the best epoch is the lowest evaluation, a stretch of one epoch."
    f = overfit_finding([1.0, 0.85, 0.7, 0.55, 0.4, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0, 1.15])
    assert f.data["best_epoch"] == 5 and f.data["onset_epoch"] == 6
    assert f.data["best_range"] == [5, 5] and "flat within noise" not in f.message


def test_the_convex_fit_is_convex_and_keeps_a_convex_curve():
    "`convex_fit` (least squares, bending up only): a convex curve comes back as it was; a noisy one is "
    "bent up everywhere and fits at least as well as the best line."
    from trainbook.curvefit import convex_fit
    x = np.arange(12, dtype=float)
    curve = 0.3 + 0.01 * (x - 7) ** 2 + 0.02 * np.maximum(x - 9, 0)
    np.testing.assert_allclose(convex_fit(curve, np.ones(12)), curve, atol=1e-9)
    rng = np.random.default_rng(0)
    y = curve + 0.05 * rng.standard_normal(12)
    w = rng.uniform(0.5, 2.0, 12)
    fit = convex_fit(y, w)
    assert np.all(np.diff(fit, 2) >= -1e-9)
    line = np.polyval(np.polyfit(x, y, 1, w=np.sqrt(w)), x)
    assert np.sum(w * (y - fit) ** 2) <= np.sum(w * (y - line) ** 2) + 1e-12

def bending_rise(se: float = 0.01, tail=(0.06, 0.10, 0.13, 0.15, 0.16)) -> tb.History:
    "A valid loss that falls for 15 epochs, then rises steeply over 5 evaluations, bending (SE `se`)."
    fall = 1.0 - 0.6 * (1 - np.exp(-np.arange(15) / 3))
    v = np.concatenate([fall, fall[-1] + np.array(tail)])
    h = tb.History()
    for e, value in enumerate(v):
        h.append(e, e, "train", "epoch_loss", 1.0 / (e + 1))
        h.append(e, e, "valid", "loss", float(value))
        h.append(e, e, "valid", "loss_se", se)
    return h


def test_a_smooth_steep_rise_is_overfitting_by_a_trend_test_against_the_measured_noise():
    "A rise that bends has first differences that vary (a large wiggle); against each evaluation's standard error "
    "its slope is a clear trend. One noisy evaluation's worth of rise is not."
    # a wiggle test this strict misses the bend (a rise of 8.6 of the two levels' noise, 8.0 wiggles) ...
    strict = tb.Thresholds(overfit_z=12.0)
    no_trend = dataclasses.replace(strict, overfit_trend=math.inf)
    # (only the level shift sees it then: the mean after the best against the calm stretch before it)
    by_level = [f for f in tb.diagnose(bending_rise(), no_trend) if f.kind == "overfitting"]
    assert all(f.data["level_shift"] and f.data["rise"] < f.data["threshold"] for f in by_level)
    found = [f for f in tb.diagnose(bending_rise(), strict) if f.kind == "overfitting"]  # ... the trend test not
    assert len(found) == 1 and found[0].data["trend_z"] > strict.overfit_trend
    assert found[0].data["onset_epoch"] == 15
    # the same shape 20 times smaller, inside its standard errors: no trend to speak of
    small = bending_rise(tail=tuple(0.05 * r for r in (0.06, 0.10, 0.13, 0.15, 0.16)))
    assert "overfitting" not in kinds(tb.diagnose(small, strict))


SE = 0.01  # the made-up evaluations' standard error below


def floor_then_rise(seed, n=40, kink=20, slope=1.0, paired=False, bump=False):
    "A valid loss that falls to a floor (exp, τ = 3 evaluations), then rises by `slope` SEs an evaluation "
    "from `kink`; each evaluation an independent draw of its SE, or (`paired`) one shared offset plus steps "
    "of 0.1 SE (the same rows each time). Returns the valid losses and the true onset (after the low)."
    e = np.arange(n, dtype=float)
    mean = 0.3 + 0.5 * np.exp(-e / 3) + slope * SE * np.maximum(e - kink, 0)
    if bump: mean = mean + 12 * SE * np.exp(-0.5 * (e - 8) ** 2)  # a bump of 12 SEs at epoch 8
    rng = np.random.default_rng(seed)
    if paired: noise = SE * (rng.standard_normal() + 0.1 * rng.standard_normal(n))
    else: noise = SE * rng.standard_normal(n)
    return mean + noise, int(np.argmin(mean)) + 1


def overfit_data(valid):
    "The overfitting finding's data on `evaluations(valid, SE)`, or None when there is none."
    found = [f for f in tb.diagnose(evaluations(valid, se=SE)) if f.kind == "overfitting"]
    return found[0].data if found else None


def convex_onset(valid):
    "The onset the convex fit alone places (the library's before the fall-and-rise fit)."
    from trainbook.curvefit import convex_low, smooth_evaluations, smoothing_half
    smooth = smooth_evaluations(valid)
    bottom = int(np.argmin(smooth))
    return convex_low(valid, np.full(len(valid), SE), smooth, bottom, smoothing_half(len(valid)))[0] + 1


def test_evaluations_drawn_afresh_get_one_fall_and_rise_curve_and_its_onset_is_the_turn():
    "A flat floor under independent draws: a local fit takes the noise for the bottom and lands early; "
    "one curve through every evaluation (a saturating fall plus a rise) places the turn within 1 on average."
    errors, convex = [], []
    for seed in range(20):
        valid, truth = floor_then_rise(seed)
        d = overfit_data(valid)
        assert d is not None and d["onset_fit"] == "fall_and_rise", seed
        assert d["scatter"] >= d["scatter_floor"] >= 1 / 3 and d["fit_chi2_dof"] <= d["fit_chi2_limit"]
        assert d["best_range"][0] <= d["best_epoch"] <= d["best_range"][1]
        errors.append(d["onset_epoch"] - truth)
        convex.append(convex_onset(valid) - truth)
    assert np.mean(np.abs(errors)) <= 1, errors
    assert np.mean(convex) < -1 and np.mean(np.abs(errors)) < np.mean(np.abs(convex)), convex


def test_evaluations_of_the_same_rows_keep_the_convex_fit():
    "The same curve and SE, but evaluations that move together (steps of 0.1 SE): what they show is the "
    "model's own change, so the evaluations are followed (the convex fit); the steps fail the scatter test."
    for seed in range(5):
        valid, truth = floor_then_rise(seed, paired=True)
        d = overfit_data(valid)
        assert d["onset_fit"] == "convex" and d["scatter"] < d["scatter_floor"], seed
        assert abs(d["onset_epoch"] - truth) <= 2, (seed, d["onset_epoch"], truth)


def test_a_curve_the_fall_and_rise_cannot_follow_keeps_the_convex_fit():
    "Independent draws around a curve with a 12-SE bump on its fall: no saturating fall plus rise fits it "
    "within the SEs (chi2/dof over its 99% quantile), so the convex fit places the turn."
    found = 0
    for seed in range(5):
        d = overfit_data(floor_then_rise(seed, bump=True)[0])
        if d is None: continue
        found += 1
        assert d["onset_fit"] == "convex" and d["fit_chi2_dof"] > d["fit_chi2_limit"], seed
    assert found >= 2


def test_too_few_evaluations_after_the_best_to_tell_keep_the_convex_fit():
    "Five or six evaluations after the best: the scatter test's 1% floor is under a third of an SE, where "
    "steps of evaluations that move together pass it too, so it cannot tell: the convex fit, and no curve fitted."
    for seed in range(3):
        valid, truth = floor_then_rise(seed, n=16, kink=10, slope=3.0)
        d = overfit_data(valid)
        assert d["onset_fit"] == "convex" and d["scatter"] is None, seed  # no curve fitted: ...
        assert d["scatter_floor"] < 1 / 3, seed  # ... the test could not tell
        assert abs(d["onset_epoch"] - truth) <= 1, seed


def test_the_fall_and_rise_fit_recovers_its_own_curve():
    "`fall_and_rise` on a noise-free member of its family (τ on its grid, the rise from a half evaluation): "
    "the same curve back, b and c clamped at 0 when the data fall or rise no further."
    from trainbook.curvefit import fall_and_rise
    n = 30
    x = np.arange(n, dtype=float)
    tau = float(np.geomspace(0.25, n, 24)[12])
    curve = 0.4 + 0.8 * np.exp(-x / tau) + 0.05 * np.maximum(x - 17.5, 0)
    fit, got_tau, knot, rss = fall_and_rise(curve, np.ones(n))
    np.testing.assert_allclose(fit, curve, atol=1e-8)
    assert got_tau == pytest.approx(tau) and knot == 17.5 and rss < 1e-8  # the normal equations: round-off
    # a curve that only rises: no fall (b = 0), the fit is a flat line plus the hinge
    rising = 0.5 + 0.05 * np.maximum(x - 10, 0)
    np.testing.assert_allclose(fall_and_rise(rising, np.ones(n))[0], rising, atol=1e-8)


def test_the_noise_tests_quantiles_and_scatter():
    "The chi2 quantiles (Wilson-Hilferty) match the tables; independent draws scatter as 1 SE, paired less."
    from trainbook.curvefit import chi2_share, scatter_as_sampled
    assert chi2_share(10, 2.326) == pytest.approx(23.209 / 10, rel=0.01)  # chi2 with 10 dof: 99% 23.209
    assert chi2_share(10, -2.326) == pytest.approx(2.558 / 10, rel=0.03)  # ... 1% 2.558
    assert chi2_share(100, 2.326) == pytest.approx(135.807 / 100, rel=0.005)
    rng = np.random.default_rng(0)
    se = rng.uniform(0.5, 2.0, 200)
    drawn, floor, top = scatter_as_sampled(se * rng.standard_normal(200) + 0.01 * np.arange(200), se)
    assert floor < drawn < top and drawn == pytest.approx(1, abs=0.15)
    paired, floor, _ = scatter_as_sampled(3.0 + 0.1 * se * rng.standard_normal(200), se)
    assert paired < floor and paired == pytest.approx(0.1, abs=0.05)


NAN = float("nan")


def test_a_saved_history_whose_loss_turned_nan_gets_one_nonfinite_error():
    "A History, its DataFrame or a Run: a train loss NaN from step 4 is a nonfinite error naming the split, the step "
    "and the epoch, whatever the run's length; diagnose said nothing under 20 steps and 'diverging' above."
    short = tb.History([(s, 0, "train", "loss", v) for s, v in enumerate([1.0, 0.9, 0.8, NAN, NAN], 1)])
    long = tb.History([(s, (s - 1) // 10, "train", "loss", 1.0 / s if s < 40 else NAN) for s in range(1, 61)])
    for h, step, epoch in ((short, 4, 0), (long, 40, 3)):
        for given in (h, h.to_frame()):  # a History, or the tidy DataFrame a saved run gives
            found = tb.diagnose(given)
            assert kinds(found) == ["nonfinite"], found
            f = found[0]
            assert f.severity == "error" and (f.data["split"], f.data["step"], f.data["epoch"]) == ("train", step, epoch)
            assert f.data["names"] == ["loss"] and f"at step {step} (epoch {epoch})" in f.message
            assert "non-finite train loss (loss=nan)" in f.message and "learning rate" in f.advice


def test_a_nan_validation_loss_every_epoch_is_a_nonfinite_error_and_nothing_else():
    "Train falling, valid NaN from the first evaluation: the valid split, epoch 0, the data named in the advice."
    h = tb.History([(e + 1, e, "train", "epoch_loss", 1 / (e + 1)) for e in range(20)]
                   + [(e + 1, e, "valid", "loss", NAN) for e in range(20)])
    [f] = tb.diagnose(h)
    assert (f.kind, f.severity, f.data["split"], f.data["epoch"], f.data["step"]) == ("nonfinite", "error", "valid", 0, 1)
    assert "check_data" in f.advice


def test_a_history_that_went_nan_gets_no_nonsense_beside_the_nonfinite_finding():
    "The epoch loss NaN from epoch 4 while the valid loss stays low: no 'valid loss is nan% of training' "
    "(suspicious_score on a NaN ratio), no divergence; the train loss first, the valid one noted."
    rows = [(s, (s - 1) // 10, "train", "loss", 1.0 / s if s <= 40 else NAN) for s in range(1, 81)]
    rows += [(10 * (e + 1), e, "train", "epoch_loss", 1.0 / (e + 1) if e < 4 else NAN) for e in range(8)]
    rows += [(10 * (e + 1), e, "valid", "loss", 0.05) for e in range(8)]
    [f] = tb.diagnose(tb.History(rows))
    assert (f.kind, f.data["split"], f.data["step"]) == ("nonfinite", "train", 41) and "also" not in f.data
    # valid NaN too, later: named beside it
    rows += [(90, 8, "valid", "loss", NAN)]
    [f] = tb.diagnose(tb.History(rows))
    assert f.data["also"] == {"split": "valid", "step": 90, "epoch": 8} and "the valid loss from step 90" in f.message


def test_what_the_run_already_found_is_not_said_again():
    "known=: the loop's nonfinite error stands for diagnose's; a quieter one (a NaN metric) does not hide it."
    h = tb.History([(s, 0, "train", "loss", v) for s, v in enumerate([1.0, 0.9, NAN], 1)])
    guard = tb.Finding("nonfinite", "error", "non-finite loss at step 3 (epoch 0, batch 2): ...")
    metric = tb.Finding("nonfinite", "warning", "validation at epoch 0 (step 2) gave valid_accuracy=nan")
    assert tb.diagnose(h, known=[guard]) == []
    assert kinds(tb.diagnose(h, known=[metric])) == ["nonfinite"]
    assert kinds(tb.diagnose(h, known=[tb.Finding("overfitting", "warning", "")])) == ["nonfinite"]


def said(message):
    "The numbers a diverging message gives, in order: the start, the peak (if it is not the end), the end."
    return [float(x) for x in re.findall(r"(?:started at|peaked at|rose to|ended at) (-?[\d.]+(?:e[+-]?\d+)?)",
                                         message)]


def test_a_steady_rise_is_said_with_numbers_that_compare_like_with_like():
    "1.05^s up to 131.5 was 'peaked at 131.5 and ended at 105.6' (a raw peak, a smoothed end): it rose to the end."
    loss = [1.05 ** s for s in range(1, 101)]
    rows = [(s, (s - 1) // 10, "train", "loss", v) for s, v in enumerate(loss, 1)]
    [f] = tb.diagnose(tb.History(rows))
    numbers = said(f.message)
    assert f.kind == "diverging" and numbers == sorted(numbers), f.message
    assert numbers[-1] == max(numbers) and abs(numbers[-1] - loss[-1]) < 0.1, f.message
    assert "rose to 131.5 by its last step" in f.message and "7-step moving medians" in f.message
    # a blow-up that came partly back: the peak and the end, both 7-step medians, the end below the peak
    back = loss[:80] + [loss[79] * 0.97 ** k for k in range(1, 21)]
    [f] = tb.diagnose(tb.History([(s, 0, "train", "loss", v) for s, v in enumerate(back, 1)]))
    start, peak, end = said(f.message)
    med7 = [np.median(back[max(0, i - 3):i + 4]) for i in range(len(back))]  # not the raw top
    assert f.data["peak_step"] == int(np.argmax(med7)) + 1 and abs(peak - max(med7)) < 0.01, f.message
    assert abs(end - back[-1]) < 0.01, f.message
    assert start < end < peak and f.data["last_loss"] == back[-1]


def test_two_outlier_batches_a_step_apart_are_spikes_not_a_blow_up():
    "Probe 15, f2: Student-t targets: steps 1763-1765 read 183, 1.4, 182.6 in a falling run; that was an error."
    rng = np.random.default_rng(0)
    n = 1890
    loss = np.linspace(4.6, 2.0, n) * np.exp(rng.normal(0, 0.15, n))
    loss[[120, 340, 900, 1500]] *= 40  # scattered outliers, as heavy tails give
    loss[1762], loss[1764] = 183.3, 182.6  # two a step apart
    rows = [(s, (s - 1) // 63, "train", "loss", float(v)) for s, v in enumerate(loss, 1)]
    found = tb.diagnose(tb.History(rows))
    assert "diverging" not in [f.kind for f in found], [f.message for f in found]
    assert "loss_spikes" in [f.kind for f in found]
    # the same outliers held for four steps of seven: a blow-up
    loss[1760:1767] = [183.0, 2.0, 184.0, 185.0, 2.0, 186.0, 2.0]
    found = tb.diagnose(tb.History([(s, (s - 1) // 63, "train", "loss", float(v)) for s, v in enumerate(loss, 1)]))
    assert "diverging" in [f.kind for f in found]


def learned_in_nine_steps(steps=360, per_epoch=12, seed=0):
    "An easy task's history (probe f6): 0.75 → ~1e-7 in 9 steps, then round-off that creeps up; tiny gradients."
    rng = np.random.default_rng(seed)
    early = [0.75, 0.078, 0.016, 0.0035, 7e-4, 4e-4, 2e-4, 1e-4, 3e-5]
    creep = 1e-7 * np.exp(np.arange(steps - len(early)) / 110) * rng.lognormal(0, 0.8, steps - len(early))
    loss = np.concatenate([early, creep])
    rows = [(s, (s - 1) // per_epoch, "train", "loss", float(v)) for s, v in enumerate(loss, 1)]
    # the gradient norm, every 10 steps: 1e-4 at the first log (the loss just reached ~1e-5), then ~1e-6 that
    # grows ten-fold with the round-off, far below where it was when the model was learning
    grads = np.concatenate([[1.1e-4], 2e-6 * np.exp(np.arange(steps // 10 - 1) / 14)])
    rows += [(10 * (i + 1), (10 * (i + 1) - 1) // per_epoch, "train", "grad_norm", float(g))
             for i, g in enumerate(grads)]
    for e, s in enumerate(range(per_epoch, steps + 1, per_epoch)):
        rows.append((s, e, "train", "epoch_loss", float(loss[s - per_epoch:s].mean())))
        valid = [3e-6, 1.3e-7, 5e-8][e] if e < 3 else 4.2e-8 * math.exp((e - 3) / 7)  # as f6's: ~0, then creeps
        rows.append((s, e, "valid", "loss", valid))
        rows.append((s, e, "valid", "loss_se", valid / 3))
        rows.append((s, e, "valid", "prior_loss", 0.685))
    return tb.History(rows)


def test_a_run_that_learned_inside_its_first_window_is_not_not_learning():
    "f6: the first tenth's median was already converged, so 5e-7 → 1e-6 read as 'barely moved': it fell from 0.75."
    found = {f.kind: f for f in tb.diagnose(learned_in_nine_steps())}
    assert "not_learning" not in found and "lr_too_low" not in found, found
    # a loss that did not fall from its first step is still not learning
    flat = tb.History([(s, (s - 1) // 12, "train", "loss", 0.75 + 0.01 * math.sin(s)) for s in range(1, 361)])
    assert kinds(tb.diagnose(flat)) == ["not_learning"]


def test_a_gradient_norm_that_grows_back_towards_its_first_logged_value_is_not_exploding():
    "f6: 2e-6 → 2e-5, after 1.1e-4 at the first log: the norm never came near where it started; no clipping advice."
    found = {f.kind: f for f in tb.diagnose(learned_in_nine_steps())}
    assert "exploding_gradients" not in found, found["exploding_gradients"].message
    # the same growth from a first logged norm at its level is exploding: measured from there
    h = tb.History([(10 * (i + 1), 0, "train", "grad_norm", float(2e-6 * np.exp(i / 14))) for i in range(36)])
    [f] = tb.diagnose(h)
    assert f.kind == "exploding_gradients" and f.data["first_logged"] == 2e-6


def test_a_near_perfect_first_evaluation_that_training_matches_is_a_note_not_a_leak_warning():
    "f6: an easy task is near-perfect on train and valid alike: info naming both readings; valid ahead of train warns."
    [f] = [f for f in tb.diagnose(learned_in_nine_steps()) if f.kind == "suspicious_score"]
    assert f.severity == "info" and "easy" in f.message and "check_data" in f.advice, f
    # the valid loss near-perfect while the training loss at that point is not: validation knows what training
    # does not (a leak)
    rows = [(s, 0, "train", "loss", 1.0 - 0.001 * s) for s in range(1, 101)]
    rows += [(100, 0, "train", "epoch_loss", 0.95), (100, 0, "valid", "loss", 0.004)]
    [f] = [f for f in tb.diagnose(tb.History(rows)) if f.kind == "suspicious_score"]
    assert f.severity == "warning", f
    # learned within epoch 0, its last batches noisy (two hard ones among ~0.001): training was as good; the
    # median of the last three read 0.0396 and warned of a leak (probe 15, f4)
    steps = [0.7 * 0.6 ** s for s in range(14)] + [0.0009, 0.0396, 0.0418]
    rows = [(s, 0, "train", "loss", v) for s, v in enumerate(steps, 1)]
    rows += [(17, 0, "train", "epoch_loss", float(np.mean(steps))), (17, 0, "valid", "loss", 0.0021)]
    [f] = [f for f in tb.diagnose(tb.History(rows)) if f.kind == "suspicious_score"]
    assert f.severity == "info" and f.data["train_loss_then"] == 0.0009, f


def test_a_first_epoch_that_blew_up_is_no_leak_when_validation_is_level_with_training_later():
    """Probe 81, r_2: per-epoch records (Keras' default) of an lr 100x too high: epoch 0's training mean 45.9 (a
    blow-up) made a first valid loss of 1.24, worse than chance, 'near-perfect' (2.7% of the start): a leak warning.
    Validation level with training over the later epochs is no leak; a leak keeps validation ahead."""
    rng = np.random.default_rng(0)
    train = np.concatenate([[45.9], 1.0 + 0.3 * rng.standard_normal(14)])
    valid = np.concatenate([[1.24], 1.0 + 0.3 * rng.standard_normal(14)])
    rows = [(16 * (e + 1), e, "train", name, float(train[e])) for e in range(15) for name in ("loss", "epoch_loss")]
    rows += [(16 * (e + 1), e, "valid", "loss", float(valid[e])) for e in range(15)]
    assert "suspicious_score" not in kinds(tb.diagnose(tb.History(rows)))
    # the same blow-up with validation far ahead of training all along: still a leak warning
    ahead = [(s, e, sp, n, v * 0.02 if sp == "valid" else v) for s, e, sp, n, v in rows]
    [f] = [f for f in tb.diagnose(tb.History(ahead)) if f.kind == "suspicious_score"]
    assert f.severity == "warning" and "near-perfect from epoch 0" in f.message, f

def test_a_frame_in_any_row_order_gets_the_diagnosis_of_its_steps():
    "f7: diagnose(DataFrame) sorts by step (stably): newest-first read as diverging, shuffled as not_learning."
    import pandas as pd
    rng = np.random.default_rng(0)
    epochs, per_epoch = 20, 30
    train = 2.3 * np.exp(-np.arange(epochs * per_epoch) / 150) + 0.1 + 0.05 * rng.standard_normal(epochs * per_epoch)
    v = 2.3 * np.exp(-np.arange(1, epochs + 1) * per_epoch / 150) + 0.15
    v = np.concatenate([v[:8], v[7] + 0.08 * np.arange(1, 13)])  # valid turns up after epoch 7
    rows = [(i + 1, i // per_epoch, "train", "loss", float(train[i])) for i in range(epochs * per_epoch)]
    rows += [((e + 1) * per_epoch, e, "train", "epoch_loss", float(train[e * per_epoch:(e + 1) * per_epoch].mean()))
             for e in range(epochs)]
    rows += [((e + 1) * per_epoch, e, "valid", "loss", float(v[e])) for e in range(epochs)]
    df = pd.DataFrame(rows, columns=["step", "epoch", "split", "name", "value"]).sort_values("step", kind="stable")
    said = [(f.kind, f.message) for f in tb.diagnose(df)]
    assert [k for k, _ in said] == ["overfitting"]
    assert [(f.kind, f.message) for f in tb.diagnose(df.iloc[::-1])] == said
    assert [(f.kind, f.message) for f in tb.diagnose(df.sample(frac=1, random_state=0))] == said


def test_zero_losses_are_not_far_better_than_training():
    "f9: train and valid both exactly 0 in the later epochs: the ratio 0/0 says nothing; no 'far better than training'."
    rows = []
    for i in range(600):
        rows.append((i + 1, i // 30, "train", "loss", max(2.3 - i / 100, 0.0)))
        if (i + 1) % 30 == 0:
            rows.append((i + 1, i // 30, "train", "epoch_loss",
                         sum(max(2.3 - j / 100, 0.0) for j in range(i - 29, i + 1)) / 30))
            rows.append((i + 1, i // 30, "valid", "loss", max(2.3 - (i + 1) / 100, 0.0)))
    assert "suspicious_score" not in kinds(tb.diagnose(tb.History(rows)))
    # a valid loss far below a training loss that is well above 0 still is
    rows = [(s, (s - 1) // 30, "train", "loss", 1.0 - 0.001 * s) for s in range(1, 601)]
    rows += [(30 * (e + 1), e, "train", "epoch_loss", 0.9 - 0.02 * e) for e in range(20)]
    rows += [(30 * (e + 1), e, "valid", "loss", 0.05 * (0.9 - 0.02 * e)) for e in range(20)]
    [f] = [f for f in tb.diagnose(tb.History(rows)) if f.kind == "suspicious_score"]
    assert f.data["valid_train_ratio"] == pytest.approx(0.05)


def frozen_history(valid, train_falls=True, epochs=20, per_epoch=30):
    "Steps of a training loss (falling 2.3 → 0.1, or flat around 1.0) and a valid loss from `valid(epoch)`."
    rng = np.random.default_rng(0)
    t = np.arange(epochs * per_epoch)
    level = 2.3 * np.exp(-t / 150) + 0.1 if train_falls else np.full(len(t), 1.0)
    train = level + 0.05 * rng.standard_normal(len(t))
    rows = [(i + 1, i // per_epoch, "train", "loss", float(train[i])) for i in range(len(t))]
    for e in range(epochs):
        s = (e + 1) * per_epoch
        rows += [(s, e, "train", "epoch_loss", float(train[s - per_epoch:s].mean())),
                 (s, e, "valid", "loss", float(valid(e))), (s, e, "valid", "accuracy", 0.5)]
    return tb.History(rows)


def test_a_validation_loss_frozen_while_training_moves_is_found():
    "f13: valid exactly 0.7 at 20 evaluations while train falls 2.3 → 0.1: validation does not see the trained model."
    [f] = tb.diagnose(frozen_history(lambda e: 0.7))
    assert (f.kind, f.severity) == ("frozen_validation", "warning") and f.data["evaluations"] == 20, f
    assert "cached" in f.advice and "split" in f.advice and "weights" in f.advice
    # frozen from epoch 8 on (12 evaluations) after it moved: the stretch is named
    [f] = tb.diagnose(frozen_history(lambda e: 0.7 + 0.1 * max(8 - e, 0)))
    assert f.kind == "frozen_validation" and f.data["first_epoch"] == 8 and f.data["evaluations"] == 12
    # not frozen: a valid loss that moves by round-off, one at exactly 0 (perfect: nowhere to go), and one
    # constant beside a training loss that does not move either (nothing was trained: not_learning says it)
    assert "frozen_validation" not in kinds(tb.diagnose(frozen_history(lambda e: 0.7 + 1e-9 * e)))
    assert "frozen_validation" not in kinds(tb.diagnose(frozen_history(lambda e: 0.0)))
    assert "frozen_validation" not in kinds(tb.diagnose(frozen_history(lambda e: 0.7, train_falls=False)))
    # nor a frozen model fed the same rows in a fixed order, hardest last: each pass climbs, none moves
    per_pass = np.linspace(0.5, 1.5, 100)
    rows = [(100 * e + j + 1, e, "train", "loss", float(v)) for e in range(6) for j, v in enumerate(per_pass)]
    rows += [(100 * (e + 1), e, "valid", "loss", 0.7) for e in range(6)]
    assert "frozen_validation" not in kinds(tb.diagnose(tb.History(rows)))


def test_a_gradient_norm_that_rises_as_the_loss_drops_is_learning_not_an_explosion():
    "Probe 15, f5: a deep net leaving its plateau: the norm rose 0.44 → 3.5 while the loss fell; clip and lower lr was advised."
    n = 400
    s = np.arange(n)
    loss = np.where(s < 200, 6.0, 6.0 * np.exp(-(s - 200) / 40.0)) + 0.05  # the plateau, then a steep fall
    norm = np.where(s < 200, 0.5, 0.5 + 3.5 * (1 - np.exp(-(s - 200) / 60.0)))  # the norm grows as it falls
    rows = [(i + 1, i // 40, "train", "loss", float(loss[i])) for i in range(n)]
    grow = [(i + 1, i // 40, "train", "grad_norm", float(norm[i])) for i in range(0, n, 10)]
    assert "exploding_gradients" not in kinds(tb.diagnose(tb.History(rows + grow)))
    # the same growth while the loss barely moves: an explosion (a hook that scales the gradients, say)
    flat = [(i + 1, i // 40, "train", "loss", float(2.0 - 0.001 * i)) for i in range(n)]
    assert "exploding_gradients" in kinds(tb.diagnose(tb.History(flat + grow)))


def falling_run(steps=400, first=0.68, low=0.19, bump_at=3, bump=1.04, prior=None, valid_end=0.12, seed=0):
    "A healthy classifier's history: the loss falls from `first` to `low`, a small rise at `bump_at` (× `bump`)."
    rng = np.random.default_rng(seed)
    h = tb.History()
    t = np.arange(steps)
    loss = low + (first - low) * np.exp(-t / 60) + 0.03 * rng.standard_normal(steps)
    loss[0] = first
    loss[bump_at] = loss[bump_at - 1] * bump
    for s, v in enumerate(loss, 1): h.append(s, (s - 1) // 10, "train", "loss", float(v))
    for e in range(steps // 10):
        s = 10 * (e + 1)
        h.append(s, e, "valid", "loss", float(valid_end + 0.6 * math.exp(-s / 60)))
        h.append(s, e, "valid", "loss_se", 0.05)
        if prior is not None: h.append(s, e, "valid", "prior_loss", prior)
    return h


def test_a_rise_within_the_first_steps_of_a_fall_is_no_blow_up():
    "The first tenth's top is 1.04× the loss before it, far above the run's median: a fall's top, not a blow-up."
    h = falling_run()
    assert "diverging" not in kinds(tb.diagnose(h))
    # a one-class validation set: the constant predictor scores 0 there, so it is no yardstick (probe 23, f1)
    one_class = tb.diagnose(falling_run(prior=0.0))
    assert "diverging" not in kinds(one_class) and "not_learning" not in kinds(one_class), one_class
    # a real blow-up (5× the untrained loss at step 3) that ends at the prior is still one
    blown = tb.diagnose(falling_run(bump=8.0, low=0.69, first=0.69, prior=0.69, valid_end=0.69))
    jump = next(f for f in blown if f.kind == "diverging")
    assert jump.data["blowup_step"] == 4 and jump.data["blowup_ratio"] > 2, jump.data


def test_a_skewed_loss_at_the_prior_is_judged_by_its_mean():
    "1 positive in 1,000 rows: most batches' loss is ~0, their median far below the prior; the mean is at it."
    rng = np.random.default_rng(0)
    h = tb.History()
    prior = 0.0079  # the class shares' cross-entropy at 1:1000
    for s in range(1, 751):
        hit = rng.random() < 0.3  # a batch of 256 holding a positive (its loss ~ln(1000)/256)
        fall = 0.7 * math.exp(-s / 15)  # the first steps learn the shares
        h.append(s, (s - 1) // 125, "train", "loss", (0.03 if hit else 0.0006) + fall)
        if s % 125 == 0:
            h.append(s, (s - 1) // 125, "valid", "loss", prior * 1.01)
            h.append(s, (s - 1) // 125, "valid", "loss_se", 0.0003)
            h.append(s, (s - 1) // 125, "valid", "prior_loss", prior)
    found = tb.diagnose(h)
    assert "not_learning" in kinds(found) and "diverging" not in kinds(found), found
    # the loss of a rare class moves little even for a model that ranks it well (probe 26): the advice says so
    assert "judge by PR-AUC" in next(f for f in found if f.kind == "not_learning").advice


def test_a_smoke_run_that_exploded_is_diverging():
    "3 steps (fewer than the course rules need): a loss 30,000× its start is news at any length (probe 23, f6)."
    h = tb.History()
    for s, v in enumerate([0.62, 2.1e4, 3.8e4], 1): h.append(s, 0, "train", "loss", v)
    h.append(3, 0, "valid", "loss", 2.3e4)
    h.append(3, 0, "valid", "prior_loss", 0.69)
    assert kinds(tb.diagnose(h)) == ["diverging"]
    calm = tb.History()
    for s, v in enumerate([0.62, 0.7, 0.6], 1): calm.append(s, 0, "train", "loss", v)
    assert tb.diagnose(calm) == []  # too short to read a course: nothing said


def test_a_parameter_cut_off_from_the_loss_is_not_only_called_unused():
    "A zero gradient alone in its layer: unused, or its path to the loss cut (probe 23, f7: an embedding zeroed later)."
    h = tb.History()
    for s in (10, 20, 30):
        h.append(s, 0, "train", "grad_norm/emb.weight", 0.0)
        h.append(s, 0, "train", "grad_norm/out.weight", 0.5)
        h.append(s, 0, "train", "grad_norm/out.bias", 0.1)
    zero = next(f for f in tb.diagnose(h) if f.kind == "structural_zero_gradients")
    assert zero.data["parameters"] == ["emb.weight"] and "path to the loss is cut" in zero.advice, zero.advice


def test_a_loss_logged_once_an_epoch_is_counted_in_epochs():
    "Keras' callback without batches=True logs one training loss an epoch: 'over 21 epochs', not '21 steps'."
    flat = [0.6558 - 0.0007 * e for e in range(21)]
    per_epoch, per_step = tb.History(), tb.History()
    for e, v in enumerate(flat):
        per_epoch.append(5 * (e + 1), e, "train", "loss", v)
        per_step.append(e + 1, 0, "train", "loss", v)
    said = next(f for f in tb.diagnose(per_epoch) if f.kind == "not_learning").message
    assert said.endswith("over 21 epochs"), said
    said = next(f for f in tb.diagnose(per_step) if f.kind == "not_learning").message
    assert said.endswith("over 21 steps"), said


# probe 55: the run judgements on bands they were not tuned on


def test_a_rise_of_two_medians_of_five_one_row_losses_is_noise_not_not_learning():
    "Bug 4: 40 steps of batch 1, the last 5 steps' median above the first 5's by 0.06 with a step noise of 0.17."
    rng = np.random.default_rng(0)
    noisy = 1.0 + 0.17 * rng.standard_normal(40)
    noisy[:5], noisy[-5:] = [0.963, 0.817, 1.024, 0.81, 1.118], [0.995, 1.076, 0.728, 1.237, 1.026]
    h = tb.History([(s, 0, "train", "loss", float(v)) for s, v in enumerate(noisy, 1)])
    assert "not_learning" not in kinds(tb.diagnose(h))
    # the same two levels with steps that scatter 100 times less: the noise tells, and it rose
    quiet = np.where(np.arange(40) < 20, 0.963, 1.026) + 0.0017 * rng.standard_normal(40)
    [f] = tb.diagnose(tb.History([(s, 0, "train", "loss", float(v)) for s, v in enumerate(quiet, 1)]))
    assert f.kind == "not_learning" and "rose instead of falling" in f.message
    assert f.data["fall"] < f.data["fall_bound"] < 0.12 * 40 / 100


def converged_early(floor, first, prior, valid, se, steps=5000, per_epoch=250, noise=0.113, seed=0):
    "Batch-32 label noise around a loss that falls from `first` to near `floor` within ~100 steps, then creeps."
    rng = np.random.default_rng(seed)
    t = np.arange(steps)
    loss = floor + 0.01 * (1 - t / steps) + (first - floor) * np.exp(-t / 30) + noise * rng.standard_normal(steps)
    loss[0] = first
    h = tb.History([(s, (s - 1) // per_epoch, "train", "loss", float(v)) for s, v in enumerate(loss, 1)])
    for e in range(steps // per_epoch):
        s = (e + 1) * per_epoch
        h.append(s, e, "train", "epoch_loss", float(loss[s - per_epoch:s].mean()))
        h.append(s, e, "valid", "loss", valid + 0.1 * se * math.sin(e))  # (an evaluation that never moves: frozen)
        h.append(s, e, "valid", "loss_se", se)
        h.append(s, e, "valid", "prior_loss", prior)
    return h


def test_a_run_that_reached_a_noisy_floor_in_its_first_tenth_is_not_not_learning():
    "Bug 3: 1.16 → 0.36 in the first tenth → 0.35; valid at the floor, far under the prior; 8 step noises > the fall."
    found = tb.diagnose(converged_early(floor=0.35, first=1.156, prior=1.071, valid=0.357, se=0.015))
    assert "not_learning" not in kinds(found) and "lr_too_low" not in kinds(found), [f.message for f in found]
    # an lr 1000x too low (probe 55's gencls, 3,000 steps): 1.08 → 1.067, valid 7 SEs under the prior, or at it
    for valid in (1.066, 1.09):
        stuck = tb.diagnose(converged_early(floor=1.067, first=1.08, prior=1.094, valid=valid, se=0.004, noise=0.1))
        assert "not_learning" in kinds(stuck), [f.message for f in stuck]


def uneven_epochs(rows=353, batch=32, epochs=40, bad_step=None, seed=0):
    "Batches of `batch` rows and an epoch's last of the rest (353 = 11 × 32 + 1); each row's loss ~ mean × Gamma(2)/2."
    rng = np.random.default_rng(seed)
    sizes = [batch] * (rows // batch) + ([rows % batch] if rows % batch else [])
    h, s = tb.History(), 0
    for e in range(epochs):
        for n in sizes:
            s += 1
            m = 0.5 + 0.5 * math.exp(-s / 100)
            v = m * rng.gamma(2.0, 0.5, n).mean() if n > 1 else m  # (the one-row steps: at the stage)
            h.append(s, e, "train", "loss", float(v + (m * 2.5 * 0.707 if s == bad_step else 0.0)))
        seconds = 0.01 * len(sizes)
        h.append(s, e, "train", "samples_per_s", rows / seconds)
        h.append(s, e, "train", "step_time", seconds / len(sizes))
        h.append(s, e, "valid", "loss", m)
        h.append(s, e, "valid", "loss_sd", m * 0.707)  # the per-row losses' sd: Gamma(2, 1/2) has sd 1/√2
        h.append(s, e, "valid", "loss_se", m * 0.707 / math.sqrt(89))
    return h


def test_an_epochs_trailing_one_row_batch_is_judged_by_one_rows_spread():
    "Bug 2: 353 rows at batch 32: step 96 holds one row; 2.5 per-row sds above its stage is an ordinary row."
    assert "loss_spikes" not in kinds(tb.diagnose(uneven_epochs(bad_step=96)))
    # the same rise on a step of 32 rows is 14 of its spreads: a bad batch
    spikes = next(f for f in tb.diagnose(uneven_epochs(bad_step=95)) if f.kind == "loss_spikes")
    assert spikes.data["steps"] == [95]


def test_steps_too_noisy_to_tell_leave_the_verdict_to_the_valid_loss():
    "Batch-2 regression steps (spread 40%) over 252 steps: ±9% on the fall; 4 evaluations flat (stuck) or falling."
    rng = np.random.default_rng(1)
    loss = 1.05 * (1 + 0.4 * rng.standard_normal(252))
    for valid, stuck in (([1.06, 0.95, 0.87, 0.8], False), ([1.060, 1.059, 1.0592, 1.0585], True)):
        h = tb.History([(s, (s - 1) // 63, "train", "loss", float(v)) for s, v in enumerate(loss, 1)])
        for e, v in enumerate(valid): h.append(63 * (e + 1), e, "valid", "loss", v)
        found = {f.kind: f for f in tb.diagnose(h)}
        assert ("not_learning" in found) is stuck, [f.message for f in found.values()]
        if stuck: assert "the valid loss: 1.06 → 1.058 over 4 evaluations" in found["not_learning"].message


# probe 73: a long overfit, a weak signal, the margin below the constant predictor


def test_a_long_overfit_is_measured_from_the_smoothed_curves_bottom():
    "Bug 1: 2.3 → 0.70 by epoch 12, then +0.0017 an epoch for 190 epochs: the rise is from ~0.72, not from 1.03."
    # (the smoothed value at the best epoch: a window 27 evaluations wide that still holds the first fall)
    h = tb.History()
    for e in range(200):
        v = 2.3 - 1.6 * e / 12 if e <= 12 else 0.7 + 0.0017 * (e - 12)
        h.append(e, e, "train", "epoch_loss", 2.3 * math.exp(-e / 10) + 1e-4)
        h.append(e, e, "valid", "loss", v)
        h.append(e, e, "valid", "loss_se", 0.01)
    over = next(f for f in tb.diagnose(h) if f.kind == "overfitting")
    assert over.severity == "warning" and over.data["onset_epoch"] == 13
    assert over.data["bottom_level"] < 0.73 and over.data["rise"] > 0.2
    assert f"{over.data['rise']:.3g} above the smoothed bottom" in over.message


def prior_run(valid_end, train_end=0.682, se=0.001, prior=0.6931):
    "500 steps falling from ~0.95 (an over-confident untrained model) to `train_end`; the valid loss to `valid_end`."
    h = tb.History()
    for s in range(1, 501):
        h.append(s, (s - 1) // 50, "train", "loss", train_end + 0.27 * math.exp(-s / 40) + 0.01 * math.sin(s))
        if s % 50 == 0:
            e = s // 50 - 1
            h.append(s, e, "valid", "loss", valid_end + 0.2 * math.exp(-(e + 1)))
            h.append(s, e, "valid", "loss_se", se)
            h.append(s, e, "valid", "prior_loss", prior)
    return h


def test_the_margin_below_the_constant_predictor_is_prior_z_standard_errors():
    "Bug 3: 10 SEs (0.001 each) below the prior learned; the margin was a 2% floor called '3 standard errors'."
    assert "not_learning" not in kinds(tb.diagnose(prior_run(0.683)))
    # train and valid 1 SE below it: at the prior, and the message's margin is the 3 SEs it names
    at = next(f for f in tb.diagnose(prior_run(0.692, train_end=0.692)) if f.kind == "not_learning")
    assert at.data["margin"] == pytest.approx(0.003)
    assert "not below it by 0.003 (3 standard errors of the valid loss, 0.001 each)" in at.message, at.message


def test_a_weak_signal_learned_below_the_prior_is_not_called_not_learning():
    "Bug 2: a logistic model at its Bayes loss, 4.9% under the prior (21 SEs): it learned little, not nothing."
    weak = converged_early(floor=0.659, first=0.70, prior=0.6931, valid=0.659, se=0.0016, noise=0.03, steps=640,
                           per_epoch=80)
    found = [f for f in tb.diagnose(weak) if f.kind == "not_learning"]
    assert [f.severity for f in found] == ["info"] and found[0].message.startswith("it learned little")
    assert "21.3 standard errors below the constant predictor's loss" in found[0].message
    # the same training curve with the valid loss at the prior (under 1 SE below it) learned nothing held out
    stuck = converged_early(floor=0.659, first=0.70, prior=0.6931, valid=0.692, se=0.0016, noise=0.03, steps=640,
                            per_epoch=80)
    assert [f.severity for f in tb.diagnose(stuck) if f.kind == "not_learning"] == ["warning"]


def resetting_run(resets=(290, 470), steps=600, per_epoch=60, valid_climbs=True, train_climbs=True, restart=False,
                  seed=0):
    """A falling loss (batch noise 0.08, valid SE 0.02) thrown back up most of the way at each of `resets` and
    falling again; `restart`: the lr jumps up at each reset (a warm restart), logged."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, steps + 1)
    level = 0.3 + 1.0 * np.exp(-t / 60)
    thrown = sum(0.7 * np.exp(-np.clip(t - r, 0, None) / 40) * (t >= r) for r in resets) if resets else 0 * t
    train, valid = level + (thrown if train_climbs else 0), level * 1.05 + (thrown if valid_climbs else 0)
    h = tb.History()
    for s in t:
        h.append(int(s), int((s - 1) // per_epoch), "train", "loss", float(train[s - 1] + 0.08 * rng.standard_normal()))
        if restart: h.append(int(s), int((s - 1) // per_epoch), "train", "lr", 0.1 if any(s == r for r in resets) else 0.01)
    for e, s in enumerate(range(per_epoch, steps + 1, per_epoch)):
        h.append(s, e, "train", "epoch_loss", float(train[s - per_epoch:s].mean()))
        h.append(s, e, "valid", "loss", float(valid[s - 1] + 0.01 * rng.standard_normal()))
        h.append(s, e, "valid", "loss_se", 0.02)
        h.append(s, e, "valid", "prior_loss", 1.3)
    return h


def test_a_loss_thrown_back_up_again_and_again_is_unstable_with_the_lr_advice():
    "An lr far too high that does not blow up 20x (probe 73 #4): train and valid climb back far beyond their noise."
    for seed in range(3):
        found = [f for f in tb.diagnose(resetting_run(seed=seed)) if f.severity != "info"]
        assert kinds(found) == ["unstable"], (seed, kinds(found))
        f = found[0]
        assert f.data["train_rise"] >= 0.25 and f.data["valid_rise"] >= 0.25
        assert f.data["train_noises"] >= 3 and f.data["valid_noises"] >= 3
        assert "learning rate is likely too high" in f.advice and "3-10×" in f.advice and "warmup" in f.advice
        assert "clip" in f.advice


def test_a_climb_within_the_runs_noise_or_a_small_share_of_its_fall_is_not_unstable():
    "The same run without resets, a noisy small-batch floor, or a climb back a tenth of the fall: no finding."
    assert "unstable" not in kinds(tb.diagnose(resetting_run(resets=())))
    for seed in range(3):
        assert "unstable" not in kinds(tb.diagnose(small_batch_run(4, seed=seed)))
        assert "unstable" not in kinds(tb.diagnose(small_batch_run(512, seed=seed)))
    # thrown back ~0.55 of a fall of ~1.0, far beyond the noise: the share decides where the noise does not
    thrown = resetting_run()
    assert "unstable" in kinds(tb.diagnose(thrown))
    assert "unstable" not in kinds(tb.diagnose(thrown, dataclasses.replace(tb.Thresholds(), unstable_rise=0.9)))
    # and the noise decides where the share does not: the same climbs inside 40 standard errors of the valid loss
    assert "unstable" not in kinds(tb.diagnose(thrown, dataclasses.replace(tb.Thresholds(), unstable_z=40.0)))
    # a loss that never fell from where it began (at the prior: not learning) has no fall to climb back up
    h = tb.History()
    rng = np.random.default_rng(0)
    for s in range(1, 601):
        h.append(s, (s - 1) // 60, "train", "loss", 1.3 + 0.08 * float(rng.standard_normal()) + 0.02 * (s > 400))
    for e, s in enumerate(range(60, 601, 60)):
        h.append(s, e, "valid", "loss", 1.3 + 0.002 * float(rng.standard_normal()) + 0.02 * (s > 400))
        h.append(s, e, "valid", "loss_se", 0.002)
        h.append(s, e, "valid", "prior_loss", 1.3)
    assert "unstable" not in kinds(tb.diagnose(h))


def test_an_overfit_or_a_warm_restart_is_not_unstable():
    "The valid loss climbing alone (train falling) is an overfit; a climb right after the lr jumped is the schedule's."
    overfit = tb.diagnose(resetting_run(resets=(300,), train_climbs=False))
    assert "unstable" not in kinds(overfit)
    assert "unstable" not in kinds(tb.diagnose(resetting_run(valid_climbs=False)))  # train alone: not enough
    assert "unstable" not in kinds(tb.diagnose(resetting_run(restart=True)))


def test_a_run_that_blew_up_is_diverging_not_unstable():
    "A blow-up explains every climb: diverging alone (_screen)."
    h = resetting_run()
    for s in range(560, 601): h.append(s, 9, "train", "loss", 50.0)
    found = kinds(tb.diagnose(h))
    assert "diverging" in found and "unstable" not in found


def test_a_first_record_that_is_a_windows_mean_is_not_the_untrained_loss_when_the_prior_is_known():
    """Probe 81, r_4: a Trainer logging every 4 steps, lr 100x too high: its first record (2.23) was the mean of 4
    steps that had blown up already, read as the untrained loss, so the jump to 4.09 was under diverging's 2x and
    the run, never better than chance, got no finding. A first record after step 1 is a window's mean: the
    constant predictor's loss (0.693 here) is the untrained level when it is known."""
    train = [2.232, 4.094, 1.717, 1.344, 1.247, 0.927, 0.923, 1.218, 0.942, 0.858, 1.256, 0.861, 1.102, 1.453,
             1.585, 1.471, 0.722, 0.931, 0.77, 0.884, 0.729, 0.867, 0.713, 0.766]
    valid = [0.718, 0.705, 0.7, 0.755, 0.82, 0.702]

    def history(first_step):
        steps = [first_step] + [4 * (i + 1) for i in range(1, len(train))]
        rows = [(s, (s - 1) // 16, "train", "loss", v) for s, v in zip(steps, train)]
        for e, v in enumerate(valid):
            rows += [(16 * (e + 1), e, "valid", "loss", v), (16 * (e + 1), e, "valid", "prior_loss", math.log(2))]
        return tb.History(rows)
    assert [f.kind for f in tb.diagnose(history(4)) if f.severity == "error"] == ["diverging"]
    # the same first value logged at step 1 is the untrained model's own loss: no blow-up past 2x of it
    assert "diverging" not in kinds(tb.diagnose(history(1)))


def test_one_outlying_last_step_is_no_climb_of_the_training_loss():
    """Probe 83, r_1: the moving median pads each end with the end's value, so the last step's stage was that step's
    own loss: a 4-row last batch at 1.0 (the steps around it ~0.1) was the training half of an `unstable` verdict
    for a run whose training loss kept falling. Only stages of whole windows are read."""
    rng = np.random.default_rng(0)
    spe, epochs = 15, 20
    rows = []
    for s in range(1, spe * epochs + 1):
        rows += [(s, (s - 1) // spe, "train", "loss", 0.6 * np.exp(-s / 60) + 0.1 + abs(rng.normal(0, 0.02))),
                 (s, (s - 1) // spe, "train", "lr", 0.01)]
    v = [0.6 * np.exp(-e / 3) + 0.15 for e in range(epochs - 1)] + [0.55]  # the last evaluation bad
    for e in range(epochs):
        s = spe * (e + 1)
        rows += [(s, e, "valid", "loss", v[e]), (s, e, "valid", "loss_se", 0.02), (s, e, "valid", "prior_loss", 0.69)]
    smooth = kinds(tb.diagnose(tb.History(rows)))
    last = rows.index((spe * epochs, epochs - 1, "train", "loss", rows[2 * (spe * epochs - 1)][4]))
    rows[last] = rows[last][:4] + (1.0,)  # the last training step's loss: one tiny, hard batch
    assert "unstable" not in smooth and "unstable" not in kinds(tb.diagnose(tb.History(rows)))


def test_a_blown_up_first_epoch_in_a_table_without_epoch_records_is_no_leak():
    """Probe 83, r_2: a table logging the training loss once an epoch (no epoch_loss records, another loop's): epoch
    0's mean 50 made a first valid loss of 0.94 (chance 0.69) 'near-perfect'. Each epoch's training losses stand in
    for its epoch record, so validation level with training later is no leak."""
    t = [50.0] + [0.69 * np.exp(-e / 4) + 0.2 for e in range(1, 12)]
    v = [0.69 * np.exp(-e / 4) + 0.25 for e in range(12)]
    rows = [r for e in range(12) for r in (((e + 1) * 20, e, "train", "loss", t[e]), ((e + 1) * 20, e, "valid", "loss", v[e]))]
    assert "suspicious_score" not in kinds(tb.diagnose(tb.History(rows)))


def test_an_attention_key_bias_is_named_among_the_biases_that_get_no_gradient():
    """Probe 91: a tiny UNet's attention key bias (`to_k.bias`) was rightly a structural zero, but the advice
    blamed a normalization layer; the softmax cancels a key bias (it shifts each query's scores alike)."""
    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.out = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(20, 2)
        def forward(self, x):
            x = x.reshape(len(x), 5, 4)
            a = (self.q(x) @ self.k(x).transpose(1, 2)).softmax(-1) @ self.v(x)
            return self.out(a.reshape(len(x), 20))
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(128, 20, generator=g), torch.randint(0, 2, (128,), generator=g)
    torch.manual_seed(0)
    run = tb.fit(Attention(), tb.TensorLoader(X, y, batch_size=32), loss_fn=nn.functional.cross_entropy,
                 live=False, config=tb.TrainConfig(epochs=2, device="cpu", log_every=1))
    zero = next(f for f in run.findings if f.kind == "structural_zero_gradients")
    assert zero.data["parameters"] == ["k.bias"] and "attention key projection's bias" in zero.advice
