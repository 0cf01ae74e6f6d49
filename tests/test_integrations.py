"The other systems: Keras 3 logs in a trainbook History, trainbook nets as scikit-learn estimators, and lazy imports."
import contextlib
import os
import subprocess
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported anywhere
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test may reach the network

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import trainbook as tb
from trainbook.integrations import TorchClassifier, TorchRegressor


def test_import_trainbook_loads_no_optional_library():
    code = ("import sys, trainbook, trainbook.classical; "
            "print(sorted(m for m in ('lightgbm', 'catboost', 'transformers', 'keras', 'peft', 'xgboost') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- Keras 3 ------------------------------------------------------------------------------------------------------

keras = pytest.importorskip("keras")


def keras_fit(X, y, n_train, epochs, callbacks, hidden=64, lr=1e-2, batch_size=16):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((X.shape[1],)), keras.layers.Dense(hidden, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(lr), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(X[:n_train], y[:n_train], validation_data=(X[n_train:], y[n_train:]), epochs=epochs, batch_size=batch_size,
              verbose=0, callbacks=callbacks)
    return model


def noise(n=96, d=16, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype("float32"), rng.integers(0, 2, n)


def learnable(n=400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype("float32")
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def test_keras_history_per_epoch_and_planted_overfitting():
    cb = tb.keras_callback(live=False)
    keras_fit(*noise(), n_train=64, epochs=40, callbacks=[cb])  # random labels: memorized, never learned
    run = cb.run
    h = run.records
    for split, name in (("train", "epoch_loss"), ("train", "loss"), ("valid", "loss"), ("valid", "accuracy")):
        assert list(h.series(name, split, index="epoch").index) == list(range(40)), (split, name)
    assert h.series("loss", "train").index[-1] == 40 * 4  # steps: 4 batches of 16 rows per epoch
    assert run.kind == "keras" and run.stopped == "completed" and run.step == 160
    overfit = [f for f in run.findings if f.kind == "overfitting"]
    assert overfit and overfit[0].data["best_epoch"] < 39
    assert {"train loss", "valid loss"} <= {t.name for t in run.plot().data}
    assert list(run.metrics().columns[:2]) == ["train_loss", "valid_loss"]


def test_keras_learnable_task_is_not_flagged():
    cb = tb.keras_callback(live=False)
    keras_fit(*learnable(), n_train=300, epochs=8, callbacks=[cb], lr=1e-2)
    assert cb.run.records.last("accuracy", "valid") > 0.9
    assert "overfitting" not in [f.kind for f in cb.run.findings]


def test_a_keras_run_is_the_last_run_and_ticks_the_checklist():
    "As after fit: tb.last_run() is the Keras run, and the notebook checklist hears of it."
    from trainbook.magics import Checklist
    cl = Checklist("binary classification", "y", "valid_accuracy", baseline=0.55, threshold=0.6)
    try:
        cb = tb.keras_callback(live=False)
        keras_fit(*learnable(), n_train=300, epochs=4, callbacks=[cb], lr=1e-2)
        assert tb.last_run() is cb.run
        assert cl.done["environment"] and cl.done["beats"], cl.notes
    finally: cl.close()


def test_keras_batches_and_early_stopping():
    cb = tb.keras_callback(live=False, batches=True)
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2)
    keras_fit(*noise(), n_train=64, epochs=50, callbacks=[cb, stop])
    run = cb.run
    epochs = len(run.records.series("loss", "valid"))
    assert run.stopped == "early_stopping" and epochs < 50
    assert len(run.records.series("loss", "train")) == epochs * 4  # one train point per batch
    assert len(run.records.series("epoch_loss", "train")) == epochs


def test_a_keras_early_stopping_names_the_runs_best_epoch_the_one_its_weights_are_from():
    """Probe 114: with Keras' EarlyStopping(monitor="val_accuracy", restore_best_weights=True) the Run's best and
    best_epoch were the lowest val_loss's (epoch 1) while Keras put back epoch 6's weights. The Run follows the
    EarlyStopping among the fit's callbacks: its monitor, its mode, its best epoch, the weights the model holds."""
    X, y = learnable(n=456, seed=1)
    for seed in range(10):  # a fit whose best val_accuracy is not at its lowest val_loss: the two disagree
        keras.utils.set_random_seed(seed)
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(2)])
        model.compile(optimizer=keras.optimizers.Adam(1e-1), metrics=["accuracy"],
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        cb = tb.keras_callback(live=False)
        stop = keras.callbacks.EarlyStopping(monitor="val_accuracy", mode="max", patience=4, restore_best_weights=True)
        h = model.fit(X[:48], y[:48], validation_data=(X[256:], y[256:]), epochs=40, batch_size=16, verbose=0,
                      callbacks=[cb, stop]).history
        if np.argmax(h["val_accuracy"]) != np.argmin(h["val_loss"]): break
    kept = int(np.argmax(h["val_accuracy"]))
    assert np.argmin(h["val_loss"]) != kept and stop.best_epoch == kept  # (a seed that tells them apart)
    run = cb.run
    assert (run.stopped, run.best_epoch, run.extra["monitor"]) == ("early_stopping", kept, "valid_accuracy")
    assert run.best == pytest.approx(h["val_accuracy"][kept])
    assert run.extra["best_step"] == run.records.series("accuracy", "valid").index[kept]  # where the plot marks it
    loss_now = model.evaluate(X[256:], y[256:], verbose=0)[0]  # the weights Keras put back: that epoch's
    assert loss_now == pytest.approx(h["val_loss"][kept], rel=1e-4)


def test_keras_steps_are_optimizer_steps_under_gradient_accumulation():
    "Seen: one step counted per Keras call: steps_per_execution=4 (JAX) gave Run.step 6 for 20 optimizer steps."
    X, y = noise()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2, gradient_accumulation_steps=2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(X, y, epochs=1, batch_size=16, verbose=0)  # trained before: the run goes on from the optimizer's 3
    before = int(model.optimizer.iterations)
    cb = tb.keras_callback(live=False, batches=True)
    model.fit(X, y, epochs=2, batch_size=16, verbose=0, callbacks=[cb])  # 6 batches an epoch: 3 steps
    assert before == 3 and int(model.optimizer.iterations) - before == 6
    assert cb.run.step == 9
    assert cb.run.records.series("loss", "train").index.tolist() == [4, 5, 6, 7, 8, 9]  # a point per step
    assert cb.run.records.series("epoch_loss", "train").index.tolist() == [6, 9]


def test_a_keras_fit_resumed_from_last_keras_goes_on_from_the_optimizers_steps(tmp_path):
    """Probe 67: load last.keras and fit(..., initial_epoch=3), as checkpoint_behind advises: the optimizer went on
    from step 24, but the run recorded epoch 3 at step 8, the step of the first run's epoch 0."""
    X, y = learnable(n=160)
    first = tb.keras_callback(live=False, checkpoint_dir=tmp_path)
    keras_fit(X, y, n_train=128, epochs=3, batch_size=16, callbacks=[first])  # 8 steps an epoch
    loaded = keras.saving.load_model(tmp_path / "last.keras")
    assert int(keras.ops.convert_to_numpy(loaded.optimizer.iterations)) == first.run.step == 24
    for batches in (False, True):
        again = tb.keras_callback(live=False, batches=batches)
        loaded = keras.saving.load_model(tmp_path / "last.keras")
        loaded.fit(X[:128], y[:128], epochs=5, initial_epoch=3, batch_size=16, verbose=0, callbacks=[again])
        epochs = again.run.records.series("epoch_loss", "train", index="epoch")
        steps = again.run.records.series("epoch_loss", "train").index.tolist()
        assert (epochs.index.tolist(), steps, again.run.step) == ([3, 4], [32, 40], 40), batches
        if batches: assert again.run.records.series("loss", "train").index.tolist() == list(range(25, 41))


# --- scikit-learn estimators ------------------------------------------------------------------------------------

@parametrize_with_checks([TorchClassifier(epochs=10), TorchRegressor(epochs=10)])
def test_scikit_learn_estimator_checks(estimator, check):
    "Every check of check_estimator; only check_array_api_input skips itself (no array-API support claimed)."
    check(estimator)


def test_grid_search_over_a_pipeline_on_wine():
    df = load_wine(as_frame=True).frame
    X, y = df.drop(columns="target"), df.target
    pipe = Pipeline([("prep", tb.make_preprocessor(df, "target")), ("net", TorchClassifier(epochs=8))])
    grid = {"net__lr": [1e-4, 1e-2], "net__module_kwargs": [{"hidden": (16,)}]}
    search = GridSearchCV(pipe, grid, cv=3, scoring="balanced_accuracy").fit(X, y)
    assert search.best_params_["net__lr"] == 1e-2 and search.best_score_ > 0.9
    lows = search.cv_results_["mean_test_score"][np.array(search.cv_results_["param_net__lr"]) == 1e-4]
    assert lows.max() < search.best_score_  # the grid really trained different nets
    net = search.best_estimator_.named_steps["net"]
    assert net.module_[0].out_features == 16 and net.run_.step == 3 * 8  # refitted on all 178 rows: 3 batches × 8 epochs
    assert set(search.predict(X)) <= {0, 1, 2}


def test_clone_get_set_params():
    est = TorchClassifier(epochs=3, lr=0.05, module_kwargs={"hidden": (8, 8)})
    assert est.get_params()["lr"] == 0.05 and est.set_params(lr=0.1).lr == 0.1
    X, y = load_breast_cancer(return_X_y=True)
    est.fit(X[:, :5], y)
    copy = clone(est)
    assert copy.get_params() == est.get_params() and not hasattr(copy, "module_")
    again = clone(est).fit(X[:, :5], y)  # same seed: the same net
    assert np.array_equal(again.predict_proba(X[:, :5]), est.predict_proba(X[:, :5]))


def test_cross_validate_nested_cv_and_baseline_take_the_net():
    df = load_breast_cancer(as_frame=True).frame
    sp = tb.make_splits(df, "target", n_folds=3, test_size=0.2, seed=0)
    cv = tb.cross_validate(TorchClassifier(epochs=5), df, "target", sp, scoring="roc_auc")
    assert len(cv) == 3 + 2 and cv.loc["mean", "roc_auc"] > 0.97
    nested = tb.nested_cv(TorchClassifier(epochs=3), {"lr": [1e-2, 3e-2]}, df, "target", outer=2, inner=2)
    assert len(nested["scores"]) == 2 and nested["mean"] > 0.95 and nested["params"][0]["lr"] in (1e-2, 3e-2)
    table = tb.baseline(df, "target", sp, models=("dummy", ("mlp", TorchClassifier(epochs=5))))
    assert list(table.index) == ["dummy", "mlp"] and table.loc["mlp", "test_roc_auc"] > 0.97
    both, _ = tb.compare(table)
    assert "mlp" in both.index


def test_regressor_fits_a_line_and_multi_output():
    x = np.linspace(-1, 1, 200)[:, None]
    reg = TorchRegressor(epochs=30).fit(x, 3 * x[:, 0])
    assert reg.predict(x).shape == (200,) and reg.score(x, 3 * x[:, 0]) > 0.95
    two = TorchRegressor(epochs=30).fit(x, np.c_[3 * x, -x])
    assert two.predict(x).shape == (200, 2)


def test_module_factory_is_checked():
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(TypeError, match="must return an nn.Module"):
        TorchClassifier(module=lambda n_in, n_out: "not a module").fit(X, y)
    with pytest.raises(ValueError, match="features"):  # scikit-learn's own check of the feature count
        TorchClassifier(epochs=1).fit(X, y).predict(X[:, :3])


# --- Hugging Face Transformers and PEFT ---------------------------------------------------------------------------

def contains_token(n, seed=0, marker=3, vocab=64):
    "Random token sequences after a [CLS] id 1; label 1: the `marker` token occurs (three times)."
    rng = np.random.default_rng(seed)
    seqs, labels = [], []
    for _ in range(n):
        length = int(rng.integers(6, 20))
        s = rng.integers(4, vocab, length)
        label = int(rng.uniform() < 0.5)
        if label: s[rng.choice(length, 3, replace=False)] = marker
        seqs.append([1] + s.tolist())
        labels.append(label)
    return seqs, labels


def tiny_bert(seed=0, dropout=0.1):
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32, num_labels=2,
                                     hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(seed)
    return transformers.BertForSequenceClassification(config)


def token_loaders(n_train=256, n_valid=128):
    seqs, labels = contains_token(n_train + n_valid)
    return (tb.TokenLoader(seqs[:n_train], labels[:n_train], batch_size=32, shuffle=True, seed=1),
            tb.TokenLoader(seqs[n_train:], labels[n_train:], batch_size=64))


class StopAt(tb.Callback):
    "Asks the loop to stop after optimizer step `at` (an interruption, the run folder keeps last.pt)."
    def __init__(self, at): self.at = at
    def after_step(self, state):
        if state.step == self.at: state.control.request_stop("interrupted")


def same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_token_loader_pads_each_batch_and_keeps_its_order():
    dl = tb.TokenLoader([[5, 6, 7], [8, 9], [10, 11, 12, 13], [4]], labels=[1, 0, 1, 0], batch_size=2, shuffle=True, seed=0)
    dl.set_epoch(1)
    first = [b["input_ids"].tolist() for b in dl]
    dl.set_epoch(1)
    assert [b["input_ids"].tolist() for b in dl] == first  # the order is a function of seed and epoch
    for b in dl:
        lengths = b["attention_mask"].sum(1)
        assert b["input_ids"].shape[1] == lengths.max()  # padded to this batch's longest row only
        assert (b["input_ids"][b["attention_mask"] == 0] == 0).all()
    with pytest.raises(ValueError, match="labels has 1 entries for 2 sequences"): tb.TokenLoader([[1], [2]], labels=[0])
    with pytest.raises(ValueError, match=r"sequences\[1\] must be a non-empty"): tb.TokenLoader([[1], []])


def test_param_groups_no_decay_for_hf_layernorm_and_bias():
    model = tiny_bert()
    decay, no_decay = tb.param_groups(model, weight_decay=0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    off = {names[id(p)] for p in no_decay["params"]}
    on = {names[id(p)] for p in decay["params"]}
    assert {n for n in names.values() if "LayerNorm" in n or n.endswith("bias")} == off
    assert "bert.encoder.layer.0.attention.self.query.weight" in on and decay["weight_decay"] == 0.1
def test_tiny_bert_trains_with_amp_accumulation_and_clipping(tmp_path):
    model = tiny_bert()
    dl_train, dl_valid = token_loaders(n_train=512)
    cfg = tb.TrainConfig(epochs=5, lr=3e-3, precision="bf16", accum_steps=2, clip_norm=1.0, device="cpu",
                         checkpoint_dir=str(tmp_path))
    dtypes = set()
    model.bert.encoder.layer[0].attention.self.query.register_forward_hook(lambda mod, i, out: dtypes.add(out.dtype))
    run = tb.fit(model, dl_train, dl_valid, loss_fn=None, config=cfg, metrics="accuracy", live=False)
    assert dtypes == {torch.bfloat16}  # autocast was on
    m = run.metrics()
    assert m["valid_loss"].iloc[-1] < 0.5 * m["valid_loss"].iloc[0] and m["valid_accuracy"].iloc[-1] > 0.9
    assert run.step == 5 * 8  # 16 batches per epoch, 2 per optimizer step
    assert (tmp_path / "last.pt").exists() and (tmp_path / "best.pt").exists()


def test_overfit_batch_and_lr_find_on_a_transformer():
    model = tiny_bert()
    batch = next(iter(token_loaders()[0]))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert tb.overfit_batch(model, batch, loss_fn=None, steps=100, lr=3e-3).passed
    finder = tb.lr_find(model, token_loaders()[0], loss_fn=None, num_steps=30)
    assert 1e-7 < finder.suggestion < 10 and len(finder.losses) > 5
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # both worked on copies


@pytest.mark.parametrize("lora", [False, True])
def test_resume_from_last_pt_continues_exactly(tmp_path, lora):
    "Interrupted mid-epoch and resumed from last.pt: the same weights as one uninterrupted run (dropout on)."
    def make():
        model = tiny_bert()
        if not lora: return model
        peft = pytest.importorskip("peft")
        return peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"],
                                                          task_type="SEQ_CLS"))
    cfg = tb.TrainConfig(epochs=3, lr=3e-3, accum_steps=2, clip_norm=1.0, schedule="warmup_cosine", warmup=0.2,
                         device="cpu", precision="fp32")
    full = make()
    tb.fit(full, *token_loaders(), loss_fn=None, config=cfg.replace(checkpoint_dir=str(tmp_path / "full")), live=False)
    cut = make()
    first = tb.fit(cut, *token_loaders(), loss_fn=None, config=cfg.replace(checkpoint_dir=str(tmp_path / "cut")),
                   callbacks=[StopAt(5)], live=False)
    assert first.stopped == "interrupted" and first.step == 5  # mid-epoch: 4 steps per epoch
    resumed = make()
    run = tb.fit(resumed, *token_loaders(), loss_fn=None, config=cfg.replace(checkpoint_dir=str(tmp_path / "cut")),
                 resume=tmp_path / "cut" / "last.pt", live=False)
    assert run.stopped == "completed" and run.step == 12
    assert same_state(resumed, full) and not same_state(make(), full)


def test_lora_trains_only_the_adapter(tmp_path):
    peft = pytest.importorskip("peft")
    model = peft.get_peft_model(tiny_bert(), peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"],
                                                             task_type="SEQ_CLS"))
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    lora_params = sum(p.numel() for n, p in trainable.items() if "lora_" in n)
    head_params = sum(p.numel() for n, p in trainable.items() if "modules_to_save" in n)
    assert lora_params == 2 * 2 * (4 * 32 + 32 * 4)  # 2 layers × (query, value) × (A: r×32, B: 32×r)
    assert head_params == 32 * 2 + 2 and len(trainable) == 10  # the classifier head's trainable copy
    assert model.get_nb_trainable_parameters()[0] == lora_params + head_params
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    start = {n: p.detach().clone() for n, p in trainable.items()}
    cfg = tb.TrainConfig(epochs=3, lr=3e-2, device="cpu", precision="fp32", checkpoint_dir=str(tmp_path))
    run = tb.fit(model, *token_loaders(n_train=512), loss_fn=None, metrics="accuracy", live=False, config=cfg)
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters() if not p.requires_grad)
    assert all(not torch.equal(p, start[n]) for n, p in model.named_parameters() if p.requires_grad)
    valid = run.metrics()["valid_loss"]
    assert valid.iloc[-1] < 0.5 * valid.iloc[0]  # the adapter alone learns the task
    ckpt = torch.load(tmp_path / "last.pt", weights_only=True)
    state = ckpt["model"]
    assert {n for n in state if "lora_" in n} and set(model.state_dict()) == set(state)  # what resume needs
    n_opt = sum(len(g["params"]) for g in ckpt["optimizer"]["param_groups"])
    assert n_opt == len(trainable)  # the optimizer holds the adapter only


# --- #25: a module instance, keras train metrics, keras runs seen by the session's observers ----------------

def four_features(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype("float32")
    return X, (X[:, 0] - X[:, 1] > 0).astype(int)


def test_a_module_instance_trains_as_a_copy_in_each_fit():
    "#25: TorchClassifier(module=nn.Linear(4, 2)), as skorch users write it, failed in forward()."
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score
    X, y = four_features()
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 2)
    before = {k: v.clone() for k, v in linear.state_dict().items()}
    clf = TorchClassifier(module=linear, epochs=30, lr=5e-2).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert clf.module_ is not linear and all(torch.equal(before[k], v) for k, v in linear.state_dict().items())
    again = clone(clf).fit(X, y)  # the same start, the same training
    assert np.allclose(again.predict_proba(X), clf.predict_proba(X))
    assert cross_val_score(TorchClassifier(module=linear, epochs=5), X, y, cv=3).shape == (3,)
    reg = TorchRegressor(module=torch.nn.Linear(4, 1), epochs=20, lr=5e-2).fit(X, X[:, 0] * 2)
    assert reg.predict(X).shape == (len(X),)


def test_what_a_module_argument_cannot_be_is_refused_before_training():
    X, y = four_features()
    with pytest.raises(ValueError, match=r"outputs of shape \(2, 3\) .* expected \(2, 2\): one output per class"):
        TorchClassifier(module=torch.nn.Linear(4, 3), epochs=1).fit(X, y)
    with pytest.raises(ValueError, match=r"outputs of shape \(2, 1\)"):
        TorchRegressor(module=torch.nn.Linear(4, 1), epochs=1).fit(X, np.c_[X[:, 0], X[:, 1]])
    with pytest.raises(ValueError, match="module_kwargs are for a factory"):
        TorchClassifier(module=torch.nn.Linear(4, 2), module_kwargs={"hidden": (8,)}).fit(X, y)
    with pytest.raises(TypeError, match="got the class dict"):
        TorchClassifier(module=dict).fit(X, y)
    with pytest.raises(TypeError, match="an nn.Module or a factory"):
        TorchClassifier(module="mlp").fit(X, y)
    with pytest.raises(TypeError, match=r"model\(xb\): one argument(.|\n)*Bilinear"):  # a two-input module
        TorchClassifier(module=torch.nn.Bilinear(4, 4, 2), epochs=1).fit(X, y)


def test_keras_records_each_train_metric_per_epoch():
    cb = tb.keras_callback(live=False)
    keras_fit(*learnable(), n_train=300, epochs=3, callbacks=[cb])
    h = cb.run.records
    assert list(h.series("epoch_accuracy", "train", index="epoch").index) == [0, 1, 2]
    assert h.last("epoch_accuracy", "train") == h.last("accuracy", "train") > 0.5  # Keras' own epoch value
    cb = tb.keras_callback(live=False, batches=True)
    keras_fit(*learnable(), n_train=300, epochs=2, callbacks=[cb])
    assert len(cb.run.records.series("epoch_accuracy", "train")) == 2  # beside the running per-batch values


def test_keras_run_metrics_show_train_accuracy():
    "#25: run.metrics() showed valid_accuracy but not train_accuracy, which the history holds."
    cb = tb.keras_callback(live=False)
    keras_fit(*learnable(), n_train=300, epochs=3, callbacks=[cb])
    assert {"train_loss", "train_accuracy", "valid_loss", "valid_accuracy"} <= set(cb.run.metrics().columns)


@contextlib.contextmanager
def as_the_tracker(factory):
    "`factory` as the session's tracker observer inside the block; the one before it back afterwards."
    from trainbook.events import add_session_observer, remove_session_observer, session_observers
    previous = session_observers.__globals__["_SESSION_OBSERVERS"].get("track")
    add_session_observer("track", factory)
    try: yield
    finally:
        if previous is None: remove_session_observer("track")
        else: add_session_observer("track", previous)


def test_keras_runs_are_seen_by_the_sessions_observers_like_fit_runs():
    "#24 item 8: a tb.track() store records keras_callback runs; here a stand-in observer takes its place."
    from trainbook.events import Callback
    seen, contexts = [], []

    class Observer(Callback):
        def before_fit(self, state): seen.append(("before_fit", state.config.epochs, state.model is not None))
        def after_epoch(self, state): seen.append(("after_epoch", state.epoch, round(state.valid["loss"], 6)))
        def after_fit(self, state): seen.append(("after_fit", state.run))

    def factory(context):
        contexts.append(context)
        return Observer()

    with as_the_tracker(factory):
        cb = tb.keras_callback(live=False)
        keras_fit(*learnable(), n_train=300, epochs=2, callbacks=[cb])
    # what a store records of it: Keras' own settings (its optimizer's lr), not TrainConfig's torch defaults
    assert contexts == [{"kind": "keras", "settings": cb.run.extra["settings"]}]
    from trainbook.tracking import params_of
    recorded = params_of(cb.run)
    assert recorded["epochs"] == "2" and recorded["optimizer"] == cb.run.model.optimizer.__class__.__name__
    assert float(recorded["lr"]) == pytest.approx(float(cb.run.model.optimizer.learning_rate))
    assert "weight_decay" not in recorded and "schedule" not in recorded, recorded
    assert "None" not in recorded.values(), recorded  # Keras 3 gives no batch size: none recorded (probe 26)
    valid = cb.run.records.series("loss", "valid", index="epoch")
    assert seen[0] == ("before_fit", 2, True)
    assert seen[1:3] == [("after_epoch", e, round(float(valid[e]), 6)) for e in (0, 1)]
    assert seen[3] == ("after_fit", cb.run) and len(seen) == 4


def test_a_keras_run_that_went_nan_is_named_nonfinite_not_early_stopping():
    "TerminateOnNaN's stop was reported as early stopping, with no finding, while run.metrics() showed an inf loss."
    X, y = learnable(200, 5)
    for callbacks in ([keras.callbacks.TerminateOnNaN()], []):  # stopped at the first inf, or left to run on
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(1e6), loss="mse")
        cb = tb.keras_callback(live=False)
        model.fit(X, y * 1e6, epochs=3, verbose=0, callbacks=[cb, *callbacks])
        run = cb.run
        assert run.stopped == "nonfinite", callbacks
        bad = [f for f in run.findings if f.kind == "nonfinite"]
        assert len(bad) == 1 and bad[0].severity == "error" and bad[0].data["split"] == "train" and bad[0].data["step"] >= 1
        assert "diverging" not in [f.kind for f in run.findings]
    assert run.step == 3 * 7  # left to run on: every epoch


def test_keras_weights_gone_nan_behind_finite_logged_losses_are_named_at_the_end():
    """Probe 67: on TensorFlow a NaN input made the weights NaN while relu kept the logged loss finite: the run said
    'completed' with no finding. Here the weights go NaN after the last logged loss, on any backend."""
    class Poison(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3 and self.epoch == 1:  # the last batch: after its loss was logged
                kernel = self.model.layers[0].kernel
                kernel.assign(keras.ops.full(kernel.shape, float("nan")))
        def on_epoch_begin(self, epoch, logs=None): self.epoch = epoch
    X, y = learnable(n=64)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = tb.keras_callback(live=False)
    history = model.fit(X, y, epochs=2, batch_size=16, verbose=0, callbacks=[cb, Poison()])
    assert np.isfinite(history.history["loss"]).all()  # no log showed it
    run = cb.run
    [bad] = [f for f in run.findings if f.kind == "nonfinite"]
    assert run.stopped == "nonfinite" and bad.severity == "error"
    assert (bad.data["names"], bad.data["step"], bad.data["epoch"]) == (["weights"], 8, 1)
    assert "weights were NaN or inf at the run's end" in bad.message and "tb.check_data" in bad.advice
    healthy = tb.keras_callback(live=False)
    keras_fit(X, y, n_train=48, epochs=2, callbacks=[healthy])
    assert healthy.run.stopped == "completed" and "nonfinite" not in [f.kind for f in healthy.run.findings]


def test_a_keras_stop_is_early_stopping_only_when_keras_early_stopping_made_it():
    class Enough(keras.callbacks.Callback):  # a user's own rule: not early stopping on a monitor
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1: self.model.stop_training = True
    cb = tb.keras_callback(live=False)
    keras_fit(*learnable(), n_train=300, epochs=10, callbacks=[Enough(), cb])
    assert cb.run.stopped == "interrupted" and len(cb.run.records.series("loss", "valid")) == 2
    cb = tb.keras_callback(live=False)
    keras_fit(*noise(), n_train=64, epochs=50, callbacks=[cb, keras.callbacks.EarlyStopping(monitor="val_loss", patience=1)])
    assert cb.run.stopped == "early_stopping"


def test_a_stop_a_trainbook_observer_asks_for_stops_keras_with_its_reason():
    "A pruner (or a Stop button) asks through `state.control`: Keras' fit stops too, and the run says why."
    from trainbook.events import Callback

    class Pruner(Callback):
        def after_epoch(self, state):
            if state.epoch == 1: state.control.request_stop("pruned")

    with as_the_tracker(lambda context: Pruner()):
        cb = tb.keras_callback(live=False)
        keras_fit(*learnable(), n_train=300, epochs=10, callbacks=[cb])
    assert cb.run.stopped == "pruned" and len(cb.run.records.series("loss", "valid")) == 2


def test_keras_callback_keeps_a_run_folder_that_run_load_reads(tmp_path):
    "As fit's: run.json at each epoch's end ('running') and at the end, the model as last.keras; a second run beside."
    seen = []
    class Peek(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None): seen.append(tb.Run.load(tmp_path).stopped)
    cb = tb.keras_callback(live=False, checkpoint_dir=tmp_path)
    model = keras_fit(*learnable(), n_train=300, epochs=3, callbacks=[cb, Peek()])
    run = cb.run
    assert seen == ["running"] * 3 and run.run_dir == tmp_path and run.last_path == tmp_path / "last.keras"
    loaded = tb.Run.load(tmp_path)
    assert loaded.records.rows() == run.records.rows() and loaded.stopped == run.stopped == "completed"
    assert [f.kind for f in loaded.findings] == [f.kind for f in run.findings] and loaded.kind == "keras"
    X = learnable()[0][:5]
    again = keras.models.load_model(tmp_path / "last.keras")
    np.testing.assert_allclose(again.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    with pytest.warns(UserWarning, match="already holds a run"):
        second = tb.keras_callback(live=False, checkpoint_dir=tmp_path)
        keras_fit(*learnable(), n_train=300, epochs=1, callbacks=[second])
    assert second.run.run_dir == tmp_path / "version_1" and tb.Run.load(tmp_path).step == run.step
    assert [f.kind for f in second.run.findings].count("run_dir_versioned") == 1  # said in the run, as by fit
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="checkpoint_dir=.*afile"):
        tb.keras_callback(checkpoint_dir=tmp_path / "afile" / "run")


def test_a_keras_metric_that_logs_a_vector_is_recorded_per_element():
    "Seen: F1Score(average=None) logs one value per class; float() of it raised inside model.fit."
    X, y = learnable()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((X.shape[1],)), keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "categorical_crossentropy", metrics=[keras.metrics.F1Score(average=None)])
    cb = tb.keras_callback(live=False)
    model.fit(X[:300], keras.utils.to_categorical(y[:300], 2), epochs=2, verbose=0, callbacks=[cb],
              validation_data=(X[300:], keras.utils.to_categorical(y[300:], 2)))
    assert {"valid_f1_score/0", "valid_f1_score/1", "train_f1_score/0"} <= set(cb.run.metrics().columns)
    assert len(cb.run.records.series("f1_score/1", "valid")) == 2 and cb.run.stopped == "completed"


@pytest.mark.parametrize("raised, stopped", [("RuntimeError('boom')", "failed"), ("KeyboardInterrupt()", "interrupted")])
def test_a_keras_fit_that_raises_ends_its_run_at_the_cells_end(tmp_path, raised, stopped):
    "Seen: Keras calls no callback when fit raises: the run stayed 'running', its folder locked for the session."
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        X, y = learnable()
        shell.user_ns.update(tb=tb, keras=keras, keras_fit=keras_fit, X=X, y=y, folder=str(tmp_path))
        shell.run_cell(f"""
class Raise(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1: raise {raised}
cb = tb.keras_callback(live=False, checkpoint_dir=folder)
keras_fit(X, y, n_train=300, epochs=4, callbacks=[cb, Raise()])
""", store_history=False)
        cb = shell.user_ns["cb"]
        assert cb.run is not None and cb.run.stopped == stopped and tb.last_run() is cb.run
        assert tb.Run.load(tmp_path).stopped == stopped and tb.checkpoint.folder_writer(tmp_path) is None
        assert (cb.run.error is not None) == (stopped == "failed")
        again = tb.keras_callback(live=False, checkpoint_dir=tmp_path, overwrite=True)  # the folder is free
        keras_fit(X, y, n_train=300, epochs=1, callbacks=[again])
        assert again.run.run_dir == tmp_path and again.run.stopped == "completed"
    finally: InteractiveShell.clear_instance()


def test_token_loader_names_text_fractional_ids_and_text_labels():
    "Probe 11: raw text and text labels gave raw torch errors; fractional ids were truncated in silence."
    with pytest.raises(TypeError, match=r"sequences\[0\] is text \('hello world'\): TokenLoader takes token ids"):
        tb.TokenLoader(["hello world", "foo"], [0, 1])
    with pytest.raises(ValueError, match=r"sequences\[0\] holds fractional token ids"):
        tb.TokenLoader([[1.5, 2.7], [3.0]], [0, 1])
    with pytest.raises(TypeError, match=r"labels must be one number per sequence .* got e.g. 'pos'"):
        tb.TokenLoader([[1, 2], [3]], ["pos", "neg"])
    batch = next(iter(tb.TokenLoader([[1.0, 2.0], [3.0]], [0, 1], batch_size=2)))  # whole floats are ids
    assert batch["input_ids"].dtype == torch.long and batch["input_ids"][0].tolist() == [1, 2]


def test_token_loader_takes_pandas_series_by_position_whatever_their_index():
    "Probe 24: a split's frame (index 1..3) gave a raw KeyError: 0 from the labels' error message."
    df = pd.DataFrame({"ids": [[1, 2, 3], [4, 5], [6], [7, 8]], "label": [0, 1, 1, 0]})
    valid = df.iloc[1:]  # the index holds no 0
    batch = next(iter(tb.TokenLoader(valid["ids"], labels=valid["label"], batch_size=4)))
    assert batch["labels"].tolist() == [1, 1, 0]
    assert batch["input_ids"].tolist() == [[4, 5], [6, 0], [7, 8]]
    shuffled = df.sample(frac=1, random_state=0)  # an index in another order: still paired by position
    batch = next(iter(tb.TokenLoader(shuffled["ids"], labels=shuffled["label"], batch_size=4)))
    assert [int(r[0]) for r in batch["input_ids"]] == [r[0] for r in shuffled["ids"]]
    assert batch["labels"].tolist() == shuffled["label"].tolist()
    text = valid.assign(label=["pos", "neg", "pos"])["label"]
    with pytest.raises(TypeError, match=r"labels must be one number per sequence .* got e.g. 'pos'"):
        tb.TokenLoader(valid["ids"], labels=text)


def test_keras_callback_refuses_a_live_that_fit_and_recorder_refuse():
    "Probe 46: keras_callback(live='yes') was taken (and showed nothing); fit and Recorder refuse it."
    with pytest.raises(ValueError, match="live must be 'auto', True or False.*got 'yes'"):
        tb.keras_callback(live="yes")


@pytest.mark.parametrize("kw", [{"batches": "yes"}, {"batches": "no"}, {"overwrite": "no"}, {"batches": 1}])
def test_keras_callback_refuses_flags_that_are_no_bool_by_name(kw):
    "Probe 91: keras_callback(batches='yes') was taken as truthy (and 'no' too), with no check as live= gets."
    name, value = next(iter(kw.items()))
    with pytest.raises(TypeError, match=f"{name} must be True or False, got {value!r}"):
        tb.keras_callback(live=False, **kw)
    assert tb.keras_callback(live=False, batches=np.bool_(True), overwrite=False).batches  # numpy's bool is one


def test_a_keras_run_stopped_inside_an_epoch_says_which_step_last_keras_holds(tmp_path):
    "Probe 46: interrupted at step 5, run.json said step 5 and last.keras, which held the model of step 3 (epoch 0's end)."
    class CtrlC(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == 5: raise KeyboardInterrupt
    cb = tb.keras_callback(live=False, checkpoint_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        keras_fit(*learnable(n=96), n_train=48, epochs=4, batch_size=16, callbacks=[cb, CtrlC()])
    run = tb.Run.load(tmp_path)
    assert (run.stopped, run.step, run.extra["last_saved"]) == ("interrupted", 5, {"step": 3, "epoch": 0})
    [said] = [f for f in run.findings if f.kind == "checkpoint_behind"]
    assert "last.keras holds the model at step 3 (the end of epoch 0), not at step 5" in said.message
    assert "initial_epoch=1" in said.advice
    saved = keras.models.load_model(tmp_path / "last.keras")
    assert int(keras.ops.convert_to_numpy(saved.optimizer.iterations)) == run.extra["last_saved"]["step"]
    done = tb.keras_callback(live=False)
    keras_fit(*learnable(n=96), n_train=48, epochs=1, callbacks=[done])
    assert "checkpoint_behind" not in [f.kind for f in done.run.findings]  # a run that ends at an epoch's end


def test_a_keras_callback_made_inside_the_first_fit_call_ends_its_run_when_that_fit_raises(tmp_path, monkeypatch):
    """Probe 46: `model.fit(..., callbacks=[tb.keras_callback(...)])` as a process's first fit runs Keras' unwrapped
    fit (Python looked it up before the callback wrapped it): a raise left run.json 'running', the folder locked."""
    from trainbook.checkpoint import folder_writer
    tb.keras_callback(live=False)  # Model.fit wrapped: its __wrapped__ is what such a first call runs
    unwrapped = keras.Model.fit.__wrapped__
    X, y = learnable(n=96)
    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1: raise ValueError("boom")
    def first_fit(folder):
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((X.shape[1],)), keras.layers.Dense(2)])
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        with pytest.raises(ValueError, match="boom") as e:
            unwrapped(m, X, y, epochs=3, verbose=0, callbacks=[tb.keras_callback(live=False, checkpoint_dir=folder), Boom()])
        return e.value
    shown = first_fit(tmp_path / "a")
    assert tb.Run.load(tmp_path / "a").stopped == "running"  # nothing told it yet
    monkeypatch.setattr(sys, "last_value", shown, raising=False)  # a notebook showed the error
    first_fit(tmp_path / "b")  # the next Keras fit ends the first run, with the error it raised
    a = tb.Run.load(tmp_path / "a")
    assert (a.stopped, a.error, folder_writer(tmp_path / "a")) == ("failed", "ValueError('boom')", None)
    monkeypatch.delattr(sys, "last_value")  # caught in a try: Python kept no error
    keras_fit(X, y, n_train=64, epochs=1, callbacks=[tb.keras_callback(live=False)])
    b = tb.Run.load(tmp_path / "b")
    assert b.stopped == "failed" and "the error was not seen" in b.error and folder_writer(tmp_path / "b") is None
    again = tb.keras_callback(live=False, checkpoint_dir=tmp_path / "b", overwrite=True)
    keras_fit(X, y, n_train=64, epochs=1, callbacks=[again])  # the folder is free; the run ended before
    assert again.run.run_dir == tmp_path / "b" and again.run.stopped == "completed"
