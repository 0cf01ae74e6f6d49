"""fit_flax's jitted step: compile time, and steady steps/s against a hand-written jitted optax loop.

Run: .venv/bin/python bench/jax_steps.py [--epochs 6] [--rounds 5]
For two MLPs (overhead-bound 32→64→64→2 at batch 64, compute-bound 256→1024→1024→10 at batch 256), AdamW:
- compile: `jit(...).lower(...).compile()` of fit_flax's train step and of the raw loop's step (seconds);
- steady: per-step time of epochs 2.. (the first epoch holds the compile), wall and CPU time of the process
  (`time.process_time`, all threads: XLA runs the step on its own threads), min and median over the epochs of
  interleaved rounds, for
  the raw loop (numpy slicing of a shuffled order, one jitted step, one loss read per step as fit_flax does) and
  fit_flax (TensorLoader batches, live=False, no validation).
"""
import argparse, os, statistics, time, warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import torch

import jax, jax.numpy as jnp, optax
from flax import nnx

import trainbook as tb
from trainbook.events import Callback
from trainbook.jax_loop import FlaxState, KeyStreams, fit_flax, flax_loss, flax_steps, split_pure

torch.set_num_threads(1)
warnings.filterwarnings("ignore")


class MLP(nnx.Module):
    def __init__(self, widths, seed=0):
        rngs = nnx.Rngs(seed)
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(widths[:-1], widths[1:])])

    def __call__(self, x):
        for layer in self.layers[:-1]: x = nnx.relu(layer(x))
        return self.layers[-1](x)


def ce(pred, yb): return optax.softmax_cross_entropy_with_integer_labels(pred, yb).mean()


def data(widths, n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, widths[0])).astype(np.float32)
    return X, rng.integers(0, widths[-1], n).astype(np.int32)


def raw_step_fn(model):
    "The hand-written step: parameters as a plain dict (the fastest form to pass into jit), AdamW, one jit."
    graphdef, state = nnx.split(model, nnx.Param)
    params = nnx.to_pure_dict(state)
    tx = optax.adamw(1e-3, weight_decay=0.0)

    def forward(p, xb):
        s = jax.tree.map(lambda v: v, state)
        nnx.replace_by_pure_dict(s, p)
        return nnx.merge(graphdef, s)(xb)

    @jax.jit
    def step(params, opt_state, xb, yb):
        loss, grads = jax.value_and_grad(lambda p: ce(forward(p, xb), yb))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return step, params, tx.init(params)


def raw_loop(model, X, y, batch, epochs):
    "Per-epoch (wall, cpu) seconds and steps of the reference loop."
    step, params, opt_state = raw_step_fn(model)
    rng, per_epoch, times = np.random.default_rng(0), len(X) // batch, []
    for _ in range(epochs):
        w, c = time.perf_counter(), time.process_time()
        order = rng.permutation(len(X))
        for i in range(per_epoch):
            idx = order[i * batch:(i + 1) * batch]
            params, opt_state, loss = step(params, opt_state, X[idx], y[idx])
            float(loss)  # fit_flax reads the loss once per step: so does the reference
        times.append((time.perf_counter() - w, time.process_time() - c, per_epoch))
    return times


class EpochClock(Callback):
    def __init__(self): self.times = []
    def before_epoch(self, state): self.t = (time.perf_counter(), time.process_time())
    def after_epoch(self, state):
        self.times.append((time.perf_counter() - self.t[0], time.process_time() - self.t[1],
                           state.n_batches))


def flax_loop(model, X, y, batch, epochs):
    clock = EpochClock()
    dl = tb.TensorLoader(torch.from_numpy(X), torch.from_numpy(y).long(), batch_size=batch, shuffle=True,
                         drop_last=True)
    fit_flax(model, None, dl, None, "cross_entropy", tb.TrainConfig(epochs=epochs, weight_decay=0.0),
             callbacks=[clock], live=False)
    return clock.times


def compile_seconds(widths, batch):
    "Lowering + compiling fit_flax's train step and the raw loop's step, once each, in seconds."
    X, y = data(widths, batch)
    model = MLP(widths)
    graphdef, templates, (params, rngs, rest) = split_pure(model)
    tx = optax.adamw(1e-3)
    step = flax_steps(graphdef, graphdef, templates, flax_loss(ce), tx)[0](1)
    state = FlaxState(params, rest, tx.init(params))
    t = time.perf_counter()
    step.lower(state, rngs, X, y, dict(KeyStreams(0).base), 0, 0).compile()
    ours = time.perf_counter() - t
    raw, p, o = raw_step_fn(MLP(widths))
    t = time.perf_counter()
    raw.lower(p, o, X, y).compile()
    return ours, time.perf_counter() - t


def steady(times):
    "Per-step (wall µs, cpu µs) of each epoch after the first (the first holds the compile)."
    return [(w / n * 1e6, c / n * 1e6) for w, c, n in times[1:]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"jax {jax.__version__}, flax {nnx.__name__.split('.')[0]} {__import__('flax').__version__}, "
          f"optax {optax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    for widths, batch, n in (((32, 64, 64, 2), 64, 64 * 100), ((256, 1024, 1024, 10), 256, 256 * 20)):
        ours, raw = compile_seconds(widths, batch)
        X, y = data(widths, n)
        rows = {"raw": [], "fit_flax": []}
        for _ in range(args.rounds):  # interleaved: both sides see the same load
            rows["raw"] += steady(raw_loop(MLP(widths), X, y, batch, args.epochs))
            rows["fit_flax"] += steady(flax_loop(MLP(widths), X, y, batch, args.epochs))
        # on a shared machine other work only adds time: the minimum is the least disturbed epoch
        stat = {k: {"cpu_min": min(c for _, c in v), "cpu_med": statistics.median(c for _, c in v),
                    "wall_min": min(w for w, _ in v), "wall_med": statistics.median(w for w, _ in v)}
                for k, v in rows.items()}
        print(f"\nMLP {'-'.join(map(str, widths))}, batch {batch}, {n // batch} steps/epoch, "
              f"{len(rows['raw'])} steady epochs per side: compile fit_flax {ours:.2f} s, raw {raw:.2f} s")
        base = stat["raw"]
        for k, st in stat.items():
            print(f"  {k:9s} cpu µs/step min {st['cpu_min']:8.1f} median {st['cpu_med']:8.1f} | wall µs/step min "
                  f"{st['wall_min']:8.1f} ({1e6 / st['wall_min']:6.0f} steps/s) median {st['wall_med']:8.1f} | "
                  f"ratio to raw (cpu min) {st['cpu_min'] / base['cpu_min']:.2f}x")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")

if __name__ == "__main__":
    main()
