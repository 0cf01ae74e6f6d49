"""The door checks of trainbook.guard, headless: loss classes, empty loaders, monitors that name nothing, unwritable
or already used run folders, and resumes that changed something (or cannot be exact)."""
import os, subprocess, sys, threading

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainbook as tb
from trainbook.guard import (check_loader, check_loss_fn, check_monitor, nonfinite_validation, prepare_run_dir,
                             probe_writable, require_batches, resume_changes, run_signature, saved_signature)
from test_checkpoint import small_tmpfs

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
    assert prepare_run_dir(runs, resume=runs / "last.pt") == (runs, None)  # resume continues in place
    tb.save_checkpoint(second / "last.pt", model=nn.Linear(2, 2), step=1)
    assert prepare_run_dir(runs, resume=second)[0] == second
    assert prepare_run_dir(tmp_path / "elsewhere", resume=runs)[0] == tmp_path / "elsewhere"
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
    code = f"from trainbook.guard import prepare_run_dir; prepare_run_dir({str(tmp_path / 'runs')!r})"
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
