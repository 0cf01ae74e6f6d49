"""Held-out findings on the checks before a run: BCE targets outside [0, 1], dry_run agreeing with summary, a
warmup longer than the run."""
import functools, warnings

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.loss_checks import TargetsOutOfRange, bce_target_range
from trainbook.guard import run_steps, warmup_past_run
from trainbook.preflight import dry_run, summary

from helpers import blobs, mlp

F = nn.functional
BCE_LOSSES = [F.binary_cross_entropy_with_logits, nn.BCEWithLogitsLoss(),
              functools.partial(F.binary_cross_entropy_with_logits, reduction="mean")]


def labels_as_floats(n=64):
    "Class labels 0..2 as (n, 1) floats: what BCE with one output gets when the task has 3 classes."
    X, y = blobs(n)
    return X, y.float().unsqueeze(1)


# --- f3: a BCE loss on class labels ----------------------------------------------------------------------

@pytest.mark.parametrize("loss_fn", BCE_LOSSES)
def test_fit_refuses_bce_on_class_labels_naming_the_loss_the_range_and_the_fix(loss_fn):
    X, y = labels_as_floats()
    with pytest.raises(TargetsOutOfRange) as e:
        tb.fit(mlp(out=1), tb.TensorLoader(X, y, batch_size=32), loss_fn=loss_fn, live=False, track=False,
               config=tb.TrainConfig(epochs=1))
    message = str(e.value)
    assert "from 0 to 2" in message and "[0, 1]" in message and "cross_entropy" in message
    assert "binary_cross_entropy_with_logits" in message or "BCEWithLogitsLoss" in message
    assert isinstance(e.value, ValueError) and e.value.finding.kind == "target_out_of_range"


def test_probability_bce_losses_are_checked_too_and_soft_targets_pass():
    y = torch.tensor([[0.0], [2.0]])
    for loss_fn in (F.binary_cross_entropy, nn.BCELoss()):
        found = bce_target_range(y, loss_fn)
        assert found is not None and found.data["max_target"] == 2.0
    assert bce_target_range(torch.tensor([[-1.0], [0.5]]), nn.BCELoss()).data["min_target"] == -1.0
    soft = torch.tensor([[0.0], [0.3], [1.0]])
    assert bce_target_range(soft, F.binary_cross_entropy_with_logits) is None  # soft labels are fine
    assert bce_target_range(y, F.mse_loss) is None  # other losses: no range rule
    assert bce_target_range(y, None) is None


def test_summary_and_dry_run_name_bce_targets_out_of_range():
    X, y = labels_as_floats()
    s = summary(mlp(out=1), (X[:32], y[:32]), F.binary_cross_entropy_with_logits)
    assert [f.kind for f in s.findings] == ["target_out_of_range"]
    assert s.findings[0].severity == "error"
    report = dry_run(mlp(out=1), tb.TensorLoader(X, y, batch_size=16), None, nn.BCEWithLogitsLoss())
    assert not report.passed
    assert [f.kind for f in report.findings] == ["target_out_of_range"]


def test_bce_with_binary_targets_passes_fit_summary_and_dry_run():
    X, y = labels_as_floats()
    y = (y > 0).float()
    assert summary(mlp(out=1), (X[:32], y[:32]), nn.BCEWithLogitsLoss()).findings == []
    run = tb.fit(mlp(out=1), tb.TensorLoader(X, y, batch_size=32), loss_fn=nn.BCEWithLogitsLoss(), live=False,
                 track=False, config=tb.TrainConfig(epochs=1))
    assert run.step == 2
    assert dry_run(mlp(out=1), tb.TensorLoader(X, y, batch_size=16), None, nn.BCEWithLogitsLoss()).passed


# --- f5: dry_run's verdict includes summary's model/loss checks ------------------------------------------

def test_dry_run_fails_a_softmax_before_cross_entropy_as_summary_does():
    X, y = blobs(96)
    net = nn.Sequential(mlp(), nn.Softmax(1))
    assert [f.kind for f in summary(net, (X[:32], y[:32]), F.cross_entropy).findings] == ["activation_before_loss"]
    report = dry_run(net, tb.TensorLoader(X[:64], y[:64], batch_size=16), tb.TensorLoader(X[64:], y[64:]),
                     F.cross_entropy)
    assert not report.passed
    assert [(f.severity, f.kind) for f in report.findings] == [("error", "activation_before_loss")]


def test_dry_run_of_a_healthy_model_gains_no_summary_findings():
    X, y = blobs(96)
    report = dry_run(mlp(), tb.TensorLoader(X[:64], y[:64], batch_size=16), tb.TensorLoader(X[64:], y[64:]),
                     F.cross_entropy)
    assert report.passed and report.findings == []


# --- f1: a warmup that covers the whole run --------------------------------------------------------------

def test_fit_warns_when_the_warmup_is_longer_than_the_run():
    X, y = blobs(64)
    cfg = tb.TrainConfig(epochs=2, lr=1e-3, schedule="warmup_cosine", warmup=20)  # 4 batches x 2 epochs = 8 steps
    with pytest.warns(UserWarning, match=r"warmup=20 is 20 optimizer steps but the run has 8") as seen:
        run = tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=16), loss_fn=F.cross_entropy, live=False,
                     track=False, config=cfg)
    note = [str(w.message) for w in seen if "warmup=" in str(w.message)]
    assert len(note) == 1 and "40% of lr=0.001" in note[0] and "warmup=0.05" in note[0]
    assert run.step == 8
    # and the run keeps it among its findings (run.json, the live display), once
    assert [f.data["total_steps"] for f in run.findings if f.kind == "warmup_past_run"] == [8]


@pytest.mark.parametrize("changes", [dict(warmup=4), dict(warmup=0.5), dict(schedule="plateau", warmup=20),
                                     dict(warmup=20, max_steps=None, epochs=10)])
def test_fit_is_quiet_when_the_lr_gets_past_its_warmup(changes):
    X, y = blobs(64)
    cfg = tb.TrainConfig(epochs=2, schedule="warmup_cosine", warmup=0).replace(**changes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=16), loss_fn=F.cross_entropy, live=False, track=False,
               config=cfg)


def test_warmup_past_run_counts_the_runs_steps():
    cfg = tb.TrainConfig(epochs=3, accum_steps=2, schedule="constant", warmup=15)
    assert run_steps(cfg, 10) == 15 and run_steps(cfg.replace(max_steps=7), 10) == 7 and run_steps(cfg, None) is None
    (note,) = warmup_past_run(cfg, 15)  # the lr reaches its peak only at the last step: still all warmup
    assert note.severity == "warning" and note.data == {"warmup_steps": 15, "total_steps": 15, "last_lr": cfg.lr}
    assert warmup_past_run(cfg, 16) == [] and warmup_past_run(cfg, None) == []


def test_dry_run_reports_the_warmup_as_a_finding_and_its_short_trials_do_not_warn():
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    long_warmup = tb.TrainConfig(epochs=2, schedule="warmup_cosine", warmup=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = dry_run(mlp(), dl, None, F.cross_entropy, long_warmup)
        assert report.passed and [f.kind for f in report.findings] == ["warmup_past_run"]
        # a warmup of 5 steps in a run of 40: the dry run's 3-step trial is all warmup, which is no news
        report = dry_run(mlp(), dl, None, F.cross_entropy, long_warmup.replace(epochs=10, warmup=5))
        assert report.passed and report.findings == []
