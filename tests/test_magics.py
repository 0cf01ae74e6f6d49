"The magics through a real IPython InteractiveShell: each works, bad arguments give usage errors, reload does not double-register."
import re
import pandas as pd
import pytest
import torch
from pathlib import Path
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from sklearn.datasets import load_breast_cancer

import trainbook as tb
from trainbook.magics import TrainbookMagics


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext trainbook", store_history=False)
    df = load_breast_cancer(as_frame=True).frame
    torch.manual_seed(0)
    X = torch.tensor(df.drop(columns="target").to_numpy(), dtype=torch.float32)
    X = (X - X.mean(0)) / X.std(0)
    y = torch.tensor(df.target.to_numpy())
    shell.user_ns.update(df=df, model=torch.nn.Sequential(torch.nn.Linear(30, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)),
                         dl_train=tb.TensorLoader(X[:400], y[:400], batch_size=64, shuffle=True),
                         dl_valid=tb.TensorLoader(X[400:], y[400:], batch_size=256))
    yield shell
    InteractiveShell.clear_instance()


def run(ip, code):
    result = ip.run_cell(code, store_history=False)
    return result


def test_check_and_split(ip):
    r = run(ip, "%check df --target target")
    assert r.success and isinstance(r.result, tb.DataReport) and r.result.ok
    r = run(ip, "%split df --target target --test-size 0.2 --folds 5")
    sp = ip.user_ns["_splits"]
    assert r.success and r.result is sp and len(sp.folds) == 5 and len(sp.test) > 0


def test_train_line_magic_infers_the_loss(ip, capsys):
    r = run(ip, "%train model dl_train dl_valid --epochs 2 --lr 1e-2 --metrics accuracy --no-live")
    assert r.success and ip.user_ns["_run"] is r.result and r.result.step == 2 * 7
    assert "loss: cross_entropy" in capsys.readouterr().out
    assert r.result.metrics()["valid_accuracy"].iloc[-1] > 0.9


def test_train_cell_magic_body(ip):
    r = run(ip, "%%train model dl_train dl_valid --no-live\nepochs = 1\nlr = 3e-3\nschedule = 'warmup_cosine'\nwarmup = 0.2  # a fraction\n")
    assert r.success and r.result.config.schedule == "warmup_cosine" and r.result.config.warmup == 0.2


def test_overfit_flag(ip):
    r = run(ip, "%train model dl_train --overfit --loss cross_entropy")
    assert r.success and isinstance(r.result, tb.SanityReport) and r.result.passed and ip.user_ns["_sanity"] is r.result


def test_dry_run_flag(ip, tmp_path):
    before = {k: v.clone() for k, v in ip.user_ns["model"].state_dict().items()}
    r = run(ip, "%train model dl_train dl_valid --dry-run --metrics accuracy --lr 1e-2 --accum 2 --no-live")
    report = r.result
    assert r.success and isinstance(report, tb.DryRunReport) and ip.user_ns["_dry_run"] is report
    assert report.passed and report.steps == 3 and report.run.config.accum_steps == 2
    assert all(torch.equal(before[k], v) for k, v in ip.user_ns["model"].state_dict().items())
    (tmp_path / "blocker").write_text("a file where the run folder should go")
    r = run(ip, f"%train model dl_train dl_valid --dry-run --checkpoint-dir {tmp_path / 'blocker' / 'run1'}")
    assert r.success and not r.result.passed
    assert [f.kind for f in r.result.findings] == ["checkpoint_not_writable"]


@pytest.mark.parametrize("code, message", [
    ("%train model dl_train --overfit --dry-run", "pick one"),
    ("%check nothing --target target", "name 'nothing' is not defined"),
    ("%check df --target target --bogus 1", "unknown option --bogus; the options: "),
    # probe 47: a target typed where an option goes, an argument after the options
    ("%check df target", "unrecognized arguments: target: the target is an option: --target target"),
    ("%split df target", "unrecognized arguments: target: the target is an option: --target target"),
    ("%train model dl_train --epochs 1 dl_valid", "model, dl_train and dl_valid come first, before the options"),
    ("%split df --target target --valid-size 1.5", "valid_size must be a fraction"),
    ("%train model dl_train --epochs -1", "TrainConfig.epochs must be"),
    ("%train model dl_train --loss hinge", "--loss 'hinge'"),
    ("%train model missing", "name 'missing' is not defined"),
    ("%train modle dl_train", "name 'modle' is not defined in the notebook (did you mean 'model'?)"),
    ("%train model df", "df is a DataFrame of shape (569, 31): data, not batches"),
    ("%%train model dl_train\nepoch = 3", "'epoch' is not a TrainConfig field (did you mean 'epochs'?)"),
    ("%train model dl_train --precision fp8", "invalid choice"),
    ("%checklist binary target valid_accuracy nan", "argument threshold: expected a finite number, got 'nan'"),
    ("%checklist binary target valid_accuracy -inf", "argument threshold: expected a finite number, got '-inf'"),
    ("%checklist binary target valid_accuracy high", "argument threshold: expected a number, got 'high'"),
    ("%checklist binary target", "usage: %checklist TASK TARGET METRIC THRESHOLD"),
    ("%train model dl_train --lr nan", "argument --lr: expected a finite number, got 'nan'"),
    ("%split df --target target --valid-size nan", "argument --valid-size: expected a finite number"),
    ("%train df dl_train", "df must be a torch.nn.Module, got DataFrame (the arguments are %train MODEL"),
    ("%train dl_train dl_train dl_valid", "dl_train must be a torch.nn.Module, got TensorLoader"),
    # an option mistyped, or a setting that has none (probe 65: both were told the arguments come first)
    ("%train model dl_train --patiance 2", "unknown option --patiance (did you mean '--patience'?)"),
    ("%train model dl_train --warmup 10", "warmup is a TrainConfig setting without an option: give it in a %%train"),
    ("%train --help", "--epochs"),
    # one dict batch where batches belong: named before the notebook's model trains a whole epoch
    ("import torch\none = {'x': torch.zeros(8, 30), 'y': torch.zeros(8).long()}\n%train model dl_train one",
     "dl_valid is a dict ('x', 'y'): one batch"),
    # a loss that does not fit the task, with a validation loader (probe 75: torch's RuntimeError, a traceback)
    ("%train model dl_train dl_valid --loss mse --no-live", "prediction shape (169, 2) and target shape (169,) differ"),
])
def test_bad_arguments_are_one_line_usage_errors(ip, capsys, code, message):
    r = run(ip, code)
    out = capsys.readouterr()
    text = out.out + out.err
    assert not r.success and "UsageError" in text and message in text
    assert "Traceback" not in text


def test_help_is_real(ip):
    doc = ip.find_line_magic("train").__doc__
    assert "--epochs" in doc and "--overfit" in doc and "--loss" in doc


def test_reload_does_not_double_register(ip):
    run(ip, "%reload_ext trainbook")
    run(ip, "%reload_ext trainbook")
    mine = [m for m in ip.magics_manager.registry.values() if type(m).__name__ == "TrainbookMagics"]
    assert len(mine) == 1
    assert run(ip, "%check df --target target").success


def test_checklist_ticks_itself(ip):
    r = run(ip, "%checklist binary target valid_accuracy 0.9")
    cl = r.result
    assert isinstance(cl, tb.Checklist) and cl.done["defined"] and not cl.done["data_checked"]
    run(ip, "%check df --target target")
    run(ip, "%split df --target target")
    run(ip, "%train model dl_train --overfit --loss cross_entropy")
    run(ip, "import trainbook as tb; _t = tb.baseline(df, 'target', _splits, models=('dummy', 'linear'))")
    run(ip, "%train model dl_train dl_valid --epochs 3 --lr 1e-2 --metrics accuracy --no-live")
    assert cl.baseline > 0.95 and not cl.done["beats"]  # the linear baseline is not beaten by this small run
    run(ip, "_t = tb.baseline(df, 'target', _splits, models=('dummy',))")
    run(ip, "%train model dl_train dl_valid --epochs 1 --lr 1e-2 --metrics accuracy --no-live")
    assert all(cl.done.values()), str(cl)
    assert "[x] full run beats the baseline" in str(cl)
    cl.close()


def test_checklist_output_carries_a_static_snapshot_that_follows_its_state():
    from types import SimpleNamespace
    from trainbook.magics import Checklist
    cl = Checklist("binary classification", "y", "valid_accuracy", threshold=0.9)
    try:
        cl.widget()
        bundle = cl._bundle()
        assert "application/vnd.jupyter.widget-view+json" in bundle  # the live view, where a kernel runs
        assert "Readiness checklist" in bundle["text/html"] and "⬜" in bundle["text/html"]
        updates = []
        cl._handles.append(SimpleNamespace(update=lambda b, raw: updates.append(b)))
        cl.hear("overfit_batch", SimpleNamespace(passed=True, findings=[]))
        assert updates and "passed" in updates[-1]["text/html"]  # the saved output shows the new tick
    finally:
        cl.close()


def small_fit(callbacks=(), epochs=2, **kw):
    "A small regression fit: valid_loss (MSE) near 1, announced to the checklists like any fit."
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(16, 4, generator=g), torch.randn(16, 1, generator=g)) for _ in range(4)]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    return tb.fit(model, data, data[:2], loss_fn=torch.nn.MSELoss(), live=False, callbacks=list(callbacks),
                  config=tb.TrainConfig(epochs=epochs, device="cpu"), **kw)


def test_checklist_takes_the_direction_from_the_table_fit_uses():
    "mse, perplexity, *_loss are lower-better for the checklist as for fit's `mode` check; unknown names need mode."
    def mse(pred, y): return float(((pred - y) ** 2).mean())
    strict = tb.Checklist("regression", "y", "valid_mse", baseline=0.01, threshold=0.005)
    loose = tb.Checklist("regression", "y", "valid_mse", baseline=50.0, threshold=20.0)
    try:
        run = small_fit(metrics=[mse])
        assert run.metrics()["valid_mse"].min() > 0.01
        assert strict.lower_better and not strict.done["beats"]  # valid_mse ~1 does not beat 0.01
        assert loose.done["beats"], str(loose)
    finally:
        strict.close()
        loose.close()
    assert tb.Checklist("lm", "y", "valid_perplexity", threshold=9.0).lower_better
    with pytest.raises(ValueError, match="pass mode='min' or mode='max'"):
        tb.Checklist("ranking", "y", "valid_ndcg", threshold=0.5)
    with pytest.raises(ValueError, match="mse is better when lower; use mode='min'"):
        tb.Checklist("regression", "y", "valid_mse", threshold=0.5, mode="max")


class Crash:
    def after_epoch(self, state): raise RuntimeError("crash after epoch 0")


class StopAfterEpoch0:
    def after_epoch(self, state): state.control.request_stop("interrupted")


@pytest.mark.parametrize("callback, stopped", [(Crash(), "failed"), (StopAfterEpoch0(), "interrupted")])
def test_checklist_counts_only_a_finished_run(callback, stopped):
    cl = tb.Checklist("regression", "y", "valid_loss", baseline=5.0, threshold=3.0)
    try:
        try: run = small_fit([callback], epochs=20)
        except RuntimeError as e: run = e.run
        assert run.stopped == stopped and run.metrics()["valid_loss"].min() < 3.0  # its partial value would pass
        assert not cl.done["beats"] and f"ended {stopped}" in cl.notes["beats"]
        small_fit()  # a finished run with the same value ticks it
        assert cl.done["beats"], str(cl)
    finally:
        cl.close()


def test_checklist_reads_the_runs_best_value_not_its_last():
    from trainbook.core import History
    from trainbook.run import Run
    rows = [(10, 0, "valid", "loss", 0.5), (20, 1, "valid", "loss", 2.0),  # overfits after epoch 0
            (10, 0, "valid", "mae", 0.4), (20, 1, "valid", "mae", 1.5)]
    run = Run(records=History(rows), config=tb.TrainConfig(), stopped="completed", best=0.5, best_epoch=0,
              environment={"torch": "2"})
    monitored = tb.Checklist("regression", "y", "valid_loss", baseline=1.2, threshold=1.0)
    other = tb.Checklist("regression", "y", "valid_mae", baseline=1.2, threshold=1.0)
    try:
        monitored.hear("run", run)
        other.hear("run", run)
        assert monitored.done["beats"] and "valid_loss 0.5 " in monitored.notes["beats"]  # run.best: best.pt's value
        assert other.done["beats"] and "valid_mae 0.4 " in other.notes["beats"]  # the history's best, lower-better
    finally:
        monitored.close()
        other.close()


def test_a_hash_in_a_quoted_value_a_key_set_twice_and_a_model_that_computes_its_loss(ip, tmp_path):
    "Seen: 'run#1' cut at the '#' into a folder named '\"/...run'; --epochs 1 and epochs = 2 ran 2 epochs; no --loss for an HF model."
    folder = tmp_path / "run#1"
    r = run(ip, f'%%train model dl_train --no-live\nepochs = 1  # one pass\ncheckpoint_dir = "{folder}"')
    assert r.success and (folder / "run.json").exists()

    class OwnLoss(torch.nn.Module):
        "Hugging Face style: the labels go in, the loss comes out."
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(30, 2)
        def forward(self, x, labels):
            logits = self.head(x)
            return {"logits": logits, "loss": torch.nn.functional.cross_entropy(logits, labels)}
    X = torch.randn(64, 30)
    ip.user_ns.update(own=OwnLoss(), dicts=[{"x": X[i:i + 16], "labels": (X[i:i + 16, 0] > 0).long()}
                                            for i in range(0, 64, 16)])
    r = run(ip, "%train own dicts --loss model --epochs 2 --no-live")
    assert r.success and r.result.step == 8 and r.result.stopped == "completed"


def test_a_key_set_by_a_flag_and_in_the_cell_is_named(ip, capsys):
    r = run(ip, "%%train model dl_train --no-live --epochs 1\nepochs = 2")
    out = capsys.readouterr()
    assert not r.success and "epochs: set by a flag and in the cell; set each once" in out.out + out.err


def test_checklist_takes_a_quoted_task_of_several_words(ip):
    "Seen: %checklist \"binary classification\" ... was split at the space into five arguments."
    r = run(ip, '%checklist "binary classification" target valid_accuracy 0.9 max')
    cl = r.result
    try:
        assert r.success and ip.user_ns["_checklist"] is cl
        assert (cl.task, cl.target, cl.metric, cl.threshold) == ("binary classification", "target",
                                                                 "valid_accuracy", 0.9)
        assert run(ip, "%checklist").result is cl  # no arguments: the last one
    finally:
        cl.close()
    r = run(ip, "%check df --target 'mean radius'")  # the other magics split the same way
    assert r.success and r.result.target == "mean radius" and r.result.task == "regression"


def test_a_new_checklist_replaces_the_last_one_which_ticks_no_more(ip):
    "Probe 47: the checklist a new %checklist replaced kept ticking (and printing after every %train)."
    first = run(ip, '%checklist "first try" target valid_accuracy 0.9').result
    second = run(ip, '%checklist "second try" target valid_loss 0.5 min').result
    try:
        assert ip.user_ns["_checklist"] is second and run(ip, "%check df --target target").success
        assert second.done["data_checked"] and not first.done["data_checked"], str(first)
    finally:
        first.close()
        second.close()


def test_a_checklist_metric_of_unknown_direction_names_the_known_one_it_may_mean():
    "Probe 47: 'valid_acuracy' was refused only for its direction, with no word that it looks misspelt."
    with pytest.raises(ValueError, match=r"whether acuracy \(did you mean 'accuracy'\?\) is better when lower"):
        tb.Checklist("binary", "y", "valid_acuracy", threshold=0.9)
    with pytest.raises(ValueError, match=r"whether ndcg is better when lower or higher; pass mode="):
        tb.Checklist("ranking", "y", "valid_ndcg", threshold=0.5)  # no known name near it: none offered


@pytest.mark.parametrize("given", ["threshold", "baseline"])
def test_a_checklist_refuses_a_nan_threshold_or_baseline(given):
    "A NaN threshold compares False with every value: each run would have passed it."
    with pytest.raises(ValueError, match=f"{given} must be a finite number \\(or None\\), got nan"):
        tb.Checklist("binary", "y", "valid_accuracy", **{"threshold": 0.9, given: float("nan")})


def test_a_windows_path_with_escapes_in_the_cell_is_refused_before_a_folder_is_made(ip, capsys, tmp_path,
                                                                                   monkeypatch):
    "Seen: checkpoint_dir = \"C:\\runs\\new\" in a %%train cell made a folder whose name holds a newline."
    monkeypatch.chdir(tmp_path)
    r = run(ip, '%%train model dl_train --no-live\nepochs = 1\ncheckpoint_dir = "C:\\runs\\new"')
    out = capsys.readouterr()
    said = ('line 2: checkpoint_dir = "C:\\runs\\new" holds a backslash escape that Python reads as a control '
            'character')
    assert not r.success and said in out.out + out.err
    assert 'r"C:\\runs\\new", or forward slashes, checkpoint_dir = "C:/runs/new"' in out.out + out.err
    assert list(tmp_path.iterdir()) == []  # refused before any folder is made
    r = run(ip, '%%train model dl_train --no-live\nepochs = 1\ncheckpoint_dir = r"C:\\runs\\new"')
    assert r.success and r.result.run_dir is not None and "\n" not in str(r.result.run_dir)
    assert tb.magics.parse_body('checkpoint_dir = "runs\\\\new"') == {"checkpoint_dir": "runs\\new"}


def test_check_shows_its_report_as_text_in_a_terminal(ip, capsys):
    "Seen (F15): %check in a terminal IPython printed only '<IPython.core.display.HTML object>'."
    run(ip, "_bad = df.assign(worst_radius_copy=df['target'] * 3.0)")
    r = run(ip, "%check _bad --target target")
    out = capsys.readouterr().out
    assert r.success and "IPython.core.display" not in out and "<plotly" not in out
    assert "DataReport: 1 error(s)" in out and "ERROR target_leak [worst_radius_copy]" in out
    assert "mean radius" in out  # the per-column summary, as a text table


def test_batches_given_as_y_x_are_a_usage_error_that_says_to_swap_them(ip, capsys):
    "Seen (F17): a RuntimeError traceback escaped %train when the batches were (y, X)."
    X, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    ip.user_ns.update(lin=torch.nn.Linear(4, 2), swapped=[(y[i:i + 16], X[i:i + 16]) for i in range(0, 64, 16)])
    r = run(ip, "%train lin swapped --epochs 1 --no-live")
    text = "".join(capsys.readouterr())
    assert not r.success and isinstance(r.error_in_exec, UsageError) and "Traceback" not in text
    assert "swapped's first batch failed" in text and "int64" in text  # what went wrong
    assert "look like (y, x)" in text and "(x, y)" in text  # and what to do
    ip.user_ns["wide"] = [(torch.randn(16, 5), y[:16])]  # a failure whose shapes say nothing of the order
    r = run(ip, "%train lin wide --epochs 1 --no-live")
    text = "".join(capsys.readouterr())
    assert isinstance(r.error_in_exec, UsageError) and "wide's first batch failed" in text
    assert "look like (y, x)" not in text


def test_a_comparison_in_the_train_cell_names_the_assignment(ip, capsys):
    "Seen (F17): `epochs == 1` in %%train said: TrainConfig.epochs must be a positive integer, got '= 1' (str)."
    r = run(ip, "%%train model dl_train --no-live\nepochs == 1")
    text = "".join(capsys.readouterr())
    assert isinstance(r.error_in_exec, UsageError) and "'= 1'" not in text
    assert "%%train line 1: 'epochs == 1' compares; set a field with one '=': epochs = 1" in text


def test_an_expression_in_the_train_cell_is_said_to_be_no_literal(ip, capsys):
    """Probe 116: `lr = 10 ** -3` in %%train was refused as "got '10 ** -3' (str)", which does not say why: the
    cell's values are literals, read and not run. Text fields still take a bare word (a schedule, a folder)."""
    r = run(ip, "%%train model dl_train --no-live\nepochs = 1\nlr = 10 ** -3")
    text = "".join(capsys.readouterr())
    assert isinstance(r.error_in_exec, UsageError) and "(str)" not in text
    assert ("%%train line 2: lr = 10 ** -3 is not a Python literal: a %%train cell's values are read as written, "
            "not run (no arithmetic, no names); write the value itself, a number: lr = 0.001") in text
    for line, said in (("patience = 2 * 3", "a whole number: patience = 3 (or None)"),
                       ("compile = yes", "True or False")):
        with pytest.raises(UsageError, match=re.escape(said)): tb.magics.parse_body(line)
    assert tb.magics.parse_body("schedule = warmup_cosine\ncheckpoint_dir = runs/exp1\ndevice = cuda:0") == {
        "schedule": "warmup_cosine", "checkpoint_dir": "runs/exp1", "device": "cuda:0"}


def churn_frame(n=200, seed=0):
    "A small binary table: two noise features and a 0/1 churn label, no findings of its own."
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"tenure": rng.normal(size=n), "spend": rng.normal(size=n),
                         "churn": rng.integers(0, 2, n)})


def test_a_check_without_the_target_does_not_tick_data_checked():
    "Seen: check_data(df, 'churn') found a target leak, then check_data(df) flipped the step to '0 error(s)'."
    leaky = churn_frame().assign(leak=lambda d: d["churn"] * 2.0)
    cl = tb.Checklist("churn", "churn", "valid_accuracy", threshold=0.8)
    first = tb.Checklist("churn", "churn", "valid_accuracy", threshold=0.8)
    try:
        tb.check_data(leaky, "churn")
        first.close()  # `first` hears only the check without a target
        assert not cl.done["data_checked"] and cl.notes["data_checked"] == "1 error(s)"
        tb.check_data(leaky)
        assert not cl.done["data_checked"], str(cl)  # the leak was never checked again
        assert cl.notes["data_checked"].startswith("1 error(s); ignored a check without a target")
        tb.check_data(leaky.drop(columns="leak"), "churn")  # a check of the target, clean: ticked
        assert cl.done["data_checked"] and cl.notes["data_checked"] == "0 error(s)"
    finally:
        cl.close()
    fresh = tb.Checklist("churn", "churn", "valid_accuracy", threshold=0.8)
    try:
        tb.check_data(leaky)
        assert not fresh.done["data_checked"] and "check_data(df, 'churn')" in fresh.notes["data_checked"]
    finally:
        fresh.close()


def test_a_split_of_another_table_or_target_is_set_aside():
    "Seen: make_splits on another frame ticked 'split audited' for the checklist's table."
    df, other = churn_frame(), churn_frame(120, seed=1)
    cl = tb.Checklist("churn", "churn", "valid_accuracy", threshold=0.8)
    note = lambda: cl.notes["split_audited"]
    try:
        tb.check_data(df, "churn")
        tb.make_splits(other, "churn")  # the same target, another table
        assert not cl.done["split_audited"], str(cl)
        assert note() == "ignored a split of a table of 120 rows: the table checked for 'churn' has 200"
        tb.make_splits(df.rename(columns={"churn": "plan"}), "plan")
        assert not cl.done["split_audited"] and note() == "ignored a split of target 'plan', not 'churn'"
        sp = tb.make_splits(df, "churn")
        assert cl.done["split_audited"] and note() == f"stratified, fingerprint {sp.fingerprint}"
        tb.make_splits(other, "churn")  # set aside: the audited split stands
        assert cl.done["split_audited"]
        assert note().startswith(f"stratified, fingerprint {sp.fingerprint}; ignored a split of a table")
    finally:
        cl.close()


def test_a_baseline_that_names_other_splits_is_set_aside():
    "A baseline table whose attrs carry another split_fingerprint is not 'fitted on the same splits'."
    import pandas as pd
    from trainbook.core import announce
    cl = tb.Checklist("regression", "y", "valid_loss", threshold=3.0)
    try:
        sp = tb.make_splits(churn_frame().rename(columns={"churn": "y"}), "y")
        table = pd.DataFrame({"valid_loss": [5.0]}, index=pd.Index(["linear"], name="model"))
        table.attrs["split_fingerprint"] = "0123abcd"  # a baseline table that says its splits
        announce("baseline", table)
        assert not cl.done["baseline"] and cl.baseline is None
        assert cl.notes["baseline"] == ("ignored a baseline fitted on other splits (fingerprint 0123abcd, "
                                        f"audited {sp.fingerprint})")
        table.attrs["split_fingerprint"] = sp.fingerprint
        announce("baseline", table)
        assert cl.done["baseline"] and cl.baseline == 5.0 and cl.notes["baseline"] == "valid_loss 5"
    finally:
        cl.close()


def test_a_run_on_other_splits_does_not_beat_the_baseline():
    "Seen: a run with another split_fingerprint than the audited split's beat the baseline."
    cl = tb.Checklist("regression", "y", "valid_loss", baseline=5.0, threshold=3.0)
    try:
        sp = tb.make_splits(churn_frame().rename(columns={"churn": "y"}), "y")
        small_fit(split_fingerprint="0123abcd")  # valid_loss ~1 would beat 5.0 and 3.0
        assert not cl.done["beats"], str(cl)
        assert cl.notes["beats"] == ("the run was fitted on other splits (fingerprint 0123abcd, "
                                     f"audited {sp.fingerprint})")
        small_fit(split_fingerprint=sp.fingerprint)
        assert cl.done["beats"], str(cl)
        small_fit(split_fingerprint="0123abcd")  # a later run on other splits: the win above stands
        assert cl.done["beats"] and "ignored a run fitted on other splits" in cl.notes["beats"], str(cl)
        new = tb.make_splits(churn_frame().rename(columns={"churn": "y"}), "y", seed=1)  # a new audited split
        assert not cl.done["beats"] and cl.done["baseline"]  # the given baseline names no splits
        assert cl.notes["beats"] == (f"fitted on other splits (fingerprint {sp.fingerprint}, "
                                     f"audited {new.fingerprint})")
    finally:
        cl.close()


def test_a_baseline_without_the_metric_column_gives_no_win_on_the_threshold_alone():
    "Seen: metric='valid_loss', baseline() has no valid_loss column, and the run was ticked on the threshold."
    df = churn_frame()
    cl = tb.Checklist("churn", "churn", "valid_loss", threshold=3.0)
    try:
        tb.baseline(df, "churn", tb.make_splits(df, "churn"), models=("dummy", "linear"))
        assert cl.done["baseline"] and cl.baseline is None
        assert "the baseline has no column 'valid_loss' (its columns: train_roc_auc" in cl.notes["baseline"]
        assert "(did you mean 'valid_log_loss'?)" in cl.notes["baseline"]
        small_fit()  # valid_loss ~1, under the threshold 3.0
        assert not cl.done["beats"], str(cl)
        assert cl.notes["beats"].endswith("(did you mean 'valid_log_loss'?): nothing to compare it with")
    finally:
        cl.close()


def test_a_run_heard_before_any_baseline_is_judged_when_the_baseline_comes():
    "Probe 75: a run before the baseline was ticked 'beats' on the threshold alone, and a better baseline fitted later left it ticked."
    from trainbook.core import announce
    cl = tb.Checklist("regression", "y", "valid_loss", threshold=3.0)
    try:
        small_fit()  # valid_loss ~1, under the threshold 3.0, but no baseline yet
        assert not cl.done["beats"] and not cl.ready, str(cl)
        assert "but no baseline yet: fit one on the same splits" in cl.notes["beats"]
        better = pd.DataFrame({"valid_loss": [0.5]}, index=pd.Index(["linear"], name="model"))
        announce("baseline", better)  # the baseline beats the run: still not ticked
        assert cl.done["baseline"] and not cl.done["beats"], str(cl)
        assert "vs baseline 0.5, threshold 3" in cl.notes["beats"]
        announce("baseline", better.assign(valid_loss=5.0))  # a baseline the run beats: ticked now
        assert cl.done["beats"] and "vs baseline 5, threshold 3" in cl.notes["beats"], str(cl)
    finally:
        cl.close()


def test_a_run_without_the_metric_says_so_in_the_note():
    "Seen: a run without valid_accuracy left the 'beats' note empty."
    cl = tb.Checklist("churn", "churn", "valid_accuracy", threshold=0.5)
    try:
        small_fit()
        assert not cl.done["beats"]
        assert cl.notes["beats"] == ("the run has no value of valid_accuracy "
                                     "(its values: train_loss, valid_loss, train_lr)")
    finally:
        cl.close()


def test_a_trailing_comment_on_a_magic_line_is_no_argument(ip, tmp_path):
    "Seen: `%train m dl dv --epochs 1  # a comment` said: unrecognized arguments: # a comment."
    r = run(ip, "%train model dl_train dl_valid --epochs 1 --no-live  # a comment")
    assert r.success and r.result.step == 7
    folder = tmp_path / "run #2"  # a '#' in quotes, or inside a word, is no comment
    r = run(ip, f'%train model dl_train --epochs 1 --no-live --checkpoint-dir "{folder}"  # quoted')
    assert r.success and (folder / "run.json").exists()
    r = run(ip, f"%train model dl_train --epochs 1 --no-live --checkpoint-dir {tmp_path}/r#3")
    assert r.success and (tmp_path / "r#3" / "run.json").exists()
    assert run(ip, "%check df --target target  # the label").result.target == "target"


def test_tb_baseline_says_its_splits_and_a_baseline_of_other_splits_is_set_aside():
    "Seen: a baseline fitted on a leaky split of the table ticked 'fitted on the same splits' of a clean one."
    df = churn_frame()
    cl = tb.Checklist("binary", "churn", "valid_roc_auc")
    try:
        other = tb.make_splits(df, "churn", seed=1)
        audited = tb.make_splits(df, "churn", seed=0)  # the split audited last is the checklist's
        table = tb.baseline(df, "churn", other, models=("dummy", "linear"))
        assert table.attrs == {"target": "churn", "split_fingerprint": other.fingerprint}
        assert not cl.done["baseline"] and "other splits" in cl.notes["baseline"]
        tb.baseline(df, "churn", audited, models=("dummy", "linear"))
        assert cl.done["baseline"], str(cl)
    finally:
        cl.close()


def test_a_run_without_validation_does_not_beat_on_its_train_loss():
    "Seen: a run with no validation data followed train_loss, and its best was taken as the valid_loss."
    cl = tb.Checklist("regression", "y", "valid_loss", baseline=5.0, threshold=3.0)
    try:
        import torch
        from torch import nn
        X, y = torch.randn(64, 4), torch.randn(64, 1)
        run = tb.fit(nn.Linear(4, 1), [(X, y)], None, loss_fn=nn.functional.mse_loss, live=False,
                     config=tb.TrainConfig(epochs=2, device="cpu"))
        assert run.monitor_followed() == "train_loss"
        assert not cl.done["beats"] and "has no value of valid_loss" in cl.notes["beats"], str(cl)
    finally:
        cl.close()


def test_resume_goes_on_with_the_checkpoints_settings_and_the_flags_given_override_them(ip, tmp_path):
    "Probe 22, f5: %train --resume took every setting not retyped from TrainConfig's defaults (lr 0.001 for 0.01)."
    d = tmp_path / "a"
    assert run(ip, f"%train model dl_train dl_valid --epochs 1 --lr 0.01 --clip 0.5 --checkpoint-dir {d} --no-live").success
    r = run(ip, f"%train model dl_train dl_valid --epochs 2 --checkpoint-dir {d} --resume {d} --no-live")
    assert r.success and (r.result.config.lr, r.result.config.clip_norm, r.result.config.epochs) == (0.01, 0.5, 2)
    changed = lambda run: [f for f in run.findings if f.kind == "resume_changed"][-1].data["changes"]  # this resume's
    assert list(changed(r.result)) == ["config.epochs"]
    assert set(r.result.metrics().train_lr) == {0.01}
    r = run(ip, f"%train model dl_train dl_valid --epochs 3 --lr 0.02 --checkpoint-dir {d} --resume {d} --no-live")
    assert r.success and (r.result.config.lr, r.result.config.clip_norm) == (0.02, 0.5)
    assert changed(r.result)["config.lr"] == [0.01, 0.02]
    # without --checkpoint-dir it goes on in the checkpoint's folder (probe 26: it wrote nothing anywhere)
    r = run(ip, f"%train model dl_train dl_valid --epochs 4 --resume {d} --no-live")
    assert r.success and r.result.step > 0 and Path(r.result.run_dir) == d
    assert tb.Run.load(d).step == r.result.step


def test_overwrite_replaces_the_earlier_run_in_its_folder_instead_of_a_version_folder(ip, tmp_path):
    # the warning of a second run in a folder says "to replace it, overwrite=True": the magic can do that too
    folder = tmp_path / "runs"
    assert run(ip, f"%train model dl_train --epochs 1 --no-live --checkpoint-dir {folder}").success
    assert run(ip, f"%train model dl_train --epochs 1 --no-live --checkpoint-dir {folder} --overwrite").success
    assert Path(ip.user_ns["_run"].run_dir) == folder and not (folder / "version_1").exists()


def test_a_dropped_checklist_stops_listening_and_is_freed():
    """Probe 53: five deleted Checklists stayed alive (the announcement bus held them) and a later check_data
    ticked them all."""
    import gc, weakref
    from trainbook.core import _LISTENERS
    before = len(_LISTENERS)
    cl = tb.Checklist("binary", target="target", metric="valid_loss", threshold=1.0)
    alive = weakref.ref(cl)
    assert len(_LISTENERS) == before + 1
    del cl
    gc.collect()
    assert alive() is None
    tb.check_data(pd.DataFrame({"a": [0.0, 1.0] * 20, "target": [0, 1] * 20}), "target", leak_check=False)
    assert len(_LISTENERS) == before  # the dead entry went at the next announcement


def test_a_split_with_rows_in_two_parts_is_not_audited():
    "Probe 72: rows at one position in train and valid became an audit error (shared_rows): the checklist says so."
    from types import SimpleNamespace
    from trainbook.core import announce
    cl = tb.Checklist("churn", "churn", "valid_accuracy", threshold=0.8)
    try:
        shared = SimpleNamespace(params={"target": "churn", "n_rows": 200}, strategy="hand-made", fingerprint="f",
                                 findings=[tb.Finding("shared_rows", "error", "10 row position(s) in both")])
        announce("split_made", shared)
        assert not cl.done["split_audited"] and cl.notes["split_audited"] == "1 leakage finding(s)"
    finally:
        cl.close()


def test_a_run_waiting_for_its_baseline_on_a_split_made_since_says_it_counts_no_more():
    "Probe 76, r_6: fit, a new split, a baseline: 'beats' kept 'no baseline yet ... judged again when one comes'."
    from types import SimpleNamespace
    from trainbook.core import announce
    cl = tb.Checklist("regression", "y", "valid_loss", threshold=3.0)
    try:
        split = lambda fp: SimpleNamespace(params={"target": "y"}, strategy="random", fingerprint=fp, findings=[])
        announce("split_made", split("a"))
        small_fit(split_fingerprint="a")
        assert "no baseline yet" in cl.notes["beats"]
        announce("split_made", split("b"))  # the run's split is not the audited one any more
        assert cl.notes["beats"] == "fitted on other splits (fingerprint a, audited b)", cl.notes["beats"]
        announce("baseline", pd.DataFrame({"valid_loss": [5.0]}, index=pd.Index(["linear"], name="model")))
        assert not cl.done["beats"] and "no baseline yet" not in cl.notes["beats"], str(cl)
    finally:
        cl.close()


def test_a_ctrl_c_in_train_keeps_the_run_and_fails_the_cell_so_a_run_all_stops(ip, capsys):
    """Probe 80: Ctrl-C during `%train` in Run All: fit returned the run 'interrupted', the cell succeeded and the
    cells queued below ran. Now the run is stored and shown, then the cell raises KeyboardInterrupt (Jupyter then
    aborts the queue, as after any interrupted cell)."""
    calls = []
    def ctrl_c_at_the_third_step(out, yb):  # (fit's first-batch checks call the loss too: a few calls later)
        calls.append(1)
        if len(calls) == 10: raise KeyboardInterrupt
        return torch.nn.functional.cross_entropy(out, yb)
    ip.user_ns.update(ctrl_c_loss=ctrl_c_at_the_third_step, _run=None)
    result = ip.run_cell("%train model dl_train dl_valid --epochs 5 --no-live --loss ctrl_c_loss", store_history=False)
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    stored = ip.user_ns["_run"]
    assert stored.stopped == "interrupted" and 0 < stored.step < 7 * 5  # (7 batches an epoch)
    assert f"%train interrupted after {stored.step} step" in str(result.error_in_exec)
    assert "interrupted" in capsys.readouterr().out  # the run was shown before the cell failed


def test_train_names_the_split_its_loaders_come_from(ip):
    """Probe 80: the Checklist said "pass split_fingerprint= to fit", which %train could not. %train names the split
    of loaders from tb.loaders_from_frame itself, takes --split for others, and refuses a split they are not from."""
    df = ip.user_ns["df"]
    splits = tb.make_splits(df, "target", seed=0)
    dl_tr, dl_va, _, prep = tb.loaders_from_frame(df, "target", splits, batch_size=64)
    torch.manual_seed(0)
    ip.user_ns.update(framed_train=dl_tr, framed_valid=dl_va, _splits=splits, other=tb.make_splits(df, "target", seed=1),
                      framed_model=torch.nn.Sequential(torch.nn.Linear(prep.n_features, 2)))
    run = ip.run_line_magic("train", "framed_model framed_train framed_valid --epochs 1 --no-live")
    assert run.extra["split_fingerprint"] == splits.fingerprint
    run = ip.run_line_magic("train", "model dl_train dl_valid --epochs 1 --no-live --split _splits")  # plain loaders
    assert run.extra["split_fingerprint"] == splits.fingerprint
    with pytest.raises(UsageError, match=r"--split other \(fingerprint \w+\) is not the split framed_train was made"):
        ip.run_line_magic("train", "framed_model framed_train --epochs 1 --no-live --split other")
    with pytest.raises(UsageError, match="--split df must be a Splits .* got DataFrame"):
        ip.run_line_magic("train", "model dl_train --epochs 1 --no-live --split df")


def test_the_checklist_judges_a_train_run_on_the_audited_split_with_no_advice_it_cannot_follow(ip):
    "Probe 80, r_4: %split then %train on its loaders: the 'beats' note said the run names no split."
    df = ip.user_ns["df"]
    cl = ip.run_line_magic("checklist", '"binary cancer" target valid_accuracy 0.9')
    try:
        ip.run_line_magic("split", "df --target target --seed 0")
        dl_tr, dl_va, _, prep = tb.loaders_from_frame(df, "target", ip.user_ns["_splits"], batch_size=64)
        tb.baseline(df, "target", ip.user_ns["_splits"])
        torch.manual_seed(0)
        ip.user_ns.update(framed_train=dl_tr, framed_valid=dl_va,
                          framed_model=torch.nn.Sequential(torch.nn.Linear(prep.n_features, 2)))
        ip.run_line_magic("train", "framed_model framed_train framed_valid --epochs 1 --no-live --metrics accuracy")
        assert "vs baseline" in cl.notes["beats"] and "names no split" not in cl.notes["beats"]
        ip.run_line_magic("train", "model dl_train dl_valid --epochs 1 --no-live --metrics accuracy")  # unnamed
        assert "names no split" in cl.notes["beats"] and "--split _splits" in cl.notes["beats"]
    finally:
        cl.close()
