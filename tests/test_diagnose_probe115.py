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


# probe 115, F1 / r_1: digits, an MLP 64-512-512-10 memorising 30% label noise (seed 1; valid accuracy 0.944 → 0.775)
NOISY_VALID = [0.896, 0.727, 0.654, 0.577, 0.542, 0.551, 0.456, 0.504, 0.487, 0.553, 0.489, 0.532, 0.536, 0.546,
               0.48, 0.472, 0.492, 0.491, 0.482, 0.468, 0.479, 0.478, 0.476, 0.469, 0.518, 0.467, 0.527, 0.463,
               0.435, 0.438, 0.585, 0.611, 0.582, 0.477, 0.449, 0.52, 0.516, 0.521, 0.512, 0.627, 0.504, 0.531,
               0.459, 0.556, 0.61]
NOISY_SE = [0.037, 0.025, 0.026, 0.022, 0.023, 0.026, 0.022, 0.025, 0.023, 0.024, 0.024, 0.023, 0.024, 0.025, 0.023,
            0.023, 0.024, 0.024, 0.026, 0.027, 0.024, 0.027, 0.029, 0.03, 0.031, 0.032, 0.033, 0.031, 0.033, 0.033,
            0.043, 0.045, 0.045, 0.041, 0.037, 0.04, 0.041, 0.045, 0.041, 0.053, 0.048, 0.047, 0.046, 0.051, 0.053]
NOISY_TRAIN = [1.815, 1.424, 1.309, 1.267, 1.217, 1.182, 1.168, 1.132, 1.107, 1.085, 1.067, 1.032, 1.012, 0.981,
               0.958, 0.919, 0.894, 0.871, 0.842, 0.79, 0.779, 0.733, 0.717, 0.653, 0.629, 0.605, 0.578, 0.54, 0.501,
               0.468, 0.452, 0.422, 0.413, 0.366, 0.336, 0.311, 0.293, 0.275, 0.262, 0.224, 0.217, 0.216, 0.194,
               0.183, 0.158]


def epochs_frame(valid, se, train, steps=45):
    "A tidy frame: `steps` training losses an epoch around its epoch loss (±1%), one evaluation an epoch."
    h = tb.History()
    for e, (v, s, t) in enumerate(zip(valid, se, train)):
        for i in range(steps):
            step = e * steps + i + 1
            h.append(step, e, "train", "loss", t * (1 + 0.01 * math.sin(step)))
        h.append(step, e, "train", "epoch_loss", t)
        h.append(step, e, "valid", "loss", v)
        h.append(step, e, "valid", "loss_se", s)
        h.append(step, e, "valid", "prior_loss", 2.299)
    return h.to_frame()


def test_an_overfit_on_label_noise_that_steps_up_is_named():
    "A calm plateau (0.48, spread 0.02) then a noisy higher level (0.53, spread 0.055): no steady climb, a step up."
    found = tb.diagnose(epochs_frame(NOISY_VALID, NOISY_SE, NOISY_TRAIN))
    f = next(f for f in found if f.kind == "overfitting")
    assert f.severity == "warning"
    assert f.data["level_shift"] and f.data["level_t"] > 3
    # the calm stretch: from epoch 15 (the first fall left out) to the best (28, left out)
    assert f.data["level_from"] == 15 and f.data["level_count"] == 13
    assert f.data["before_level"] == pytest.approx(np.mean(NOISY_VALID[15:28]))
    assert f.data["later_level"] == pytest.approx(np.mean(NOISY_VALID[29:]))
    assert "a step up" in f.message


def test_a_noisy_plateau_at_its_level_is_no_overfit():
    "The same run whose later evaluations scatter twice as wide around the calm level: no step, no overfitting."
    calm = float(np.mean(NOISY_VALID[15:28]))
    later = [calm + 2 * (v - np.mean(NOISY_VALID[29:])) for v in NOISY_VALID[29:]]
    found = tb.diagnose(epochs_frame(NOISY_VALID[:29] + later, NOISY_SE, NOISY_TRAIN))
    assert not [f for f in found if f.kind == "overfitting" and f.severity == "warning"]


def test_a_small_significant_step_is_not_an_overfit():
    "A step of 3% on a long calm run: many errors up (the levels' SE tiny) but under `overfit_rise`: unsaid."
    rng = np.random.default_rng(0)
    n = 120
    valid = list(1.0 / (1 + 0.5 * np.arange(20)) + 0.5)  # falls to ~0.6
    valid += list(0.6 + 0.003 * rng.standard_normal(50)) + list(0.618 + 0.003 * rng.standard_normal(n - 70))
    train = list(np.linspace(1.5, 0.2, n))
    found = tb.diagnose(epochs_frame(valid, [0.002] * n, train, steps=10))
    over = [f for f in found if f.kind == "overfitting"]
    assert not over or not over[0].data.get("level_shift")
