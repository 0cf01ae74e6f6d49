import os
import pytest
import torch

# One thread: the tests compare numbers, and two workers on two cores should not fight.
torch.set_num_threads(1)


@pytest.fixture
def tmp_run(tmp_path):
    "A fresh run directory."
    d = tmp_path / "run"
    d.mkdir()
    return d
