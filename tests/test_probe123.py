"Probe 123 (what a person sees in JupyterLab): the panel after a refused Train, the live best mark, the status words, the magics' repeated and negative options."
import pytest
import torch
from torch import nn
from IPython.core.error import UsageError

import trainbook as tb
from trainbook.core import History
from trainbook.events import LoopState
from trainbook.live import LiveCurves, Series
from trainbook.widgets import run_status


def small_panel(**cfg):
    tb.seed_everything(0)
    X = torch.randn(256, 4)
    y = (X[:, 0] > 0).long()
    dl = tb.TensorLoader(X, y, batch_size=32)
    return tb.TrainPanel(nn.Linear(4, 2), dl, dl, loss_fn=nn.CrossEntropyLoss(),
                         config=tb.TrainConfig(epochs=2, **cfg), metrics="accuracy")


@pytest.mark.parametrize("field, value", [("monitor", "valid_acc"), ("device", "cdua")])
def test_a_train_refused_at_fits_door_keeps_the_last_runs_curves_and_run(field, value):
    "A field set to a bad value, then Train: fit refuses before its run starts; the chart and `.run` were wiped."
    p = small_panel()
    p.train_button.click(); p.wait()
    first, drawn = p.run, {t.name: list(t.x) for t in p.figure.data}
    assert first.stopped == "completed" and len(drawn["train loss"]) == 16
    setattr(p.config, field, value)
    p.train_button.click(); p.wait()
    assert "training failed" in p.status.value and isinstance(p.error, ValueError)
    assert p.run is first  # no run started: the last one stays the panel's
    assert {t.name: list(t.x) for t in p.figure.data} == drawn  # its curves too (they were emptied)


def test_a_run_that_starts_takes_the_chart_area_from_the_last_action():
    "The live figure still replaces what the last action drew once a run starts (shown at before_fit, not before)."
    p = small_panel()
    p.overfit_button.click(); p.wait()
    assert p.figure is not p.live_figure
    p.train_button.click(); p.wait()
    assert p.figure is p.live_figure and p.plot.children == (p.live_figure,)
    assert len(next(t for t in p.figure.data if t.name == "valid loss").x) == 2


def test_the_status_says_how_far_a_panels_run_is():
    "The status said 'training …' for the whole run: the panel draws no progress bar, so a person saw no epoch count."
    seen = []
    class Watch(tb.Callback):
        def after_epoch(self, state): seen.append(p.status.value)
    p = small_panel()
    p.callbacks.append(Watch())
    p.train_button.click(); p.wait()
    h = p.run.history
    valid = h[(h.split == "valid") & (h.name == "loss")].value.tolist()
    assert [s.split(":")[0] for s in seen] == ["training … epoch 1 of 2 done, step 8",
                                               "training … epoch 2 of 2 done, step 16"]
    assert all(f"valid_loss {v:.4g}" in s for v, s in zip(valid, seen)) and "valid_accuracy" in seen[-1]
    assert p.status.value == "run <b>completed</b> after 16 steps"  # the end's line replaces it


def test_after_a_stop_the_status_says_what_train_does(tmp_path):
    "After Stop, Train silently made a new run (steps from 0, a version_1 folder); the advice said resume=, which the panel lacks."
    p = small_panel(checkpoint_dir=str(tmp_path))
    class StopAtFour(tb.Callback):
        def after_step(self, state):
            if state.step == 4 and p.run is None: p.stop()
    p.callbacks.append(StopAtFour())
    p.train_button.click(); p.wait()
    stopped = p.run
    assert stopped.stopped == "interrupted" and stopped.last_path is not None
    assert "starts a new run from the model's weights as they are" in p.status.value
    assert f"resume={str(tmp_path)!r}".replace("'", "&#x27;") in p.status.value
    weights = [t.detach().clone() for t in p.model.parameters()]
    p.train_button.click(); p.wait()
    again = p.run
    assert again is not stopped and again.step == 16 and again.history.step.min() == 1  # a new run, as it said
    assert again.run_dir != stopped.run_dir
    stopped_model = nn.Linear(4, 2)
    stopped_model.load_state_dict(dict(zip(["weight", "bias"], weights)))
    resumed = tb.fit(stopped_model, p.dl_train, p.dl_valid, loss_fn=nn.CrossEntropyLoss(), config=p.config,
                     resume=str(tmp_path), live=False)  # what the status offers goes on with the stopped run
    assert resumed.run_dir == stopped.run_dir and resumed.step == 16 and resumed.history.step.min() == 1


def test_no_resume_advice_without_a_checkpoint():
    p = small_panel()
    class StopAtFour(tb.Callback):
        def after_step(self, state):
            if state.step == 4: p.stop()
    p.callbacks.append(StopAtFour())
    p.train_button.click(); p.wait()
    assert p.run.stopped == "interrupted" and "starts a new run" in p.status.value and "resume" not in p.status.value


def monitored_history():
    "Valid loss lowest at step 30; valid accuracy highest at step 10 (0.905 at step 20: within a 0.01 min_delta)."
    h = History()
    for step, loss, acc in [(10, 0.50, 0.90), (20, 0.45, 0.905), (30, 0.40, 0.85)]:
        h.append(step, step // 10 - 1, "train", "loss", loss + 0.1)
        h.append(step, step // 10 - 1, "valid", "loss", loss)
        h.append(step, step // 10 - 1, "valid", "accuracy", acc)
    return h


@pytest.mark.parametrize("config, best", [(None, 30), (tb.TrainConfig(), 30),
                                          (tb.TrainConfig(monitor="valid_accuracy", mode="max"), 20),
                                          (tb.TrainConfig(monitor="valid_accuracy", mode="max", min_delta=0.01), 10)])
def test_the_live_best_mark_is_the_monitored_best(config, best):
    "During the run the 'best' line was drawn at the lowest valid loss whatever the run monitored (at its end it moved)."
    h = monitored_history()
    curves = LiveCurves(mode="widget", show=False)
    curves.update(LoopState(history=h, config=config), force=True)
    marks = [a.x for a in curves.figure.layout.annotations if (a.text or "").startswith("best")]
    assert marks == [best]
    from trainbook.live import monitored_best_step
    assert monitored_best_step(curves.series, config) == best


def test_without_validation_the_mark_follows_the_training_loss():
    from trainbook.live import monitored_best_step
    h = History()
    for step, loss in [(5, 0.9), (10, 0.7), (15, 0.8)]:
        h.append(step, step // 5 - 1, "train", "epoch_loss", loss)
    series = Series()
    series.read(h)
    assert monitored_best_step(series, tb.TrainConfig()) == 10


@pytest.mark.parametrize("stopped, words", [("nonfinite", "stopped on a non-finite loss"),
                                            ("interrupted", "interrupted"), ("completed", "completed")])
def test_the_panels_status_says_how_a_run_ended_in_words(stopped, words):
    "The status line said 'run nonfinite after 9 steps' (the reason's name), where the progress bar says it in words."
    run = tb.Run(config=tb.TrainConfig(), records=History(), stopped=stopped, step=9)
    assert run_status(run).startswith(f"run <b>{words}</b> after 9 steps")


@pytest.fixture(scope="module")
def shell():
    "A real InteractiveShell, cleared after the module: a shell left behind would make this worker's later tests no"
    " plain script (trainbook.guard reads get_ipython), and another kind of shell refuses to start beside it."
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "trainbook")
    X = torch.randn(64, 4)
    dl = tb.TensorLoader(X, (X[:, 0] > 0).long(), batch_size=32)
    ip.user_ns.update(model=nn.Linear(4, 2), dl=dl)
    yield ip
    InteractiveShell.clear_instance()


def usage_error(shell, line):
    with pytest.raises(UsageError) as e: shell.run_line_magic("train", line)
    return str(e.value)


@pytest.mark.parametrize("line, says", [("model dl dl --lr -1e-3", "TrainConfig.lr must be a positive finite number, got -0.001"),
                                        ("model dl dl --clip -1e-2", "TrainConfig.clip_norm must be a positive"),
                                        ("model dl dl --lr -inf", "argument --lr: expected a finite number, got '-inf'")])
def test_a_negative_number_in_e_notation_is_read_as_the_options_value(shell, line, says):
    "argparse took '-1e-3' for an option: 'argument --lr: expected one argument', though one was given."
    assert says in usage_error(shell, line)


@pytest.mark.parametrize("line, says", [("model dl dl --epochs 1 --epochs 2", "--epochs is given 2 times (1, 2)"),
                                        ("model dl dl --lr 1e-3 --lr=1e-2", "--lr is given 2 times (1e-3, 1e-2)"),
                                        ("model dl dl --epoch 1 --epochs 3", "--epochs is given 2 times (1, 3)")])
def test_an_option_given_twice_is_refused(shell, line, says):
    "The last one won without a word: `--lr 1e-3 --lr 1e-2` trained 10 epochs at 0.01."
    assert says in usage_error(shell, line)
    assert "_run" not in shell.user_ns  # refused before any work


def test_a_flag_said_twice_and_a_negative_integer_still_parse(shell):
    from trainbook.magics import _parse
    magics = shell.magics_manager.registry["TrainbookMagics"]
    a = _parse(magics.train.parser, "model dl --no-live --no-live --epochs 2", "")
    assert a.no_live and a.epochs == 2
    s = _parse(magics.split.parser, "df --target y --seed -1 --gap 2", "")
    assert s.seed == -1 and s.gap == 2  # argparse's own negative numbers, unchanged


def test_the_data_wait_panel_says_it_is_a_share():
    "The panel read 'data wait' with values 0.02-0.09 (a share of the epoch's time) beside 's / step' at 0.002."
    from trainbook.live import new_figure, PANELS
    h = History()
    for epoch, step in enumerate((10, 20, 30)):
        for name, value in (("loss", 0.5), ("epoch_loss", 0.5), ("data_wait", 0.02 * (epoch + 1)), ("step_time", 0.002),
                            ("samples_per_s", 1000.0 + epoch), ("peak_memory_mb", 100.0 + epoch)):
            h.append(step, epoch, "train", name, value)
    curves = LiveCurves(mode="widget", show=False)
    curves.update(LoopState(history=h), force=True)
    sub = curves.figure.get_subplot(*PANELS["data_wait"])
    assert curves.figure.layout[sub.yaxis.plotly_name].title.text == "data wait share"
    assert max(next(t for t in curves.figure.data if t.name == "train data_wait").y) == pytest.approx(0.06)
