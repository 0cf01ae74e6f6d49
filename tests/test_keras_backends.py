"`keras_callback` on each Keras 3 backend (torch, JAX, TensorFlow), each in its own process: KERAS_BACKEND is read once."
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("keras")

# The child: trains a small net on random labels (memorized, never learned: planted overfitting) with
# validation_data, and prints what the Run holds as JSON. Exit 77 = the backend's library is not installed.
CHILD = r"""
import importlib, json, os, sys
backend = os.environ["KERAS_BACKEND"]
try: importlib.import_module({"torch": "torch", "jax": "jax", "tensorflow": "tensorflow"}[backend])
except ImportError as e:
    print(f"{backend} is not installed: {e}"); sys.exit(77)
import numpy as np, keras
import trainbook as tb
if backend == "torch":
    import torch; torch.set_num_threads(1)  # a net this small runs fastest on one thread
assert keras.backend.backend() == backend, keras.backend.backend()
rng = np.random.default_rng(0)
X, y = rng.normal(size=(96, 16)).astype("float32"), rng.integers(0, 2, 96)
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.Adam(1e-2),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
cb = tb.keras_callback(live=False)
model.fit(X[:64], y[:64], validation_data=(X[64:], y[64:]), epochs=20, batch_size=16, verbose=0, callbacks=[cb])
run = cb.run
is_last = tb.last_run() is run
table = run.metrics()
fig = run.plot()
# why Keras stopped, on this backend: a loss gone inf (TerminateOnNaN), Keras' EarlyStopping, a user's own rule
stops = {}
keras.utils.set_random_seed(0)
huge = keras.Sequential([keras.Input((16,)), keras.layers.Dense(1)])
huge.compile(optimizer=keras.optimizers.SGD(1e6), loss="mse")
nan_cb = tb.keras_callback(live=False)
huge.fit(X, y * 1e6, epochs=3, batch_size=16, verbose=0, callbacks=[nan_cb, keras.callbacks.TerminateOnNaN()])
stops["nan"] = [nan_cb.run.stopped, [f.kind for f in nan_cb.run.findings if f.severity == "error"]]
es_cb = tb.keras_callback(live=False)
model.fit(X[:64], y[:64], validation_data=(X[64:], y[64:]), epochs=30, batch_size=16, verbose=0,
          callbacks=[es_cb, keras.callbacks.EarlyStopping(monitor="val_loss", patience=1)])
stops["early"] = [es_cb.run.stopped, len(es_cb.run.metrics())]
class Enough(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None): self.model.stop_training = True
own_cb = tb.keras_callback(live=False)
model.fit(X[:64], y[:64], epochs=5, batch_size=16, verbose=0, callbacks=[own_cb, Enough()])
stops["own"] = [own_cb.run.stopped, len(own_cb.run.metrics())]
# a NaN input row: the weights go NaN; on TensorFlow relu maps NaN to 0, so the logged loss stays finite
keras.utils.set_random_seed(0)
poisoned = X.copy()
poisoned[10, 1] = np.nan
net = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
net.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
nan_in = tb.keras_callback(live=False)
net.fit(poisoned, y, epochs=2, batch_size=16, verbose=0, shuffle=False, callbacks=[nan_in])
stops["nan_input"] = [nan_in.run.stopped, [f.data["names"] for f in nan_in.run.findings if f.kind == "nonfinite"]]
# steps are optimizer steps: Keras calls on_train_batch_end once per 4 batches (steps_per_execution; the torch
# backend refuses it), and an optimizer with gradient_accumulation_steps=2 steps once per 2 batches
counts = {}
for spe, accumulate in ((4, None), (1, 2)):
    if backend == "torch" and spe > 1: continue
    keras.utils.set_random_seed(0)
    net = keras.Sequential([keras.Input((16,)), keras.layers.Dense(2)])
    net.compile(optimizer=keras.optimizers.Adam(1e-2, gradient_accumulation_steps=accumulate),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=spe)
    count_cb = tb.keras_callback(live=False, batches=True)
    net.fit(X, y, epochs=2, batch_size=16, verbose=0, callbacks=[count_cb])  # 6 batches an epoch, the last short
    counts[f"{spe}/{accumulate}"] = [count_cb.run.step, int(keras.ops.convert_to_numpy(net.optimizer.iterations)),
                                     list(map(int, count_cb.run.records.series("loss", "train").index))]
print(json.dumps({
    "backend": backend, "kind": run.kind, "stopped": run.stopped, "step": run.step, "last_run": is_last,
    "columns": list(table.columns), "rows": len(table),
    "valid_epochs": list(map(int, run.records.series("loss", "valid", index="epoch").index)),
    "findings": {f.kind: f.data for f in run.findings},
    "traces": sorted({t.name for t in fig.data}),
    "train_loss_last": float(table["train_loss"].iloc[-1]), "valid_loss_last": float(table["valid_loss"].iloc[-1]),
    "stops": stops, "counts": counts,
}, default=str))
"""


def run_child(backend: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
           "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300)
    if out.returncode == 77: pytest.skip(out.stdout.strip())
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ["torch", "jax", "tensorflow"])
def test_keras_callback_on_each_backend(backend):
    got = run_child(backend)
    assert got["backend"] == backend and got["kind"] == "keras" and got["stopped"] == "completed" and got["last_run"]
    assert got["step"] == 20 * 4  # 4 batches of 16 rows per epoch
    assert got["columns"][:2] == ["train_loss", "valid_loss"] and "valid_accuracy" in got["columns"]
    assert got["rows"] == 20 and got["valid_epochs"] == list(range(20))
    assert got["train_loss_last"] < 0.5 * got["valid_loss_last"]  # the memorized train set
    assert "overfitting" in got["findings"]  # planted: random labels
    assert int(got["findings"]["overfitting"]["best_epoch"]) < 19
    assert {"train loss", "valid loss"} <= set(got["traces"])
    # Keras' fit stopped for three reasons, each named (each was 'early_stopping', the NaN run with no finding)
    assert got["stops"]["nan"] == ["nonfinite", ["nonfinite"]]
    assert got["stops"]["early"][0] == "early_stopping" and got["stops"]["early"][1] < 30
    assert got["stops"]["own"] == ["interrupted", 1]
    # probe 67: on TensorFlow the weights went NaN behind a finite logged loss and the run said 'completed'
    named = [["weights"]] if backend == "tensorflow" else [["loss"]]  # read at the end, or logged NaN
    assert got["stops"]["nan_input"] == ["nonfinite", named]
    # seen: Run.step 6 for 20 optimizer steps under steps_per_execution=4 (one step counted per Keras call)
    if backend != "torch":  # a call per 4 batches: 4, 6 (the short last call), 10, 12
        assert got["counts"]["4/None"] == [12, 12, [4, 6, 10, 12]]
    assert got["counts"]["1/2"] == [6, 6, [1, 2, 3, 4, 5, 6]]  # a step per 2 batches
