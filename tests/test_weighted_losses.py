"""Probe 111: the numbers `fit` and `evaluate` report for weighted and masked losses agree with the loss's own mean
over the whole set (one call on every row), and the losses trainbook cannot read per row are refused or named."""
import functools, itertools, warnings

import pytest

import torch
import torch.nn.functional as F
from torch import nn

import trainbook as tb
from trainbook.metrics import accuracy, class_loss_terms
from trainbook.triage import LossStats


class Fixed(nn.Module):
    "A model whose prediction is known: row id -> a stored logit row."
    def __init__(self, out):
        super().__init__()
        self.out = nn.Parameter(out.clone())

    def forward(self, idx): return self.out[idx]


def chunks(idx, y, bs):
    return [(idx[i:i + bs], y[i:i + bs]) for i in range(0, len(y), bs)]


def quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tb.fit(*args, live=False, **kw)


class MyCE(nn.CrossEntropyLoss):  # a subclass that changes nothing
    pass


def test_a_subclass_of_cross_entropy_with_class_weights_is_scored_as_its_own_mean():
    "r_1: a subclass was not known by its name: Σ loss divided by the rows, +7.6% at every batch size."
    torch.manual_seed(0)
    n, k = 103, 4
    logits, y = torch.randn(n, k) * 2, torch.randint(0, k, (n,))
    y[::7] = -100
    loss_fn = MyCE(weight=torch.tensor([0.2, 1.0, 3.0, 0.5]))
    assert class_loss_terms(loss_fn) is not None and class_loss_terms(nn.NLLLoss().forward) is not None
    whole = float(loss_fn(logits, y))
    for bs in (1, 10, n):
        got = tb.evaluate(Fixed(logits), chunks(torch.arange(n), y, bs), loss_fn)["loss"]
        assert got == pytest.approx(whole, rel=1e-5), bs


def summed_ce(pred, target):
    return F.cross_entropy(pred, target, reduction="sum")


def data(n_train=64, n_valid=40, seed=3):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n_train, 6, generator=g), torch.randint(0, 3, (n_train,), generator=g),
            torch.randn(n_valid, 6, generator=g), torch.randint(0, 3, (n_valid,), generator=g))


@pytest.mark.parametrize("loss_fn", [summed_ce, lambda p, t: F.mse_loss(p, F.one_hot(t, 3).float(), reduction="sum")])
def test_a_loss_that_sums_its_rows_inside_a_def_or_lambda_is_refused_before_any_step(loss_fn):
    "r_2: fit ran on, reporting the mean of batch sums (valid 17.9 for a per-row 1.16), scaled by the batch size."
    Xtr, ytr, Xva, yva = data()
    model = nn.Linear(6, 3)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError, match="adds up its rows' losses"):
        quiet_fit(model, tb.TensorLoader(Xtr, ytr, batch_size=16), None, loss_fn=loss_fn,
                  config=tb.TrainConfig(epochs=1, device="cpu"))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # no step was taken
    with pytest.raises(ValueError, match="adds up its rows' losses"):
        tb.evaluate(model, [(Xva, yva)], loss_fn)


@pytest.mark.parametrize("loss_fn", [lambda p, t: F.cross_entropy(p, t), lambda p, t: (p - p.mean()).pow(2).mean()])
def test_a_mean_loss_written_as_a_lambda_is_not_taken_for_a_sum(loss_fn):
    Xtr, ytr, _, _ = data()
    run = quiet_fit(nn.Linear(6, 3), tb.TensorLoader(Xtr, ytr, batch_size=16), None, loss_fn=loss_fn,
                    config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.stopped == "completed"


def test_a_validation_batch_with_every_label_ignored_weighs_nothing_for_a_lambda_loss():
    "r_3: its 0/0 = NaN made valid_loss NaN and stopped the run as 'nonfinite' after epoch 0."
    Xtr, ytr, Xva, yva = data(96, 50)
    yva[:10] = -100  # the first validation batch: nothing to score
    loss_fn = lambda pred, target: F.cross_entropy(pred, target)  # noqa: E731
    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    ev = tb.evaluate(model, tb.TensorLoader(Xva, yva, batch_size=10), loss_fn)
    with torch.no_grad():
        means = [float(loss_fn(model(Xva[i:i + 10]), yva[i:i + 10])) for i in range(10, 50, 10)]
    assert ev["loss"] == pytest.approx(sum(means) / 4, rel=1e-6)  # the other batches' mean, each by its rows
    assert ev.stats["rows"] == 40
    run = quiet_fit(model, tb.TensorLoader(Xtr, ytr, batch_size=32), tb.TensorLoader(Xva, yva, batch_size=10),
                    loss_fn=loss_fn, config=tb.TrainConfig(epochs=2, device="cpu", lr=1e-2))
    assert run.stopped == "completed"
    with pytest.raises(ValueError, match="no rows with a label to score"):
        tb.evaluate(model, [(Xva[:10], yva[:10])], loss_fn)


def test_nothing_scored_reads_the_losses_own_ignore_index():
    from trainbook.metrics import nothing_scored
    y = torch.full((4, 3), 0)
    assert nothing_scored(torch.full((4,), -100), F.cross_entropy)
    assert not nothing_scored(y, F.cross_entropy) and nothing_scored(y, nn.CrossEntropyLoss(ignore_index=0))
    assert not nothing_scored(torch.full((4,), -100.0), F.mse_loss)  # values are no labels


def test_masked_token_loss_train_and_valid_agree_on_the_same_rows_with_an_unchanged_model():
    "r_4: the epoch loss weighed batch means by rows, validation by scored tokens: +35% for bucketed lengths."
    g = torch.Generator().manual_seed(5)
    n, t, c = 64, 40, 6
    lengths = torch.sort(torch.randint(1, t + 1, (n,), generator=g)).values  # batches bucketed by length
    y = torch.randint(0, c, (n, t), generator=g)
    pos = torch.arange(t).expand(n, t)
    y[pos >= lengths[:, None]] = -100
    logits = (F.one_hot(y.clamp(min=0), c).float() * (0.2 * pos[..., None].float())).permute(0, 2, 1).contiguous()
    idx, model = torch.arange(n), Fixed(logits)
    weight = torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0, 1.0])
    # (one micro-batch a step without class weights: the labels' weight counted on the CPU, the common case)
    for loss_fn, accum in itertools.product((nn.CrossEntropyLoss(), MyCE(weight=weight)), (1, 2)):
        run = quiet_fit(model, tb.TensorLoader(idx, y, batch_size=16), tb.TensorLoader(idx, y, batch_size=16),
                        loss_fn=loss_fn, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
                        config=tb.TrainConfig(epochs=1, device="cpu", accum_steps=accum))
        whole = float(loss_fn(logits, y))
        assert run.records.last("epoch_loss") == pytest.approx(whole, rel=1e-5)
        assert run.records.last("loss", "valid") == pytest.approx(whole, rel=1e-5)


def test_a_weighted_sampling_loader_is_refused_as_dl_valid():
    "r_6: each validation scored a new with-replacement resample (valid_loss moved with lr=0)."
    Xtr, ytr, Xva, yva = data()
    with pytest.raises(ValueError, match="dl_valid draws its rows with replacement"):
        quiet_fit(nn.Linear(6, 3), tb.TensorLoader(Xtr, ytr, batch_size=16),
                  tb.TensorLoader(Xva, yva, batch_size=16, weights=torch.ones(len(yva))),
                  loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=1, device="cpu"))


def test_loss_sd_is_the_spread_of_the_scored_rows_only():
    "r_5: rows at ignore_index were counted as examples: loss_sd 3.2x the scored rows' spread at 90% unlabelled."
    g = torch.Generator().manual_seed(0)
    n = 400
    pred, y = torch.randn(n, 4, generator=g) * 2, torch.randint(0, 4, (n,), generator=g)
    y[torch.rand(n, generator=g) < 0.9] = -100
    stats = LossStats(nn.CrossEntropyLoss())
    for i in range(0, n, 32):
        stats.add(pred[i:i + 32], y[i:i + 32], F.cross_entropy(pred[i:i + 32], y[i:i + 32]), len(y[i:i + 32]))
    out = stats.results()
    scored = F.cross_entropy(pred, y, reduction="none")[y != -100].double()
    assert out["loss_sd"] == pytest.approx(float(scored.std()), rel=0.02)
    assert out["loss_se"] == pytest.approx(float(scored.std()) / len(scored) ** 0.5, rel=0.02)


def test_a_training_batch_with_every_label_ignored_is_named_in_the_nonfinite_finding():
    "r_7: the finding advised 'log(0) or a division by zero; lower the lr or clip gradients'."
    Xtr, ytr, Xva, yva = data(96, 50)
    ytr[32:64] = -100  # the second training batch: nothing to score
    run = quiet_fit(nn.Linear(6, 3), tb.TensorLoader(Xtr, ytr, batch_size=32), None,
                    loss_fn=nn.CrossEntropyLoss(), config=tb.TrainConfig(epochs=1, device="cpu", lr=1e-2))
    found = [f for f in run.findings if f.kind == "nonfinite"]
    assert run.stopped == "nonfinite" and len(found) == 1
    assert "no label to score" in found[0].message and "batch 1" in found[0].message
    assert "lower the lr" not in found[0].advice


def test_accuracy_takes_torchs_token_layout_classes_on_dim_1():
    "r_8: (n, C, T) logits, the layout nn.CrossEntropyLoss takes for (n, T) labels, were refused."
    g = torch.Generator().manual_seed(1)
    n, t, c = 12, 5, 4
    y = torch.randint(0, c, (n, t), generator=g)
    y[:, 3:] = -100
    logits = torch.randn(n, c, t, generator=g)
    hits = sum(int(logits[i, :, j].argmax() == y[i, j]) for i in range(n) for j in range(3))
    assert float(accuracy(logits, y)) == pytest.approx(hits / (n * 3))
    ev = tb.evaluate(Fixed(logits), chunks(torch.arange(n), y, 7), nn.CrossEntropyLoss(), metrics="accuracy")
    assert ev["accuracy"] == pytest.approx(hits / (n * 3))


def test_the_sum_check_leaves_a_loss_that_keeps_state_as_it_was():
    """Probe 118, r_1: the check that refuses a summing loss called the user's own loss object on made-up rows, so a
    memory bank of negatives took 24 rows more than the run fed it and the weights differed from a hand loop. It
    tries a copy: the queue and the weights are the hand loop's."""
    X, y = torch.randn(64, 6, generator=torch.Generator().manual_seed(0)), torch.arange(64) % 4
    dl = [(X[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]

    class QueueLoss(nn.Module):  # cross-entropy and a term over a queue of past outputs (enqueued at each call)
        def __init__(self):
            super().__init__()
            self.register_buffer("q", torch.zeros(0, 4))
        def forward(self, p, t):
            neg = self.q[-32:]
            loss = F.cross_entropy(p, t) + (0.1 * (p @ neg.T).logsumexp(1).mean() if len(neg) else 0.0)
            self.q = torch.cat([self.q, p.detach()])
            return loss

    def trained(use_fit):
        torch.manual_seed(1)
        model, loss_fn = nn.Linear(6, 4), QueueLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if use_fit: quiet_fit(model, dl, None, loss_fn=loss_fn, optimizer=opt, config=tb.TrainConfig(epochs=2))
        else:
            for _ in range(2):
                for xb, yb in dl:
                    opt.zero_grad()
                    loss_fn(model(xb), yb).backward()
                    opt.step()
        return model.weight.detach().clone(), len(loss_fn.q)
    (w_fit, rows_fit), (w_hand, rows_hand) = trained(True), trained(False)
    assert rows_fit == rows_hand == 128 and torch.equal(w_fit, w_hand)


def test_accuracy_on_square_token_logits_reads_the_axis_the_loss_reads():
    """Probe 118, r_3: (n, C, T) logits with C == T (a sorting task) were read as (n, T, C): valid accuracy 0.156
    against 0.258. With a cross-entropy on the logits, metrics='accuracy' reads dim 1 as the loss does; alone,
    accuracy refuses the two-way shape unless told the axis."""
    g = torch.Generator().manual_seed(0)
    logits, y = torch.randn(20, 5, 5, generator=g), torch.randint(0, 5, (20, 5), generator=g)
    dim1, last = (logits.argmax(1) == y).float().mean(), (logits.argmax(-1) == y).float().mean()
    assert dim1 != last
    with pytest.raises(ValueError, match=r"class_dim=1\)\} \(or -1\)"):
        accuracy(logits, y)
    assert float(accuracy(logits, y, class_dim=1)) == float(dim1)
    assert float(accuracy(logits, y, class_dim=-1)) == float(last)
    ev = tb.evaluate(Fixed(logits), chunks(torch.arange(20), y, 7), nn.CrossEntropyLoss(), metrics="accuracy")
    assert ev["accuracy"] == pytest.approx(float(dim1))
    told = {"acc": functools.partial(accuracy, class_dim=-1)}  # the user's word stands
    ev = tb.evaluate(Fixed(logits), chunks(torch.arange(20), y, 7), nn.CrossEntropyLoss(), metrics=told)
    assert ev["acc"] == pytest.approx(float(last))


def test_the_epoch_loss_counts_labels_only_where_they_may_be_ignored():
    """The per-step label count (13 µs a step in the loop) is paid only where a label may sit at ignore_index or
    classes are weighed: labels all known before training (a list of batches, a TensorLoader, a DataLoader over a
    TensorDataset) and none ignored weigh steps by rows, which is then exact."""
    from torch.utils.data import DataLoader, TensorDataset
    from trainbook.metrics import epoch_label_terms
    X, clean, padded = torch.randn(6, 2), torch.tensor([0, 1, 2, 0, 1, 2]), torch.tensor([0, 1, -100, 0, 1, 2])
    for labels, expected in ((clean, None), (padded, (None, -100))):
        assert epoch_label_terms(F.cross_entropy, tb.TensorLoader(X, labels, batch_size=4)) == expected
        assert epoch_label_terms(F.cross_entropy, DataLoader(TensorDataset(X, labels), batch_size=4)) == expected
        assert epoch_label_terms(nn.CrossEntropyLoss(), [(X[:3], labels[:3]), (X[3:], labels[3:])]) == expected
    made = DataLoader(TensorDataset(X, clean), batch_size=4, collate_fn=lambda rows: rows)  # a collate of its own
    assert epoch_label_terms(F.cross_entropy, made) == (None, -100)
    weighed = epoch_label_terms(nn.CrossEntropyLoss(weight=torch.ones(3)), tb.TensorLoader(X, clean, batch_size=4))
    assert weighed is not None and weighed[1] == -100
    assert epoch_label_terms(F.mse_loss, tb.TensorLoader(X, clean.float(), batch_size=4)) is None
