import random, subprocess, sys

import numpy as np
import pytest
import torch

import trainbook as tb


def test_import_is_light():
    "The headless-import contract: `import trainbook` loads no plotly, ipywidgets, xgboost, scikit-learn or IPython."
    code = ("import sys, trainbook; heavy = ('plotly', 'ipywidgets', 'xgboost', 'sklearn', 'IPython', 'pandas'); "
            "print([m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_public_names_resolve():
    for name in tb.__all__: assert getattr(tb, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"): tb.nope


@pytest.mark.parametrize("kwargs, field", [({"epochs": -1}, "epochs"), ({"precision": "fp8"}, "precision"),
                                            ({"lr": 0}, "lr"), ({"accum_steps": 0}, "accum_steps"),
                                            ({"schedule": "cosine"}, "schedule"), ({"clip_norm": -1.0}, "clip_norm"),
                                            ({"on_nonfinite": "ignore"}, "on_nonfinite"), ({"mode": "up"}, "mode"),
                                            ({"epochs": True}, "epochs"), ({"checkpoint_every": 0}, "checkpoint_every")])
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"TrainConfig.{field} must be"): tb.TrainConfig(**kwargs)


def test_config_replace_validates():
    cfg = tb.TrainConfig()
    assert cfg.replace(lr=0.1).lr == 0.1 and cfg.lr == 1e-3
    with pytest.raises(TypeError, match="no field"): cfg.replace(epoch=3)
    with pytest.raises(ValueError, match="TrainConfig.lr"): cfg.replace(lr=-1)


def test_rng_roundtrip():
    tb.seed_everything(7)
    state = tb.rng_state()
    a = ([random.random() for _ in range(3)], np.random.rand(3).tolist(), torch.randn(3).tolist(), np.random.randn())
    tb.set_rng_state(state)
    b = ([random.random() for _ in range(3)], np.random.rand(3).tolist(), torch.randn(3).tolist(), np.random.randn())
    assert a == b


def test_rng_state_is_weights_only_safe(tmp_path):
    "The RNG state survives torch.save / torch.load(weights_only=True), as checkpoints need."
    tb.seed_everything(3)
    torch.save(tb.rng_state(), tmp_path / "rng.pt")
    expected = torch.rand(4)
    tb.set_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    assert torch.equal(torch.rand(4), expected)


def test_history():
    h = tb.History()
    for s in range(5): h.append(s, s // 2, "train", "loss", 5 - s)
    h.append(4, 2, "valid", "loss", 0.5)
    assert len(h) == 6 and h.last("loss") == 1.0 and h.last("loss", "valid") == 0.5 and h.last("acc") is None
    assert h.series("loss").tolist() == [5, 4, 3, 2, 1]
    assert h.series("loss", index="epoch").index.tolist() == [0, 0, 1, 1, 2]
    assert h.rows(5) == [(4, 2, "valid", "loss", 0.5)]
    h2 = tb.History(); h2.load_state_dict(h.state_dict())
    assert h2.rows() == h.rows()
    assert list(h.to_frame().columns) == ["step", "epoch", "split", "name", "value"]


def test_environment_and_device():
    env = tb.environment()
    assert env["torch"] == torch.__version__ and env["cpu_count"] >= 1
    assert tb.pick_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device"): tb.pick_device("tpu")
    assert tb.pick_precision("auto", "cpu") == "fp32"
    with pytest.raises(ValueError, match="precision"): tb.pick_precision("fp8")
