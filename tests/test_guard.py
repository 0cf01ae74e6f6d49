"""The door checks of trainbook.guard, headless: loss classes, empty loaders, monitors that name nothing, unwritable
or already used run folders, and resumes that changed something (or cannot be exact)."""
import os, subprocess, sys, threading

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainbook as tb
from trainbook.checkpoint import prepare_run_dir, probe_writable, release_run_dir, resume_changes, run_signature, saved_signature
from trainbook.guard import check_loader, check_loss_fn, check_monitor, nonfinite_validation, require_batches
from test_checkpoint import small_tmpfs
from helpers import blobs, mlp

X, Y = torch.randn(16, 4), torch.randint(0, 2, (16,))


def test_a_loss_class_is_a_type_error_saying_pass_an_instance():
    with pytest.raises(TypeError, match=r"class nn.CrossEntropyLoss, not a loss: pass an instance, loss_fn=nn.CrossEntropyLoss\(\)"):
        check_loss_fn(nn.CrossEntropyLoss)
    with pytest.raises(TypeError, match="loss_fn must be callable"): check_loss_fn("mse")
    assert check_loss_fn(None) is None and check_loss_fn(nn.functional.mse_loss) is nn.functional.mse_loss


def test_loaders_must_be_re_iterable_and_not_empty():
    with pytest.raises(TypeError, match="dl_train must be re-iterable \\(a generator"):
        check_loader((b for b in [(X, Y)]), "dl_train")
    with pytest.raises(TypeError, match="dl_valid must be re-iterable.*got int"): check_loader(3, "dl_valid")
    with pytest.raises(ValueError, match="dl_valid is empty: it yields no batches$"): check_loader([], "dl_valid")
    with pytest.raises(ValueError, match="dl_valid is empty: it yields no batches; its dataset has 0 rows"):
        check_loader(DataLoader(TensorDataset(X[:0], Y[:0]), batch_size=4), "dl_valid")
    with pytest.raises(ValueError, match="16 rows, fewer than batch_size=32, and drop_last=True"):
        check_loader(DataLoader(TensorDataset(X, Y), batch_size=32, drop_last=True), "dl_train")
    assert check_loader(tb.TensorLoader(X, Y, batch_size=4), "dl_train") == 4


def test_an_empty_loader_without_len_fails_at_its_first_epoch_naming_the_argument():
    class Stream:
        def __init__(self, batches): self.batches = batches
        def __iter__(self): return iter(self.batches)
    assert check_loader(Stream([]), "dl_train") is None  # cannot know yet
    with pytest.raises(ValueError, match="dl_train yielded no batches in epoch 2"):
        for _ in require_batches(iter(Stream([])), "dl_train", epoch=2): pass
    seen = list(require_batches(iter(Stream([(X, Y)] * 3))))
    assert len(seen) == 3
    with pytest.raises(ValueError, match="dl_valid is empty"): check_loader(Stream([]), "dl_valid", probe=True)
    assert check_loader(Stream([(X, Y)]), "dl_valid", probe=True) is None


def test_nonfinite_validation_names_values_and_epoch_and_stops_only_for_loss_or_monitor():
    nan, inf = float("nan"), float("inf")
    stop = nonfinite_validation({"loss": nan, "accuracy": 0.5}, epoch=3, step=40)
    assert stop.kind == "nonfinite" and stop.severity == "error"
    assert "epoch 3" in stop.message and "valid_loss=nan" in stop.message and stop.data == {
        "split": "valid", "names": ["loss"], "epoch": 3, "step": 40}
    assert nonfinite_validation({"loss": 0.2, "f1": inf}, epoch=1, step=5, monitor="f1").severity == "error"
    assert nonfinite_validation({"loss": 0.2, "auc": nan}, epoch=1, step=5).severity == "warning"
    assert nonfinite_validation({"loss": 0.2, "auc": 0.7}, epoch=1, step=5) is None


@pytest.mark.parametrize("monitor, mode, has_valid, metrics, message", [
    ("valid_acc", "max", True, ["accuracy"], "names nothing this run logs \\(did you mean 'valid_accuracy'\\?\\); "
                                             "it logs: train_loss, valid_loss, valid_accuracy"),
    ("valid_accuracy", "max", True, [], "it logs: train_loss, valid_loss\\."),
    ("valid_accuracy", "max", False, ["accuracy"], "needs validation data, but dl_valid is None.*one of: train_loss$"),
    ("valid_loss", "max", True, [], "loss is better when lower.*use mode='min'"),
    ("valid_accuracy", "min", True, ["accuracy"], "accuracy is better when higher.*use mode='max'"),
    ("train_accuracy", "max", True, ["accuracy"], "names nothing this run logs")])
def test_a_monitor_must_name_what_the_run_logs(monitor, mode, has_valid, metrics, message):
    with pytest.raises(ValueError, match=message):
        check_monitor(tb.TrainConfig(monitor=monitor, mode=mode), has_valid, metrics)


def test_monitors_that_are_logged():
    assert check_monitor(tb.TrainConfig(monitor="valid_f1", mode="max"), True, ["f1"]) == ("valid", "f1")
    assert check_monitor(tb.TrainConfig(monitor="valid_custom", mode="min"), True, ["custom"]) == ("valid", "custom")
    assert check_monitor(tb.TrainConfig(monitor="train_loss"), True) == ("train", "loss")
    assert check_monitor(tb.TrainConfig(), False) == ("train", "loss")  # the default, without validation data


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
    assert prepare_run_dir(runs, overwrite=True) == (runs, None)
    assert visible(runs) == ["version_1", "version_2"]  # overwrite=True, and only then, removes the earlier files
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


# ---- fit refuses at the door, and keeps what a user made (one test per bullet of issue 12's "What was seen") ----


def data(n=64):
    X, y = blobs(n=n, d=8, classes=3)
    return tb.TensorLoader(X, y, batch_size=16), tb.TensorLoader(X[:32], y[:32], batch_size=16)


def weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def refused_before_the_first_step(exc, match, model=None, **fit_kwargs):
    "fit raises `exc` matching `match`, and the model's weights are those it came with: no optimizer step ran."
    model = model if model is not None else mlp()
    before = weights(model)
    kwargs = {"loss_fn": nn.functional.cross_entropy, "live": False, **fit_kwargs}
    dl_train, dl_valid = kwargs.pop("dl_train", None), kwargs.pop("dl_valid", None)
    with pytest.raises(exc, match=match):
        tb.fit(model, dl_train, dl_valid, **kwargs)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_unresumable_runs_path_and_numpy_config_values_resume(tmp_path):
    "Seen: Path / numpy config values wrote checkpoints that resume refused as unsafe. Now they are plain and resume."
    import numpy as np
    dl_train, dl_valid = data()
    cfg = tb.TrainConfig(checkpoint_dir=tmp_path / "runs" / "a", epochs=np.int64(2), lr=np.float64(1e-2), device="cpu")
    run = tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, live=False, config=cfg)
    assert run.run_dir == tmp_path / "runs" / "a"
    more = tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, live=False,
                  config=cfg.replace(epochs=3), resume=tmp_path / "runs" / "a")  # the run folder: its last.pt
    assert more.stopped == "completed" and more.step == 3 * len(dl_train)


def test_unresumable_runs_numpy_callback_state_is_refused_at_save_time(tmp_path):
    "Seen: a callback whose state holds a numpy number made an unresumable last.pt. Now the save names the key."
    import numpy as np
    class Tracker(tb.Callback):
        def __init__(self): self.best = None
        def after_step(self, state): self.best = np.float64(state.loss)
        def state_dict(self): return {"best": self.best}
        def load_state_dict(self, s): self.best = s["best"]
    dl_train, dl_valid = data()
    with pytest.raises(TypeError, match=r"callbacks\.\d+:Tracker\.best is a numpy\.float64.*weights_only=True"):
        tb.fit(mlp(), dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, live=False, callbacks=[Tracker()],
               config=tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path)))
    assert not (tmp_path / "last.pt").exists()  # nothing unloadable was written


@pytest.mark.parametrize("monitor, mode, valid, match", [
    ("valid_acc", "max", True, "monitor='valid_acc' names nothing this run logs \\(did you mean 'valid_accuracy'"),
    ("valid_accuracy", "max", False, "monitor='valid_accuracy' needs validation data, but dl_valid is None"),
    ("valid_loss", "max", True, "use mode='min'")])
def test_wrong_early_stopping_is_refused_before_the_first_step(monitor, mode, valid, match):
    "Seen: a typo'd monitor silently disabled early stopping; valid_* without dl_valid followed the train loss in max mode."
    dl_train, dl_valid = data()
    refused_before_the_first_step(ValueError, match, dl_train=dl_train, dl_valid=dl_valid if valid else None,
                                  metrics="accuracy", config=tb.TrainConfig(monitor=monitor, mode=mode, patience=2))


def test_nan_in_validation_data_stops_as_nonfinite_naming_metric_and_epoch(tmp_path):
    "Seen: NaN in the validation data ended the run as 'early_stopping', with no finding."
    dl_train, _ = data()
    X, y = blobs(n=32, d=8, classes=3)
    X[3, 2] = float("nan")
    run = tb.fit(mlp(), dl_train, tb.TensorLoader(X, y, batch_size=16), loss_fn=nn.functional.cross_entropy,
                 live=False, config=tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(tmp_path)))
    assert run.stopped == "nonfinite" and run.epoch == 0
    (finding,) = [f for f in run.findings if f.kind == "nonfinite"]
    assert "valid_loss" in finding.message and "epoch 0" in finding.message and finding.data["epoch"] == 0
    assert run.last_path is not None  # the run's state is kept


@pytest.mark.parametrize("case", ["file", "read_only", "empty_valid", "zero_row_valid", "zero_row_batches",
                                  "loss_class", "empty_train_list"])
def test_errors_come_before_the_first_step(tmp_path, case):
    "Seen: each of these failed after a whole epoch of training, or inside torch with an unrelated message."
    dl_train, dl_valid = data()
    X, y = blobs(n=16, d=8, classes=3)
    kwargs = dict(dl_train=dl_train, dl_valid=dl_valid, config=tb.TrainConfig(epochs=1, device="cpu"))
    if case == "file":
        (tmp_path / "taken").write_text("a file")
        kwargs["config"] = kwargs["config"].replace(checkpoint_dir=str(tmp_path / "taken"))
        refused_before_the_first_step(ValueError, "checkpoint_dir='.*taken' is a file, not a folder", **kwargs)
    elif case == "read_only":
        with small_tmpfs(tmp_path / "mnt") as folder:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
            kwargs["config"] = kwargs["config"].replace(checkpoint_dir=str(folder / "run"))
            refused_before_the_first_step(ValueError, "is not a writable folder \\(Read-only file system\\)", **kwargs)
    elif case == "empty_valid":
        refused_before_the_first_step(ValueError, "dl_valid is empty", **{**kwargs, "dl_valid": []})
    elif case == "zero_row_valid":
        zero = DataLoader(TensorDataset(X[:0], y[:0]), batch_size=8)
        refused_before_the_first_step(ValueError, "dl_valid is empty: it yields no batches; its dataset has 0 rows",
                                      **{**kwargs, "dl_valid": zero})
    elif case == "zero_row_batches":  # a list of batches that hold no rows: it has a length, but nothing to score
        empty = [(X[:0], y[:0])] * 3
        refused_before_the_first_step(ValueError, "dl_valid holds 3 batches but no rows", **{**kwargs, "dl_valid": empty})
    elif case == "loss_class":
        refused_before_the_first_step(TypeError, "pass an instance, loss_fn=nn.CrossEntropyLoss\\(\\)",
                                      **{**kwargs, "loss_fn": nn.CrossEntropyLoss})
    elif case == "empty_train_list":
        refused_before_the_first_step(ValueError, "dl_train is empty", **{**kwargs, "dl_train": []})


def test_an_empty_loader_without_len_fails_at_the_first_epoch_naming_dl_train():
    "Seen: an empty iterable without len 'completed' with zero steps."
    class Stream:
        def __iter__(self): return iter([])
    with pytest.raises(ValueError, match="dl_train yielded no batches in epoch 0"):
        tb.fit(mlp(), Stream(), loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(device="cpu"))


def test_a_full_disk_during_fit_names_the_path_and_cause(tmp_path):
    "Seen: [enforce fail at inline_container.cc:672]. Now an OSError naming the file and the cause; the run is kept."
    with small_tmpfs(tmp_path / "mnt", size="64k") as folder:
        torch.manual_seed(0)
        big = nn.Sequential(nn.Linear(8, 256), nn.ReLU(), nn.Linear(256, 3))  # ~30 kB of weights, ~90 kB with AdamW
        dl_train, dl_valid = data()
        with pytest.raises(OSError, match="could not write .*mnt/.*\\.pt: No space left on device") as e:
            tb.fit(big, dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, live=False,
                   config=tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(folder)))
        assert e.value.run.stopped == "failed" and len(e.value.run.records) > 0  # the run and its history are kept


def test_confusing_checkpoint_errors_resume_from_garbage_or_a_run_folder(tmp_path):
    "Seen: garbage reported as unsafe, an empty file as EOFError, a truncated one as a miniz error, a run folder as missing."
    dl_train, dl_valid = data()
    (tmp_path / "garbage.pt").write_bytes(b"\x00\x01not a checkpoint" * 10)
    (tmp_path / "empty.pt").write_bytes(b"")
    for name, why in (("garbage.pt", "do not start like a checkpoint"), ("empty.pt", "it is empty")):
        refused_before_the_first_step(tb.CheckpointError, why, dl_train=dl_train, dl_valid=dl_valid,
                                      resume=tmp_path / name, config=tb.TrainConfig(device="cpu"))


def test_a_second_run_in_the_same_folder_keeps_the_first_runs_files(tmp_path):
    "Seen: re-running fit with the same checkpoint_dir replaced the previous run's best.pt/last.pt silently."
    dl_train, dl_valid = data()
    cfg = tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path / "a"))
    first = tb.fit(mlp(seed=1), dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, live=False, config=cfg)
    saved = (tmp_path / "a" / "last.pt").read_bytes()
    second = tb.fit(mlp(seed=2), dl_train, dl_valid, loss_fn=nn.functional.cross_entropy, live=False, config=cfg)
    assert first.run_dir == tmp_path / "a" and second.run_dir == tmp_path / "a" / "version_1"
    assert (tmp_path / "a" / "last.pt").read_bytes() == saved
    assert second.last_path == tmp_path / "a" / "version_1" / "last.pt"
    assert any(f.kind == "run_dir_versioned" for f in second.findings)


def test_resume_reports_what_changed_and_refuses_what_cannot_be_exact(tmp_path):
    "Seen: a different lr, seed, batch size... resumed silently; a shorter loader raised a bare StopIteration."
    X, y = blobs(n=128, d=8, classes=3)
    dl_train = tb.TensorLoader(X, y, batch_size=16)
    class StopAt(tb.Callback):
        def after_step(self, state):
            if state.step == 5: state.control.request_stop()
    cfg = tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=str(tmp_path), lr=1e-2)
    tb.fit(mlp(), dl_train, loss_fn=nn.functional.cross_entropy, live=False, config=cfg, callbacks=[StopAt()])
    short = tb.TensorLoader(X[:48], y[:48], batch_size=16)  # 3 batches; the checkpoint stopped after batch 5
    refused_before_the_first_step(ValueError, "stopped after batch 5 of its epoch, but dl_train now has 3 batches",
                                  dl_train=short, config=cfg, resume=tmp_path / "last.pt")
    run = tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=16, shuffle=True), loss_fn=nn.functional.cross_entropy,
                 live=False, config=cfg.replace(lr=3e-3, seed=4), resume=tmp_path)
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert changed.severity == "warning" and run.stopped == "completed"
    assert changed.data["changes"]["config.lr"] == [1e-2, 3e-3] and changed.data["changes"]["config.seed"] == [0, 4]
