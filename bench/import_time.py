"What `import trainbook` adds to `import torch`, measured in fresh interpreters, interleaved. Run: .venv/bin/python bench/import_time.py"
import statistics, subprocess, sys

CODE = {"torch": "import time; t=time.perf_counter(); import torch; print(time.perf_counter()-t)",
        "torch+trainbook": "import time; t=time.perf_counter(); import torch, trainbook; print(time.perf_counter()-t)"}
HEAVY = ("plotly", "ipywidgets", "xgboost", "sklearn", "pandas", "IPython")

def once(code: str) -> float:
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)

def main(reps: int = 7):
    times = {k: [] for k in CODE}
    for _ in range(reps):
        for k, code in CODE.items(): times[k].append(once(code))
    med = {k: statistics.median(v) for k, v in times.items()}
    loaded = subprocess.run([sys.executable, "-c", f"import sys, trainbook; print([m for m in {HEAVY!r} if m in sys.modules])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    for k, v in med.items(): print(f"{k:>16}: {v * 1000:7.1f} ms (median of {reps})")
    print(f"ratio torch+trainbook / torch: {med['torch+trainbook'] / med['torch']:.3f}")
    print(f"heavy modules loaded by `import trainbook`: {loaded}")

if __name__ == "__main__":
    main()
