"""Checkpoint safety: atomic writes survive SIGKILL and clean up after it; failed writes keep the old file; the writer
refuses what the reader would refuse; corrupt files are told apart from unsafe ones."""
import contextlib, errno, os, random, signal, subprocess, sys, textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
import numpy as np
from trainbook.checkpoint import CheckpointError, UnsafeCheckpointError

WRITER = textwrap.dedent("""
    import sys, torch
    from torch import nn
    from trainbook.checkpoint import save_checkpoint
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512))  # ~2 MB: a write takes a little while
    path = sys.argv[1]
    real_save = torch.save
    def save_and_tell(obj, f):  # called inside atomic_write: the temp file exists when "writing" is printed
        print("writing", flush=True)
        real_save(obj, f)
    torch.save = save_and_tell
    i = 0
    while True:
        with torch.no_grad(): model[0].weight.fill_(i)
        save_checkpoint(path, model=model, step=i)
        print(i, flush=True)
        i += 1
""")


def test_sigkill_while_writing_always_leaves_a_loadable_last_pt(tmp_path):
    """Kill the writer ten times: at random moments (odd trials), or just after a write began (even trials, so that a
    killed write's temp file is certain to exist); last.pt always loads and the next save removes the leftover."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    run_dir = tmp_path / "run"
    path = run_dir / "last.pt"
    rng = random.Random(0)
    leftovers_seen = 0
    for trial in range(10):
        proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True)
        target = rng.randint(1, 5)
        done = 0
        for line in proc.stdout:
            done = int(line) + 1 if line.strip().isdigit() else done
            if done >= target and (line.startswith("writing") if trial % 2 == 0 else line.strip().isdigit()): break
        # spin a random number of iterations so the kill lands at a random point of a later write
        for _ in range(rng.randint(0, 200_000)): pass
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        ckpt = tb.load_checkpoint(path)  # must not raise
        step = ckpt["step"]
        assert step >= done - 1 and torch.all(ckpt["model"]["0.weight"] == step)
        temps = [p.name for p in run_dir.iterdir() if p.name != "last.pt"]
        assert all(name.startswith(".last.pt.") and name.endswith(".tmp") for name in temps)  # never a torn last.pt
        leftovers_seen += len(temps)
        tb.save_checkpoint(run_dir / "best.pt", model=nn.Linear(1, 1), step=step)  # the next save, into the same folder
        assert sorted(p.name for p in run_dir.iterdir()) == ["best.pt", "last.pt"], trial
        (run_dir / "best.pt").unlink()
    assert leftovers_seen >= 3  # kills did land inside writes, so the clean-up was exercised


@contextlib.contextmanager
def small_tmpfs(folder, size="512k"):
    "A tmpfs of `size` mounted at `folder` (root only); yields the folder, unmounts after."
    if os.geteuid() != 0: pytest.skip("mounting a small tmpfs needs root; disk-full and read-only writes are untested here")
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0: pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try: yield folder
    finally: subprocess.run(["umount", "-l", str(folder)], check=False)


def test_disk_full_raises_an_oserror_naming_path_and_cause_and_keeps_the_previous_checkpoint(tmp_path):
    with small_tmpfs(tmp_path / "mnt") as folder:
        tb.save_checkpoint(folder / "last.pt", model=nn.Linear(4, 4), step=1)
        with pytest.raises(OSError, match=f"could not write {folder / 'last.pt'}: No space left on device") as e:
            tb.save_checkpoint(folder / "last.pt", model=nn.Linear(512, 512), step=2)  # ~1 MB on a 512 kB disk
        assert e.value.errno == errno.ENOSPC
        assert tb.load_checkpoint(folder / "last.pt")["step"] == 1
        assert [p.name for p in folder.iterdir()] == ["last.pt"]  # no temp file left filling the disk


def test_read_only_folder_raises_an_oserror_naming_path_and_cause_and_keeps_the_previous_checkpoint(tmp_path):
    with small_tmpfs(tmp_path / "mnt") as folder:
        tb.save_checkpoint(folder / "last.pt", model=nn.Linear(4, 4), step=1)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)  # root ignores chmod: remount instead
        with pytest.raises(OSError, match=f"could not write {folder / 'last.pt'}: Read-only file system") as e:
            tb.save_checkpoint(folder / "last.pt", model=nn.Linear(4, 4), step=2)
        assert e.value.errno == errno.EROFS
        assert tb.load_checkpoint(folder / "last.pt")["step"] == 1


@pytest.mark.parametrize("value, where, advice", [
    (np.float64(0.25), "callbacks.Tracker.best", "float\\(x\\)"),
    (np.int64(3), "callbacks.Tracker.best", "int\\(x\\)"),
    (__import__("pathlib").Path("runs/a"), "callbacks.Tracker.best", "str\\(path\\)"),
    (object(), "callbacks.Tracker.best", "plain values")])
def test_save_refuses_at_save_time_what_the_loader_would_refuse(tmp_path, value, where, advice):
    "The writer never writes what the reader refuses: numpy scalars, Paths, objects in callback state, named by key path."
    with pytest.raises(TypeError, match=f"{where} is a .*weights_only=True.*{advice}"):
        tb.save_checkpoint(tmp_path / "last.pt", model=nn.Linear(2, 2), callbacks={"Tracker": {"best": value}})
    assert not (tmp_path / "last.pt").exists()
    with pytest.raises(TypeError, match=r"history\[2\]"):  # inside lists too
        tb.save_checkpoint(tmp_path / "last.pt", history=[1.0, 2.0, np.float32(3.0)])
    # and what it accepts does load with weights_only=True
    tb.save_checkpoint(tmp_path / "ok.pt", model=nn.Linear(2, 2), rng=tb.rng_state(), config=tb.TrainConfig().to_dict(),
                       odd={"size": torch.Size([2, 3]), "dtype": torch.float16, "device": torch.device("cpu"), 3: (1, "a")})
    assert torch.load(tmp_path / "ok.pt", weights_only=True)["odd"][3] == (1, "a")


def test_corrupt_files_are_checkpoint_errors_with_size_and_expectation(tmp_path):
    tb.save_checkpoint(tmp_path / "good.pt", model=nn.Linear(8, 8), step=3)
    good = (tmp_path / "good.pt").read_bytes()
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "cut.pt").write_bytes(good[: len(good) // 2])
    (tmp_path / "garbage.pt").write_bytes(random.Random(0).randbytes(3000))
    (tmp_path / "notes.pt").write_text("epoch 3 looked fine")
    cases = {"empty.pt": "it is empty \\(0 bytes\\)", "cut.pt": f"it is a zip archive of {len(good) // 2} bytes whose end is missing",
             "garbage.pt": "its 3000 bytes do not start like a checkpoint", "notes.pt": "its 19 bytes do not start like a checkpoint \\(they start with b.epoc.\\)"}
    for name, why in cases.items():
        with pytest.raises(CheckpointError, match=f"{name} is not a readable checkpoint: {why}.*Expected a file written by"):
            tb.load_checkpoint(tmp_path / name)
    assert not issubclass(CheckpointError, UnsafeCheckpointError) and not issubclass(UnsafeCheckpointError, CheckpointError)
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="holds a list, not a checkpoint"): tb.load_checkpoint(tmp_path / "list.pt")


def test_a_run_folder_stands_for_its_last_pt(tmp_path):
    run_dir = tmp_path / "runs" / "a"
    tb.save_checkpoint(run_dir / "last.pt", model=nn.Linear(2, 2), step=7)
    assert tb.load_checkpoint(run_dir)["step"] == 7 and tb.checkpoint_file(str(run_dir)) == run_dir / "last.pt"
    with pytest.raises(FileNotFoundError, match="folder without a last.pt.*runs inside it: .*runs/a"):
        tb.load_checkpoint(tmp_path / "runs")
    with pytest.raises(FileNotFoundError, match="does not exist \\(neither a checkpoint file nor a run folder\\)"):
        tb.load_checkpoint(tmp_path / "runs" / "b")


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
