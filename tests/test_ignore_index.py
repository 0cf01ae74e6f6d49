"Positions labelled -100 (or the loss's own ignore_index) are not scored: token classification, causal LM, flat."
import functools

import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import f1_score
from torch import nn

import trainbook as tb
from trainbook.metrics import focal_loss, ignore_index_of, resolve_metrics


class Tagger(nn.Module):
    "Token ids (n, T) -> tag logits (n, T, C)."
    def __init__(self, vocab=20, tags=5):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.out = nn.Embedding(vocab, 16), nn.Linear(16, tags)

    def forward(self, x): return self.out(self.emb(x))


def token_loss(out, yb):
    "Cross-entropy over every position (its default ignore_index=-100 skips the padding)."
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), yb.reshape(-1))


def tagged(n=8, T=6, pad_from=4):
    x = torch.randint(0, 20, (n, T), generator=torch.Generator().manual_seed(0))
    y = x % 5
    y[:, pad_from:] = -100  # padding: no tag
    return x, y


def perfect_logits(y, classes):
    return F.one_hot(y.clamp(min=0), classes).float() * 5


def test_a_tagger_right_on_every_real_token_scores_one():
    "#25: a perfect tagger scored 0.5-0.67 because padding counted as errors."
    _, y = tagged()
    logits = perfect_logits(y, 5)
    logits[y == -100] = torch.tensor([0., 0., 0., 0., 9.])  # garbage on the padding: must not matter
    assert float(tb.accuracy(logits, y)) == 1.0
    assert tb.sk_metric(f1_score, average="macro")(logits, y) == 1.0
    assert float(tb.accuracy(logits, y, ignore_index=None)) == pytest.approx(4 / 6)  # the old, wrong count


def test_sk_metric_scores_tokens_one_per_position_and_keeps_multilabel_rows():
    _, y = tagged()
    logits = perfect_logits(y, 5)
    logits[0, 0] = torch.tensor([9., -9, -9, -9, -9]) if y[0, 0] != 0 else torch.tensor([-9., 9, -9, -9, -9])
    kept = int((y != -100).sum())
    got = tb.sk_metric(lambda t, p: len(t))(logits, y)  # what scikit-learn receives: one entry per real token
    assert got == kept
    multi = torch.tensor([[1., 0.], [0., 1.]])  # multi-label 0/1 targets with nothing ignored: rows stay rows
    ndim = tb.sk_metric(lambda t, p: t.ndim)(torch.tensor([[2., -2], [-2, 2]]), multi)
    assert ndim == 2


def test_accuracy_ignores_the_losss_own_ignore_index_in_fit_and_evaluate():
    x, y = tagged()
    y[y == -100] = 0  # this pipeline pads with 0 and tells its loss so
    loss_fn = nn.CrossEntropyLoss(ignore_index=0)
    assert ignore_index_of(loss_fn) == 0
    assert ignore_index_of(functools.partial(F.cross_entropy, ignore_index=3)) == 3
    assert ignore_index_of(F.cross_entropy) == -100 and ignore_index_of(None) is None  # its own default
    acc = resolve_metrics(["accuracy"], loss_fn)["accuracy"]
    logits = perfect_logits(y, 5)
    logits[y == 0] = torch.tensor([0., 9., 0., 0., 0.])  # wrong wherever the label is the padding
    assert float(acc(logits, y)) == 1.0
    explicit = tb.sk_metric(lambda t, p: len(t), ignore_index=None)  # explicitly none: not overridden
    assert resolve_metrics([explicit], loss_fn)["<lambda>"](logits, y) == y.numel()
    assert float(resolve_metrics(["accuracy"])["accuracy"](logits, y)) < 1.0  # without the loss: -100 only


def test_evaluate_passes_an_nn_losss_ignore_index_to_the_built_in_metrics():
    x, y = tagged()
    y[y == -100] = 0

    class ByPosition(nn.CrossEntropyLoss):
        "CrossEntropyLoss over (n, T, C) logits."
        def forward(self, out, yb): return super().forward(out.reshape(-1, out.shape[-1]), yb.reshape(-1))

    loss_fn = ByPosition(ignore_index=0)
    logits = Tagger()(x).detach()
    keep = y != 0
    scores = tb.evaluate(Tagger(), [(x, y)], loss_fn, metrics=["accuracy"])
    assert scores["accuracy"] == pytest.approx(float((logits.argmax(-1) == y)[keep].float().mean()))


def test_token_classification_overfit_batch_and_fit_report_the_real_tokens():
    x, y = tagged()
    report = tb.overfit_batch(Tagger(), (x, y), token_loss, steps=150)
    assert report.passed and not report.findings
    run = tb.fit(Tagger(), [(x, y)], [(x, y)], loss_fn=token_loss, metrics=["accuracy"],
                 config=tb.TrainConfig(epochs=60, lr=3e-2), live=False)
    assert run.metrics()["valid_accuracy"].iloc[-1] == 1.0  # memorized: every real token right


def test_overfit_batch_with_cross_entropy_ignore_index_does_not_call_the_padding_out_of_range():
    "#25: nn.CrossEntropyLoss(ignore_index=-100) with a few -100 labels failed with label_out_of_range."
    torch.manual_seed(0)
    X, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    y[:3] = -100
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 3))
    for loss_fn in (nn.CrossEntropyLoss(ignore_index=-100), nn.CrossEntropyLoss(), F.cross_entropy):
        report = tb.overfit_batch(model, (X, y), loss_fn, steps=200)
        assert "label_out_of_range" not in [f.kind for f in report.findings], loss_fn
        assert report.passed
    y[5] = 7  # a real label out of range is still caught, and named
    found = tb.overfit_batch(model, (X, y), nn.CrossEntropyLoss(), steps=5).findings
    bad = next(f for f in found if f.kind == "label_out_of_range")
    assert bad.data["max_label"] == 7 and bad.data["min_label"] >= 0
    y[5] = 1
    y[6] = -1  # -1 is not the loss's ignore_index: out of range
    found = tb.overfit_batch(model, (X, y), nn.CrossEntropyLoss(), steps=5).findings
    assert next(f for f in found if f.kind == "label_out_of_range").data["min_label"] == -1
    y[6] = 0
    y[:3] = 0  # the loss ignores 0 here: -100 is now a real (bad) label, 0 is not counted
    y[7] = -100
    found = tb.overfit_batch(model, (X, y), nn.CrossEntropyLoss(ignore_index=0), steps=5).findings
    assert next(f for f in found if f.kind == "label_out_of_range").data["min_label"] == -100


class TinyCausalLM(nn.Module):
    "input_ids (n, T) -> next-token logits (n, T, V); the loss compares logits[:, :-1] with labels[:, 1:]."
    def __init__(self, vocab=12):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.head = nn.Embedding(vocab, 32), nn.Linear(32, vocab)

    def forward(self, input_ids, attention_mask=None): return self.head(self.emb(input_ids))


def causal_batch(n=6, T=8, prompt=3):
    ids = torch.randint(1, 12, (n, T), generator=torch.Generator().manual_seed(1))
    ids[:, -2:] = 0  # padding
    labels = ids.clone()
    labels[:, :prompt] = -100  # prompt tokens: no loss
    labels[:, -2:] = -100  # padding: no loss
    return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": labels}


def shifted(out, labels):
    "The causal-LM loss: token t predicts token t+1."
    return F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), labels[:, 1:].reshape(-1))


def test_a_causal_lm_batch_is_scored_on_its_answer_tokens_only():
    batch = causal_batch()
    labels = batch["labels"]
    # a perfect next-token predictor: its (n, T, V) logits at t put the mass on labels[t + 1]
    target = torch.roll(labels, -1, dims=1)
    logits = perfect_logits(target, 12)
    logits[target == -100] = 3.0  # anything on the prompt and the padding
    next_token_acc = lambda out, yb: tb.accuracy(out[:, :-1], yb[:, 1:])
    assert float(next_token_acc(logits, labels)) == 1.0
    assert float(tb.accuracy(logits[:, :-1], labels[:, 1:], ignore_index=None)) < 0.6
    report = tb.overfit_batch(TinyCausalLM(), batch, shifted, steps=150)
    assert "label_out_of_range" not in [f.kind for f in report.findings]  # the -100 prompt and padding
    assert report.final_loss < 0.5 * report.initial_loss  # a bigram model cannot memorize it all: it learns
    scores = tb.evaluate(TinyCausalLM(), [batch], shifted, metrics={"acc": next_token_acc})
    out = TinyCausalLM()(batch["input_ids"]).detach()
    keep = labels[:, 1:] != -100
    assert scores["acc"] == pytest.approx(float((out[:, :-1].argmax(-1) == labels[:, 1:])[keep].float().mean()))


def test_focal_loss_leaves_ignored_targets_out_like_cross_entropy():
    logits = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 2, 3, -100, 1, -100, 2, 0, 3])
    assert torch.allclose(focal_loss(logits, y, gamma=0), F.cross_entropy(logits, y))
    w = torch.tensor([1., 2., 3., 4.])
    assert torch.isfinite(focal_loss(logits, y, weight=w))  # weight[-100] would index out of range


@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_gives_the_losss_own_mean_over_the_whole_set_at_any_batch_size(weighted):
    """Probe 107: a class-weighted loss's valid_loss was 1.068 with batches of one row and 1.132 with 17 (the
    rows-weighted batch means drop the weights); a batch of only padded labels made it NaN and stopped the run."""
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(34, 4, generator=g), torch.randint(0, 3, (34,), generator=g)
    y[5] = -100  # a row whose label is left out: alone in a batch of one, a mean over nothing
    weight = torch.tensor([1.0, 5.0, 0.5]) if weighted else None
    loss_fn = functools.partial(F.cross_entropy, weight=weight)
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    whole = float(loss_fn(model(X), y))  # one call on every row: Σ loss / Σ weight[y] over the scored labels
    for batch_size in (1, 2, 17, 34):
        got = tb.evaluate(model, tb.TensorLoader(X, y, batch_size=batch_size), loss_fn)["loss"]
        assert got == pytest.approx(whole, rel=1e-5), batch_size


def test_focal_loss_over_padded_positions_is_its_own_mean_at_any_batch_size():
    """Probe 108: tb.focal_loss's ignore_index is its default (no attribute, no partial), so evaluate did not see
    it: a validation batch of only padding made valid_loss NaN and stopped the run, and the mean moved with the
    batch size (1.343 at 2 rows, 1.400 in one call)."""
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(23, 5, 3, generator=g), torch.randint(0, 4, (23, 5), generator=g)
    y[3, :] = -100  # a row of only padding
    y[7, 2:] = -100
    torch.manual_seed(0)
    model = nn.Linear(3, 4)
    for loss_fn in (tb.focal_loss, functools.partial(tb.focal_loss, weight=torch.tensor([3.0, 0.5, 1.0, 2.0]))):
        whole = float(loss_fn(model(X), y))
        for batch_size in (1, 2, 7):
            got = tb.evaluate(model, tb.TensorLoader(X, y, batch_size=batch_size), loss_fn)["loss"]
            assert got == pytest.approx(whole, rel=1e-5), batch_size
    assert tb.focal_loss(model(X), y, reduction="none").shape == y.shape
    with pytest.raises(ValueError, match="reduction='avg'"): tb.focal_loss(model(X), y, reduction="avg")


def test_a_users_masked_loss_that_declares_ignore_index_is_averaged_over_its_scored_labels():
    """A hand-written token loss with `ignore_index=-100` in its signature (no `reduction`): fit's epoch loss and
    evaluate's valid loss are the mean over every scored token of the set, as F.cross_entropy of the whole set is,
    whatever the batches' numbers of tokens (probe 122: both read 1.1809 where the tokens' mean is 1.2109)."""
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(48, 6, 5, generator=g), torch.randint(0, 3, (48, 6), generator=g)
    for i, length in enumerate([1] * 16 + [6] * 16 + [3] * 16): y[i, length:] = -100

    def masked_ce(logits, labels, ignore_index=-100):
        keep = labels != ignore_index
        each = F.cross_entropy(logits, labels.clamp_min(0), reduction="none")
        return (each * keep).sum() / keep.sum()

    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(5, 3)
        def forward(self, x): return self.lin(x).permute(0, 2, 1)  # (n, C, T)

    torch.manual_seed(0)
    model, batches = Tokens(), [(X[i:i + 16], y[i:i + 16]) for i in range(0, 48, 16)]
    with torch.no_grad(): whole = float(F.cross_entropy(model(X), y))
    run = tb.fit(model, batches, batches, loss_fn=masked_ce, live=False,
                 config=tb.TrainConfig(epochs=1, lr=1e-12, device="cpu"))  # (lr 1e-12: the weights stay)
    assert run.records.last("epoch_loss", "train") == pytest.approx(whole, rel=1e-5)
    assert run.records.last("loss", "valid") == pytest.approx(whole, rel=1e-5)
    assert tb.evaluate(model, batches, masked_ce)["loss"] == pytest.approx(whole, rel=1e-5)
    rows_weighed = sum(float(masked_ce(model(xb), yb)) * len(yb) for xb, yb in batches) / 48
    assert abs(rows_weighed - whole) > 1e-3  # (the rows' weighing, as before, is another number)
