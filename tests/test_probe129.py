"""Probe 129: a SIGTERM (`kill <pid>`, a scheduler's stop, a nohup job's end) in a plain script ends every kind of run
as a Ctrl-C does, not only `fit`'s: a Recorder's with block, fit_flax, the boosting runs, a Keras fit and a Trainer
died at once (the process -15 as now, but run.json absent or 'running', nothing said). Each run now ends
'interrupted' with its files, says its folder on stderr, and the process then ends as terminated (rc -15)."""
import json
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

import trainbook as tb
from trainbook import guard

HEAD = """
import os, signal, sys, numpy as np, torch
import trainbook as tb
torch.set_num_threads(1)
out, how = sys.argv[1], sys.argv[2]
if how == "int": signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's (a test runs in the background)
def maybe_term(step):
    if how == "term" and step == 5: os.kill(os.getpid(), signal.SIGTERM)  # a kill from outside, at step 5
    if how == "int" and step == 5: os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C
class Term(tb.Callback):
    def after_step(self, state): maybe_term(state.step)
    def after_fit(self, state):
        if how == "term_end": os.kill(os.getpid(), signal.SIGTERM)  # as the run ends: [after_fit]
g = torch.Generator().manual_seed(0)
X = torch.randn(64, 4, generator=g); y = (X[:, 0] > 0).long()
"""

BODIES = {
    "recorder": """
torch.manual_seed(0)
model = torch.nn.Linear(4, 2); opt = torch.optim.SGD(model.parameters(), lr=0.1)
cfg = tb.TrainConfig(epochs=2, checkpoint_dir=out, checkpoint_every=2)
with tb.Recorder(cfg, parts={"model": model, "optimizer": opt}, live=False,
                 resume=out if how == "resume" else None) as rec:
    done = rec.state.step
    for s in range(done, 16):
        idx = torch.randperm(64, generator=torch.Generator().manual_seed(s))[:8]
        loss = torch.nn.functional.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        rec.step(loss.item())
        maybe_term(rec.state.step)
        if (s + 1) % 8 == 0: rec.validate(loss.item(), epoch=s // 8)
torch.save(model.state_dict(), os.path.join(out, "final.pt"))
""",
    "flax": """
from flax import nnx
class M(nnx.Module):
    def __init__(self, rngs): self.l = nnx.Linear(4, 2, rngs=rngs)
    def __call__(self, x): return self.l(x)
model = M(nnx.Rngs(0))
run = tb.fit_flax(model, None, tb.TensorLoader(X, y, batch_size=8, shuffle=True), None, "cross_entropy",
                  tb.TrainConfig(epochs=2, checkpoint_dir=out, checkpoint_every=2, seed=0), callbacks=[Term()],
                  live=False, resume=out if how == "resume" else None)
np.save(os.path.join(out, "final.npy"), np.asarray(model.l.kernel.value))
""",
    "boosting": """
import pandas as pd
rng = np.random.default_rng(0)
df = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc")); df["y"] = (df.a > 0).astype(int)
fit = getattr(tb, "fit_" + sys.argv[3])
fit(df, "y", tb.make_splits(df, target="y", seed=0), num_rounds=40, early_stopping=None, live=False,
    checkpoint_dir=out, callbacks=[Term()])
open(os.path.join(out, "final.txt"), "w").write("went on")
""",
    "keras": """
import keras
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
m.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
class K(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None): maybe_term(batch + 1)
cb = tb.keras_callback(live=False, checkpoint_dir=out)  # made before model.fit (its errors seen: the lesson's way)
m.fit(X.numpy(), y.numpy(), epochs=2, batch_size=8, verbose=0, callbacks=[cb, K()])
open(os.path.join(out, "final.txt"), "w").write("went on")
""",
    "trainer": """
import transformers
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
torch.manual_seed(0)
model = BertForSequenceClassification(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                                 num_attention_heads=2, intermediate_size=16, num_labels=2))
ids = torch.randint(0, 50, (64, 8), generator=g)
ds = [{"input_ids": ids[i], "labels": int(ids[i, 0] > 25)} for i in range(64)]
class T(transformers.TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs): maybe_term(state.global_step)
args = TrainingArguments(output_dir=os.path.join(out, "hf"), num_train_epochs=1, per_device_train_batch_size=8,
                         report_to=[], save_strategy="no", logging_steps=1, use_cpu=True, disable_tqdm=True)
Trainer(model=model, args=args, train_dataset=ds, callbacks=[tb.trainer_callback(live=False, run_dir=out), T()]).train()
open(os.path.join(out, "final.txt"), "w").write("went on")
""",
}


def script(tmp_path, kind, folder, how, *more):
    path = tmp_path / f"run_{kind}.py"
    path.write_text(HEAD + textwrap.dedent(BODIES[kind]))
    return subprocess.run([sys.executable, str(path), str(tmp_path / folder), how, *more], capture_output=True,
                          text=True, timeout=600)


def ended_by_sigterm(done, folder, kind="interrupted"):
    "The process ended as terminated, the run's run.json says how it ended, stderr names its folder; no traceback."
    assert done.returncode == -signal.SIGTERM, done.stderr[-3000:]
    record = json.loads((folder / "run.json").read_text())  # before: no run.json at all
    assert record["stopped"] == kind
    assert f"a SIGTERM stopped the run, so the process ends as terminated" in done.stderr
    assert str(folder) in done.stderr and "Traceback" not in done.stderr
    assert not (folder / "final.txt").exists() and not (folder / "final.pt").exists()  # the script went no further
    return record


def test_a_recorders_with_block_ends_its_run_on_sigterm_and_resume_is_exact(tmp_path):
    cut = script(tmp_path, "recorder", "cut", "term")
    ended_by_sigterm(cut, tmp_path / "cut")
    assert f"holds last.pt: go on from it with resume={str(tmp_path / 'cut')!r}" in cut.stderr
    assert torch.load(tmp_path / "cut" / "last.pt", weights_only=False)["step"] == 4  # checkpoint_every=2
    assert script(tmp_path, "recorder", "cut", "resume").returncode == 0
    assert script(tmp_path, "recorder", "whole", "none").returncode == 0
    a, b = (torch.load(tmp_path / f / "final.pt") for f in ("cut", "whole"))
    assert all(torch.equal(a[k], b[k]) for k in a)  # resumed from step 4: the uninterrupted run's weights


def test_fit_flax_ends_its_run_on_sigterm_names_last_msgpack_and_resume_is_exact(tmp_path):
    pytest.importorskip("flax")
    np = pytest.importorskip("numpy")
    cut = script(tmp_path, "flax", "cut", "term")
    record = ended_by_sigterm(cut, tmp_path / "cut")
    assert record["step"] == 5
    # before: 'holds no last.pt' (a Flax run's checkpoint is last.msgpack), no resume= said
    assert f"holds last.msgpack: go on from it with resume={str(tmp_path / 'cut')!r}" in cut.stderr
    assert script(tmp_path, "flax", "cut", "resume").returncode == 0
    assert script(tmp_path, "flax", "whole", "none").returncode == 0
    assert np.array_equal(np.load(tmp_path / "cut" / "final.npy"), np.load(tmp_path / "whole" / "final.npy"))


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_a_boosting_run_ends_on_sigterm_with_its_model_kept(tmp_path, library):
    pytest.importorskip(library)
    cut = script(tmp_path, "boosting", "cut", "term", library)
    record = ended_by_sigterm(cut, tmp_path / "cut")
    assert 5 <= record["step"] < 40  # the round after the SIGTERM's ended it
    assert tb.BoostedModel.load(tmp_path / "cut").predict is not None  # the rounds' model, kept whole
    assert "holds the model of its rounds" in cut.stderr


def test_a_keras_fit_ends_its_run_on_sigterm(tmp_path):
    pytest.importorskip("keras")
    ended_by_sigterm(script(tmp_path, "keras", "cut", "term"), tmp_path / "cut")


def test_a_trainer_run_ends_on_sigterm(tmp_path):
    pytest.importorskip("transformers")
    ended_by_sigterm(script(tmp_path, "trainer", "cut", "term"), tmp_path / "cut")


def test_sigterm_is_taken_only_for_a_run_and_given_back_at_its_end(tmp_path):
    "In a plain script: taken inside a Recorder's block, at its default again after it; someone else's: left alone."
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with tb.Recorder(tb.TrainConfig(checkpoint_dir=str(tmp_path / "a")), live=False, validates=False) as rec:
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)  # taken for the run
            rec.step(1.0)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # given back: a later kill ends the script at once
        theirs = lambda signum, frame: None
        signal.signal(signal.SIGTERM, theirs)
        assert guard.take_sigterm() is False and signal.getsignal(signal.SIGTERM) is theirs
        guard.give_back_sigterm()
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally: signal.signal(signal.SIGTERM, before)


def test_in_a_notebook_sigterm_is_the_kernels_business(kernel):
    "In a Jupyter kernel nothing takes SIGTERM: the kernel's own handling (its restart, its shutdown) is unchanged."
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        assert guard.take_sigterm() is False
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally: signal.signal(signal.SIGTERM, before)


def test_a_sigterm_as_a_boosting_run_ends_still_ends_the_process_as_terminated(tmp_path):
    "A SIGTERM in the run's [after_fit]: run.json 'completed', then rc -15 (it went on as a bare KeyboardInterrupt, -2)."
    pytest.importorskip("xgboost")
    done = script(tmp_path, "boosting", "end", "term_end", "xgboost")
    assert done.returncode == -signal.SIGTERM, done.stderr[-3000:]
    assert json.loads((tmp_path / "end" / "run.json").read_text())["stopped"] == "completed"
    assert "Traceback" not in done.stderr and not (tmp_path / "end" / "final.txt").exists()


@pytest.mark.parametrize("kind", ["keras", "trainer"])
def test_a_ctrl_c_in_a_keras_or_trainer_script_names_the_runs_folder(tmp_path, kind):
    "A script's Ctrl-C went on out of model.fit / train() as a bare KeyboardInterrupt: now with fit's words."
    pytest.importorskip("keras" if kind == "keras" else "transformers")
    done = script(tmp_path, kind, "cut", "int")
    assert done.returncode == -signal.SIGINT, done.stderr[-3000:]  # the script stopped as on any Ctrl-C (130)
    assert json.loads((tmp_path / "cut" / "run.json").read_text())["stopped"] == "interrupted"
    assert "KeyboardInterrupt: a Ctrl-C stopped the run: the script stops here" in done.stderr
    assert f"its folder {str(tmp_path / 'cut')!r}" in done.stderr and done.stderr.count("Traceback") == 1


def test_in_a_notebook_a_keras_ctrl_c_goes_on_as_before_and_sigterm_is_left_alone(tmp_path, kernel):
    "In a kernel's cell: Keras' own KeyboardInterrupt goes on (no script's words), the run 'interrupted'; no SIGTERM taken."
    keras = pytest.importorskip("keras")
    from helpers import executing
    from datetime import datetime, timezone
    executing(kernel, "cell 1", datetime.now(timezone.utc))
    seen = []
    class Press(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(signal.getsignal(signal.SIGTERM))
            if batch == 2: raise KeyboardInterrupt
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    m.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = tb.keras_callback(live=False, checkpoint_dir=tmp_path / "k")
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            m.fit(torch.randn(32, 4).numpy(), torch.randint(0, 2, (32,)).numpy(), epochs=1, batch_size=4, verbose=0,
                  callbacks=[cb, Press()])
    finally: signal.signal(signal.SIGTERM, before)
    assert "a Ctrl-C stopped the run" not in str(caught.value) and caught.value.run is cb.run
    assert cb.run.stopped == "interrupted" and set(seen) == {signal.SIG_DFL}
