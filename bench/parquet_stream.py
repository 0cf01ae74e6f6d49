"""ParquetLoader streaming a Parquet dataset bigger than the memory it may use, into `fit`, against TensorLoader on
the same rows held in memory: one epoch each, peak resident memory and rows per second.

Run: nice -n 10 .venv/bin/python bench/parquet_stream.py [--rows 5242880] [--features 32] [--batch-size 1024]
     [--shuffle-buffer 8] [--row-group 65536] [--folder DIR]
Writes the dataset (float32 features, an int64 label; ~700 MB at the defaults) into a temporary folder chunk by chunk
(never the whole table in memory), then runs each side in its own fresh process so that each peak RSS is that side's
alone: `stream` (ParquetLoader, shuffled by buffers of row groups) and `memory` (the whole table read into tensors,
TensorLoader with shuffle=True). Both train the same MLP (features -> 64 -> 2, AdamW, one thread, live=False) for
one epoch. The throughput is rows trained per second of `fit` (the memory side's read-in is reported apart).
"""
import argparse, json, os, resource, subprocess, sys, tempfile, time
from pathlib import Path


def write(folder: Path, rows: int, features: int, row_group: int, seed: int = 0):
    "Files of 8 row groups each, written a row group at a time."
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    w = rng.normal(size=features).astype("float32")
    names = [f"x{j}" for j in range(features)]
    writer, written, k = None, 0, 0
    while written < rows:
        n = min(row_group, rows - written)
        x = rng.normal(size=(n, features)).astype("float32")
        y = (x @ w + rng.normal(scale=0.5, size=n) > 0).astype("int64")
        table = pa.table({**{c: x[:, j] for j, c in enumerate(names)}, "y": y})
        if writer is None:
            # random floats: no dictionary (it cannot shrink them and would be undone page by page)
            writer = pq.ParquetWriter(folder / f"part-{k:03d}.parquet", table.schema, use_dictionary=False)
        writer.write_table(table, row_group_size=row_group)
        written += n
        if (written // row_group) % 8 == 0 or written >= rows:
            writer.close()
            writer, k = None, k + 1
    return sum(f.stat().st_size for f in folder.glob("*.parquet"))


def side(mode: str, folder: str, batch_size: int, shuffle_buffer: int) -> dict:
    "One epoch of `fit` on one side, in this process."
    import torch
    from torch import nn
    import trainbook as tb
    torch.set_num_threads(1)
    read_s = 0.0
    if mode == "stream":
        dl = tb.ParquetLoader(folder, "y", batch_size=batch_size, shuffle_buffer=shuffle_buffer, seed=0)
        rows, features = dl.n, len(dl.columns)
    else:
        import pyarrow.dataset as ds
        t = time.perf_counter()
        table = ds.dataset(folder, format="parquet").to_table()
        names = [c for c in table.column_names if c != "y"]
        X = torch.empty((table.num_rows, len(names)), dtype=torch.float32)
        for j, c in enumerate(names): X[:, j] = torch.from_numpy(table.column(c).to_numpy())
        y = torch.from_numpy(table.column("y").to_numpy())
        del table
        read_s = time.perf_counter() - t
        dl = tb.TensorLoader(X, y, batch_size=batch_size, shuffle=True, seed=0)
        rows, features = len(X), len(names)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 2))
    cfg = tb.TrainConfig(epochs=1, lr=1e-3, device="cpu")
    t = time.perf_counter()
    run = tb.fit(model, dl, None, loss_fn=nn.functional.cross_entropy, live=False, config=cfg)
    fit_s = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"mode": mode, "rows": rows, "fit_s": fit_s, "rows_per_s": rows / fit_s, "read_s": read_s,
            "peak_rss_mb": peak, "steps": run.step, "last_loss": run.records.last("loss", "train")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_242_880)  # 80 row groups of 65,536
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--shuffle-buffer", type=int, default=8)
    ap.add_argument("--row-group", type=int, default=65_536)
    ap.add_argument("--folder", default=None, help="an existing dataset (skips writing)")
    ap.add_argument("--side", default=None, help=argparse.SUPPRESS)  # internal: run one side
    a = ap.parse_args()
    if a.side:
        print(json.dumps(side(a.side, a.folder, a.batch_size, a.shuffle_buffer)))
        return
    with tempfile.TemporaryDirectory(prefix="parquet_stream_") as tmp:
        folder = Path(a.folder) if a.folder else Path(tmp)
        t = time.perf_counter()
        size = write(folder, a.rows, a.features, a.row_group) if not a.folder else \
            sum(f.stat().st_size for f in folder.glob("*.parquet"))
        print(f"dataset: {a.rows} rows × {a.features} features, {size / 2**20:.0f} MiB on disk "
              f"({time.perf_counter() - t:.1f} s to write)")
        results = {}
        for mode in ("stream", "memory"):
            cmd = [sys.executable, __file__, "--side", mode, "--folder", str(folder),
                   "--batch-size", str(a.batch_size), "--shuffle-buffer", str(a.shuffle_buffer)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=os.environ).stdout
            results[mode] = json.loads(out.strip().splitlines()[-1])
            r = results[mode]
            print(f"{mode:>6}: fit {r['fit_s']:.1f} s, {r['rows_per_s']:,.0f} rows/s, peak RSS "
                  f"{r['peak_rss_mb']:.0f} MiB, {r['steps']} steps" +
                  (f" (read-in {r['read_s']:.1f} s)" if mode == "memory" else ""))
        ratio = results["memory"]["rows_per_s"] / results["stream"]["rows_per_s"]
        print(f"TensorLoader in memory / ParquetLoader streaming throughput: {ratio:.2f}x "
              f"(target <= 2); streaming peak RSS {results['stream']['peak_rss_mb']:.0f} MiB (target <= 600)")


if __name__ == "__main__":
    main()
