"Checkpoint safety: atomic writes survive SIGKILL; files that would run code are refused."
import os, random, signal, subprocess, sys, textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.checkpoint import UnsafeCheckpointError

WRITER = textwrap.dedent("""
    import sys, torch
    from torch import nn
    from trainbook.checkpoint import save_checkpoint
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512))  # ~2 MB: a write takes a little while
    path = sys.argv[1]
    i = 0
    while True:
        with torch.no_grad(): model[0].weight.fill_(i)
        save_checkpoint(path, model=model, step=i)
        print(i, flush=True)
        i += 1
""")


def test_sigkill_while_writing_always_leaves_a_loadable_last_pt(tmp_path):
    "Kill the writer at random moments (by how many saves it reported, plus a random extra), ten times."
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    path = tmp_path / "last.pt"
    rng = random.Random(0)
    for trial in range(10):
        proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True)
        target = rng.randint(1, 5)
        for line in proc.stdout:
            if int(line) >= target: break
        # spin a random number of iterations so the kill lands at a random point of a later write
        for _ in range(rng.randint(0, 200_000)): pass
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        ckpt = torch.load(path, weights_only=True)  # must not raise
        step = ckpt["step"]
        assert step >= target and torch.all(ckpt["model"]["0.weight"] == step)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".last.pt.")]
    assert all(name.endswith(".tmp") for name in leftovers)  # at most half-written temp files, never a torn last.pt


def test_checkpoint_that_runs_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    class Payload:
        def __reduce__(self): return (os.system, (f"touch {marker}",))
    bad = tmp_path / "evil.pt"
    torch.save({"format": "trainbook-checkpoint", "model": {"w": torch.zeros(1)}, "x": Payload()}, bad)
    with pytest.raises(UnsafeCheckpointError, match="trusted=True"):
        tb.load_checkpoint(bad, nn.Linear(1, 1))
    assert not marker.exists()


def test_trusted_load_and_restore(tmp_path):
    model, opt = nn.Linear(3, 2), None
    tb.save_checkpoint(tmp_path / "a.pt", model=model, step=5, note="hi")
    other = nn.Linear(3, 2)
    ckpt = tb.load_checkpoint(tmp_path / "a.pt", other)
    assert ckpt["step"] == 5 and torch.equal(other.weight, model.weight)
    with pytest.raises(FileNotFoundError, match="does not exist"): tb.load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(KeyError, match="no 'optimizer' state"):
        tb.load_checkpoint(tmp_path / "a.pt", other, torch.optim.SGD(other.parameters(), lr=0.1))


def test_run_dir_files(tmp_path):
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    run = tb.fit(nn.Linear(4, 2), [(X, y)], [(X, y)], loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=str(tmp_path)), split_fingerprint="abc123")
    assert {p.name for p in tmp_path.iterdir() if not p.name.startswith(".")} == {"last.pt", "best.pt", "run.json"}
    ckpt = torch.load(run.last_path, weights_only=True)
    for key in ("model", "optimizer", "scheduler", "scaler", "step", "epoch", "batch_idx", "rng", "early_stopping",
                "callbacks", "history", "config", "environment", "split_fingerprint"):
        assert key in ckpt, key
    assert ckpt["split_fingerprint"] == "abc123" and ckpt["config"]["epochs"] == 2
    import json
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["stopped"] == "completed" and meta["split_fingerprint"] == "abc123"
