import os, pickle, random, subprocess, sys

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
    # what tab completion offers is the API: no helper the package imported for itself (`tb.importlib` was one)
    import types
    extra = [n for n in dir(tb) if not n.startswith("_") and n not in tb.__all__
             and not (isinstance(getattr(tb, n), types.ModuleType) and getattr(tb, n).__name__ == f"trainbook.{n}")]
    assert extra == ["load_ipython_extension", "unload_ipython_extension"]


def test_every_integration_is_a_top_level_name():
    "Seen: atomic_keras_save, documented in 15_integrations and in its __all__, was no `tb.` name."
    from trainbook import integrations
    assert [n for n in integrations.__all__ if n not in tb.__all__] == []


@pytest.mark.parametrize("kwargs, field", [({"epochs": -1}, "epochs"), ({"precision": "fp8"}, "precision"),
                                            ({"lr": 0}, "lr"), ({"accum_steps": 0}, "accum_steps"),
                                            ({"schedule": "cosine"}, "schedule"), ({"clip_norm": -1.0}, "clip_norm"),
                                            ({"on_nonfinite": "ignore"}, "on_nonfinite"), ({"mode": "up"}, "mode"),
                                            ({"checkpoint_every": 0}, "checkpoint_every"),
                                            ({"lr": float("nan")}, "lr"), ({"checkpoint_dir": ""}, "checkpoint_dir")])
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"TrainConfig.{field} must be"): tb.TrainConfig(**kwargs)


@pytest.mark.parametrize("kwargs, field, expected", [
    ({"plateau_factor": "half"}, "plateau_factor", "a number between 0 and 1"),
    ({"checkpoint_dir": 123}, "checkpoint_dir", "a folder path"), ({"epochs": True}, "epochs", "a positive integer"),
    ({"epochs": 2.0}, "epochs", "a positive integer"), ({"compile": "yes"}, "compile", "True or False"),
    ({"seed": "0"}, "seed", "an integer"), ({"monitor": None}, "monitor", "a 'split_name' string")])
def test_config_wrong_types_are_type_errors_naming_field_and_type(kwargs, field, expected):
    "The issue's cases: plateau_factor='half' used to fail later with a bare '<' not supported; checkpoint_dir=123 was taken."
    with pytest.raises(TypeError, match=f"TrainConfig.{field} must be {expected}.*got .*\\((str|int|bool|float|NoneType)\\)"):
        tb.TrainConfig(**kwargs)


def test_config_fields_become_plain_python_types(tmp_path):
    "Path -> str, numpy numbers -> int/float, torch.device -> str: what a checkpoint stores must load with weights_only=True."
    from pathlib import Path
    cfg = tb.TrainConfig(epochs=np.int64(4), lr=np.float64(3e-4), checkpoint_dir=Path("runs/a"), seed=np.int32(3),
                         clip_norm=np.float32(1.0), patience=np.int64(2), device=torch.device("cpu"), compile=np.bool_(True))
    plain = {"epochs": int, "lr": float, "checkpoint_dir": str, "seed": int, "clip_norm": float, "patience": int,
             "device": str, "compile": bool}
    for name, kind in plain.items(): assert type(getattr(cfg, name)) is kind, name
    assert cfg.checkpoint_dir == "runs/a" and cfg.device == "cpu" and cfg.epochs == 4
    torch.save(cfg.to_dict(), tmp_path / "cfg.pt")
    assert torch.load(tmp_path / "cfg.pt", weights_only=True) == cfg.to_dict()
    cfg.max_steps = np.int64(7)  # assignment is checked and normalized too
    assert type(cfg.max_steps) is int
    with pytest.raises(ValueError, match="TrainConfig.lr"): cfg.lr = -1.0
    with pytest.raises(AttributeError, match="no field 'epoch'"): cfg.epoch = 3
    assert tb.TrainConfig(compile=True).compile is True and tb.TrainConfig().compile is False


def test_atomic_write_failure_keeps_the_old_file_and_names_the_path(tmp_path):
    target = tmp_path / "a.bin"
    tb.atomic_write(target, lambda f: f.write(b"old"))
    def dies(f):
        f.write(b"half")
        raise OSError(28, "No space left on device")
    with pytest.raises(OSError, match=f"could not write {target}: No space left on device") as e:
        tb.atomic_write(target, dies)
    assert e.value.errno == 28 and target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]  # the temp file went with the failure
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError, match="could not write .*file/b.bin"): tb.atomic_write(tmp_path / "file" / "b.bin", dies)


def test_stale_temp_files_of_dead_writers_are_removed_live_ones_kept(tmp_path):
    from trainbook.core import _HOST
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
    stale = tmp_path / f".last.pt.{_HOST}-{int(dead)}-abc123.tmp"
    live = tmp_path / f".last.pt.{_HOST}-{os.getpid()}-def456.tmp"  # a write in progress (this process)
    other_host = tmp_path / f".last.pt.0000beef-{int(dead)}-abc123.tmp"  # cannot tell: kept
    user_file = tmp_path / ".notes.tmp"  # not ours: kept
    for p in (stale, live, other_host, user_file): p.write_bytes(b"x")
    tb.atomic_write(tmp_path / "run.json", lambda f: f.write(b"{}"))
    assert not stale.exists() and live.exists() and other_host.exists() and user_file.exists()


def test_config_replace_validates():
    cfg = tb.TrainConfig()
    assert cfg.replace(lr=0.1).lr == 0.1 and cfg.lr == 1e-3
    with pytest.raises(TypeError, match=r"no field 'epoch' \(did you mean 'epochs'\?\)"): cfg.replace(epoch=3)
    # the constructor names the field nearest to a typo (the dataclass's own error named none)
    with pytest.raises(TypeError, match=r"no field 'shedule' \(did you mean 'schedule'\?\); fields are: epochs"):
        tb.TrainConfig(shedule="constant")
    with pytest.raises(TypeError, match=r"no field 'zzz'; fields are"): tb.TrainConfig(zzz=1)
    assert tb.TrainConfig(3).epochs == 3 and pickle.loads(pickle.dumps(cfg)) == cfg
    with pytest.raises(ValueError, match="TrainConfig.lr"): cfg.replace(lr=-1)


def test_config_signature_is_the_fields_for_help_and_shift_tab():
    "Probe 47: the custom __new__ made inspect.signature (help(), Jupyter's Shift-Tab) show (*args, **given)."
    import dataclasses, inspect, pydoc
    from typing import Optional
    params = inspect.signature(tb.TrainConfig).parameters
    fields = dataclasses.fields(tb.TrainConfig)
    assert list(params) == [f.name for f in fields]
    assert [p.default for p in params.values()] == [f.default for f in fields]
    assert params["epochs"].annotation is int and params["clip_norm"].annotation == Optional[float]  # types, not text
    assert "warmup: float = 0.0" in pydoc.render_doc(tb.TrainConfig, renderer=pydoc.plaintext)
    assert inspect.signature(tb.TrainConfig).bind(3, lr=0.1)  # what the constructor takes


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


def test_history_columns_follow_the_rows_and_a_read_column_never_changes():
    "The columns are made from the rows on demand: later records appear, and a list already read stays as it was."
    h = tb.History([(1, 0, "train", "loss", 2.0), (1, 0, "train", "lr", 0.1)])
    steps, values = h.step, h.value
    h.append(2, 0, "train", "loss", 1.5)
    assert h.step == [1, 1, 2] and h.value == [2.0, 0.1, 1.5] and h.name == ["loss", "lr", "loss"]
    assert steps == [1, 1] and values == [2.0, 0.1]  # what a reader held (another thread, say) is whole
    h.load_state_dict({"step": [7], "epoch": [3], "split": ["valid"], "name": ["loss"], "value": [0.25]})
    assert (h.step, h.split, h.value, len(h)) == ([7], ["valid"], [0.25], 1)  # replaced, not appended
    assert list(h.iter_rows()) == [(7, 3, "valid", "loss", 0.25)]


def test_environment_and_device():
    env = tb.environment()
    assert env["torch"] == torch.__version__ and env["cpu_count"] >= 1
    assert tb.pick_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device"): tb.pick_device("tpu")
    assert tb.pick_precision("auto", "cpu") == "fp32"
    with pytest.raises(ValueError, match="precision"): tb.pick_precision("fp8")


def test_warn_points_past_the_libraries_trainbook_runs_in_at_the_users_line():
    "Seen: a warning inside tb.search pointed at optuna's trial loop (the first frame outside trainbook)."
    import contextlib, warnings
    from trainbook.core import warn
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with contextlib.ExitStack() as stack:  # contextlib (a library) calls it back, as Optuna calls a trial
            stack.callback(warn, "said inside a library's callback")
    assert [w.filename for w in seen] == [__file__]


def test_the_git_commit_is_read_again_after_a_repository_appears(tmp_path, monkeypatch):
    """Probe 53: a folder first seen without a repository kept git_commit None for the whole session, after a
    `git init` and a commit too (the walk up for a repository was kept, None included)."""
    import subprocess
    from trainbook.core import environment
    monkeypatch.chdir(tmp_path)
    if environment()["git_commit"] is not None: pytest.skip("tmp_path sits inside a repository")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("a")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    first = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert environment()["git_commit"] == first
    (tmp_path / "a.txt").write_text("b")
    subprocess.run([*git, "commit", "-q", "-am", "second"], check=True)
    assert environment()["git_commit"] not in (None, first)  # HEAD is read at each call
