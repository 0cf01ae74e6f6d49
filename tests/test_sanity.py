"Sanity verdicts on real data: pass for a healthy MLP, fail with the right finding for planted faults; the model untouched."
import copy

import pytest
import torch
from torch import nn
from sklearn.datasets import load_digits

import trainbook as tb
from trainbook.sanity import overfit_batch, check_init_loss
from helpers import same_weights


@pytest.fixture(scope="module")
def digits_batch():
    d = load_digits()
    return torch.tensor(d.data[:64], dtype=torch.float32) / 16, torch.tensor(d.target[:64])


def net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def kinds(report): return [f.kind for f in report.findings]


def test_healthy_mlp_passes_and_model_is_untouched(digits_batch):
    model = net()
    before = copy.deepcopy(model)
    report = overfit_batch(model, digits_batch, nn.CrossEntropyLoss(), steps=150)
    assert report.passed and report.final_loss < 0.1 * report.initial_loss
    assert len(report.history) == 150
    assert same_weights(model, before) and model.training == before.training


def test_frozen_model_fails(digits_batch):
    model = net().requires_grad_(False)
    report = overfit_batch(model, digits_batch, nn.CrossEntropyLoss(), steps=50)
    assert not report.passed and "frozen_parameters" in kinds(report)


def test_softmax_before_cross_entropy_fails(digits_batch):
    report = overfit_batch(nn.Sequential(net(), nn.Softmax(dim=1)), digits_batch, nn.CrossEntropyLoss(), steps=150)
    assert not report.passed and "activation_before_loss" in kinds(report)


def test_a_relu_on_the_logits_before_cross_entropy_is_named(digits_batch):
    "Probe 50: relu(logits) into CrossEntropyLoss failed only as 'fell_short' with generic advice."
    report = overfit_batch(nn.Sequential(net(), nn.ReLU()), digits_batch, nn.CrossEntropyLoss(), steps=50)
    (f,) = [f for f in report.findings if f.kind == "activation_before_loss"]
    assert not report.passed and f.severity == "error" and "a ReLU is applied to the logits" in f.message
    assert f.advice == "remove the final ReLU; return raw logits"
    healthy = overfit_batch(net(), digits_batch, nn.CrossEntropyLoss(), steps=50)
    assert "activation_before_loss" not in kinds(healthy)


def test_labels_out_of_range(digits_batch):
    xb, yb = digits_batch
    model = nn.Sequential(nn.Linear(64, 8))  # 8 outputs, labels up to 9
    before = copy.deepcopy(model)
    report = overfit_batch(model, (xb, yb), nn.functional.cross_entropy, steps=50)
    assert not report.passed and "label_out_of_range" in kinds(report)
    f = next(f for f in report.findings if f.kind == "label_out_of_range")
    assert f.data == {"min_label": 0, "max_label": 9, "n_outputs": 8}
    assert same_weights(model, before)


def test_no_gradient_to_a_detached_branch(digits_batch):
    class Detached(nn.Module):
        def __init__(self):
            super().__init__(); self.body, self.head = nn.Linear(64, 32), nn.Linear(32, 10)
        def forward(self, x): return self.head(torch.relu(self.body(x)).detach())
    report = overfit_batch(Detached(), digits_batch, nn.CrossEntropyLoss(), steps=100)
    f = next(f for f in report.findings if f.kind == "no_gradient")
    assert set(f.data["parameters"]) == {"body.weight", "body.bias"}


def test_not_decreasing_with_shuffled_targets_each_step(digits_batch):
    "A loss that cannot be memorized (targets redrawn every call) fails with not_decreasing after trying several lrs."
    xb, _ = digits_batch
    g = torch.Generator().manual_seed(0)
    def moving_target(out, yb): return nn.functional.cross_entropy(out, torch.randint(0, 10, (len(out),), generator=g))
    report = overfit_batch(net(), (xb, torch.zeros(64, dtype=torch.long)), moving_target, steps=60)
    assert not report.passed and "not_decreasing" in kinds(report)


def test_eval_mode_is_reported(digits_batch):
    model = net().eval()
    report = overfit_batch(model, digits_batch, nn.CrossEntropyLoss(), steps=100)
    assert "eval_mode" in kinds(report) and not model.training


def test_init_loss(digits_batch):
    assert check_init_loss(net(), digits_batch) == []
    hot = net(); hot[2].weight.data *= 50
    assert [f.kind for f in check_init_loss(hot, digits_batch)] == ["init_loss"]


def init_kinds(model, batch, loss_fn=nn.functional.cross_entropy):
    return [(f.kind, f.severity) for f in check_init_loss(model, batch, loss_fn)]


def test_init_loss_reads_its_reference_from_the_loss_for_any_output_shape():
    "Probe 15, f1: every loss but cross-entropy on (N, C) was held to ln(output width): 5 false alarms in 6."
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(0)
    x = torch.randn(256, 20, generator=g)
    mlp = lambda k: nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, k))
    bce = nn.BCEWithLogitsLoss()
    healthy = {  # each at its own uninformed loss: ln 2 a BCE output, ln 50 over token positions, ~1 under MSE
        "binary (N, 1)": (mlp(1), (x, (torch.rand(256, 1, generator=g) > 0.5).float()), bce),
        "8 labels": (mlp(8), (x, (torch.rand(256, 8, generator=g) > 0.5).float()), bce),
        "tokens (N, C, T)": (nn.Conv1d(20, 50, 1), (torch.randn(64, 20, 12, generator=g),
                                                     torch.randint(0, 50, (64, 12), generator=g)), None),
        "standardized MSE": (mlp(1), (x, torch.randn(256, 1, generator=g)), nn.MSELoss()),
        "log-softmax + NLL": (nn.Sequential(mlp(10), nn.LogSoftmax(1)), (x, torch.randint(0, 10, (256,), generator=g)),
                              nn.NLLLoss()),
        "sigmoid + BCELoss": (nn.Sequential(mlp(1), nn.Sigmoid()), (x, (torch.rand(256, 1, generator=g) > 0.5).float()),
                              nn.BCELoss()),
    }
    for name, (model, batch, loss_fn) in healthy.items():
        assert init_kinds(model, batch, loss_fn or nn.functional.cross_entropy) == [], name
    # an imbalanced classifier whose bias holds the prior (the recommended init) costs the prior's entropy: passes
    y = (torch.rand(256, generator=g) < 0.03).long()
    p = y.float().mean()
    prior = mlp(2)
    with torch.no_grad():
        prior[2].weight.mul_(0.01)
        prior[2].bias.copy_(torch.stack([torch.log(1 - p), torch.log(p)]))
    assert init_kinds(prior, (x, y)) == []
    assert init_kinds(mlp(2), (x, y)) == [("init_bias", "info")]  # the same task without: set the bias
    # confidently wrong outputs, in each shape
    hot_bce, hot_tokens = mlp(1), nn.Conv1d(20, 50, 1)
    with torch.no_grad():
        hot_bce[2].bias.fill_(8.0)
        hot_tokens.bias[0] = 12.0
    assert init_kinds(hot_bce, healthy["binary (N, 1)"][1], bce) == [("init_loss", "warning")]
    assert init_kinds(hot_tokens, healthy["tokens (N, C, T)"][1]) == [("init_loss", "warning")]
    # targets far from 0 under MSE: an info to set the bias to their mean, not an alarm
    found = check_init_loss(mlp(1), (x, torch.randn(256, 1, generator=g) * 5 + 100), nn.MSELoss())
    assert [f.kind for f in found] == ["init_bias"] and "targets' mean" in found[0].advice
    # an input that holds the label: below the best constant
    leak = nn.Linear(1, 2)
    with torch.no_grad():
        leak.weight.copy_(torch.tensor([[-8.0], [8.0]]))
        leak.bias.zero_()
    yl = torch.randint(0, 2, (256,), generator=g)
    found = check_init_loss(leak, ((yl.float() - 0.5).unsqueeze(1), yl))
    assert [f.kind for f in found] == ["init_loss"] and "leaking" in found[0].advice


# The verdict reasons from the run's own measurements: the loss's start, its floor, its noise, and the loss of
# the best constant output. Each case below was once judged wrong (a pass for a broken set-up, a fail for a
# fine one, or a fail with the wrong reason).
def small_batch(out=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(16, 10, generator=g), torch.randint(0, out, (16,), generator=g)


def small_net(out=4, hidden=32):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, out))


def test_a_loss_stuck_at_zero_without_gradients_fails():
    "A constant-0 loss (every term masked away) is not a memorized batch: nothing fell and nothing gets a gradient."
    report = overfit_batch(small_net(), small_batch(), lambda pred, y: (pred * 0).sum(), steps=20, lr=1e-2)
    assert not report.passed
    assert {"no_gradient", "not_decreasing"} <= set(kinds(report))


def test_a_negative_loss_is_judged_by_its_fall_not_its_sign():
    "Gaussian NLL can be negative: at lr=1e-9 nothing is learned (fail), shifted or not; a learnable run passes."
    g = torch.Generator().manual_seed(0)
    xb, yb = torch.randn(16, 10, generator=g), 0.01 * torch.randn(16, 1, generator=g)
    def nll(out, y): return nn.functional.gaussian_nll_loss(out[:, :1], y, nn.functional.softplus(out[:, 1:]) + 1e-3)
    frozen_in_place = [overfit_batch(small_net(2), (xb, yb), loss, steps=20, lr=1e-9)
                       for loss in (nll, lambda o, y: nll(o, y) + 1.0)]
    assert frozen_in_place[0].initial_loss < 0 < frozen_in_place[1].initial_loss
    for report in frozen_in_place:
        assert not report.passed and "not_decreasing" in kinds(report)
    assert overfit_batch(small_net(2), (xb, yb), nll, steps=200, lr=1e-2).passed


def test_label_smoothing_and_soft_targets_pass_at_their_floor():
    "Smoothed CE and BCE on soft targets cannot reach 0; a model at their computed floor has memorized the batch."
    from trainbook.levels import loss_levels
    xb, yb = small_batch()
    smoothed = nn.CrossEntropyLoss(label_smoothing=0.1)
    q = torch.tensor([1 - 0.1 + 0.1 / 4] + [0.1 / 4] * 3)
    test_floor = float(-(q * q.log()).sum())  # 0.3488: the entropy of the smoothed one-hot target
    assert abs(loss_levels(smoothed, torch.zeros(16, 4), yb).floor - test_floor) < 1e-4
    report = overfit_batch(small_net(hidden=64), (xb, yb), smoothed)
    assert report.passed, report.findings
    soft = torch.rand(16, 5, generator=torch.Generator().manual_seed(1))
    bce = nn.BCEWithLogitsLoss()
    entropy = float(-(soft * soft.log() + (1 - soft) * (1 - soft).log()).mean())
    assert abs(loss_levels(bce, torch.zeros(16, 5), soft).floor - entropy) < 1e-4
    report = overfit_batch(small_net(5, hidden=64), (xb, soft), bce)
    assert report.passed, report.findings


def test_a_plateau_of_a_loss_with_an_unknown_floor_is_uncertain_not_a_capacity_failure():
    "The same smoothed CE behind a lambda: trainbook cannot know its floor, so it says so instead of blaming capacity."
    xb, yb = small_batch()
    report = overfit_batch(small_net(hidden=64), (xb, yb),
                           lambda out, y: nn.functional.cross_entropy(out, y, label_smoothing=0.1), steps=150)
    assert not report.passed and report.uncertain
    assert kinds(report) == ["unknown_floor"]
    assert "capacity" not in report.findings[0].advice


class IgnoresInput(nn.Module):
    "A regression net whose forward uses a constant buffer instead of x (the bug)."
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
        self.register_buffer("c", torch.ones(1, 10))
    def forward(self, x): return self.net(self.c.expand(len(x), -1))


@pytest.mark.parametrize("loss_fn", [nn.functional.mse_loss, lambda p, y: ((p - y) ** 2).mean()],
                         ids=["mse_loss", "lambda"])
def test_a_regression_model_that_ignores_its_input_fails(loss_fn):
    "Targets 5 ± 1: learning the mean alone divides the MSE by 50; that is not memorizing the batch."
    g = torch.Generator().manual_seed(0)
    xb, yb = torch.randn(16, 10, generator=g), 5 + torch.randn(16, 1, generator=g)
    report = overfit_batch(IgnoresInput(), (xb, yb), loss_fn, lr=1e-2, steps=200)
    assert not report.passed and "learned_only_constant" in kinds(report)
    f = next(f for f in report.findings if f.kind == "learned_only_constant")
    assert "the input does not reach the output" in f.message
    if loss_fn is nn.functional.mse_loss:  # the constant predictor's loss is known: the targets' variance
        assert "mean" in f.message and abs(f.data["constant_loss"] - yb.var(unbiased=False).item()) < 1e-4
    assert overfit_batch(small_net(1), (xb, yb), loss_fn, lr=1e-2, steps=200).passed


def test_a_batch_of_only_ignored_targets_says_no_target_is_left():
    "Pure padding (every target -100): the reason is the empty batch, not NaN data or detached layers."
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(11, 16), nn.Linear(16, 11))
    ids, tgt = torch.randint(1, 11, (4, 6)), torch.full((4, 6), -100)
    report = overfit_batch(model, (ids, tgt), lambda p, y: nn.functional.cross_entropy(p.reshape(-1, 11), y.reshape(-1)))
    assert not report.passed and kinds(report) == ["no_targets"]
    assert "-100" in report.findings[0].message and report.findings[0].data["targets"] == 0


def test_a_far_too_high_lr_is_diverging_with_advice_to_lower_it():
    "lr=1e4 blows the loss up: the reason is the learning rate, not the labels or the capacity."
    report = overfit_batch(small_net(), small_batch(), nn.functional.cross_entropy, lr=1e4, steps=100)
    assert not report.passed and "diverging" in kinds(report)
    f = next(f for f in report.findings if f.kind == "diverging")
    assert "lower the learning rate" in f.advice and "capacity" not in f.advice


def test_a_loss_below_its_floor_fails():
    "nll_loss on raw scores (no log_softmax) falls without bound, below the 0 it allows: not a memorized batch."
    report = overfit_batch(small_net(), small_batch(), nn.functional.nll_loss, steps=100, lr=1e-2)
    assert report.final_loss < 0 and not report.passed and "below_floor" in kinds(report)


def test_a_batch_of_one_target_is_uncertain():
    "Every label the same: a constant output reaches the floor, so even memorizing it cannot show the input is used."
    xb, _ = small_batch()
    report = overfit_batch(small_net(), (xb, torch.full((16,), 2)), nn.CrossEntropyLoss(), steps=50, lr=1e-2)
    assert not report.passed and report.uncertain and kinds(report) == ["uniform_targets"]
    # one row (next(iter(dl)) at batch_size=1) is its own constant: a model that ignores x passed (probe 23)
    class Blind(nn.Module):
        def __init__(self): super().__init__(); self.b = nn.Parameter(torch.zeros(3))
        def forward(self, x): return self.b.expand(len(x), 3)
    for model in (Blind(), small_net()):
        one = overfit_batch(model, (xb[:1], torch.tensor([1])), nn.CrossEntropyLoss(), steps=50, lr=1e-2)
        assert not one.passed and one.uncertain and kinds(one) == ["uniform_targets"], one.findings
        assert "or it has one row" in one.findings[0].message


def test_a_partial_of_a_torch_loss_is_read_by_its_name_for_the_kind_and_the_options():
    from functools import partial
    from trainbook.levels import loss_options
    from trainbook.sanity import loss_kind
    F = nn.functional
    smoothed = partial(F.cross_entropy, label_smoothing=0.1)
    assert loss_kind(smoothed) == "ce" and loss_kind(partial(F.binary_cross_entropy_with_logits)) == "bce"
    assert loss_options(smoothed) == ("cross_entropy", {"label_smoothing": 0.1})


def test_overfit_batch_leaves_the_random_generators_as_it_found_them():
    "Held-out #2: a run after overfit_batch drew other dropout masks and orders than a run without it."
    import random
    import numpy as np
    model = nn.Sequential(nn.Linear(10, 32), nn.Dropout(0.3), nn.ReLU(), nn.Linear(32, 4))

    def draws(): return torch.rand(3).tolist(), random.random(), float(np.random.rand())
    for loss in (nn.functional.cross_entropy, lambda p, y: 1 / 0):  # a test that passes, one that raises
        torch.manual_seed(5); random.seed(5); np.random.seed(5)
        expected = draws()
        torch.manual_seed(5); random.seed(5); np.random.seed(5)
        try: overfit_batch(model, small_batch(), loss, steps=20, lr=1e-2)
        except ZeroDivisionError: pass
        assert draws() == expected


def regression_batch():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(64, 8, generator=g)
    return X, (80 + 10 * X[:, :1] + 5 * torch.randn(64, 1, generator=g))  # unscaled targets: mean ~80


def test_a_loss_short_of_memorizing_large_targets_is_told_to_standardize_them():
    "Held-out #3: MSE on targets of mean ~80 fell short, and the advice never mentioned the targets' scale."
    import math
    from trainbook.levels import LossLevels
    from trainbook.sanity import curve_findings, measure_curve
    values = [6500 * math.exp(-i / 20) + 60 + (-1) ** i for i in range(300)]  # fell, then flat at 60
    levels = LossLevels(0.0, 104.3, "the mean of the targets", 64, (79.7, 10.2))
    found, _ = curve_findings(measure_curve(values, 0.0, 104.3), levels, 1e-3, [1e-3], 300, 0.1)
    assert [f.kind for f in found] == ["fell_short"]
    assert "targets are large (mean 79.7, std 10.2): standardize them" in found[0].advice
    assert "output layer's bias at their mean" in found[0].advice
    torch.manual_seed(0)
    report = overfit_batch(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)), regression_batch(),
                           nn.MSELoss(), steps=100)
    assert not report.passed and "targets are large (mean 79" in report.findings[-1].advice
    # targets of unit scale: no such advice
    levels.target_scale = (0.1, 1.0)
    found, _ = curve_findings(measure_curve(values, 0.0, 104.3), levels, 1e-3, [1e-3], 300, 0.1)
    assert "targets are large" not in found[0].advice


def test_a_loss_that_scores_every_prediction_against_every_target_does_not_pass():
    "Held-out #3: a lambda broadcasting (n,) against (n, 1) to (n, n) passed, its loss only a constant's."
    X, y = regression_batch()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    report = overfit_batch(model, (X, y), lambda p, t: ((p.squeeze(-1) - t) ** 2).mean())
    assert not report.passed and "no_better_than_constant" in kinds(report)
    f = next(f for f in report.findings if f.kind == "no_better_than_constant")
    assert "(n, n)" in f.message and "rows reversed" in f.message and "squeeze" in f.advice
    assert f.data["constant_loss"] == pytest.approx(float(y.var(unbiased=False)), rel=1e-3)
    # the same loss with matching shapes pairs the rows, and gets below a constant: it passes
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    report = overfit_batch(model, (X, y), lambda p, t: ((p - t) ** 2).mean())
    assert "no_better_than_constant" not in kinds(report)


def test_check_init_loss_names_labels_past_the_outputs_as_overfit_batch_does():
    "Probe 40, f2: labels 1..5 on 5 outputs raised torch's raw IndexError; overfit_batch names the range."
    torch.manual_seed(0)
    x = torch.randn(32, 20)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
    for y, outputs in ((torch.randint(0, 5, (32,)) + 1, 5), (torch.arange(32) % 5, 3)):
        head = model if outputs == 5 else nn.Linear(20, 3)
        found = check_init_loss(head, (x, y), nn.CrossEntropyLoss())
        assert [(f.kind, f.severity) for f in found] == [("label_out_of_range", "error")]
        assert found[0].message == overfit_batch(head, (x, y), nn.CrossEntropyLoss()).findings[0].message
        assert f"the model has {outputs} outputs" in found[0].message


def test_init_bias_is_silent_when_the_batch_cannot_show_the_class_shares():
    "Probe 40, f4: 32 uniform labels of 10,000 classes (and 2 rows of 5) were called imbalanced classes."
    torch.manual_seed(0)
    many = nn.Linear(16, 10000)
    nn.init.zeros_(many.weight)
    nn.init.zeros_(many.bias)
    uniform = (torch.randn(32, 16), torch.randint(0, 10000, (32,)))
    assert check_init_loss(many, uniform, nn.CrossEntropyLoss()) == []
    mlp = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 5))
    assert check_init_loss(mlp, (torch.randn(2, 8), torch.tensor([1, 3])), nn.CrossEntropyLoss()) == []
    # a batch that does show the shares, 97% of one class: the info stays
    y = torch.zeros(256, dtype=torch.long)
    y[:8] = torch.arange(8) % 4 + 1
    found = check_init_loss(mlp, (torch.randn(256, 8), y), nn.CrossEntropyLoss())
    assert [f.kind for f in found] == ["init_bias"]


def test_an_empty_batch_or_a_negative_lr_is_refused_naming_it():
    "Probe 44: a 0-row batch got two false errors (a softmax 'seen' on no rows, every target 'ignored'); lr=-1 torch's words."
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    with pytest.raises(ValueError, match="batch has 0 rows"):
        tb.overfit_batch(nn.Linear(4, 2), (X[:0], y[:0]), nn.CrossEntropyLoss(), steps=5)
    with pytest.raises(ValueError, match=r"lr must be a positive learning rate .* got -1"):
        tb.overfit_batch(nn.Linear(4, 2), (X, y), nn.CrossEntropyLoss(), steps=5, lr=-1)
    with pytest.raises(ValueError, match=r"lrs must hold positive learning rates, got 0"):
        tb.overfit_batch(nn.Linear(4, 2), (X, y), nn.CrossEntropyLoss(), steps=5, lrs=(1e-3, 0))


def test_a_failure_with_heavy_dropout_names_the_dropout_in_its_advice():
    "Probe 50: overfit_batch failed on a model with dropout 0.9 with generic advice (labels, capacity, ...)."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(32, 8, generator=g), torch.randint(0, 3, (32,), generator=g)
    for p in (0.0, 0.9):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(p), nn.Linear(16, 16), nn.ReLU(),
                              nn.Dropout(p), nn.Linear(16, 3))
        r = tb.overfit_batch(model, (X, y), nn.CrossEntropyLoss(), device="cpu", steps=150, lr=1e-2)
        assert r.passed == (p == 0.0), (p, [f.kind for f in r.findings])
        named = [f for f in r.findings if "dropout" in f.advice]
        assert bool(named) == (p == 0.9)
        if named:
            assert "2 (p=0.9), 5 (p=0.9)" in named[0].advice
            assert named[0].data["heavy_dropout"] == {"2": 0.9, "5": 0.9}


def test_a_relu_on_per_token_logits_is_named_and_a_shift_by_the_minimum_is_not():
    "Probe 52: the ReLU check read (N, C) scores only; logits minus each row's minimum (one exact 0 a row) were called a ReLU."
    from trainbook.loss_checks import _relu_logits
    torch.manual_seed(0)
    logits = torch.randn(8, 5, 7)  # (N, C, T): classes on dim 1
    assert _relu_logits(torch.relu(logits)) and _relu_logits(torch.relu(torch.randn(16, 4, 3, 3)))
    assert not _relu_logits(logits - logits.min(1, keepdim=True).values)  # one 0 at every position: a shift
    assert not _relu_logits(torch.zeros(8, 5)) and not _relu_logits(torch.nn.functional.softplus(logits))


def test_the_last_activation_is_named_for_per_position_logits_and_binary_losses():
    """Probe 88: a Softmax over (n, C, T) token scores before CrossEntropyLoss failed as a bare `fell_short`
    (`tb.summary` named it); a ReLU before BCEWithLogitsLoss was called a sigmoid, or, once its outputs passed 1,
    not named at all."""
    from trainbook.sanity import static_findings
    torch.manual_seed(0)
    scores = torch.randn(8, 5, 12)
    tags = torch.randint(0, 5, (8, 12))
    found = static_findings(nn.Linear(2, 2), scores.softmax(1), tags, nn.CrossEntropyLoss())
    assert [f.kind for f in found] == ["activation_before_loss"] and "softmax" in found[0].message
    assert static_findings(nn.Linear(2, 2), scores, tags, nn.CrossEntropyLoss()) == []
    targets = (torch.rand(32, 5) > 0.5).float()
    for scale in (0.1, 10.0):  # ReLU'd logits inside [0, 1] and beyond it
        found = static_findings(nn.Linear(2, 2), (torch.randn(32, 5) * scale).relu(), targets, nn.BCEWithLogitsLoss())
        assert [f.kind for f in found] == ["activation_before_loss"]
        assert "ReLU" in found[0].message and "sigmoid" not in found[0].message, scale
    with_sigmoid = nn.Sequential(nn.Linear(2, 2), nn.Sigmoid())
    found = static_findings(with_sigmoid, torch.randn(32, 5).sigmoid(), targets, nn.BCEWithLogitsLoss())
    assert "sigmoid seems applied" in found[0].message
    # logits in [0, 1] from a model without a Sigmoid (a head whose bias starts at a positive prior): no finding
    assert static_findings(nn.Linear(2, 2), 0.4 + 0.05 * torch.randn(32, 5), targets, nn.BCEWithLogitsLoss()) == []
    assert static_findings(nn.Linear(2, 2), torch.randn(32, 5), targets, nn.BCEWithLogitsLoss()) == []


def test_one_output_column_against_two_classes_says_two_outputs_or_a_binary_loss():
    "Probe 88: overfit_batch advised remapping the labels to 0..C-1 (here 0..0) where fit says what to do."
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 1))
    report = overfit_batch(model, (torch.randn(32, 10), torch.randint(0, 2, (32,))), nn.CrossEntropyLoss())
    advice = [f.advice for f in report.findings if f.kind == "label_out_of_range"]
    assert len(advice) == 1 and "nn.Linear(..., 2)" in advice[0] and "BCEWithLogitsLoss" in advice[0]


def test_a_precision_typo_or_one_lr_as_lrs_is_refused_naming_the_argument():
    "Probe 92: precision='half' gave a bare KeyError: 'half'; lrs=0.01 gave \"'float' object is not iterable\"."
    X, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    with pytest.raises(ValueError, match=r"precision must be one of auto, bf16, fp16, fp32, got 'half'"):
        tb.overfit_batch(nn.Linear(4, 2), (X, y), nn.CrossEntropyLoss(), precision="half", steps=5)
    with pytest.raises(TypeError, match=r"lrs must be a non-empty list .* got 0.01; .* pass lr=0.01 instead"):
        tb.overfit_batch(nn.Linear(4, 2), (X, y), nn.CrossEntropyLoss(), lrs=0.01, steps=5)
    for empty in ([], "0.01"):  # nothing to try (was a silent failed report); a string's characters
        with pytest.raises(TypeError, match=r"lrs must be a non-empty list"):
            tb.overfit_batch(nn.Linear(4, 2), (X, y), nn.CrossEntropyLoss(), lrs=empty, steps=5)
    # "auto" resolves as fit resolves it (fp32 on the CPU), and a generator of rates still works
    r = tb.overfit_batch(nn.Linear(4, 2), (X, y), nn.CrossEntropyLoss(), precision="auto", device="cpu",
                         lrs=(lr for lr in [1e-2]), steps=5)
    assert r.lr == 1e-2
