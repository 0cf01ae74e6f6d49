"""The door checks of trainbook.guard, headless: loss classes, empty loaders, monitors that name nothing, unwritable
or already used run folders, and resumes that changed something (or cannot be exact)."""
import os, subprocess, sys, threading

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainbook as tb
from trainbook.checkpoint import prepare_run_dir, probe_writable, release_run_dir
from trainbook.resume import resume_changes, run_signature, saved_signature
from trainbook.guard import check_loader, check_loss_fn, check_monitor, nonfinite_validation, require_batches
from test_checkpoint import small_tmpfs
from helpers import blobs, executing, interrupted, mlp

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


@pytest.mark.parametrize("data, said", [
    (X, r"dl_train is a Tensor of shape \(16, 4\): data, not batches; make batches: tb.TensorLoader\(X, y"),
    (X.numpy(), r"dl_train is a ndarray of shape \(16, 4\): data, not batches"),
    ((X, Y), r"dl_train holds 2 bare arrays \(Tensor \(16, 4\), Tensor \(16,\)\), not batches.*whole data set"),
    ([X.numpy(), Y.numpy()], r"dl_train holds 2 bare arrays \(ndarray \(16, 4\), ndarray \(16,\)\)"),
])
def test_the_data_set_given_where_batches_belong_is_named_with_how_to_batch_it(data, said):
    # fit(model, X) or fit(model, (X, y)) failed at the first step: "a batch must be an (xb, yb) pair ... got Tensor"
    with pytest.raises(TypeError, match=said): check_loader(data, "dl_train")
    with pytest.raises(TypeError, match=said):
        tb.fit(mlp(4, out=2), data, loss_fn=nn.functional.cross_entropy, config=tb.TrainConfig(epochs=1), live=False)
    assert check_loader([(X, Y), (X, Y)], "dl_train") == 2  # a list of pairs is a list of batches


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
            refused_before_the_first_step(ValueError, "is not writable \\(Read-only file system\\)", **kwargs)
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


def test_a_new_users_mistakes_are_named_before_any_step():
    "Arrays instead of tensors, float or too-large labels, a callback class or function, one callback, resume=True."
    X, y = blobs(64)
    cfg = tb.TrainConfig(epochs=1, monitor="train_loss", device="cpu")
    ce = nn.functional.cross_entropy
    fit = lambda model, batches, **kw: tb.fit(model, batches, loss_fn=ce, config=cfg, live=False, **kw)
    with pytest.raises(TypeError, match=r"inputs are numpy.ndarray, not torch tensors.*torch.as_tensor"):
        fit(mlp(), [(X.numpy(), y.numpy())])
    with pytest.raises(TypeError, match=r"tensors\[0\] must be a torch.Tensor, got ndarray: convert it once"):
        tb.TensorLoader(X.numpy(), y)
    with pytest.raises(RuntimeError, match=r"class indices for this loss, but yb is float32: give integer labels"):
        fit(mlp(), [(X, y.float())])
    with pytest.raises(RuntimeError, match=r"yb holds its class labels as a column, \(64, 1\).*yb.squeeze\(1\)"):
        fit(mlp(), [(X, y[:, None])])  # a frame's y[["label"]]: torch says only 'multi-target not supported'
    wide = torch.where(torch.arange(len(y)) == 0, -100, y + 5)  # one ignored position (-100) is not a label
    with pytest.raises(tb.TargetsOutOfRange, match=r"labels run from 5 to 7 but the model has 3 outputs "
                                                 r"\(valid labels 0..2\); make the last layer"):
        fit(mlp(), [(X, wide)])

    class Hook(tb.Callback):
        def after_epoch(self, state): pass
    with pytest.raises(TypeError, match=r"callback Hook is a class, not a callback: pass an instance, Hook\(\)"):
        fit(mlp(), [(X, y)], callbacks=[Hook])
    def log(state): pass
    with pytest.raises(TypeError, match="callback 'log' is a function"): fit(mlp(), [(X, y)], callbacks=[log])
    with pytest.raises(TypeError, match=r"callbacks must be a list of callbacks, got a Hook"):
        fit(mlp(), [(X, y)], callbacks=Hook())
    with pytest.raises(TypeError, match="resume must be a checkpoint file or its run folder"):
        fit(mlp(), [(X, y)], resume=True)


def test_an_optimizer_or_scheduler_of_another_model_is_named_before_any_step():
    "They trained nothing, or scheduled nothing, in silence (a notebook cell run again makes a new model)."
    X, y = blobs(64)
    cfg = tb.TrainConfig(epochs=1, monitor="train_loss", device="cpu")
    fit = lambda model, **kw: tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, config=cfg, live=False, **kw)
    earlier, model = mlp(), mlp()
    with pytest.raises(ValueError, match="optimizer holds none of the model's trainable parameters"):
        fit(model, optimizer=torch.optim.SGD(earlier.parameters(), lr=0.1))
    sched = torch.optim.lr_scheduler.StepLR(torch.optim.SGD(earlier.parameters(), lr=0.1), 1)
    with pytest.raises(ValueError, match="scheduler drives an optimizer other than the AdamW fit makes"):
        fit(model, scheduler=sched)
    with pytest.raises(ValueError, match="scheduler drives an optimizer other than optimizer="):
        fit(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), scheduler=sched)
    head = torch.optim.SGD(model[-1].parameters(), lr=0.1)  # the first layer left out
    with pytest.warns(UserWarning, match=r"optimizer leaves out 2 trainable parameters of the model \(0.weight, 0.bias\)"):
        run = fit(model, optimizer=head)
    assert run.stopped == "completed"
    first = model[0].weight.detach().clone()
    model[0].requires_grad_(False)  # frozen: nothing is left out
    opt = torch.optim.SGD(model[-1].parameters(), lr=0.1)
    fit(model, optimizer=opt, scheduler=torch.optim.lr_scheduler.StepLR(opt, 1))
    assert torch.equal(model[0].weight, first)


def test_an_optimizer_that_needs_a_closure_is_refused_at_the_door_and_sgd_is_not(tmp_path):
    "LBFGS evaluates the loss inside its step: fit would fail at its first step with torch's own TypeError."
    X, y = blobs(64)
    model = mlp()
    with pytest.raises(TypeError, match="optimizer LBFGS needs a closure at each step"):
        tb.fit(model, tb.TensorLoader(X, y, batch_size=16), loss_fn=nn.functional.cross_entropy, live=False,
               optimizer=torch.optim.LBFGS(model.parameters()),
               config=tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()  # refused before any work
    run = tb.fit(model, tb.TensorLoader(X, y, batch_size=16), loss_fn=nn.functional.cross_entropy, live=False,
                 optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True),
                 config=tb.TrainConfig(epochs=1))
    assert run.stopped == "completed"


def test_a_one_cycle_scheduler_shorter_than_the_run_is_refused_at_the_door():
    "OneCycleLR raises at the step past its total_steps: 3 epochs of 4 batches need 12 (max_steps=5 needs 5)."
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)

    def run(total_steps, **cfg):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=total_steps)
        return tb.fit(model, dl, loss_fn=nn.functional.cross_entropy, optimizer=opt, scheduler=sched, live=False,
                      config=tb.TrainConfig(epochs=3, **cfg))
    with pytest.raises(ValueError, match="made for total_steps=5 but the run takes 12 optimizer steps"):
        run(5)
    assert run(12).step == 12 and run(5, max_steps=5).step == 5


def test_a_plateau_scheduler_that_reads_the_monitor_the_other_way_is_refused():
    "Probe 10: ReduceLROnPlateau's default mode 'min' on valid_accuracy (mode 'max') cut the lr at every improvement."
    X, y = blobs(64)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cfg = tb.TrainConfig(epochs=2, monitor="valid_accuracy", mode="max")
    with pytest.raises(ValueError, match=r"ReduceLROnPlateau\(mode='min'\) steps on the monitored value "
                                         r"'valid_accuracy', which improves as it goes up"):
        tb.fit(model, tb.TensorLoader(X, y, batch_size=16), tb.TensorLoader(X, y, batch_size=32),
               loss_fn=nn.functional.cross_entropy, metrics="accuracy", optimizer=opt, live=False, config=cfg,
               scheduler=torch.optim.lr_scheduler.ReduceLROnPlateau(opt))
    run = tb.fit(model, tb.TensorLoader(X, y, batch_size=16), tb.TensorLoader(X, y, batch_size=32),
                 loss_fn=nn.functional.cross_entropy, metrics="accuracy", optimizer=opt, live=False, config=cfg,
                 scheduler=torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max"))
    assert run.stopped == "completed"


def test_a_resume_at_an_epochs_end_gives_no_scheduler_order_warning(tmp_path):
    "Probe 10: a Ctrl-C at after_validate, resumed: torch warned that lr_scheduler.step() came before optimizer.step()."
    import warnings
    X, y = blobs(64)

    class Cut(tb.Callback):
        def after_validate(self, state):
            if state.epoch == 0: raise KeyboardInterrupt

    def run(**kw):
        torch.manual_seed(0)
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        return tb.fit(model, tb.TensorLoader(X, y, batch_size=16), tb.TensorLoader(X, y, batch_size=32),
                      loss_fn=nn.functional.cross_entropy, optimizer=opt, live=False,
                      scheduler=torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5),
                      config=tb.TrainConfig(epochs=3, checkpoint_dir=str(tmp_path)), **kw)
    assert interrupted(run, callbacks=[Cut()]).stopped == "interrupted"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
        assert run(resume=tmp_path).stopped == "completed"
    assert not [w for w in seen if "lr_scheduler.step()" in str(w.message)]


def test_checkpoint_settings_that_write_nothing_are_said(tmp_path):
    "Probe 10: resume= without checkpoint_dir, and checkpoint_every without it, wrote nothing in silence."
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    fit = lambda **kw: tb.fit(mlp(), dl, loss_fn=nn.functional.cross_entropy, live=False, **kw)
    fit(config=tb.TrainConfig(epochs=1, checkpoint_dir=str(tmp_path)))
    with pytest.warns(UserWarning, match=r"at step 4, but checkpoint_dir is None: this run writes no last.pt"):
        run = fit(config=tb.TrainConfig(epochs=2), resume=tmp_path / "last.pt")
    assert run.step == 8 and "resume_without_folder" in [f.kind for f in run.findings]
    with pytest.warns(UserWarning, match=r"checkpoint_every=2 writes nothing: checkpoint_dir is None"):
        fit(config=tb.TrainConfig(epochs=1, checkpoint_every=2))


def test_a_warning_of_fit_points_at_the_users_line_not_at_trainbook():
    "Seen: a warning printed trainbook's own source line (a fixed stacklevel off by a call or two)."
    import torch
    from torch import nn
    class Counts:  # a state a checkpoint keeps, but no way to give it back
        def after_step(self, state): pass
        def state_dict(self): return {}
    X, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    with pytest.warns(UserWarning) as seen:
        tb.fit(nn.Linear(4, 2), [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, callbacks=[Counts()],
               config=tb.TrainConfig(epochs=1, checkpoint_every=2, device="cpu"))
    said = {str(w.message).split(" ")[0]: w.filename for w in seen}
    assert said["checkpoint_every=2"] == said["callback"] == __file__  # not trainbook/events.py


def test_a_given_optimizer_whose_lr_differs_from_the_configs_is_said():
    "Seen: SGD(lr=0.1) with TrainConfig(lr=1e-2, weight_decay=0.5): the optimizer's were used and nothing said."
    X, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    model = nn.Linear(4, 2)
    run = tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False,
                 optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                 config=tb.TrainConfig(epochs=1, lr=1e-2, weight_decay=0.5, device="cpu"))
    [said] = [f for f in run.findings if f.kind == "optimizer_given"]
    assert said.severity == "info" and "lr 0.1" in said.message and "TrainConfig.lr=0.01" in said.message
    same = torch.optim.AdamW(tb.param_groups(model, 0.01), lr=1e-3)  # as fit would make it
    run = tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, optimizer=same,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    assert not [f for f in run.findings if f.kind == "optimizer_given"]


def test_best_pt_or_a_plateau_schedule_on_the_fallback_monitor_is_said_once(tmp_path):
    """Probe 44: without dl_valid, best.pt and schedule='plateau' followed train_loss with no word: the
    monitor_fallback finding was made only when patience was set."""
    dl = tb.TensorLoader(X, Y, batch_size=8)
    for config, severity in [(dict(checkpoint_dir=str(tmp_path / "a")), "info"),
                             (dict(schedule="plateau"), "info"),
                             (dict(checkpoint_dir=str(tmp_path / "b"), schedule="plateau", patience=5), "warning")]:
        run = tb.fit(nn.Linear(4, 2), dl, loss_fn=nn.CrossEntropyLoss(), live=False,
                     config=tb.TrainConfig(epochs=2, device="cpu", **config))
        (f,) = [f for f in run.findings if f.kind == "monitor_fallback"]
        assert f.severity == severity and "follow" in f.message and "train_loss" in f.message
    assert "early stopping (patience=5), best.pt (run.best, restore_best) and the plateau schedule follow" in f.message
    quiet = tb.fit(nn.Linear(4, 2), dl, loss_fn=nn.CrossEntropyLoss(), live=False,
                   config=tb.TrainConfig(epochs=2, device="cpu"))  # nothing follows the monitor: nothing said
    assert [f for f in quiet.findings if f.kind == "monitor_fallback"] == []


def test_a_reduce_lr_on_plateau_of_your_own_on_the_fallback_monitor_is_said():
    "A ReduceLROnPlateau passed as scheduler= without dl_valid follows train_loss as schedule='plateau' does: said."
    dl = tb.TensorLoader(X, Y, batch_size=8)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = tb.fit(model, dl, loss_fn=nn.CrossEntropyLoss(), optimizer=opt, live=False,
                 scheduler=torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1),
                 config=tb.TrainConfig(epochs=2, lr=0.1, device="cpu"))
    (f,) = [f for f in run.findings if f.kind == "monitor_fallback"]
    assert "the plateau schedule follows train_loss" in f.message and f.severity == "info"


def test_a_summing_loss_is_seen_through_its_bound_forward_and_in_capitals():
    "Probe 57: nn.CrossEntropyLoss(reduction='sum').forward and reduction='SUM' slipped past the refusal."
    import functools
    for summed in (nn.CrossEntropyLoss(reduction="sum").forward,
                   functools.partial(nn.functional.cross_entropy, reduction="SUM")):
        with pytest.raises(ValueError, match="reduction='mean'"): check_loss_fn(summed)
    assert check_loss_fn(nn.CrossEntropyLoss().forward) is not None  # a mean's, through its forward: taken


def test_the_test_loader_given_as_dl_valid_is_warned_before_any_step():
    "Probe 75 #5: fit(model, dl_train, dl_test) chose early stopping and best.pt on the test rows, in silence."
    import warnings
    import numpy as np, pandas as pd
    from trainbook.guard import run_notes, valid_is_test
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=200), "x2": rng.normal(size=200), "y": rng.choice(["a", "b"], 200)})
    sp = tb.make_splits(df, "y", test_size=0.2, seed=0)
    dl_train, dl_valid, dl_test, prep = tb.loaders_from_frame(df, "y", sp, batch_size=32)
    said_before_steps = []

    class Look:  # was it said before the first step?
        def before_step(self, state):
            said_before_steps.append(any("valid_is_test" in str(x.message) for x in caught))

    def fit(dl):
        return tb.fit(nn.Linear(prep.n_features, 2), dl_train, dl, loss_fn=nn.CrossEntropyLoss(), live=False,
                      config=tb.TrainConfig(epochs=1), callbacks=[Look()])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = fit(dl_test)
    assert [f.kind for f in run.findings].count("valid_is_test") == 1  # in the run's record too
    said = [str(x.message) for x in caught if "valid_is_test" in str(x.message)]
    assert len(said) == 1 and f"test loader of split {sp.fingerprint}" in said[0], said
    assert said_before_steps[0]
    finding = valid_is_test(dl_test)[0]  # the finding run_notes gives (fit's set-up lists it once it is passed)
    assert (finding.kind, finding.severity, finding.data) == ("valid_is_test", "warning",
                                                              {"split_fingerprint": sp.fingerprint})
    assert [f.kind for f in run_notes(tb.TrainConfig(), True, 10, dl_valid=dl_test)] == ["valid_is_test"]
    # the valid loader, a loader made by hand from the very test rows, no validation: nothing said
    by_hand = tb.TensorLoader(*dl_test.tensors, batch_size=32)
    for dl in (dl_valid, by_hand, [(dl_test.tensors[0], dl_test.tensors[1])]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = fit(dl)
        assert not [x for x in caught if "valid_is_test" in str(x.message)]
        assert "valid_is_test" not in [f.kind for f in run.findings]
        assert valid_is_test(dl) == []
    assert valid_is_test(None) == []


def test_a_cell_queued_before_the_ctrl_c_that_ended_a_run_does_not_train(kernel):
    """Probe 80: Run All, then Ctrl-C during a fit: fit returned the run 'interrupted', its cell succeeded, and the
    cells queued below trained on. A run in a cell sent before that Ctrl-C is refused at its door with a
    KeyboardInterrupt (Jupyter then aborts the rest of the queue, as after any interrupted cell)."""
    from datetime import datetime, timedelta, timezone
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    class CtrlC(tb.Callback):
        def after_step(self, state):
            if state.step == 2: raise KeyboardInterrupt
    def fit(**kw):
        return tb.fit(mlp(), dl, loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=1), **kw)
    run_all = datetime.now(timezone.utc)  # Run All sends every cell at once
    executing(kernel, "cell 1", run_all)
    assert fit(callbacks=[CtrlC()]).stopped == "interrupted"
    executing(kernel, "cell 2", run_all)  # queued behind it
    with pytest.raises(KeyboardInterrupt, match=r"queued \(Run All\) before the Ctrl-C .* run this cell again"):
        fit()
    executing(kernel, "cell 2 again", datetime.now(timezone.utc))  # the user runs it after
    assert fit().stopped == "completed"
    executing(kernel, "cell 3", datetime.now(timezone.utc))
    assert fit(callbacks=[CtrlC()]).stopped == "interrupted"
    ended = tb.guard._CUT_SHORT["at"]
    executing(kernel, "cell 4", (ended + timedelta(seconds=2)).isoformat())  # sent after it (a date as text too)
    assert fit().stopped == "completed"


def test_the_queue_rule_reads_only_a_kernels_execute_requests(kernel):
    "A click (a comm message), a request without a date, and a panel's worker thread are no queued cell."
    from datetime import datetime, timezone
    before = datetime(2000, 1, 1, tzinfo=timezone.utc)
    tb.guard._CUT_SHORT["at"] = datetime.now(timezone.utc)
    kernel.parent_header = {"header": {"msg_type": "comm_msg", "msg_id": "click", "date": before}}
    tb.guard.refuse_after_interrupt("fit")
    executing(kernel, "no date", None)
    tb.guard.refuse_after_interrupt("fit")
    executing(kernel, "queued", before)
    worker = threading.Thread(target=tb.guard.refuse_after_interrupt, args=("fit",))
    worker.start(); worker.join()  # (it would print its KeyboardInterrupt; nothing is raised there)
    assert tb.guard._CUT_SHORT["at"] is not None  # none of them used the note up
    with pytest.raises(KeyboardInterrupt): tb.guard.refuse_after_interrupt("fit")


def test_a_queued_cell_that_only_checks_or_makes_a_panel_is_not_refused(kernel):
    """Probe 85: after a Ctrl-C ended a fit, a queued cell that only made a TrainPanel failed with 'fit not
    started' (the panel's constructor checks fit's inputs, and the check refused): the docs say a queued cell that
    does not train runs. The refusal is at the door of a run (fit, fit_flax, Recorder), not in the input checks."""
    from datetime import datetime, timezone
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    class CtrlC(tb.Callback):
        def after_step(self, state):
            if state.step == 2: raise KeyboardInterrupt
    run_all = datetime.now(timezone.utc)
    executing(kernel, "cell 1", run_all)
    assert tb.fit(mlp(), dl, loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=1),
                  callbacks=[CtrlC()]).stopped == "interrupted"
    executing(kernel, "cell 2", run_all)  # queued: it checks the inputs and makes a panel, training nothing
    try:  # (a KeyboardInterrupt would end the whole pytest session: a failure here instead)
        tb.check_fit_inputs(mlp(), dl, None, nn.functional.cross_entropy, tb.TrainConfig(epochs=1))
        tb.TrainPanel(mlp(), dl, None, loss_fn=nn.functional.cross_entropy, config=tb.TrainConfig(epochs=1))
    except KeyboardInterrupt as refused: pytest.fail(f"a cell that trains nothing was refused: {refused}")
    with pytest.raises(KeyboardInterrupt, match="queued"):  # the first run it starts is refused
        tb.fit(mlp(), dl, loss_fn=nn.functional.cross_entropy, live=False, config=tb.TrainConfig(epochs=1))


def test_a_given_scheduler_beside_a_configured_schedule_is_said():
    "Probe 104: TrainConfig(schedule='warmup_cosine', warmup=0.5) beside a StepLR passed was dropped without a word."
    X, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, optimizer=opt,
                 scheduler=torch.optim.lr_scheduler.StepLR(opt, step_size=1),
                 config=tb.TrainConfig(epochs=1, lr=0.1, weight_decay=0.0, device="cpu", schedule="warmup_cosine",
                                       warmup=0.5))
    [said] = [f for f in run.findings if f.kind == "scheduler_given"]
    assert "StepLR" in said.message and "schedule='warmup_cosine', warmup=0.5" in said.message
    run = tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, optimizer=opt,
                 scheduler=torch.optim.lr_scheduler.StepLR(opt, step_size=1),
                 config=tb.TrainConfig(epochs=1, lr=0.1, weight_decay=0.0, device="cpu"))
    assert not [f for f in run.findings if f.kind == "scheduler_given"]  # nothing asked of the config's schedule


def test_parts_set_to_eval_in_a_model_in_train_mode_are_said_to_train_again():
    "Probe 104: a BatchNorm frozen with .eval() had its running statistics updated by fit, with no word."
    X, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    model[1].eval()
    run = tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    [said] = [f for f in run.findings if f.kind == "eval_submodules"]
    assert "1 (BatchNorm1d)" in said.message and said.data["modules"] == ["1"]
    model.eval()  # a whole model left in eval mode (after an evaluation): nothing the user chose part by part
    run = tb.fit(model, [(X, y)], loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=1, device="cpu"))
    assert not [f for f in run.findings if f.kind == "eval_submodules"]


SCRIPT_SWEEP = r"""
import os, signal, sys
import torch, trainbook as tb
from torch import nn
X, y = torch.randn(40, 3), torch.randint(0, 2, (40,))
folder = sys.argv[1]
def press(): os.kill(os.getpid(), signal.SIGINT)  # one real Ctrl-C, as a terminal sends it
# a Recorder sweep: the Ctrl-C goes on out of the with block, the run as err.run (the script would stop there)
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
try:
    with tb.Recorder(tb.TrainConfig(epochs=1), parts={"model": model, "optimizer": opt}, live=False,
                     checkpoint_dir=None, track=False) as rec:
        for i in range(50):
            loss = nn.functional.cross_entropy(model(X), y)
            opt.zero_grad(); loss.backward(); opt.step()
            rec.step(loss.item())
            if i == 5: press()
    print("after the with block")
except KeyboardInterrupt as err:
    print("recorder:", err.run.stopped, err.run.step)
for start in (lambda: tb.Recorder(tb.TrainConfig(epochs=1), live=False, checkpoint_dir=None, track=False),
              lambda: tb.fit(nn.Linear(3, 2), [(X, y)], loss_fn=nn.functional.cross_entropy, live=False, track=False)):
    try: start(); print("started")
    except KeyboardInterrupt as refused: print("refused:", refused)
tb.guard.forget_interrupt()  # on purpose: fit's sweep below
class CtrlC(tb.Callback):
    def after_step(self, state):
        if state.step == 2: press()
for i in range(2):  # fit's Ctrl-C goes on out of it (err.run); a sweep that catches it: its next fit stops at the door
    try:
        run = tb.fit(nn.Linear(3, 2), tb.TensorLoader(X, y, batch_size=8), loss_fn=nn.functional.cross_entropy,
                     live=False, track=False, config=tb.TrainConfig(epochs=2, checkpoint_dir=folder),
                     callbacks=[CtrlC()] if i == 0 else [])
        print("fit returned:", run.stopped, run.step)
    except KeyboardInterrupt as err:
        if getattr(err, "run", None) is None: print("refused:", err)
        else: print("fit raised:", err.run.stopped, err.run.step, os.path.isfile(err.run.last_path), "|", err)
"""


def test_a_ctrl_c_stops_a_plain_scripts_sweep(tmp_path):
    """Probe 114: in a .py script a Ctrl-C during a Recorder's `with` block ended the run 'interrupted' and the script
    went on: a sweep trained runs 2 and 3 and exited 0 (the guard only knew a kernel's cells). In a plain script the
    cell is the script: the Ctrl-C goes on out of the block, and out of fit, as a KeyboardInterrupt carrying the
    finished run (err.run, its last.pt written), so the script stops there; a script that catches it and trains
    again is refused at the next run's door, which names the folder to resume."""
    child = subprocess.run([sys.executable, "-c", SCRIPT_SWEEP, str(tmp_path / "runs")], capture_output=True,
                           text=True, timeout=240, env={**os.environ, "OMP_NUM_THREADS": "1"})
    lines = child.stdout.splitlines()
    assert child.returncode == 0, child.stderr[-2000:]
    assert lines[0] == "recorder: interrupted 6", lines  # no "after the with block"
    assert lines[1].startswith("refused: Recorder not started: a Ctrl-C stopped a run earlier in this script")
    assert lines[2].startswith("refused: fit not started: a Ctrl-C stopped a run earlier in this script")
    assert "forget_interrupt()" in lines[2] and "kept no folder" in lines[2]
    folder = str(tmp_path / "runs")
    # after forget_interrupt a run starts; the Ctrl-C that ends it goes on out of fit, the run with it (not returned)
    assert lines[3].startswith("fit raised: interrupted 2 True | a Ctrl-C stopped the run: the script stops here")
    assert f"go on from it with resume={folder!r}" in lines[3], lines[3]
    assert lines[4].startswith("refused: fit not started") and f"go on from it with resume={folder!r}" in lines[4]
    assert len(lines) == 5, lines


def test_a_terminal_ipython_input_is_a_cell_and_a_script_is_one(monkeypatch):
    "Which runs a Ctrl-C stops: a terminal IPython's later inputs train (each is a cell); a script's later runs do not."
    import IPython
    shell = type("TerminalShell", (), {"execution_count": 7})()  # no parent_header: no kernel
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert not tb.guard.plain_script()
    tb.guard.note_interrupt()
    with pytest.raises(KeyboardInterrupt, match="earlier in this cell"): tb.guard.refuse_after_interrupt("fit")
    shell.execution_count = 8  # the next input
    tb.guard.refuse_after_interrupt("fit")
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # a plain script
    assert tb.guard.plain_script()
    tb.guard.note_interrupt()
    with pytest.raises(KeyboardInterrupt, match="earlier in this script"): tb.guard.refuse_after_interrupt("fit")
    worker = []  # a thread's runs are no part of it: a Ctrl-C reaches the main thread only
    thread = threading.Thread(target=lambda: worker.append(tb.guard.refuse_after_interrupt("fit") is None))
    thread.start(); thread.join()
    assert worker == [True]
    tb.guard.forget_interrupt()
    tb.guard.refuse_after_interrupt("fit")
