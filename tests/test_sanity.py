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
