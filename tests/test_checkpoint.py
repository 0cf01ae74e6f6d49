"""Checkpoint safety: atomic writes survive SIGKILL and clean up after it; failed writes keep the old file; the writer
refuses what the reader would refuse; corrupt files are told apart from unsafe ones."""
import contextlib, errno, math, os, random, signal, subprocess, sys, textwrap, warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import trainbook as tb
import numpy as np
from trainbook.checkpoint import CheckpointError, UnsafeCheckpointError, prepare_run_dir, probe_writable, release_run_dir
from trainbook.optim import restore_scheduler
from trainbook.resume import resume_changes, run_signature, saved_signature
import threading
from helpers import blobs, interrupted, mlp

CE = nn.functional.cross_entropy

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
    """Kill the writer six times: at random moments (odd trials), or just after a write began (even trials, so
    that a killed write's temp file is certain to exist); last.pt always loads and the next save removes the
    leftover."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    run_dir = tmp_path / "run"
    path = run_dir / "last.pt"
    rng = random.Random(0)
    leftovers_seen = 0
    for trial in range(6):
        proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True)
        target = rng.randint(1, 5)
        done = 0
        for line in proc.stdout:
            done = int(line) + 1 if line.strip().isdigit() else done
            if done >= target and (line.startswith("writing") if trial % 2 == 0 else line.strip().isdigit()): break
        # odd trials: spin a random number of iterations so the kill lands at a random point of a later write;
        # even trials kill at once (a spin of up to 200,000 iterations outlasted a 2 MB write: no leftover to see)
        spin = rng.randint(0, 200_000)
        for _ in range(spin if trial % 2 else 0): pass
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


def test_bytes_changed_inside_a_checkpoint_fail_its_checksum_and_are_refused(tmp_path):
    "A flipped byte in the weights loads in torch as other weights; the zip's checksums tell, and read_checkpoint says so."
    model = nn.Linear(64, 64)
    tb.save_checkpoint(tmp_path / "last.pt", model=model, step=3)
    tb.save_checkpoint(tmp_path / "best.pt", model=model, step=2)
    raw = bytearray((tmp_path / "last.pt").read_bytes())
    at = raw.find(model.weight.detach().numpy().tobytes()[:64])  # the weights' bytes, inside the archive
    assert at > 0
    raw[at + 100] ^= 0x01
    (tmp_path / "last.pt").write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"last.pt is not a readable checkpoint: its entry '.*data/0' fails its "
                                              r"checksum.*best.pt.*resume="):
        tb.read_checkpoint(tmp_path)
    torch.serialization.set_crc32_options(False)  # a file saved without checksums loads as before
    try: tb.save_checkpoint(tmp_path / "plain.pt", model=model, step=1)
    finally: torch.serialization.set_crc32_options(True)
    assert tb.read_checkpoint(tmp_path / "plain.pt")["step"] == 1


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


# --- the run folder: writable, locked, never an earlier run's; the resume signature (moved from test_guard) ---
X, Y = torch.randn(16, 4), torch.randint(0, 2, (16,))
def test_probe_writable_refuses_files_and_read_only_folders(tmp_path):
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(ValueError, match="checkpoint_dir='.*a_file' is a file, not a folder"): probe_writable(tmp_path / "a_file")
    with pytest.raises(ValueError, match="checkpoint_dir='.*a_file/sub' is not a writable folder \\(Not a directory\\)"):
        probe_writable(tmp_path / "a_file" / "sub")
    assert probe_writable(tmp_path / "new" / "run", "out") == tmp_path / "new" / "run"
    assert list((tmp_path / "new" / "run").iterdir()) == []  # the probe file is gone
    with small_tmpfs(tmp_path / "mnt") as folder:
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        with pytest.raises(ValueError, match="checkpoint_dir='.*mnt' is not a writable folder \\(Read-only file system\\)"):
            probe_writable(folder)


def visible(folder):
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_a_new_run_never_replaces_an_earlier_runs_files(tmp_path):
    runs = tmp_path / "runs"
    first, note = prepare_run_dir(runs)
    assert first == runs and note is None
    tb.save_checkpoint(runs / "last.pt", model=nn.Linear(2, 2), step=1)
    second, note = prepare_run_dir(str(runs))
    assert second == runs / "version_1" and note.kind == "run_dir_versioned" and note.data["run_dir"] == str(second)
    assert "resume=" in note.advice and "overwrite=True" in note.advice
    assert "(%train: --overwrite)" in note.advice  # probe 37: the magic's flag, not fit's argument alone
    third, _ = prepare_run_dir(runs)  # version_1 is claimed (its run is starting), so the next one is taken
    assert third == runs / "version_2"
    assert tb.load_checkpoint(runs)["step"] == 1  # untouched
    with pytest.raises(ValueError, match="is being written by process"):  # the first run still holds it
        prepare_run_dir(runs, resume=runs / "last.pt")
    for folder in (first, second, third): release_run_dir(folder)  # their runs ended
    assert prepare_run_dir(runs, resume=runs / "last.pt") == (runs, None)  # resume continues in place
    tb.save_checkpoint(second / "last.pt", model=nn.Linear(2, 2), step=1)
    assert prepare_run_dir(runs, resume=second)[0] == second
    assert prepare_run_dir(tmp_path / "elsewhere", resume=runs)[0] == tmp_path / "elsewhere"
    release_run_dir(runs)
    assert prepare_run_dir(runs, overwrite=True) == (runs, None)  # overwrite=True, and only then, takes it...
    assert visible(runs) == ["last.pt", "version_1", "version_2"]  # ...its files replaced at the run's first write
    release_run_dir(runs)
    assert prepare_run_dir(None) == (None, None)


def test_two_runs_starting_at_once_get_different_folders(tmp_path):
    got, barrier = [], threading.Barrier(8)
    def start():
        barrier.wait()
        got.append(prepare_run_dir(tmp_path / "runs")[0])
    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert len(set(got)) == 8


def test_a_folder_claimed_by_a_run_that_died_before_writing_is_reused(tmp_path):
    code = f"from trainbook.checkpoint import prepare_run_dir; prepare_run_dir({str(tmp_path / 'runs')!r})"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert prepare_run_dir(tmp_path / "runs")[0] == tmp_path / "runs"  # its claimer is gone and wrote nothing


def test_a_second_live_process_on_one_run_folder_is_refused_and_a_dead_ones_lock_is_taken_over(tmp_path):
    "Two kernels, one checkpoint_dir: the second's resume is refused naming the holder; once it is gone, taken over."
    folder = tmp_path / "runs"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from trainbook.checkpoint import prepare_run_dir; prepare_run_dir({str(folder)!r}); "
                               "print('held', flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "held"  # the other process holds the folder now
        tb.save_checkpoint(folder / "last.pt", model=nn.Linear(2, 2), step=1)
        with pytest.raises(tb.RunFolderBusy, match=f"being written by process {holder.pid} on "):
            prepare_run_dir(folder, resume=folder)
        assert prepare_run_dir(folder)[0] == folder / "version_1"  # a new run goes beside it, never into it
    finally:
        holder.communicate("", timeout=60)  # it ends without releasing: a stale lock stays behind
    with pytest.warns(UserWarning, match="which is gone; this run takes the folder over"):
        assert prepare_run_dir(folder, resume=folder)[0] == folder


def signature(model=None, opt=None, batches=10, **cfg):
    model = model if model is not None else nn.Linear(4, 2)
    opt = opt if opt is not None else torch.optim.AdamW(model.parameters())
    return run_signature(model, opt, tb.TensorLoader(X.repeat(batches, 1), Y.repeat(batches), batch_size=16),
                         tb.TrainConfig(**cfg), split_fingerprint="ab12")


def test_resume_changes_lists_each_change_old_to_new():
    saved = signature(lr=1e-3, seed=0, accum_steps=1, schedule="constant")
    now = signature(lr=3e-4, seed=1, accum_steps=2, schedule="warmup_cosine", batches=12, checkpoint_dir="elsewhere")
    now["split_fingerprint"] = "cd34"
    now["versions"]["torch"] = "9.9.9"
    (finding,) = resume_changes(saved, now)
    assert finding.kind == "resume_changed" and finding.severity == "warning"
    assert finding.data["changes"] == {"split_fingerprint": ["ab12", "cd34"], "config.lr": [1e-3, 3e-4],
                                       "config.accum_steps": [1, 2], "config.schedule": ["constant", "warmup_cosine"],
                                       "config.seed": [0, 1], "loader.batches": [10, 12],
                                       "versions.torch": [torch.__version__, "9.9.9"]}
    assert "config.lr: 0.001 → 0.0003" in finding.message
    assert resume_changes(saved, signature(lr=1e-3, checkpoint_dir="moved")) == []  # where files go changes nothing


def test_resume_refuses_what_cannot_continue_exactly():
    saved = signature()
    with pytest.raises(ValueError, match="weight has shape \\(2, 4\\) in the checkpoint and \\(2, 5\\) in the model"):
        resume_changes(saved, signature(model=nn.Linear(5, 2)))
    with pytest.raises(ValueError, match="the model has no 1.weight, 1.bias"):
        resume_changes(signature(model=nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))), signature(model=nn.Sequential(nn.Linear(4, 4))))
    net = nn.Linear(4, 2)
    with pytest.raises(ValueError, match="the optimizer was AdamW and is now SGD"):
        resume_changes(saved, signature(net, torch.optim.SGD(net.parameters(), lr=0.1)))
    with pytest.raises(ValueError, match="stopped after batch 9 of its epoch, but dl_train now has 6 batches"):
        resume_changes({**saved, "batch_idx": 9}, signature(batches=6))


def test_saved_signature_of_a_checkpoint_with_and_without_one(tmp_path):
    net = nn.Linear(4, 2)
    sig = signature(model=net)
    tb.save_checkpoint(tmp_path / "new.pt", model=net, signature=sig, batch_idx=3)
    assert saved_signature(tb.load_checkpoint(tmp_path / "new.pt")) == {**sig, "batch_idx": 3}
    # an older checkpoint (no signature): rebuilt from its config, environment and model state
    tb.save_checkpoint(tmp_path / "old.pt", model=net, config=tb.TrainConfig(lr=0.1).to_dict(), batch_idx=0,
                       environment={"torch": "2.0.0", "packages": {"trainbook": "0.0.9"}}, split_fingerprint="ab12")
    old = saved_signature(tb.load_checkpoint(tmp_path / "old.pt"))
    assert old["shapes"] == {"weight": [2, 4], "bias": [2]}
    changes = resume_changes(old, sig)[0].data["changes"]
    assert changes["config.lr"] == [0.1, 1e-3] and changes["versions.torch"] == ["2.0.0", torch.__version__]


def test_a_changed_loader_order_is_a_resume_change(tmp_path):
    "Seen (F10): a DataLoader's shuffle turned off between a run and its resume: no resume_changed, other results."
    from torch.utils.data import DataLoader, TensorDataset
    Xs, ys = blobs(n=64, d=4, classes=2)
    loader = lambda shuffle: DataLoader(TensorDataset(Xs, ys), batch_size=8, shuffle=shuffle)
    cfg = tb.TrainConfig(epochs=2, lr=1e-2, device="cpu", checkpoint_dir=str(tmp_path))

    class CtrlC(tb.Callback):
        def after_step(self, state):
            if state.step == 3: raise KeyboardInterrupt
    net = lambda: mlp(d=4, out=2)
    assert interrupted(tb.fit, net(), loader(True), loss_fn=nn.functional.cross_entropy, config=cfg, live=False,
                       callbacks=[CtrlC()]).stopped == "interrupted"
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    run = tb.fit(net(), loader(False), loss_fn=nn.functional.cross_entropy, config=cfg, live=False, resume=tmp_path)
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert changed.data["changes"] == {"loader.order": ["RandomSampler", "SequentialSampler"]}
    # a TensorLoader's order: shuffled or not, and its seed; the same loader again is no change
    order = lambda **kw: run_signature(nn.Linear(4, 2), None, tb.TensorLoader(X, Y, **kw))["loader"]["order"]
    assert order() == "in order" and order(shuffle=True, seed=3) == "shuffled, seed 3"
    assert resume_changes(signature(), signature()) == []


def test_a_checkpoint_is_no_record_the_earlier_run_goes_at_the_first_run_json(tmp_path):
    "Probe 26, f1: the earlier run went at the new run's first checkpoint: a run ending next lost it."
    from trainbook.core import History
    from trainbook.run import Run, write_run_record
    EARLIER_FOLDER = ".trainbook-earlier"  # where the earlier run's files are kept until the first record

    def earlier_run():
        tb.save_checkpoint(tmp_path / "last.pt", model=nn.Linear(2, 2), step=9)
        tb.save_checkpoint(tmp_path / "best.pt", model=nn.Linear(2, 2), step=6)
        write_run_record(Run(History(), tb.TrainConfig(), "completed", step=9), tmp_path / "run.json")
        return files()

    def files():
        return {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p.name[0] != "."}

    net = nn.Linear(2, 2)
    before = earlier_run()
    keeper = tb.Checkpointer(tmp_path, parts={"model": net, "optimizer": None})
    keeper.prepare(overwrite=True)
    keeper.save("last.pt", step=1)
    assert keeper.path("last.pt") == tmp_path / "last.pt" and keeper.path("best.pt") is None  # the earlier's
    assert (tmp_path / "best.pt").read_bytes() == before["best.pt"] and (tmp_path / EARLIER_FOLDER).is_dir()
    with pytest.warns(UserWarning, match="this run ended before its first run.json"):
        keeper.release()  # it ends without a record (its final one could not be written, say)
    assert files() == before and not (tmp_path / EARLIER_FOLDER).exists()
    assert tb.checkpoint.folder_writer(tmp_path) is None
    keeper = tb.Checkpointer(tmp_path, parts={"model": net, "optimizer": None})
    keeper.prepare(overwrite=True)
    keeper.save("last.pt", step=1)
    keeper.write_run(Run(History(), tb.TrainConfig(), "running", step=1), final=False)  # its first record
    assert sorted(p.name for p in tmp_path.iterdir()) == [".trainbook-run", "last.pt", "run.json"]
    keeper.release()
    assert tb.load_checkpoint(tmp_path)["step"] == 1 and tb.Run.load(tmp_path).stopped == "running"


@pytest.mark.parametrize("entries, said", [
    ({"version": 99}, r"version 99.*this trainbook reads checkpoint version 1.*upgrade trainbook"),
    ({"version": "1"}, r"version '1'.*a whole number"),
    ({"version": 0}, r"version 0 is below 1"), ({"version": -5}, r"version -5 is below 1"),  # probe 37: loaded
    ({"format": "trainbook-checkpoint/99"}, r"'trainbook-checkpoint/99'.*not a trainbook checkpoint \(format "
                                            r"'trainbook-checkpoint'\)")])
def test_a_checkpoint_of_another_format_or_a_newer_version_is_refused_naming_the_file(tmp_path, entries, said):
    "Probe 35: the format and version save_checkpoint writes were never read: a version-99 file loaded silently."
    path = tmp_path / "run" / "best.pt"
    tb.save_checkpoint(path, model=nn.Linear(3, 2), step=1)
    torch.save({**torch.load(path, weights_only=True), **entries}, path)
    with pytest.raises(CheckpointError, match=f"{path}.*{said}"):
        tb.load_checkpoint(path, nn.Linear(3, 2))
    run = tb.Run(tb.History(), tb.TrainConfig(), "completed", run_dir=path.parent, best=0.1, best_epoch=0)
    with pytest.raises(CheckpointError, match=said): run.restore_best(nn.Linear(3, 2))
    torch.save({"model": nn.Linear(3, 2).state_dict(), "version": 7}, path)  # torch.save's own dict: no format
    assert tb.load_checkpoint(path, nn.Linear(3, 2))["version"] == 7


def test_load_checkpoint_into_a_model_of_other_shapes_names_the_file_and_the_keys(tmp_path):
    "Probe 35: torch's bare 'Error(s) in loading state_dict' named no file (restore_best's message, one home)."
    path = tmp_path / "w.pt"
    tb.save_checkpoint(path, model=nn.Linear(7, 2))
    with pytest.raises(ValueError, match=rf"{path} does not fit this model: size mismatch for weight: .*\[2, 7\].*"
                                         r"\[2, 8\].*same layers and shapes"):
        tb.load_checkpoint(path, nn.Linear(8, 2))
    with pytest.raises(ValueError, match=rf"{path} does not fit this model: .*Missing key.*0.weight"):
        tb.load_checkpoint(path, nn.Sequential(nn.Linear(7, 2)))


def test_a_resume_into_a_model_of_other_shapes_names_the_checkpoint_file(tmp_path):
    "Probe 37: fit(resume=)'s 'cannot be resumed exactly' named the keys, not the file (load_checkpoint names both)."
    cfg = tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path))
    X, y = blobs(n=32, d=4, classes=2)
    tb.fit(mlp(4, 8, 2), tb.TensorLoader(X, y, batch_size=8), loss_fn=CE, config=cfg, live=False)
    with pytest.raises(ValueError, match=rf"checkpoint '{tmp_path / 'last.pt'}' cannot be resumed exactly: .*shape"):
        tb.fit(mlp(4, 6, 2), tb.TensorLoader(X, y, batch_size=8), loss_fn=CE, config=cfg.replace(epochs=2),
               resume=tmp_path, live=False)


def test_load_checkpoint_with_a_scheduler_of_other_settings_keeps_them_and_says_so(tmp_path):
    "A longer CosineAnnealingLR loaded by hand: its T_max and the checkpoint's step, the lr of its closed form."
    def parts(t_max):
        opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        return opt, torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=t_max)
    opt, sched = parts(8)
    for _ in range(8): opt.step(); sched.step()
    tb.save_checkpoint(tmp_path / "last.pt", optimizer=opt, scheduler=sched)
    assert opt.param_groups[0]["lr"] == 0.0  # the old plan's end
    opt, sched = parts(16)
    with pytest.warns(UserWarning, match=r"T_max: 8 → 16\).*applied: CosineAnnealingLR keeps the settings passed"):
        tb.load_checkpoint(tmp_path, optimizer=opt, scheduler=sched)
    assert sched.T_max == 16 and sched.last_epoch == 8
    assert math.isclose(opt.param_groups[0]["lr"], 0.05, rel_tol=1e-12)  # half way down the new cosine
    opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
    short = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=4)
    tb.save_checkpoint(tmp_path / "one.pt", optimizer=opt, scheduler=short)
    saved = torch.load(tmp_path / "one.pt", weights_only=True)["scheduler"]
    shorter = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    with pytest.raises(ValueError, match=r"OneCycleLR\(total_steps=3\) ends before the checkpoint's step 9"):
        restore_scheduler(shorter, {**saved, "last_epoch": 9})


def test_resume_of_a_folder_whose_run_was_killed_before_its_first_checkpoint_starts_anew(tmp_path):
    "Probe 54: a SIGKILL in the first epoch leaves only a dead lock; a requeued job's resume=D raised FileNotFoundError."
    folder = tmp_path / "run"
    subprocess.run([sys.executable, "-c", f"from trainbook.checkpoint import prepare_run_dir; "
                                          f"prepare_run_dir({str(folder)!r})"],  # exits holding it: a stale lock
                   check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=120)
    assert sorted(p.name for p in folder.iterdir()) != [] and not (folder / "run.json").exists()

    def train(folder=None, resume=None):
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        run = tb.fit(model, tb.TensorLoader(X, Y, batch_size=16), loss_fn=nn.functional.cross_entropy, live=False,
                     config=tb.TrainConfig(epochs=2, checkpoint_dir=folder), resume=resume)
        return run, model
    with pytest.warns(UserWarning, match="was killed or cut short before its first checkpoint .* this run starts anew"):
        run, model = train(folder, resume=folder)
    plain, plain_model = train()
    assert run.run_dir == folder and run.step == plain.step and run.stopped == "completed"
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), plain_model.state_dict().values()))
    assert [f.kind for f in run.findings].count("nothing_to_resume") == 1


def test_resume_of_an_empty_folder_starts_anew_and_says_the_folder_was_empty(tmp_path):
    """Probe 79, r_5: resume= an empty folder (a job script's, or a typo that happens to exist) started anew saying
    'the run there was killed or cut short', a run that never was. It starts anew (the requeue pattern) and says
    the folder was empty, in case its name was mistyped."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.warns(UserWarning) as said:
        run = tb.fit(nn.Linear(4, 2), tb.TensorLoader(X, Y, batch_size=16), loss_fn=nn.functional.cross_entropy,
                     live=False, config=tb.TrainConfig(epochs=1), resume=empty)
    text = " ".join(str(w.message) for w in said)
    assert "the folder is empty: no run has written there" in text and "check the folder's name" in text
    assert "killed" not in text and run.stopped == "completed"
    [note] = [f for f in run.findings if f.kind == "nothing_to_resume"]
    assert note.data["stopped"] == "empty"


def test_a_real_resume_drops_the_note_that_its_run_started_anew(tmp_path):
    """Probe 83, r_3: a run begun with resume= an empty folder notes 'nothing to resume ... this run starts anew';
    a later fit resuming that run from its last.pt carried the note, telling the user the resumed run started anew."""
    empty, folder = tmp_path / "empty", tmp_path / "run"
    empty.mkdir()
    cfg = tb.TrainConfig(epochs=2, checkpoint_dir=folder)
    with pytest.warns(UserWarning, match="the folder is empty"):
        first = tb.fit(nn.Linear(4, 2), tb.TensorLoader(X, Y, batch_size=16), loss_fn=nn.functional.cross_entropy,
                       live=False, config=cfg, resume=empty)
    assert [f.kind for f in first.findings].count("nothing_to_resume") == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the longer plan's resume_changed
        again = tb.fit(nn.Linear(4, 2), tb.TensorLoader(X, Y, batch_size=16), loss_fn=nn.functional.cross_entropy,
                       live=False, config=cfg.replace(epochs=3), resume=folder / "last.pt")
    assert again.step > first.step and "nothing_to_resume" not in [f.kind for f in again.findings]
