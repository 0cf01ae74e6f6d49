"""The one batch protocol: every batch form and model output that fit takes also works in lr_find, top_losses,
overfit_batch, evaluate and score_torch; eval_mode restores what it found; the training lock; the shape check."""
import functools, threading
from types import SimpleNamespace

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.loss_checks import check_labels, check_loss_shapes
from trainbook.batch import (eval_mode, forward, model_loss, prediction, split_batch,
                             training_lock)
from trainbook.triage import top_losses
from trainbook.sanity import overfit_batch

CE = nn.functional.cross_entropy


class TwoInputs(nn.Module):
    "model(a, b): for ((a, b), y) batches."
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b, self.head = nn.Linear(4, 16), nn.Linear(4, 16), nn.Linear(16, 3)

    def forward(self, a, b): return self.head(torch.relu(self.a(a) + self.b(b)))


class Keywords(nn.Module):
    "model(features=...): for dict batches {'features': ..., 'y': ...}."
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.head = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, features): return self.head(features)


def data(n=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 8, generator=g)
    return X, (X @ torch.randn(8, 3, generator=g)).argmax(1)


def tuple_batches():
    X, y = data()
    return [((X[i:i + 32, :4], X[i:i + 32, 4:]), y[i:i + 32]) for i in range(0, 96, 32)]


def dict_batches():
    X, y = data()
    return [{"features": X[i:i + 32], "y": y[i:i + 32]} for i in range(0, 96, 32)]


@pytest.mark.parametrize("make, batches", [(TwoInputs, tuple_batches), (Keywords, dict_batches)])
def test_lr_find_top_losses_overfit_take_every_batch_form(make, batches):
    found = tb.lr_find(make(), batches(), CE, num_steps=30, device="cpu")
    assert len(found.lrs) >= 3 and found.suggestion is not None
    worst = top_losses(make(), batches(), CE, k=5)
    assert len(worst) == 5 and worst.loss.is_monotonic_decreasing
    report = overfit_batch(make(), batches()[0], CE, steps=150, device="cpu")
    assert report.passed, report


@pytest.mark.parametrize("wrap", ["tuple", "dict", "object"])
def test_outputs_as_tuple_dict_or_object_train_and_score(wrap):
    "A model returning (logits, aux), {'logits': ...} or an object with .logits trains with metrics and scores."
    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = nn.Linear(8, 3)

        def forward(self, x):
            logits = self.net(x)
            if wrap == "tuple": return logits, logits.detach().norm()
            if wrap == "dict": return {"logits": logits, "hidden": x}
            return SimpleNamespace(logits=logits)

    X, y = data()
    model = Wrapped()
    run = tb.fit(model, [(X, y)], [(X, y)], loss_fn=CE, metrics=["accuracy", lambda p, t: p.shape[-1]], live=False,
                 config=tb.TrainConfig(epochs=3, lr=1e-2, device="cpu"))
    m = run.metrics()
    assert {"valid_accuracy", "valid_<lambda>"} <= set(m.columns) and (m["valid_<lambda>"] == 3).all()
    scores = tb.score_torch(model, {"valid": [(X, y)]}, "classification")
    assert 0 <= scores["valid_accuracy"] <= 1


def test_eval_mode_restores_each_submodule_also_on_error():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(), nn.BatchNorm1d(2))
    net.train()
    net[2].eval()
    with pytest.raises(RuntimeError):
        with eval_mode(net):
            assert not any(m.training for m in net.modules())
            raise RuntimeError("inside")
    assert [m.training for m in net.modules()] == [True, True, True, False]


def test_split_batch_and_outputs():
    x, y = torch.zeros(3, 2), torch.tensor([0, 1, 0])
    xb, yb = split_batch({"input_ids": x, "labels": y})
    assert list(xb) == ["input_ids"] and yb is y
    xb, _ = split_batch({"input_ids": x, "labels": y}, keep_labels=True)
    assert set(xb) == {"input_ids", "labels"}
    with pytest.raises(TypeError, match="under one of"): split_batch({"input_ids": x})
    with pytest.raises(TypeError, match="length 3"): split_batch((x, y, y))
    out = SimpleNamespace(loss=torch.tensor(1.0), logits=x)
    assert prediction(out) is x and model_loss(out) == 1.0 and model_loss(x) is None
    with pytest.raises(TypeError, match="keys are: hidden"): prediction({"hidden": x})


def test_loss_shapes_checked_before_the_first_step():
    "MSE on (n, 1) vs (n,) is refused on the first batch, naming both shapes, before the optimizer steps."
    X = torch.randn(32, 3)
    model = nn.Linear(3, 1)
    before = model.weight.detach().clone()
    with pytest.raises(ValueError, match=r"prediction shape \(32, 1\) and target shape \(32,\)") as e:
        tb.fit(model, [(X, X.sum(1))], loss_fn=nn.MSELoss(), live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
    assert torch.equal(model.weight, before)
    assert e.value.finding.kind == "shape_mismatch"
    check_loss_shapes(torch.zeros(4, 1), torch.zeros(4, 1), nn.functional.mse_loss)  # same shapes: fine


def test_a_wrong_loss_with_a_validation_loader_is_the_same_shape_mismatch():
    "Probe 75 #2: with a dl_valid, MSE on 2 logits and integer labels gave torch's RuntimeError ('size of tensor a (2)')."
    X = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))
    y = (X[:, 0] > 0).long()
    said = {}
    for loss_fn in (nn.MSELoss(), nn.functional.mse_loss, nn.BCEWithLogitsLoss()):
        for dl_valid in (None, tb.TensorLoader(X[:50], y[:50].float(), batch_size=32)):
            model = nn.Linear(8, 2)
            before = model.weight.detach().clone()
            with pytest.raises(tb.ShapeMismatch, match=r"prediction shape \(32, 2\) and target shape \(32,\)") as e:
                tb.fit(model, tb.TensorLoader(X, y.float(), batch_size=32), dl_valid, loss_fn=loss_fn, live=False,
                       config=tb.TrainConfig(epochs=1, device="cpu"))
            assert torch.equal(model.weight, before)  # refused before any step
            said[dl_valid is not None] = e.value
    assert "dl_valid's first batch" in " ".join(getattr(said[True], "__notes__", [])), said[True]


@pytest.mark.parametrize("where", ["train", "valid"])
def test_labels_past_the_outputs_are_named_by_fit_as_by_overfit_batch(where):
    "Probe 75 #3: labels 0..2 for 2 outputs gave fit torch's bare 'IndexError: Target 2 is out of bounds.'"
    X = torch.randn(32, 3, generator=torch.Generator().manual_seed(0))
    good, bad = torch.tensor([0, 1] * 16), torch.tensor([0, 1, 2, 1] * 8)
    dl_train, dl_valid = [(X, bad if where == "train" else good)], [(X, bad if where == "valid" else good)]
    words = overfit_batch(nn.Linear(3, 2), (X, bad), nn.CrossEntropyLoss(), steps=1).findings[0]
    assert words.kind == "label_out_of_range"
    with pytest.raises(tb.TargetsOutOfRange) as e:
        tb.fit(nn.Linear(3, 2), dl_train, dl_valid, loss_fn=nn.CrossEntropyLoss(), live=False,
               config=tb.TrainConfig(epochs=1, device="cpu"))
    assert str(e.value) == f"{words.message}; {words.advice}"  # one home for the words
    assert e.value.finding.data == {"min_label": 0, "max_label": 2, "n_outputs": 2}
    assert ("dl_valid's first batch" in " ".join(getattr(e.value, "__notes__", []))) == (where == "valid")
    # a label the loss ignores is no label; a loss that is not on class indices is not checked
    check_labels(torch.zeros(4, 2), torch.tensor([0, 1, 7, 1]), functools.partial(nn.functional.cross_entropy,
                                                                                 ignore_index=7))
    check_labels(torch.zeros(4, 2), torch.tensor([0, 1, 7, 1]), lambda p, y: p.sum())


def test_training_lock_refuses_a_second_thread():
    X, y = data()
    model = Keywords()
    inside, release, errors = threading.Event(), threading.Event(), []

    def hold():
        with training_lock(model, "TrainPanel"):
            inside.set()
            release.wait(30)

    worker = threading.Thread(target=hold)
    worker.start()
    inside.wait(30)
    try:
        tb.fit(model, [({"features": X}, y)], loss_fn=CE, live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
    except RuntimeError as e: errors.append(str(e))
    finally:
        release.set()
        worker.join()
    assert len(errors) == 1 and "already training (TrainPanel)" in errors[0]
    run = tb.fit(model, [({"features": X}, y)], loss_fn=CE, live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.stopped == "completed"  # the lock is free again


def test_stop_ends_lr_find_and_overfit_early():
    X, y = data()
    stop = threading.Event()
    stop.set()
    found = tb.lr_find(Keywords(), dict_batches(), CE, num_steps=50, device="cpu", stop=stop)
    assert found.stopped and found.lrs == []
    calls = iter(range(10_000))
    report = overfit_batch(Keywords(), dict_batches()[0], CE, steps=200, device="cpu", stop=lambda: next(calls) >= 15)
    assert report.stopped and len(report.history) == 15


def test_forward_with_the_models_own_loss():
    class HF(nn.Module):
        def __init__(self): super().__init__(); self.head = nn.Linear(8, 3)
        def forward(self, features, labels=None):
            logits = self.head(features)
            return {"logits": logits, "loss": CE(logits, labels)}

    X, y = data()
    out, loss, xb, yb = forward(HF(), {"features": X, "labels": y}, None, torch.device("cpu"))
    assert "labels" in xb and loss is out["loss"]
    with pytest.raises(ValueError, match="output has no .loss"):
        forward(nn.Linear(8, 3), (X, y), None, torch.device("cpu"))


@pytest.mark.parametrize("loss_fn, said", [
    (lambda o, t: CE(o, t).item(), r"loss_fn returned a float 0\.\d+, not a tensor: .*no \.item\(\)"),
    (lambda o, t: (CE(o, t), 0), r"loss_fn returned a tuple \(tensor"),
    (lambda o, t: CE(o, t, reduction="none"), r"loss_fn returned 8 values \(shape \(8,\)\), not one.*reduction='mean'"),
    (lambda o, t: CE(o, t).detach(), r"cut off from the model's parameters \(no grad_fn\)"),
])
def test_a_loss_backward_cannot_go_through_is_named_at_the_first_batch(loss_fn, said):
    "They failed inside backward: \"'float' object has no attribute 'backward'\", \"grad can be implicitly created only for scalar outputs\"."
    torch.manual_seed(0)
    model, batch = nn.Linear(4, 3), (torch.randn(8, 4), torch.randint(0, 3, (8,)))
    cfg = tb.TrainConfig(epochs=1, monitor="train_loss", device="cpu")
    with pytest.raises(TypeError, match=said): tb.fit(model, [batch], loss_fn=loss_fn, config=cfg, live=False)
    with pytest.raises(TypeError, match=said): overfit_batch(model, batch, loss_fn)
    with pytest.raises(TypeError, match=said): tb.lr_find(model, [batch], loss_fn, num_steps=3)
    # the same loss in evaluation (no backward) is taken: evaluate means per-row losses itself
    if "none" in said: assert tb.evaluate(model, [batch], loss_fn)["loss"] > 0


def test_the_data_set_or_a_loader_where_one_batch_belongs_is_named():
    "Seen: 'a batch must be an (xb, yb) pair ... got TensorLoader' (overfit_batch(model, dl)), '... got Tensor'."
    X, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    with pytest.raises(TypeError, match=r"got TensorLoader: a loader, where one batch belongs: .*next\(iter\(loader\)\)"):
        overfit_batch(nn.Linear(4, 3), tb.TensorLoader(X, y, batch_size=8), CE)
    with pytest.raises(TypeError, match=r"got Tensor of shape \(4,\): inputs alone; a batch pairs them"):
        tb.evaluate(nn.Linear(4, 3), X, CE)  # iterating X gives its rows
    with pytest.raises(tb.ShapeMismatch, match=r"prediction shape \(16, 1\) and target shape \(16,\)"):
        tb.check_init_loss(nn.Linear(4, 1), (X, y), CE)  # was torch's IndexError: Target 1 is out of bounds


def test_a_one_row_batch_into_batchnorm_says_drop_last():
    "Seen: torch's 'Expected more than 1 value per channel when training', mid-epoch, with no hint."
    torch.manual_seed(0)
    X, y = torch.randn(33, 4), torch.randint(0, 2, (33,))
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    with pytest.raises(ValueError, match=r"batch of one row reached a BatchNorm layer.*drop_last=True"):
        tb.fit(model, tb.TensorLoader(X, y, batch_size=16), loss_fn=CE, live=False,
               config=tb.TrainConfig(epochs=1, monitor="train_loss", device="cpu"))


@pytest.mark.parametrize("model, x, fix", [
    (nn.Linear(3, 1).double(), torch.randn(8, 3),
     r"parameters are float64 but the batch's inputs are float32.*model\.float\(\).*x\.double\(\)"),
    (nn.Conv1d(3, 2, 1), torch.randn(8, 3, 5, dtype=torch.float64),
     r"parameters are float32 but the batch's inputs are float64.*model\.double\(\).*x\.float\(\)"),
])
def test_a_model_and_inputs_of_two_float_dtypes_are_named_with_the_cast(model, x, fix):
    "Seen: nn.Linear(3, 1).double() on float32 batches failed in torch's words ('mat1 and mat2 must ...')."
    with pytest.raises(RuntimeError, match=fix) as e:
        forward(model, (x, torch.zeros(8)), nn.functional.mse_loss, torch.device("cpu"), check_shapes=True)
    assert isinstance(e.value.__cause__, RuntimeError)  # raised from torch's own error, which stays in view
    assert str(e.value.__cause__) in str(e.value)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied") as e:
        tb.call_model(nn.Linear(4, 1), torch.randn(8, 3))  # any other RuntimeError passes as torch raised it
    assert e.value.__cause__ is None


@pytest.mark.parametrize("model, x, cast", [
    (nn.Linear(3, 2), torch.randint(0, 5, (8, 3)), r"x\.float\(\)"),
    (nn.Conv1d(3, 2, 1).double(), torch.randint(0, 5, (8, 3, 5), dtype=torch.int32), r"x\.double\(\)"),
])
def test_integer_inputs_into_a_float_model_are_named_with_the_cast_or_an_embedding(model, x, cast):
    "Seen: a float model fed a frame's int64 columns failed in torch's words ('... got Long and Float')."
    weights = str(next(model.parameters()).dtype).replace("torch.", "")
    said = (rf"parameters are {weights} but the batch's inputs are integers \({str(x.dtype)[6:]}\).*{cast} "
            r"before the loader.*token ids.*nn\.Embedding first")
    with pytest.raises(RuntimeError, match=said) as e:
        tb.fit(model, [(x, torch.zeros(8, dtype=torch.long))], loss_fn=nn.functional.cross_entropy,
               config=tb.TrainConfig(epochs=1, device="cpu"), live=False)
    assert isinstance(e.value.__cause__, RuntimeError) and str(e.value.__cause__) in str(e.value)
    ids = nn.Sequential(nn.Embedding(5, 4), nn.Flatten(), nn.Linear(12, 2))  # token ids into an embedding
    assert tb.call_model(ids, torch.randint(0, 5, (8, 3))).shape == (8, 2)


def test_a_nan_in_the_first_batch_is_no_shape_mismatch_and_a_broadcast_is_still_found():
    """Probe 64: one NaN in batch 0 made a loss that squeezes its prediction look like one that broadcasts (NaN is
    unequal to NaN), so fit raised ShapeMismatch instead of skipping the window; the finite rows decide."""
    import trainbook as tb
    squeeze = lambda out, y: torch.nn.functional.mse_loss(out.squeeze(-1), y)
    broadcast = lambda out, y: torch.nn.functional.mse_loss(out, y)  # (n, 1) against (n,): every pair
    pred, y = torch.randn(16, 1), torch.randn(16)
    pred[3, 0] = float("nan")
    tb.check_loss_shapes(pred, y, squeeze)  # no error
    with pytest.raises(tb.ShapeMismatch): tb.check_loss_shapes(pred, y, broadcast)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(64, 5, generator=g)
    batches = [(X[i:i + 16].clone(), y.repeat(4)[i:i + 16]) for i in range(0, 64, 16)]
    batches[0][0][3, 1] = float("nan")
    for how, ended in (("skip", "completed"), ("stop", "nonfinite")):
        run = tb.fit(torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)), batches,
                     loss_fn=squeeze, live=False, config=tb.TrainConfig(epochs=1, device="cpu", on_nonfinite=how))
        assert run.stopped == ended


def test_broadcast_shape_is_torchs_answer():
    "`broadcast_shape` (plain Python, every evaluation's first batch) gives torch.broadcast_shapes' shape, or None."
    import itertools, random
    from trainbook.loss_checks import broadcast_shape
    rng = random.Random(0)
    sizes = [0, 1, 2, 3, 64]
    shapes = [()] + [tuple(rng.choice(sizes) for _ in range(k)) for k in (1, 2, 3, 4) for _ in range(12)]
    agree, refused = 0, 0
    for a, b in itertools.product(shapes, shapes):
        try: want = tuple(torch.broadcast_shapes(a, b))
        except RuntimeError: want = None
        assert broadcast_shape(torch.Size(a), torch.Size(b)) == want, (a, b, want)
        agree += 1
        refused += want is None
    assert agree == len(shapes) ** 2 and 0 < refused < agree  # both answers were tried


def test_a_loss_over_a_fixed_number_is_refused_and_told_as_such():
    "sum / 16 is a mean only on batches of 16: refused as a sum, the message says a fixed divisor is one too."
    import torch.nn.functional as F
    from trainbook.loss_checks import check_loss_reduction
    pred, yb = torch.randn(8, 3), torch.randint(0, 3, (8,))
    with pytest.raises(ValueError, match="a sum over a fixed number rather than the batch's rows"):
        check_loss_reduction(pred, yb, lambda p, y: F.cross_entropy(p, y, reduction="sum") / 16)
    check_loss_reduction(pred, yb, lambda p, y: F.cross_entropy(p, y, reduction="sum") / len(y))  # a mean: taken


def test_a_partial_that_gives_a_setting_as_none_is_read_as_none():
    "partial(my_loss, weight=None) was read as my_loss's own default weight (probe 134's note)."
    import functools
    from trainbook.loss_checks import loss_keyword
    def my_ce(pred, yb, weight=torch.tensor([1.0, 3.0])): return nn.functional.cross_entropy(pred, yb, weight=weight)
    assert loss_keyword(functools.partial(my_ce, weight=None), "weight") is None
    assert loss_keyword(my_ce, "weight").tolist() == [1.0, 3.0]  # not given: the function's default
