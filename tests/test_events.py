"Callbacks are checked when they are attached, not when their event first fires; a stop's reason is a StopReason."
import warnings

import pytest
from torch import nn

import trainbook as tb
from trainbook.events import Callbacks, Control, add_session_observer, remove_session_observer
from trainbook.run import StopReason

from helpers import blobs, mlp


def fit(callbacks, epochs=2, **cfg):
    X, y = blobs(64)
    dl = tb.TensorLoader(X, y, batch_size=16)
    return tb.fit(mlp(), dl, dl, loss_fn=nn.CrossEntropyLoss(), live=False, callbacks=callbacks,
                  config=tb.TrainConfig(epochs=epochs, device="cpu", **cfg))


class Steps:
    "Counts the optimizer steps it saw."
    def __init__(self): self.n = 0
    def after_step(self, state): self.n += 1


@pytest.mark.parametrize("handler, takes", [
    (lambda self: None, r"after_fit\(\)"),  # no state
    (lambda self, a, b: None, r"after_fit\(a, b\)"),  # one argument too many
    (lambda self, *, state: None, r"after_fit\(\*, state\)"),  # keyword-only
])
def test_a_handler_that_cannot_take_the_state_fails_before_any_step(handler, takes):
    Wrong = type("Wrong", (), {"after_fit": handler})
    steps = Steps()
    with pytest.raises(TypeError, match=rf"Wrong\.{takes} cannot be called as after_fit\(state\)"):
        fit([steps, Wrong()])
    assert steps.n == 0  # refused when attached, not after the whole run


def test_handlers_with_defaults_or_varargs_are_accepted():
    class Flexible:
        def __init__(self): self.seen = []
        def after_epoch(self, state, extra=None): self.seen.append(state.epoch)
        def after_fit(self, *args): self.seen.append("end")
    cb = Flexible()
    fit([cb])
    assert cb.seen == [0, 1, "end"]


def test_an_event_name_holding_a_value_is_refused():
    class Attr:
        after_epoch = 5
    with pytest.raises(TypeError, match="Attr.after_epoch is 5, not a method"):
        Callbacks([Attr()])


def test_the_same_callback_listed_twice_is_refused():
    steps = Steps()
    with pytest.raises(ValueError, match=r"callback Steps is listed twice \(positions 1 and 2"):
        fit([steps, steps])
    assert steps.n == 0


def test_a_session_observer_also_passed_by_hand_is_attached_once():
    "A search trial's Pruning comes both as a session observer and in config.callbacks: called once per event."
    steps = Steps()
    add_session_observer("test_once", lambda context: steps)
    try: run = fit([steps])
    finally: remove_session_observer("test_once")
    assert steps.n == run.step > 0


def test_none_in_the_callbacks_is_refused_naming_its_position():
    with pytest.raises(TypeError, match=r"callback at position 1 is None \(the run's callbacks: Steps, None\)"):
        Callbacks([Steps(), None])


def test_state_dict_without_load_state_dict_warns_when_attached():
    class SD:
        def after_step(self, state): pass
        def state_dict(self): return {"n": 1}
    with pytest.warns(UserWarning, match="callback SD has state_dict but no load_state_dict: a resumed run"):
        Callbacks([SD()])
    class Both(SD):
        def load_state_dict(self, state): pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Callbacks([Both(), tb.Callback()])  # restorable: nothing to say


def test_request_stop_takes_a_stop_reason_and_keeps_free_text_as_message():
    with pytest.raises(ValueError, match=r"request_stop\('bored'\): the reason must be one of completed, "
                                         r"early_stopping.*message="):
        Control().request_stop("bored")
    control = Control()
    control.request_stop("early_stopping", message="good enough")
    assert (control.stop, control.stop_reason, control.stop_message) == (True, "early_stopping", "good enough")
    control = Control()
    control.request_stop(StopReason.pruned)
    assert control.stop_reason == "pruned" and type(control.stop_reason) is str  # a plain value, as run.json keeps


def test_a_callbacks_stop_reason_becomes_the_runs():
    class Stop:
        def after_step(self, state):
            if state.step == 2: state.control.request_stop("early_stopping", message="enough")
    run = fit([Stop()], epochs=5)
    assert (run.stopped, run.step, run.extra["stop_message"]) == ("early_stopping", 2, "enough")
    assert "stop_message" not in fit([], epochs=1).extra
    class Bored:
        def after_step(self, state): state.control.request_stop("bored")
    with pytest.raises(ValueError, match="put your own words in message="):
        fit([Bored()])



@pytest.mark.parametrize("event", ["before_fit", "before_epoch"])
def test_a_stop_asked_for_before_the_first_step_takes_no_step(event):
    "Seen: a stop requested in before_fit or before_epoch still ran one optimizer step."
    class StopEarly:
        pass
    setattr(StopEarly, event, lambda self, state: state.control.request_stop())
    run = fit([StopEarly()], epochs=2)
    assert (run.stopped, run.step) == ("interrupted", 0)
