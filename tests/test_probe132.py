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
