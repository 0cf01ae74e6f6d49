"""Models and losses nobody tuned trainbook on: a model with nothing to train, a model that returns its loss
bare, sequence logits (n, T, C) against (n, T) labels. Each must end in a message that names the real
cause."""
import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.sanity import overfit_batch

CE = nn.functional.cross_entropy


class NoParams(nn.Module):
    "A forward with no weights: nothing to train."
    def forward(self, x): return x[:, :2]


class BareLoss(nn.Module):
    "A model that computes its loss and returns it as a bare scalar tensor."
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x, y): return CE(self.lin(x), y)


class TokenLM(nn.Module):
    "Token ids in, per-position scores out: (n, T, C)."
    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(10, 8), nn.Linear(8, 10)

    def forward(self, x): return self.out(self.emb(x))


def _data():
    torch.manual_seed(0)
    x = torch.randn(16, 4)
    return x, (x[:, 0] > 0).long()


def _frozen():
    model = nn.Linear(4, 2)
    model.requires_grad_(False)
    return model


def test_overfit_batch_reports_a_model_without_parameters():
    report = overfit_batch(NoParams(), _data(), CE, steps=5)
    assert not report.passed
    assert [f.kind for f in report.findings] == ["no_parameters"]
    assert report.findings[0].severity == "error"


@pytest.mark.parametrize("model, says", [(NoParams(), "no parameters at all"), (_frozen(), "are frozen")])
def test_lr_find_names_a_model_with_nothing_to_train(model, says):
    # not "no .detach() on its way": the loss has no grad_fn because nothing in the model can learn
    x, y = _data()
    with pytest.raises(TypeError, match=says) as err:
        tb.lr_find(model, tb.TensorLoader(x, y, batch_size=8), CE)
    assert "detach" not in str(err.value)


@pytest.mark.parametrize("model, says", [(NoParams(), "no parameters at all"),
                                         (_frozen(), r"requires_grad_\(True\)")])
def test_fit_names_a_model_with_nothing_to_train(model, says):
    x, y = _data()
    with pytest.raises(ValueError, match=says):
        tb.fit(model, tb.TensorLoader(x, y, batch_size=8), None, loss_fn=CE, live=False)


def test_a_bare_loss_from_the_model_is_named_as_such():
    x, y = _data()
    with pytest.raises(ValueError, match=r"one bare value \(tensor \(\)\).*\{'loss': loss\}"):
        overfit_batch(BareLoss(), {"x": x, "y": y}, None, steps=5)


def test_sequence_logits_against_labels_say_where_the_classes_go():
    torch.manual_seed(0)
    tokens = torch.randint(0, 10, (4, 5))
    with pytest.raises(RuntimeError, match=r"classes on the last axis.*transpose\(1, 2\)") as err:
        overfit_batch(TokenLM(), (tokens, tokens), CE, steps=5)
    assert "whole_output" not in str(err.value)  # the old, wrong advice


def test_integer_labels_for_bce_are_named():
    x, y = _data()
    with pytest.raises(RuntimeError, match=r"yb is int64: give float labels \(yb.float\(\)") as err:
        overfit_batch(nn.Linear(4, 1), (x, y[:, None]), nn.BCEWithLogitsLoss(), steps=5)
    assert "whole_output" not in str(err.value)  # the old, wrong advice


class Confident(nn.Module):
    "Parameter-free logits: uniform (scale 0) or overconfident (a large scale)."
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x): return self.scale * x[:, :3]


def test_check_init_loss_takes_a_model_without_parameters():
    x, y = _data()
    assert tb.check_init_loss(Confident(0.0), (x, y)) == []  # uniform logits: exactly ln 3
    assert [f.kind for f in tb.check_init_loss(Confident(100.0), (x, y))] == ["init_loss"]
