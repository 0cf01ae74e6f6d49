"Small shared pieces for the tests: data, models, and a way to compare weights."
import torch
from torch import nn


def blobs(n=256, d=8, classes=3, seed=0):
    "A seeded classification set that an MLP can learn."
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    w = torch.randn(d, classes, generator=g)
    return X, (X @ w).argmax(1)


def mlp(d=8, h=16, out=3, dropout=0.0, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Dropout(dropout), nn.Linear(h, out))


def max_diff(a: nn.Module, b: nn.Module) -> float:
    return max((p - q).abs().max().item() for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def same_weights(a: nn.Module, b: nn.Module) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


TIMING = ("data_wait", "samples_per_s", "step_time", "peak_memory_mb")


def history_without_timing(run):
    "History rows, leaving out the wall-clock and memory ones, which differ between any two runs."
    return [r for r in run.records.rows() if r[3] not in TIMING]


def interrupt_at(step: int, event: str = "after_step"):
    """A callback that raises KeyboardInterrupt at `event` of optimizer step `step`: Ctrl-C as the loop meets it there
    (after_step: at a step's boundary; before_validate: inside the step's eval_every validation)."""
    from trainbook.events import Callback

    def press(self, state):
        if state.step == step: raise KeyboardInterrupt

    class Interrupt(Callback): pass
    setattr(Interrupt, event, press)
    return Interrupt()


def interrupted(call, *args, stopped="interrupted", **kwargs):
    """The run a Ctrl-C ends inside `call(*args, **kwargs)` (tb.fit, fit_flax, ...): in a plain script (pytest is one)
    the KeyboardInterrupt goes on out of it, carrying the finished run as `.run` (guard.stop_script, its files
    written). Fails unless it does, and unless that run stopped `stopped`; returns the run."""
    import pytest
    from trainbook.guard import plain_script
    assert plain_script(), ("an IPython shell is registered in this worker (a test left one: clear it with "
                            "InteractiveShell.clear_instance()), so this is no plain script and fit returns")
    with pytest.raises(KeyboardInterrupt) as caught:
        call(*args, **kwargs)
    run = getattr(caught.value, "run", None)
    assert run is not None, f"the KeyboardInterrupt carries no run (.run): {caught.value!r}"
    assert run.stopped == stopped, f"the run stopped {run.stopped!r}, not {stopped!r}"
    return run


def ctrl_c_at(step: int):
    "A callback that sends this process a real SIGINT (as Jupyter's interrupt does) after step `step`."
    import os, signal
    from trainbook.events import Callback

    class Press(Callback):
        def after_step(self, state):
            if state.step == step: os.kill(os.getpid(), signal.SIGINT)
    return Press()


class CtrlCInSetUp(nn.Linear):
    "A Ctrl-C pressed while fit moves the model to its device: the run stops before its first step and checkpoint."
    def to(self, *a, **k):
        if not getattr(self, "pressed", False):
            self.pressed = True
            import signal
            signal.raise_signal(signal.SIGINT)
        return super().to(*a, **k)


def iso_dates_from_csv(n=300, seed=0):
    "A frame as read from a CSV: ISO dates as text ('signup'), a number ('x'), a two-class target ('y')."
    import io
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    days = pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    csv = pd.DataFrame({"signup": days.strftime("%Y-%m-%d"), "x": rng.normal(size=n),
                        "y": rng.choice(["a", "b"], n)}).to_csv(index=False)
    return pd.read_csv(io.StringIO(csv))


class FakeKernel:
    "What the Ctrl-C rule reads of ipykernel: the execute request (one run of a cell) being handled."
    parent_header: dict = {}


def executing(shell, msg_id, sent):
    "The kernel starts the cell run `msg_id`, whose execute request the front end sent at `sent`."
    shell.parent_header = {"header": {"msg_type": "execute_request", "msg_id": msg_id, "date": sent},
                           "content": {"code": msg_id}, "metadata": {}}
