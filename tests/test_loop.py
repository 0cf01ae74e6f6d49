"The loop's contract: equivalence to a hand-written loop, accumulation, exact resume, precision, stops."
import copy, math, threading

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainbook as tb
from trainbook.events import Callback
from helpers import CtrlCInSetUp, blobs, history_without_timing, interrupt_at, interrupted, max_diff, mlp, same_weights

CE = nn.functional.cross_entropy


def test_equivalent_to_a_hand_written_loop():
    "fp32, same seed and batches, no accumulation or clipping: fit's weights equal a plain PyTorch loop's."
    X, y = blobs()
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, len(X), 32)]
    ours, ref = mlp(), mlp()
    run = tb.fit(ours, batches, loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=3, lr=1e-2, weight_decay=0.0, precision="fp32", device="cpu"))
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(3):
        for xb, yb in batches:
            loss = CE(ref(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
    assert run.stopped == "completed" and run.step == 3 * len(batches)
    assert max_diff(ours, ref) < 1e-6


def test_weight_decay_spares_biases_and_norms():
    "With decay on, fit equals a hand-written loop with the two param groups (no decay on bias/norm)."
    X, y = blobs()
    batches = [(X[i:i + 64], y[i:i + 64]) for i in range(0, len(X), 64)]
    ours, ref = mlp(), mlp()
    tb.fit(ours, batches, loss_fn=CE, live=False, config=tb.TrainConfig(epochs=2, lr=1e-2, weight_decay=0.1, device="cpu"))
    opt = torch.optim.AdamW([{"params": [ref[0].weight, ref[3].weight], "weight_decay": 0.1},
                             {"params": [ref[0].bias, ref[3].bias], "weight_decay": 0.0}], lr=1e-2)
    for _ in range(2):
        for xb, yb in batches:
            CE(ref(xb), yb).backward(); opt.step(); opt.zero_grad()
    assert max_diff(ours, ref) < 1e-6


@pytest.mark.parametrize("n_rows", [256, 224])  # 224 rows of 32 = 7 micro-batches: a partial last window of 1
def test_accumulation_matches_one_big_batch(n_rows):
    "k micro-batches of b rows step like one batch of k*b rows, the epoch's last partial window included."
    X, y = blobs(n=n_rows)
    small = [(X[i:i + 32], y[i:i + 32]) for i in range(0, n_rows, 32)]
    big = [(X[i:i + 64], y[i:i + 64]) for i in range(0, n_rows, 64)]
    a, b = mlp(), mlp()
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, device="cpu")
    ra = tb.fit(a, small, loss_fn=CE, live=False, config=cfg.replace(accum_steps=2))
    rb = tb.fit(b, big, loss_fn=CE, live=False, config=cfg)
    assert ra.step == rb.step == 2 * math.ceil(n_rows / 64)
    assert max_diff(a, b) < 1e-5


def test_partial_window_is_weighted_like_its_own_batch():
    "A last window of one micro-batch in a window of 3 is divided by 1, not 3 (one step on that batch alone)."
    X, y = blobs(n=128)
    micro = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]  # 4 micro-batches, accum 3: windows of 3 and 1
    merged = [(X[:96], y[:96]), (X[96:], y[96:])]
    a, b = mlp(), mlp()
    cfg = tb.TrainConfig(epochs=1, lr=1e-2, device="cpu")
    tb.fit(a, micro, loss_fn=CE, live=False, config=cfg.replace(accum_steps=3))
    tb.fit(b, merged, loss_fn=CE, live=False, config=cfg)
    assert max_diff(a, b) < 1e-5


class InterruptAfterEpoch(Callback):
    "Raises KeyboardInterrupt once epoch `epoch` has fully ended (validation and last.pt done)."
    def __init__(self, epoch): self.epoch = epoch
    def after_epoch(self, state):
        if state.epoch == self.epoch: raise KeyboardInterrupt


class CrashAt(Callback):
    def __init__(self, step): self.step = step
    def after_step(self, state):
        if state.step == self.step: raise RuntimeError("simulated crash")


def interrupt_in_forward(model, n):
    "Ctrl-C inside an accumulation window: a forward pre-hook raising KeyboardInterrupt on the n-th training forward."
    calls = {"n": 0}
    def hook(module, args):
        if module.training:
            calls["n"] += 1
            if calls["n"] == n: raise KeyboardInterrupt
    return model[0].register_forward_pre_hook(hook)


class Buckets:
    "A batch sampler of its own making: shuffled buckets of `size` rows, drawn from the generator it holds."
    def __init__(self, n, size, generator): self.n, self.size, self.generator = n, size, generator
    def __len__(self): return -(-self.n // self.size)
    def __iter__(self):
        order = torch.randperm(self.n, generator=self.generator).tolist()
        return iter([order[i:i + self.size] for i in range(0, self.n, self.size)])


def _train_setup(loader_kind, dropout=0.2):
    X, y = blobs(n=200)
    if loader_kind == "tensor":
        dl = tb.TensorLoader(X, y, batch_size=16, shuffle=True, seed=3)
    elif loader_kind == "batch_sampler":  # a bucketing batch sampler holding its own generator
        dl = DataLoader(TensorDataset(X, y), batch_sampler=Buckets(len(X), 16, torch.Generator().manual_seed(7)))
    elif loader_kind == "generator":  # a DataLoader with a generator of its own (torch's advice for reproducibility)
        dl = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(7))
    else:  # a shuffling DataLoader draws its order from torch's global generator
        dl = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
    dl_valid = tb.TensorLoader(X[:64], y[:64], batch_size=32)
    return dl, dl_valid, mlp(dropout=dropout)


@pytest.mark.parametrize("loader_kind", ["tensor", "dataloader", "generator", "batch_sampler"])
@pytest.mark.parametrize("where", ["boundary_mid_epoch", "inside_window", "epoch_end", "checkpoint_every"])
def test_resume_is_exact(tmp_path, loader_kind, where):
    "Interrupted at several points (mid-epoch included) and resumed: identical final weights and history."
    cfg = tb.TrainConfig(epochs=3, lr=5e-3, accum_steps=2, schedule="warmup_cosine", warmup=0.2, clip_norm=1.0,
                         device="cpu", patience=5, log_every=3)
    dl, dl_valid, model = _train_setup(loader_kind)
    full = tb.fit(model, dl, dl_valid, loss_fn=CE, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "full")),
                  metrics="accuracy")

    dl, dl_valid, model2 = _train_setup(loader_kind)
    run_dir = tmp_path / "cut"
    cut_cfg = cfg.replace(checkpoint_dir=str(run_dir))
    if where == "boundary_mid_epoch":  # 13 batches per epoch, windows of 2: step 9 is in epoch 1
        first = interrupted(tb.fit, model2, dl, dl_valid, loss_fn=CE, live=False, config=cut_cfg,
                            callbacks=[interrupt_at(9)], metrics="accuracy")
    elif where == "inside_window":  # Ctrl-C during the second micro-batch of a window, mid-epoch
        handle = interrupt_in_forward(model2, 18)
        first = interrupted(tb.fit, model2, dl, dl_valid, loss_fn=CE, live=False, config=cut_cfg, metrics="accuracy")
        handle.remove()
    elif where == "epoch_end":
        first = interrupted(tb.fit, model2, dl, dl_valid, loss_fn=CE, live=False, config=cut_cfg,
                            callbacks=[InterruptAfterEpoch(0)], metrics="accuracy")
    else:  # a mid-epoch last.pt from checkpoint_every, then the process crashes (no clean stop at all)
        cut_cfg = cut_cfg.replace(checkpoint_every=4)
        with pytest.raises(RuntimeError, match="crash"):
            tb.fit(model2, dl, dl_valid, loss_fn=CE, live=False, config=cut_cfg, callbacks=[CrashAt(10)], metrics="accuracy")
        assert torch.load(run_dir / "last.pt", weights_only=True)["step"] == 8
        first = None
    if first is not None: assert first.stopped == "interrupted"

    dl, dl_valid, model3 = _train_setup(loader_kind)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(model3, dl, dl_valid, loss_fn=CE, live=False, config=cut_cfg, resume=run_dir / "last.pt", metrics="accuracy")
    assert resumed.stopped == "completed"
    assert same_weights(model3, model)
    assert history_without_timing(resumed) == history_without_timing(full)


def test_resume_keeps_early_stopping_state(tmp_path):
    X, y = blobs(n=128)
    dl = tb.TensorLoader(X, y, batch_size=32, shuffle=True)
    cfg = tb.TrainConfig(epochs=4, lr=1e-2, patience=2, device="cpu", checkpoint_dir=str(tmp_path))
    tb.fit(mlp(), dl, (X[:64], y[:64]) and [(X[:64], y[:64])], loss_fn=CE, live=False, config=cfg)
    ckpt = torch.load(tmp_path / "last.pt", weights_only=True)
    assert ckpt["early_stopping"]["best"] is not None and "wait" in ckpt["early_stopping"]


def test_dict_and_tuple_inputs():
    "xb may be a tuple (model(*xb)) or a dict (model(**xb)); a batch may be a dict with a 'y' key."
    class Two(nn.Module):
        def __init__(self): super().__init__(); self.a, self.b = nn.Linear(4, 2), nn.Linear(4, 2)
        def forward(self, left, right): return self.a(left) + self.b(right)
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    cfg = tb.TrainConfig(epochs=1, device="cpu")
    r1 = tb.fit(Two(), [((X, X), y)], loss_fn=CE, live=False, config=cfg)
    r2 = tb.fit(Two(), [{"left": X, "right": X, "y": y}], loss_fn=CE, live=False, config=cfg)
    assert r1.step == r2.step == 1


def test_bf16_on_cpu_tracks_fp32():
    X, y = blobs(n=512)
    dl = tb.TensorLoader(X, y, batch_size=64, shuffle=True)
    cfg = tb.TrainConfig(epochs=4, lr=1e-2, device="cpu")
    r32 = tb.fit(mlp(), dl, [(X, y)], loss_fn=CE, live=False, config=cfg.replace(precision="fp32"))
    r16 = tb.fit(mlp(), dl, [(X, y)], loss_fn=CE, live=False, config=cfg.replace(precision="bf16"))
    l32, l16 = r32.metrics()["valid_loss"].to_numpy(), r16.metrics()["valid_loss"].to_numpy()
    assert r16.extra["precision"] == "bf16"
    assert l16[-1] < 0.5 * l16[0]  # it trains
    assert abs(l16 - l32).max() < 0.05 * l32[0]  # and tracks fp32


def test_fp16_scaler_skips_overflowing_step_and_holds_the_schedule():
    "Under fp16 with a GradScaler (run on CPU here), an overflowing step is skipped, recorded, and the scheduler waits."
    X, y = blobs(n=256)
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]
    calls = {"n": 0}
    def loss_fn(out, yb):
        calls["n"] += 1
        loss = CE(out.float(), yb)
        return loss * 1e35 if calls["n"] == 3 else loss  # finite loss, but scaled gradients overflow
    cfg = tb.TrainConfig(epochs=1, lr=1e-2, precision="fp16", device="cpu", schedule="warmup_cosine")
    run = tb.fit(mlp(), batches, loss_fn=loss_fn, live=False, config=cfg)
    assert run.stopped == "completed" and run.skipped_steps == 1 and run.step == len(batches) - 1
    h = run.history
    assert h[(h.name == "skipped_step")].shape[0] == 1
    lrs = h[h.name == "lr"].value.tolist()
    assert len(lrs) == run.step  # the scheduler advanced once per real step only


def test_nonfinite_skip_policy_counts_skips():
    X, y = blobs(n=128)
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]
    batches[1] = (torch.full_like(batches[1][0], float("nan")), batches[1][1])
    model = mlp()
    run = tb.fit(model, batches, loss_fn=CE, live=False, config=tb.TrainConfig(epochs=2, device="cpu", on_nonfinite="skip"))
    assert run.stopped == "completed" and run.skipped_steps == 2 and run.step == 6
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_max_steps_and_stop_request():
    X, y = blobs(n=256)
    dl = tb.TensorLoader(X, y, batch_size=16)
    run = tb.fit(mlp(), dl, loss_fn=CE, live=False, config=tb.TrainConfig(epochs=5, max_steps=7, device="cpu"))
    assert (run.stopped, run.step) == ("max_steps", 7)
    class StopAt5(Callback):
        def after_step(self, state):
            if state.step == 5: state.control.request_stop()
    run = tb.fit(mlp(), dl, loss_fn=CE, live=False, config=tb.TrainConfig(epochs=5, device="cpu"), callbacks=[StopAt5()])
    assert (run.stopped, run.step) == ("interrupted", 5)


def test_early_stopping_stops_and_keeps_best(tmp_path):
    "A model memorizing noise: valid loss rises, early stopping ends the run, best.pt holds the best epoch."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 20, generator=g), torch.randint(0, 2, (64,), generator=g)
    Xv, yv = torch.randn(256, 20, generator=g), torch.randint(0, 2, (256,), generator=g)
    model = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 2))
    run = tb.fit(model, [(X, y)], [(Xv, yv)], loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=200, lr=1e-2, patience=3, device="cpu", checkpoint_dir=str(tmp_path)))
    assert run.stopped == "early_stopping" and run.epoch < 199
    best = torch.load(run.best_path, weights_only=True)
    assert best["early_stopping"]["best"] == run.best
    assert run.metrics()["valid_loss"].min() == pytest.approx(run.best)


def test_schedule_drives_a_given_optimizer():
    X, y = blobs(n=128)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    run = tb.fit(model, [(X, y)] * 10, loss_fn=CE, optimizer=opt, live=False,
                 config=tb.TrainConfig(epochs=1, schedule="warmup_cosine", warmup=2, device="cpu"))
    lrs = run.history.query("name == 'lr'").value.tolist()
    assert max(lrs) == pytest.approx(0.5) and lrs[0] == pytest.approx(0.25)  # peak from the optimizer, not cfg.lr
    assert 0 < lrs[-1] < 0.05  # the last step's lr: near the cosine's end (0 comes after it)


def test_plateau_schedule_cuts_lr():
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 8, generator=g), torch.randint(0, 2, (64,), generator=g)
    run = tb.fit(mlp(out=2), [(X, y)], [(torch.randn(64, 8, generator=g), torch.randint(0, 2, (64,), generator=g))],
                 loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=30, lr=1e-2, schedule="plateau", plateau_patience=1, device="cpu"))
    lrs = run.history.query("name == 'lr'").value
    assert lrs.iloc[-1] < 1e-2


def test_model_mode_restored_by_evaluate():
    model = mlp(dropout=0.5)
    model.train()
    X, y = blobs(n=64)
    tb.evaluate(model, [(X, y)], CE)
    assert model.training
    model.eval()
    tb.evaluate(model, [(X, y)], CE)
    assert not model.training


def test_evaluate_refuses_a_pair_the_loss_would_broadcast_as_fit_does():
    "Seen: a (N, 1) prediction against (N,) targets, mse_loss: evaluate gave a wrong loss (torch only warned)."
    X = torch.randn(32, 4)
    y = X[:, 0]
    with pytest.raises(ValueError, match=r"prediction shape \(16, 1\) and target shape \(16,\)"):
        tb.evaluate(nn.Linear(4, 1), tb.TensorLoader(X, y, batch_size=16), nn.functional.mse_loss)
    # a loss of one value per row stays allowed: its shapes agree
    per_row = lambda p, t: (p - t).pow(2).squeeze(-1)
    scores = tb.evaluate(nn.Linear(4, 1), tb.TensorLoader(X, y[:, None], batch_size=16), per_row)
    assert scores["loss"] > 0
    # and its constant predictor is read as an MSE's (it raised 'only one element tensors' when probed)
    assert scores.stats["prior_loss"] == pytest.approx(float(y.var(unbiased=False)), rel=1e-5)


@pytest.mark.parametrize("kwargs, match", [
    ({"model": "not a model"}, "model must be a torch.nn.Module"),
    ({"dl_train": iter([])}, "dl_train must be re-iterable"),
    ({"dl_train": []}, "dl_train is empty"),
    ({"loss_fn": 3}, "loss_fn must be callable"),
    ({"config": {"epochs": 1}}, "config must be a trainbook.TrainConfig"),
    ({"metrics": "auc"}, "unknown metric 'auc'"),
])
def test_bad_input(kwargs, match):
    X, y = blobs(n=32)
    args = {"model": mlp(), "dl_train": [(X, y)], "loss_fn": CE, "config": tb.TrainConfig(epochs=1), **kwargs}
    with pytest.raises((TypeError, ValueError), match=match):
        tb.fit(args.pop("model"), args.pop("dl_train"), live=False, **args)


# ---- the rebuilt core: every model form, failures that keep the run, events where they say ----------------------

class TinyHF(nn.Module):
    "A Hugging Face style classifier written here (no downloads): keyword inputs, labels optional, output with .loss/.logits."
    def __init__(self, d=8, classes=3):
        super().__init__()
        torch.manual_seed(0)
        self.body, self.classifier = nn.Sequential(nn.Linear(d, 32), nn.ReLU()), nn.Linear(32, classes)

    def forward(self, input_features, attention_mask=None, labels=None):
        from types import SimpleNamespace
        logits = self.classifier(self.body(input_features * attention_mask[:, None]))
        loss = CE(logits, labels) if labels is not None else None
        return SimpleNamespace(loss=loss, logits=logits)


def test_hf_style_model_trains_with_its_own_loss():
    "loss_fn=None: the dict batch keeps its labels for the model, output.loss is trained, metrics see the logits."
    X, y = blobs(n=256)
    mask = torch.ones(len(X))
    batches = [{"input_features": X[i:i + 32], "attention_mask": mask[i:i + 32], "labels": y[i:i + 32]}
               for i in range(0, 256, 32)]
    run = tb.fit(TinyHF(), batches, batches[:2], loss_fn=None, metrics="accuracy", live=False,
                 config=tb.TrainConfig(epochs=6, lr=1e-2, device="cpu"))
    m = run.metrics()
    assert m["train_loss"].iloc[-1] < 0.5 * m["train_loss"].iloc[0]
    assert m["valid_accuracy"].iloc[-1] > 0.8


def test_multi_label_accuracy_in_fit():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 8, generator=g)
    Y = (X[:, :4] > 0).float()  # 4 independent labels
    torch.manual_seed(0)
    run = tb.fit(nn.Linear(8, 4), [(X, Y)], [(X, Y)], loss_fn=nn.BCEWithLogitsLoss(), metrics="accuracy", live=False,
                 config=tb.TrainConfig(epochs=30, lr=5e-2, device="cpu"))
    assert run.metrics()["valid_accuracy"].iloc[-1] > 0.9


def test_two_lambdas_are_two_columns():
    X, y = blobs(n=64)
    run = tb.fit(mlp(), [(X, y)], [(X, y)], loss_fn=CE, live=False, metrics=[lambda p, t: 1.0, lambda p, t: 2.0],
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    row = run.metrics().iloc[0]
    assert (row["valid_<lambda>"], row["valid_<lambda>_2"]) == (1.0, 2.0)


def test_before_step_sees_final_gradients_and_unstepped_weights():
    "before_step: the weights are those before the step, the gradients are the clipped ones the optimizer uses."
    class Look(Callback):
        def __init__(self): self.seen = []
        def before_step(self, state):
            grads = [p.grad.clone() for p in state.model.parameters()]
            total = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
            self.seen.append(([p.detach().clone() for p in state.model.parameters()], grads, float(total)))

    X, y = blobs(n=64)
    model, look = mlp(), Look()
    first = [p.detach().clone() for p in model.parameters()]
    tb.fit(model, [(X, y)] * 2, loss_fn=CE, live=False, callbacks=[look], optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
           config=tb.TrainConfig(epochs=1, clip_norm=0.01, device="cpu"))
    weights0, grads0, norm0 = look.seen[0]
    assert all(torch.equal(a, b) for a, b in zip(weights0, first))  # not stepped yet
    assert norm0 == pytest.approx(0.01, rel=1e-3)  # clipped
    weights1 = look.seen[1][0]
    for w0, g0, w1 in zip(weights0, grads0, weights1):  # SGD applied exactly those gradients
        assert torch.allclose(w1, w0 - 0.1 * g0, atol=1e-7)


class FailsInEpoch2:
    "A loader whose second pass raises after 2 batches."
    def __init__(self, batches): self.batches, self.passes = batches, 0
    def __len__(self): return len(self.batches)
    def __iter__(self):
        self.passes += 1
        for i, b in enumerate(self.batches):
            if self.passes == 2 and i == 2: raise OSError("disk went away")
            yield b


def test_a_failure_keeps_the_run(tmp_path):
    import json
    from trainbook.core import listen, unlisten
    X, y = blobs(n=128)
    seen = []
    listener = lambda kind, obj: seen.append(kind)
    class AfterFit(Callback):
        called = False
        def after_fit(self, state): AfterFit.called = True
    listen(listener)
    try:
        with pytest.raises(OSError, match="disk went away") as e:
            tb.fit(mlp(), FailsInEpoch2([(X[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]), [(X, y)], loss_fn=CE,
                   live=False, callbacks=[AfterFit()], config=tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(tmp_path)))
    finally: unlisten(listener)
    run = e.value.run
    assert run.stopped == "failed" and "disk went away" in run.error and tb.last_run() is run
    assert AfterFit.called and seen == ["run"]  # the checklist hears of the run once, at its end
    assert run.step == 6 and run.metrics()["valid_loss"].notna().sum() == 1  # epoch 0, two steps of epoch 1
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["stopped"] == "failed" and "disk went away" in meta["error"] and meta["history"]["step"]
    ckpt = tb.load_checkpoint(tmp_path / "last.pt", mlp())
    assert ckpt["step"] == 4 and ckpt["epoch"] == 1  # the last good checkpoint: the end of epoch 0


def test_user_step_lr_steps_per_epoch():
    X, y = blobs(n=128)
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = tb.fit(model, batches, loss_fn=CE, optimizer=opt, scheduler=torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5),
                 live=False, config=tb.TrainConfig(epochs=3, device="cpu"))
    lrs = run.history.query("name == 'lr'").groupby("epoch").value.last().tolist()
    assert lrs == pytest.approx([0.1, 0.05, 0.025])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # asked per step: 4 steps an epoch
    run = tb.fit(model, batches, loss_fn=CE, optimizer=opt, scheduler=torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5),
                 scheduler_interval="step", live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.history.query("name == 'lr'").value.iloc[-1] == pytest.approx(0.1 * 0.5 ** 3)  # the 4th step's lr


def test_show_loop_matches_the_order_events_fire():
    "show_loop reads fit's source; the events it prints are in the order a run fires them."
    class Record(Callback):
        def __init__(self): self.order = []
    for e in tb.Event:
        setattr(Record, e.value, lambda self, state, e=e.value: self.order.append(e) if e not in self.order else None)
    rec = Record()
    X, y = blobs(n=96)
    tb.fit(mlp(), [(X[i:i + 32], y[i:i + 32]) for i in range(0, 96, 32)], [(X, y)], loss_fn=CE, live=False,
           callbacks=[rec], config=tb.TrainConfig(epochs=2, accum_steps=2, device="cpu"))
    text = tb.show_loop([rec])
    printed = [e.value for e in tb.Event if f"[{e.value}: Record]" in text]
    assert set(printed) == {e.value for e in tb.Event}
    positions = {e: text.index(f"[{e}: Record]") for e in printed}
    assert sorted(rec.order, key=positions.get) == rec.order


def test_throughput_memory_and_announcements_per_epoch():
    from trainbook.core import listen, unlisten
    X, y = blobs(n=128)
    seen = []
    listener = lambda kind, obj: seen.append(kind)
    listen(listener)
    try:
        run = tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=32), loss_fn=CE, live=False, track=False,
                     config=tb.TrainConfig(epochs=2, device="cpu"))
    finally: unlisten(listener)
    h = run.history.query("split == 'train'")
    for name in ("samples_per_s", "step_time", "data_wait", "peak_memory_mb"):
        assert len(h[h.name == name]) == 2, name
    assert (h[h.name == "samples_per_s"].value > 0).all() and (h[h.name == "peak_memory_mb"].value > 0).all()
    assert seen == ["run"] and run.extra["track"] is False  # the checklist hears of the run at its end only


def test_profile_fills_run_profile_and_writes_a_trace(tmp_path):
    X, y = blobs(n=128)
    run = tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=32), loss_fn=CE, live=False, profile=2,
                 config=tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path)))
    assert "aten::" in run.profile and (tmp_path / "trace.json").stat().st_size > 0
    with pytest.raises(ValueError, match="profile must be"):
        tb.fit(mlp(), [(X, y)], loss_fn=CE, live=False, profile=-1)


def test_to_tensorboard_delegates_lazily(monkeypatch):
    import sys, types
    fake = types.ModuleType("trainbook.tracking")
    fake.to_tensorboard = lambda run, logdir: ("written", run.stopped, logdir)
    monkeypatch.setitem(sys.modules, "trainbook.tracking", fake)
    X, y = blobs(n=32)
    run = tb.fit(mlp(), [(X, y)], loss_fn=CE, live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.to_tensorboard("logs") == ("written", "completed", "logs")


# ---- metrics: scikit-learn metrics, tried before the first step; torch.compile ---------------------------------

def test_sk_metric_labels_and_probabilities():
    from sklearn.metrics import f1_score, roc_auc_score
    X, y = blobs(n=128)
    run = tb.fit(mlp(), [(X, y)], [(X, y)], loss_fn=CE, live=False,
                 metrics=[tb.sk_metric(f1_score, average="macro"), tb.sk_metric(roc_auc_score, output="proba", multi_class="ovr")],
                 config=tb.TrainConfig(epochs=5, lr=1e-2, device="cpu"))
    row = run.metrics().iloc[-1]
    model = run.model.eval()
    with torch.no_grad(): logits = model(X)
    assert row["valid_f1_score"] == pytest.approx(f1_score(y, logits.argmax(1), average="macro"))
    assert row["valid_roc_auc_score"] == pytest.approx(roc_auc_score(y, logits.softmax(1), multi_class="ovr"))
    with pytest.raises(ValueError, match="output must be 'label' or 'proba'"): tb.sk_metric(f1_score, output="logits")


def test_a_failing_metric_is_named_before_any_step():
    from sklearn.metrics import f1_score
    X, y = blobs(n=64)
    model = mlp()
    before = copy.deepcopy(model)
    steps = []
    class Count(Callback):
        def after_step(self, state): steps.append(state.step)
    bad = tb.sk_metric(f1_score)  # multi-class labels with the default average='binary': sklearn raises
    with pytest.raises(ValueError, match="metric 'f1_score' failed on the first validation batch"):
        tb.fit(model, [(X, y)], [(X, y)], loss_fn=CE, metrics=["accuracy", bad], callbacks=[Count()], live=False,
               config=tb.TrainConfig(epochs=2, device="cpu"))
    assert steps == [] and same_weights(model, before)
    with pytest.raises(ValueError, match="metric 'accuracy' failed"):  # accuracy refuses (n, 3) logits vs (n, 2) targets
        tb.fit(mlp(), [(X, y)], [(X, torch.zeros(64, 2))], loss_fn=lambda p, t: p.sum() * 0 + 1.0, metrics="accuracy",
               live=False, config=tb.TrainConfig(epochs=1, device="cpu"))


def test_compile_trains_and_checkpoints_the_eager_model(tmp_path, monkeypatch):
    "TrainConfig(compile=True) trains a torch.compile'd model; checkpoints hold the eager one (no _orig_mod keys)."
    import dataclasses
    calls = []
    def compile_eager(model, **kw):  # dynamo's graph capture without inductor's C++ build (minutes on this machine)
        calls.append(model)
        return real_compile(model, backend="eager")
    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", compile_eager)
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, device="cpu", checkpoint_dir=str(tmp_path))
    if "compile" in {f.name for f in dataclasses.fields(tb.TrainConfig)}: cfg = cfg.replace(compile=True)
    else: cfg.compile = True  # a core without the field yet: fit reads the attribute
    X, y = blobs(n=128)
    model = mlp()
    try:
        run = tb.fit(model, [(X, y)], [(X, y)], loss_fn=CE, live=False, config=cfg)
    except Exception as e:  # no C++ compiler for inductor on this machine, for instance
        pytest.skip(f"torch.compile cannot run here: {e!r}"[:300])
    ckpt = torch.load(tmp_path / "last.pt", weights_only=True)
    assert calls == [model] and run.stopped == "completed"
    assert not any(k.startswith("_orig_mod") for k in ckpt["model"])
    assert all(torch.equal(ckpt["model"][k], v) for k, v in model.state_dict().items())


def test_an_epoch_end_right_after_an_eval_every_validation_neither_repeats_nor_counts_it_twice():
    "Seen: eval_every=4 with 4 batches an epoch validated step 4 twice, and patience=1 stopped a falling loss."
    torch.manual_seed(0)
    X = torch.randn(64, 4)
    y = (X[:, 0] > 0).long()
    dl = DataLoader(TensorDataset(X, y), batch_size=16)
    run = tb.fit(nn.Linear(4, 2), dl, dl, loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=6, lr=0.05, device="cpu", eval_every=4, patience=1))
    valid = [r[:2] for r in run.records.rows() if r[2:4] == ("valid", "loss")]
    assert (run.stopped, valid) == ("completed", [(4 * (e + 1), e) for e in range(6)])


def test_max_steps_inside_an_epoch_ends_it_with_records_and_validation(tmp_path):
    "max_steps mid-epoch: the partial epoch's records and a validation; a resume given more steps ends it once."
    X, y = blobs(n=128)
    dl, dv = tb.TensorLoader(X, y, batch_size=32), [(X[:64], y[:64])]  # 4 steps an epoch
    cfg = lambda d, n: tb.TrainConfig(epochs=3, max_steps=n, schedule="constant", device="cpu",
                                      checkpoint_dir=str(tmp_path / d))
    run = tb.fit(mlp(), dl, dv, loss_fn=CE, live=False, config=cfg("a", 6))
    assert (run.stopped, run.step, run.epoch) == ("max_steps", 6, 1)
    assert list(run.metrics().index) == [0, 1] and run.metrics()["valid_loss"].notna().all()
    assert run.records.last_step("loss", "valid") == 6
    straight = tb.fit(mlp(), dl, dv, loss_fn=CE, live=False, config=cfg("b", 8))
    resumed = tb.fit(mlp(), dl, dv, loss_fn=CE, live=False, config=cfg("a", 8), resume=tmp_path / "a")
    assert resumed.step == 8
    assert history_without_timing(resumed) == history_without_timing(straight)


def test_a_float64_model_on_float32_batches_is_named_at_the_first_step():
    "Seen: fit(nn.Linear(3, 1).double(), a float32 loader) ended in torch's 'mat1 and mat2 must have ...'."
    model = nn.Linear(3, 1).double()
    before = model.weight.detach().clone()
    dl = tb.TensorLoader(torch.randn(32, 3), torch.randn(32, 1), batch_size=8)
    said = r"model's parameters are float64 but the batch's inputs are float32.*model\.float\(\)"
    with pytest.raises(RuntimeError, match=said) as e:
        tb.fit(model, dl, loss_fn=nn.MSELoss(), live=False, config=tb.TrainConfig(epochs=1, device="cpu"))
    assert "same dtype" in str(e.value.__cause__) and torch.equal(model.weight, before)
    run = tb.fit(model.float(), dl, loss_fn=nn.MSELoss(), live=False,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.stopped == "completed" and run.step == 4  # the fix the message names trains


def test_a_resume_at_max_steps_takes_no_step(tmp_path):
    "Seen: resume with the same max_steps took one more step (and validated it): 15 -> 16."
    X, y = blobs(n=128)
    dl, dv = tb.TensorLoader(X, y, batch_size=32), [(X[:64], y[:64])]
    cfg = tb.TrainConfig(epochs=3, max_steps=6, device="cpu", checkpoint_dir=str(tmp_path))
    model = mlp()
    run = tb.fit(model, dl, dv, loss_fn=CE, live=False, config=cfg)
    before = copy.deepcopy(model.state_dict())
    with pytest.warns(UserWarning, match=r"already took 6 optimizer step\(s\), TrainConfig.max_steps=6"):
        again = tb.fit(model, dl, dv, loss_fn=CE, live=False, config=cfg, resume=tmp_path)
    assert (again.stopped, again.step) == ("max_steps", 6)
    assert history_without_timing(again) == history_without_timing(run)  # the epoch's end redone once, no step
    timed = lambda r: [x[1] for x in r.records.rows() if x[3] in ("samples_per_s", "step_time", "data_wait")]
    assert timed(again) == timed(run) == [0, 0, 0, 1, 1, 1]  # epoch 1's, as the run measured it (probe 62)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize("cut", ["after_step", "before_validate"])  # at the step's end; inside its validation
def test_a_ctrl_c_inside_a_steps_end_is_redone_on_resume(tmp_path, cut):
    "Seen: Ctrl-C in after_step (or in the eval_every validation) at step 6: the resumed run never validated step 6."
    cfg = tb.TrainConfig(epochs=2, lr=5e-3, eval_every=3, device="cpu", patience=5)
    dl, dl_valid, model = _train_setup("tensor")
    full = tb.fit(model, dl, dl_valid, loss_fn=CE, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "a")))
    dl, dl_valid, model2 = _train_setup("tensor")
    stop = interrupt_at(6, cut)
    first = interrupted(tb.fit, model2, dl, dl_valid, loss_fn=CE, live=False,
                        config=cfg.replace(checkpoint_dir=str(tmp_path / "b")), callbacks=[stop])
    assert first.stopped == "interrupted" and first.step == 6
    dl, dl_valid, model3 = _train_setup("tensor")
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(model3, dl, dl_valid, loss_fn=CE, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "b")),
                     resume=tmp_path / "b")
    valid_steps = lambda run: [r[0] for r in run.records.rows() if r[2:4] == ("valid", "loss")]
    assert 6 in valid_steps(resumed) and valid_steps(resumed) == valid_steps(full)
    assert same_weights(model3, model) and history_without_timing(resumed) == history_without_timing(full)


def test_early_stopping_without_validation_says_once_which_value_it_follows():
    "Seen (F18): TrainConfig(patience=1) under monitor 'valid_loss' and no dl_valid stopped on the train loss, silently."
    torch.manual_seed(0)
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))  # random labels at lr 1.0: the loss soon stops falling
    dl = [(X[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    cfg = tb.TrainConfig(epochs=30, lr=1.0, patience=1, device="cpu")
    run = tb.fit(nn.Linear(4, 2), dl, loss_fn=CE, live=False, config=cfg)
    (f,) = [f for f in run.findings if f.kind == "monitor_fallback"]
    assert run.stopped == "early_stopping" and run.epoch < 29  # it did stop early, on train_loss
    assert f.data == {"monitor": "valid_loss", "follows": "train_loss"} and "dl_valid is None" in f.message
    lin = lambda: nn.Linear(4, 2)
    quiet = [tb.fit(lin(), dl, dl[:1], loss_fn=CE, live=False, config=cfg.replace(epochs=2)),  # it validates
             tb.fit(lin(), dl, loss_fn=CE, live=False, config=cfg.replace(epochs=2, monitor="train_loss")),  # asked
             tb.fit(lin(), dl, loss_fn=CE, live=False, config=cfg.replace(epochs=2, patience=None))]  # no stopping
    assert [[f for f in r.findings if f.kind == "monitor_fallback"] for r in quiet] == [[], [], []]


def bn_mlp(seed=0):
    "An MLP with BatchNorm: its running stats and num_batches_tracked move at every training forward."
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))


@pytest.mark.parametrize("where, accum", [("before_step", 2), ("forward", 3), ("before_step", 1)])
def test_a_ctrl_c_inside_a_window_leaves_batchnorm_stats_as_at_the_last_step(tmp_path, where, accum):
    """Seen (F1): the dropped micro-batches had already moved BatchNorm's running stats, and the resume, which
    replays them, moved them again (num_batches_tracked 16 -> 18): weights equal, buffers and valid loss not."""
    X, y = blobs(n=96)
    dl = lambda: DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
    dl_valid = tb.TensorLoader(X[:32], y[:32], batch_size=32)
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, accum_steps=accum, device="cpu")
    full_model = bn_mlp()
    full = tb.fit(full_model, dl(), dl_valid, loss_fn=CE, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "a")))
    model, cut = bn_mlp(), cfg.replace(checkpoint_dir=str(tmp_path / "b"))
    if where == "forward":  # Ctrl-C at the 3rd micro-batch of the 2nd window: two of its forwards already ran
        handle = interrupt_in_forward(model, 6)
        first = interrupted(tb.fit, model, dl(), dl_valid, loss_fn=CE, live=False, config=cut)
        handle.remove()
    else:  # after the 2nd window's forwards and backwards, before its optimizer step
        first = interrupted(tb.fit, model, dl(), dl_valid, loss_fn=CE, live=False, config=cut,
                            callbacks=[interrupt_at(1, where)])
    assert (first.stopped, first.step) == ("interrupted", 1)
    saved = torch.load(tmp_path / "b" / "last.pt", weights_only=True)["model"]
    assert saved["1.num_batches_tracked"] == accum  # the one completed step's micro-batches, no more
    assert torch.equal(model.state_dict()["1.running_mean"], saved["1.running_mean"])  # the model in hand too
    resumed_model = bn_mlp()
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(resumed_model, dl(), dl_valid, loss_fn=CE, live=False, config=cut, resume=tmp_path / "b")
    assert same_weights(resumed_model, full_model)  # running_mean, running_var, num_batches_tracked included
    assert history_without_timing(resumed) == history_without_timing(full)


class InterruptBeforeEpoch(Callback):
    "Raises KeyboardInterrupt in before_epoch of epoch `epoch`: the loader is positioned, no batch is drawn yet."
    def __init__(self, epoch): self.epoch = epoch
    def before_epoch(self, state):
        if state.epoch == self.epoch: raise KeyboardInterrupt


@pytest.mark.parametrize("epoch", [0, 1])
def test_a_ctrl_c_in_before_epoch_resumes_a_dataloaders_shuffle_exactly(tmp_path, epoch):
    """Seen (F2): iter(DataLoader) draws its seed from torch's generator before before_epoch; last.pt kept the RNG
    state after that draw, so the resumed epoch drew again and was shuffled in another order."""
    cfg = tb.TrainConfig(epochs=2, lr=5e-3, device="cpu", log_every=3)
    dl, dl_valid, model = _train_setup("dataloader")
    full = tb.fit(model, dl, dl_valid, loss_fn=CE, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "a")))
    dl, dl_valid, model2 = _train_setup("dataloader")
    cut = cfg.replace(checkpoint_dir=str(tmp_path / "b"))
    first = interrupted(tb.fit, model2, dl, dl_valid, loss_fn=CE, live=False, config=cut,
                        callbacks=[InterruptBeforeEpoch(epoch)])
    assert first.stopped == "interrupted" and first.step == 13 * epoch
    dl, dl_valid, model3 = _train_setup("dataloader")
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    resumed = tb.fit(model3, dl, dl_valid, loss_fn=CE, live=False, config=cut, resume=tmp_path / "b")
    assert resumed.stopped == "completed"
    assert same_weights(model3, model) and history_without_timing(resumed) == history_without_timing(full)


def _stalls():
    "A run that early stopping ends: valid labels unrelated to the inputs, so the valid loss soon stops falling."
    X, y = blobs(n=64, d=4, classes=2)
    g = torch.Generator().manual_seed(1)
    Xv, yv = torch.randn(32, 4, generator=g), torch.randint(0, 2, (32,), generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    return model, tb.TensorLoader(X, y, batch_size=16, shuffle=True), tb.TensorLoader(Xv, yv, batch_size=32)


def test_early_stopping_decided_before_a_ctrl_c_in_after_epoch_ends_the_resumed_run(tmp_path):
    """Seen (F3): a Ctrl-C in after_epoch of the epoch at which early stopping decided to stop: the resumed run
    trained another epoch (step 16 -> 24) instead of ending where the uninterrupted run ended."""
    cfg = tb.TrainConfig(epochs=20, lr=5e-2, patience=1, device="cpu")
    model, dl, dv = _stalls()
    full = tb.fit(model, dl, dv, loss_fn=CE, live=False, config=cfg.replace(checkpoint_dir=str(tmp_path / "a")))
    assert full.stopped == "early_stopping" and full.epoch < 19
    model2, dl, dv = _stalls()
    cut = cfg.replace(checkpoint_dir=str(tmp_path / "b"))
    first = interrupted(tb.fit, model2, dl, dv, loss_fn=CE, live=False, config=cut,
                        callbacks=[InterruptAfterEpoch(full.epoch)])
    assert first.stopped == "interrupted" and first.step == full.step
    model3, dl, dv = _stalls()
    with pytest.warns(UserWarning, match="early stopping ended the checkpoint's run"):
        tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
        resumed = tb.fit(model3, dl, dv, loss_fn=CE, live=False, config=cut, resume=tmp_path / "b")
    assert (resumed.stopped, resumed.step, resumed.epoch) == ("early_stopping", full.step, full.epoch)
    assert same_weights(model3, model) and history_without_timing(resumed) == history_without_timing(full)
    assert tb.Run.load(tmp_path / "b").stopped == "early_stopping"


def test_resuming_an_early_stopped_run_trains_nothing_unless_patience_lets_it(tmp_path):
    """Seen (F3): resuming a finished early-stopped run silently trained one more epoch, where a completed run warns
    that nothing is left to train. Now the same: nothing trained, a warning; a larger patience trains on, and says so."""
    cfg = tb.TrainConfig(epochs=20, lr=5e-2, patience=1, device="cpu", checkpoint_dir=str(tmp_path))
    model, dl, dv = _stalls()
    done = tb.fit(model, dl, dv, loss_fn=CE, live=False, config=cfg)
    assert done.stopped == "early_stopping"
    before = copy.deepcopy(model.state_dict())
    for same in (cfg, cfg.replace(epochs=40)):  # more epochs alone do not undo early stopping's decision
        with pytest.warns(UserWarning, match=r"early stopping ended the checkpoint's run.*nothing is left to train; "
                                             r"raise patience"):
            again = tb.fit(model, dl, dv, loss_fn=CE, live=False, config=same, resume=tmp_path)
        assert (again.stopped, again.step, again.epoch) == ("early_stopping", done.step, done.epoch)
        assert history_without_timing(again) == history_without_timing(done)
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    with pytest.warns(UserWarning, match=r"early stopping ended the checkpoint's run \(patience=1: 1 evaluation.*with "
                                         r"TrainConfig.patience=3 it trains on"):
        more = tb.fit(model, dl, dv, loss_fn=CE, live=False, config=cfg.replace(patience=3), resume=tmp_path)
    assert more.step > done.step


def test_a_fractional_warmup_without_a_step_count_names_warmup():
    "Seen (F9): schedule='constant', warmup=0.1 and a loader without a length: the error blamed the schedule."
    from torch.utils.data import IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):
            g = torch.Generator().manual_seed(0)
            for _ in range(32): yield torch.randn(4, generator=g), 1
    cfg = tb.TrainConfig(epochs=1, schedule="constant", warmup=0.1, device="cpu")
    dl = DataLoader(Stream(), batch_size=8)
    with pytest.raises(ValueError, match=r"warmup=0.1 is a fraction of the run's optimizer steps.*warmup in steps "
                                         r"\(warmup=.*\) or set max_steps") as e:
        tb.fit(nn.Linear(4, 2), dl, loss_fn=CE, live=False, config=cfg)
    assert "schedule='constant' needs" not in str(e.value)
    assert tb.fit(nn.Linear(4, 2), dl, loss_fn=CE, live=False, config=cfg.replace(warmup=2)).step == 4
    with pytest.raises(ValueError, match=r"schedule='warmup_cosine' needs the number of steps"):  # the schedule's own need
        tb.fit(nn.Linear(4, 2), dl, loss_fn=CE, live=False, config=cfg.replace(schedule="warmup_cosine", warmup=2))


def test_the_epoch_loss_is_a_mean_over_rows_as_validation_is():
    "88 rows in batches of 16: the short last batch weighs 8 rows, not one batch's share (train and valid on one footing)."
    X, y = blobs(n=88)
    batches = [(X[i:i + 16], y[i:i + 16]) for i in range(0, 88, 16)]
    run = tb.fit(mlp(), batches, loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=1, lr=1e-3, device="cpu", monitor="train_loss"))
    h = run.history[run.history.split == "train"]
    losses = h[h.name == "loss"].value.tolist()
    rows = [len(yb) for _, yb in batches]
    [epoch_loss] = h[h.name == "epoch_loss"].value.tolist()
    assert epoch_loss == pytest.approx(sum(l * n for l, n in zip(losses, rows)) / 88, rel=1e-6)
    assert epoch_loss != pytest.approx(sum(losses) / len(losses), rel=1e-6)


class LrUsed(Callback):
    "The lr each optimizer step uses, read in before_step (the gradients final, the weights not yet stepped)."
    def __init__(self): self.lrs = []
    def before_step(self, state): self.lrs.append(state.optimizer.param_groups[0]["lr"])


@pytest.mark.parametrize("schedule", ["one_cycle", "warmup_cosine"])
def test_the_lr_logged_at_a_step_is_the_lr_that_step_used(schedule):
    X, y = blobs(n=192)
    batches = [(X[i:i + 16], y[i:i + 16]) for i in range(0, 192, 16)]
    used = LrUsed()
    run = tb.fit(mlp(), batches, loss_fn=CE, live=False, callbacks=[used],
                 config=tb.TrainConfig(epochs=1, lr=1e-2, schedule=schedule, device="cpu", monitor="train_loss"))
    h = run.history[(run.history.split == "train") & (run.history.name == "lr")]
    assert h.value.tolist() == pytest.approx(used.lrs, rel=1e-12)  # not the next step's (the last not 0)
    assert h.step.tolist() == list(range(1, 13))


def test_each_gradients_norm_is_read_before_clipping_as_the_global_one_is():
    "Clipped to 1e-3: the per-parameter norms of a logged step still add up (in squares) to the global norm logged."
    X, y = blobs(n=64)
    run = tb.fit(mlp(), [(X[:32], y[:32]), (X[32:], y[32:])], loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=1, clip_norm=1e-3, log_every=1, device="cpu", monitor="train_loss"))
    h = run.history[run.history.step == 1]
    total = h[h.name == "grad_norm"].value.item()
    layers = h[h.name.str.startswith("grad_norm/")].value
    assert len(layers) == 4 and total > 1e-2  # far above the clip: a norm from before it
    assert math.hypot(*layers) == pytest.approx(total, rel=1e-6)


def test_a_ctrl_c_stops_the_rest_of_the_cell_not_the_next_one(monkeypatch):
    "Seen: a cell fitting three models in a loop trained the other two after a Ctrl-C ended the first."
    import IPython  # (a notebook's kernel has it imported)
    from trainbook import figures
    cell = {"execution": "run-1"}  # the kernel's execute request: one run of a cell
    monkeypatch.setattr(figures, "running_cell", lambda: ("cell", cell["execution"], ()))
    kernel = type("ZMQShell", (), {"parent_header": {}})()  # a kernel's shell: a script is one cell, a kernel's not
    monkeypatch.setattr(IPython, "get_ipython", lambda: kernel)
    X, y = blobs(n=64)
    batches = [(X[:32], y[:32]), (X[32:], y[32:])]
    cfg = tb.TrainConfig(epochs=2, device="cpu", monitor="train_loss")
    first = tb.fit(mlp(), batches, loss_fn=CE, live=False, config=cfg, callbacks=[interrupt_at(1)])
    assert first.stopped == "interrupted"  # the run a Ctrl-C stops is returned, as before
    with pytest.raises(KeyboardInterrupt, match="a Ctrl-C stopped a run earlier in this cell"):
        tb.fit(mlp(), batches, loss_fn=CE, live=False, config=cfg)  # the sweep's next model
    with pytest.raises(KeyboardInterrupt, match="Recorder not started"):
        tb.Recorder(cfg, live=False)
    ran = []  # a worker thread (a TrainPanel's) is no part of the cell: a Ctrl-C never reaches it
    worker = threading.Thread(target=lambda: ran.append(tb.fit(mlp(), batches, loss_fn=CE, live=False, config=cfg)))
    worker.start(); worker.join()
    assert [r.stopped for r in ran] == ["completed"]
    cell["execution"] = "run-2"  # the next cell
    assert tb.fit(mlp(), batches, loss_fn=CE, live=False, config=cfg).stopped == "completed"


def test_early_stopping_acts_at_an_evaluation_inside_the_epoch():
    "Seen: with eval_every, patience counted evaluations inside the epoch but the run stopped only at its end."
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(96, 8, generator=g), torch.randint(0, 2, (96,), generator=g)  # noise: valid loss turns up
    Xv, yv = torch.randn(32, 8, generator=g), torch.randint(0, 2, (32,), generator=g)
    batches = [(X[i:i + 8], y[i:i + 8]) for i in range(0, 96, 8)]  # 12 steps an epoch
    run = tb.fit(mlp(), batches, [(Xv, yv)], loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=20, lr=0.05, eval_every=1, patience=2, device="cpu"))
    h = run.history[(run.history.split == "valid") & (run.history.name == "loss")]
    assert run.stopped == "early_stopping"
    assert h.step.iloc[-1] == run.step and run.step % 12 != 0  # stopped at the evaluation, inside an epoch
    assert (h.step > run.extra["best_step"]).sum() == 2  # two evaluations without improvement, then the stop


def test_a_resume_with_a_loader_that_lost_its_own_generator_says_so(tmp_path):
    "Seen: a resume given a loader without the generator the checkpoint's had went on silently, on another order."
    X, y = blobs(n=64)
    own = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(7))
    cfg = tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path), device="cpu", monitor="train_loss")
    interrupted(tb.fit, mlp(), own, loss_fn=CE, live=False, config=cfg, callbacks=[interrupt_at(2)])
    plain = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    run = tb.fit(mlp(), plain, loss_fn=CE, live=False, config=cfg, resume=tmp_path / "last.pt")
    [changed] = [f for f in run.findings if f.kind == "resume_changed"]
    assert "RandomSampler, own generator" in changed.message


def test_an_epoch_left_unfinished_has_no_row_of_nan_losses():
    "Probe 27: a Ctrl-C 3 steps into epoch 2 showed '2 | NaN | NaN | 0.001' in run.metrics(), read as a blow-up."
    X, y = blobs()
    dl = tb.TensorLoader(X, y, batch_size=32)  # 8 steps an epoch
    run = interrupted(tb.fit, mlp(), dl, dl, loss_fn=nn.functional.cross_entropy, live=False,
                      config=tb.TrainConfig(epochs=5), callbacks=[interrupt_at(19)])
    assert run.stopped == "interrupted" and run.epoch == 2
    table = run.metrics()
    assert list(table.index) == [0, 1] and table.notna().all().all(), table
    assert "interrupted after 19 steps / 2 epochs (epoch 2 unfinished)" in run._repr_html_()  # not '3 epochs'


def test_a_model_that_returns_only_its_loss_is_validated_by_that_loss():
    "loss_fn=None, forward -> {'loss': ...} (no 'logits'): validation needs the loss alone, no prediction."
    class OwnLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(4, 4)
        def forward(self, x): return {"loss": ((self.layer(x) - x) ** 2).mean()}
    torch.manual_seed(0)
    X = torch.randn(32, 4)
    run = tb.fit(OwnLoss(), tb.TensorLoader(X, torch.zeros(32), batch_size=8),
                 tb.TensorLoader(X[:16], torch.zeros(16), batch_size=8), loss_fn=None, live=False,
                 config=tb.TrainConfig(epochs=2, device="cpu"))
    assert run.stopped == "completed" and len(run.metrics()["valid_loss"].dropna()) == 2


def _eval_every_case():
    "Probe 58's case: 8 batches of 8 rows, 3 classes, 4 validation batches; a linear model."
    g = torch.Generator().manual_seed(0)
    X, Xv = torch.randn(64, 6, generator=g), torch.randn(32, 6, generator=g)
    w = torch.randn(6, 3, generator=g)
    y, yv = (X @ w).argmax(1), (Xv @ w).argmax(1)
    torch.manual_seed(0)
    return (nn.Linear(6, 3), [(X[i:i + 8], y[i:i + 8]) for i in range(0, 64, 8)],
            [(Xv[i:i + 8], yv[i:i + 8]) for i in range(0, 32, 8)])


@pytest.mark.parametrize("cfg", [dict(epochs=1, lr=0.05, eval_every=2, max_steps=4),
                                 dict(epochs=3, lr=0.01, eval_every=2, patience=1, min_delta=0.5)])
def test_a_ctrl_c_in_an_after_validate_observer_is_redone_and_counted_on_resume(tmp_path, cfg):
    "Probe 58: the resume saw the validation's rows and skipped it: a best lost, early stopping two steps late."
    m0, dl, dv = _eval_every_case()
    a = tb.fit(copy.deepcopy(m0), dl, dv, loss_fn=CE, live=False,
               config=tb.TrainConfig(**cfg, device="cpu", checkpoint_dir=str(tmp_path / "a")))
    m, c = copy.deepcopy(m0), tb.TrainConfig(**cfg, device="cpu", checkpoint_dir=str(tmp_path / "b"))
    first = interrupted(tb.fit, m, dl, dv, loss_fn=CE, config=c, live=False,
                        callbacks=[interrupt_at(4, "after_validate")])
    assert first.stopped == "interrupted"
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    b = tb.fit(m, dl, dv, loss_fn=CE, config=c, live=False, resume=first.last_path)
    assert (b.stopped, b.step, b.best) == (a.stopped, a.step, a.best)
    assert torch.load(b.best_path, weights_only=True)["step"] == torch.load(a.best_path, weights_only=True)["step"]
    assert history_without_timing(b) == history_without_timing(a)


@pytest.mark.parametrize("eval_every", [3, 8])  # inside the epoch; at its last step
def test_early_stopping_inside_an_epoch_closes_it_and_its_resume_trains_nothing(tmp_path, eval_every):
    "Probe 58: the resume of a run stopped at step 6 of 8 trained on; one stopped at step 8 lost its epoch's records."
    m, dl, dv = _eval_every_case()
    cfg = tb.TrainConfig(epochs=3, lr=0.01, eval_every=eval_every, patience=1, min_delta=0.5, device="cpu",
                         checkpoint_dir=str(tmp_path))
    run = tb.fit(m, dl, dv, loss_fn=CE, config=cfg, live=False)
    assert run.stopped == "early_stopping" and run.step == 2 * eval_every
    epochs = run.step // 8 + (run.step % 8 > 0)
    assert len(run.metrics()["train_loss"].dropna()) == epochs  # each epoch trained in has its records
    weights = copy.deepcopy(m.state_dict())
    with pytest.warns(UserWarning, match="early stopping ended the checkpoint's run"):
        again = tb.fit(m, dl, dv, loss_fn=CE, config=cfg, live=False, resume=run.last_path)
    assert (again.stopped, again.step) == ("early_stopping", run.step)
    assert all(torch.equal(weights[k], v) for k, v in m.state_dict().items())
    assert history_without_timing(again) == history_without_timing(run)
    longer = tb.fit(m, dl, dv, loss_fn=CE, config=cfg.replace(patience=3), live=False, resume=run.last_path)
    assert longer.step > run.step  # a larger patience trains on


def test_a_skipped_nonfinite_window_leaves_batchnorm_stats_as_the_last_step_left_them():
    "Probe 58: a skipped NaN batch had put NaN in BatchNorm's running stats: every later prediction NaN."
    X, y = blobs(n=128)
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]
    batches[0] = (batches[0][0].clone(), batches[0][1])
    batches[0][0][3, 2] = float("nan")  # one NaN value in the first window: the snapshot's learning too
    batches[2] = (batches[2][0].clone(), batches[2][1])
    batches[2][0][5, 0] = float("nan")
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    run = tb.fit(model, batches, [(X[:64], y[:64])], loss_fn=CE, live=False,
                 config=tb.TrainConfig(epochs=2, device="cpu", on_nonfinite="skip"))
    assert run.stopped == "completed" and run.skipped_steps == 4
    assert all(torch.isfinite(b).all() for b in model.buffers())
    assert math.isfinite(run.history.query("split == 'valid' and name == 'loss'").value.iloc[-1])


def test_a_train_monitor_counts_each_epochs_value_once_under_eval_every():
    """Found with probe 58's sweep: monitor='train_loss' with eval_every=2 counted the last epoch's loss at each of the
    epoch's validations, so patience=3 stopped a steadily learning run at step 14 of 80; a plateau schedule too."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(64, 6, generator=g)
    dl, dv = [(X[i:i + 8], (X[i:i + 8, 0] > 0).long()) for i in range(0, 64, 8)], [(X[:16], (X[:16, 0] > 0).long())]
    torch.manual_seed(0)
    cfg = tb.TrainConfig(epochs=10, lr=0.01, eval_every=2, patience=3, monitor="train_loss", device="cpu")
    run = tb.fit(nn.Linear(6, 2), dl, dv, loss_fn=CE, live=False, config=cfg)
    losses = run.metrics()["train_loss"].tolist()
    assert all(b < a for a, b in zip(losses, losses[1:]))  # it learns every epoch
    assert (run.stopped, run.step, run.best_epoch) == ("completed", 80, 9)
    plateau = tb.fit(nn.Linear(6, 2), dl, dv, loss_fn=CE, live=False,
                     config=cfg.replace(patience=None, schedule="plateau"))
    assert len(set(plateau.history.query("name == 'lr'").value)) == 1  # never reduced: it improved each epoch


def test_a_ctrl_c_in_an_epoch_ends_validation_resumes_a_shuffling_dataloader_exactly(tmp_path):
    """Probe 62: the resume told the skipped epoch's DataLoader its end after setting the saved RNG, so its sampler
    drew once more and the next epoch's order differed (every loss from step 13 on)."""
    g = torch.Generator().manual_seed(0)
    X, Xv = torch.randn(96, 4, generator=g), torch.randn(32, 4, generator=g)

    def go(folder, callbacks=(), resume=None):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        dl = DataLoader(TensorDataset(X, X.sum(1, keepdim=True)), batch_size=8, shuffle=True,
                        generator=torch.Generator().manual_seed(1))
        dv = DataLoader(TensorDataset(Xv, Xv.sum(1, keepdim=True)), batch_size=16)
        run = tb.fit(m, dl, dv, loss_fn=nn.MSELoss(), callbacks=callbacks, resume=resume, live=False,
                     config=tb.TrainConfig(epochs=2, lr=0.01, checkpoint_dir=str(folder), device="cpu"))
        return run, m

    whole, m_whole = go(tmp_path / "a")
    first = interrupted(go, tmp_path / "b", [interrupt_at(12, "after_validate")])  # 12 batches: epoch 0's end
    assert first.stopped == "interrupted"
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    again, m_again = go(tmp_path / "b", resume=first.last_path)
    assert history_without_timing(again) == history_without_timing(whole) and same_weights(m_again, m_whole)
    # the epoch's throughput, measured before the Ctrl-C, is recorded again by the redone end
    assert {r[3] for r in again.records.rows() if r[1] == 0} == {r[3] for r in whole.records.rows() if r[1] == 0}


def test_a_resume_that_trains_nothing_keeps_the_partial_epochs_throughput(tmp_path):
    "Probe 62: the no-op resume of a run early stopping ended inside an epoch dropped that epoch's data_wait and rates."
    m, dl, dv = _eval_every_case()
    cfg = tb.TrainConfig(epochs=3, lr=0.01, eval_every=3, patience=1, min_delta=0.5, device="cpu",
                         checkpoint_dir=str(tmp_path))
    run = tb.fit(m, dl, dv, loss_fn=CE, config=cfg, live=False)
    with pytest.warns(UserWarning, match="early stopping ended"):
        again = tb.fit(m, dl, dv, loss_fn=CE, config=cfg, live=False, resume=run.last_path)
    names = lambda r: [(s, n) for s, _, _, n, _ in r.records.rows()]
    assert names(again) == names(run) and ("samples_per_s" in {n for _, n in names(run)})


@pytest.mark.parametrize("valid", ["features", "labels"])
def test_a_validation_batch_the_model_or_loss_cannot_take_fails_before_any_step(valid):
    """Probe 67: a dl_valid of 3 features (the model takes 4) or of float labels for cross_entropy trained a whole
    epoch, then failed with torch's message, naming no dl_valid."""
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    bad = [(torch.randn(16, 3), y[:16])] if valid == "features" else [(X[:16], y[:16].float())]
    model = nn.Linear(4, 2)
    before = model.weight.detach().clone()
    with pytest.raises(RuntimeError) as info:
        tb.fit(model, [(X[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)], bad,
               loss_fn=nn.functional.cross_entropy, config=tb.TrainConfig(epochs=2), live=False)
    assert "dl_valid's first batch" in " ".join(info.value.__notes__) and torch.equal(model.weight, before)


def test_a_subclass_of_an_epoch_scheduler_steps_per_epoch_as_its_torch_class():
    "Probe 95: a StepLR of the user's own (a subclass that logs) stepped every optimizer step: lr 0.1 → 1e-12."
    from trainbook.optim import pick_scheduler_interval
    class LoggedStepLR(torch.optim.lr_scheduler.StepLR): pass
    opt = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    cfg = tb.TrainConfig()
    for sched, kind in ((torch.optim.lr_scheduler.StepLR(opt, 1), "epoch"), (LoggedStepLR(opt, 1), "epoch"),
                        (torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10), "step")):
        assert pick_scheduler_interval(sched, None, cfg, user_scheduler=True) == kind, type(sched).__name__


def test_the_plateau_schedule_counts_an_improvement_as_early_stopping_does():
    "Probe 93: schedule='plateau' used torch's 1e-4 relative threshold, not min_delta (what counts as improvement)."
    from trainbook.optim import make_scheduler
    lrs = {}
    for min_delta in (0.0, 0.05):
        opt = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=1.0)
        sched = make_scheduler(opt, tb.TrainConfig(schedule="plateau", min_delta=min_delta, plateau_patience=1,
                                                   plateau_factor=0.5), None)
        for value in (1.0, 0.99, 0.98, 0.97):  # falls by 0.01 an epoch: an improvement only without min_delta
            sched.step(value)
        lrs[min_delta] = opt.param_groups[0]["lr"]
    assert lrs == {0.0: 1.0, 0.05: 0.5}


def test_a_ctrl_c_in_fits_set_up_is_noted_so_the_next_run_of_the_script_stops_at_its_door():
    """Probe 116's aside: a Ctrl-C while fit set up returned its run 'interrupted' with no note of it, so the next
    fit of the same cell (here: the script) trained on. It is noted as any interrupted run is: in a plain script
    (pytest is one) that run's Ctrl-C goes on out of fit, carrying the run (.run); a script that catches it and
    fits again is refused at that fit's door, until it calls forget_interrupt."""
    from trainbook.guard import forget_interrupt
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    model = CtrlCInSetUp(8, 3)
    run = interrupted(tb.fit, model, dl, loss_fn=nn.functional.cross_entropy, live=False,
                      config=tb.TrainConfig(epochs=1))
    assert run.stopped == "interrupted" and run.step == 0 and model.pressed
    try:  # (a KeyboardInterrupt escaping would end the whole pytest session: a failure here instead)
        with pytest.raises(KeyboardInterrupt, match="not started: a Ctrl-C stopped"):
            tb.fit(mlp(), dl, loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=1))
    except KeyboardInterrupt as other: pytest.fail(f"refused otherwise: {other}")
    forget_interrupt()
    assert tb.fit(mlp(), dl, loss_fn=nn.functional.cross_entropy, live=False,
                  config=tb.TrainConfig(epochs=1)).stopped == "completed"


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it_through_fit():
    """Probe 118, r_2: with SIGINT ignored (a shell script's background job, or on purpose) fit took it all the same
    and ended its run 'interrupted' at step 0. An ignored SIGINT stays ignored: the run trains to its end."""
    import signal
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    presses = []

    class PressedEverywhere(nn.Sequential):
        def forward(self, x):
            if len(presses) < 3: presses.append(signal.raise_signal(signal.SIGINT))  # set-up, a step, a step
            return super().forward(x)

        def train(self, mode=True):
            signal.raise_signal(signal.SIGINT)
            return super().train(mode)

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run = tb.fit(PressedEverywhere(nn.Linear(8, 3)), dl, loss_fn=nn.functional.cross_entropy, live=False,
                     config=tb.TrainConfig(epochs=2))
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # (given back as it was)
    finally: signal.signal(signal.SIGINT, before)
    assert run.stopped == "completed" and run.step == 8 and len(presses) == 3


def test_a_last_activation_the_loss_does_not_expect_is_noted_at_the_first_batch():
    "A Softmax before cross-entropy, raw scores before NLL: the run went on and said nothing (the overfit test did)."
    X, y = blobs(96)
    cfg = tb.TrainConfig(epochs=1, accum_steps=2, monitor="train_loss", device="cpu")
    with pytest.warns(UserWarning, match="a softmax is applied before a loss that applies log-softmax itself"):
        soft = tb.fit(nn.Sequential(mlp(), nn.Softmax(1)), [(X[:48], y[:48]), (X[48:], y[48:])],
                      loss_fn=nn.CrossEntropyLoss(), config=cfg, live=False)
    (found,) = [f for f in soft.findings if f.kind == "activation_before_loss"]  # once, though 2 micro-batches
    assert found.severity == "warning" and soft.stopped == "completed"
    with pytest.warns(UserWarning, match="NLL wants log-probabilities, but the outputs are raw scores"):
        raw = tb.fit(mlp(), [(X, y)], loss_fn=nn.NLLLoss(), config=cfg, live=False)
    assert [f.kind for f in raw.findings].count("activation_before_loss") == 1
    log_probs = lambda: nn.Sequential(mlp(), nn.LogSoftmax(1))
    for model, loss, precision in [(mlp(), nn.CrossEntropyLoss(), "fp32"), (log_probs(), nn.NLLLoss(), "fp32"),
                                   (log_probs(), nn.NLLLoss(), "bf16")]:  # bf16's rounding is not raw scores
        fine = tb.fit(model, [(X, y)], loss_fn=loss, config=cfg.replace(precision=precision), live=False)
        assert "activation_before_loss" not in [f.kind for f in fine.findings]


def test_a_model_whose_loss_needs_no_target_trains_on_dict_batches_without_one(tmp_path):
    "A denoiser's batches {'pixel_values': x} were refused: 'a dict batch needs its target' (probe 134, finding 7)."
    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
        def forward(self, pixel_values):
            noise = torch.randn_like(pixel_values)
            return {"loss": nn.functional.mse_loss(self.net(pixel_values + noise), noise)}
    torch.manual_seed(0)
    X = torch.randn(128, 16)
    train, valid = [{"pixel_values": X[i:i + 32]} for i in (0, 32, 64)], [{"pixel_values": X[96:]}]
    run = tb.fit(Denoiser(), train, valid, loss_fn=None, live=False,
                 config=tb.TrainConfig(epochs=2, accum_steps=2, checkpoint_dir=str(tmp_path), device="cpu"))
    assert run.stopped == "completed" and run.metrics()["valid_loss"].notna().sum() == 2
    assert math.isfinite(tb.evaluate(Denoiser(), valid, None)["loss"])
    assert tb.summary(Denoiser(), train[0]).findings == []
    with pytest.raises(TypeError, match="a dict batch needs its target"):  # a loss of its own needs one: said
        tb.fit(Denoiser(), train, loss_fn=nn.MSELoss(), config=tb.TrainConfig(epochs=1, device="cpu"), live=False)
