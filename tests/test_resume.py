"""A resume under a changed plan: the first resumed step trains at the new schedule's lr; a model of another class
is a listed change (a warning), while a checkpoint written before the model's class was recorded still resumes."""
import contextlib, functools, math, re, warnings

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.optim import schedule_lr, warmup_cosine, warmup_steps
from trainbook.resume import resume_changes, run_signature
from helpers import blobs, interrupted

CE = nn.functional.cross_entropy


def loader():
    X, y = blobs(n=64, d=4, classes=2)
    return tb.TensorLoader(X, y, batch_size=8, shuffle=True)  # 8 steps an epoch


def lrs(run) -> dict:
    return {step: value for step, _, _, name, value in run.records.rows() if name == "lr"}


@pytest.mark.parametrize("first, then, total", [({"epochs": 2}, {"epochs": 4}, 32),
                                                ({"epochs": 2, "max_steps": 10}, {"max_steps": None}, 16)])
def test_a_resume_that_extends_the_run_trains_every_step_at_the_new_schedules_lr(tmp_path, first, then, total):
    "Probe 31: the first resumed step trained at the old cosine's end (lr 0.0), the later ones at the new plan's."
    cfg = tb.TrainConfig(lr=1e-2, schedule="warmup_cosine", warmup=0.1, device="cpu", checkpoint_dir=str(tmp_path),
                         **first)
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    done = tb.fit(model, loader(), loss_fn=CE, config=cfg, live=False).step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the resume_changed warning
        run = tb.fit(model, loader(), loss_fn=CE, config=cfg.replace(**then), resume=tmp_path, live=False)
    used = lrs(run)
    plan = {s: 1e-2 * warmup_cosine(s - 1, total, warmup_steps(0.1, total)) for s in range(done + 1, total + 1)}
    assert used[done + 1] > 0
    for step, lr in plan.items(): assert math.isclose(used[step], lr, rel_tol=1e-9), (step, used[step], lr)


def test_schedule_lr_sets_a_lambda_schedules_value_and_leaves_a_chained_one_alone():
    "The optimizer's lr from a LambdaLR's closed form at its step (exactly its own value); a StepLR's stays."
    opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 / (step + 1))
    for _ in range(3): opt.step(); sched.step()
    kept = opt.param_groups[0]["lr"]
    opt.param_groups[0]["lr"] = 0.0  # what a checkpoint of another plan restored
    schedule_lr(opt, sched)
    assert opt.param_groups[0]["lr"] == kept == sched.get_last_lr()[0]
    opt.param_groups[0]["lr"] = 0.5
    schedule_lr(opt, torch.optim.lr_scheduler.StepLR(opt, 1))  # chained: no closed form to read
    assert opt.param_groups[0]["lr"] == 0.5


class ReluNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 2)
    def forward(self, x): return self.b(torch.relu(self.a(x)))


class TanhNet(ReluNet):
    def forward(self, x): return self.b(torch.tanh(self.a(x)))


def test_a_model_of_another_class_is_a_resume_change_and_a_signature_without_one_is_not(tmp_path):
    "Probe 31: the same parameter names and shapes in another class resumed without a word."
    cfg = tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path))
    tb.fit(ReluNet(), loader(), loss_fn=CE, config=cfg, live=False)
    run = tb.fit(TanhNet(), loader(), loss_fn=CE, config=cfg.replace(epochs=2), resume=tmp_path, live=False)
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert changed.severity == "warning" and run.stopped == "completed"  # a renamed class is no error
    assert changed.data["changes"]["model"] == ["ReluNet", "TanhNet"] and "model: 'ReluNet' → 'TanhNet'" in changed.message
    older = run_signature(ReluNet())
    del older["model"]  # a checkpoint written before the class was recorded
    assert resume_changes(older, run_signature(TanhNet())) == []


S = torch.optim.lr_scheduler


def own_schedule(kind, opt, total):
    "A scheduler you make yourself, for a run of `total` optimizer steps."
    if kind == "onecycle": return S.OneCycleLR(opt, max_lr=1e-2, total_steps=total)
    if kind == "cosine": return S.CosineAnnealingLR(opt, T_max=total)
    parts = [S.LinearLR(opt, 0.1, 1.0, total_iters=4), S.CosineAnnealingLR(opt, T_max=total - 4)]
    return S.SequentialLR(opt, parts, milestones=[4])


def fit_own(kind, epochs, folder, resume=None, stop_after=None):
    "fit with your own AdamW and a scheduler made for `epochs` (8 steps each); Ctrl-C after `stop_after`."
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    cbs = [StopAfterStep(stop_after)] if stop_after else []
    cfg = tb.TrainConfig(epochs=epochs, lr=1e-2, device="cpu", checkpoint_dir=str(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the resume_changed and optimizer_given notes
        return tb.fit(model, loader(), loss_fn=CE, config=cfg, optimizer=opt, resume=resume, callbacks=cbs,
                      scheduler=own_schedule(kind, opt, 8 * epochs), live=False)


class StopAfterStep:
    def __init__(self, step): self.step = step
    def after_step(self, state):
        if state.step == self.step: raise KeyboardInterrupt


@pytest.mark.parametrize("kind, setting", [("onecycle", "total_steps"), ("cosine", "T_max")])
def test_extending_a_run_with_your_own_onecycle_or_cosine_follows_its_new_plan(tmp_path, kind, setting):
    """Probe 37: the checkpoint's total_steps=16 replaced the OneCycleLR(total_steps=32) passed (torch raised
    at step 17), its T_max=16 the CosineAnnealingLR(T_max=32)'s (step 17 at lr 0.0, a second cycle)."""
    plan = lrs(fit_own(kind, 4, tmp_path / "full"))
    fit_own(kind, 2, tmp_path / "run")
    run = fit_own(kind, 4, tmp_path / "run", resume=tmp_path / "run")
    used = lrs(run)
    assert run.stopped == "completed" and used[17] > 1e-3
    for step in range(17, 33): assert math.isclose(used[step], plan[step], rel_tol=1e-9), (step, used[step])
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert changed.data["changes"]["scheduler." + setting] == [16, 32]
    assert f"{setting}: 16 → 32" in changed.message
    assert "applied: " in changed.message and "not applied" not in changed.message


def test_an_unchanged_resume_with_your_own_cosine_stays_exact_and_lists_no_scheduler_change(tmp_path):
    "The settings passed are kept only when changed: a closed form and torch's recursion differ in last bits."
    full = fit_own("cosine", 4, tmp_path / "full")
    interrupted(fit_own, "cosine", 4, tmp_path / "run", stop_after=13)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    run = fit_own("cosine", 4, tmp_path / "run", resume=tmp_path / "run")
    assert lrs(run) == lrs(full)
    assert not [f for f in run.findings if f.kind == "resume_changed"]


def test_extending_a_sequential_lr_says_the_checkpoints_plan_goes_on_and_how_to_extend(tmp_path):
    "Probe 37: SequentialLR has no closed form: its checkpointed plan goes on (lr 0.0 at step 17): said."
    fit_own("seq", 2, tmp_path)
    run = fit_own("seq", 4, tmp_path, resume=tmp_path)
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert changed.data["changes"]["scheduler.schedulers[1].T_max"] == [12, 28]
    assert "not applied: SequentialLR has no closed-form lr" in changed.message
    assert "TrainConfig(schedule=" in changed.message


@pytest.mark.parametrize("own", [True, False])
def test_a_changed_lr_on_resume_says_whether_it_is_applied(tmp_path, own):
    "Probe 37: with your own optimizer, config.lr 0.01 → 0.02 was said to change the run; no lr changed."
    def go(lr, folder, resume=None, stop=None):
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = torch.optim.AdamW(model.parameters(), lr=lr) if own else None
        cfg = tb.TrainConfig(epochs=2, lr=lr, device="cpu", checkpoint_dir=str(tmp_path / folder))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tb.fit(model, loader(), loss_fn=CE, config=cfg, optimizer=opt, resume=resume, live=False,
                          callbacks=[StopAfterStep(stop)] if stop else [])
    plan = lrs(go(1e-2, "full"))
    interrupted(go, 1e-2, "run", stop=5)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
    run = go(2e-2, "run", resume=tmp_path / "run")
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert "config.lr: 0.01 → 0.02" in changed.message
    if own:  # the checkpoint's optimizer state sets the lrs: said so
        assert lrs(run)[6] == plan[6] and "(not applied: the optimizer passed in" in changed.message
    else:
        assert lrs(run)[6] == 2 * plan[6] and "(applied:" in changed.message


def test_a_resume_keeps_the_split_fingerprint_its_checkpoint_was_given(tmp_path):
    """Probe 47: fit(..., resume=) without split_fingerprint= dropped the one the checkpoint's run named (a
    'resume_changed' of it, and a Checklist saying 'the run names no split', in the quickstart itself)."""
    cfg = tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path))
    first = tb.fit(nn.Linear(4, 3), loader(), loss_fn=nn.CrossEntropyLoss(), config=cfg, live=False,
                   split_fingerprint="abc123")
    more = tb.fit(nn.Linear(4, 3), loader(), loss_fn=nn.CrossEntropyLoss(), config=cfg.replace(epochs=2),
                  live=False, resume=first.last_path)
    assert more.extra["split_fingerprint"] == "abc123"
    assert not [f for f in more.findings if "split_fingerprint" in f.message]
    assert torch.load(more.last_path, weights_only=False)["split_fingerprint"] == "abc123"
    assert tb.Run.load(tmp_path).extra["split_fingerprint"] == "abc123"


@pytest.mark.parametrize("at", [0, 1, 2])  # the interrupt after step 1, 2 (an evaluation), 3
def test_patience_0_resumes_as_the_run_would_have_gone_on(tmp_path, at):
    """Probe 82, r_1: with patience=0 every resume stopped at once as 'early_stopping' (the checkpoint's count of 0
    evaluations without improvement read as spent), though the loop stops only at the first one, as Keras does."""
    g = torch.Generator().manual_seed(1)
    X, y, Xv, yv = torch.randn(80, 6, generator=g), torch.randint(0, 3, (80,), generator=g), \
        torch.randn(40, 6, generator=g), torch.randint(0, 3, (40,), generator=g)
    train, valid = [(X[i:i + 8], y[i:i + 8]) for i in range(0, 80, 8)], [(Xv, yv)]
    cfg = tb.TrainConfig(epochs=30, lr=0.2, patience=0, eval_every=2, device="cpu", checkpoint_dir=tmp_path)

    def model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))

    class CtrlC(tb.Callback):
        def after_step(self, state):
            if state.step == at + 1: raise KeyboardInterrupt
    whole = model()
    ref = tb.fit(whole, train, valid, loss_fn=nn.functional.cross_entropy, config=cfg.replace(checkpoint_dir=None),
                 live=False)
    cut = interrupted(tb.fit, model(), train, valid, loss_fn=nn.functional.cross_entropy, config=cfg, live=False,
                      callbacks=[CtrlC()])
    assert cut.stopped == "interrupted" and cut.step == at + 1 < ref.step
    resumed = model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "early stopping ended the checkpoint's run"
        tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
        again = tb.fit(resumed, train, valid, loss_fn=nn.functional.cross_entropy, config=cfg, live=False,
                       resume=tmp_path)
    assert (again.stopped, again.step) == (ref.stopped, ref.step) == ("early_stopping", ref.step)
    assert all(torch.equal(a, b) for a, b in zip(resumed.state_dict().values(), whole.state_dict().values()))


class CountSteps(tb.Callback):
    "The docs' example: counts after_step events, its count kept in checkpoints."
    def __init__(self): self.n = 0
    def after_step(self, state): self.n += 1
    def state_dict(self): return {"n": self.n}
    def load_state_dict(self, state): self.n = state["n"]


@contextlib.contextmanager
def _presses_after_step(n, times, press):
    "`press` `times` times right after the n-th optimizer step (a step post-hook: the weights moved, not yet counted)."
    from torch.optim.optimizer import register_optimizer_step_post_hook
    calls = []
    def hook(opt, args, kwargs):
        calls.append(1)
        if len(calls) == n:
            for _ in range(times): press()
    handle = register_optimizer_step_post_hook(hook)
    try: yield
    finally: handle.remove()


def _counted():
    "Callbacks for `_interrupted_and_resumed`, a CountSteps each run; the counters in order (whole, cut, resumed)."
    counters = []
    def callbacks():
        counters.append(CountSteps())
        return [counters[-1]]
    return counters, callbacks


def _interrupted_and_resumed(tmp_path, interrupt, callbacks=lambda: ()):
    """A 3-epoch run, interrupted by `interrupt` (a context that sends SIGINT somewhere), resumed; and the whole run.
    The interrupted run is the one the KeyboardInterrupt carries out of fit (.run), as in any plain script."""
    import os, signal
    cfg = tb.TrainConfig(epochs=3, lr=1e-2, schedule="warmup_cosine", warmup=0.1, device="cpu",
                         checkpoint_dir=str(tmp_path / "a"))
    torch.manual_seed(0)
    whole = nn.Linear(4, 2)
    start = {k: v.clone() for k, v in whole.state_dict().items()}
    whole_run = tb.fit(whole, loader(), loss_fn=CE, config=cfg.replace(checkpoint_dir=str(tmp_path / "b")),
                       live=False, callbacks=callbacks())
    model = nn.Linear(4, 2)
    model.load_state_dict(start)
    with interrupt(lambda: os.kill(os.getpid(), signal.SIGINT)):
        run = interrupted(tb.fit, model, loader(), loss_fn=CE, config=cfg, live=False, callbacks=callbacks())
    assert run.stopped == "interrupted"
    model.load_state_dict(start)
    tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: the resume trains again
    resumed = tb.fit(model, loader(), loss_fn=CE, config=cfg, resume=tmp_path / "a", live=False, callbacks=callbacks())
    return run, model, whole, resumed, whole_run


def test_a_ctrl_c_right_after_the_optimizer_steps_resumes_exactly(tmp_path):
    """Probe 92: a Ctrl-C landing after `optimizer.step()` but before the step was counted saved last.pt with the
    stepped weights at the step's start: the resume applied that step twice (weights 4e-3 away, no warning)."""
    counters, callbacks = _counted()
    run, model, whole, _, whole_run = _interrupted_and_resumed(tmp_path, functools.partial(_presses_after_step, 5, 1),
                                                               callbacks)
    assert run.step == 5 and counters[1].n == 5  # the step whose update had happened is counted, its observers too
    assert counters[2].n == whole_run.step
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), whole.state_dict().values()))


def test_a_ctrl_c_while_a_checkpoint_is_written_returns_the_interrupted_run(tmp_path):
    """Probe 92: torch's zip writer turned a KeyboardInterrupt inside its write into 'RuntimeError: [enforce fail
    at inline_container.cc]': fit raised it and the run was 'failed'. The write finishes, then the run ends
    interrupted (in a plain script its KeyboardInterrupt goes on out of fit, carrying the run), and resumes exactly."""
    import contextlib
    real = torch.save

    @contextlib.contextmanager
    def inside_the_second_write(press):
        calls = []
        class Pressing:
            def __init__(self, f): self.f, self.n = f, 0
            def write(self, b):
                self.n += 1
                if self.n == 2: press()
                return self.f.write(b)
            def __getattr__(self, name): return getattr(self.f, name)
        def save(obj, f, *a, **k):
            calls.append(1)
            return real(obj, Pressing(f) if len(calls) == 2 else f, *a, **k)
        torch.save = save
        try: yield
        finally: torch.save = real
    run, model, whole, _, _ = _interrupted_and_resumed(tmp_path, inside_the_second_write)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), whole.state_dict().values()))


def test_two_ctrl_cs_inside_an_optimizer_step_and_one_before_its_observers_resume_exactly(tmp_path):
    """Probe 95: a second press inside the step interrupted it half done (last.pt a step ahead of its position, the
    resume 0.03 away); a press held to the step's end skipped its after_step observers (a callback counting steps
    ended one short, NanGuard's weight norms of that step lost)."""
    counters, callbacks = _counted()
    run, model, whole, resumed, whole_run = _interrupted_and_resumed(
        tmp_path, functools.partial(_presses_after_step, 1, 2), callbacks)
    assert run.step == 1 and counters[1].n == 1  # the step and its observers, whole
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), whole.state_dict().values()))
    assert counters[2].n == counters[0].n == whole_run.step
    norms = lambda r: r.history.query("name.str.startswith('weight_norm')", engine="python")[["step", "name"]]
    assert norms(resumed).query("step == 1").shape[0] == norms(whole_run).query("step == 1").shape[0] > 0


def test_a_third_ctrl_c_leaves_a_hung_scheduler_step_and_presses_while_a_checkpoint_is_written_wait(tmp_path):
    """Probe 99: every press waited out a scheduler step that hung (only killing the kernel left it); a third press
    while a checkpoint was written raised torch's 'enforce fail' or aborted the process; a third press in the
    interrupted run's last save left that run's SIGINT handler installed for good."""
    import os, signal
    press = lambda: os.kill(os.getpid(), signal.SIGINT)  # noqa: E731
    reached = []
    class Hangs(torch.optim.lr_scheduler.LambdaLR):
        def step(self, *a, **k):
            if getattr(self, "armed", False):
                press(); press(); press()
                reached.append("past three presses")  # a hang here could not be left
            super().step(*a, **k)
    usual = signal.getsignal(signal.SIGINT)  # (the suite's: Spark, say, may have set its own)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = Hangs(opt, lambda s: 1.0)
    sched.armed = True
    run = interrupted(tb.fit, model, loader(), loss_fn=CE, optimizer=opt, scheduler=sched, live=False,
                      config=tb.TrainConfig(epochs=1, device="cpu"))
    assert run.stopped == "interrupted" and reached == []
    assert signal.getsignal(signal.SIGINT) == usual
    real, saves = torch.save, []
    def save(obj, f, *a, **k):  # presses in the middle of the second write (and the interrupted run's last one)
        saves.append(1)
        if len(saves) >= 2: press(); press(); press()
        return real(obj, f, *a, **k)
    torch.save = save
    try:
        tb.guard.forget_interrupt()  # the Ctrl-C above ended that run: this test trains again
        run = interrupted(tb.fit, nn.Linear(4, 2), loader(), loss_fn=CE, live=False,
                          config=tb.TrainConfig(epochs=3, device="cpu", checkpoint_dir=str(tmp_path)))
    finally: torch.save = real
    assert run.stopped == "interrupted" and signal.getsignal(signal.SIGINT) == usual
    assert tb.Run.load(tmp_path).stopped == "interrupted"


def test_a_resume_that_names_nothing_says_where_it_looked_and_the_near_name(tmp_path, monkeypatch):
    """Probe 116: resume='runs/rel' after a %cd (or a typo, 'runs/rell') said only "checkpoint 'runs/rel' does not
    exist": neither the folder a relative path was read from (what tells a %cd was the cause) nor the near name.
    Said before any folder is claimed, for fit and for a Recorder alike."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    d = re.escape(str(tmp_path))
    fit = functools.partial(tb.fit, nn.Linear(4, 2), loader(), loss_fn=CE, live=False)
    fit(config=tb.TrainConfig(epochs=1, checkpoint_dir="runs/rel"))
    with pytest.raises(FileNotFoundError, match=r"resume='runs/rell' does not exist: .* at "
                       rf"{d}/runs/rell \(a relative path is read from the working folder {d}: .*"
                       r"%cd.*\); did you mean 'runs/rel'\?"):
        fit(config=tb.TrainConfig(epochs=2), resume="runs/rell")
    monkeypatch.chdir(tmp_path / "sub")
    with pytest.raises(FileNotFoundError, match=rf"at {d}/sub/runs/rel \(.*working folder {d}/sub: .*\); "
                       rf"its folder {d}/sub/runs does not exist either"):
        fit(config=tb.TrainConfig(epochs=2, checkpoint_dir="runs/new"), resume="runs/rel")
    assert not (tmp_path / "sub" / "runs").exists()  # refused before the new run's folder was made
    with pytest.raises(FileNotFoundError, match=rf"resume='{d}/runs/rell' .* at {d}/runs/rell; did "
                       rf"you mean '{d}/runs/rel'\?"):  # an absolute path: no working folder to blame
        with tb.Recorder(tb.TrainConfig(checkpoint_dir="other"), live=False, validates=False,
                         resume=str(tmp_path / "runs" / "rell")) as rec:
            rec.step(0.5)


def test_fit_resumed_in_a_later_epoch_over_persistent_workers_is_exact(tmp_path):
    "A DataLoader(persistent_workers=True) resumed in epoch 2 trained on another order (probe 132): fit draws it as before."
    from torch.utils.data import DataLoader, TensorDataset
    from helpers import interrupt_at, mlp, same_weights
    from trainbook.guard import forget_interrupt
    X, y = blobs(96)
    def loader():
        return DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True, num_workers=1, persistent_workers=True,
                          generator=torch.Generator().manual_seed(3))
    cfg = tb.TrainConfig(epochs=3, monitor="train_loss", device="cpu", seed=0)
    whole = mlp(dropout=0.2)
    tb.fit(whole, loader(), loss_fn=nn.functional.cross_entropy, config=cfg, live=False)
    cut = mlp(dropout=0.2)
    run = interrupted(tb.fit, cut, loader(), loss_fn=nn.functional.cross_entropy, live=False,
                      config=cfg.replace(checkpoint_dir=str(tmp_path)), callbacks=[interrupt_at(15)])  # epoch 2
    forget_interrupt()  # the script goes on, on purpose
    again = mlp(dropout=0.2)
    tb.fit(again, loader(), loss_fn=nn.functional.cross_entropy, config=cfg.replace(checkpoint_dir=str(tmp_path)),
           live=False, resume=run.run_dir)
    assert same_weights(whole, again)


def test_an_epoch_stopped_at_its_last_step_keeps_its_timing_records_on_resume(tmp_path):
    "A Ctrl-C at an epoch's last step, before its end: the resumed run lost that epoch's step_time and throughput."
    from helpers import interrupt_at
    from trainbook.guard import forget_interrupt
    X, y = blobs(64)
    timing = {"step_time", "samples_per_s", "data_wait"}
    def go(folder, **kw):
        torch.manual_seed(0)
        return tb.fit(nn.Linear(8, 3), tb.TensorLoader(X, y, batch_size=16, shuffle=True), loss_fn=CE, live=False,
                      config=tb.TrainConfig(epochs=2, checkpoint_dir=str(folder), device="cpu"), **kw)
    records = lambda run: sorted({(e, n) for e, n in zip(run.history.epoch, run.history.name) if n in timing})
    whole = go(tmp_path / "whole")
    stopped = interrupted(go, tmp_path / "cut", callbacks=[interrupt_at(4)])  # 4 batches an epoch: its last step
    forget_interrupt()
    resumed = go(tmp_path / "cut", resume=stopped.run_dir)
    assert records(resumed) == records(whole) == [(e, n) for e in (0, 1) for n in sorted(timing)]


def test_a_resume_that_swaps_fits_schedule_for_a_passed_scheduler_says_so(tmp_path):
    "It read 'scheduler.lr_lambdas: [{}, {}] → [None, None]': the swap itself unsaid (probe 132, finding 4)."
    from helpers import interrupt_at
    from trainbook.guard import forget_interrupt
    X, y = blobs(96)
    cfg = tb.TrainConfig(epochs=2, schedule="warmup_cosine", warmup=0.1, checkpoint_dir=str(tmp_path), device="cpu")
    def go(own=False, **kw):
        model = nn.Linear(8, 3)
        opt = torch.optim.AdamW(tb.param_groups(model, 0.01), lr=1e-3) if own else None
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 / (1 + 0.1 * k)) if own else None
        return tb.fit(model, tb.TensorLoader(X, y, batch_size=16), loss_fn=CE, optimizer=opt, scheduler=sched,
                      config=cfg, live=False, **kw)
    stopped = interrupted(go, callbacks=[interrupt_at(4)])
    forget_interrupt()
    with pytest.warns(UserWarning, match="resuming with"):
        run = go(own=True, resume=stopped.run_dir)
    (said,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert said.data["changes"] == {"scheduler": ["fit's own (config.schedule)", "LambdaLR (passed)"]}
