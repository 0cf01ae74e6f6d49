"""How often `overfit_batch` judges right: a corpus of set-ups that should pass (healthy models that can
memorize one batch) and that should fail (planted faults), split into DEV families (used to design the rule) and
HELD-OUT families (run once at the end), with a few seeds each. Prints the confusion matrix (should pass / should
fail against PASSED / UNCERTAIN / FAILED, a refusal to run counting as FAILED) per split, for the current rule
and, with --old, for an older `trainbook/sanity.py` loaded from a file (e.g. `git show REV:trainbook/sanity.py`),
then every set-up either rule misjudged.

Families (a set-up is HELD-OUT when any of its three is):
  model kind   dev: linear (logistic/linear regression), mlp, mlp_dropout      held-out: cnn, mlp_bn
  loss kind    dev: ce (class indices), mse                                     held-out: bce (multi-label), l1
  batch band   dev: small (4, 8), mid (16, 32)                                  held-out: large (48, 64)
Faults (should fail): labels reshuffled every step, a frozen model, a detached output, dead ReLUs, lr=1e-7,
an output that ignores the input, a softmax/sigmoid before a logits loss, MSE on class indices, a 1-output head
with cross-entropy.

Run: OMP_NUM_THREADS=1 .venv/bin/python bench/overfit_eval.py [--split dev|held-out|both] [--seeds 3]
     [--old /tmp/old_sanity.py] | tee /tmp/ovB/eval.txt          (one CPU thread; about 5 minutes for both)
"""
import argparse, importlib.util, math, sys, time, warnings
from collections import Counter

import torch
from torch import nn
import trainbook.sanity as current

torch.set_num_threads(1)
warnings.filterwarnings("ignore")
DEV = {"model": ("linear", "mlp", "mlp_dropout"), "loss": ("ce", "mse"), "band": ("small", "mid")}
HELD = {"model": ("cnn", "mlp_bn"), "loss": ("bce", "l1"), "band": ("large",)}
BANDS = {"small": (4, 8), "mid": (16, 32), "large": (48, 64)}
WIDTH = {"ce": (2, 3, 10), "bce": (1, 3, 5), "mse": (1, 2, 1), "l1": (1, 2, 1)}  # the outputs, by seed % 3
SHIFT = ((0.0, 1.0), (0.0, 1.0), (3.0, 2.0))  # regression targets: offset + scale * values, by seed % 3
DROPOUT = (0.2, 0.5, 0.1)  # by seed % 3
LOSSES = {"ce": nn.CrossEntropyLoss, "bce": nn.BCEWithLogitsLoss, "mse": nn.MSELoss, "l1": nn.L1Loss}


def inputs(kind, n, g):
    "A batch of inputs: 1x8x8 images for the CNN, 12 features for the others."
    return torch.randn(n, 1, 8, 8, generator=g) if kind == "cnn" else torch.randn(n, 12, generator=g)


def targets(model_kind, loss_kind, x, g, seed):
    "Targets a healthy model of this kind can memorize: a linear teacher (classes, bits), sin of one (values)."
    flat = x.flatten(1)
    w = torch.randn(flat.shape[1], WIDTH[loss_kind][seed % 3], generator=g) / math.sqrt(flat.shape[1])
    z = flat @ w
    if loss_kind == "ce": return z.argmax(1)
    if loss_kind == "bce": return (z > 0).float()
    offset, scale = SHIFT[seed % 3]
    return offset + scale * (z if model_kind == "linear" else torch.sin(2 * z))


def varied(y):
    "At least two different targets (a batch of one target proves nothing and is judged uncertain)."
    return not bool((y == y[:1]).all())


def make_model(kind, out, seed):
    torch.manual_seed(seed)
    if kind == "linear": return nn.Linear(12, out)
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(8 * 4 * 4, out))
    middle = {"mlp": [], "mlp_dropout": [nn.Dropout(DROPOUT[seed % 3])], "mlp_bn": [nn.BatchNorm1d(64)]}[kind]
    if kind == "mlp_bn": return nn.Sequential(nn.Linear(12, 64), *middle, nn.ReLU(), nn.Linear(64, out))
    return nn.Sequential(nn.Linear(12, 64), nn.ReLU(), *middle, nn.Linear(64, out))


class Detached(nn.Module):
    "The bug: the output cut off from the graph."
    def __init__(self, net): super().__init__(); self.net = net
    def forward(self, x): return self.net(x).detach()


class IgnoresInput(nn.Module):
    "The bug: zeros in place of the input."
    def __init__(self, net): super().__init__(); self.net = net
    def forward(self, x): return self.net(torch.zeros_like(x))


def reshuffled(loss_kind):
    "The loss class with its targets shuffled at every call: nothing to memorize."
    class Reshuffled(LOSSES[loss_kind]):
        def forward(self, pred, y): return super().forward(pred, y[torch.randperm(len(y))])
    return Reshuffled()


def kill_relus(model):
    "Dead ReLUs: the bias before the first ReLU at -50 (BatchNorm's shift for mlp_bn). False: no ReLU to kill."
    mods = list(model) if isinstance(model, nn.Sequential) else []
    if not any(isinstance(m, nn.ReLU) for m in mods): return False
    before = [m for m in mods[:[isinstance(m, nn.ReLU) for m in mods].index(True)] if hasattr(m, "bias")]
    with torch.no_grad(): before[-1].bias.fill_(-50.0)
    return True


FAULTS = ("shuffled", "frozen", "detached", "dead_relu", "tiny_lr", "ignores_input", "activation", "mse_on_indices",
          "one_output_ce")


def setup(model_kind, loss_kind, n, fault, seed):
    "(model, batch, loss_fn, lr) for one set-up; None when the fault does not apply to this model or loss."
    g = torch.Generator().manual_seed(seed)
    for _ in range(20):
        x = inputs(model_kind, n, g)
        y = targets(model_kind, loss_kind, x, g, seed)
        if varied(y): break
    out = 1 if fault == "one_output_ce" else WIDTH[loss_kind][seed % 3]
    model, loss_fn, lr = make_model(model_kind, out, seed), LOSSES[loss_kind](), None
    if fault in ("mse_on_indices", "one_output_ce") and loss_kind != "ce": return None
    if fault == "shuffled": loss_fn = reshuffled(loss_kind)
    elif fault == "frozen": model.requires_grad_(False)
    elif fault == "detached": model = Detached(model)
    elif fault == "dead_relu" and not kill_relus(model): return None
    elif fault == "tiny_lr": lr = 1e-7
    elif fault == "ignores_input": model = IgnoresInput(model)
    elif fault == "activation":
        if loss_kind not in ("ce", "bce"): return None
        model = nn.Sequential(model, nn.Softmax(dim=1) if loss_kind == "ce" else nn.Sigmoid())
    elif fault == "mse_on_indices": loss_fn, y = nn.MSELoss(), y.float()
    return model, (x, y), loss_fn, lr


def corpus(split, seeds):
    "Every set-up of a split: (name, should_pass, model_kind, loss_kind, batch size, fault, seed)."
    models, losses, bands = (DEV[k] + (HELD[k] if split == "held-out" else ()) for k in ("model", "loss", "band"))
    rows, i, used = [], 0, Counter()
    for seed in range(seeds):
        for m in models:
            for l in losses:
                dev_pair = m in DEV["model"] and l in DEV["loss"]
                if split == "dev": cells = bands
                elif dev_pair: cells = HELD["band"]  # a dev model and loss: held out by their batch band
                else: cells = (bands[(seed + len(rows)) % len(bands)],)  # one band each, in rotation
                for b in cells:
                    i += 1
                    n = BANDS[b][(seed + i) % 2]
                    rows.append((f"{m}/{l}/{b}{n}/healthy/s{seed}", True, m, l, n, None, seed))
                    # one fault per cell and seed: the least used so far of those that apply here
                    fits = [f for f in FAULTS if setup(m, l, n, f, seed) is not None]
                    fault = min(fits, key=lambda f: (used[f], (FAULTS.index(f) - i) % len(FAULTS)))
                    used[fault] += 1
                    rows.append((f"{m}/{l}/{b}{n}/{fault}/s{seed}", False, m, l, n, fault, seed))
    return rows


def verdict(module, made):
    "PASSED / UNCERTAIN / FAILED (a refusal to run: FAILED) and the findings' kinds."
    model, batch, loss_fn, lr = made
    try:
        rep = module.overfit_batch(model, batch, loss_fn, lr=lr, device="cpu")
    except Exception as e:  # the test refused the set-up (a shape mismatch, a detached loss)
        return "FAILED", f"raised {type(e).__name__}"
    v = "PASSED" if rep.passed else "UNCERTAIN" if rep.uncertain else "FAILED"
    return v, ",".join(f.kind for f in rep.findings)


def load_old(path):
    "An older trainbook/sanity.py, loaded from a file as a module of the trainbook package."
    spec = importlib.util.spec_from_file_location("trainbook._old_sanity", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def matrix(results, rule):
    "The confusion matrix of one rule: should pass / should fail against its verdicts."
    c = Counter((should, res[rule][0]) for _, should, res in results)
    lines = [f"  {rule + ' rule':<14}{'PASSED':>9}{'UNCERTAIN':>10}{'FAILED':>8}"]
    for should in (True, False):
        lines.append(f"  {'should pass' if should else 'should fail':<14}{c[(should, 'PASSED')]:>9}"
                     f"{c[(should, 'UNCERTAIN')]:>10}{c[(should, 'FAILED')]:>8}")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", default="dev", choices=("dev", "held-out", "both"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--old", default=None, help="path of an older sanity.py to compare with")
    p.add_argument("--all", action="store_true", help="list every set-up's verdicts, not only the misjudged")
    a = p.parse_args()
    rules = {"new": current} | ({"old": load_old(a.old)} if a.old else {})
    for split in (("dev", "held-out") if a.split == "both" else (a.split,)):
        t0, results = time.time(), []
        for name, should, m, l, n, fault, seed in corpus(split, a.seeds):
            res = {rule: verdict(mod, setup(m, l, n, fault, seed)) for rule, mod in rules.items()}
            results.append((name, should, res))
        print(f"== {split}: {len(results)} set-ups, {sum(s for _, s, _ in results)} should pass "
              f"({time.time() - t0:.0f} s)")
        for rule in rules: print("\n".join(matrix(results, rule)))
        print("  every set-up:" if a.all else "  misjudged (should pass and not PASSED, or should fail and PASSED):")
        for name, should, res in results:
            wrong = [r for r in rules if (res[r][0] == "PASSED") != should]
            if wrong or a.all:
                print(f"    {name:<40} " + "  ".join(f"{r}: {res[r][0]} [{res[r][1]}]" for r in rules))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
