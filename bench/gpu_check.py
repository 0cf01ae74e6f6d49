"""A few-minute check for a CUDA machine (written for an H200): fp16 + GradScaler and bf16 runs train and
match expectations, and `fit` keeps pace with a raw AMP loop. Prints everything it measures.

Run: python bench/gpu_check.py            (on the GPU machine)
     python bench/gpu_check.py --device cpu --small   (a dry run of the same code paths, here)
"""
import argparse, math, statistics, time, warnings

import torch
from torch import nn

import trainbook as tb

warnings.filterwarnings("ignore")


def mlp(d_in, width, depth, d_out, seed=0):
    torch.manual_seed(seed)
    layers, d = [], d_in
    for _ in range(depth): layers += [nn.Linear(d, width), nn.GELU()]; d = width
    return nn.Sequential(*layers, nn.Linear(d, d_out))


def sync(device):
    if device.type == "cuda": torch.cuda.synchronize()


def raw_amp_loop(model, X, y, batch, steps, precision, device):
    "The reference: autocast, GradScaler when fp16, AdamW, zero_grad(set_to_none)."
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    n = len(X) // batch
    for i in range(steps):
        j = i % n
        xb, yb = X[j * batch:(j + 1) * batch], y[j * batch:(j + 1) * batch]
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = nn.functional.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.step(opt); scaler.update()
        opt.zero_grad(set_to_none=True)


def fit_run(model, X, y, batch, steps, precision, device):
    dl = tb.TensorLoader(X, y, batch_size=batch)
    cfg = tb.TrainConfig(epochs=math.ceil(steps / len(dl)), max_steps=steps, lr=1e-3, weight_decay=0.0,
                         precision=precision, device=str(device))
    return tb.fit(model, dl, loss_fn=nn.functional.cross_entropy, config=cfg, live=False)


def check_precisions(device, small):
    "Each precision learns a separable problem; fp16 reports its loss scale; bf16 and fp16 track fp32."
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8192, 64, generator=g)
    y = (X @ torch.randn(64, 10, generator=g)).argmax(1)
    X, y = X.to(device), y.to(device)
    print("\n== precision checks (MLP 64→256×3→10, 400 steps of 256)")
    final = {}
    for precision in ("fp32", "bf16", "fp16"):
        dl = tb.TensorLoader(X, y, batch_size=256, shuffle=True)
        run = tb.fit(mlp(64, 256, 3, 10).to(device), dl, [(X[:2048], y[:2048])], loss_fn=nn.functional.cross_entropy,
                     live=False, config=tb.TrainConfig(epochs=13 if not small else 2, lr=3e-3, precision=precision,
                                                       device=str(device), schedule="warmup_cosine", warmup=0.05))
        m = run.metrics()
        final[precision] = m["valid_loss"].iloc[-1]
        scales = run.records.series("loss_scale").tolist()
        print(f"  {precision}: stopped={run.stopped} steps={run.step} skipped={run.skipped_steps} "
              f"valid_loss {m['valid_loss'].iloc[0]:.4f} → {final[precision]:.4f}"
              + (f", loss scale {scales[0]:.0f} → {scales[-1]:.0f}" if scales else ""))
        assert run.stopped == "completed", run.stopped
    for p in ("bf16", "fp16"):
        print(f"  {p} vs fp32 final valid loss: {final[p]:.4f} vs {final['fp32']:.4f} (diff {final[p] - final['fp32']:+.4f})")


def throughput(device, small, rounds):
    print("\n== throughput: fit(live=False) vs a raw AMP loop, interleaved, median of", rounds)
    configs = [("compute-bound MLP 1024→4096×4→1000, batch 1024", (1024, 4096, 4, 1000), 1024, 200),
               ("small MLP 32→64×2→2, batch 64 (overhead-bound)", (32, 64, 2, 2), 64, 2000)]
    if small: configs = [(n, (a, min(b, 256), c, d), bs, 50) for n, (a, b, c, d), bs, _ in configs]
    for name, shape, batch, steps in configs:
        X = torch.randn(batch * 32, shape[0], device=device)
        y = torch.randint(0, shape[3], (len(X),), device=device)
        precisions = ("bf16", "fp16") if device.type == "cuda" else ("bf16",)
        for precision in precisions:
            runners = {"raw": lambda m: raw_amp_loop(m, X, y, batch, steps, precision, device),
                       "fit": lambda m: fit_run(m, X, y, batch, steps, precision, device)}
            for fn in runners.values(): fn(mlp(*shape).to(device))  # warm-up
            times = {k: [] for k in runners}
            for _ in range(rounds):
                for k, fn in runners.items():
                    model = mlp(*shape).to(device)
                    sync(device); t = time.perf_counter(); fn(model); sync(device)
                    times[k].append((time.perf_counter() - t) / steps)
            raw, ours = statistics.median(times["raw"]), statistics.median(times["fit"])
            print(f"  {name}, {precision}: raw {raw * 1e3:.3f} ms/step, fit {ours * 1e3:.3f} ms/step, ratio {ours / raw:.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny sizes: a dry run of the code paths")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    device = torch.device(a.device)
    env = tb.environment()
    print(f"torch {env['torch']}, CUDA {env['cuda']}, GPUs {env['gpus']}, device {device}, "
          f"auto precision here: {tb.pick_precision('auto', device)}")
    if device.type == "cuda": torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.perf_counter()
    check_precisions(device, a.small)
    throughput(device, a.small, a.rounds)
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")
