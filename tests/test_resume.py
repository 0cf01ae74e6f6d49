"""A resume under a changed plan: the first resumed step trains at the new schedule's lr; a model of another class
is a listed change (a warning), while a checkpoint written before the model's class was recorded still resumes."""
import math, warnings

import pytest
import torch
from torch import nn

import trainbook as tb
from trainbook.optim import schedule_lr, warmup_cosine, warmup_steps
from trainbook.resume import resume_changes, run_signature
from helpers import blobs

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
