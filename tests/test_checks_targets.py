"""Targets and arguments check_data and loaders_from_frame misread (probe 102): balance judged against the class
count, numbers in another form (text, durations) said, target=None named, serving advice for a matrix."""
import numpy as np
import pandas as pd
import pytest

import trainbook as tb


def test_many_balanced_classes_are_no_imbalance():
    y = np.repeat([f"c{i}" for i in range(20)], 10)
    df = pd.DataFrame({"x": np.random.default_rng(0).normal(size=200), "y": y})
    assert not tb.check_data(df, "y").by_kind("class_imbalance")


def test_a_rare_class_among_many_is_still_imbalance():
    y = np.r_[np.repeat([f"c{i}" for i in range(19)], 20), ["c19"] * 2]
    df = pd.DataFrame({"x": np.random.default_rng(0).normal(size=len(y)), "y": y})
    assert tb.check_data(df, "y").by_kind("class_imbalance")


def test_numbers_read_as_text_are_said_on_the_target():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "y": np.round(rng.normal(50, 10, 200), 1).astype(str)})
    said = tb.check_data(df, "y").by_kind("task_inferred")
    assert len(said) == 1 and "pd.to_numeric(df['y'])" in said[0].advice


def test_a_duration_target_is_told_to_become_seconds():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "y": pd.to_timedelta(rng.integers(0, 3600, 200), unit="s")})
    with pytest.raises(ValueError, match=r"dt\.total_seconds\(\)"):
        tb.check_data(df, "y", task="regression")
    assert "total_seconds" in tb.check_data(df, "y").by_kind("task_inferred")[0].advice


def test_loaders_name_a_missing_target():
    df = pd.DataFrame({"a": np.arange(100.0), "y": np.arange(100) % 2})
    with pytest.raises(TypeError, match="target=None"):
        tb.loaders_from_frame(df, None, tb.make_splits(df, "y", seed=0))


def test_a_matrix_served_gets_serving_advice():
    df = pd.DataFrame({"a": np.arange(100.0), "b": np.arange(100.0), "y": np.arange(100) % 2})
    *_, prep = tb.loaders_from_frame(df, "y", tb.make_splits(df, "y", seed=0))
    for call in (lambda: prep.transform_for_serving(df[["a", "b"]].to_numpy()),
                 lambda: tb.check_data(df, "y", serving=df[["a", "b"]].to_numpy())):
        with pytest.raises(TypeError, match=r"prep\.columns") as err:
            call()
        assert "assign(y=y)" not in str(err.value)


def test_a_rare_class_list_is_capped():
    "1700 amounts as text: a rare_class message of 21,877 characters."
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=2000), "y": np.round(rng.lognormal(3, 1, 2000), 2).astype(str)})
    rare = tb.check_data(df, "y", leak_check=False).by_kind("rare_class")
    assert len(rare[0].message) < 500 and " more" in rare[0].message


def test_a_missing_marker_in_the_target_is_said():
    rng = np.random.default_rng(0)
    y = np.where(rng.random(2000) < 0.02, "n/a", np.where(rng.random(2000) < 0.5, "1", "0"))
    found = tb.check_data(pd.DataFrame({"x": rng.normal(size=2000), "y": y}), "y", leak_check=False)
    said = found.by_kind("missing_target")
    assert len(said) == 1 and "'n/a'" in said[0].message and ".replace(['n/a'], np.nan)" in said[0].advice


def test_a_small_share_keeps_its_digits():
    rng = np.random.default_rng(0)
    y = np.array([f"c{v}" for v in np.r_[np.zeros(20, int), rng.integers(1, 100, 49980)]])
    found = tb.check_data(pd.DataFrame({"x": rng.normal(size=len(y)), "y": y}), "y", leak_check=False)
    message = found.by_kind("class_imbalance")[0].message
    assert "is 0.04% of rows (20 rows;" in message
