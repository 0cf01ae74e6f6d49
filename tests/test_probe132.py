"""Probe 132: a run resumed in a later epoch over a DataLoader with persistent workers draws the same order."""
import torch
from trainbook.core import loader_generators, rng_state, set_rng_state
from trainbook.resume import epoch_iterator

def _loader(own: bool):
    g = torch.Generator().manual_seed(7) if own else None
    return torch.utils.data.DataLoader(range(12), batch_size=3, shuffle=True, num_workers=1,
                                       persistent_workers=True, generator=g)

def _order(batches): return [b.tolist() for b in batches]

def _epoch_one(own: bool):
    "The uninterrupted run's epoch 1 (its iterator reused), and the RNG states it started from."
    torch.manual_seed(0)
    dl = _loader(own)
    _order(epoch_iterator(dl, 0, loader_generators(dl)))
    start = rng_state(loader_generators(dl))
    return _order(epoch_iterator(dl, 1, loader_generators(dl))), start

def test_resumed_epoch_of_persistent_workers_draws_the_uninterrupted_order():
    for own in (False, True):  # the global RNG's order, and a DataLoader(generator=...)'s
        want, start = _epoch_one(own)
        dl = _loader(own)  # a resumed run: a new process, no iterator yet, the epoch's states restored
        set_rng_state(start, loader_generators(dl))
        assert _order(epoch_iterator(dl, 1, loader_generators(dl))) == want
        after = rng_state(loader_generators(dl))
        torch.manual_seed(0)  # the states go on as the uninterrupted run's: its epoch 2 starts from the same
        want_dl = _loader(own)
        for epoch in (0, 1): _order(epoch_iterator(want_dl, epoch, loader_generators(want_dl)))
        assert torch.equal(after["torch"], rng_state(loader_generators(want_dl))["torch"])

def test_plain_iter_of_a_fresh_persistent_loader_draws_another_order():
    "What epoch_iterator mends: the fresh iterator's base seed is drawn before the order (torch's own behaviour)."
    want, start = _epoch_one(False)
    dl = _loader(False)
    set_rng_state(start)
    assert _order(iter(dl)) != want

def test_first_epoch_and_loaders_without_persistent_workers_are_iter_itself():
    for make, epoch in ((lambda: torch.utils.data.DataLoader(range(8), batch_size=2, shuffle=True), 3),
                        (lambda: _loader(False), 0)):
        torch.manual_seed(1)
        plain = _order(iter(make()))
        torch.manual_seed(1)
        assert _order(epoch_iterator(make(), epoch)) == plain

def test_a_resume_with_a_changed_setting_says_so_on_screen(tmp_path):
    "A resume that changes the batch size is accepted with a warning shown, not only a finding in run.findings."
    import warnings
    import pytest
    from torch import nn
    import trainbook as tb
    from trainbook.guard import forget_interrupt
    X = torch.randn(64, 4)
    y = (X[:, 0] > 0).long()
    def go(bs, **kw):
        torch.manual_seed(0)
        return tb.fit(nn.Linear(4, 2), tb.TensorLoader(X, y, batch_size=bs, shuffle=True), live=False,
                      loss_fn=nn.functional.cross_entropy, config=tb.TrainConfig(epochs=2, device="cpu",
                                                                                  checkpoint_dir=str(tmp_path)), **kw)
    class CtrlC:
        def after_step(self, state):
            if state.step == 1: raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        go(16, callbacks=[CtrlC()])
    forget_interrupt()
    with pytest.warns(UserWarning, match=r"resuming with 2 change\(s\).*loader.batch_size: 16 → 32"):
        run = go(32, resume=tmp_path)
    assert [f.kind for f in run.findings].count("resume_changed") == 1
    with warnings.catch_warnings(record=True) as said:  # the same settings: nothing to say
        warnings.simplefilter("always")
        go(32, resume=tmp_path)
    assert not [w for w in said if "since the checkpoint was written" in str(w.message)]

def test_a_changed_seed_is_said_to_change_nothing_and_changes_nothing(tmp_path):
    "Probe 132, finding 3: seed 0 → 3 on resume continued bit for bit, yet was said to make the run inexact."
    import warnings
    import pytest
    from torch import nn
    import trainbook as tb
    from trainbook.guard import forget_interrupt
    X = torch.randn(96, 4)
    y = (X[:, 0] > 0).long()
    def go(folder, seed=0, **kw):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.3), nn.Linear(16, 2))
        run = tb.fit(model, tb.TensorLoader(X, y, batch_size=16, shuffle=True), live=False,
                     loss_fn=nn.functional.cross_entropy,
                     config=tb.TrainConfig(epochs=2, seed=seed, checkpoint_dir=str(folder), device="cpu"), **kw)
        return model, run
    class CtrlC:
        def after_step(self, state):
            if state.step == 4: raise KeyboardInterrupt
    full, _ = go(tmp_path / "full")
    with pytest.raises(KeyboardInterrupt):
        go(tmp_path / "stopped", callbacks=[CtrlC()])
    forget_interrupt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, run = go(tmp_path / "stopped", seed=3, resume=tmp_path / "stopped")
    assert all(torch.equal(a, b) for a, b in zip(full.state_dict().values(), model.state_dict().values()))
    (changed,) = [f for f in run.findings if f.kind == "resume_changed"]
    assert changed.data["changes"] == {"config.seed": [0, 3]} and "no effect" in changed.message
    assert "not exactly" not in changed.advice and "continues exactly" in changed.advice
