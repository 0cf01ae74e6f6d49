"fit_flax against a hand-written optax loop; PRNG streams; exact resume; non-finite losses; the torch loop's records."
import signal, subprocess, sys, textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
nnx = pytest.importorskip("flax.nnx")
import jax.numpy as jnp

import trainbook as tb
from trainbook.data import TensorLoader
from trainbook.events import Callback
from trainbook.jax_loop import KeyStreams, fit_flax, optax_schedule, read_flax_checkpoint, schedule_lr
from helpers import TIMING, CtrlCInSetUp, interrupt_at, interrupted


class MLP(nnx.Module):
    def __init__(self, din=4, dout=3, hidden=16, dropout=0.0, seed=0):
        rngs = nnx.Rngs(seed)
        self.l1, self.l2 = nnx.Linear(din, hidden, rngs=rngs), nnx.Linear(hidden, dout, rngs=rngs)
        self.drop = nnx.Dropout(dropout, rngs=rngs) if dropout else None

    def __call__(self, x):
        h = nnx.relu(self.l1(x))
        return self.l2(self.drop(h) if self.drop is not None else h)


def data(n=128, din=4, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, din)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int32) + (X[:, 1] > 0.5).astype(np.int32)
    return X, y % classes


def batches(X, y, bs):
    return [(X[i:i + bs], y[i:i + bs]) for i in range(0, len(X), bs)]


def ce(pred, yb):
    return optax.softmax_cross_entropy_with_integer_labels(pred, yb).mean()


def params_of(model):
    return {jax.tree_util.keystr(p): np.asarray(v) for p, v in
            jax.tree_util.tree_flatten_with_path(nnx.state(model, nnx.Param))[0]}


def assert_params_close(a, b, tol=1e-5):
    assert a.keys() == b.keys()
    for k in a: np.testing.assert_allclose(a[k], b[k], atol=tol, rtol=0, err_msg=k)


def reference(model, loader, cfg, clip=None):
    "A hand-written optax loop: AdamW with no decay on 1-d params, lr set each step from trainbook's schedule."
    graphdef, params = nnx.split(model, nnx.Param)
    mask = jax.tree.map(lambda p: p.ndim >= 2, params)
    total = cfg.epochs * len(loader)
    inner = optax.inject_hyperparams(optax.adamw)(learning_rate=cfg.lr, weight_decay=cfg.weight_decay, mask=mask)
    tx = optax.chain(optax.clip_by_global_norm(clip), inner) if clip else inner
    opt_state = tx.init(params)

    def loss(p, xb, yb): return ce(nnx.merge(graphdef, p)(xb), yb)

    grad, update = jax.jit(jax.grad(loss)), jax.jit(tx.update)
    step = 0
    for _ in range(cfg.epochs):
        for xb, yb in loader:
            hyper = opt_state[1].hyperparams if clip else opt_state.hyperparams
            hyper["learning_rate"] = jnp.asarray(schedule_lr(cfg, total, step))
            grads = grad(params, xb, yb)
            updates, opt_state = update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            step += 1
    return {jax.tree_util.keystr(p): np.asarray(v) for p, v in jax.tree_util.tree_flatten_with_path(params)[0]}


@pytest.mark.parametrize("schedule", ["constant", "warmup_cosine"])
def test_fit_flax_equals_a_hand_written_optax_loop(schedule):
    X, y = data()
    cfg = tb.TrainConfig(epochs=3, lr=1e-2, weight_decay=0.1, schedule=schedule, warmup=0.25, log_every=1)
    want = reference(MLP(), batches(X, y, 16), cfg)
    model = MLP()
    run = fit_flax(model, None, batches(X, y, 16), None, ce, cfg, live=False)
    assert run.stopped == "completed" and run.step == 24
    assert_params_close(params_of(model), want)
    # the lr logged at step s is the one that step used, as the torch loop logs it
    lrs = run.records.series("lr").to_numpy()
    np.testing.assert_allclose(lrs, [schedule_lr(cfg, 24, s) for s in range(24)], rtol=1e-6)


def test_accumulation_of_4_equals_a_batch_4_times_larger_with_clipping_and_a_short_last_window():
    X, y = data(n=120)  # 15 micro-batches of 8 per epoch: windows of 4, 4, 4 and a last one of 3
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, weight_decay=0.0, schedule="warmup_cosine", warmup=0.2,
                         clip_norm=0.3)
    want = reference(MLP(), batches(X, y, 32), cfg, clip=0.3)
    model = MLP()
    run = fit_flax(model, None, batches(X, y, 8), None, ce, cfg.replace(accum_steps=4), live=False)
    assert run.step == 8  # 4 optimizer steps per epoch
    assert_params_close(params_of(model), want)
    # clipping bites: the reference without it ends elsewhere
    unclipped = reference(MLP(), batches(X, y, 32), cfg.replace(clip_norm=None))
    assert max(np.abs(unclipped[k] - want[k]).max() for k in want) > 1e-3


def test_optax_schedules_are_trainbooks_schedules():
    for name in ("constant", "warmup_cosine", "one_cycle"):
        for warmup in (0, 0.1, 7):
            cfg = tb.TrainConfig(lr=3e-3, schedule=name, warmup=warmup)
            sched = optax_schedule(cfg, 100)
            got = np.array([float(sched(c)) for c in range(110)])
            want = np.array([cfg.lr * tb.optim.SCHEDULE_FNS[name](c, 100, tb.optim.warmup_steps(warmup, 100))
                             for c in range(110)])
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * cfg.lr, err_msg=f"{name} warmup={warmup}")


class Probe(nnx.Module):
    "Records the key its dropout layer is seeded with at each call (via a debug callback, inside jit)."
    def __init__(self, seen):
        rngs = nnx.Rngs(0)
        self.l, self.drop, self.seen = nnx.Linear(4, 3, rngs=rngs), nnx.Dropout(0.5, rngs=rngs), seen

    def __call__(self, x):
        jax.debug.callback(lambda k: self.seen["dropout"].append(np.asarray(k)),
                           jax.random.key_data(self.drop.rngs.key[...]))
        return self.drop(self.l(x))


def stream_run(seed, noise=0.1):
    X, y = data(n=64)
    seen = {"dropout": [], "augment": []}

    def augment(xb, key):
        jax.debug.callback(lambda k: seen["augment"].append(np.asarray(k)), jax.random.key_data(key))
        return xb + noise * jax.random.normal(key, xb.shape)

    model = Probe(seen)
    fit_flax(model, None, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=2, seed=seed), augment=augment,
             live=False)
    return seen, params_of(model)


def test_dropout_and_augmentation_draw_from_separate_reproducible_streams():
    seen, params = stream_run(seed=3)
    assert len(seen["dropout"]) == len(seen["augment"]) == 8  # one key of each per step
    streams = KeyStreams(3)
    for step, a in enumerate(seen["augment"]):  # the augment stream's key at each step, as KeyStreams defines it
        np.testing.assert_array_equal(a, jax.random.key_data(streams.key("augment", step)))
    assert not {d.tobytes() for d in seen["dropout"]} & {a.tobytes() for a in seen["augment"]}
    assert len({d.tobytes() for d in seen["dropout"]}) == 8  # a new dropout key every step
    again, params_again = stream_run(seed=3)  # the same seed: the same keys and the same weights
    assert all(np.array_equal(a, b) for a, b in zip(seen["dropout"], again["dropout"]))
    assert_params_close(params, params_again, tol=0)
    # another augmentation changes the inputs and the weights, never the dropout masks' keys
    louder, params_louder = stream_run(seed=3, noise=1.0)
    assert all(np.array_equal(a, b) for a, b in zip(seen["dropout"], louder["dropout"]))
    assert max(np.abs(params[k] - params_louder[k]).max() for k in params) > 1e-4
    other, _ = stream_run(seed=4)
    assert not np.array_equal(seen["dropout"][0], other["dropout"][0])


class StopAt(Callback):
    def __init__(self, step): self.step = step

    def after_step(self, state):
        if state.step == self.step: state.control.request_stop("interrupted")


class InterruptingLoader:
    "A loader (no state_dict) that raises KeyboardInterrupt before its `at`-th batch of the run, like a Ctrl-C."
    def __init__(self, inner, at=None): self.inner, self.at, self.drawn = inner, at, 0

    def __len__(self): return len(self.inner)

    def set_epoch(self, epoch): self.inner.set_epoch(epoch)

    def __iter__(self):
        for batch in self.inner:
            if self.at is not None and self.drawn == self.at: raise KeyboardInterrupt
            self.drawn += 1
            yield batch


def shuffled(n=96):
    X, y = data(n=n)
    return TensorLoader(torch.from_numpy(X), torch.from_numpy(y).long(), batch_size=8, shuffle=True, seed=1)


def test_resume_after_a_stop_mid_epoch_gives_the_uninterrupted_parameters(tmp_path):
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, accum_steps=2, schedule="warmup_cosine", warmup=0.2, seed=5)
    whole = MLP(dropout=0.3)
    done = fit_flax(whole, None, shuffled(), None, ce, cfg, live=False)
    assert done.step == 12
    # stopped by a callback after step 4 of 6 in the first epoch; the TensorLoader's state positions the resume
    part = MLP(dropout=0.3)
    cut = fit_flax(part, None, shuffled(), None, ce, cfg.replace(checkpoint_dir=str(tmp_path / "a")),
                   callbacks=[StopAt(4)], live=False)
    assert cut.stopped == "interrupted" and cut.step == 4
    saved = read_flax_checkpoint(cut.last_path)
    assert saved["position"]["batch_idx"] == 8 and set(saved["streams"]["keys"]) == {"dropout", "augment", "sample"}
    resumed = MLP(dropout=0.3, seed=9)  # other initial weights: the checkpoint must replace them all
    again = fit_flax(resumed, None, shuffled(), None, ce, cfg.replace(checkpoint_dir=str(tmp_path / "a")),
                     resume=cut.run_dir, live=False)
    assert again.step == 12 and again.stopped == "completed"
    assert_params_close(params_of(resumed), params_of(whole), tol=1e-6)
    np.testing.assert_allclose(again.records.series("loss").to_numpy(), done.records.series("loss").to_numpy(),
                               rtol=1e-6)


def test_resume_after_ctrl_c_inside_an_accumulation_window(tmp_path):
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, accum_steps=3, seed=2, checkpoint_dir=str(tmp_path / "b"))
    whole = MLP(dropout=0.3)
    fit_flax(whole, None, InterruptingLoader(shuffled()), None, ce, cfg.replace(checkpoint_dir=None), live=False)
    part = MLP(dropout=0.3)
    cut = interrupted(fit_flax, part, None, InterruptingLoader(shuffled(), at=16), None, ce, cfg,  # 2nd epoch
                      live=False)
    assert cut.stopped == "interrupted" and cut.step == 5  # 4 steps in epoch 0, one more, a window cut short
    assert read_flax_checkpoint(cut.last_path)["position"]["batch_idx"] == 3  # the cut window's start
    resumed = MLP(dropout=0.3)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    fit_flax(resumed, None, InterruptingLoader(shuffled()), None, ce, cfg, resume=cut.run_dir, live=False)
    assert_params_close(params_of(resumed), params_of(whole), tol=1e-6)


def test_a_ctrl_c_inside_a_steps_validation_is_redone_on_resume(tmp_path):
    "As fit: a Ctrl-C in step 6's eval_every validation; the resumed run validates step 6, as the whole run did."
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, eval_every=3, seed=2, checkpoint_dir=str(tmp_path / "b"))
    X, y = data(n=32)
    valid = [(X, y)]
    whole = MLP()
    full = fit_flax(whole, None, shuffled(), valid, ce, cfg.replace(checkpoint_dir=None), live=False)
    in_validation = interrupt_at(6, "before_validate")
    cut = interrupted(fit_flax, MLP(), None, shuffled(), valid, ce, cfg, callbacks=[in_validation], live=False)
    assert cut.stopped == "interrupted" and cut.step == 6
    resumed = MLP()
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    again = fit_flax(resumed, None, shuffled(), valid, ce, cfg, resume=cut.run_dir, live=False)
    valid_steps = lambda run: [r[0] for r in run.records.rows() if r[2:4] == ("valid", "loss")]
    assert 6 in valid_steps(again) and valid_steps(again) == valid_steps(full)
    assert_params_close(params_of(resumed), params_of(whole), tol=1e-6)


def test_a_planted_nan_becomes_a_nonfinite_finding_and_never_reaches_the_weights():
    X, y = data(n=64)
    X = X.copy()
    X[40, 1] = np.nan  # in the third batch of 16
    model = MLP()
    run = fit_flax(model, None, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=2), live=False)
    assert run.stopped == "nonfinite" and run.step == 2
    bad = [f for f in run.findings if f.kind == "nonfinite"]
    assert bad and bad[0].severity == "error" and "batch itself holds NaN" in bad[0].message
    assert (bad[0].data["step"], bad[0].data["batch_idx"]) == (3, 2)  # the failing step, as fit numbers it
    assert all(np.isfinite(v).all() for v in params_of(model).values())
    skipped = fit_flax(MLP(), None, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=2, on_nonfinite="skip"),
                       live=False)
    assert skipped.stopped == "completed" and skipped.skipped_steps == 2 and skipped.step == 6


class Events(Callback):
    def __init__(self): self.seen = []
    def before_fit(self, state): self.seen.append("before_fit")
    def after_step(self, state): self.seen.append("after_step")
    def after_validate(self, state): self.seen.append("after_validate")
    def after_epoch(self, state): self.seen.append("after_epoch")
    def after_fit(self, state): self.seen.append("after_fit")


def test_history_records_events_early_stopping_and_the_run_match_the_torch_loop(tmp_path):
    X, y = data(n=160)
    train, valid = batches(X[:96], y[:96], 16), batches(X[96:], y[96:], 32)
    events = Events()
    cfg = tb.TrainConfig(epochs=30, lr=5e-2, patience=2, log_every=3, checkpoint_dir=str(tmp_path))
    model = MLP(hidden=64)
    run = fit_flax(model, None, train, valid, ce, cfg, metrics="accuracy", callbacks=[events], live=False)
    names = set(run.records.names())
    for key in [("train", "loss"), ("train", "lr"), ("train", "grad_norm"), ("train", "grad_norm/l1.kernel"),
                ("train", "epoch_loss"), ("train", "samples_per_s"), ("valid", "loss"), ("valid", "accuracy")]:
        assert key in names, key
    assert run.stopped == "early_stopping" and run.epoch < 29  # a small net on 96 rows overfits
    assert events.seen[0] == "before_fit" and events.seen[-1] == "after_fit"
    assert events.seen.count("after_epoch") == run.epoch + 1 == events.seen.count("after_validate")
    table = run.metrics()
    assert {"train_loss", "valid_loss", "valid_accuracy", "train_lr"} <= set(table.columns)
    assert run.best_path is not None and run.best_path.exists() and (run.run_dir / "run.json").exists()
    best = read_flax_checkpoint(run.best_path)
    assert best["step"] == run.extra["best_step"]
    assert len(run.plot(as_dict=True)["data"]) > 0


def test_bf16_compute_keeps_float32_weights_and_learns():
    X, y = data()
    model = MLP()
    run = fit_flax(model, None, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=4, lr=1e-2, precision="bf16"),
                   live=False)
    assert run.extra["precision"] == "bf16"
    assert all(v.dtype == np.float32 for v in params_of(model).values())
    loss = run.records.series("loss").to_numpy()
    assert loss[-8:].mean() < 0.8 * loss[:8].mean()


def test_bad_input_is_refused_before_any_work():
    X, y = data(n=32)
    dl = batches(X, y, 16)
    with pytest.raises(TypeError, match="Flax NNX module"): fit_flax(torch.nn.Linear(4, 3), None, dl, None, ce)
    with pytest.raises(ValueError, match="fp16"): fit_flax(MLP(), None, dl, None, ce, tb.TrainConfig(precision="fp16"))
    with pytest.raises(ValueError, match="plateau"):
        fit_flax(MLP(), None, dl, None, ce, tb.TrainConfig(schedule="plateau"))
    with pytest.raises(ValueError, match="loss_fn"): fit_flax(MLP(), None, dl, None, "hinge")
    with pytest.raises(ValueError, match="dl_valid"):
        fit_flax(MLP(), None, dl, None, ce, tb.TrainConfig(monitor="valid_accuracy", mode="max"))
    with pytest.raises(TypeError, match="optimizer") as e: fit_flax(MLP(), 0.1, dl, None, ce)
    assert "looks like batches" not in str(e.value)
    # fit's order by habit: the batches land in `optimizer`, and the message says how to pass them
    with pytest.raises(TypeError, match=r"looks like batches.*fit_flax\(model, dl_train=\.\.\., dl_valid=\.\.\.\)"):
        fit_flax(MLP(), dl, dl)


def test_lr_find_flax_names_a_sweep_argument_out_of_range_before_any_step():
    "Seen: lr_find_flax(num_steps=0) said 'the loss was not finite from the start': a data problem that was not there."
    from trainbook.jax_loop import lr_find_flax
    X, y = data(n=32)
    dl = batches(X, y, 16)
    for kwargs, named in (({"num_steps": 0}, "num_steps must be an int >= 3"),
                          ({"num_steps": 2}, "num_steps must be an int >= 3"),
                          ({"start_lr": 0.0}, "start_lr must be a positive"),
                          ({"end_lr": float("inf")}, "end_lr must be a positive, finite"),
                          ({"start_lr": 1.0, "end_lr": 1e-3}, "start_lr < end_lr"),
                          ({"smooth": 1.0}, "smooth must be in")):
        with pytest.raises(ValueError, match=named):
            lr_find_flax(MLP(), dl, ce, **kwargs)
    with pytest.raises(ValueError, match="lr_find_flax: num_steps"):  # tb.lr_find hands a Flax model on
        tb.lr_find(MLP(), dl, ce, num_steps=0)


def test_a_given_optimizer_and_a_factory_are_used():
    X, y = data()
    sgd = fit_flax(MLP(), optax.sgd, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=1, lr=0.1), live=False)
    assert sgd.records.series("lr").iloc[-1] == pytest.approx(0.1)
    given = optax.inject_hyperparams(optax.sgd)(learning_rate=0.05)
    run = fit_flax(MLP(), given, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=1), live=False)
    assert run.records.series("lr").iloc[-1] == pytest.approx(0.05)


def test_overfit_batch_and_lr_find_take_a_flax_model_and_leave_it_untouched():
    X, y = data(n=32)
    model = MLP(hidden=32)
    before = params_of(model)
    report = tb.overfit_batch(model, (X, y), ce, steps=150)
    assert report.passed and report.final_loss < 0.1 * report.initial_loss and len(report.history) == 150
    broken = tb.overfit_batch(MLP(hidden=32), (X, y), lambda pred, yb: 0.0 * pred.sum() + 1.0, steps=20, lr=1e-2)
    assert not broken.passed and [f.kind for f in broken.findings] == ["not_decreasing"]
    found = tb.lr_find(model, batches(X, y, 8), ce, num_steps=40, end_lr=1.0)
    assert found.suggestion is not None and len(found.lrs) >= 3
    assert_params_close(params_of(model), before, tol=0)


def test_live_curves_and_progress_draw_a_flax_run():
    from trainbook.live import LiveCurves
    X, y = data(n=64)
    curves = LiveCurves()
    run = fit_flax(MLP(), None, batches(X, y, 16), batches(X, y, 32), ce, tb.TrainConfig(epochs=2, log_every=1),
                   callbacks=[curves], live=True)  # live=True: trainbook's progress bars and curves as well
    names = {t.name for t in curves.figure.data}
    assert {"train loss", "train grad_norm", "valid loss"} <= names  # a constant lr is a note, not a curve
    loss = next(t for t in curves.figure.data if t.name == "train loss")
    assert len(loss.y) == run.step == 8


def test_a_loss_that_takes_a_key_draws_from_the_sample_stream():
    X, y = data(n=64)
    seen = []

    def noisy_ce(pred, yb, key):  # e.g. a loss that samples (noise, negatives, timesteps)
        jax.debug.callback(lambda k: seen.append(np.asarray(k)), jax.random.key_data(key))
        return ce(pred + 0.01 * jax.random.normal(key, pred.shape), yb)

    fit_flax(MLP(), None, batches(X, y, 16), None, noisy_ce, tb.TrainConfig(epochs=1, seed=7), live=False)
    streams = KeyStreams(7)
    assert len(seen) == 4
    for step, k in enumerate(seen):
        np.testing.assert_array_equal(k, jax.random.key_data(streams.key("sample", step)))


def test_the_flax_tiny_batch_test_judges_as_the_torch_one():
    "Passes on a batch it can memorize; fails with the torch test's reasons (too small an lr, a NaN input)."
    X, y = data(16)
    model = MLP()
    before = jax.tree_util.tree_leaves(nnx.state(model, nnx.Param))
    good = tb.overfit_batch_flax(model, (X, y), steps=150, lr=1e-2)
    assert good.passed and good.final_loss < 0.1 * good.initial_loss and good.findings == []
    assert all(np.array_equal(a, b) for a, b in zip(before, jax.tree_util.tree_leaves(nnx.state(model, nnx.Param))))
    slow = tb.overfit_batch_flax(MLP(), (X, y), steps=20, lrs=(1e-7, 1e-6))
    assert not slow.passed and [f.kind for f in slow.findings] == ["not_decreasing"]
    assert "1e-07, 1e-06" in slow.findings[0].message and slow.history.series("loss").size == 20
    bad = X.copy()
    bad[0, 0] = np.nan
    nan = tb.overfit_batch_flax(MLP(), (bad, y), steps=5, lr=1e-2)
    assert not nan.passed and [f.kind for f in nan.findings] == ["nonfinite"]


def test_a_killed_flax_run_keeps_its_history_and_its_folder(tmp_path):
    """run.json is written at each epoch's end, as fit's is: a SIGKILLed run loads to its last finished epoch, and
    the next run given that folder takes a version folder instead of replacing its checkpoints."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import trainbook as tb
        from test_jax import MLP, batches, data
        class Die(tb.Callback):
            def after_epoch(self, state):
                if state.epoch == 1: os.kill(os.getpid(), signal.SIGKILL)
        X, y = data(96)
        tb.fit_flax(MLP(), dl_train=batches(X[:64], y[:64], 16), dl_valid=batches(X[64:], y[64:], 32),
                    live=False, callbacks=[Die()], config=tb.TrainConfig(epochs=5, checkpoint_dir={str(tmp_path)!r}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    killed = tb.Run.load(tmp_path)
    assert killed.stopped == "killed" and killed.kind == "flax" and killed.epoch == 1
    assert "resume=" in killed.findings[-1].advice and killed.findings[-1].kind == "killed"
    assert len(killed.records.series("loss", "valid")) == 2  # epochs 0 and 1: up to its last finished epoch
    assert killed.last_path == tmp_path / "last.msgpack" and killed.best_path == tmp_path / "best.msgpack"
    before = {name: (tmp_path / name).read_bytes() for name in ("last.msgpack", "best.msgpack")}
    X, y = data(96)
    with pytest.warns(UserWarning, match="already holds a run"):
        again = tb.fit_flax(MLP(), dl_train=batches(X[:64], y[:64], 16), dl_valid=batches(X[64:], y[64:], 32),
                            live=False, config=tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path)))
    assert again.run_dir == tmp_path / "version_1"
    assert {name: (tmp_path / name).read_bytes() for name in before} == before  # the killed run's, untouched
    loaded = tb.Run.load(again.run_dir)  # the run folder says what the returned Run says
    assert loaded.records.rows() == again.records.rows() and loaded.stopped == again.stopped == "completed"
    assert [(f.kind, f.message) for f in loaded.findings] == [(f.kind, f.message) for f in again.findings]
    assert loaded.config == again.config and loaded.last_path == again.run_dir / "last.msgpack"


def test_a_folder_with_flax_checkpoints_only_is_never_written_over(tmp_path):
    "A run killed inside its first epoch leaves last.msgpack (checkpoint_every) and no run.json: still a run's folder."
    (tmp_path / "last.msgpack").write_bytes(b"an earlier run's checkpoint")
    X, y = data(32)
    with pytest.warns(UserWarning, match=r"already holds a run \(last.msgpack\)"):
        run = tb.fit_flax(MLP(), dl_train=batches(X, y, 16), live=False,
                          config=tb.TrainConfig(epochs=1, monitor="train_loss", checkpoint_dir=str(tmp_path)))
    assert run.run_dir == tmp_path / "version_1"
    assert (tmp_path / "last.msgpack").read_bytes() == b"an earlier run's checkpoint"


class Reg(nnx.Module):
    "One output per row: (n, 1) predictions."
    def __init__(self, dout=1):
        self.l = nnx.Linear(4, dout, rngs=nnx.Rngs(0))

    def __call__(self, x): return self.l(x)


def test_a_pair_the_loss_would_broadcast_is_refused_at_the_first_batch_as_fit_refuses_it():
    "(n, 1) predictions against (n,) targets: mse and bce would train on every prediction against every target."
    X, _ = data(n=16)
    target = X[:, 0]
    model = Reg()
    before = params_of(model)
    with pytest.raises(tb.ShapeMismatch, match=r"prediction shape \(16, 1\) and target shape \(16,\) differ.*"
                                               r"broadcast them to \(16, 16\)") as e:
        fit_flax(model, dl_train=[(X, target)], loss_fn="mse", config=tb.TrainConfig(epochs=1), live=False)
    assert e.value.finding.kind == "shape_mismatch" and e.value.run.step == 0
    assert_params_close(params_of(model), before, tol=0)  # refused before any step
    # the torch loop's refusal, word for word
    with pytest.raises(tb.ShapeMismatch) as torch_e:
        tb.fit(torch.nn.Linear(4, 1), [(torch.from_numpy(X), torch.from_numpy(target))],
               loss_fn=torch.nn.functional.mse_loss, config=tb.TrainConfig(epochs=1), live=False)
    assert str(e.value) == str(torch_e.value)
    with pytest.raises(tb.ShapeMismatch, match=r"\(16, 1\).*\(16,\)"):
        tb.overfit_batch_flax(Reg(), (X, (target > 0).astype(np.float32)), loss_fn="bce", steps=5)
    with pytest.raises(tb.ShapeMismatch, match=r"prediction shape \(16, 3\) and target shape \(16,\)"):  # no JAX error
        fit_flax(Reg(dout=3), dl_train=[(X, target)], loss_fn="mse", config=tb.TrainConfig(epochs=1), live=False)
    # a loss of one's own: refused when it broadcasts, let through when it pairs the rows itself
    with pytest.raises(tb.ShapeMismatch, match="mine"):
        def mine(pred, yb): return ((pred - yb) ** 2).mean()
        fit_flax(Reg(), dl_train=[(X, target)], loss_fn=mine, config=tb.TrainConfig(epochs=1), live=False)
    squeezed = fit_flax(Reg(), dl_train=[(X, target)], loss_fn=lambda pred, yb: ((pred.squeeze(-1) - yb) ** 2).mean(),
                        config=tb.TrainConfig(epochs=1), live=False)
    assert squeezed.stopped == "completed"
    assert fit_flax(Reg(), dl_train=[(X, target[:, None])], loss_fn="mse", config=tb.TrainConfig(epochs=1),
                    live=False).stopped == "completed"


def test_labels_a_class_index_loss_cannot_take_are_named_at_the_first_batch():
    X, y = data(n=16, classes=4)
    labels = (y + 3).astype(np.int32)  # 3..6 for a model of 4 outputs
    model = MLP(dout=4)
    before = params_of(model)
    with pytest.raises(ValueError, match=rf"fit_flax: labels run from 3 to {labels.max()} but the model has 4 "
                                         r"outputs \(valid labels 0..3\); make the last layer") as e:
        fit_flax(model, dl_train=[(X, labels)], config=tb.TrainConfig(epochs=1), live=False)
    assert e.value.run.step == 0 and e.value.run.stopped == "failed"
    assert_params_close(params_of(model), before, tol=0)
    # the tiny-batch test: overfit_batch's finding, word for word, and no training (it would only give NaN)
    report = tb.overfit_batch_flax(MLP(dout=4), (X, labels), steps=5)
    torch_report = tb.overfit_batch(torch.nn.Linear(4, 4), (torch.from_numpy(X), torch.from_numpy(labels).long()),
                                    torch.nn.functional.cross_entropy, steps=5)
    assert not report.passed and [f.kind for f in report.findings] == ["label_out_of_range"]
    # the lr sweep too (probe 11: it swept NaN losses and found no lr, without saying why)
    with pytest.raises(ValueError, match=r"lr_find_flax: labels run from 3 to \d+ but the model has 4 outputs"):
        tb.lr_find(MLP(dout=4), [(X, labels)], "cross_entropy", num_steps=10)
    assert report.findings[0].message == torch_report.findings[0].message
    assert report.findings[0].data == torch_report.findings[0].data
    # float labels for cross-entropy: named, not optax's dtype error
    for run in (lambda: fit_flax(MLP(), dl_train=[(X, y.astype(np.float32))], config=tb.TrainConfig(epochs=1),
                                 live=False),
                lambda: tb.overfit_batch_flax(MLP(), (X, y.astype(np.float32)), steps=5)):
        with pytest.raises(TypeError, match=r"loss_fn 'cross_entropy' takes class indices, but yb is float32"):
            run()
    # labels with a trailing axis: named, not optax's "indices and arr must have the same number of dimensions"
    with pytest.raises(ValueError, match=r"'cross_entropy' takes one class index per prediction row: labels of "
                                         r"shape \(16,\) .* yb has shape \(16, 1\): .*y.reshape\(-1\)") as e:
        fit_flax(model, dl_train=[(X, y[:, None])], config=tb.TrainConfig(epochs=1), live=False)
    assert e.value.run.step == 0
    assert_params_close(params_of(model), before, tol=0)
    # inputs and targets of different lengths: named, not JAX's broadcasting error (for a loss of one's own too)
    for loss in ("cross_entropy", ce):
        with pytest.raises(ValueError, match=r"inputs give 16 predictions \(shape \(16, 4\)\) but yb holds 15 "
                                             r"targets"):
            fit_flax(model, dl_train=[(X, y[:15])], loss_fn=loss, config=tb.TrainConfig(epochs=1), live=False)
    assert_params_close(params_of(model), before, tol=0)


def test_validation_labels_past_the_outputs_are_named_at_dl_valids_first_batch_once(monkeypatch):
    "Not reported as a NaN validation loss (a `nonfinite` stop, accuracy 0); dl_valid's first batch is checked once."
    X, y = data(n=64, classes=2)
    with pytest.raises(ValueError, match=r"fit_flax: dl_valid's first batch: labels run from 5 to 6 but the model "
                                         r"has 2 outputs") as e:
        fit_flax(MLP(dout=2), dl_train=batches(X, y, 16), dl_valid=[(X[:16], y[:16] + 5)], metrics="accuracy",
                 config=tb.TrainConfig(epochs=2), live=False)
    assert not hasattr(e.value, "run")  # probe 67: refused in the set-up, before any step (it was at step 4)
    # good labels: validated at each epoch's end, each loader's first batch checked once a run
    import trainbook.jax_loop as jax_loop
    checked, real = [], jax_loop.check_first_batch
    monkeypatch.setattr(jax_loop, "check_first_batch", lambda *a, **k: checked.append(k["who"]) or real(*a, **k))
    run = fit_flax(MLP(dout=2), dl_train=batches(X, y, 16), dl_valid=[(X[:16], y[:16])],
                   config=tb.TrainConfig(epochs=3), live=False)
    assert run.stopped == "completed" and len(run.records.series("loss", "valid")) == 3
    assert checked == ["fit_flax: dl_valid's first batch", "fit_flax"]  # dl_valid's in the set-up


class Pair(nnx.Module):
    "Returns (logits, features), as models with an auxiliary output do."
    def __init__(self, din=4):
        self.mlp = MLP(din=din)

    def __call__(self, x): return self.mlp(x), x


def test_a_tuple_output_trains_on_its_first_element_as_fit_does():
    X, y = data(n=64)
    plain, pair = MLP(), Pair()
    cfg = tb.TrainConfig(epochs=2, lr=1e-2)
    a = fit_flax(plain, dl_train=batches(X, y, 16), dl_valid=batches(X, y, 32), metrics="accuracy", config=cfg,
                 live=False)
    b = fit_flax(pair, dl_train=batches(X, y, 16), dl_valid=batches(X, y, 32), metrics="accuracy", config=cfg,
                 live=False)
    assert b.stopped == "completed"
    assert_params_close(params_of(pair.mlp), params_of(plain), tol=1e-6)
    assert b.records.series("accuracy", "valid").tolist() == a.records.series("accuracy", "valid").tolist()
    scores = tb.evaluate_flax(pair, batches(X, y, 32), metrics="accuracy")
    assert scores == pytest.approx(tb.evaluate_flax(plain, batches(X, y, 32), metrics="accuracy"))
    # the whole output, when the loss asks for it
    got = []
    def whole(out, yb):
        got.append(type(out).__name__)
        return ce(out[0], yb)
    assert fit_flax(Pair(), dl_train=batches(X, y, 16), loss_fn=tb.whole_output(whole), config=cfg,
                    live=False).stopped == "completed"
    assert got and set(got) == {"tuple"}
    tiny = [tb.overfit_batch_flax(m, (X[:16], y[:16]), steps=20, lr=1e-2) for m in (Pair(), MLP())]
    assert tiny[0].final_loss == pytest.approx(tiny[1].final_loss)


def test_a_model_of_another_input_size_is_named_at_the_first_batch():
    X, y = data(n=16)
    model = MLP(din=4)
    before = params_of(model)
    with pytest.raises(TypeError, match=r"the model cannot take the first batch's inputs, xb float32 \(16, 3\): "
                                        r"the model's input size differs") as e:
        fit_flax(model, dl_train=[(X[:, :3], y)], config=tb.TrainConfig(epochs=1), live=False)
    assert "dot_general" in str(e.value.__cause__)  # JAX's own error kept as the cause
    assert e.value.run.step == 0
    assert_params_close(params_of(model), before, tol=0)
    with pytest.raises(TypeError, match=r"xb float32 \(16, 3\)"):
        tb.overfit_batch_flax(MLP(din=4), (X[:, :3], y), steps=5)


def test_evaluate_flax_scores_the_trained_model_or_its_run_as_validation_did():
    X, y = data(n=96)
    valid = batches(X[64:], y[64:], 16)
    model = MLP(dropout=0.5)
    run = fit_flax(model, dl_train=batches(X[:64], y[:64], 16), dl_valid=valid, metrics="accuracy",
                   config=tb.TrainConfig(epochs=2, lr=1e-2), live=False)
    scores = tb.evaluate_flax(model, valid, metrics="accuracy")
    assert isinstance(scores, tb.Evaluation) and set(scores) == {"loss", "accuracy"}
    assert scores["loss"] == pytest.approx(run.records.series("loss", "valid").iloc[-1], rel=1e-6)
    assert scores["accuracy"] == pytest.approx(run.records.series("accuracy", "valid").iloc[-1])
    assert tb.evaluate_flax(run, valid, "cross_entropy", ["accuracy"]) == scores  # eval mode: no dropout draws
    assert tb.evaluate_flax(model, [{"x": X[64:], "y": y[64:]}])["loss"] == pytest.approx(scores["loss"], rel=1e-5)
    with pytest.raises(TypeError, match="FlaxState holds the arrays"):
        tb.evaluate_flax(tb.FlaxState({}, {}, None), valid)
    with pytest.raises(TypeError, match="tb.evaluate"): tb.evaluate_flax(torch.nn.Linear(4, 3), valid)
    with pytest.raises(ValueError, match="evaluate_flax: labels run from 5"):
        tb.evaluate_flax(model, [(X, y + 5)])


def test_a_resume_from_best_msgpack_redoes_no_epoch_end_and_a_refused_one_claims_nothing(tmp_path):
    "As fit's best.pt: it held the position before its epoch's end, and a resume recorded that validation twice."
    X, y = data(n=64)
    valid = batches(X[:32], y[:32], 16)
    cfg = tb.TrainConfig(epochs=3, lr=1e-2, seed=3, checkpoint_dir=str(tmp_path / "a"))
    first = fit_flax(MLP(), None, shuffled(64), valid, ce, cfg, live=False)
    before = {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir() if p.is_file()}
    again = fit_flax(MLP(seed=4), None, shuffled(64), valid, ce, cfg.replace(epochs=5),
                     resume=tmp_path / "a" / "best.msgpack", live=False)
    assert again.run_dir == tmp_path / "a" / "version_1"  # the run it came from keeps its files
    assert {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir() if p.is_file()} == before
    epochs = [r[1] for r in again.records.rows() if r[2:4] == ("valid", "loss")]
    assert epochs == list(range(5)) and first.best_epoch is not None  # each epoch validated once
    wide = MLP(hidden=32)  # other shapes: refused before any folder is claimed or emptied
    with pytest.raises(Exception, match="parameters"):
        fit_flax(wide, None, shuffled(64), valid, ce, cfg.replace(epochs=5, checkpoint_dir=str(tmp_path / "b")),
                 resume=tmp_path / "a", overwrite=True, live=False)
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_max_steps_inside_an_epoch_ends_it_with_records_and_validation_and_resumes_once(tmp_path):
    "As fit: the partial epoch's records and a validation; a resume given more steps ends that epoch once."
    X, y = data(n=64)
    valid = batches(X[:32], y[:32], 16)
    cfg = lambda d, n: tb.TrainConfig(epochs=3, lr=1e-2, seed=3, max_steps=n, checkpoint_dir=str(tmp_path / d))
    cut = fit_flax(MLP(), None, shuffled(64), valid, ce, cfg("a", 10), live=False)  # 8 steps an epoch
    assert (cut.stopped, cut.step) == ("max_steps", 10)
    assert list(cut.metrics().index) == [0, 1] and cut.records.last_step("loss", "valid") == 10
    straight = fit_flax(MLP(), None, shuffled(64), valid, ce, cfg("b", 12), live=False)
    again = fit_flax(MLP(seed=4), None, shuffled(64), valid, ce, cfg("a", 12), resume=cut.run_dir, live=False)
    assert again.step == 12 and [r[:4] for r in again.records.rows()] == [r[:4] for r in straight.records.rows()]
    np.testing.assert_allclose(again.metrics().to_numpy(float), straight.metrics().to_numpy(float), rtol=1e-5)


def test_a_resume_at_max_steps_takes_no_step(tmp_path):
    "As fit: resume with the same max_steps took one more step."
    X, y = data(n=64)
    cfg = tb.TrainConfig(epochs=3, lr=1e-2, seed=3, max_steps=10, checkpoint_dir=str(tmp_path))
    model = MLP()
    run = fit_flax(model, None, shuffled(64), batches(X[:32], y[:32], 16), ce, cfg, live=False)
    before = params_of(model)
    with pytest.warns(UserWarning, match=r"already took 10 optimizer step\(s\)"):
        again = fit_flax(model, None, shuffled(64), batches(X[:32], y[:32], 16), ce, cfg, resume=tmp_path,
                         live=False)
    assert (again.stopped, again.step) == ("max_steps", 10)
    timeless = lambda r: [row for row in r.records.rows() if row[3] not in TIMING]
    assert timeless(again) == timeless(run)  # the epoch's end redone once, no step
    assert_params_close(params_of(model), before, tol=0)


def test_a_ctrl_c_in_before_epoch_resumes_a_dataloaders_shuffle_exactly(tmp_path):
    """As fit (F2): iter(DataLoader) draws its order from torch's generator before before_epoch; last.msgpack kept
    the RNG state after that draw, so the resumed epoch was shuffled in another order."""
    from torch.utils.data import DataLoader, TensorDataset
    X, y = data(n=64)
    dl = lambda: DataLoader(TensorDataset(torch.from_numpy(X), torch.from_numpy(y).long()), batch_size=8, shuffle=True)

    class CtrlC(Callback):
        def before_epoch(self, state):
            if state.epoch == 1: raise KeyboardInterrupt
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, seed=2, checkpoint_dir=str(tmp_path))
    whole = MLP()
    fit_flax(whole, None, dl(), None, ce, cfg.replace(checkpoint_dir=None), live=False)
    cut = interrupted(fit_flax, MLP(), None, dl(), None, ce, cfg, callbacks=[CtrlC()], live=False)
    assert cut.stopped == "interrupted" and cut.step == 8
    resumed = MLP()
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    fit_flax(resumed, None, dl(), None, ce, cfg, resume=cut.run_dir, live=False)
    assert_params_close(params_of(resumed), params_of(whole), tol=0)


def test_early_stopping_without_validation_says_it_follows_the_training_loss():
    X, y = data()
    run = fit_flax(MLP(), None, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=2, lr=1e-2, patience=1),
                   live=False)
    assert [f.data for f in run.findings if f.kind == "monitor_fallback"] == [
        {"monitor": "valid_loss", "follows": "train_loss"}]


def test_a_warmup_longer_than_the_run_is_a_finding_of_the_flax_run():
    X, y = data(n=64)
    cfg = tb.TrainConfig(epochs=2, schedule="warmup_cosine", warmup=20)  # 4 batches x 2 epochs = 8 steps
    run = fit_flax(MLP(), dl_train=batches(X, y, 16), loss_fn=ce, config=cfg, live=False)
    assert [f.data["total_steps"] for f in run.findings if f.kind == "warmup_past_run"] == [8]
    quiet = fit_flax(MLP(), dl_train=batches(X, y, 16), loss_fn=ce, config=cfg.replace(warmup=4), live=False)
    assert not [f for f in quiet.findings if f.kind == "warmup_past_run"]


def test_early_stopping_acts_at_an_evaluation_inside_the_epoch():
    "As in fit: with eval_every, patience counts evaluations inside the epoch and the run stops at one."
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(96, 4)).astype("float32"), rng.integers(0, 3, 96)  # noise: valid loss turns up
    Xv, yv = rng.normal(size=(32, 4)).astype("float32"), rng.integers(0, 3, 32)
    run = fit_flax(MLP(hidden=64), None, batches(X, y, 8), batches(Xv, yv, 32), ce,
                   tb.TrainConfig(epochs=20, lr=0.05, eval_every=1, patience=2), live=False)
    h = run.history[(run.history.split == "valid") & (run.history.name == "loss")]
    assert run.stopped == "early_stopping"
    assert h.step.iloc[-1] == run.step and run.step % 12 != 0  # stopped at the evaluation, inside an epoch



def test_resume_from_a_folder_whose_run_stopped_before_its_first_step_starts_anew(tmp_path):
    """As fit: a folder holding only a step-0 run.json (a Ctrl-C in a run's set-up) has nothing to resume; fit_flax
    said there was no Flax checkpoint there."""
    X, y = data(n=32)
    cfg = tb.TrainConfig(epochs=1, lr=1e-2, seed=0, checkpoint_dir=str(tmp_path), device="cpu")
    first = interrupted(tb.fit, CtrlCInSetUp(4, 3), [(torch.from_numpy(X), torch.from_numpy(y).long())],
                        loss_fn=torch.nn.CrossEntropyLoss(), config=cfg, live=False)
    assert (first.stopped, first.step, sorted(p.name for p in tmp_path.iterdir())) == ("interrupted", 0, ["run.json"])
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    with pytest.warns(UserWarning, match="nothing to resume: this run starts anew"):
        again = fit_flax(MLP(), None, batches(X, y, 8), None, ce, cfg, resume=tmp_path, live=False)
    assert again.stopped == "completed" and again.step == 4 and again.run_dir == tmp_path
    assert "nothing_to_resume" in [f.kind for f in again.findings] and not list(tmp_path.glob("version_*"))


def test_a_ready_made_transform_says_the_configs_lr_and_schedule_are_not_used():
    "Probe 46: given optax.sgd(0.1), no lr was recorded while run.json said lr=0.001, and no finding said why."
    X, y = data(n=32)
    run = fit_flax(MLP(), optax.sgd(0.1), batches(X, y, 16), None, ce, tb.TrainConfig(epochs=1), live=False)
    [said] = [f for f in run.findings if f.kind == "optimizer_given"]
    assert said.severity == "info" and "TrainConfig.lr=0.001, schedule='constant'" in said.message
    assert "optax.sgd, not optax.sgd(0.1)" in said.advice and len(run.records.series("lr")) == 0
    factory = fit_flax(MLP(), optax.sgd, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=1), live=False)
    assert "optimizer_given" not in [f.kind for f in factory.findings]  # the config's lr and schedule are used


def test_resume_from_a_run_stopped_before_its_first_checkpoint_says_so(tmp_path):
    "Probe 46: fit_flax, as fit and Recorder: a record of a run with steps and no checkpoint is named, not 'no checkpoint'."
    net = torch.nn.Linear(4, 3)
    with pytest.raises(KeyboardInterrupt):  # (in a plain script, as pytest is, the Ctrl-C goes on out of the block)
        with tb.Recorder(tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path)), live=False,
                         parts={"model": net, "optimizer": torch.optim.SGD(net.parameters(), lr=0.1)}) as rec:
            for _ in range(3): rec.step(1.0)
            raise KeyboardInterrupt  # a Ctrl-C in its first epoch: only run.json ('interrupted', step 3)
    tb.guard.forget_interrupt()  # fit_flax resumes from that folder in this process
    X, y = data(n=32)
    cfg = tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path))
    with pytest.raises(tb.CheckpointError, match=r"stopped \(interrupted\) at step 3, before its first checkpoint: "
                                                 r"it wrote no last.msgpack.*overwrite=True"):
        fit_flax(MLP(), None, batches(X, y, 16), None, ce, cfg, resume=tmp_path, live=False)


def _eval_every_case():
    "Probe 58's case, for fit_flax: 8 batches of 8 rows, 3 classes, 4 validation batches; a linear model."
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(64, 6)).astype("float32"), rng.normal(size=(32, 6)).astype("float32")
    w = rng.normal(size=(6, 3))
    y, yv = (X @ w).argmax(1), (Xv @ w).argmax(1)
    return batches(X, y, 8), batches(Xv, yv, 8)


def _rows(run): return [r for r in run.records.rows() if r[3] not in TIMING]


@pytest.mark.parametrize("cfg", [dict(epochs=1, lr=0.05, eval_every=2, max_steps=4),
                                 dict(epochs=3, lr=0.01, eval_every=2, patience=1, min_delta=0.5)])
def test_a_ctrl_c_in_an_after_validate_observer_is_redone_and_counted_on_resume(tmp_path, cfg):
    "Probe 58, as fit: the resume saw the validation's rows and skipped it (a best lost, early stopping late)."
    dl, dv = _eval_every_case()
    model = lambda: nnx.Linear(6, 3, rngs=nnx.Rngs(0))
    a = fit_flax(model(), None, dl, dv, ce, tb.TrainConfig(**cfg, checkpoint_dir=str(tmp_path / "a")), live=False)
    c, m = tb.TrainConfig(**cfg, checkpoint_dir=str(tmp_path / "b")), model()
    first = interrupted(fit_flax, m, None, dl, dv, ce, c, live=False, callbacks=[interrupt_at(4, "after_validate")])
    assert first.stopped == "interrupted"
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    b = fit_flax(m, None, dl, dv, ce, c, live=False, resume=first.run_dir)
    assert (b.stopped, b.step, b.best) == (a.stopped, a.step, a.best) and _rows(b) == _rows(a)


@pytest.mark.parametrize("eval_every", [3, 8, None])  # inside an epoch; at its last step; at its end
def test_a_resume_of_a_run_early_stopping_ended_trains_nothing_and_its_epochs_keep_their_records(tmp_path,
                                                                                                   eval_every):
    "Probe 58, as fit: fit_flax's resume of an early-stopped run trained on (it did not ask early stopping)."
    dl, dv = _eval_every_case()
    m = nnx.Linear(6, 3, rngs=nnx.Rngs(0))
    cfg = tb.TrainConfig(epochs=6, lr=0.01, eval_every=eval_every, patience=1, min_delta=0.5,
                         checkpoint_dir=str(tmp_path))
    run = fit_flax(m, None, dl, dv, ce, cfg, live=False)
    assert run.stopped == "early_stopping"
    epochs = run.step // 8 + (run.step % 8 > 0)
    assert len(run.history.query("name == 'epoch_loss'")) == epochs  # each epoch trained in has its records
    with pytest.warns(UserWarning, match="early stopping ended the checkpoint's run"):
        again = fit_flax(m, None, dl, dv, ce, cfg, live=False, resume=run.run_dir)
    assert (again.stopped, again.step) == ("early_stopping", run.step) and _rows(again) == _rows(run)
    assert again.epoch == run.epoch == tb.Run.load(run.run_dir).epoch  # probe 62: it read the next epoch's number


def test_a_train_monitor_counts_each_epochs_value_once_under_eval_every():
    "As fit: monitor='train_loss' with eval_every=2 counted the last epoch's loss again at each validation."
    X, y = data(n=64, din=6)
    run = fit_flax(nnx.Linear(6, 3, rngs=nnx.Rngs(0)), None, batches(X, y, 8), [(X[:16], y[:16])], ce,
                   tb.TrainConfig(epochs=10, lr=0.01, eval_every=2, patience=3, monitor="train_loss"), live=False)
    assert (run.stopped, run.step) == ("completed", 80)


@pytest.mark.parametrize("accum", [1, 2])
def test_an_injected_lr_schedule_trains_and_is_recorded_at_each_step(accum):
    "Probe 67: inject_hyperparams(...)(learning_rate=<schedule>) failed after its first update (two 'learning_rate's)."
    X, y = data(n=64)
    sched = optax.linear_schedule(1e-2, 1e-3, 8)
    opt = optax.inject_hyperparams(optax.adam)(learning_rate=sched)
    cfg = tb.TrainConfig(epochs=2, accum_steps=accum, clip_norm=1.0 if accum > 1 else None)  # a chain, MultiSteps
    run = fit_flax(MLP(), opt, batches(X, y, 16 // accum), None, ce, cfg, live=False)
    lrs = run.records.series("lr", "train").to_numpy()
    assert run.stopped == "completed" and len(lrs) == 8
    np.testing.assert_allclose(lrs, [float(sched(c)) for c in range(8)], rtol=1e-6)  # the lr each step used


def test_reduce_on_plateau_as_the_refusal_advises_follows_each_steps_train_loss():
    "Probe 67: schedule='plateau' advises optax.contrib.reduce_on_plateau, which failed at once (no value=)."
    X, y = data(n=128)
    with pytest.raises(ValueError, match=r"reduce_on_plateau.*train loss.*value=") as e:
        fit_flax(MLP(), None, batches(X, y, 16), None, ce, tb.TrainConfig(schedule="plateau"))
    opt = optax.chain(optax.adam(1e-2), optax.contrib.reduce_on_plateau(patience=2, rtol=0.0, atol=1e-12))

    class Plateau(Callback):  # its state after each step: the best value it has seen so far
        def __init__(self): self.best = []
        def after_step(self, state): self.best.append(float(state.train_state.opt_state[1].best_value))

    seen = Plateau()
    run = fit_flax(MLP(), opt, batches(X, y, 16), None, ce, tb.TrainConfig(epochs=2), callbacks=[seen],
                   live=False)
    losses = run.records.series("loss", "train").to_numpy()
    assert run.stopped == "completed" and len(losses) == 16
    np.testing.assert_allclose(seen.best, np.minimum.accumulate(losses), rtol=1e-6)  # value= the step's loss


class CountSteps(Callback):
    def __init__(self): self.n = 0
    def after_step(self, state): self.n += 1


def test_a_crashing_metric_and_a_dl_valid_the_loss_cannot_take_are_refused_before_any_step():
    "Probe 67 (DESIGN §6): fit_flax trained a whole epoch before its first validation failed."
    X, y = data(n=64)
    dl, ok = batches(X, y, 16), [(X[:16], y[:16])]

    class Crashing:  # a stateful metric: the trial call leaves its count alone
        def __init__(self): self.calls = 0
        def __call__(self, pred, target):
            self.calls += 1
            raise RuntimeError("boom")

    metric, steps = Crashing(), CountSteps()
    with pytest.raises(ValueError, match=r"fit_flax: metric 'bad' failed on dl_valid's first batch .*boom"):
        fit_flax(MLP(), None, dl, ok, ce, tb.TrainConfig(epochs=2), metrics={"bad": metric}, callbacks=[steps],
                 live=False)
    assert steps.n == 0 and metric.calls == 0
    for valid, kind, said in (([(X[:16], y[:16].astype(np.float32))], TypeError, "takes class indices"),
                              ([(X[:16, :3], y[:16])], TypeError, "cannot take the first batch's inputs")):
        with pytest.raises(kind, match=f"^fit_flax: dl_valid's first batch: .*{said}"):
            fit_flax(MLP(), None, dl, valid, "cross_entropy", tb.TrainConfig(epochs=2), callbacks=[steps],
                     live=False)
        assert steps.n == 0
    good = fit_flax(MLP(), None, dl, ok, ce, tb.TrainConfig(epochs=1), metrics="accuracy", live=False)
    assert good.stopped == "completed" and len(good.records.series("accuracy", "valid")) == 1


@pytest.mark.parametrize("accum", [1, 2])
def test_a_nonfinite_finding_names_the_batch_and_step_as_fit_names_them(accum):
    "Probe 67: fit_flax said 'step 3 (epoch 0, batch 4)' for the NaN in batch 3 (0-based), fit 'step 4 (... batch 3'."
    X, y = data(n=128, classes=2)
    X = X.copy()
    X[3 * 16 + 2, 1] = np.nan  # in batch 3 (0-based) of 16 rows
    cfg = tb.TrainConfig(epochs=1, accum_steps=accum, device="cpu")
    flax = fit_flax(nnx.Linear(4, 2, rngs=nnx.Rngs(0)), None, batches(X, y, 16), None, "cross_entropy", cfg,
                    live=False)
    torch_batches = [(torch.tensor(a), torch.tensor(b).long()) for a, b in batches(X, y, 16)]
    torch.manual_seed(0)
    fit = tb.fit(torch.nn.Linear(4, 2), torch_batches, None, loss_fn=torch.nn.functional.cross_entropy, config=cfg,
                 live=False)
    a, b = ([f for f in r.findings if f.kind == "nonfinite"][0] for r in (flax, fit))
    keys = ("step", "completed_steps", "epoch", "batch_idx", "window")
    assert {k: a.data[k] for k in keys} == {k: b.data[k] for k in keys}
    assert a.data["batch_idx"] == 3 and a.data["step"] == 4 // accum
    assert a.message.split(":")[0] == b.message.split(":")[0]  # "non-finite loss at step 4 (epoch 0, batch 3, ..."
    assert flax.step == fit.step


def two_blobs(n=512, seed=0):
    g = np.random.default_rng(seed)
    y = g.integers(0, 2, n + 256)
    X = (g.normal(size=(n + 256, 8)) + (2 * y[:, None] - 1) * np.r_[1.0, 0.5, np.zeros(6)]).astype(np.float32)
    return [(X[i:i + 16], y[i:i + 16]) for i in range(0, n, 16)], [(X[n:], y[n:])]


class Deep(nnx.Module):
    def __init__(self, rngs):
        self.l1, self.l2, self.l3 = (nnx.Linear(8, 16, rngs=rngs), nnx.Linear(16, 16, rngs=rngs),
                                     nnx.Linear(16, 2, rngs=rngs))

    def __call__(self, x): return self.l3(nnx.relu(self.l2(nnx.relu(self.l1(x)))))


def test_an_lr_100x_too_high_is_diverging_under_fit_flax_as_under_fit():
    """Probe 81, r_3: fit_flax logged no valid/loss_se, loss_sd or prior_loss (fit logs them), so a run whose valid
    loss never beat the constant predictor after a blow-up (SGD lr=5, momentum 0.9) got only warnings."""
    train, valid = two_blobs()
    cfg = tb.TrainConfig(epochs=12, lr=5.0, weight_decay=0.0, log_every=1, precision="fp32")
    run = fit_flax(Deep(nnx.Rngs(0)), lambda learning_rate: optax.sgd(learning_rate, momentum=0.9), train, valid,
                   "cross_entropy", cfg, live=False)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 2))
    as_torch = lambda batches: [(torch.tensor(a), torch.tensor(b)) for a, b in batches]
    torch_run = tb.fit(m, as_torch(train), as_torch(valid), loss_fn=torch.nn.CrossEntropyLoss(), config=cfg,
                       optimizer=torch.optim.SGD(m.parameters(), lr=5.0, momentum=0.9), live=False)
    valid_names = lambda r: {name for split, name in r.records.names() if split == "valid"}
    assert valid_names(run) == valid_names(torch_run) == {"loss", "loss_se", "loss_sd", "prior_loss"}
    # the same labels, the same code: the constant predictor's loss is fit's
    # (one float32 mean over the constant's rows under Flax, a closed form in float64 under torch: equal to 1e-6)
    np.testing.assert_allclose(run.records.series("prior_loss", "valid").values,
                               torch_run.records.series("prior_loss", "valid").values, rtol=1e-6)
    assert ("diverging", "error") in [(f.kind, f.severity) for f in run.findings]


def test_the_validation_statistics_are_the_torch_loops_for_each_kind_of_loss():
    "loss_se per row for a named loss, from the batches for your own; a per-position prior; none on a whole output."
    from trainbook.jax_parts import add_validation_batch, flax_loss, loss_on_torch
    X, y = data(n=96)
    model = MLP()
    fit_flax(model, None, batches(X[:64], y[:64], 16), None, ce, tb.TrainConfig(epochs=2, lr=1e-2), live=False)
    valid = batches(X[64:], y[64:], 8)
    named = tb.evaluate_flax(model, valid, "cross_entropy").stats
    rows = np.asarray(optax.softmax_cross_entropy_with_integer_labels(model(X[64:]), y[64:]))
    assert named["spread_from"] == "examples"
    assert named["loss_se"] == pytest.approx(rows.std(ddof=1) / np.sqrt(len(rows)), rel=1e-5)
    share = np.bincount(y[64:], minlength=3) / len(y[64:])
    entropy = -sum(p * np.log(p) for p in share if p > 0)
    assert named["prior_loss"] == pytest.approx(entropy, rel=1e-6)
    own = tb.evaluate_flax(model, valid, ce).stats  # one value a batch: the spread between the 4 batches
    means = np.array([rows[i:i + 8].mean() for i in range(0, 32, 8)])
    assert own["spread_from"] == "batches" and own["prior_loss"] == pytest.approx(entropy, rel=1e-6)
    assert own["loss_sd"] == pytest.approx(np.sqrt(8 * ((means - means.mean()) ** 2).sum() / 3), rel=1e-5)
    assert "prior_loss" not in tb.evaluate_flax(model, valid, tb.whole_output(ce)).stats
    # labels per position against (n, T, C) logits: JAX's classes are the last axis, torch's LossStats reads dim 1
    labels = np.tile(np.r_[0, 0, 0, 1, 2], (6, 1)).astype(np.int32)  # 6 rows of 5 positions, classes 3:1:1
    stats = tb.LossStats(loss_on_torch(flax_loss("cross_entropy")))
    logits = jnp.asarray(np.random.default_rng(0).normal(size=(6, 5, 3)), jnp.float32)
    add_validation_batch(stats, logits, labels, flax_loss("cross_entropy")(logits, labels), 6)
    found = stats.results()
    assert found["prior_loss"] == pytest.approx(-(0.6 * np.log(0.6) + 2 * 0.2 * np.log(0.2)), rel=1e-6)
    each = np.asarray(optax.softmax_cross_entropy_with_integer_labels(logits, labels)).mean(1)  # a row's mean
    assert found["loss_se"] == pytest.approx(each.std(ddof=1) / np.sqrt(6), rel=1e-5)


def test_a_flax_loss_of_your_own_gets_the_least_constant_loss_as_its_prior():
    """Probe 98: fit_flax with a focal or label-smoothed loss of one's own logged the loss at the class frequencies
    (0.154 where the best constant scores 0.066): torch has no gradient through numpy, so the search is JAX's."""
    g = np.random.default_rng(0)
    X = g.normal(size=(200, 3)).astype(np.float32)
    y = (np.arange(200) % 20 == 0).astype(np.int32)  # 95:5
    def focal(pred, labels):
        ce = optax.softmax_cross_entropy_with_integer_labels(pred, labels)
        return jnp.mean((1 - jnp.exp(-ce)) ** 2 * ce)
    prior = tb.evaluate_flax(nnx.Linear(3, 2, rngs=nnx.Rngs(0)), batches(X, y, 50), loss_fn=focal).stats["prior_loss"]
    grid = np.linspace(-8, 8, 16001)  # two classes: one score vector is its difference
    p1 = jnp.asarray(grid)[:, None]
    ce1, ce0 = jax.nn.softplus(-p1), jax.nn.softplus(p1)  # -log q1, -log q0 at the difference p1
    each = lambda ce: (1 - jnp.exp(-ce)) ** 2 * ce  # noqa: E731
    best = float(jnp.min(0.05 * each(ce1) + 0.95 * each(ce0)))
    assert prior == pytest.approx(best, rel=1e-3)
