"""An accumulation window with a micro-batch whose labels are all ignore_index (a padding-only or prompt-only
micro-batch: its mean loss is 0/0) steps as the window without it, where other micro-batches have labels."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import trainbook as tb


def tagger():
    torch.manual_seed(0)
    return nn.Sequential(nn.Embedding(20, 8), nn.Linear(8, 5))


def token_batches(seed=1):
    "Six micro-batches of (4, 6) token ids and tags; the third's tags all -100 (a padding-only micro-batch)."
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(6):
        x = torch.randint(0, 20, (4, 6), generator=g)
        y = torch.randint(0, 5, (4, 6), generator=g)
        y[:, 4:] = -100  # padding at the ends
        if i == 2: y[:] = -100
        out.append((x, y))
    return out


def token_loss(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def hand_loop(model, batches, accum, lr):
    "SGD by hand: each window's step is the mean of its micro-batches' gradients, those with no label left out."
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for w in range(0, len(batches), accum):
        scored = [(x, y) for x, y in batches[w:w + accum] if (y != -100).any()]
        for x, y in scored: (token_loss(model(x), y) / len(scored)).backward()
        opt.step()
        opt.zero_grad()
    return model


def test_a_padding_only_micro_batch_is_left_out_of_its_window_not_the_run():
    batches, model = token_batches(), tagger()
    want = hand_loop(copy.deepcopy(model), batches, accum=3, lr=0.5)
    cfg = tb.TrainConfig(epochs=1, accum_steps=3, lr=0.5, schedule="constant", warmup=0, device="cpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    run = tb.fit(model, batches, loss_fn=token_loss, optimizer=opt, config=cfg, live=False)
    assert run.stopped == "completed", run.stopped  # before: 'nonfinite' at the first window
    assert run.step == 2 and run.skipped_steps == 0
    for a, b in zip(model.parameters(), want.parameters()): torch.testing.assert_close(a, b)
    h = run.history
    losses = h[(h.split == "train") & (h.name == "loss")].value.tolist()
    assert all(v == v for v in losses)  # finite: the window's mean over its scored micro-batches
    first = [token_loss(want_model(x), y) for want_model in [tagger()] for x, y in batches[:3] if (y != -100).any()]
    assert losses[0] == pytest.approx(float(sum(first) / 2), rel=1e-5)


def test_a_window_of_only_padding_still_stops_with_advice():
    batches = token_batches()
    batches = [batches[2]] * 3 + batches[3:]  # the first window has nothing to score at all
    cfg = tb.TrainConfig(epochs=1, accum_steps=3, device="cpu")
    run = tb.fit(tagger(), batches, loss_fn=token_loss, config=cfg, live=False)
    assert run.stopped == "nonfinite"
    assert any("scored label" in f.advice for f in run.findings if f.advice)


def test_a_loss_that_divides_by_its_own_count_is_not_left_out():
    "A masked mean written by hand: 0/0 in its gradient too, so the window cannot go on without it."
    def masked(out, y):
        keep = (y != -100)
        per = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1).clamp(min=0), reduction="none")
        return (per * keep.reshape(-1)).sum() / keep.sum()
    cfg = tb.TrainConfig(epochs=1, accum_steps=3, device="cpu")
    run = tb.fit(tagger(), token_batches(), loss_fn=masked, config=cfg, live=False)
    assert run.stopped == "nonfinite"
