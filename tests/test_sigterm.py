"""A plain script's run takes SIGTERM (`kill <pid>`, a job scheduler's stop, a nohup job that no Ctrl-C reaches) as a
Ctrl-C: the run ends 'interrupted' at its last completed step, writes last.pt and run.json, and the process then
ends as terminated (probe 127, finding 5: it died at once, run.json 'running', the steps since the last checkpoint
lost)."""
import json
import signal
import subprocess
import sys
import textwrap

import torch

import trainbook as tb

SCRIPT = textwrap.dedent("""
    import os, signal, sys, torch, trainbook as tb
    from torch import nn
    torch.manual_seed(0)
    X, y = torch.randn(256, 8), torch.randint(0, 3, (256,))
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    class Term(tb.Callback):
        def after_step(self, state):
            if state.step == 13: os.kill(os.getpid(), signal.SIGTERM)
    if sys.argv[2] == "own": signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))  # the script's own handler
    cbs = [] if sys.argv[2] == "none" else [Term()]
    run = tb.fit(model, tb.TensorLoader(X, y, batch_size=32, shuffle=True), loss_fn=nn.functional.cross_entropy,
                 config=tb.TrainConfig(epochs=4, checkpoint_dir=sys.argv[1], device="cpu"), callbacks=cbs,
                 live=False, resume=sys.argv[1] if sys.argv[2] == "resume" else None)
    torch.save(model.state_dict(), os.path.join(sys.argv[1], "final.pt"))
""")


def script(tmp_path, folder, how):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return subprocess.run([sys.executable, str(path), str(tmp_path / folder), how], capture_output=True, text=True,
                          timeout=300)


def test_sigterm_ends_a_scripts_run_with_its_files_then_the_process_and_resume_is_exact(tmp_path):
    cut = script(tmp_path, "cut", "term")
    assert cut.returncode == -signal.SIGTERM, cut.stderr[-2000:]  # ended as terminated, as before: no exit 0
    record = json.loads((tmp_path / "cut" / "run.json").read_text())
    assert (record["stopped"], record["step"]) == ("interrupted", 13)  # before: 'running' at the last epoch end
    assert torch.load(tmp_path / "cut" / "last.pt", weights_only=False)["step"] == 13
    assert not (tmp_path / "cut" / "final.pt").exists()  # the script stopped: no save of a half-trained model
    assert script(tmp_path, "cut", "resume").returncode == 0
    assert script(tmp_path, "whole", "none").returncode == 0
    a, b = (torch.load(tmp_path / f / "final.pt") for f in ("cut", "whole"))
    assert all(torch.equal(a[k], b[k]) for k in a)  # resumed from step 13: the uninterrupted run's weights


def test_a_scripts_own_sigterm_handler_is_left_alone(tmp_path):
    own = script(tmp_path, "own", "own")
    assert own.returncode == 7, own.stderr[-2000:]  # the script's handler ran, at once
    assert json.loads((tmp_path / "own" / "run.json").read_text())["stopped"] == "failed"  # SystemExit: a failure


def test_held_ctrl_c_takes_sigterm_only_when_asked_and_where_nothing_else_handles_it():
    "Asked (a plain script's lone process) and SIGTERM at its default: taken and given back; another's handler (Ray's"
    " driver sets one at ray.init) or not asked (a notebook, several processes): left alone."
    from trainbook.batch import HeldCtrlC
    theirs = lambda signum, frame: None
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        held = HeldCtrlC().install()
        try: assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # not asked: untouched
        finally: held.uninstall()
        held = HeldCtrlC().install(term=True)
        try: assert signal.getsignal(signal.SIGTERM) == held._on_term
        finally: held.uninstall()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and not held.terminated  # given back
        signal.signal(signal.SIGTERM, theirs)
        held = HeldCtrlC().install(term=True)
        try: assert signal.getsignal(signal.SIGTERM) is theirs  # someone else's: left alone
        finally: held.uninstall()
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally: signal.signal(signal.SIGTERM, before)
