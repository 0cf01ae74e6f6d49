"A loss on the model's whole output (auxiliary heads, output dicts): one rule, `tb.whole_output`, in every caller."
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import trainbook as tb
from trainbook.batch import compute_loss

from helpers import blobs


class WithAux(nn.Module):
    "A classifier with an auxiliary head: returns (logits, aux)."
    def __init__(self, as_dict=False):
        super().__init__()
        torch.manual_seed(0)
        self.body, self.head, self.aux = nn.Linear(8, 16), nn.Linear(16, 3), nn.Linear(16, 1)
        self.as_dict = as_dict

    def forward(self, x):
        h = torch.relu(self.body(x))
        logits, aux = self.head(h), self.aux(h)
        return {"logits": logits, "aux": aux} if self.as_dict else (logits, aux)


SEEN = []


def tuple_loss(out, yb):
    SEEN.append(type(out).__name__)
    logits, aux = out  # fails with "too many values to unpack" on the prediction alone
    return F.cross_entropy(logits, yb) + 0.1 * aux.pow(2).mean()


def dict_loss(out, yb):
    SEEN.append(type(out).__name__)
    return F.cross_entropy(out["logits"], yb) + 0.1 * out["aux"].pow(2).mean()


def loaders():
    X, y = blobs(96)
    return tb.TensorLoader(X[:64], y[:64], batch_size=16), tb.TensorLoader(X[64:], y[64:], batch_size=16)


@pytest.mark.parametrize("as_dict, loss", [(False, tuple_loss), (True, dict_loss)])
def test_every_caller_gives_a_whole_output_loss_the_whole_output(as_dict, loss):
    dl_train, dl_valid = loaders()
    batch = next(iter(dl_train))
    loss_fn = tb.whole_output(loss)
    kind = "dict" if as_dict else "tuple"
    callers = {
        "fit": lambda: tb.fit(WithAux(as_dict), dl_train, dl_valid, loss_fn=loss_fn, metrics=["accuracy"],
                              config=tb.TrainConfig(epochs=2), live=False),
        "evaluate": lambda: tb.evaluate(WithAux(as_dict), dl_valid, loss_fn, metrics=["accuracy"]),
        "train_step": lambda: tb.train_step(WithAux(as_dict), batch, loss_fn,
                                            torch.optim.SGD(WithAux(as_dict).parameters(), lr=0.1)),
        "overfit_batch": lambda: tb.overfit_batch(WithAux(as_dict), batch, loss_fn, steps=100),
        "lr_find": lambda: tb.lr_find(WithAux(as_dict), dl_train, loss_fn, num_steps=5, device="cpu"),
        "dry_run": lambda: tb.dry_run(WithAux(as_dict), dl_train, dl_valid, loss_fn),
        "summary": lambda: tb.summary(WithAux(as_dict), batch, loss_fn),
    }
    for name, call in callers.items():
        SEEN.clear()
        result = call()
        assert SEEN and set(SEEN) == {kind}, name  # the loss saw the whole output, every time
        if name in ("overfit_batch", "dry_run"): assert result.passed, (name, result.findings)
        if name == "fit": assert result.stopped == "completed" and "valid_accuracy" in result.metrics()


def test_a_loss_that_fails_on_the_prediction_says_what_it_got_and_how_to_ask_for_more():
    "#25: 'too many values to unpack' / 'Tensor has no attribute logits' came with nothing about loss_fn's input."
    x, y = blobs(16)
    for as_dict, loss in ((False, tuple_loss), (True, dict_loss)):
        with pytest.raises((ValueError, IndexError, TypeError)) as err:
            tb.train_step(WithAux(as_dict), (x, y), loss, torch.optim.SGD(WithAux().parameters(), lr=0.1))
        text = "\n".join([str(err.value), *err.value.__notes__])  # the note is under the traceback
        assert "loss_fn was called as loss_fn(prediction, yb) with tensor (16, 3) and yb tensor (16,)" in text
        assert "tb.whole_output" in text and ("tuple of 2" in text or "dict {" in text)
    attr = lambda out, yb: F.cross_entropy(out.logits, yb)  # 'Tensor' object has no attribute 'logits'
    with pytest.raises(AttributeError, match="has no attribute 'logits'(.|\n)*tb.whole_output"):
        compute_loss(WithAux()(x), y, attr)
    # a loss failing on a model that returns a tensor: what it got, and the same way out
    with pytest.raises(ValueError, match=r"with tensor \(16, 3\) and yb tensor \(4,\)"):
        compute_loss(torch.zeros(16, 3), y[:4], F.cross_entropy)


def test_a_loss_raising_its_own_error_keeps_it_and_gets_no_whole_output_advice():
    "Held-out #1: RuntimeError('loader broke') at step 30 got whole_output advice; a KeyError was rebuilt."
    x, y = blobs(64)
    calls = []

    def breaks_later(pred, yb):
        calls.append(1)
        if len(calls) == 30: raise RuntimeError("loader broke")
        return F.cross_entropy(pred, yb)
    model = nn.Linear(8, 3)
    with pytest.raises(RuntimeError) as err:
        tb.fit(model, tb.TensorLoader(x, y, batch_size=2), loss_fn=breaks_later,
               config=tb.TrainConfig(epochs=1), live=False)
    assert err.value.args == ("loader broke",) and str(err.value) == "loader broke"
    notes = " ".join(getattr(err.value, "__notes__", []))
    assert "whole_output" not in notes and "tensor (2, 3)" in notes  # what it got: a fact, no advice

    def needs_weights(pred, yb): raise KeyError("weights")
    with pytest.raises(KeyError) as err:
        compute_loss(WithAux()(x), y, needs_weights)
    assert err.value.args == ("weights",) and str(err.value) == "'weights'"  # the user's own exception
    assert "whole_output" not in " ".join(err.value.__notes__)


def test_whole_output_refuses_what_is_not_a_loss():
    with pytest.raises(TypeError, match="whole_output takes a loss function"):
        tb.whole_output(nn.CrossEntropyLoss)
    wrapped = tb.whole_output(F.cross_entropy)
    assert wrapped.__name__ == "cross_entropy" and tb.wants_whole_output(wrapped)
    assert not tb.wants_whole_output(F.cross_entropy) and not tb.wants_whole_output(None)


def test_a_two_input_batch_fed_to_a_one_input_model_says_what_the_batch_was():
    "#25: torch's 'forward() takes 2 positional arguments but 3 were given', nothing about the batch."
    X, y = blobs(32)
    dl = tb.TensorLoader(X, X, y, batch_size=8)  # three tensors: ((X, X), y)
    with pytest.raises(TypeError) as err:
        tb.fit(nn.Linear(8, 3), dl, loss_fn=F.cross_entropy, config=tb.TrainConfig(epochs=1), live=False)
    text = str(err.value)
    assert "tuple of 2: (tensor (8, 8), tensor (8, 8))" in text and "model(*xb)" in text
    assert "Linear.forward(input" in text
    with pytest.raises(TypeError, match=r"dict \{'a': tensor \(8, 8\)(.|\n)*model\(\*\*xb\)"):
        tb.call_model(nn.Linear(8, 3), {"a": X[:8]})

    class Broken(nn.Module):
        "A TypeError from inside forward is forward's own: left as it is."
        def forward(self, x): return x + "text"
    with pytest.raises(TypeError, match="unsupported operand") as err:
        tb.call_model(Broken(), X)
    assert "trainbook calls" not in str(err.value)


def test_a_nonfinite_run_with_a_whole_output_loss_is_triaged_not_crashed():
    "NaN triage re-runs the loss on the failing batch: through compute_loss, so it gets the whole output too."
    class Blows(WithAux):
        def forward(self, x):
            logits, aux = super().forward(x)
            return logits * float("nan"), aux
    X, y = blobs(32)
    run = tb.fit(Blows(), [(X, y)], loss_fn=tb.whole_output(tuple_loss), config=tb.TrainConfig(epochs=1),
                 live=False)
    assert run.stopped == "nonfinite" and "nonfinite" in [f.kind for f in run.findings]


@pytest.mark.parametrize("loss", [
    lambda pred, yb: F.cross_entropy_loss(pred, yb),  # a typo in torch's name
    lambda pred, yb: F.cross_entropy(pred, yb.to("meta")),  # a device mismatch
    lambda pred, yb: pred + "s",  # the user's own type error
])
def test_an_error_of_the_users_own_code_on_a_plain_prediction_gets_no_whole_output_advice(loss):
    "Seen: a typo, a device mismatch and Tensor + 'str' were each told to try tb.whole_output."
    x, y = blobs(8)
    with pytest.raises(Exception) as err:
        compute_loss(nn.Linear(8, 3)(x), y, loss)
    notes = " ".join(getattr(err.value, "__notes__", []))
    assert "loss_fn was called as" in notes and "whole_output" not in notes


def test_a_loss_short_of_an_argument_is_told_of_whole_output():
    x, y = blobs(8)
    with pytest.raises(TypeError) as err:
        compute_loss(nn.Linear(8, 3)(x), y, lambda pred, yb, aux: F.cross_entropy(pred, yb) + aux)
    assert "tb.whole_output" in " ".join(err.value.__notes__)
