"Held-out findings on the frameworks: Keras runs that raise, Flax refusals, the estimators' warnings."
import os

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported anywhere: the backend is read once

import numpy as np
import pytest
import torch

import trainbook as tb


# --- Keras: a model.fit that raises, outside IPython ------------------------------------------------------

def _keras_model(keras):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


@pytest.mark.parametrize("raised, stopped",
                         [(RuntimeError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")])
def test_a_keras_fit_that_raises_in_a_script_ends_its_run(tmp_path, raised, stopped):
    "f5: outside IPython the run stayed 'running', its folder locked, tb.last_run() an older one, no err.run"
    keras = pytest.importorskip("keras")
    X = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    y = (X[:, 0] > 0).astype("int32")
    earlier = tb.keras_callback(live=False)
    _keras_model(keras).fit(X, y, epochs=1, verbose=0, callbacks=[earlier])

    class Raise(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1: raise raised

    cb = tb.keras_callback(live=False, checkpoint_dir=tmp_path)
    with pytest.raises(type(raised)) as info:
        _keras_model(keras).fit(X, y, epochs=3, verbose=0, callbacks=[cb, Raise()])
    assert cb.run is not None and cb.run.stopped == stopped and cb.run.epoch == 1
    assert info.value.run is cb.run and tb.last_run() is cb.run
    assert (cb.run.error is not None) == (stopped == "failed")
    assert tb.Run.load(tmp_path).stopped == stopped and tb.checkpoint.folder_writer(tmp_path) is None
    again = tb.keras_callback(live=False, checkpoint_dir=tmp_path, overwrite=True)  # the folder is free
    _keras_model(keras).fit(X, y, epochs=1, verbose=0, callbacks=[again])
    assert again.run.run_dir == tmp_path and again.run.stopped == "completed"


def test_a_keras_fit_refused_before_its_callbacks_begin_leaves_them_alone():
    "A fit Keras refuses (bad arguments) begins no run: nothing is ended, the error is Keras' own."
    keras = pytest.importorskip("keras")
    cb = tb.keras_callback(live=False)
    with pytest.raises(Exception) as info:
        _keras_model(keras).fit(np.zeros((8, 4), "float32"), np.zeros(5), verbose=0, callbacks=[cb])
    assert cb.run is None and not hasattr(info.value, "run")


# --- Flax: refused at the door ------------------------------------------------------------------------------

def _binary_loader(n=128, seed=0, shift=0):
    X = torch.randn(n, 8, generator=torch.Generator().manual_seed(seed))
    return tb.TensorLoader(X, (X[:, 0] + X[:, 1] > 0).long() + shift, batch_size=32)


def test_a_class_index_loss_on_one_output_is_refused_before_training():
    "f2: a 1-output model, cross_entropy and 0/1 labels went NaN at step 0, blaming the forward pass."
    pytest.importorskip("flax")
    from flax import nnx
    dl = _binary_loader()
    one_output = lambda: nnx.Linear(8, 1, rngs=nnx.Rngs(0))
    said = r"fit_flax: cross_entropy .* 1 output .* needs 2 or more outputs.*'bce'"
    with pytest.raises(ValueError, match=said):
        tb.fit_flax(one_output(), None, dl, None, "cross_entropy", tb.TrainConfig(epochs=1), live=False)
    report = tb.overfit_batch_flax(one_output(), next(iter(dl)), "cross_entropy", steps=5)
    assert not report.passed and [f.kind for f in report.findings] == ["label_out_of_range"]
    finding = report.findings[0]
    assert "needs 2 or more outputs" in finding.message and finding.data["n_outputs"] == 1
    # labels past two outputs keep their own message; two outputs on 0/1 labels train
    with pytest.raises(ValueError, match="labels run from 3 to 4 but the model has 2 outputs"):
        tb.fit_flax(nnx.Linear(8, 2, rngs=nnx.Rngs(0)), None, _binary_loader(shift=3), None, "cross_entropy",
                    tb.TrainConfig(epochs=1), live=False)
    run = tb.fit_flax(nnx.Linear(8, 2, rngs=nnx.Rngs(0)), None, dl, None, "cross_entropy",
                      tb.TrainConfig(epochs=1), live=False)
    assert run.stopped == "completed"


def test_a_flax_loss_returning_per_example_values_is_refused_by_name():
    "f7: JAX's 'Gradient only defined for scalar-output functions' named neither loss_fn nor the fix."
    optax = pytest.importorskip("optax")
    from flax import nnx

    def per_example(pred, yb): return optax.softmax_cross_entropy_with_integer_labels(pred, yb)

    said = r"loss_fn 'per_example' must return one value .* shape \(32,\).*\.mean\(\)"
    with pytest.raises(ValueError, match=said):
        tb.fit_flax(nnx.Linear(8, 2, rngs=nnx.Rngs(0)), None, _binary_loader(), None, per_example,
                    tb.TrainConfig(epochs=1), live=False)

    def reduced(pred, yb): return per_example(pred, yb).mean()
    run = tb.fit_flax(nnx.Linear(8, 2, rngs=nnx.Rngs(0)), None, _binary_loader(), None, reduced,
                      tb.TrainConfig(epochs=1), live=False)
    assert run.stopped == "completed"


def test_a_flax_model_without_parameters_is_refused_at_the_door():
    "f8: numpy's 'Need at least one array to stack.' from deep inside fit_flax."
    pytest.importorskip("flax")
    from flax import nnx

    class NoParams(nnx.Module):
        def __call__(self, x): return x[:, :2]

    dl = _binary_loader()
    with pytest.raises(ValueError, match=r"fit_flax: model \(NoParams\) has no nnx.Param to train"):
        tb.fit_flax(NoParams(), None, dl, None, "cross_entropy", tb.TrainConfig(epochs=1), live=False)
    with pytest.raises(ValueError, match=r"overfit_batch_flax: model \(NoParams\) has no nnx.Param"):
        tb.overfit_batch_flax(NoParams(), next(iter(dl)), "cross_entropy", steps=5)
    with pytest.raises(ValueError, match=r"lr_find_flax: model \(NoParams\) has no nnx.Param"):
        tb.lr_find_flax(NoParams(), dl, "cross_entropy", num_steps=5)


# --- the scikit-learn estimators: a run's findings as warnings --------------------------------------------

def test_the_estimators_warn_the_error_and_warning_findings_of_their_run():
    "f6: TorchRegressor on unscaled targets: R^2 = -27, its not_learning finding only in run_.findings."
    from sklearn.exceptions import ConvergenceWarning
    from trainbook.integrations import TrainingWarning
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    said = r"TorchRegressor.fit: not_learning: the training loss rose"
    with pytest.warns(TrainingWarning, match=said) as got:
        reg = tb.TorchRegressor(epochs=10).fit(X, X[:, 0] * 1e4 + 5e4)
    assert [f.kind for f in reg.run_.findings] == ["not_learning"]
    assert issubclass(TrainingWarning, ConvergenceWarning)  # filtered as scikit-learn users filter MLP's
    assert {w.filename for w in got if w.category is TrainingWarning} == {__file__}  # at the caller of fit
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(TrainingWarning, match=r"TorchClassifier.fit: diverging"):
        tb.TorchClassifier(epochs=5, lr=1e3).fit(X, y)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingWarning)  # a run without such findings says nothing
        clf = tb.TorchClassifier(epochs=5).fit(X, y)
    assert not [f for f in clf.run_.findings if f.severity in ("error", "warning")]


def test_float_labels_refused_by_the_models_own_loss_are_named_as_labels_not_inputs():
    "Probe 11: an HF-style model (loss_fn=None, token ids in, float labels) was told to make its inputs float."
    class Own(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.head = torch.nn.Embedding(16, 4), torch.nn.Linear(4, 2)

        def forward(self, input_ids, labels):
            logits = self.head(self.emb(input_ids).mean(1))
            return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}
    batches = [{"input_ids": torch.randint(0, 16, (8, 5)), "labels": torch.randint(0, 2, (8,)).float()}]
    with pytest.raises(RuntimeError, match=r"the model's own loss takes integer class labels, but the labels are "
                                           r"float32"):
        tb.fit(Own(), batches, loss_fn=None, live=False, config=tb.TrainConfig(epochs=1))


def test_a_keras_run_names_its_best_epoch():
    "Probe 11: run.best and run.best_epoch stayed None for Keras runs; fit's, the Recorder's and fit_flax's have them."
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 4)).astype("float32")
    y = (X[:, 0] > 0).astype("int64")
    cb = tb.keras_callback(live=False)
    _keras_model(keras).fit(X, y, epochs=3, validation_split=0.25, verbose=0, callbacks=[cb])
    valid = [(r[4], r[1]) for r in cb.run.records.rows() if r[2:4] == ("valid", "loss")]
    assert len(valid) == 3 and (cb.run.best, cb.run.best_epoch) == min(valid)


def test_an_index_past_an_embedding_or_past_the_outputs_is_named():
    "Probe 11: ids past the vocabulary, over-long inputs and labels past num_labels gave torch's bare IndexError."
    class Own(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.word, self.position = torch.nn.Embedding(16, 4), torch.nn.Embedding(6, 4)
            self.head = torch.nn.Linear(4, 2)

        def forward(self, input_ids, labels):
            h = self.word(input_ids) + self.position(torch.arange(input_ids.shape[1]))
            logits = self.head(h.mean(1))
            return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}

    def fit(ids, labels):
        return tb.fit(Own(), [{"input_ids": ids, "labels": labels}], loss_fn=None, live=False,
                      config=tb.TrainConfig(epochs=1))
    ok_labels = torch.tensor([0, 1])
    with pytest.raises(IndexError, match=r"the inputs \('input_ids'\) hold ids up to 20, but the model's "
                                         r"embedding tables have word: 16, position: 6 rows"):
        fit(torch.tensor([[1, 2, 20], [3, 4, 5]]), ok_labels)
    with pytest.raises(IndexError, match=r"the inputs are 8 positions long, but the model's position table has 6"):
        fit(torch.randint(0, 16, (2, 8)), ok_labels)
    with pytest.raises(IndexError, match=r"the labels run from 2 to 3, past the model's outputs"):
        fit(torch.randint(0, 16, (2, 4)), torch.tensor([2, 3]))
    assert fit(torch.randint(0, 16, (2, 4)), ok_labels).stopped == "completed"


def test_a_keras_run_records_its_learning_rate_without_a_callback_that_logs_it():
    "Probe 11: Keras 3 logs no lr: the lr series stayed empty unless ReduceLROnPlateau came first in callbacks=."
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(48, 4)).astype("float32"), rng.integers(0, 2, 48)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(1e-2, 3, 0.5)),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = tb.keras_callback(live=False)
    model.fit(X, y, epochs=2, batch_size=16, verbose=0, callbacks=[cb])  # 3 steps an epoch: halved each epoch
    assert cb.run.records.series("lr").tolist() == pytest.approx([5e-3, 2.5e-3])


def test_a_bert_fed_sequences_longer_than_its_positions_is_told_to_truncate():
    "Probe 39: BERT's position buffer clashes in size (a RuntimeError, not an IndexError): the cause was unnamed."
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=32, num_labels=2)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    dl = tb.TokenLoader([list(range(4, 60))] * 8, [0] * 8, batch_size=4)  # 56 tokens, 32 positions
    with pytest.raises(RuntimeError, match=r"the inputs are 56 positions long, but the model's position table "
                                           r"has 32 rows: truncate them to fit \(TokenLoader\(max_length"):
        tb.fit(model, dl, loss_fn=None, config=tb.TrainConfig(epochs=1, device="cpu"), live=False)
