"""How low `fit`'s step overhead could go: a flat loop with fit's per-step bookkeeping, and fit's own body with its
pieces swapped for the raw loop's lines, one at a time and all at once.

Run: .venv/bin/python bench/loop_floor.py [--rounds 41]      (~2 s a round)
The case is fit_overhead.py's 512 steps (a tiny MLP, 64 batches of 64 rows, 8 epochs) **without validation** (the
steps and the fixed cost only; `monitor="train_loss"`, `log_every` out of reach, so no gradient norms). Sides:
- "flat": the raw loop plus what any honest loop that records a run does each step: the data-wait clock around the
  batch, the loss read and its finite check, two history records (loss, lr), the epoch's loss and row sums;
- "fit body": `fit`'s loop written out here from `trainbook.loop`'s own pieces (set_up, _start_epoch, the windows,
  the Feeder, the scaler, _clip, the callbacks, step_optimizer, _log_step, _after_step, _end_epoch, _finish);
- "without X": that body with piece X replaced by the raw loop's line (or dropped, where the raw loop has none);
- "without all": every one of them at once; "fit": `tb.fit(live=False)` itself.
CPU time, interleaved (each side first in turn), the median of each round's ratio to that round's raw loop.
"""
import argparse, math, statistics, time, warnings

import torch

import fit_overhead as fo
import trainbook as tb
from trainbook import loop as L
from trainbook.core import History
from trainbook.events import Event
from trainbook.optim import step_optimizer

torch.set_num_threads(1)
warnings.filterwarnings("ignore")
TRAIN, _, EPOCHS = fo.case()
CONFIG = dict(epochs=EPOCHS, lr=1e-3, weight_decay=0.0, device="cpu", monitor="train_loss", log_every=10 ** 9)
PIECES = ("callbacks", "timed batches", "grad sync", "feeder", "scaler", "clip", "step_optimizer", "log_step",
          "after_step")


def raw(model):
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    for _ in range(EPOCHS):
        for xb, yb in TRAIN:
            loss = fo.LOSS(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss.item()


def flat(model):
    opt = torch.optim.AdamW(tb.param_groups(model, 0.0), lr=1e-3)
    history, step, clock = History(), 0, time.perf_counter
    for epoch in range(EPOCHS):
        wait, loss_sum, rows, batches = 0.0, 0.0, 0, iter(TRAIN)
        while True:
            t = clock()
            batch = next(batches, None)
            wait += clock() - t
            if batch is None: break
            xb, yb = batch
            loss = fo.LOSS(model(xb), yb)
            loss.backward()
            value = loss.item()
            if not math.isfinite(value): continue
            opt.step()
            opt.zero_grad(set_to_none=True)
            step, loss_sum, rows = step + 1, loss_sum + value, rows + len(yb)
            history.append(step, epoch, "train", "loss", value)
            history.append(step, epoch, "train", "lr", opt.param_groups[0]["lr"])


def body(model, without=()):
    "fit's loop (accumulation of 1, no DDP, fp32), from trainbook.loop's pieces; `without`: pieces replaced."
    s, state = L.set_up(model, TRAIN, None, fo.LOSS, tb.TrainConfig(**CONFIG), live=False)
    L._claim_and_resume(s, state, None)
    s.ctrl_c.install()
    cbs, opt, scaler, feed = s.callbacks, s.optimizer, s.scaler, s.feed
    if "callbacks" in without: cbs = lambda event, state: None
    for epoch in range(EPOCHS):
        batches = L._start_epoch(s, state, epoch)
        if "timed batches" in without: batches = batches.it
        for window in L._windows(s, state, batches):
            for batch in window:
                with (L._NO_SYNC if "grad sync" in without else L._grad_sync(s, window)):
                    if "feeder" in without: (xb, yb), loss = batch, fo.LOSS(s.net(batch[0]), batch[1])
                    else: _, loss, xb, yb = feed(batch, check_shapes=state.step == 0)
                    if "scaler" in without: loss.backward()
                    else: scaler.scale(loss / window.size if window.size > 1 else loss).backward()
                window.add(xb, yb, loss)
            state.loss, epoch_part = L._window_loss(s, window)
            if not math.isfinite(state.loss): raise FloatingPointError("a non-finite loss in the benchmark")
            layer_norms = None if "clip" in without else L._clip(s, state)
            cbs(Event.before_step, state)
            s.ctrl_c.hold(presses=2)
            skipped = bool(opt.step()) if "step_optimizer" in without else step_optimizer(opt, scaler)
            state.lr = opt.param_groups[0]["lr"]
            if not skipped and s.scheduler_interval == "step": s.scheduler.step()
            opt.zero_grad(set_to_none=True)
            if "log_step" in without: state.step, window.done = state.step + 1, True
            else: L._log_step(s, state, skipped, window, layer_norms, epoch_part)
            s.ctrl_c.hold()
            cbs(Event.after_step, state)
            s.ctrl_c.release()
            if "after_step" not in without and L._after_step(s, state, skipped): break
        L._end_epoch(s, state)
    L._finish(s, state, "completed")


def main(rounds: int):
    sides = {"raw loop": raw, "flat": flat, "fit body": body}
    sides.update({f"without {p}": (lambda p: lambda m: body(m, (p,)))(p) for p in PIECES})
    sides["without all"] = lambda m: body(m, PIECES)
    sides["fit"] = lambda m: tb.fit(m, TRAIN, None, loss_fn=fo.LOSS, config=tb.TrainConfig(**CONFIG), live=False)
    for fn in sides.values(): fn(fo.make())  # warm-up
    times = fo.interleave(sides, rounds)
    base = statistics.median(times["raw loop"])
    print(f"torch {torch.__version__}; 512 steps, no validation; CPU time, median of {rounds} rounds; raw loop "
          f"{base / 512 * 1e6:.1f} µs/step")
    for k, v in times.items():
        ratio = statistics.median(fo.paired(times, k))
        print(f"  {k:>26}: paired {ratio:5.3f}  (+{(ratio - 1) * base / 512 * 1e6:5.1f} µs/step)")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=41)
    main(p.parse_args().rounds)
