"Probe 115's findings on diagnose: Run.metrics()'s loss names read, a frame without a loss refused, a huge init named."
import math

import numpy as np
import pytest

import trainbook as tb


def overfit_frame():
    "A tidy frame of 12 epochs: the train loss falling, the valid loss falling to epoch 4 then climbing far."
    valid = [0.9, 0.6, 0.45, 0.38, 0.35, 0.36, 0.38, 0.41, 0.44, 0.47, 0.5, 0.53, 0.56]
    h = tb.History()
    for e, v in enumerate(valid):
        step = 10 * (e + 1)
        for s in range(step - 9, step + 1): h.append(s, e, "train", "loss", 1.0 / (1 + 0.1 * s))
        h.append(step, e, "train", "epoch_loss", 1.0 / (1 + e))
        h.append(step, e, "valid", "loss", v)
        h.append(step, e, "valid", "loss_se", 0.012)
    return h.to_frame()


def renamed(df, split, name, new):
    d = df.copy()
    d.loc[(d.split == split) & (d.name == name), "name"] = new
    return d


@pytest.mark.parametrize("new", ["valid_loss", "val_loss"])
def test_a_valid_loss_under_run_metrics_name_is_read(new):
    "Probe 115, F5: 'valid_loss' (Run.metrics()'s column) or 'val_loss' (Keras's) read as the valid loss, not as none."
    df = overfit_frame()
    assert "overfitting" in [f.kind for f in tb.diagnose(df)]
    assert "overfitting" in [f.kind for f in tb.diagnose(renamed(df, "valid", "loss", new))]


def test_train_loss_per_epoch_is_the_epoch_mean_and_mixed_rows_are_refused():
    "'train_loss' once an epoch is the epoch's mean; step losses and epoch means under one name: refused, named."
    df = overfit_frame()
    per_epoch = renamed(df[~((df.split == "train") & (df.name == "loss"))], "train", "epoch_loss", "train_loss")
    assert "overfitting" in [f.kind for f in tb.diagnose(per_epoch)]
    both = renamed(renamed(df, "train", "loss", "train_loss"), "train", "epoch_loss", "train_loss")
    with pytest.raises(ValueError, match="'train_loss' has several rows at one step"): tb.diagnose(both)


def test_a_frame_without_a_loss_the_rules_read_is_refused():
    "A frame whose losses go by other names (or an empty one) is refused with its names, not judged clean."
    df = overfit_frame()
    odd = df.replace({"name": {"loss": "my_loss", "epoch_loss": "my_epoch_loss"}})
    with pytest.raises(ValueError, match=r"no loss the rules read.*'my_epoch_loss'"): tb.diagnose(odd)
    with pytest.raises(ValueError, match="it is empty"): tb.diagnose(df.iloc[:0])
    # a plot of such a frame is not the rules' business: as_history alone still reads it
    assert len(tb.readings.as_history(odd).step) == len(odd)


def huge_init_run(steps=400, start=5000.0):
    "A regression run whose first loss is `start`× the constant predictor's (1.0), falling 10× yet ending far above it."
    rng = np.random.default_rng(0)
    h, losses = tb.History(), []
    for s in range(1, steps + 1):
        v = start * (0.1 + 0.9 * math.exp(-s / 60)) * (1 + 0.05 * float(rng.standard_normal()))
        h.append(s, (s - 1) // 40, "train", "loss", v)
        losses.append(v)
    for e in range(steps // 40):
        step = 40 * (e + 1)
        h.append(step, e, "train", "epoch_loss", float(np.mean(losses[step - 40:step])))
        h.append(step, e, "valid", "loss", float(np.mean(losses[step - 5:step])) * 1.05)
        h.append(step, e, "valid", "loss_se", 40.0)
        h.append(step, e, "valid", "prior_loss", 1.0)
    return h


def test_a_huge_init_is_named_not_the_prior():
    "Probe 115, F3: a first loss 5000× the prior's that fell 10× is no 'learned only the prior'; the init is named."
    f = next(f for f in tb.diagnose(huge_init_run()) if f.kind == "not_learning")
    assert "init" in f.advice and "learned only the prior" not in f.advice and "PR-AUC" not in f.advice
    assert "it began at" in f.message


def test_valid_far_below_train_names_dropout_before_leakage():
    "Probe 115, F4: a valid loss a fraction of the train loss: dropout (train loss measured with it on) named first."
    h = tb.History()
    for e in range(10):
        step = 10 * (e + 1)
        for s in range(step - 9, step + 1): h.append(s, e, "train", "loss", 1.0 + 0.01 * (s % 3))
        h.append(step, e, "train", "epoch_loss", 1.01)
        h.append(step, e, "valid", "loss", 0.1)
        h.append(step, e, "valid", "loss_se", 0.01)
    f = next(f for f in tb.diagnose(h) if f.kind == "suspicious_score")
    assert "dropout" in f.message and f.advice.index("dropout") < f.advice.index("leakage")
