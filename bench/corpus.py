"""A labelled corpus of training runs, healthy and broken, and how often `diagnose` names each one right.

Every run is a real, seeded `trainbook.fit` on the CPU (a few seconds at most). Each broken run is labelled with
the finding it should produce; the histories are cached as small JSON files under bench/corpus/runs/, so the
table is recomputed without re-training.

    .venv/bin/python bench/corpus.py generate [--only SUBSTRING] [--force]   # train and cache (~10 min, 2 cores)
    .venv/bin/python bench/corpus.py table                                  # tune on one half, report on the other
    .venv/bin/python bench/corpus.py list                                   # the cases and their labels

The table: precision and recall per finding kind on the report half (and on all runs), the healthy runs'
warning/error findings (the target is none), and the overfitting onset error in epochs against a truth curve
measured on a large held-out set that the diagnosis never sees.
"""
import argparse, dataclasses, json, math, subprocess, sys, time, warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
from torch import nn

import trainbook as tb
# diagnose's two halves (tuning re-judges cached curves), and its moving median
from trainbook.diagnostics import _curves, _judge, _rolling

HERE = Path(__file__).parent / "corpus" / "runs"

# ---------------------------------------------------------------------------------------------------------------
# Tasks: synthetic teachers (so a large truth set is free), and the digits images for the CNN


def _gen(seed): return torch.Generator().manual_seed(seed)


def teacher_classes(n, seed, d=16, classes=4, task=0):
    "Rows of N(0, 1) features labelled by a fixed random tanh network (the task's seed picks the network)."
    g = _gen(1000 + task)
    w1, w2 = torch.randn(d, 32, generator=g) / d ** 0.5, torch.randn(32, classes, generator=g) / 32 ** 0.5
    X = torch.randn(n, d, generator=_gen(seed))
    return X, (torch.tanh(X @ w1) @ w2).argmax(1)


def teacher_regression(n, seed, d=8, noise=0.3, task=0):
    "A smooth teacher plus noise; targets of about unit variance, shape (n,)."
    g = _gen(2000 + task)
    w1, w2 = torch.randn(d, 16, generator=g) / d ** 0.5, torch.randn(16, generator=g) / 16 ** 0.5
    X = torch.randn(n, d, generator=_gen(seed))
    y = torch.tanh(X @ w1) @ w2
    return X, (y / y.std() + noise * torch.randn(n, generator=_gen(seed + 7))).float()


def tokens(n, seed, vocab=50, length=10, classes=3, task=0):
    "Bags of tokens; the class is the arg-max of the tokens' summed teacher weights."
    w = torch.randn(vocab, classes, generator=_gen(3000 + task))
    X = torch.randint(0, vocab, (n, length), generator=_gen(seed))
    return X, w[X].sum(1).argmax(1)


_DIGITS = None


def digits():
    "The 8x8 digits as (N, 1, 8, 8) images in [0, 1], in a seeded order."
    global _DIGITS
    if _DIGITS is None:
        from sklearn.datasets import load_digits
        d = load_digits()
        perm = torch.randperm(len(d.target), generator=_gen(0))
        _DIGITS = (torch.tensor(d.images, dtype=torch.float32)[perm, None] / 16, torch.tensor(d.target)[perm])
    return _DIGITS


def data(kind, n, seed, n_valid=500, n_truth=4000, **kw):
    "(train, valid, truth) for a model kind; truth is None for the digits (too few rows)."
    if kind == "cnn":
        X, y = digits()
        n = min(n, 1200)
        return (X[:n], y[:n]), (X[1200:], y[1200:]), None
    make = {"mlp": teacher_classes, "reg": teacher_regression, "emb": tokens, "deep": teacher_classes}[kind]
    return make(n, seed, **kw), make(n_valid, seed + 1, **kw), make(n_truth, seed + 2, **kw)


# ---------------------------------------------------------------------------------------------------------------
# Models


def make_model(kind, seed, width=64, depth=2, act=nn.ReLU, d=None, classes=4):
    torch.manual_seed(seed)
    d = d or (8 if kind == "reg" else 16)
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                             nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 10))
    if kind == "emb":
        return nn.Sequential(nn.EmbeddingBag(50, 32, mode="mean"), nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 3))
    if kind == "reg": classes = 1
    layers, a = [], d
    for _ in range(depth):
        layers += [nn.Linear(a, width), act()]
        a = width
    return nn.Sequential(*layers, nn.Linear(a, classes))


def mse(out, y, reduction="mean"):
    "MSE of (n, 1) outputs against (n,) targets (takes `reduction`, so top_losses scores rows in one call)."
    return nn.functional.mse_loss(out.squeeze(-1), y, reduction=reduction)


def loss_for(kind): return mse if kind == "reg" else nn.functional.cross_entropy


# ---------------------------------------------------------------------------------------------------------------
# Loaders and modules that plant a fault


class Sleepy:
    "A loader that sleeps before each batch: a slow input pipeline (a per-row decode, a remote read)."
    def __init__(self, dl, seconds): self.dl, self.seconds = dl, seconds
    def __len__(self): return len(self.dl)
    def set_epoch(self, epoch): self.dl.set_epoch(epoch)
    def __iter__(self):
        for batch in self.dl:
            time.sleep(self.seconds)
            yield batch


class BadBatches:
    "Yields a corrupted batch (shuffled labels, inputs ×3) at given 1-based positions of the whole run: a spike."
    def __init__(self, dl, at, regression=False): self.dl, self.at, self.regression, self.count = dl, set(at), regression, 0
    def __len__(self): return len(self.dl)
    def set_epoch(self, epoch): self.dl.set_epoch(epoch)
    def __iter__(self):
        for xb, yb in self.dl:
            self.count += 1
            if self.count in self.at:
                g = _gen(self.count)
                yb = yb[torch.randperm(len(yb), generator=g)]
                yb = -3 * yb if self.regression else torch.randint(0, int(yb.max()) + 1, yb.shape, generator=g)
                xb = 3 * xb if xb.is_floating_point() else xb
            yield xb, yb


class FailsFrom(nn.Module):
    "A module that starts producing NaN/Inf from its n-th training call (0/0, log of a negative, sqrt of a negative)."
    def __init__(self, n, how="div"): super().__init__(); self.n, self.how, self.calls = n, how, 0
    def forward(self, x):
        if self.training: self.calls += 1
        if self.calls < self.n: return x
        if self.how == "div": return x / torch.zeros_like(x)
        if self.how == "log": return torch.log(x - 10)
        return torch.sqrt(x - 10)


def keep_activations(module: nn.Module) -> list:
    "A forgotten debugging hook: keeps every training output of `module` (a leak of one activation per step)."
    kept = []
    def hook(mod, inputs, output):
        if mod.training: kept.append(output)
    module.register_forward_hook(hook)
    return kept


class ScaledUp:
    "A manual loss scale doubled every `every` calls and never divided out of the gradients (a loss-scaling bug)."
    def __init__(self, fn, every): self.fn, self.every, self.calls = fn, every, 0
    def __call__(self, out, y, **kw):
        self.calls += torch.is_grad_enabled()  # training steps only
        return self.fn(out, y, **kw) * 2.0 ** (self.calls // self.every)


def _grow_gradients(param, rate):
    "A gradient hook that multiplies `param`'s gradient by `rate` more at every backward (a buggy hook)."
    calls = [0]
    def hook(grad):
        calls[0] += 1
        return grad * rate ** calls[0]
    param.register_hook(hook)


class Truth(tb.Callback):
    "The loss on a large held-out set after each epoch: the truth the onset error is measured against."
    def __init__(self, rows, loss_fn): self.rows, self.loss_fn, self.curve = rows, loss_fn, []
    def after_epoch(self, state):
        dl = tb.TensorLoader(*self.rows, batch_size=2048)
        self.curve.append(tb.evaluate(state.model, dl, self.loss_fn, precision="fp32")["loss"])


# ---------------------------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    "One labelled run: what to build and what the diagnosis should say."
    id: str
    label: str  # healthy, or the finding kind the run should produce
    kind: str = "mlp"  # mlp | cnn | emb | reg | deep
    n: int = 2000  # training rows
    batch: int = 64
    epochs: int = 8
    lr: float = 3e-3
    opt: str = "adamw"  # adamw | sgd
    schedule: str = "constant"
    precision: str = "fp32"
    accum: int = 1
    seed: int = 0
    weight_decay: float = 0.01
    clip: Optional[float] = None
    model_kw: dict = field(default_factory=dict)
    data_kw: dict = field(default_factory=dict)
    fault: dict = field(default_factory=dict)  # what is planted: {"flip": 0.2}, {"sleep": 0.003}, {"spikes": [..]}, ...


def healthy_case(i, kind, batch, accum, opt, schedule, precision, width) -> Case:
    "One healthy run: rows, epochs (about 300 steps) and lr follow from the kind, batch and optimizer."
    rows = batch * accum
    n = {"cnn": 1200, "mlp": 4000}.get(kind, int(min(max(rows * 50, 1000), 4000)))  # enough not to overfit
    steps_per_epoch = math.ceil(n / rows)
    epochs = int(min(max(round(300 / steps_per_epoch), 4), 15 if kind == "cnn" else 40))
    lr = {"adamw": 3e-3, "sgd": 0.05}[opt] * (0.3 if batch <= 16 else 1.0)
    lr *= {"reg": 0.3 if opt == "sgd" else 1.0, "emb": 3.0}.get(kind, 1.0)
    return Case(f"healthy-{i:02d}-{kind}-b{batch}x{accum}-{opt}-{schedule}-{precision}", "healthy", kind, n, batch,
                epochs, lr, opt, schedule, precision, accum, seed=i, model_kw={"width": width})


def healthy_cases() -> list[Case]:
    "52 healthy runs across model kinds, sizes, batch sizes 8..512, schedules, optimizers, precisions, accumulation."
    rng = np.random.default_rng(0)
    batches = [8, 16, 32, 64, 128, 256, 512]
    kinds = ["mlp", "cnn", "emb", "reg"]
    cases = []
    for i in range(44):
        kind = kinds[i % 4]
        batch = batches[(i // 4 + i) % len(batches)]
        if kind == "cnn": batch = min(batch, 128)  # a CNN step at 512 rows in bf16 costs seconds on a CPU
        accum = [1, 1, 2, 4][(i // 2) % 4] if batch <= 128 else 1
        opt = ["adamw", "sgd"][(i // 3) % 2]
        schedule = ["constant", "warmup_cosine", "one_cycle"][i % 3]
        precision = ["fp32", "bf16"][(i // 5) % 2] if kind != "cnn" else "fp32"  # bf16 convolutions crawl on a CPU
        width = int(rng.choice([32, 64, 128]))
        cases.append(healthy_case(i, kind, batch, accum, opt, schedule, precision, width))
    # more of the kinds the first version falsely alarmed on: a CNN under SGD (its gradient norm grows while it
    # starts to learn) and a small-batch regression (its first batch's loss can be low by chance)
    for i, (kind, batch, accum, opt, schedule, precision, width) in enumerate([
            ("cnn", 128, 2, "sgd", "constant", "fp32", 64), ("cnn", 64, 1, "sgd", "constant", "fp32", 32),
            ("cnn", 32, 2, "sgd", "warmup_cosine", "fp32", 128), ("cnn", 128, 1, "sgd", "one_cycle", "fp32", 64),
            ("reg", 16, 1, "sgd", "one_cycle", "bf16", 64), ("reg", 16, 1, "sgd", "one_cycle", "fp32", 128),
            ("reg", 8, 1, "sgd", "constant", "bf16", 32), ("reg", 16, 2, "adamw", "one_cycle", "bf16", 64)]):
        cases.append(healthy_case(44 + i, kind, batch, accum, opt, schedule, precision, width))
    return cases


def broken_cases() -> list[Case]:
    "The broken runs, each labelled with the finding it should produce."
    c = []
    for i, (kind, n, width, lr) in enumerate([("mlp", 100, 512, 3e-4), ("mlp", 150, 256, 1e-3), ("reg", 80, 256, 1e-3),
                                              ("emb", 80, 256, 3e-3), ("mlp", 80, 1024, 3e-4), ("reg", 120, 512, 3e-4)]):
        c.append(Case(f"overfit-{i}-{kind}", "overfitting", kind, n, 16, 40, lr, weight_decay=0.0, seed=10 + i,
                      model_kw={"width": width}, data_kw={"noise": 1.0} if kind == "reg" else {}))
    for i, (kind, opt, lr) in enumerate([("mlp", "adamw", 1.0), ("mlp", "sgd", 8.0), ("reg", "sgd", 0.6),
                                         ("emb", "adamw", 3.0), ("cnn", "sgd", 3.0), ("reg", "adamw", 1.0),
                                         ("cnn", "adamw", 0.3), ("emb", "sgd", 30.0)]):
        c.append(Case(f"diverge-{i}-{kind}-{opt}", "diverging", kind, 2000, 32, 4, lr, opt, seed=20 + i))
    for i, (kind, opt, lr) in enumerate([("mlp", "adamw", 1e-7), ("reg", "sgd", 1e-6), ("emb", "adamw", 3e-7),
                                         ("cnn", "sgd", 1e-6), ("mlp", "sgd", 1e-6), ("reg", "adamw", 1e-7)]):
        c.append(Case(f"stuck-{i}-{kind}-{opt}", "not_learning", kind, 2000, 32, 4, lr, opt, seed=30 + i))
    # an lr 25-150x below the healthy runs' for that kind and optimizer (slowlr-6..9 added so that each half
    # holds 5: one per kind and the optimizer the first six lack for it)
    for i, (kind, opt, lr) in enumerate([("mlp", "sgd", 2e-3), ("reg", "sgd", 1e-4), ("cnn", "adamw", 5e-5),
                                         ("emb", "sgd", 3e-3), ("mlp", "adamw", 3e-5), ("reg", "adamw", 3e-5),
                                         ("emb", "adamw", 1e-4), ("cnn", "sgd", 1e-3), ("mlp", "sgd", 5e-4),
                                         ("reg", "sgd", 3e-4)]):
        c.append(Case(f"slowlr-{i}-{kind}-{opt}", "lr_too_low", kind, 2000, 32, 4, lr, opt, seed=40 + i))
    for i, (kind, how) in enumerate([("mlp", "frozen"), ("mlp", "dead_relu"), ("cnn", "frozen"), ("reg", "dead_relu"),
                                     ("emb", "frozen"), ("cnn", "dead_relu"), ("reg", "frozen")]):
        c.append(Case(f"dead-{i}-{kind}-{how}", "dead_model", kind, 2000, 32, 4, seed=50 + i, fault={"dead": how}))
    for i, (kind, fault) in enumerate([("mlp", {"grad_growth": 1.03}), ("emb", {"grad_growth": 1.05}),
                                       ("mlp", {"loss_scale_bug": 25}), ("reg", {"loss_scale_bug": 40}),
                                       ("reg", {"grad_growth": 1.015}), ("emb", {"loss_scale_bug": 60})]):
        c.append(Case(f"explode-{i}-{kind}-{next(iter(fault))}", "exploding_gradients", kind, 2000, 32, 4, 1e-3,
                      seed=60 + i, clip=1.0, fault=fault))
    for i, (depth, act) in enumerate([(12, "sigmoid"), (15, "sigmoid"), (10, "sigmoid"), (14, "tanh_small")]):
        c.append(Case(f"vanish-{i}-deep{depth}-{act}", "vanishing_gradients", "deep", 2000, 32, 4, 1e-3, seed=70 + i,
                      model_kw={"width": 32, "depth": depth}, fault={"act": act}))
    for i, (kind, how, at) in enumerate([("mlp", "div", 40), ("mlp", "log", 25), ("emb", "sqrt", 60), ("cnn", "div", 30)]):
        c.append(Case(f"nan-{i}-{kind}-{how}", "nonfinite", kind, 2000, 32, 4, seed=80 + i, fault={"nan": how, "at": at}))
    # spikes-6..9 added so that each half holds 5: one per kind, other batch sizes and places
    for i, (kind, batch, at) in enumerate([("mlp", 32, [150]), ("mlp", 8, [300, 700]), ("reg", 32, [120]),
                                           ("cnn", 32, [100, 130]), ("emb", 16, [200]), ("mlp", 128, [40]),
                                           ("reg", 16, [250]), ("cnn", 64, [60]), ("emb", 32, [100]),
                                           ("mlp", 64, [60, 100])]):
        n = {"cnn": 1200}.get(kind, 2000)
        c.append(Case(f"spikes-{i}-{kind}-b{batch}", "loss_spikes", kind, n, batch, 4, 3e-3 if batch > 16 else 1e-3,
                      seed=90 + i, fault={"spikes": at}))
    for i, (kind, sleep) in enumerate([("mlp", 0.003), ("cnn", 0.004), ("emb", 0.002), ("reg", 0.003)]):
        c.append(Case(f"slow-{i}-{kind}", "slow_input_pipeline", kind, 1000, 32, 3, seed=100 + i, fault={"sleep": sleep}))
    for i, loss in enumerate(["mse", "l1", "huber"]):
        c.append(Case(f"shape-{i}-{loss}", "shape_mismatch", "reg", 1000, 32, 4, 1e-3, seed=110 + i, fault={"shape": loss}))
    for i, (kind, flip) in enumerate([("mlp", 0.15), ("mlp", 0.3), ("emb", 0.2), ("reg", 0.1), ("cnn", 0.2)]):
        c.append(Case(f"noise-{i}-{kind}-{flip}", "label_noise", kind, 1500, 32, 8, seed=120 + i, fault={"flip": flip}))
    for i, (kind, how) in enumerate([("mlp", "feature"), ("mlp", "valid_encoding"), ("reg", "feature"),
                                     ("emb", "feature")]):
        c.append(Case(f"leak-{i}-{kind}-{how}", "suspicious_score", kind, 2000, 32, 5, seed=130 + i, fault={"leak": how}))
    for i, (kind, batch) in enumerate([("emb", 128), ("reg", 128), ("emb", 256)]):
        c.append(Case(f"leak-mem-{i}-{kind}", "memory_growth", kind, 4000, batch, 6, 1e-3, seed=140 + i,
                      fault={"memory_leak": True}, model_kw={"width": 2048}))
    return c


def all_cases() -> list[Case]: return broken_cases() + healthy_cases()


# ---------------------------------------------------------------------------------------------------------------
# Building and running one case


def _flip(y, share, seed, classes):
    "Labels with `share` of them moved to another class (classification) or to a gross outlier (regression)."
    y = y.clone()
    k = int(share * len(y))
    idx = torch.randperm(len(y), generator=_gen(seed))[:k]
    if y.is_floating_point(): y[idx] = y[idx] + 4 * torch.sign(torch.randn(k, generator=_gen(seed + 1)))
    else: y[idx] = (y[idx] + torch.randint(1, classes, (k,), generator=_gen(seed + 1))) % classes
    return y


def _leak(X, y, noise, seed):
    "X with the target appended as features (one-hot for classes), plus `noise`."
    t = y[:, None] if y.is_floating_point() else nn.functional.one_hot(y).float()
    extra = 3 * t + noise * torch.randn(t.shape, generator=_gen(seed))
    if X.is_floating_point(): return torch.cat([X, extra], 1)
    return X  # token bags: handled by the token itself below


def build(case: Case):
    "(model, dl_train, dl_valid, loss_fn, config, optimizer, callbacks, truth, expect) for a case."
    kind, f = case.kind, case.fault
    (X, y), (Xv, yv), truth = data(kind, case.n, case.seed, **case.data_kw)
    classes = 10 if kind == "cnn" else 3 if kind == "emb" else 4
    if "flip" in f:  # the same labelling process made the train and the valid labels
        y, yv = _flip(y, f["flip"], case.seed, classes), _flip(yv, f["flip"], case.seed + 1, classes)
    mkw = dict(case.model_kw)
    if f.get("act") == "sigmoid": mkw["act"] = nn.Sigmoid
    if f.get("act") == "tanh_small": mkw["act"] = nn.Tanh
    if "leak" in f and kind != "emb":
        X, Xv = _leak(X, y, 0.5 if f["leak"] == "valid_encoding" else 0.05, 1), _leak(Xv, yv, 0.05, 2)
        if f["leak"] == "valid_encoding":  # a target encoding fitted with the valid labels: noisy in train, exact in valid
            X[:, -classes:] = X[:, -classes:] + 1.2 * torch.randn(len(X), classes, generator=_gen(3))
        mkw["d"] = X.shape[1]
        truth = None
    if "leak" in f and kind == "emb":  # the class as a reserved token in every bag
        X, Xv = X.clone(), Xv.clone()
        X[:, :5], Xv[:, :5] = (47 + y)[:, None], (47 + yv)[:, None]
        truth = None
    model = make_model(kind, case.seed, **mkw)
    if f.get("memory_leak"): keep_activations(next(m for m in model.modules() if isinstance(m, nn.Linear)))
    if "grad_growth" in f: _grow_gradients(next(p for p in model.parameters() if p.requires_grad), f["grad_growth"])
    if f.get("act") == "tanh_small":
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.Linear): m.weight.mul_(0.3)
    if f.get("dead") == "frozen":
        for p in model.parameters(): p.requires_grad_(False)
        model[-1].bias.requires_grad_(True)
    if f.get("dead") == "dead_relu":
        with torch.no_grad(): model[0].bias.fill_(-20.0)
    expect = {}
    if "nan" in f:
        where = {"mlp": 2, "emb": 3, "cnn": 2}[kind]
        model.insert(where, FailsFrom(f["at"], f["nan"]))
        expect["module"] = str(where)
    loss_fn = loss_for(kind)
    if "shape" in f:  # (n, 1) outputs against (n,) targets: broadcasts to an (n, n) loss
        loss_fn = {"mse": nn.MSELoss(), "l1": nn.L1Loss(), "huber": nn.HuberLoss()}[f["shape"]]
    if "loss_scale_bug" in f: loss_fn = ScaledUp(loss_fn, f["loss_scale_bug"])
    dl = tb.TensorLoader(X, y, batch_size=case.batch, shuffle=True, seed=case.seed)
    if "sleep" in f: dl = Sleepy(dl, f["sleep"])
    if "spikes" in f:
        batches = case.epochs * math.ceil(len(X) / case.batch)
        if max(f["spikes"]) > batches:  # a spike planted past the end would be a miss nobody could find
            raise ValueError(f"{case.id}: spikes planted at {f['spikes']}, but the run has {batches} batches")
        dl = BadBatches(dl, f["spikes"], regression=kind == "reg")
        expect["steps"] = list(f["spikes"])
    opt = None
    if case.opt == "sgd":
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=case.lr, momentum=0.9,
                              weight_decay=case.weight_decay * 0.1)
    cfg = tb.TrainConfig(epochs=case.epochs, lr=case.lr, batch_size=case.batch, accum_steps=case.accum,
                         schedule=case.schedule, precision=case.precision, seed=case.seed, device="cpu",
                         weight_decay=case.weight_decay, clip_norm=case.clip, warmup=0.1 if case.schedule != "constant" else 0)
    callbacks = [tb.ExampleLosses(tb.TensorLoader(X, y, batch_size=1024))]
    if truth is not None: callbacks.append(Truth(truth, loss_for(kind)))
    return model, dl, tb.TensorLoader(Xv, yv, batch_size=1024), loss_fn, cfg, opt, callbacks, expect


def _compact(history: tb.History) -> dict:
    "The history grouped by series, values to 5 significant digits (the lr is left out: no rule reads it)."
    out = {}
    for s, e, sp, n, v in history.rows():
        if n == "lr": continue
        col = out.setdefault(f"{sp}/{n}", {"step": [], "epoch": [], "value": []})
        col["step"].append(s); col["epoch"].append(e); col["value"].append(float(f"{v:.5g}") if math.isfinite(v) else str(v))
    return out


def history_of(record: dict) -> tb.History:
    "The History stored in a corpus record."
    rows = []
    for key, col in record["history"].items():
        split, name = key.split("/", 1)
        rows += [(s, e, split, name, float(v)) for s, e, v in zip(col["step"], col["epoch"], col["value"])]
    rows.sort(key=lambda r: (r[0], r[1]))
    return tb.History(rows)


_CURVES = {}


def curves_of(record: dict) -> dict:
    "The record's series as diagnose reads them, built once per record (tuning diagnoses each run many times)."
    key = (record["id"], record["seconds"])
    if key not in _CURVES: _CURVES[key] = _curves(history_of(record))
    return _CURVES[key]


def run_case(case: Case) -> dict:
    "Train one case and return its JSON record."
    model, dl, dl_valid, loss_fn, cfg, opt, callbacks, expect = build(case)
    t = time.perf_counter()
    refused, run = None, None
    try:
        run = tb.fit(model, dl, dl_valid, loss_fn=loss_fn, config=cfg, optimizer=opt, callbacks=callbacks, live=False)
    except ValueError as e:
        refused = str(e)
        run = getattr(e, "run", None)
    record = {"id": case.id, "label": case.label, "case": dataclasses.asdict(case), "expect": expect,
              "seconds": round(time.perf_counter() - t, 2), "refused": refused}
    truth = next((cb for cb in callbacks if isinstance(cb, Truth)), None)
    record["truth_valid_loss"] = [round(v, 6) for v in truth.curve] if truth else None
    if run is not None and refused is None:
        from_history = {f.kind for f in tb.diagnose(run.records)}
        record["stopped"] = run.stopped
        record["run_findings"] = [{"kind": f.kind, "severity": f.severity,
                                   "data": {k: v for k, v in f.data.items() if isinstance(v, (int, float, str, bool))}}
                                  for f in run.findings if f.kind not in from_history and f.kind not in DIAGNOSE_KINDS]
        record["history"] = _compact(run.records)
    else:
        record["stopped"], record["run_findings"], record["history"] = "refused", [], {}
    return record


DIAGNOSE_KINDS = {"diverging", "not_learning", "lr_too_low", "loss_spikes", "overfitting", "exploding_gradients",
                  "vanishing_gradients", "slow_input_pipeline", "memory_growth", "label_noise", "suspicious_score"}


def generate(only: Optional[str], force: bool):
    HERE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for case in all_cases():
        if only and only not in case.id: continue
        path = HERE / f"{case.id}.json"
        if path.exists() and not force: continue
        if case.fault.get("memory_leak") and only != case.id:
            # on a CPU the peak memory is the process's peak RSS: a fresh process, so the leak is not hidden
            # under an earlier run's peak
            subprocess.run([sys.executable, __file__, "generate", "--only", case.id, "--force"], check=True)
            continue
        record = run_case(case)
        path.write_text(json.dumps(record, separators=(",", ":")))
        kinds = sorted({f.kind for f in findings_of(record, tb.Thresholds())})
        print(f"{case.id:48s} {record['seconds']:6.2f}s  {record['stopped']:14s} {kinds}", flush=True)
    print(f"generated in {time.perf_counter() - t0:.0f}s")


# ---------------------------------------------------------------------------------------------------------------
# Scoring

EXPECT = {  # label -> the finding kinds that name it
    "overfitting": {"overfitting"}, "diverging": {"diverging", "nonfinite"}, "not_learning": {"not_learning"},
    "lr_too_low": {"lr_too_low", "not_learning"}, "dead_model": {"not_learning"},
    "exploding_gradients": {"exploding_gradients"}, "vanishing_gradients": {"vanishing_gradients"},
    "nonfinite": {"nonfinite"}, "loss_spikes": {"loss_spikes"}, "slow_input_pipeline": {"slow_input_pipeline"},
    "shape_mismatch": {"shape_mismatch"}, "label_noise": {"label_noise"}, "suspicious_score": {"suspicious_score"},
    "memory_growth": {"memory_growth"}, "healthy": set()}
ALSO_TRUE = {  # other findings that are true of such a run, not counted as false positives
    "diverging": {"exploding_gradients", "loss_spikes", "not_learning", "vanishing_gradients"},
    "dead_model": {"vanishing_gradients"}, "vanishing_gradients": {"not_learning", "lr_too_low"},
    "exploding_gradients": {"diverging", "loss_spikes", "vanishing_gradients"}, "label_noise": {"overfitting"},
    "shape_mismatch": {"not_learning", "lr_too_low"}, "not_learning": {"lr_too_low"}, "overfitting": {"label_noise"}}


def findings_of(record: dict, th) -> list:
    "What trainbook says about a stored run under thresholds `th`: the loop's own findings plus `diagnose`."
    if record["refused"] is not None:
        kind = "shape_mismatch" if "shape" in record["refused"] else "refused"
        return [tb.Finding(kind, "error", record["refused"])]
    loop = [tb.Finding(f["kind"], f["severity"], "", data=f["data"]) for f in record["run_findings"]]
    return loop + _judge(curves_of(record), th)  # what tb.diagnose(history_of(record), th) returns


def right(record: dict, found: list) -> bool:
    "Whether the findings name the run's label (and, where the label says where, name the place)."
    hits = [f for f in found if f.kind in EXPECT[record["label"]]]
    if not hits: return False
    if record["label"] == "nonfinite": return any(f.data.get("module") == record["expect"]["module"] for f in hits)
    if record["label"] == "loss_spikes":
        steps = hits[0].data.get("steps", [])
        return all(any(abs(s - p) <= 2 for s in steps) for p in record["expect"]["steps"])
    return True


def truth_rise(record: dict) -> float:
    "How far the truth curve ended above its minimum, relative to it (0 without a truth curve)."
    t = np.array(record.get("truth_valid_loss") or [1.0])
    return float((t[-1] - t.min()) / t.min())


def true_onset(record: dict) -> Optional[int]:
    "The epoch after the truth curve's minimum."
    curve = record.get("truth_valid_loss")
    return int(np.argmin(curve)) + 1 if curve else None


def spike_prominence(record: dict) -> Optional[float]:
    "The planted batches' lowest rise above their ±10 steps' median, over any clean step's largest rise."
    col = record["history"].get("train/loss")
    planted = record["expect"].get("steps")
    if not col or not planted: return None
    steps, loss = np.array(col["step"]), np.array(col["value"], dtype=float)
    rise = loss - _rolling(loss, 10)[0]  # above the median of the ±10 steps around
    near = np.array([any(abs(s - p) <= 2 for p in planted) for s in steps])
    clean = ~near & (np.arange(len(loss)) >= 10)  # the first steps fall fast: no neighbourhood to rise from
    lowest = min(float(rise[np.argmin(np.abs(steps - p))]) for p in planted)
    return lowest / max(float(np.max(rise[clean])), 1e-12)


def truth_keeps_falling(record: dict) -> Optional[bool]:
    "Whether the truth curve's later half of epochs fell at least half as fast per epoch as its first half."
    t = record.get("truth_valid_loss")
    if not t or len(t) < 3: return None
    mid = len(t) // 2
    early, late = (t[0] - t[mid]) / mid, (t[mid] - t[-1]) / (len(t) - 1 - mid)
    return early > 0 and late >= 0.5 * early


def score(records: list, th) -> dict:
    "Per kind: runs, hits, reports, false reports; healthy warnings; onset errors."
    per_label, reported, false_reports, healthy_alarms, onset = {}, {}, {}, [], []
    for r in records:
        found = findings_of(r, th)
        label = r["label"]
        if label == "healthy":
            healthy_alarms += [(r["id"], f.kind) for f in found if f.severity != "info"]
        else:
            n, hit = per_label.get(label, (0, 0))
            per_label[label] = (n + 1, hit + right(r, found))
        ok = EXPECT[label] | ALSO_TRUE.get(label, set())
        for kind, severity in {(f.kind, f.severity) for f in found}:
            reported[kind] = reported.get(kind, 0) + 1
            if kind not in ok: false_reports.setdefault(kind, []).append((r["id"], severity))
        over = next((f for f in found if f.kind == "overfitting"), None)
        if label == "overfitting" and over is not None and true_onset(r) is not None:
            onset.append((r["id"], over.data["onset_epoch"] - true_onset(r)))
    return {"per_label": per_label, "reported": reported, "false": false_reports, "healthy": healthy_alarms,
            "onset": onset}


def load() -> list:
    return [json.loads(p.read_text()) for p in sorted(HERE.glob("*.json"))]


def halves(records: list) -> tuple[list, list]:
    "Tune on every other run of each label (in id order), report on the rest."
    tune, report = [], []
    for label in sorted({r["label"] for r in records}):
        rows = sorted((r for r in records if r["label"] == label), key=lambda r: r["id"])
        tune += rows[0::2]
        report += rows[1::2]
    return tune, report


TUNED = {  # threshold -> the grid it is tuned over
    "diverge_peak": [1.5, 2, 3, 5, 10, 20, 50, 100],
    "diverge_end": [1.01, 1.02, 1.03, 1.05, 1.07, 1.1, 1.15, 1.2, 1.5, 2.0, 3.0],
    "diverge_z": [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4, 6],
    "blowup": [1.2, 1.5, 2, 2.5, 3, 4, 5, 7, 10, 20],
    "blowup_z": [0.5, 1, 2, 3, 5, 8, 10, 15, 20, 30, 50],
    "still": [0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.16, 0.2, 0.3, 0.5],
    "slow": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8],
    "fall_z": [0.5, 1, 1.5, 2, 3, 4, 6, 8],
    "fall_keep": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "spike_z": [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50],
    "spike_rel": [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0],
    "spike_gap": [1.2, 1.5, 2, 2.5, 3, 4, 5, 7, 10, 20],  # blowup's grid: both are a factor above a level
    "overfit_rise": [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0],
    "overfit_z": [0.5, 1, 2, 3, 4, 6, 8, 12, 20],
    "explode": [1.5, 2, 3, 4, 5, 7, 10, 20, 50, 100, 300, 1000],
    "explode_late": [1.1, 1.2, 1.5, 2, 2.5, 3, 5, 10],
    "vanish": [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1],
    "noise_share": [0.01, 0.02, 0.03, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.12, 0.2, 0.3],
    "noise_fit": [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.0],
    "leak_first": [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.2, 0.3],
    "leak_ratio": [0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9],
    "memory_rise": [0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0],
}


def cost(s: dict) -> float:
    "Healthy warnings cost most, then false warnings/errors; a miss and a false info hint cost 1."
    misses = sum(n - hit for n, hit in s["per_label"].values())
    false = [sev for runs in s["false"].values() for _, sev in runs]
    return 100 * len(s["healthy"]) + 10 * sum(sev != "info" for sev in false) + sum(sev == "info" for sev in false) + misses


def tune(records: list, start) -> tuple:
    "Coordinate descent over the grids; within a grid, the middle of the cheapest stretch (the widest margin)."
    th = start
    for _ in range(2):
        for name, grid in TUNED.items():
            raw = [cost(score(records, dataclasses.replace(th, **{name: v}))) for v in grid]
            # a value next to a costlier one sits at a cliff: judge each value with half its neighbours' cost
            # (beyond the grid counts as the costliest value seen: the edge of the grid is not a margin)
            padded = [max(raw)] + raw + [max(raw)]
            costs = [raw[i] + 0.5 * (padded[i] + padded[i + 2]) for i in range(len(raw))]
            best = min(costs)
            cheapest = [i for i, c in enumerate(costs) if c == best]
            run = max(_runs(cheapest), key=len)  # the longest stretch of equally cheap values
            th = dataclasses.replace(th, **{name: grid[run[len(run) // 2]]})
    return th


def _runs(idx: list) -> list:
    out = []
    for i in idx:
        if out and i == out[-1][-1] + 1: out[-1].append(i)
        else: out.append([i])
    return out


def table(records: list, th, title: str) -> str:
    "The precision/recall table of one set of runs, as markdown."
    s = score(records, th)
    lines = [f"**{title}** ({len(records)} runs: {sum(r['label'] == 'healthy' for r in records)} healthy)", "",
             "| label | runs | recall | kind | reported | false reports | precision |", "|---|---|---|---|---|---|---|"]
    for label in sorted(s["per_label"]):
        n, hit = s["per_label"][label]
        kind = sorted(EXPECT[label])[0] if len(EXPECT[label]) == 1 else "/".join(sorted(EXPECT[label]))
        rep = sum(s["reported"].get(k, 0) for k in EXPECT[label])
        false = sum(len(s["false"].get(k, [])) for k in EXPECT[label])
        prec = f"{(rep - false) / rep:.2f}" if rep else "—"
        lines.append(f"| {label} | {n} | {hit / n:.2f} ({hit}/{n}) | {kind} | {rep} | {false} | {prec} |")
    lines += ["", f"Healthy runs with a warning/error finding: {len(s['healthy'])}"
              + (f" — {s['healthy']}" if s["healthy"] else "")]
    if s["false"]: lines.append(f"False reports (kind: runs): {s['false']}")
    not_healthy = [r["id"] for r in records if r["label"] == "healthy" and truth_rise(r) > 0.05]
    weak = [r["id"] for r in records if r["label"] == "overfitting" and truth_rise(r) < 0.05]
    lines.append(f"Label check on the 4000-row truth set: healthy runs that overfit {not_healthy or 'none'}; "
                 f"overfitting runs that do not {weak or 'none'}")
    slowed = [r["id"] for r in records if r["label"] == "lr_too_low" and truth_keeps_falling(r) is False]
    lines.append("Label check for lr_too_low (the truth loss still falls at least half as fast per epoch "
                 f"in the later epochs as in the first): runs that slowed {slowed or 'none'}")
    prominence = {r["id"]: spike_prominence(r) for r in records if r["label"] == "loss_spikes"}
    faint = {k: round(v, 2) for k, v in prominence.items() if v is not None and v < 2}
    clear = min(v for k, v in prominence.items() if k not in faint)
    lines.append("Label check for loss_spikes (a planted batch's rise above the median of its ±10 steps, "
                 "over the largest such rise of any clean step): under 2×, so the curve barely shows it, "
                 f"{faint or 'none'}; the others {clear:.1f}× or more")
    if s["onset"]:
        errs = [abs(e) for _, e in s["onset"]]
        lines.append(f"Overfitting onset error (epochs, detected − truth): {[e for _, e in s['onset']]}; "
                     f"max |error| {max(errs)}, within ±2: {sum(e <= 2 for e in errs)}/{len(errs)}")
    return "\n".join(lines)


ABOUT = """Each broken run is labelled with the finding it should produce; a run counts as found when a finding of
that kind is reported (a NaN must name the planted module, a spike every planted step within 2 steps). A reported
kind counts against precision unless it is the label's or one that is also true of such a run (`ALSO_TRUE`: a
diverging run's dead ReLUs are vanishing gradients). The thresholds are tuned on every other run of each label
(coordinate descent over a grid; a healthy run's warning costs 100, a false warning 10, a miss or a false info hint
1; the middle of the cheapest stretch of values, each value also charged half its neighbours' cost) and the table is reported on the other half. The overfitting truth is the epoch after
the minimum of the loss on a 4000-row held-out set the diagnosis never sees. `label_noise` reads what the
`ExampleLosses` callback logs (every run of the corpus has it). On a CPU the peak memory is the process's peak RSS:
the leak runs are trained in a fresh process each; in one long process a healthy run's peak is flat under an
earlier run's, so the healthy runs do not test the memory rule hard (on CUDA it reads max_memory_allocated)."""


def show_table(write: bool):
    "Tune on one half, print the table of the other half and of all runs; with `write`, also as markdown."
    records = load()
    if not records: sys.exit(f"no runs cached under {HERE}: run `python bench/corpus.py generate` first")
    tune_half, report_half = halves(records)
    fitted = tune(tune_half, tb.Thresholds())
    fitted_all = tune(records, tb.Thresholds())  # what the library's defaults should be
    default = tb.Thresholds()
    changed = {k: (getattr(default, k), getattr(fitted_all, k)) for k in TUNED
               if getattr(default, k) != getattr(fitted_all, k)}
    text = "\n\n".join([
        f"Thresholds tuned on the tune half ({len(tune_half)} runs): "
        + ", ".join(f"`{k}={getattr(fitted, k)}`" for k in TUNED),
        f"Thresholds tuned on all {len(records)} runs: " + ", ".join(f"`{k}={getattr(fitted_all, k)}`" for k in TUNED),
        "Library defaults (trainbook.Thresholds()) that differ from those tuned on all runs: "
        + (str(changed) if changed else "none"),
        table(report_half, fitted, "Report half, thresholds tuned on the other half (the honest estimate)"),
        table(records, default, "All runs, the library's default thresholds (tuned on all runs: in-sample)"),
        f"Corpus: {len(records)} runs, {sum(r['seconds'] for r in records):.0f}s of training (as generated)."])
    print(text)
    if write:
        out = HERE.parent / "RESULTS-diagnostics.md"
        out.write_text("## Diagnostics you can trust: precision and recall on a labelled corpus\n\n"
                       "`python bench/corpus.py generate` (seeded CPU runs of `fit`, cached as JSON in "
                       "bench/corpus/runs/), then `python bench/corpus.py table --write`.\n\n" + ABOUT + "\n\n"
                       + text + "\n")
        print(f"written to {out}")


def main():
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # the shape-broadcast cases warn on every step
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["generate", "table", "list"])
    ap.add_argument("--only", default=None, help="generate only the cases whose id contains this")
    ap.add_argument("--force", action="store_true", help="re-train cases already cached")
    ap.add_argument("--write", action="store_true", help="table: also write bench/corpus/RESULTS-diagnostics.md")
    a = ap.parse_args()
    if a.what == "generate": generate(a.only, a.force)
    elif a.what == "list":
        for c in all_cases(): print(f"{c.id:48s} {c.label}")
    else: show_table(a.write)


if __name__ == "__main__":
    main()
