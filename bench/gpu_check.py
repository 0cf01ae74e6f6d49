"""A few-minute check for a CUDA machine (written for an H200), printing everything it measures:

1. precisions: fp32, bf16 and fp16 + GradScaler runs all learn, and bf16/fp16 track fp32;
2. throughput: `fit(live=False)` vs a raw AMP loop, bf16 and fp16, compute-bound and overhead-bound (ratio);
3. compile: `fit` on a `torch.compile`d model vs a raw compiled loop (compile time, steady-state ratio);
4. find_batch_size on CUDA: real `torch.OutOfMemoryError`s, the size found, the tries, the time;
5. host syncs per step: `fit`, a raw loop with one `.item()` per step, and a sync-free raw loop (fused AdamW
   told on the device whether the loss was finite, through `found_inf`), counted with CUDA's sync debug
   mode, with the throughput of each;
6. DDP on every local GPU through `tb.launch`: throughput vs one process, scaling efficiency.

Step times run from the end of the first optimizer step to the end of the last, on both sides (`StepClock` in
`fit`, the same two sync points in the raw loops): set-up, `environment()` and the first step's allocations are
left out, so a ratio compares the steps themselves.

Run: python bench/gpu_check.py                  (on the GPU machine; --json out.json keeps the numbers)
     python bench/gpu_check.py --cpu-smoke      (the same code paths at toy sizes on the CPU: proves it runs)
     python bench/gpu_check.py --sections sync,ddp
"""
import argparse, json, math, statistics, sys, time, traceback, warnings
from dataclasses import fields

import torch
from torch import nn
from torch.nn import functional as F

import trainbook as tb

warnings.filterwarnings("ignore")
RESULTS = {}  # section -> numbers, written by --json


def mlp(d_in, width, depth, d_out, seed=0):
    torch.manual_seed(seed)
    layers, d = [], d_in
    for _ in range(depth): layers += [nn.Linear(d, width), nn.GELU()]; d = width
    return nn.Sequential(*layers, nn.Linear(d, d_out))


def sync(device):
    if device.type == "cuda": torch.cuda.synchronize()


def timed(device, fn):
    "Seconds `fn()` takes, the device synchronized on both sides."
    sync(device)
    t = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t


def autocast_dtype(precision):
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)


class StepClock(tb.Callback):
    "Seconds per optimizer step from the end of the first step to the end of the run: no set-up."
    def __init__(self): self.start, self.end, self.steps = None, None, 0

    def after_step(self, state):
        if self.start is None:
            sync(state.device)  # the only two syncs: here and at the end
            self.start = time.perf_counter()
        self.steps += 1

    def after_fit(self, state):
        sync(state.device)
        self.end = time.perf_counter()

    @property
    def per_step(self): return (self.end - self.start) / max(1, self.steps - 1)


def raw_loop(model, X, y, batch, steps, precision, device, skip=None):
    """The reference: autocast, AdamW, zero_grad(set_to_none), a GradScaler under fp16. `skip` says how a
    non-finite loss skips the optimizer step, as `fit` does: None (it does not), "item" (one `.item()` per
    step: a host sync), "found_inf" (sync-free: fused AdamW reads a flag on the device, skips the update).
    Returns seconds per step from the end of the first step to the end of the last, as `StepClock` does."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=skip == "found_inf")
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16" and skip is None)
    dtype = autocast_dtype(precision)
    n = len(X) // batch
    for i in range(steps):
        j = i % n
        xb, yb = X[j * batch:(j + 1) * batch], y[j * batch:(j + 1) * batch]
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = F.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        if skip == "found_inf":
            opt.found_inf = (~torch.isfinite(loss.detach())).float()  # on the device; 1.0 skips the update
            opt.grad_scale = None
            opt.step()
        elif skip == "item":
            if math.isfinite(loss.item()): opt.step()  # the one sync per step
        else:
            scaler.step(opt)
            scaler.update()
        opt.zero_grad(set_to_none=True)
        if i == 0:
            sync(device)
            start = time.perf_counter()
    sync(device)
    return (time.perf_counter() - start) / max(1, steps - 1)


def fit_run(model, X, y, batch, steps, precision, device, **changes):
    dl = tb.TensorLoader(X, y, batch_size=batch)
    cfg = tb.TrainConfig(epochs=math.ceil(steps / len(dl)), max_steps=steps, lr=1e-3, weight_decay=0.0,
                         precision=precision, device=str(device), **changes)
    clock = StepClock()
    tb.fit(model, dl, loss_fn=F.cross_entropy, config=cfg, live=False, callbacks=[clock])
    return clock.per_step


def data(device, rows, d_in, d_out, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(rows, d_in, generator=g)
    return X.to(device), torch.randint(0, d_out, (rows,), generator=g).to(device)


# --- 1. precisions ------------------------------------------------------------------------------------------

def check_precisions(device, small, rounds):
    "Each precision learns a separable problem; fp16 reports its loss scale; bf16 and fp16 track fp32."
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8192 if not small else 2048, 64, generator=g)
    y = (X @ torch.randn(64, 10, generator=g)).argmax(1)
    X, y = X.to(device), y.to(device)
    print(f"\n== precision checks (MLP 64→256×3→10, {13 * len(X) // 256} steps of 256)" if not small else
          "\n== precision checks (toy: two epochs)")
    final = {}
    for precision in ("fp32", "bf16", "fp16"):
        dl = tb.TensorLoader(X, y, batch_size=256, shuffle=True)
        cfg = tb.TrainConfig(epochs=13 if not small else 2, lr=3e-3, precision=precision, device=str(device),
                             schedule="warmup_cosine", warmup=0.05)
        run = tb.fit(mlp(64, 256, 3, 10).to(device), dl, [(X[:2048], y[:2048])], loss_fn=F.cross_entropy,
                     live=False, config=cfg)
        m = run.metrics()
        final[precision] = float(m["valid_loss"].iloc[-1])
        scales = run.records.series("loss_scale").tolist()
        print(f"  {precision}: stopped={run.stopped} steps={run.step} skipped={run.skipped_steps} "
              f"valid_loss {m['valid_loss'].iloc[0]:.4f} → {final[precision]:.4f}"
              + (f", loss scale {scales[0]:.0f} → {scales[-1]:.0f}" if scales else ""))
        assert run.stopped in ("completed", "max_steps"), run.stopped
    for p in ("bf16", "fp16"):
        diff = final[p] - final["fp32"]
        print(f"  {p} vs fp32 final valid loss: {final[p]:.4f} vs {final['fp32']:.4f} (diff {diff:+.4f})")
    return {"final_valid_loss": final}


# --- 2. throughput ------------------------------------------------------------------------------------------

def interleaved(runners, make_model, rounds):
    "Median seconds per step of each runner (each measures its own), interleaved, after a warm-up each."
    for fn in runners.values(): fn(make_model())
    times = {k: [] for k in runners}
    for _ in range(rounds):
        for k, fn in runners.items():
            model = make_model()
            times[k].append(fn(model))
    return {k: statistics.median(v) for k, v in times.items()}


def throughput(device, small, rounds):
    print("\n== throughput: fit(live=False) vs a raw AMP loop, interleaved, median of", rounds)
    configs = [("compute-bound MLP 1024→4096×4→1000, batch 1024", (1024, 4096, 4, 1000), 1024, 200),
               ("small MLP 32→64×2→2, batch 64 (overhead-bound)", (32, 64, 2, 2), 64, 2000)]
    if small: configs = [("toy MLP 64→128×2→10, batch 64", (64, 128, 2, 10), 64, 20)]
    out = {}
    for name, shape, batch, steps in configs:
        X, y = data(device, batch * 32, shape[0], shape[3])
        for precision in ("bf16", "fp16") if device.type == "cuda" else ("bf16",):
            med = interleaved({"raw": lambda m: raw_loop(m, X, y, batch, steps, precision, device),
                               "fit": lambda m: fit_run(m, X, y, batch, steps, precision, device)},
                              lambda: mlp(*shape).to(device), rounds)
            ratio = med["fit"] / med["raw"]
            print(f"  {name}, {precision}: raw {med['raw'] * 1e3:.3f} ms/step, "
                  f"fit {med['fit'] * 1e3:.3f} ms/step, "
                  f"ratio {ratio:.3f}")
            out[f"{name} {precision}"] = {"raw_ms": med["raw"] * 1e3, "fit_ms": med["fit"] * 1e3,
                                          "ratio": ratio}
    return out


# --- 3. compile ---------------------------------------------------------------------------------------------

def compile_check(device, small, rounds):
    "fit on a compiled model vs a raw compiled loop: the first call (compilation) and the steady state."
    backend = "inductor" if device.type == "cuda" else "eager"  # the CPU smoke run needs no C++ toolchain
    shape, batch, steps = ((1024, 4096, 4, 1000), 1024, 100) if not small else ((32, 64, 2, 2), 64, 10)
    precision = "bf16" if device.type == "cuda" else "fp32"
    X, y = data(device, batch * 16, shape[0], shape[3])
    has_field = "compile" in {f.name for f in fields(tb.TrainConfig)}
    print(f"\n== compile (backend {backend}, {precision}; "
          f"{'TrainConfig.compile=True' if has_field else 'fit(torch.compile(model))'}), median of {rounds}")

    # one model per side, compiled once and reused: a fresh model per round would recompile every time
    # (and past dynamo's cache limit silently run eagerly)
    models = {"raw": torch.compile(mlp(*shape).to(device), backend=backend), "fit": mlp(*shape).to(device)}
    if not has_field: models["fit"] = torch.compile(models["fit"], backend=backend)
    extra = {"compile": True} if has_field else {}
    runners = {"raw": lambda: raw_loop(models["raw"], X, y, batch, steps, precision, device),
               "fit": lambda: fit_run(models["fit"], X, y, batch, steps, precision, device, **extra)}
    first = {k: timed(device, fn) for k, fn in runners.items()}
    times = {k: [] for k in runners}
    for _ in range(rounds):
        for k, fn in runners.items(): times[k].append(fn())
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["fit"] / med["raw"]
    print(f"  first call (compiles): raw {first['raw']:.1f} s, fit {first['fit']:.1f} s; steady state: raw "
          f"{med['raw'] * 1e3:.3f} ms/step, fit {med['fit'] * 1e3:.3f} ms/step, ratio {ratio:.3f}")
    return {"first_raw_s": first["raw"], "first_fit_s": first["fit"], "raw_ms": med["raw"] * 1e3,
            "fit_ms": med["fit"] * 1e3, "ratio": ratio}


# --- 4. find_batch_size -------------------------------------------------------------------------------------

class Hungry(nn.Module):
    "Cheap to compute, costly to remember: `exp` keeps its (rows × width·fan) output for the backward pass."
    def __init__(self, width=256, fan=256):
        super().__init__()
        self.lin, self.fan, self.head = nn.Linear(width, width), fan, nn.Linear(width, 10)

    def forward(self, x):
        h = self.lin(x)
        wide = torch.exp(h.repeat(1, self.fan).clamp(max=10))
        return self.head(h + wide.view(len(x), self.fan, -1).mean(1))


def batch_size_check(device, small):
    "find_batch_size up to real out-of-memory errors on CUDA (on the CPU: under a small max_memory budget)."
    width, fan = (256, 256) if not small else (64, 16)
    make_loader = lambda bs: [(torch.randn(bs, width, device=device),
                               torch.randint(0, 10, (bs,), device=device))]
    budget = None if device.type == "cuda" else 32
    limit = "until torch.OutOfMemoryError" if budget is None else f"max_memory={budget} MiB"
    print(f"\n== find_batch_size ({limit}; "
          f"{fan * width * 4 / 1024:.0f} KiB of saved activations a row)")
    t = time.perf_counter()
    found = tb.find_batch_size(Hungry(width, fan), make_loader, F.cross_entropy, start=256, max_memory=budget,
                               multiple_of=1024 if not small else 8, lr=1e-3, base_batch_size=256,
                               device=str(device))
    seconds = time.perf_counter() - t
    fits = [tr for tr in found.tries if tr["fits"]]
    print(f"  batch size {found.batch_size} (first failure {found.first_failure}, ended by {found.limit!r}), "
          f"{len(found.tries)} tries in {seconds:.1f} s, "
          f"largest fitting step used {fits[-1]['memory_mb'] / 1024:.2f} GiB, "
          f"lr 1e-3 at 256 → {found.lr:.3g}")
    print("  tries:", ", ".join(f"{tr['batch_size']}{'' if tr['fits'] else '✗'}" for tr in found.tries))
    return {"batch_size": found.batch_size, "first_failure": found.first_failure, "limit": found.limit,
            "tries": len(found.tries), "seconds": seconds}


# --- 5. host syncs per step ---------------------------------------------------------------------------------

def count_syncs(device, fn) -> int:
    "Synchronizing CUDA calls made by `fn()`, from the sync debug mode's warnings (0, unmeasured, on a CPU)."
    if device.type != "cuda":
        fn()
        return 0
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try: fn()
        finally: torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in seen)


def sync_check(device, small, rounds):
    "Host syncs per optimizer step (the difference between a long and a short run, so set-up costs cancel)."
    shape, batch = ((32, 64, 2, 2), 64)
    steps = (100, 200) if not small else (10, 20)
    precision = "bf16" if device.type == "cuda" else "fp32"
    X, y = data(device, batch * 32, shape[0], shape[3])
    variants = {"fit": lambda m, n: fit_run(m, X, y, batch, n, precision, device),
                "raw + .item()": lambda m, n: raw_loop(m, X, y, batch, n, precision, device, skip="item"),
                "raw sync-free (fused AdamW, found_inf)":
                    lambda m, n: raw_loop(m, X, y, batch, n, precision, device, skip="found_inf")}
    print(f"\n== host syncs per step and throughput (small MLP, batch {batch}, {precision}"
          f"{'; syncs not countable on a CPU' if device.type != 'cuda' else ''})")
    med = interleaved({k: (lambda m, f=f: f(m, steps[1])) for k, f in variants.items()},
                      lambda: mlp(*shape).to(device), rounds)
    out = {}
    for name, fn in variants.items():
        short, long = (count_syncs(device, lambda: fn(mlp(*shape).to(device), n)) for n in steps)
        per_step = (long - short) / (steps[1] - steps[0])
        print(f"  {name}: {per_step:.2f} syncs/step ({short} in {steps[0]} steps, {long} in {steps[1]}), "
              f"{med[name] * 1e3:.3f} ms/step")
        out[name] = {"syncs_per_step": per_step, "ms_per_step": med[name] * 1e3}
    return out


# --- 6. DDP -------------------------------------------------------------------------------------------------

def ddp_worker(shape, batch, steps, precision):
    "Inside each launched process: a fit with strategy='ddp', clocked from its first to its last step."
    import os
    import torch
    import trainbook as tb
    from torch.nn import functional as F
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    world = torch.distributed.get_world_size()
    g = torch.Generator().manual_seed(0)
    X = torch.randn(batch * world * 64, shape[0], generator=g).to(device)
    y = torch.randint(0, shape[3], (len(X),), generator=g).to(device)
    dl = tb.TensorLoader(X, y, batch_size=batch)  # sharded by rank: each rank takes its own rows
    clock = StepClock()
    cfg = tb.TrainConfig(epochs=math.ceil(steps / len(dl)), max_steps=steps, lr=1e-3, weight_decay=0.0,
                         precision=precision, device=str(device))
    tb.fit(mlp(*shape).to(device), dl, loss_fn=F.cross_entropy, config=cfg, live=False, strategy="ddp",
           callbacks=[clock])
    return {"rows_per_s": batch * world / clock.per_step, "world": world}


def ddp_check(device, small):
    "DDP on every local GPU (the CPU smoke run: 2 gloo processes) vs one process at the same per-rank batch."
    nprocs = torch.cuda.device_count() if device.type == "cuda" else 2
    shape, batch, steps = ((1024, 4096, 4, 1000), 512, 100) if not small else ((32, 64, 2, 2), 32, 10)
    precision = "bf16" if device.type == "cuda" else "fp32"
    print(f"\n== DDP via tb.launch: {nprocs} process(es), per-rank batch {batch}, {steps} steps, {precision}")
    X, y = data(device, batch * 64, shape[0], shape[3])
    clock = StepClock()
    dl = tb.TensorLoader(X, y, batch_size=batch)
    tb.fit(mlp(*shape).to(device), dl, loss_fn=F.cross_entropy, live=False, callbacks=[clock],
           config=tb.TrainConfig(epochs=math.ceil(steps / len(dl)), max_steps=steps, lr=1e-3,
                                 weight_decay=0.0, precision=precision, device=str(device)))
    t = time.perf_counter()
    res = tb.launch(ddp_worker, shape, batch, steps, precision, nprocs=nprocs, live=False)
    total = time.perf_counter() - t
    one, many = batch / clock.per_step, res["rows_per_s"]
    efficiency = many / (one * res["world"])
    print(f"  one process: {one:,.0f} rows/s; DDP ×{res['world']}: {many:,.0f} rows/s, scaling efficiency "
          f"{efficiency:.2f} (the launch, process start-up included, took {total:.1f} s)"
          + ("; one GPU: this only proves the path runs" if res["world"] == 1 else "")
          + ("; CPU toy sizes: not a scaling number" if device.type != "cuda" else ""))
    return {"world": res["world"], "rows_per_s_one": one, "rows_per_s_ddp": many, "efficiency": efficiency,
            "launch_s": total}


SECTIONS = {"precisions": lambda d, a: check_precisions(d, a.small, a.rounds),
            "throughput": lambda d, a: throughput(d, a.small, a.rounds),
            "compile": lambda d, a: compile_check(d, a.small, a.rounds),
            "batch_size": lambda d, a: batch_size_check(d, a.small),
            "sync": lambda d, a: sync_check(d, a.small, a.rounds),
            "ddp": lambda d, a: ddp_check(d, a.small)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true", help="toy sizes: a dry run of the code paths")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="--device cpu --small --rounds 1: proves the script runs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help=f"comma-separated, of: {', '.join(SECTIONS)}")
    ap.add_argument("--json", help="write the numbers to this file")
    a = ap.parse_args(argv)
    if a.cpu_smoke: a.device, a.small, a.rounds = "cpu", True, 1
    unknown = set(a.sections.split(",")) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s) {', '.join(sorted(unknown))}; sections are: {', '.join(SECTIONS)}")
    device = torch.device(a.device)
    env = tb.environment()
    print(f"torch {env['torch']}, CUDA {env['cuda']}, GPUs {env['gpus']}, device {device}, "
          f"auto precision here: {tb.pick_precision('auto', device)}")
    if device.type == "cuda": torch.backends.cuda.matmul.allow_tf32 = True
    else: torch.set_num_threads(1)  # a shared CPU box: threads fighting over cores measure nothing
    t0, failed = time.perf_counter(), []
    for name in a.sections.split(","):
        t = time.perf_counter()
        try: RESULTS[name] = SECTIONS[name](device, a)
        except Exception:  # one broken section does not hide the others' numbers
            failed.append(name)
            print(f"\n!! section {name} failed:\n{traceback.format_exc()}")
        print(f"  ({name}: {time.perf_counter() - t:.1f} s)")
    print(f"\ntotal {time.perf_counter() - t0:.0f}s"
          + (f"; FAILED sections: {', '.join(failed)}" if failed else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": env, "results": RESULTS, "failed": failed}, f, indent=1, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
