"""fit shards a plain DataLoader by rank: under 2 gloo processes each rank reads a disjoint half of every epoch's rows
(their union is every row) in a new order each epoch; loaders that shard themselves are kept; anything else is left
alone with one warning. (The same under Ray's launch: tests/test_ray.py.)"""
import warnings

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset, WeightedRandomSampler

import trainbook as tb
from trainbook import distributed
from trainbook.distributed import shard_loader

N, B, EPOCHS = 64, 8, 2  # rows, batch, epochs: each rank takes N / 2 / B = 4 batches an epoch


class Seen(nn.Module):
    "A linear model that keeps the row ids (its input) of every training batch it sees."
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1, 2)
        self.seen: list = []

    def forward(self, x):
        if self.training: self.seen.append(x[:, 0].long().tolist())
        return self.lin(x)


def rows_seen(epochs=EPOCHS):
    "Runs on every rank: fit on a plain shuffled DataLoader of row ids; every rank's batches, by epoch."
    import torch.distributed as dist
    ids = torch.arange(N, dtype=torch.float32)[:, None]
    dl = DataLoader(TensorDataset(ids, torch.arange(N) % 2), batch_size=B, shuffle=True)
    model = Seen()
    run = tb.fit(model, dl, loss_fn=nn.functional.cross_entropy, live=False,
                 config=tb.TrainConfig(epochs=epochs, device="cpu", monitor="train_loss"))
    per_epoch = len(model.seen) // epochs
    mine = [sum(model.seen[e * per_epoch:(e + 1) * per_epoch], []) for e in range(epochs)]
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    return {"step": run.step, "rows": everyone}  # rows[rank][epoch]: the row ids that rank trained on


def assert_halves(rows, epochs=EPOCHS):
    "Each epoch: the two ranks' rows are disjoint halves whose union is every row; the order changes by epoch."
    for e in range(epochs):
        a, b = rows[0][e], rows[1][e]
        assert len(a) == len(b) == N // 2 and not set(a) & set(b), (e, a, b)
        assert sorted(a + b) == list(range(N)), e
    assert rows[0][0] != rows[0][1]  # set_epoch reached the sampler: a new order each epoch


def test_a_dataloader_is_sharded_by_rank_under_two_processes():
    out = tb.launch(rows_seen, nprocs=2, backend="gloo", timeout=300)
    assert out["step"] == EPOCHS * N // (2 * B)
    assert_halves(out["rows"])


def test_the_sampler_keeps_the_loader_and_shuffles_the_same_on_every_rank():
    collate = lambda items: {"x": torch.stack([i[0] for i in items]), "y": torch.stack([i[1] for i in items])}
    dl = DataLoader(TensorDataset(torch.arange(10), torch.arange(10)), batch_size=3, shuffle=True, drop_last=True,
                    collate_fn=collate)
    shards = [shard_loader(dl, rank, 2, seed=7) for rank in (0, 1)]
    for s in shards:
        assert isinstance(s.sampler, DistributedSampler) and s.sampler.shuffle and s.sampler.seed == 7
        assert (s.batch_size, s.drop_last, s.collate_fn) == (3, True, collate)
        s.sampler.set_epoch(3)
    batches = [list(s) for s in shards]
    assert [len(b) for b in batches] == [1, 1]  # 5 rows a rank, batches of 3, the last dropped
    assert set(batches[0][0]["x"].tolist()).isdisjoint(batches[1][0]["x"].tolist())
    sequential = shard_loader(DataLoader(TensorDataset(torch.arange(10)), batch_size=4), 1, 2)
    assert [xb.tolist() for (xb,) in sequential] == [[1, 3, 5, 7], [9]]  # unshuffled: positions 1, 3, 5...


def test_loaders_that_shard_themselves_are_kept():
    dl = DataLoader(TensorDataset(torch.arange(10)), batch_size=4, shuffle=True)
    assert shard_loader(dl, 0, 1) is dl and shard_loader(None, 0, 2) is None
    given = DataLoader(TensorDataset(torch.arange(10)), batch_size=4,
                       sampler=DistributedSampler(TensorDataset(torch.arange(10)), num_replicas=2, rank=0))
    assert shard_loader(given, 0, 2) is given
    tl = tb.TensorLoader(torch.arange(10), batch_size=4, rank=0, world_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert shard_loader(tl, 0, 2) is tl


def test_anything_else_is_left_alone_with_one_warning(monkeypatch):
    monkeypatch.setattr(distributed, "_UNSHARDED", set())
    batches = [(torch.zeros(2, 1), torch.zeros(2))]
    with pytest.warns(UserWarning, match="a list cannot be split; with 2 processes every rank reads all of it"):
        assert shard_loader(batches, 0, 2) is batches
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert shard_loader(batches, 0, 2) is batches  # said once
        assert shard_loader(batches, 1, 2) is batches  # and by rank 0 only
    tl = tb.TensorLoader(torch.arange(10), batch_size=4)  # made before the processes: world_size=1
    with pytest.warns(UserWarning, match="the TensorLoader was made for world_size=1"):
        assert shard_loader(tl, 0, 2) is tl
    ds = TensorDataset(torch.arange(10))
    weighted = DataLoader(ds, batch_size=4, sampler=WeightedRandomSampler(torch.ones(10), 10))
    with pytest.warns(UserWarning, match="a DataLoader with a WeightedRandomSampler is not split"):
        assert shard_loader(weighted, 0, 2) is weighted
