"""`LossStats` (evaluate's `.stats`): what it works out once per evaluation, and what it sums only when
read, give the same numbers as summing every batch by hand."""
import math, warnings

import pytest

import torch
import torch.nn.functional as F
from torch import nn

from trainbook.triage import LossStats


def batches(sizes, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, classes, generator=g), torch.randint(0, classes, (n,), generator=g))
            for n in sizes]


def fill(stats, data, loss_fn=F.cross_entropy):
    for p, y in data: stats.add(p, y, loss_fn(p, y), len(y))
    return stats


def by_hand(data):
    "Σ batch mean·rows and Σ batch mean²·rows, batch by batch in float64."
    means = [(float(F.cross_entropy(p, y)), len(y)) for p, y in data]
    return sum(m * n for m, n in means), sum(m * m * n for m, n in means)


def test_the_spread_between_batches_reaches_flat_also_after_results():
    "flat() (what ranks all-reduce) holds every batch's mean, also those results() held without summing."
    data = batches([16] * 70 + [5])  # two held groups: 64 batches, then 7
    stats = fill(LossStats(F.cross_entropy), data)
    assert stats.results()["spread_from"] == "examples"
    v = stats.flat()
    b1, b2 = by_hand(data)
    assert math.isclose(float(v[6]), b1, rel_tol=1e-9) and math.isclose(float(v[7]), b2, rel_tol=1e-9)
    assert v[[8, 9]].tolist() == [16 * 70 + 5, 71]


def test_a_batch_of_one_row_keeps_the_per_example_spread():
    """Probe 105: a last validation batch of one row (101 rows in batches of 20) dropped the per-example losses for
    the spread between batches: loss_sd read 0.10 where the rows' own was 0.195. One row's value is its loss."""
    data = batches([20] * 5 + [1])
    res = fill(LossStats(F.cross_entropy), data).results()
    rows = torch.cat([F.cross_entropy(p, y, reduction="none") for p, y in data]).double()
    assert res["spread_from"] == "examples"
    assert math.isclose(res["loss_sd"], float(rows.std()), rel_tol=1e-6)


def scalar_for_one_row(pred, y, reduction="mean"):
    "A loss whose per-row form fails on a batch of one row: it gives the batch's mean there."
    values = F.cross_entropy(pred, y, reduction=reduction)
    return values.mean() if len(y) == 1 else values


def test_a_batch_without_per_example_losses_falls_back_to_the_spread_between_batches():
    "Every batch's mean is summed then, the first 64 included."
    data = batches([8] * 66 + [1])
    res = fill(LossStats(scalar_for_one_row), data, scalar_for_one_row).results()
    b1, b2 = by_hand(data)
    rows, k = 8 * 66 + 1, len(data)
    mean = b1 / rows
    assert res["spread_from"] == "batches"
    assert math.isclose(res["loss_sd"], math.sqrt((b2 - rows * mean * mean) / (k - 1)), rel_tol=1e-9)


def test_the_targets_kind_is_read_again_when_a_batch_changes():
    "Integer labels of another dtype keep the class prior; a batch of float targets among them drops it."
    data = batches([32] * 4)
    as_int32 = [(p, y.int() if i % 2 else y) for i, (p, y) in enumerate(data)]
    loss = lambda p, y: F.cross_entropy(p, y.long(), reduction="none")
    kept = fill(LossStats(loss), as_int32, lambda p, y: loss(p, y).mean()).results()
    y = torch.cat([y for _, y in data])
    p = torch.bincount(y, minlength=3).double() / len(y)
    assert math.isclose(kept["prior_loss"], float(-(p * p.log()).sum()), rel_tol=1e-5)
    mixed = [(p, y.float() if i == 2 else y) for i, (p, y) in enumerate(data)]
    dropped = fill(LossStats(loss), mixed, lambda p, y: loss(p, y).mean()).results()
    assert "prior_loss" not in dropped and dropped["spread_from"] == "examples"


def test_a_loss_module_is_scored_per_row_through_a_copy():
    "The per-row form of a loss module is a copy: the run's own module keeps its reduction."
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    data = batches([20] * 3)
    res = fill(LossStats(loss_fn), data, loss_fn).results()
    rows = torch.cat([F.cross_entropy(p, y, label_smoothing=0.1, reduction="none") for p, y in data]).double()
    assert loss_fn.reduction == "mean" and res["spread_from"] == "examples"
    assert math.isclose(res["loss_sd"], float(rows.std()), rel_tol=1e-9)


def test_the_constant_predictors_loss_is_scored_without_grad_and_a_failure_is_said_once():
    "Seen: the loss was called on tiny synthetic batches with grad on, and an error there was swallowed silently."
    import warnings
    import trainbook as tb
    torch.manual_seed(0)
    X, y = torch.randn(96, 8), torch.randint(0, 3, (96,))
    calls = []
    def picky(pred, yb):
        calls.append((len(pred), torch.is_grad_enabled()))
        if len(pred) != 16: raise RuntimeError("needs a real batch")
        return nn.functional.cross_entropy(pred, yb)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        tb.fit(nn.Linear(8, 3), tb.TensorLoader(X[:64], y[:64], batch_size=16),
               tb.TensorLoader(X[64:], y[64:], batch_size=16), loss_fn=picky, config=tb.TrainConfig(epochs=3),
               live=False)
    synthetic = [grad for n, grad in calls if n != 16]  # the constant's rows (the validation's 32)
    assert synthetic and not any(synthetic)  # scored under no_grad
    told = [w for w in said if "prior_loss" in str(w.message)]
    assert len(told) == 1 and "picky raised RuntimeError: needs a real batch" in str(told[0].message)


def test_labels_per_position_get_the_prior_of_the_positions_scored():
    "Probe 50: (N, C, T) scores against (N, T) labels had no prior (a language model at the prior was silent)."
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, 5, t, generator=g), torch.randint(0, 5, (8, t), generator=g)) for t in (7, 7, 4)]
    for loss_fn, pad in ((nn.CrossEntropyLoss(), -100), (nn.CrossEntropyLoss(ignore_index=0), 0)):
        data[0][1][:, -2:] = pad  # padding, left out by the loss
        res = fill(LossStats(loss_fn), data, loss_fn).results()
        y = torch.cat([y.reshape(-1) for _, y in data])
        y = y[y != pad]
        p = torch.bincount(y, minlength=5).double() / len(y)
        p = p[p > 0]
        assert math.isclose(res["prior_loss"], float(-(p * p.log()).sum()), rel_tol=1e-5), pad


def test_a_padded_sequences_row_loss_is_over_its_scored_positions_and_small_validation_counts_labels():
    """Probe 52: padded positions (loss 0) counted in each row's mean: the standard error 1.65× too large; and 16
    sequences of 256 scored tokens were a small_validation of '16 rows'."""
    from trainbook.triage import LossStats
    torch.manual_seed(0)
    pred, yb = torch.randn(16, 5, 40), torch.randint(0, 5, (16, 40))
    yb[:, 20:] = -100  # half of every row padded
    stats = LossStats(torch.nn.CrossEntropyLoss())
    loss = torch.nn.functional.cross_entropy(pred, yb)
    stats.add(pred, yb, loss, 16)
    out = stats.results()
    per_row = torch.nn.functional.cross_entropy(pred[:, :, :20], yb[:, :20], reduction="none").mean(1)
    assert out["loss_sd"] == pytest.approx(float(per_row.std()), rel=1e-5) and out["scored"] == 320


def _bootstrap_se(pred, y, loss_fn, draws=2000):
    "The loss's standard error by resampling rows (the reference the delta method must agree with)."
    g = torch.Generator().manual_seed(1)
    values = [float(loss_fn(pred[i], y[i])) for i in (torch.randint(0, len(y), (len(y),), generator=g)
                                                       for _ in range(draws))]
    return torch.tensor(values).std().item()


def _best_constant(loss_fn, y, shape, grid):
    "The least loss over constant predictions (the grid of one scalar placed in a 2-column or 1-column output)."
    return min(float(loss_fn(c.expand(len(y), *shape), y)) for c in grid)


def test_a_class_weighted_cross_entropy_gets_its_own_prior_and_standard_error():
    """CrossEntropyLoss(weight=w) averages Σ w[y]·loss / Σ w[y]: the constant predictor's loss is the least one under
    that mean (the constant q ∝ p·w, not the class frequencies p: at p, tb.class_weights made the prior 1.23 where
    no constant does better than ln 2, and a model that learned nothing was called healthy), and the standard error
    is a ratio's (the spread of the weighted rows said 5x the resampled one)."""
    g = torch.Generator().manual_seed(0)
    y = (torch.rand(1000, generator=g) < 0.1).long()
    pred = torch.randn(1000, 2, generator=g)
    for weight in (torch.tensor([1.0, 10.0]), tb_class_weights(y)):
        loss_fn = nn.CrossEntropyLoss(weight=weight)
        stats = fill(LossStats(loss_fn), [(pred[i:i + 100], y[i:i + 100]) for i in range(0, 1000, 100)], loss_fn)
        out = stats.results()
        grid = [torch.tensor([0.0, b]) for b in torch.linspace(-6, 6, 1201).tolist()]
        assert math.isclose(out["prior_loss"], _best_constant(loss_fn, y, (2,), grid), rel_tol=2e-3)
        assert math.isclose(out["loss_se"], _bootstrap_se(pred, y, loss_fn), rel_tol=0.1)


def tb_class_weights(y):
    import trainbook as tb
    return tb.class_weights(y)


def test_ignored_labels_and_padded_sequences_weigh_as_the_loss_weighs_them():
    "F.cross_entropy leaves out -100 labels (its default) and a padded sequence's positions: the SE resamples right."
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (600, 12), generator=g)
    lengths = torch.randint(1, 13, (600,), generator=g)
    y[torch.arange(12)[None, :] >= lengths[:, None]] = -100
    pred = torch.randn(600, 3, 12, generator=g)
    flat_y = y[:, 0].clone()
    flat_y[torch.rand(600, generator=g) < 0.3] = -100
    for p, t in ((pred, y), (pred[:, :, 0], flat_y)):
        for loss_fn in (F.cross_entropy, nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0, 0.5]))):
            stats = fill(LossStats(loss_fn), [(p[i:i + 100], t[i:i + 100]) for i in range(0, 600, 100)], loss_fn)
            assert math.isclose(stats.results()["loss_se"], _bootstrap_se(p, t, loss_fn), rel_tol=0.1)


def test_binary_cross_entropy_has_a_prior():
    """BCE (with logits or probabilities, with a pos_weight) had no constant-predictor reference at all: a binary model
    that learned only the base rate was judged against nothing. It is the least loss over constants, per column."""
    g = torch.Generator().manual_seed(0)
    y = (torch.rand(800, 3, generator=g) < torch.tensor([0.1, 0.5, 0.8])).float()
    logit_grid = [torch.full((3,), b) for b in torch.linspace(-5, 5, 2001).tolist()]
    for loss_fn in (nn.BCEWithLogitsLoss(), F.binary_cross_entropy_with_logits,
                    nn.BCEWithLogitsLoss(pos_weight=torch.tensor([9.0, 1.0, 0.25]))):
        stats = fill(LossStats(loss_fn), [(torch.randn(100, 3, generator=g), y[i:i + 100]) for i in range(0, 800, 100)],
                     loss_fn)
        # the columns' best constants, found one column at a time
        best = sum(_best_constant(lambda p, t: loss_fn(p, t) if not isinstance(loss_fn, nn.BCEWithLogitsLoss)
                                  else nn.BCEWithLogitsLoss(pos_weight=loss_fn.pos_weight[[j]]
                                                            if loss_fn.pos_weight is not None else None)(p, t),
                                  y[:, [j]], (1,), [c[:1] for c in logit_grid]) for j in range(3)) / 3
        assert math.isclose(stats.results()["prior_loss"], best, rel_tol=1e-4)
    p = torch.rand(800, generator=g)
    stats = fill(LossStats(nn.BCELoss()), [(p[i:i + 100], y[i:i + 100, 0]) for i in range(0, 800, 100)], nn.BCELoss())
    rate = float(y[:, 0].mean())
    entropy = -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))
    assert math.isclose(stats.results()["prior_loss"], entropy, rel_tol=1e-5)


def test_several_regression_targets_are_judged_against_a_constant_per_column():
    "MSE on (n, 3) targets of different means: the constant predictor gives each column its mean (the prior was the "
    "pooled variance, 17.5 where the column means scored 1.0)."
    g = torch.Generator().manual_seed(0)
    y = torch.randn(1000, 3, generator=g) + torch.tensor([0.0, 5.0, -5.0])
    stats = fill(LossStats(nn.MSELoss()), [(torch.zeros(100, 3), y[i:i + 100]) for i in range(0, 1000, 100)],
                 nn.MSELoss())
    assert math.isclose(stats.results()["prior_loss"], float(F.mse_loss(y.mean(0).expand(1000, 3), y)), rel_tol=1e-6)


def test_a_weight_hidden_in_a_hand_written_loss_is_measured_for_the_prior():
    """Probe 86: a lambda (or a custom Flax loss) weighting classes inside had the unweighted prior (0.500 where no
    constant does better than 0.693), as if a model beating every constant had not. Its weights are measured from
    its values; a loss that is no mean over rows (a sum) gets no prior, said once, rather than a wrong one."""
    g = torch.Generator().manual_seed(0)
    y = (torch.rand(1000, generator=g) < 0.2).long()
    pred = torch.randn(1000, 2, generator=g)
    data = [(pred[i:i + 100], y[i:i + 100]) for i in range(0, 1000, 100)]
    weight = torch.tensor([1.0, 4.0])
    hidden = lambda p, t: F.cross_entropy(p, t, weight=weight)  # noqa: E731
    told = fill(LossStats(nn.CrossEntropyLoss(weight=weight)), data).results()["prior_loss"]
    grid = [torch.tensor([0.0, b]) for b in torch.linspace(-6, 6, 1201).tolist()]
    assert math.isclose(fill(LossStats(hidden), data, hidden).results()["prior_loss"], told, rel_tol=1e-5)
    assert math.isclose(told, _best_constant(hidden, y, (2,), grid), rel_tol=2e-3)
    plain = lambda p, t: F.cross_entropy(p, t)  # noqa: E731
    p1 = y.float().mean()
    entropy = float(-(p1 * p1.log() + (1 - p1) * (1 - p1).log()))
    assert math.isclose(fill(LossStats(plain), data, plain).results()["prior_loss"], entropy, rel_tol=1e-5)
    summed = lambda p, t: F.cross_entropy(p, t, reduction="sum")  # noqa: E731
    with pytest.warns(UserWarning, match="no mean over rows"):
        assert "prior_loss" not in fill(LossStats(summed), data, summed).results()


class _FocalModule(nn.Module):
    "A loss written as a module: forward(pred, y), no reduction argument (its __call__ takes **kwargs)."
    def __init__(self, gamma=2.0):
        super().__init__()
        self.gamma, self.calls = gamma, [0]  # (a list: a count is no setting of the loss)
    def forward(self, pred, y):
        self.calls[0] += 1
        ce = F.cross_entropy(pred, y, reduction="none")
        return ((1 - torch.exp(-ce)) ** self.gamma * ce).mean()


def test_the_prior_is_the_least_constant_loss_whatever_the_loss_does_with_it():
    """Probe 97: the prior was the loss at the class frequencies (or at p·w): 2.5× the best constant under a focal
    loss, 2-3.7× with weights applied without their normalisation (an untrained model scored below it), off by
    up to 11% under label smoothing, above the untrained loss with a penalty on the scores; a loss module got none
    (reduction= went into its forward); a hidden ignore_index=0 gave NaN. It is searched for now."""
    g = torch.Generator().manual_seed(0)
    y = (torch.rand(600, generator=g) < 0.1).long()
    pred = torch.randn(600, 2, generator=g)
    data = [(pred[i:i + 100], y[i:i + 100]) for i in range(0, 600, 100)]
    W = torch.tensor([1.0, 9.0])
    losses = {
        "focal": lambda p, t: ((1 - torch.exp(-F.cross_entropy(p, t, reduction="none"))) ** 2
                               * F.cross_entropy(p, t, reduction="none")).mean(),
        "unnormalised weights": lambda p, t: (W[t] * F.cross_entropy(p, t, reduction="none")).mean(),
        "smoothing": lambda p, t: F.cross_entropy(p, t, weight=W, label_smoothing=0.2),
        "penalty": lambda p, t: F.cross_entropy(p, t) + 0.1 * p.pow(2).mean(),
        "module": _FocalModule(),
        "hidden ignore_index 0": lambda p, t: F.cross_entropy(p, t, ignore_index=0),
    }
    for name, loss_fn in losses.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no 'prior_loss left out' warning
            prior = fill(LossStats(loss_fn), data, loss_fn).results()["prior_loss"]
        assert math.isclose(prior, _least_by_scipy(loss_fn, y), rel_tol=1e-3, abs_tol=1e-5), name


def _least_by_scipy(loss_fn, y, k=2):
    "The least loss over one score vector for every row: scipy's L-BFGS-B in float64, from five starts."
    import numpy as np
    from scipy.optimize import minimize
    def value(v):
        b = torch.tensor(v, dtype=torch.float64, requires_grad=True)
        out = torch.as_tensor(loss_fn(b.float().expand(len(y), k), y)).double().mean()
        out.backward()
        return float(out.detach()), b.grad.numpy().astype(float)
    starts = [np.zeros(k)] + [np.random.default_rng(seed).normal(scale=2, size=k) for seed in range(4)]
    return min(minimize(value, s, jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15}).fun
               for s in starts)


def test_a_loss_modules_prior_is_searched_for_again_only_when_its_state_changes():
    "Probe 97: a loss module's class weights were measured again at every validation (120 calls a validation)."
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(50, 2, generator=g), torch.randint(0, 2, (50,), generator=g)) for _ in range(2)]
    loss_fn = _FocalModule()
    first = fill(LossStats(loss_fn), data, loss_fn).results()["prior_loss"]
    searched = loss_fn.calls[0]
    assert fill(LossStats(loss_fn), data, loss_fn).results()["prior_loss"] == first
    again = loss_fn.calls[0] - searched
    assert again <= len(data) + 1 < searched  # the batches' own calls only (the loss, a try at each row's)
    loss_fn.gamma = 0.0  # a plain cross-entropy now: searched for again, the labels' entropy
    q = torch.cat([t for _, t in data]).float().mean()
    entropy = float(-(q * q.log() + (1 - q) * (1 - q).log()))
    assert math.isclose(fill(LossStats(loss_fn), data, loss_fn).results()["prior_loss"], entropy, rel_tol=1e-5)


def test_a_cross_entropys_prior_is_exact_on_many_rows_with_a_rare_class():
    "Probe 98: 36 positives in 100,000 rows were rounded into 1 of 4,096: the prior 29% low, below any constant's."
    y = torch.zeros(100_000, dtype=torch.long)
    y[:36] = 1
    data = [(torch.zeros(10_000, 2), y[i:i + 10_000]) for i in range(0, 100_000, 10_000)]
    p = torch.tensor(36 / 100_000, dtype=torch.float64)
    entropy = float(-(p * p.log() + (1 - p) * (1 - p).log()))
    for loss_fn in (nn.CrossEntropyLoss(), F.cross_entropy):
        assert math.isclose(fill(LossStats(loss_fn), data, loss_fn).results()["prior_loss"], entropy, rel_tol=1e-5)


def test_a_label_smoothed_cross_entropy_has_its_prior_in_closed_form():
    "Probe 98: a new CrossEntropyLoss(label_smoothing=0.1) was searched (dozens of calls: 20x an evaluate at 1,000 classes)."
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(100, 5, generator=g), torch.randint(0, 5, (100,), generator=g)) for _ in range(3)]
    loss_fn, calls = nn.CrossEntropyLoss(label_smoothing=0.1), []
    loss_fn.register_forward_hook(lambda *a: calls.append(1))  # (a copy made for reduction='none' keeps it)
    stats = fill(LossStats(loss_fn), data, loss_fn)
    before = len(calls)
    prior = stats.results()["prior_loss"]
    assert len(calls) - before <= 3  # one call on k rows (not a search of dozens)
    y = torch.cat([t for _, t in data])
    assert math.isclose(prior, _least_by_scipy(loss_fn, y, k=5), rel_tol=1e-4)
