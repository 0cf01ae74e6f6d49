"""A labelled corpus of training runs, healthy and broken, organized by family, and how often `diagnose` names
each one right on families it was not tuned on.

Every trained run is a real, seeded `trainbook.fit` on the CPU (seconds at most); the long runs (10,000-50,000
steps) come from a fast synthetic loop (`synthetic_record`: per-example losses drawn from a heavy-tailed
distribution around a learning curve, batch by batch). Each broken run is labelled with the finding it should
produce; the histories are cached under bench/corpus/runs/ (JSON; the synthetic ones gzipped), so the table is
recomputed without re-training.

    .venv/bin/python bench/corpus.py generate [--only SUBSTRING] [--force]   # train and cache (~40 min, 2 cores)
    .venv/bin/python bench/corpus.py table [--write]                        # leave-one-family-out (~5 min)
    .venv/bin/python bench/corpus.py onset                                  # onset estimators (~30 s)
    .venv/bin/python bench/corpus.py list                                   # the cases and their labels

A family is data set × model kind × optimizer × batch-size band × length band × fault recipe (`family_of`). The
table: per-kind precision and recall when each family is judged with thresholds tuned on all the other families,
the healthy runs' warning/error findings (the target: at most 1 per 20), and the overfitting onset error in epochs
against a truth curve measured on a large held-out set that the diagnosis never sees. A run is judged by what a user
sees: the leak hints of `check_data` and of the split audit on its rows (before training), the loop's findings and
`diagnose` on its history.
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
from trainbook.curvefit import convex_low, fall_and_rise, rolling_median, smooth_evaluations, smoothing_half
from trainbook.diagnostics import RULES, _overfitting, _screen
from trainbook.readings import curves_of as history_curves, valid_noise

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
    if kind in ("cnn", "bncnn"):
        X, y = digits()
        n = min(n, 1200)
        return (X[:n], y[:n]), (X[1200:], y[1200:]), None
    make = {"mlp": teacher_classes, "reg": teacher_regression, "emb": tokens, "deep": teacher_classes,
            "gru": tokens, "tfm": tokens}[kind]
    return make(n, seed, **kw), make(n_valid, seed + 1, **kw), make(n_truth, seed + 2, **kw)


# ---------------------------------------------------------------------------------------------------------------
# Models


class SeqNet(nn.Module):
    "Token sequences → class scores: an embedding, then a GRU (its last state) or a one-layer transformer (mean)."
    def __init__(self, how, width=16, vocab=50, classes=3):
        super().__init__()
        self.how, self.emb = how, nn.Embedding(vocab, width)
        if how == "gru": self.body = nn.GRU(width, width, batch_first=True)
        else: self.body = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.emb(x)
        if self.how == "gru": return self.head(self.body(h)[0][:, -1])
        return self.head(self.body(h).mean(1))


def make_model(kind, seed, width=64, depth=2, act=nn.ReLU, d=None, classes=4):
    torch.manual_seed(seed)
    d = d or (8 if kind == "reg" else 16)
    if kind in ("gru", "tfm"): return SeqNet(kind, width=min(width, 32))
    if kind == "bncnn":  # conv biases before BatchNorm: their gradient is exactly zero by construction
        return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64, 10))
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
    "Yields a corrupted batch at given 1-based positions of the whole run: a spike (or a NaN planted in the inputs)."
    def __init__(self, dl, at, regression=False, how="mixed"):
        self.dl, self.at, self.regression, self.how, self.count = dl, set(at), regression, how, 0
    def __len__(self): return len(self.dl)
    def set_epoch(self, epoch): self.dl.set_epoch(epoch)
    def __iter__(self):
        for xb, yb in self.dl:
            self.count += 1
            if self.count in self.at: xb, yb = self.corrupt(xb, yb)
            yield xb, yb

    def corrupt(self, xb, yb):
        "mixed: shuffled labels, inputs ×3; x100: inputs ×100; y30: targets ×30; labels: labels only; nan: one NaN."
        g = _gen(self.count)
        if self.how == "nan":
            xb = xb.clone()
            xb.view(-1)[0] = float("nan")
            return xb, yb
        if self.how == "x100": return (100 * xb if xb.is_floating_point() else xb), yb
        if self.how == "y30": return xb, 30 * yb
        yb = yb[torch.randperm(len(yb), generator=g)]
        if self.regression: yb = -3 * yb
        else: yb = torch.randint(0, int(yb.max()) + 1, yb.shape, generator=g)
        if self.how == "labels": return xb, yb
        return (3 * xb if xb.is_floating_point() else xb), yb


class RootFrom(nn.Module):
    "sqrt of an exact 0 from the n-th training call: a finite forward whose backward is inf · 0 = NaN."
    def __init__(self, n): super().__init__(); self.n, self.calls = n, 0
    def forward(self, x):
        if self.training: self.calls += 1
        return x if self.calls < self.n else torch.sqrt(x * 0.0) + x


class Overflows:
    "A loss that overflows to inf from its n-th training call (an unscaled exp, a sum in fp16)."
    def __init__(self, fn, n): self.fn, self.n, self.calls = fn, n, 0
    def __call__(self, out, y, **kw):
        self.calls += torch.is_grad_enabled()
        loss = self.fn(out, y, **kw)
        return loss * torch.exp(torch.tensor(200.0)) if self.calls >= self.n else loss


def handwritten_mse(p, y):
    "A hand-written MSE (no torch loss name to recognise): (n, 1) outputs against (n,) targets broadcast."
    return ((p - y) ** 2).mean()


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
    family: str = ""  # data set × model × optimizer × batch band × length band × fault recipe ("" = from the fields)


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


# ---------------------------------------------------------------------------------------------------------------
# The second corpus: families (data set × model × optimizer × batch band × length band × fault recipe) the first
# lacks: BatchNorm CNNs, GRUs, transformers, six optimizers, warm restarts and plateau schedules, batch sizes
# 4-1024, 10 to 5,000 steps (and, in `synthetic_records`, 10,000-50,000), several planting recipes per fault

BASE_LR = {"plain_sgd": 0.1, "momentum": 0.02, "nesterov": 0.02, "rmsprop": 1e-3, "adam": 2e-3, "adamw": 2e-3}
CAP = {"cnn": 1200, "bncnn": 1200}


def band(value, edges, names):
    "The name of the band `value` falls in (edges are the upper bounds)."
    return next((n for e, n in zip(edges, names) if value <= e), names[-1])


def family_of(case: Case) -> str:
    "The case's family: what a run nobody tuned on would differ in."
    data_set = {"mlp": "teacher", "deep": "teacher", "reg": "regression", "emb": "tokens", "gru": "tokens",
                "tfm": "tokens", "cnn": "digits", "bncnn": "digits"}[case.kind]
    opt = "momentum" if case.opt == "sgd" else case.opt
    steps = case.epochs * math.ceil(case.n / case.batch / case.accum)
    batch = band(case.batch, [8, 64, 256], ["b4-8", "b16-64", "b128-256", "b512+"])
    length = band(steps, [100, 1000, 5000], ["short", "mid", "long", "vlong"])
    recipe = "healthy" if case.label == "healthy" else case.label + ":" + (
        "-".join(f"{k}={v}" for k, v in sorted(case.fault.items()) if k not in ("spikes", "at"))
        or f"lr={case.lr:g}")
    return case.family or f"{data_set}×{case.kind}×{opt}×{batch}×{length}×{recipe.split('=')[0]}"


def sized(kind, batch, steps):
    "(rows, epochs) for about `steps` optimizer steps at `batch` rows (rows capped by the data set)."
    n = CAP.get(kind, 4000)
    if batch * steps < n * 2: n = max(batch * 2, min(n, batch * steps // 2))
    per_epoch = math.ceil(n / batch)
    return n, int(max(2, round(steps / per_epoch)))


def lr_for(kind, opt, batch):
    lr = BASE_LR[opt] * (0.3 if batch <= 8 else 1.0)
    if kind == "reg" and opt in ("plain_sgd", "momentum", "nesterov"): lr *= 0.3
    if kind in ("gru", "tfm", "emb") and opt == "plain_sgd": lr *= 10
    elif kind == "emb": lr *= 3  # a mean of embeddings learns slowly (at 1x, batch-8 runs never left the prior)
    return lr


def family_healthy_cases() -> list[Case]:
    "100 healthy runs over the new kinds, optimizers, schedules, batch sizes 4-1024 and 30-5,000 steps."
    rng = np.random.default_rng(1)
    kinds = ["mlp", "reg", "emb", "cnn", "bncnn", "gru", "tfm"]
    opts = list(BASE_LR)
    batches = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    schedules = ["constant", "warmup_cosine", "one_cycle", "plateau", "restarts"]
    out = []
    for i in range(100):
        kind, opt = kinds[i % len(kinds)], opts[(i // len(kinds)) % len(opts)]
        batch = int(batches[(i * 5 + i // 9) % len(batches)])
        if kind in ("cnn", "bncnn", "gru", "tfm"): batch = min(batch, 256)  # seconds per step on a CPU above
        steps = int(rng.choice([30, 150, 400, 1000, 2500] if batch >= 16 else [150, 400, 1200, 3000]))
        if batch >= 128: steps = min(steps, 400)  # enough epochs over 4,000 rows; longer ones overfit
        if kind in ("cnn", "bncnn", "gru", "tfm"): steps = min(steps, 40_000 // batch)  # CPU seconds
        n, epochs = sized(kind, batch, steps)
        schedule = schedules[(i // 3) % len(schedules)]
        out.append(Case(f"fam-healthy-{i:03d}-{kind}-{opt}-b{batch}-{schedule}-s{steps}", "healthy", kind, n, batch,
                        epochs, lr_for(kind, opt, batch), opt, schedule, seed=200 + i,
                        model_kw={"width": int(rng.choice([32, 64]))}))
    return out


def family_broken_cases() -> list[Case]:
    "Broken runs of the new families, several planting recipes per fault."
    c = []
    # spikes: one bad batch planted four ways (labels and inputs, inputs ×100, targets ×30, labels only)
    for i, (kind, opt, batch, how, at) in enumerate([
            ("mlp", "adam", 4, "mixed", [700]), ("mlp", "nesterov", 256, "x100", [30]),
            ("reg", "rmsprop", 16, "y30", [300]), ("reg", "adam", 512, "y30", [40]),
            ("gru", "adam", 32, "mixed", [200]), ("tfm", "adamw", 64, "mixed", [90]),
            ("bncnn", "momentum", 32, "mixed", [150]), ("emb", "rmsprop", 8, "mixed", [500]),
            ("mlp", "plain_sgd", 1024, "x100", [25]), ("reg", "nesterov", 64, "y30", [120, 260]),
            ("tfm", "adam", 16, "mixed", [400]), ("mlp", "adamw", 32, "labels", [180]),
            ("gru", "rmsprop", 128, "mixed", [60]), ("bncnn", "adam", 64, "mixed", [80])]):
        n, epochs = sized(kind, batch, max(at) * 2 + 100)
        c.append(Case(f"fam-spikes-{i:02d}-{kind}-{opt}-b{batch}-{how}", "loss_spikes", kind, n, batch, epochs,
                      lr_for(kind, opt, batch), opt, seed=300 + i, fault={"spikes": at, "how": how}))
    # NaN/Inf: from a module, an input, a loss overflow, a gradient (sqrt at 0, with clipping)
    for i, (kind, opt, how, at) in enumerate([
            ("mlp", "adam", "div", 30), ("bncnn", "momentum", "log", 20), ("reg", "rmsprop", "sqrt", 50),
            ("mlp", "nesterov", "input", 40), ("bncnn", "adam", "input", 25), ("reg", "adamw", "input", 60),
            ("mlp", "rmsprop", "overflow", 35), ("tfm", "adam", "overflow", 20), ("emb", "momentum", "overflow", 45),
            ("mlp", "adamw", "backward", 30), ("reg", "adam", "backward", 40), ("bncnn", "adam", "backward", 25)]):
        n, epochs = sized(kind, 32, 200)
        c.append(Case(f"fam-nan-{i:02d}-{kind}-{opt}-{how}", "nonfinite", kind, n, 32, epochs, lr_for(kind, opt, 32),
                      opt, seed=320 + i, fault={"nan": how, "at": at}))
    # overfitting: few rows, a wide model, no weight decay, several kinds and optimizers
    for i, (kind, opt, n, width, batch, epochs) in enumerate([
            ("mlp", "adam", 120, 512, 16, 40), ("reg", "adam", 100, 512, 16, 40), ("gru", "adam", 150, 64, 16, 40),
            ("tfm", "adamw", 150, 64, 16, 40), ("emb", "rmsprop", 100, 256, 8, 30), ("mlp", "nesterov", 150, 512, 8, 30),
            ("bncnn", "adam", 80, 64, 16, 40), ("reg", "momentum", 120, 512, 16, 40), ("mlp", "adamw", 200, 1024, 32, 50),
            ("gru", "rmsprop", 120, 64, 8, 30), ("tfm", "adam", 100, 64, 4, 25), ("emb", "adam", 80, 512, 16, 40)]):
        # an lr that fits the few rows fast (at lr_for's, a batch-8 RMSprop run was still learning at the end)
        lr = {"adam": 3e-3, "adamw": 3e-3, "rmsprop": 2e-3}.get(opt, lr_for(kind, opt, batch))
        c.append(Case(f"fam-overfit-{i:02d}-{kind}-{opt}-b{batch}", "overfitting", kind, n, batch, epochs, lr, opt,
                      weight_decay=0.0, seed=340 + i, model_kw={"width": width},
                      data_kw={"noise": 1.0} if kind == "reg" else {}))
    # diverging: an lr 100-1000x too high for each optimizer; a transformer that collapses to the prior (AdamW 0.3)
    for i, (kind, opt, lr, batch) in enumerate([
            ("mlp", "rmsprop", 0.5, 32), ("reg", "nesterov", 0.5, 64), ("gru", "adam", 1.0, 32),
            ("tfm", "adamw", 0.3, 64), ("tfm", "adam", 0.3, 16), ("bncnn", "plain_sgd", 30.0, 64),
            ("emb", "rmsprop", 3.0, 128), ("mlp", "plain_sgd", 50.0, 512), ("reg", "adam", 2.0, 8),
            ("gru", "momentum", 20.0, 64), ("mlp", "nesterov", 5.0, 4)]):
        n, epochs = sized(kind, batch, 300)
        c.append(Case(f"fam-diverge-{i:02d}-{kind}-{opt}-lr{lr:g}", "diverging", kind, n, batch, epochs, lr, opt,
                      seed=360 + i))
    # not learning: an lr far too small, frozen layers, dead ReLUs
    for i, (kind, opt, lr, fault) in enumerate([
            ("gru", "adam", 1e-7, {}), ("tfm", "rmsprop", 1e-7, {}), ("bncnn", "nesterov", 1e-6, {}),
            ("reg", "plain_sgd", 1e-6, {}), ("emb", "adam", 1e-7, {}), ("mlp", "rmsprop", 1e-7, {})]):
        n, epochs = sized(kind, 64, 300)
        c.append(Case(f"fam-stuck-{i:02d}-{kind}-{opt}", "not_learning", kind, n, 64, epochs, lr, opt, seed=380 + i,
                      fault=fault))
    for i, (kind, how, opt) in enumerate([("gru", "frozen", "adam"), ("tfm", "frozen", "rmsprop"),
                                          ("mlp", "dead_relu", "nesterov"), ("reg", "dead_relu", "adam")]):
        n, epochs = sized(kind, 64, 300)
        c.append(Case(f"fam-dead-{i:02d}-{kind}-{how}-{opt}", "dead_model", kind, n, 64, epochs,
                      lr_for(kind, opt, 64), opt, seed=390 + i, fault={"dead": how}))
    # an lr 30-100x too low: still falling steadily at the end
    for i, (kind, opt, lr) in enumerate([("mlp", "adam", 3e-5), ("reg", "rmsprop", 1e-5), ("gru", "adam", 5e-5),
                                         ("bncnn", "nesterov", 3e-4), ("tfm", "adamw", 3e-5), ("emb", "plain_sgd", 3e-3)]):
        n, epochs = sized(kind, 32, 500)
        c.append(Case(f"fam-slowlr-{i:02d}-{kind}-{opt}", "lr_too_low", kind, n, 32, epochs, lr, opt, seed=400 + i))
    # exploding and vanishing gradients
    for i, (kind, opt, fault) in enumerate([("mlp", "adam", {"grad_growth": 1.03}), ("reg", "rmsprop", {"grad_growth": 1.02}),
                                            ("gru", "adam", {"loss_scale_bug": 30}), ("mlp", "nesterov", {"loss_scale_bug": 40})]):
        n, epochs = sized(kind, 32, 300)
        c.append(Case(f"fam-explode-{i:02d}-{kind}-{opt}-{next(iter(fault))}", "exploding_gradients", kind, n, 32, epochs,
                      1e-3 if opt != "nesterov" else 1e-3, opt, seed=410 + i, clip=1.0, fault=fault))
    for i, (depth, act, opt) in enumerate([(12, "sigmoid", "adam"), (14, "sigmoid", "rmsprop"), (16, "tanh_small", "nesterov")]):
        c.append(Case(f"fam-vanish-{i:02d}-deep{depth}-{act}-{opt}", "vanishing_gradients", "deep", 2000, 32, 4,
                      1e-3 if opt != "nesterov" else 0.01, opt, seed=420 + i, model_kw={"width": 32, "depth": depth},
                      fault={"act": act}))
    # label noise 10-50%
    for i, (kind, opt, flip, batch) in enumerate([
            ("mlp", "adam", 0.1, 32), ("mlp", "nesterov", 0.3, 64), ("mlp", "adamw", 0.5, 32), ("gru", "adam", 0.2, 32),
            ("tfm", "adamw", 0.4, 64), ("emb", "rmsprop", 0.3, 16), ("bncnn", "adam", 0.25, 32),
            ("reg", "adam", 0.2, 32), ("emb", "adam", 0.5, 32), ("mlp", "rmsprop", 0.4, 128)]):
        n, epochs = sized(kind, batch, 600)
        n = min(n, 1500)
        epochs = max(epochs, 8)
        c.append(Case(f"fam-noise-{i:02d}-{kind}-{opt}-{flip}", "label_noise", kind, n, batch, epochs,
                      lr_for(kind, opt, batch), opt, seed=430 + i, fault={"flip": flip}))
    # leaks: a feature, a token, duplicated rows
    for i, (kind, opt, how) in enumerate([("mlp", "adam", "feature"), ("reg", "rmsprop", "feature"),
                                          ("gru", "adam", "token"), ("tfm", "adamw", "token"),
                                          ("mlp", "adamw", "duplicate"), ("reg", "adam", "duplicate")]):
        n, epochs = sized(kind, 32, 400)
        c.append(Case(f"fam-leak-{i:02d}-{kind}-{opt}-{how}", "suspicious_score", kind, min(n, 600) if how == "duplicate"
                      else n, 32, 20 if how == "duplicate" else epochs, lr_for(kind, opt, 32), opt, seed=450 + i,
                      weight_decay=0.0, model_kw={"width": 512} if how == "duplicate" else {}, fault={"leak": how}))
    # shapes: losses without a torch name (hand-written, a lambda), with ExampleLosses attached (as every run here)
    for i, how in enumerate(["handwritten", "lambda", "mse", "handwritten"]):
        c.append(Case(f"fam-shape-{i:02d}-{how}", "shape_mismatch", "reg", 1000, [32, 16, 8, 256][i], 4, 1e-3,
                      ["adam", "rmsprop", "nesterov", "adamw"][i], seed=470 + i, fault={"shape": how}))
    return c


def unstable_cases() -> list[Case]:
    """An lr 10-30x too high that does not blow up: the loss keeps climbing back up (towards the prior) and
    falling again, and ends well above a healthy lr's; plain SGD and the adaptive optimizers, batch 16-256. Two
    runs at a hot lr that trained smoothly all the same (their curves fall and settle: no climb back) are
    labelled healthy (`fam-hotlr-`): no family here was tuned on, and a false alarm there costs as anywhere."""
    c = []
    for i, (kind, opt, batch, lr, steps) in enumerate([
            ("mlp", "plain_sgd", 16, 1.0, 400), ("mlp", "plain_sgd", 16, 1.5, 600), ("mlp", "plain_sgd", 128, 2.0, 400),
            ("mlp", "plain_sgd", 256, 2.5, 400), ("mlp", "adam", 32, 0.06, 400), ("mlp", "adam", 16, 0.05, 600),
            ("mlp", "adam", 128, 0.15, 400), ("mlp", "rmsprop", 64, 0.03, 400), ("emb", "momentum", 32, 0.5, 400),
            ("gru", "momentum", 64, 1.0, 300), ("reg", "nesterov", 32, 0.1, 400), ("tfm", "adam", 32, 0.01, 300)]):
        n, epochs = sized(kind, batch, steps)
        smooth = i >= 10
        c.append(Case(f"fam-{'hotlr' if smooth else 'unstable'}-{i:02d}-{kind}-{opt}-b{batch}-lr{lr:g}",
                      "healthy" if smooth else "unstable", kind, n, batch, max(epochs, 8), lr, opt, seed=480 + i))
    return c


def all_cases() -> list[Case]:
    return broken_cases() + healthy_cases() + family_broken_cases() + family_healthy_cases() + unstable_cases()


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


def case_rows(case: Case):
    "(X, y, Xv, yv, truth, classes, model keywords): the case's training and valid rows, faults planted."
    kind, f = case.kind, case.fault
    (X, y), (Xv, yv), truth = data(kind, case.n, case.seed, **case.data_kw)
    classes = 10 if kind in ("cnn", "bncnn") else 3 if kind in ("emb", "gru", "tfm") else 4
    if "flip" in f:  # the same labelling process made the train and the valid labels
        y, yv = _flip(y, f["flip"], case.seed, classes), _flip(yv, f["flip"], case.seed + 1, classes)
    mkw = dict(case.model_kw)
    if f.get("act") == "sigmoid": mkw["act"] = nn.Sigmoid
    if f.get("act") == "tanh_small": mkw["act"] = nn.Tanh
    if f.get("leak") == "duplicate":  # the valid rows are copies of training rows (a join that duplicated them)
        Xv, yv = X[:len(Xv)].clone(), y[:len(Xv)].clone()
        truth = None
    if "leak" in f and kind not in ("emb", "gru", "tfm") and f["leak"] != "duplicate":
        X, Xv = _leak(X, y, 0.5 if f["leak"] == "valid_encoding" else 0.05, 1), _leak(Xv, yv, 0.05, 2)
        if f["leak"] == "valid_encoding":  # a target encoding fitted with the valid labels: noisy in train, exact in valid
            X[:, -classes:] = X[:, -classes:] + 1.2 * torch.randn(len(X), classes, generator=_gen(3))
        mkw["d"] = X.shape[1]
        truth = None
    if "leak" in f and kind in ("emb", "gru", "tfm") and f["leak"] != "duplicate":  # the class as a reserved token
        X, Xv = X.clone(), Xv.clone()
        X[:, :5], Xv[:, :5] = (47 + y)[:, None], (47 + yv)[:, None]
        truth = None
    return X, y, Xv, yv, truth, classes, mkw


def build(case: Case):
    "(model, dl_train, dl_valid, loss_fn, config, optimizer, callbacks, truth, expect) for a case."
    kind, f = case.kind, case.fault
    X, y, Xv, yv, truth, classes, mkw = case_rows(case)
    model = make_model(kind, case.seed, **mkw)
    if f.get("memory_leak"): keep_activations(next(m for m in model.modules() if isinstance(m, nn.Linear)))
    if "grad_growth" in f: _grow_gradients(next(p for p in model.parameters() if p.requires_grad), f["grad_growth"])
    if f.get("act") == "tanh_small":
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.Linear): m.weight.mul_(0.3)
    last = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]
    if f.get("dead") == "frozen":
        for p in model.parameters(): p.requires_grad_(False)
        last.bias.requires_grad_(True)
    if f.get("dead") == "dead_relu":
        with torch.no_grad(): model[0].bias.fill_(-20.0)
    expect = {}
    if "nan" in f and f["nan"] in ("div", "log", "sqrt"):
        where = {"mlp": 2, "emb": 3, "cnn": 2, "bncnn": 3, "reg": 2}[kind]
        model.insert(where, FailsFrom(f["at"], f["nan"]))
        expect["module"] = str(where)
    if f.get("nan") == "backward":  # sqrt at 0: NaN gradients, the weights go NaN at the update
        model.insert({"mlp": 2, "reg": 2, "bncnn": 3, "cnn": 2}[kind], RootFrom(f["at"]))
        expect["weights_finite"] = False
    if f.get("nan") == "input": expect["batch_finite"] = False
    if f.get("nan") == "overflow": expect["module"] = None
    loss_fn = loss_for(kind)
    if "shape" in f:  # (n, 1) outputs against (n,) targets: broadcasts to an (n, n) loss
        loss_fn = {"mse": nn.MSELoss(), "l1": nn.L1Loss(), "huber": nn.HuberLoss(),
                   "handwritten": handwritten_mse, "lambda": lambda p, y: (p - y).abs().mean()}[f["shape"]]
    if "loss_scale_bug" in f: loss_fn = ScaledUp(loss_fn, f["loss_scale_bug"])
    if f.get("nan") == "overflow": loss_fn = Overflows(loss_fn, f["at"])
    dl = tb.TensorLoader(X, y, batch_size=case.batch, shuffle=True, seed=case.seed)
    if "sleep" in f: dl = Sleepy(dl, f["sleep"])
    if "spikes" in f:
        batches = case.epochs * math.ceil(len(X) / case.batch)
        if max(f["spikes"]) > batches:  # a spike planted past the end would be a miss nobody could find
            raise ValueError(f"{case.id}: spikes planted at {f['spikes']}, but the run has {batches} batches")
        dl = BadBatches(dl, f["spikes"], regression=kind == "reg", how=f.get("how", "mixed"))
        expect["steps"] = list(f["spikes"])
    if f.get("nan") == "input": dl = BadBatches(dl, [f["at"]], how="nan")
    opt = make_optimizer(case, model)
    schedule = "constant" if case.schedule == "restarts" else case.schedule
    warm = 0.1 if schedule in ("warmup_cosine", "one_cycle") else 0
    clip = 1.0 if f.get("nan") == "backward" else case.clip
    cfg = tb.TrainConfig(epochs=case.epochs, lr=case.lr, batch_size=case.batch, accum_steps=case.accum,
                         schedule=schedule, precision=case.precision, seed=case.seed, device="cpu",
                         weight_decay=case.weight_decay, clip_norm=clip, warmup=warm)
    callbacks = [tb.ExampleLosses(tb.TensorLoader(X, y, batch_size=1024))]
    if truth is not None: callbacks.append(Truth(truth, loss_for(kind)))
    sched = make_scheduler(case, opt, case.epochs * math.ceil(len(X) / case.batch / case.accum))
    return model, dl, tb.TensorLoader(Xv, yv, batch_size=1024), loss_fn, cfg, opt, callbacks, expect, sched


def make_optimizer(case: Case, model: nn.Module):
    "The case's optimizer (None: fit's AdamW); `sgd` is momentum 0.9 (the first corpus's), `plain_sgd` none."
    params = [p for p in model.parameters() if p.requires_grad]
    wd = case.weight_decay
    if case.opt == "sgd" or case.opt == "momentum":
        return torch.optim.SGD(params, lr=case.lr, momentum=0.9, weight_decay=wd * 0.1)
    if case.opt == "plain_sgd": return torch.optim.SGD(params, lr=case.lr)
    if case.opt == "nesterov": return torch.optim.SGD(params, lr=case.lr, momentum=0.9, nesterov=True)
    if case.opt == "rmsprop": return torch.optim.RMSprop(params, lr=case.lr)
    if case.opt == "adam": return torch.optim.Adam(params, lr=case.lr)
    if case.schedule == "restarts": return torch.optim.AdamW(params, lr=case.lr, weight_decay=wd)
    return None


def make_scheduler(case: Case, opt, steps: int):
    "Warm restarts (cosine, three cycles) for `restarts`; None: the TrainConfig schedule."
    if case.schedule != "restarts" or opt is None: return None
    return torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=max(steps // 3, 1))


def _compact(history: tb.History) -> dict:
    "The history grouped by series, values to 5 significant digits (the lr is kept only where it jumps up)."
    out = {}
    lr = [v for _, _, sp, n, v in history.rows() if n == "lr"]
    keep_lr = any(b >= 1.5 * a for a, b in zip(lr, lr[1:]))  # warm restarts: the spike rule reads the jumps
    for s, e, sp, n, v in history.rows():
        if n == "lr" and not keep_lr: continue
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
    if key not in _CURVES: _CURVES[key] = history_curves(history_of(record))
    return _CURVES[key]


def run_case(case: Case) -> dict:
    "Train one case and return its JSON record."
    model, dl, dl_valid, loss_fn, cfg, opt, callbacks, expect, sched = build(case)
    t = time.perf_counter()
    refused, run = None, None
    try:
        run = tb.fit(model, dl, dl_valid, loss_fn=loss_fn, config=cfg, optimizer=opt, callbacks=callbacks, live=False,
                     scheduler=sched, scheduler_interval="step" if sched is not None else None)
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


# ---------------------------------------------------------------------------------------------------------------
# What a user sees before training: `check_data` on the rows and the audit of the train/valid split. A leak that
# lives in the rows (valid rows copied from training rows, a column that is the target) is found there, where the
# rows are; the history of a memorized duplicate looks like that of an easy valid set

AUDIT = HERE.parent / "data_audit.json"
LEAK_KINDS = {"target_leak", "duplicate_rows", "group_overlap", "time_leak"}  # the data findings that hint a leak


def rows_frame(X: torch.Tensor, y: torch.Tensor) -> "pd.DataFrame":
    "Rows as a user's frame: one column per input value (an image's pixels, a sequence's tokens), the target `y`."
    import pandas as pd
    flat = X.reshape(len(X), -1).numpy()
    df = pd.DataFrame(flat, columns=[f"x{i}" for i in range(flat.shape[1])])
    df["y"] = y.numpy()
    return df


def data_findings(case: Case) -> list[dict]:
    "The leak hints `check_data` and the split audit give on the case's rows (train then valid), as dicts."
    import pandas as pd
    X, y, Xv, yv, _, _, _ = case_rows(case)
    df = pd.concat([rows_frame(X, y), rows_frame(Xv, yv)], ignore_index=True)
    found = tb.check_data(df, target="y").findings
    splits = tb.Splits(train=np.arange(len(X)), valid=np.arange(len(X), len(df)), test=np.zeros(0, dtype=np.int64),
                       params={"target": "y"})
    found = [f for f in found if f.kind == "target_leak"] + [f for f in splits.audit(df) if f.kind in LEAK_KINDS]
    plain = (int, float, str, bool)
    return [{"kind": f.kind, "severity": f.severity, "column": f.column, "message": f.message,
             "data": {k: v for k, v in f.data.items() if isinstance(v, plain)}} for f in found]


def audits(records: list) -> dict:
    "id -> the data findings of each trained record (cached in bench/corpus/data_audit.json; missing ones made)."
    cached = json.loads(AUDIT.read_text()) if AUDIT.exists() else {}
    fields = {f.name for f in dataclasses.fields(Case)}
    missing = [r for r in records if r["id"] not in cached and not r["id"].startswith("syn-")]
    for r in missing:
        cached[r["id"]] = data_findings(Case(**{k: v for k, v in r["case"].items() if k in fields}))
    if missing: AUDIT.write_text(json.dumps(cached, indent=0, sort_keys=True))
    return cached


# ---------------------------------------------------------------------------------------------------------------
# Long runs (10,000-50,000 steps) as a fast synthetic loop: a batch's loss is the mean of `batch` per-example
# losses drawn from a heavy-tailed (gamma, shape 0.5) distribution whose mean follows a learning curve; the
# evaluations see the same curve (plus their own sampling noise); faults are planted in the curve


def synthetic_cases() -> list[dict]:
    "The synthetic runs: label, batch, steps, seed and the planted fault."
    out, i = [], 0
    for steps in (10_000, 20_000, 50_000):
        for batch in (4, 16, 128, 1024):
            for label in ("healthy", "healthy", "loss_spikes", "overfitting", "diverging", "not_learning"):
                if steps == 50_000 and label == "healthy" and batch in (128, 1024) and i % 2: label = "loss_spikes"
                out.append({"id": f"syn-{i:03d}-{label}-b{batch}-s{steps}", "label": label, "batch": batch,
                            "steps": steps, "seed": 600 + i})
                i += 1
    return out


def synthetic_record(spec: dict) -> dict:
    "One synthetic run's record (the same format as a trained one's)."
    rng = np.random.default_rng(spec["seed"])
    n, batch, label = spec["steps"], spec["batch"], spec["label"]
    per_epoch = max(n // int(rng.choice([20, 40, 80])), 1)
    t = np.arange(1, n + 1)
    prior = float(rng.uniform(0.7, 2.3))
    floor = prior * float(rng.uniform(0.05, 0.4))
    tau = n * float(rng.uniform(0.03, 0.2))
    mean = floor + (prior - floor) * np.exp(-t / tau)
    valid_mean = mean * float(rng.uniform(1.0, 1.15))
    expect = {}
    if label == "not_learning":
        mean = prior * (1 + 0.002 * np.exp(-t / tau))
        valid_mean = mean.copy()
    if label == "overfitting":  # the valid loss turns up after an onset while the training loss keeps falling
        onset = int(n * rng.uniform(0.3, 0.6))
        valid_mean = valid_mean + (prior * float(rng.uniform(0.15, 0.5))) * np.clip((t - onset) / (n - onset), 0, None)
    if label == "diverging":  # the lr schedule's peak throws it off: the loss climbs to 3-10x the prior
        at = int(n * rng.uniform(0.2, 0.6))
        grow = np.clip((t - at) / (0.05 * n), 0, 1)
        mean = mean + grow * prior * float(rng.uniform(3, 10))
        valid_mean = valid_mean + grow * prior * float(rng.uniform(3, 10))
    shape = 0.5  # per-example losses: gamma(0.5), sd = mean × √2
    if batch < 32:
        draws = rng.gamma(shape, 1.0 / shape, size=(n, batch)).mean(1)
    else:
        draws = 1 + rng.standard_normal(n) * math.sqrt(1 / shape / batch)
    loss = mean * draws
    if label == "loss_spikes":
        at = sorted(int(a) for a in rng.choice(np.arange(n // 10, n - 10), size=int(rng.integers(1, 4)), replace=False))
        for a in at: loss[a - 1] = mean[a - 1] + prior * float(rng.uniform(3, 8))
        expect["steps"] = at
    hist = {"train/loss": {"step": t.tolist(), "epoch": ((t - 1) // per_epoch).tolist(),
                           "value": [float(f"{v:.5g}") for v in loss]}}
    ends = list(range(per_epoch, n + 1, per_epoch))
    rows_valid = 500
    cols = {k: {"step": [], "epoch": [], "value": []} for k in (
        "train/epoch_loss", "train/samples_per_s", "train/step_time", "valid/loss", "valid/loss_se",
        "valid/loss_sd", "valid/prior_loss")}
    truth = []
    for e, s in enumerate(ends):
        m = float(valid_mean[s - 1])
        sd = m * math.sqrt(1 / shape)
        vals = {"train/epoch_loss": float(loss[s - per_epoch:s].mean()), "train/samples_per_s": batch / 1e-3,
                "train/step_time": 1e-3, "valid/loss": m + sd / math.sqrt(rows_valid) * float(rng.standard_normal()),
                "valid/loss_se": sd / math.sqrt(rows_valid), "valid/loss_sd": sd, "valid/prior_loss": prior}
        for k, v in vals.items():
            cols[k]["step"].append(s)
            cols[k]["epoch"].append(e)
            cols[k]["value"].append(float(f"{v:.5g}"))
        truth.append(round(m, 6))
    hist.update(cols)
    g_steps = t[9::10]
    g = np.exp(rng.normal(0, 0.3, len(g_steps))) * float(rng.uniform(0.5, 3))
    hist["train/grad_norm"] = {"step": g_steps.tolist(), "epoch": ((g_steps - 1) // per_epoch).tolist(),
                               "value": [float(f"{v:.4g}") for v in g]}
    case = {**spec, "kind": "synthetic", "opt": "synthetic", "n": per_epoch * batch, "epochs": len(ends),
            "accum": 1, "fault": {}, "lr": 0.0,
            "family": f"synthetic×curve×none×{band(batch, [8, 64, 256], ['b4-8', 'b16-64', 'b128-256', 'b512+'])}"
                      f"×vlong×{label}"}
    # the valid curve's shape in evaluations (evaluation i is at step per_epoch·(i + 1)): the fall's time
    # constant and where the rise starts, for the oracle of `onset_study`
    curve = {"tau_evaluations": tau / per_epoch,
             "rise_from": onset / per_epoch - 1 if label == "overfitting" else None}
    return {"id": spec["id"], "label": label, "case": case, "expect": expect, "seconds": 0.0, "refused": None,
            "truth_valid_loss": truth, "stopped": "completed", "run_findings": [], "history": hist,
            "curve": curve}


def generate_synthetic(force: bool):
    "Write the synthetic runs as gzipped JSON (a 50,000-step history is ~0.3 MB that way)."
    import gzip
    HERE.mkdir(parents=True, exist_ok=True)
    for spec in synthetic_cases():
        path = HERE / f"{spec['id']}.json.gz"
        if path.exists() and not force: continue
        record = synthetic_record(spec)
        path.write_bytes(gzip.compress(json.dumps(record, separators=(",", ":")).encode(), mtime=0))
        print(f"{spec['id']:48s} {sorted({f.kind for f in findings_of(record, tb.Thresholds())})}", flush=True)


DIAGNOSE_KINDS = {"diverging", "not_learning", "lr_too_low", "loss_spikes", "unstable", "overfitting", "exploding_gradients",
                  "vanishing_gradients", "slow_input_pipeline", "memory_growth", "label_noise", "suspicious_score",
                  "frozen_validation"}


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
    "shape_mismatch": {"shape_mismatch"}, "label_noise": {"label_noise"},
    "suspicious_score": {"suspicious_score", "target_leak", "duplicate_rows"},  # from the history, or the rows
    "memory_growth": {"memory_growth"}, "unstable": {"unstable"}, "healthy": set()}
ALSO_TRUE = {  # other findings that are true of such a run, not counted as false positives
    "diverging": {"exploding_gradients", "loss_spikes", "not_learning", "vanishing_gradients"},
    "dead_model": {"vanishing_gradients"}, "vanishing_gradients": {"not_learning", "lr_too_low"},
    "exploding_gradients": {"diverging", "loss_spikes", "vanishing_gradients"}, "label_noise": {"overfitting"},
    "shape_mismatch": {"not_learning", "lr_too_low"}, "not_learning": {"lr_too_low"}, "overfitting": {"label_noise"},
    # a blow-up, repeated spikes, growing gradients: an lr too high too (a run that blew up is diverging's to name:
    # counted a miss here, so the tuning gains nothing by calling an unstable run diverging)
    "unstable": {"diverging", "loss_spikes", "exploding_gradients", "vanishing_gradients"}}


def ok_kinds(record: dict) -> set:
    "The kinds that are true of a run: its label's, those `ALSO_TRUE` of it, and what its model makes true."
    ok = EXPECT[record["label"]] | ALSO_TRUE.get(record["label"], set())
    if record["case"].get("kind") == "bncnn": ok = ok | {"structural_zero_gradients"}  # conv biases before BN
    return ok


def findings_of(record: dict, th) -> list:
    "What trainbook says about a stored run under thresholds `th`: the loop's own findings plus `diagnose`."
    if record["refused"] is not None:
        kind = "shape_mismatch" if "shape" in record["refused"] else "refused"
        return [tb.Finding(kind, "error", record["refused"])]
    loop = [tb.Finding(f["kind"], f["severity"], "", data=f["data"]) for f in record["run_findings"]]
    rows = [tb.Finding(d["kind"], d["severity"], d["message"], column=d["column"], data=d["data"])
            for d in audit_of(record)]  # what check_data and the split audit said before training
    return rows + loop + judged(record, th)  # judged: what tb.diagnose(history_of(record), th) returns


_AUDITS = None


def audit_of(record: dict) -> list:
    "The record's stored data findings (bench/corpus/data_audit.json; `table` makes the missing ones)."
    global _AUDITS
    if _AUDITS is None: _AUDITS = json.loads(AUDIT.read_text()) if AUDIT.exists() else {}
    return _AUDITS.get(record["id"], [])


RULE_FIELDS = {  # the thresholds each rule reads: a rule's findings are cached per record and these values
    "_loss_trend": ("min_steps", "diverge_peak", "diverge_end", "diverge_z", "blowup", "blowup_z", "still", "slow",
                    "fall_z", "fall_keep", "prior_z"),
    "_spikes": ("min_steps", "spike_z", "spike_rel", "spike_gap", "spike_share"),
    "unstable_finding": ("min_steps", "unstable_z", "unstable_rise"),
    "_overfitting": ("overfit_tol", "overfit_after", "overfit_rise", "overfit_z", "overfit_se", "overfit_t",
                     "overfit_trend"),
    "_gradients": ("explode", "explode_late", "vanish", "diverge_peak"),
    "_input_pipeline": ("data_wait",), "_memory": ("memory_rise", "memory_mb"),
    "_label_noise": ("noise_wrong", "noise_focus", "noise_learned", "noise_stuck", "noise_share", "noise_fit",
                     "noise_gap_z"),
    "_suspicious_score": ("leak_first", "leak_ratio"), "_frozen_validation": ("frozen_evals", "fall_z"),
    "data_order_finding": ("order_rho", "order_z")}
_RULE_CACHE = {}


def judged(record: dict, th) -> list:
    "`_judge` of the record's curves, each rule's findings cached by the values of the thresholds it reads."
    c = curves_of(record)
    found = []
    for rule in RULES:
        key = (record["id"], rule.__name__, tuple(getattr(th, f) for f in RULE_FIELDS[rule.__name__]))
        if key not in _RULE_CACHE: _RULE_CACHE[key] = rule(c, th)
        found += _RULE_CACHE[key]
    return _screen(found)  # as _judge


def family(record: dict) -> str:
    "The record's family (see `family_of`)."
    case = record["case"]
    if case.get("family"): return case["family"]
    fields = {f.name for f in dataclasses.fields(Case)}
    return family_of(Case(**{k: v for k, v in case.items() if k in fields}))


def right(record: dict, found: list) -> bool:
    "Whether the findings name the run's label (and, where the label says where, name the place)."
    hits = [f for f in found if f.kind in EXPECT[record["label"]]]
    if not hits: return False
    if record["label"] == "nonfinite":  # the finding names the cause planted: a module, the data, the weights
        want = record["expect"]
        return any(all(f.data.get(k) == v for k, v in want.items()) for f in hits)
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
    rise = loss - rolling_median(loss, 10)[0]  # above the median of the ±10 steps around
    near = np.array([any(abs(s - p) <= 2 for p in planted) for s in steps])
    clean = ~near & (np.arange(len(loss)) >= 10)  # the first steps fall fast: no neighbourhood to rise from
    lowest = min(float(rise[np.argmin(np.abs(steps - p))]) for p in planted)
    return lowest / max(float(np.max(rise[clean])), 1e-12)


def truth_climb(record: dict) -> Optional[float]:
    "An unstable run's truth curve's largest climb back above its running low, as a share of its fall from the prior."
    t = np.array(record.get("truth_valid_loss") or [])
    prior = record["history"].get("valid/prior_loss")
    if record["label"] != "unstable" or len(t) < 3 or not prior: return None
    low = np.minimum.accumulate(t)
    return float(np.max((t - low) / np.maximum(float(prior["value"][-1]) - low, 1e-12)))


def truth_keeps_falling(record: dict) -> Optional[bool]:
    "Whether the truth curve's later half of epochs fell at least half as fast per epoch as its first half."
    t = record.get("truth_valid_loss")
    if not t or len(t) < 3: return None
    mid = len(t) // 2
    early, late = (t[0] - t[mid]) / mid, (t[mid] - t[-1]) / (len(t) - 1 - mid)
    return early > 0 and late >= 0.5 * early


def score(records: list, th, found_by: Optional[dict] = None) -> dict:
    "Per kind: runs, hits, reports, false reports; healthy warnings; onset errors (`found_by`: id → findings)."
    per_label, reported, false_reports, healthy_alarms, onset = {}, {}, {}, [], []
    for r in records:
        found = found_by[r["id"]] if found_by is not None else findings_of(r, th)
        label = r["label"]
        if label == "healthy":
            healthy_alarms += [(r["id"], f.kind) for f in found if f.severity != "info"]
        else:
            n, hit = per_label.get(label, (0, 0))
            per_label[label] = (n + 1, hit + right(r, found))
        ok = ok_kinds(r)
        for kind, severity in {(f.kind, f.severity) for f in found}:
            reported[kind] = reported.get(kind, 0) + 1
            if kind not in ok: false_reports.setdefault(kind, []).append((r["id"], severity))
        over = next((f for f in found if f.kind == "overfitting"), None)
        if label == "overfitting" and over is not None and true_onset(r) is not None:
            onset.append((r["id"], over.data["onset_epoch"] - true_onset(r)))
    return {"per_label": per_label, "reported": reported, "false": false_reports, "healthy": healthy_alarms,
            "onset": onset}


def first_corpus(record: dict) -> bool:
    "Whether a record is one of the first corpus's 132 runs (the families the first thresholds were tuned on)."
    return not record["id"].startswith(("fam-", "syn-"))


def load() -> list:
    "Every stored record: the trained runs (JSON) and the synthetic ones (gzipped JSON)."
    import gzip
    plain = [json.loads(p.read_text()) for p in sorted(HERE.glob("*.json"))]
    return plain + [json.loads(gzip.decompress(p.read_bytes())) for p in sorted(HERE.glob("*.json.gz"))]


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


TUNED.update({"overfit_se": [0.25, 0.5, 1, 1.5, 2, 3], "overfit_t": [2, 3, 4, 6, 8, 12],
              "overfit_trend": [3, 4, 6, 8, 12, 20, 50],
              "prior_z": [1, 2, 3, 4, 6], "noise_wrong": [0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1],
              "noise_focus": [0.5, 0.6, 0.75, 0.9, 1.0], "noise_learned": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
              "noise_stuck": [0.01, 0.02, 0.03, 0.05, 0.07, 0.1], "noise_gap_z": [1, 1.5, 2, 3, 4, 6],
              "unstable_rise": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7]})
LOFO_TUNED = {k: TUNED[k] for k in (  # the thresholds re-tuned in each leave-one-family-out fold (one pass)
    "still", "blowup_z", "spike_z", "spike_gap", "overfit_z", "overfit_se", "overfit_t", "overfit_trend", "prior_z",
    "explode",
    "vanish", "noise_wrong", "noise_focus", "noise_learned", "noise_stuck", "noise_gap_z", "leak_ratio",
    "unstable_rise")}


def tune(records: list, start, grids: Optional[dict] = None, passes: int = 2) -> tuple:
    "Coordinate descent over the grids; within a grid, the middle of the cheapest stretch (the widest margin)."
    th = start
    for _ in range(passes):
        for name, grid in (grids or TUNED).items():
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


def record_cost(r: dict, found: list) -> float:
    "One run's share of `cost`: 100 a healthy warning, 10 a false warning/error, 1 a false info hint or a miss."
    label = r["label"]
    if label == "healthy": alarms = sum(f.severity != "info" for f in found)
    else: alarms = 0
    ok = ok_kinds(r)
    false = [sev for kind, sev in {(f.kind, f.severity) for f in found} if kind not in ok]
    miss = 0 if label == "healthy" else int(not right(r, found))
    return 100 * alarms + 10 * sum(sev != "info" for sev in false) + sum(sev == "info" for sev in false) + miss


_COSTS = {}


def cost_vector(records: list, th) -> np.ndarray:
    "Every run's `record_cost` under `th` (cached by the thresholds' values: folds revisit the same ones)."
    key = (id(records), tuple(getattr(th, f.name) for f in dataclasses.fields(th)))
    if key not in _COSTS: _COSTS[key] = np.array([record_cost(r, findings_of(r, th)) for r in records])
    return _COSTS[key]


def tune_without(records: list, held: np.ndarray, start, grids: dict) -> tuple:
    "`tune` (one pass) on the runs not `held` (a boolean mask): the same choice rule, costs summed by mask."
    th = start
    keep = ~held
    for name, grid in grids.items():
        raw = [float(cost_vector(records, dataclasses.replace(th, **{name: v}))[keep].sum()) for v in grid]
        padded = [max(raw)] + raw + [max(raw)]
        costs = [raw[i] + 0.5 * (padded[i] + padded[i + 2]) for i in range(len(raw))]
        best = min(costs)
        run = max(_runs([i for i, c in enumerate(costs) if c == best]), key=len)
        th = dataclasses.replace(th, **{name: grid[run[len(run) // 2]]})
    return th


def leave_one_family_out(records: list) -> tuple[dict, dict]:
    "Each family's findings under thresholds tuned on every other family: (id → findings, family → thresholds)."
    names = np.array([family(r) for r in records])
    found_by, chosen = {}, {}
    for name in sorted(set(names.tolist())):
        held = names == name
        th = tune_without(records, held, tb.Thresholds(), LOFO_TUNED)
        chosen[name] = th
        for r in np.array(records, dtype=object)[held]: found_by[r["id"]] = findings_of(r, th)
    return found_by, chosen


def lofo_table(records: list, found_by: dict, title: str) -> str:
    "Per-kind recall and precision of held-out findings, the healthy false alarms and the onset errors."
    s = score(records, None, found_by)
    healthy = [r for r in records if r["label"] == "healthy"]
    lines = [f"**{title}** ({len(records)} runs in {len({family(r) for r in records})} families: "
             f"{len(healthy)} healthy)", "",
             "| label | runs | recall | kind | reported | false reports | precision |", "|---|---|---|---|---|---|---|"]
    hits = runs = 0
    for label in sorted(s["per_label"]):
        n, hit = s["per_label"][label]
        hits, runs = hits + hit, runs + n
        kind = sorted(EXPECT[label])[0] if len(EXPECT[label]) == 1 else "/".join(sorted(EXPECT[label]))
        rep = sum(s["reported"].get(k, 0) for k in EXPECT[label])
        false = sum(len(s["false"].get(k, [])) for k in EXPECT[label])
        prec = f"{(rep - false) / rep:.2f}" if rep else "—"
        lines.append(f"| {label} | {n} | {hit / n:.2f} ({hit}/{n}) | {kind} | {rep} | {false} | {prec} |")
    alarmed = sorted({r for r, _ in s["healthy"]})
    lines += ["", f"Overall recall: {hits / max(runs, 1):.2f} ({hits}/{runs}). Healthy runs with a warning/error: "
              f"{len(alarmed)} of {len(healthy)} ({20 * len(alarmed) / max(len(healthy), 1):.2f} per 20)"
              + (f" — {s['healthy']}" if s["healthy"] else "")]
    if s["false"]: lines.append(f"False reports (kind: runs): {s['false']}")
    if s["onset"]:
        errs = [e for _, e in s["onset"]]
        lines.append(f"Overfitting onset error (epochs, detected − truth) on {len(errs)} runs with a truth curve: "
                     f"mean {np.mean(errs):+.2f}, mean |error| {np.mean(np.abs(errs)):.2f}, within ±1: "
                     f"{sum(abs(e) <= 1 for e in errs)}/{len(errs)}")
    missed = [r["id"] for r in records if r["label"] != "healthy" and not right(r, found_by[r["id"]])]
    lines.append(f"Missed: {missed or 'none'}")
    # the labels against the truth curve (4,000 held-out rows): a healthy run that overfits or never beats
    # the constant predictor, an overfitting run whose truth does not rise, are questionable labels
    overfit = [r["id"] for r in healthy if truth_rise(r) > 0.05]
    unlearned = [r["id"] for r in healthy if r.get("truth_valid_loss") and "valid/prior_loss" in r["history"]
                 and r["truth_valid_loss"][-1] > 0.98 * float(r["history"]["valid/prior_loss"]["value"][-1])]
    flat = [r["id"] for r in records if r["label"] == "overfitting" and r.get("truth_valid_loss")
            and truth_rise(r) < 0.05]
    lines.append(f"Label check on the truth curves: healthy runs that overfit {overfit or 'none'}; healthy runs "
                 f"within 2% of the constant predictor at the end {unlearned or 'none'}; overfitting runs whose "
                 f"truth does not rise 5% {flat or 'none'}; unstable runs whose truth never climbs back a quarter "
                 f"of its fall from the constant predictor's loss {[r['id'] for r in records if truth_climb(r) is not None and truth_climb(r) < 0.25] or 'none'}")
    return "\n".join(lines)


LOFO_ABOUT = """A family is data set × model kind × optimizer × batch-size band × length band × fault recipe
(`family_of`). For each family in turn, the thresholds in `LOFO_TUNED` are tuned on every other family (one pass
of coordinate descent; a healthy run's warning costs 100, a false warning 10, a miss 1) and the left-out family
is judged with them; the table counts those held-out verdicts. A broken run counts as found when a finding of its
label's kind is reported (a NaN must name the planted cause: the module, the data or the weights; spikes every
planted step within 2 steps; a leak may also be named before training, by `check_data`'s `target_leak` or the
split audit's `duplicate_rows`, run on each case's rows and cached in bench/corpus/data_audit.json — on a healthy
run such a finding is a false alarm like any other). The overfitting truth is the epoch after the minimum of the
loss on a 4000-row held-out set the diagnosis never sees (synthetic runs: the noiseless curve)."""


def show_table(write: bool):
    "Tune on one half, print the table of the other half and of all runs; with `write`, also as markdown."
    records = load()
    if not records: sys.exit(f"no runs cached under {HERE}: run `python bench/corpus.py generate` first")
    global _AUDITS
    _AUDITS = audits(records)  # check_data and the split audit on each trained case's rows (made once, cached)
    t0 = time.perf_counter()
    found_by, _ = leave_one_family_out(records)
    held_out = lofo_table(records, found_by, "Leave-one-family-out: each family judged with thresholds tuned on "
                                             "all the others (the honest estimate)")
    fitted = tune_without(records, np.zeros(len(records), dtype=bool), tb.Thresholds(), LOFO_TUNED)
    default = tb.Thresholds()
    changed = {k: (getattr(default, k), getattr(fitted, k)) for k in LOFO_TUNED
               if getattr(default, k) != getattr(fitted, k)}
    tuned_all = ("Thresholds tuned on all runs (what the library's defaults should be): "
                 + ", ".join(f"`{k}={getattr(fitted, k)}`" for k in LOFO_TUNED)
                 + f". Library defaults that differ: {changed or 'none'}")
    defaults = {r["id"]: findings_of(r, default) for r in records}
    in_sample = tuned_all + "\n\n" + lofo_table(records, defaults,
                                                 "All runs, the library's default thresholds (in-sample)")
    print(held_out, "\n\n", in_sample, f"\n\n(table in {time.perf_counter() - t0:.0f}s)", flush=True)
    if write:
        out = HERE.parent / "RESULTS-diagnostics.md"
        out.write_text("## Diagnostics on runs nobody tuned them on: leave-one-family-out\n\n"
                       "`python bench/corpus.py generate` (seeded CPU runs of `fit`, cached as JSON in "
                       "bench/corpus/runs/, and synthetic long runs as gzipped JSON), then "
                       "`python bench/corpus.py table --write`.\n\n" + LOFO_ABOUT + "\n\n" + held_out
                       + "\n\n" + in_sample + "\n")
        print(f"written to {out}")
    return
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


# ---------------------------------------------------------------------------------------------------------------
# The overfitting onset: where the valid loss turned, by several estimators, on the corpus and on fresh draws of
# the synthetic runs (the same generator, other seeds: a flat noisy bottom's error is mostly its noise, so 12
# synthetic runs are too few to tell two estimators apart)


def _bottom(v: np.ndarray) -> tuple[int, int]:
    "The smoothed curve's lowest evaluation and the smoothing half width (what `_overfitting` starts from)."
    return int(np.argmin(smooth_evaluations(v))), smoothing_half(len(v))


def _window_low(v, se, data):
    "Two rounds ago: the lowest evaluation within a smoothing half width of the smoothed bottom."
    bottom, half = _bottom(v)
    lo = max(0, bottom - half)
    return lo + int(np.argmin(v[lo:bottom + half + 1]))


def _stretch_centre(noise_of):
    "The centre of the contiguous evaluations within one noise of the lowest (`_window_low`)."
    def estimate(v, se, data):
        best = _window_low(v, se, data)
        noise = noise_of(v, se, data)
        first = last = best
        while first > 0 and v[first - 1] <= v[best] + noise[first - 1]: first -= 1
        while last < len(v) - 1 and v[last + 1] <= v[best] + noise[last + 1]: last += 1
        return (first + last) // 2
    return estimate


def _se_or_wiggle(v, se, data):
    return se if se is not None else np.full(len(v), data["wiggle"])


def _hinge(smooth: bool, reach: Optional[int]):
    "The break of a continuous two-segment line fitted by 1/SE² least squares (free slopes)."
    def estimate(v, se, data):
        n = len(v)
        bottom, half = _bottom(v)
        lo, hi = 0, n - 1
        if reach is not None: lo, hi = max(0, bottom - reach * half), min(n - 1, bottom + reach * half)
        if hi - lo < 4: return _window_low(v, se, data)
        y = smooth_evaluations(v) if smooth else v
        w = 1 / _se_or_wiggle(v, se, data) ** 2
        x = np.arange(n, dtype=float)[lo:hi + 1]
        root = np.sqrt(w[lo:hi + 1])
        best = (math.inf, lo)
        for k in np.arange(lo + 1, hi - 1 + 1e-9, 0.5):
            a = np.stack([np.ones(len(x)), np.minimum(x - k, 0), np.maximum(x - k, 0)], 1) * root[:, None]
            coef = np.linalg.lstsq(a, y[lo:hi + 1] * root, rcond=None)[0]
            rss = float(np.sum((a @ coef - y[lo:hi + 1] * root) ** 2))
            if rss < best[0]: best = (rss, k)
        return int(round(best[1]))
    return estimate


def _convex(v, se, data):
    "Before this round (the library's from 6a1eff0): the low of a convex fit over ±2 smoothing windows."
    smooth = smooth_evaluations(v)
    return convex_low(v, se, smooth, int(np.argmin(smooth)), smoothing_half(len(v)))[0]


def _weights(v, se, data):
    return 1 / _se_or_wiggle(v, se, data) ** 2


def _global_fit(powers):
    "Idea 1 on every run: the low of a + b·exp(-e/τ) + c·max(0, e - e0)^p, all evaluations, best `powers`."
    def estimate(v, se, data):
        fits = [fall_and_rise(v, _weights(v, se, data), power=p) for p in powers]
        return int(np.argmin(min(fits, key=lambda f: f[3])[0]))
    return estimate


def _oracle(knot: bool):
    "Idea 2, a bound: the fall-and-rise fit given the generator's own τ (and where its rise starts)."
    def estimate(v, se, data):
        curve = _CURVE.get(data["id"])
        if curve is None: return None  # a trained run: no generator
        knots = None if not knot else [curve["rise_from"]]
        fit = fall_and_rise(v, _weights(v, se, data), taus=[curve["tau_evaluations"]], knots=knots)[0]
        return int(np.argmin(fit))
    return estimate


ONSET_ESTIMATORS = {  # name -> (valid losses, their SEs or None, the finding's data) -> the best evaluation
    "library: a fall-and-rise fit where its residuals scatter as independent draws of their SEs, "
    "else the convex fit": None,  # what diagnose reports
    "before: low of a convex fit (1/SE²) over ±2 smoothing windows": _convex,
    "older: lowest evaluation within ±1 half window of the smoothed bottom": _window_low,
    "fall-and-rise fit a + b·exp(-e/τ) + c·max(0, e - e0), 1/SE², all evaluations, on every run":
        _global_fit([1]),
    "... with the rise's power p in {0.5, 1, 2} (the best fit of the three), on every run":
        _global_fit([0.5, 1, 2]),
    "oracle: the fall-and-rise fit given the generator's τ (synthetic runs only)": _oracle(False),
    "oracle: ... given its τ and where its rise starts (a, b, c fitted)": _oracle(True),
    "centre of the evaluations within 1 SE of the lowest": _stretch_centre(_se_or_wiggle),
    "hinge of the evaluations within ±3 smoothing windows": _hinge(False, 3),
}


def _overfit_runs(records: list) -> list:
    "(id, epochs, valid losses, SEs, finding data, true onset) of each overfitting run diagnose finds."
    out = []
    for r in records:
        if r["label"] != "overfitting" or true_onset(r) is None: continue
        c = curves_of(r)
        found = _overfitting(c, tb.Thresholds())
        if not found: continue
        _, ve, v = c[("valid", "loss")]
        out.append((r["id"], ve, v, valid_noise(c), found[0].data, true_onset(r)))
        _TRUTH[r["id"]] = np.array(r["truth_valid_loss"])
        if r["case"]["kind"] == "synthetic":  # a stored run made before the record kept its curve: made again
            _CURVE[r["id"]] = r.get("curve") or synthetic_record(
                next(x for x in synthetic_cases() if x["id"] == r["id"]))["curve"]
    return out


_TRUTH = {}  # id -> the truth curve of the runs `_overfit_runs` returned
_CURVE = {}  # id -> the generator's curve (`synthetic_record`) of the synthetic ones


def onset_study(seeds: int = 15) -> str:
    "Each onset estimator's error on the corpus's overfitting runs and on `seeds` fresh synthetic draws a setting."
    corpus_runs = _overfit_runs(load())
    fresh = []
    for steps in (10_000, 20_000, 50_000):
        for batch in (4, 16, 128, 1024):
            for s in range(seeds):
                spec = {"id": f"onset-{steps}-{batch}-{s}", "label": "overfitting", "batch": batch,
                        "steps": steps, "seed": 10_000 + 7 * s + batch + steps}
                fresh.append(synthetic_record(spec))
    fresh_runs = _overfit_runs(fresh)
    groups = {"trained runs of the corpus": [x for x in corpus_runs if not x[0].startswith("syn-")],
              "synthetic runs of the corpus": [x for x in corpus_runs if x[0].startswith("syn-")],
              "all runs of the corpus": corpus_runs, f"fresh synthetic draws ({seeds} per setting)": fresh_runs}
    errors_of = {}
    lines = ["| estimator | " + " | ".join(f"{g} ({len(x)})" for g, x in groups.items()) + " |",
             "|---|" + "---|" * len(groups)]
    for name, estimate in ONSET_ESTIMATORS.items():
        cells = []
        for runs in groups.values():
            errors = []
            for rid, ve, v, se, data, truth in runs:
                if estimate is None: onset = data["onset_epoch"]
                else:
                    best = estimate(v, se, {**data, "id": rid})
                    if best is None: continue
                    onset = int(ve[min(best, len(v) - 2) + 1])
                errors.append(onset - truth)
            e = np.array(errors)
            errors_of[(name, len(cells))] = np.abs(e)
            cells.append(f"{np.mean(np.abs(e)):.2f} ({np.mean(e):+.2f}; ±1: {np.mean(np.abs(e) <= 1):.0%})"
                         if len(e) == len(runs) else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    # run by run, the library's estimator against the one before it, on each set
    names = list(ONSET_ESTIMATORS)
    paired = [f"{g} {int(np.sum(errors_of[(names[0], i)] < errors_of[(names[1], i)]))} closer, "
              f"{int(np.sum(errors_of[(names[0], i)] > errors_of[(names[1], i)]))} farther"
              for i, g in enumerate(groups)]
    lines += ["", "Run by run, the library's onset against the one before: " + "; ".join(paired)]
    # how often the library's flat stretch (best_range) holds the truth's best epoch, and how wide it is
    inside = {g: [d["best_range"][0] <= truth - 1 <= d["best_range"][1] for *_, d, truth in runs]
              for g, runs in groups.items()}
    width = {g: [d["best_range"][1] - d["best_range"][0] + 1 for *_, d, _ in runs] for g, runs in groups.items()}
    lines += ["", "The truth's best epoch inside the library's best_range (the stretch flat within noise; its mean "
              "width in evaluations): " + "; ".join(f"{g} {sum(inside[g])} of {len(inside[g])} "
                                                   f"({np.mean(width[g]):.1f} wide)" for g in groups)]
    # which fit placed the library's onsets, and what the fall-and-rise fit costs at its cap of evaluations
    used = {g: sum(d.get("onset_fit") == "fall_and_rise" for *_, d, _ in runs) for g, runs in groups.items()}
    lines += ["", "The library's onset from the fall-and-rise fit (the others: the convex fit): "
              + "; ".join(f"{g} {used[g]} of {len(groups[g])}" for g in groups)]
    rng = np.random.default_rng(0)
    x = np.arange(400)
    v = 1 + np.exp(-x / 40) + 0.002 * np.maximum(x - 200, 0) + 0.01 * rng.standard_normal(400)
    t = time.process_time()
    fall_and_rise(v, np.full(400, 1e4))
    ms = 1e3 * (time.process_time() - t)
    # and the whole diagnosis of a long run that overfits (the fit runs only when overfitting is found)
    long = synthetic_record({"id": "onset-cost", "label": "overfitting", "batch": 128, "steps": 200_000, "seed": 5})
    h = history_of(long)
    t = time.process_time()
    found = tb.diagnose(h)
    cpu = time.process_time() - t
    over = [f.data["onset_fit"] for f in found if f.kind == "overfitting"]
    lines += ["", f"The fall-and-rise fit on 400 evaluations (its cap): {ms:.0f} CPU-ms; diagnose on a synthetic "
              f"200,000-step run that overfits ({long['case']['epochs']} evaluations): {cpu:.2f} CPU-s, "
              f"onset by {over}"]
    # what a misplaced onset costs: the truth loss at the reported best epoch above the truth's own minimum
    cost = {g: [float(_TRUTH[i][d["best_epoch"]] / _TRUTH[i].min() - 1) for i, _, _, _, d, _ in runs]
            for g, runs in groups.items()}
    lines += ["", "The truth loss at the library's best epoch above the truth's minimum (mean, max): "
              + "; ".join(f"{g} {100 * np.mean(c):.2f}%, {100 * np.max(c):.2f}%" for g, c in cost.items())]
    return ("Onset mean |error| in epochs (mean error; share within ±1), the runs diagnose finds with the "
            "library's thresholds:\n\n" + "\n".join(lines))


def main():
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # the shape-broadcast cases warn on every step
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["generate", "table", "list", "onset"])
    ap.add_argument("--only", default=None, help="generate only the cases whose id contains this")
    ap.add_argument("--force", action="store_true", help="re-train cases already cached")
    ap.add_argument("--write", action="store_true", help="table: also write bench/corpus/RESULTS-diagnostics.md")
    a = ap.parse_args()
    if a.what == "generate":
        generate(a.only, a.force)
        if a.only is None or "syn-" in a.only: generate_synthetic(a.force)
    elif a.what == "list":
        for c in all_cases(): print(f"{c.id:48s} {c.label}")
    elif a.what == "onset": print(onset_study())
    else: show_table(a.write)


if __name__ == "__main__":
    main()
