"A Hugging Face Trainer reporting to trainbook through `trainer_callback`: records, the NaN its logs hide, how runs end."
import json
import math
import os

import pytest
import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
from transformers import EarlyStoppingCallback, Trainer, TrainerCallback, TrainingArguments  # noqa: E402

import trainbook as tb  # noqa: E402
from trainbook.checkpoint import run_in_progress  # noqa: E402
from trainbook.events import Callback, add_session_observer, remove_session_observer  # noqa: E402


class Linear(nn.Module):
    "A model that computes its own loss, as transformers models do."
    def __init__(self, width=4, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.layer = nn.Linear(width, 2)

    def forward(self, x, labels=None):
        out = self.layer(x)
        return {"loss": nn.functional.cross_entropy(out, labels), "logits": out}


def rows(n=64, seed=0, nan_at=None, shuffled=False):
    "Rows a linear model can learn (label: the sign of the first feature); one of NaN features at `nan_at`."
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, 0] > 0).long()
    if shuffled: y = y[torch.randperm(n, generator=g)]
    out = [{"x": x[i].clone(), "labels": int(y[i])} for i in range(n)]
    if nan_at is not None: out[nan_at]["x"][0] = float("nan")
    return out


def args(tmp_path, **kw):
    return TrainingArguments(**{"output_dir": str(tmp_path / "out"), "per_device_train_batch_size": 8,
                                "learning_rate": 0.05, "logging_steps": 2, "num_train_epochs": 3,
                                "eval_strategy": "epoch", "save_strategy": "no", "report_to": [], "use_cpu": True,
                                "disable_tqdm": True, "train_sampling_strategy": "sequential", **kw})


def train(tmp_path, cb, model=None, train_rows=None, trainer_class=Trainer, callbacks=(), **kw):
    trainer = trainer_class(model=model or Linear(), args=args(tmp_path, **kw), train_dataset=train_rows or rows(),
                            eval_dataset=rows(32, seed=1), callbacks=[cb, *callbacks])
    trainer.train()
    return trainer


def test_the_records_are_trainers_logs_and_run_json_holds_them(tmp_path):
    cb = tb.trainer_callback(live=False, run_dir=tmp_path / "run")
    trainer = train(tmp_path, cb)
    run, logs = cb.run, trainer.state.log_history
    for key, (split, name) in (("loss", ("train", "loss")), ("grad_norm", ("train", "grad_norm")),
                               ("learning_rate", ("train", "lr")), ("eval_loss", ("valid", "loss"))):
        logged = [(h["step"], h[key]) for h in logs if key in h]
        assert logged and logged == list(run.records.series(name, split).items()), key
    assert not [n for n in run.history.name.unique() if "runtime" in n or "per_second" in n or n == "total_flos"]
    # each epoch's train loss: its logged windows weighted by their steps (8 steps an epoch, a log every 2)
    windows = [h["loss"] for h in logs if "loss" in h]
    expected = [sum(windows[i:i + 4]) / 4 for i in (0, 4, 8)]
    assert run.records.series("epoch_loss", "train").tolist() == pytest.approx(expected)
    assert run.stopped == "completed" and run.step == 24 and run.epoch == 2 and run.kind == "transformers"
    assert list(run.metrics().index) == [0, 1, 2] and tb.last_run() is run
    loaded = tb.Run.load(tmp_path / "run")
    assert loaded.records.to_frame().equals(run.records.to_frame()) and loaded.stopped == "completed"
    assert not run_in_progress(tmp_path / "run")  # the folder is given back
    assert run.best == min(h["eval_loss"] for h in logs if "eval_loss" in h)


def test_a_nan_trainers_logs_hide_is_found_and_stops_the_trainer(tmp_path):
    cb = tb.trainer_callback(live=False)
    trainer = train(tmp_path, cb, train_rows=rows(nan_at=40), eval_strategy="no")  # batch 6 of 8 rows
    assert trainer.state.global_step == 6  # stopped at the log that showed it, not after 24 steps
    nan = cb.run.findings[0]
    assert (nan.kind, nan.severity, nan.data["step"], cb.run.stopped) == ("nonfinite", "error", 6, "nonfinite")
    assert "logging_nan_inf_filter" in nan.advice
    assert math.isnan(cb.run.records.series("loss", "train").iloc[-1])  # not Trainer's stand-in


def test_on_nonfinite_continue_trains_on_and_records_nan_where_trainer_logs_zero(tmp_path):
    cb = tb.trainer_callback(live=False, on_nonfinite="continue")
    trainer = train(tmp_path, cb, train_rows=rows(nan_at=40), eval_strategy="no")
    assert trainer.state.global_step == 24 and cb.run.stopped == "completed"
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert logged[-1] == 0.0  # Trainer's logs: a perfect loss from NaN weights
    recorded = cb.run.records.series("loss", "train")
    assert recorded.iloc[:2].notna().all() and recorded.iloc[3:].isna().all()
    assert [f.kind for f in cb.run.findings].count("nonfinite") == 1


class NoGradNorm(Trainer):
    "A Trainer whose logs carry no gradient norm (as under some distributed engines)."
    def log(self, logs, *args, **kwargs):
        logs.pop("grad_norm", None)
        super().log(logs, *args, **kwargs)


def test_without_a_logged_gradient_norm_the_weights_tell(tmp_path):
    cb = tb.trainer_callback(live=False)
    trainer = train(tmp_path, cb, train_rows=rows(nan_at=40), eval_strategy="no", trainer_class=NoGradNorm)
    assert trainer.state.global_step == 6 and cb.run.stopped == "nonfinite"
    assert cb.run.findings[0].kind == "nonfinite"


def test_trainers_early_stopping_is_the_stop_reason_and_best_checkpoint_kept(tmp_path):
    cb = tb.trainer_callback(live=False)
    trainer = train(tmp_path, cb, train_rows=rows(shuffled=True), num_train_epochs=20, save_strategy="epoch",
                    load_best_model_at_end=True, metric_for_best_model="eval_loss", learning_rate=0.5,
                    callbacks=[EarlyStoppingCallback(early_stopping_patience=1)])
    run = cb.run
    assert trainer.state.global_step < 160 and run.stopped == "early_stopping"
    assert run.last_path is not None and run.last_path.name == f"checkpoint-{trainer.state.global_step}"
    assert run.last_path.is_dir()
    valid = run.records.series("loss", "valid", index="epoch")
    assert run.best == valid.min() and run.best_epoch == valid.idxmin()


class StopAt(TrainerCallback):
    "Another callback that stops Trainer's loop at `step`."
    def __init__(self, step): self.step = step
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step: control.should_training_stop = True


def test_a_stop_by_another_callback_is_interrupted_not_completed(tmp_path):
    cb = tb.trainer_callback(live=False)
    train(tmp_path, cb, callbacks=[StopAt(5)])
    assert cb.run.stopped == "interrupted" and cb.run.step == 5  # Trainer logs the step it stops at


class Pruner(Callback):
    "A session observer asking to stop, as a search's pruner or a Stop button does."
    def after_epoch(self, state): state.control.request_stop("pruned")


def test_a_stop_a_trainbook_observer_asks_for_stops_the_trainer(tmp_path):
    add_session_observer("test-pruner", lambda context: Pruner())
    try:
        cb = tb.trainer_callback(live=False)
        trainer = train(tmp_path, cb)
    finally: remove_session_observer("test-pruner")
    assert trainer.state.global_step == 8 and cb.run.stopped == "pruned"  # after the first epoch


class Breaks(Linear):
    def __init__(self, at, error):
        super().__init__()
        self.calls, self.at, self.error = 0, at, error

    def forward(self, x, labels=None):
        self.calls += 1
        if self.calls == self.at: raise self.error
        return super().forward(x, labels)


@pytest.mark.parametrize("error, stopped", [(RuntimeError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")])
def test_a_train_that_raises_ends_its_run(tmp_path, error, stopped):
    cb = tb.trainer_callback(live=False, run_dir=tmp_path / "run")
    with pytest.raises(type(error)) as caught:
        train(tmp_path, cb, model=Breaks(at=13, error=error), eval_strategy="no")
    assert cb.run is not None and cb.run.stopped == stopped and caught.value.run is cb.run
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["stopped"] == stopped and not run_in_progress(tmp_path / "run")
    assert (cb.run.error is not None) == (stopped == "failed")


def test_a_resumed_trainer_keeps_the_history_it_had(tmp_path):
    first = tb.trainer_callback(live=False)
    train(tmp_path, first, save_strategy="epoch", num_train_epochs=3, callbacks=[StopAt(16)])
    again = tb.trainer_callback(live=False)
    trainer = Trainer(model=Linear(), args=args(tmp_path, save_strategy="epoch", num_train_epochs=3),
                      train_dataset=rows(), eval_dataset=rows(32, seed=1), callbacks=[again])
    trainer.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-16"))
    records = again.run.records.to_frame()
    assert sorted(records[records.name == "loss"].query("split == 'train'").step) == list(range(2, 25, 2))
    assert again.run.records.series("epoch_loss", "train", index="epoch").index.tolist() == [0, 1, 2]
    assert again.run.stopped == "completed"


def test_bad_arguments_fail_before_any_training(tmp_path):
    with pytest.raises(ValueError, match="on_nonfinite"): tb.trainer_callback(on_nonfinite="skip")
    with pytest.raises(ValueError, match="live"): tb.trainer_callback(live="yes")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="run_dir"): tb.trainer_callback(run_dir=blocker / "run")


def test_restore_best_says_where_a_trainer_runs_best_weights_are(tmp_path):
    cb = tb.trainer_callback(live=False)
    train(tmp_path, cb, num_train_epochs=1)
    with pytest.raises(ValueError, match="load_best_model_at_end"): cb.run.restore_best(Linear())


class ReadsRunJson(TrainerCallback):
    "After trainbook's callback at each evaluation: what run.json holds then (a kill there keeps that)."
    def __init__(self, folder): self.folder, self.seen = folder, []
    def on_evaluate(self, args, state, control, **kwargs):
        self.seen.append(tb.Run.load(self.folder).records.series("loss", "valid").tolist())


def test_an_epoch_closes_after_trainers_epoch_end_log_and_evaluation(tmp_path):
    "Probe 56: Trainer logs and evaluates after on_epoch_end: logging_strategy='epoch' left no epoch_loss, and the "
    "run.json of each epoch's end lacked that epoch's validation."
    cb = tb.trainer_callback(live=False, run_dir=tmp_path / "run")
    reader = ReadsRunJson(tmp_path / "run")
    trainer = train(tmp_path, cb, logging_strategy="epoch", callbacks=[reader])
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert cb.run.records.series("epoch_loss", "train").tolist() == pytest.approx(logged)
    assert list(cb.run.metrics().columns[:2]) == ["train_loss", "valid_loss"]
    assert [len(seen) for seen in reader.seen] == [1, 2, 3]  # each epoch's run.json has its own validation


def test_the_speed_of_each_evaluation_set_is_left_out(tmp_path):
    cb = tb.trainer_callback(live=False)
    trainer = Trainer(model=Linear(), args=args(tmp_path), train_dataset=rows(),
                      eval_dataset={"a": rows(16, seed=1), "b": rows(16, seed=2)}, callbacks=[cb])
    trainer.train()
    valid = set(cb.run.history.query("split == 'valid'").name)
    assert valid == {"a_loss", "b_loss"}


def test_settings_are_plain_values_under_fits_names(tmp_path):
    cb = tb.trainer_callback(live=False)
    trainer = train(tmp_path, cb, num_train_epochs=1, lr_scheduler_type="cosine", warmup_steps=2)
    settings = cb.run.extra["settings"]
    assert settings["optimizer"] == trainer.args.optim.value and settings["schedule"] == "cosine"
    assert settings["accum_steps"] == 1 and settings["batch_size"] == 8
    assert (cb.run.config.schedule, cb.run.config.warmup, cb.run.config.batch_size) == ("warmup_cosine", 2, 8)


def test_a_nan_validation_loss_stops_the_trainer_as_fit_stops(tmp_path):
    cb = tb.trainer_callback(live=False)
    broken = rows(32, seed=1)
    for r in broken: r["x"][0] = float("nan")
    trainer = Trainer(model=Linear(), args=args(tmp_path), train_dataset=rows(), eval_dataset=broken, callbacks=[cb])
    trainer.train()
    assert trainer.state.global_step == 8 and cb.run.stopped == "nonfinite"  # after the first evaluation
    assert any(f.kind == "nonfinite" and f.data["split"] == "valid" for f in cb.run.findings)


def test_a_run_trainer_logs_too_seldom_to_judge_says_so(tmp_path):
    cb = tb.trainer_callback(live=False)
    train(tmp_path, cb, logging_steps=500)
    note = next(f for f in cb.run.findings if f.kind == "few_train_logs")
    assert note.data == {"logging_steps": 500, "max_steps": 24} and "logging_steps" in note.advice


def test_a_second_training_into_the_same_run_dir_says_where_it_went(tmp_path):
    "Probe 57: the second run went to version_1 with only a printed warning; fit keeps the note in the run."
    train(tmp_path, tb.trainer_callback(live=False, run_dir=tmp_path / "run"), num_train_epochs=1)
    cb = tb.trainer_callback(live=False, run_dir=tmp_path / "run")
    with pytest.warns(UserWarning, match="already holds a run"):
        train(tmp_path, cb, num_train_epochs=1)
    assert cb.run.run_dir == tmp_path / "run" / "version_1"
    assert [f.kind for f in cb.run.findings].count("run_dir_versioned") == 1
    assert "run_dir_versioned" in [f.kind for f in tb.Run.load(cb.run.run_dir).findings]


def test_a_trainer_run_ended_by_max_steps_says_so_as_fit_does(tmp_path):
    cb = tb.trainer_callback(live=False)
    trainer = train(tmp_path, cb, max_steps=10)
    assert trainer.state.global_step == 10 and cb.run.stopped == "max_steps" and cb.run.config.max_steps == 10


def test_run_json_names_each_checkpoint_as_trainer_saves_it(tmp_path):
    "Probe 63: run.json was written at an epoch's close, before Trainer saved it: a killed run named the one before."
    seen = []

    class ReadRunJson(TrainerCallback):  # after trainbook's callback in the list: what a kill now would leave
        def on_save(self, args, state, control, **kwargs):
            seen.append((state.global_step, json.loads((tmp_path / "run" / "run.json").read_text())["last_path"]))

    cb = tb.trainer_callback(live=False, run_dir=tmp_path / "run")
    train(tmp_path, cb, callbacks=[ReadRunJson()], save_strategy="epoch", num_train_epochs=2)
    assert seen == [(s, str(tmp_path / "out" / f"checkpoint-{s}")) for s in (8, 16)]


def test_a_trainer_run_without_evaluation_follows_its_train_loss(tmp_path):
    "Probe 63: without evaluation its run said monitor valid_loss and had no best (fit follows train_loss then)."
    cb = tb.trainer_callback(live=False)
    train(tmp_path, cb, eval_strategy="no")
    run = cb.run
    assert run.monitor_followed() == "train_loss" and run.best == min(run.metrics()["train_loss"])
    assert run.best_epoch == int(run.metrics()["train_loss"].idxmin())


def test_a_trainer_run_at_lr_0_is_observed_and_named_not_refused(tmp_path):
    """Probe 67: learning_rate=0 (a smoke run, a frozen model's check) trains in Trainer, but the callback raised in
    on_train_begin (TrainConfig refuses lr=0 for fit) and failed the run; max_grad_norm < 0 (no clipping) too."""
    cb = tb.trainer_callback(live=False, run_dir=tmp_path / "run")
    same = rows(8) * 8  # every batch the same 8 rows: at lr 0 every step's loss is the same, whatever the init
    trainer = train(tmp_path, cb, train_rows=same, learning_rate=0.0, max_grad_norm=-1.0, logging_steps=1)
    run = cb.run
    assert trainer.state.global_step == 24 and run.stopped == "completed"
    # the lr as Trainer has it: its settings and its logged lr (TrainConfig holds only what fit takes)
    assert run.extra["settings"]["lr"] == 0.0 and set(run.records.series("lr", "train")) == {0.0}
    assert run.config.clip_norm is None and tb.Run.load(tmp_path / "run").extra["settings"]["lr"] == 0.0
    # diagnose names the lr of 0, as it does for fit's runs whose lr was 0
    [stuck] = [f for f in run.findings if f.kind == "not_learning"]
    assert stuck.data["lr_always_zero"] and "was 0 at every step" in stuck.message


class Classifier(Linear):
    "A model whose config names its loss (as a ...ForSequenceClassification head's), with dropout (torch's RNG)."
    def __init__(self):
        super().__init__()
        from types import SimpleNamespace
        self.config = SimpleNamespace(problem_type="single_label_classification", num_labels=2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x, labels=None):
        out = self.layer(self.drop(x))
        return {"loss": nn.functional.cross_entropy(out, labels), "logits": out}


def test_each_evaluation_logs_the_constant_predictors_loss_from_the_eval_labels_and_changes_nothing(tmp_path):
    """Probe 81, r_4: an lr 100x too high whose eval loss never beat chance was silent, and the callback logged no
    valid/prior_loss for diagnose to judge it by; reading the eval labels must not move the run's RNG."""
    cb = tb.trainer_callback(live=False)
    trainer = train(tmp_path, cb, model=Classifier())
    y = torch.tensor([r["labels"] for r in rows(32, seed=1)])
    share = torch.bincount(y) / len(y)
    entropy = float(-(share * share.log()).sum())
    priors = cb.run.records.series("prior_loss", "valid")
    assert list(priors.index) == list(cb.run.records.series("loss", "valid").index)  # beside each eval loss
    assert priors.tolist() == pytest.approx([entropy] * 3, rel=1e-6)
    alone = train(tmp_path / "alone", TrainerCallback(), model=Classifier())  # no trainbook callback at all
    evals = lambda t: [h["eval_loss"] for h in t.state.log_history if "eval_loss" in h]
    assert evals(trainer) == evals(alone)
    other = tb.trainer_callback(live=False)
    train(tmp_path / "other", other)  # a model whose loss its config does not name: no prior, said in the docs
    assert ("valid", "prior_loss") not in set(other.run.records.names())
