"""serving_findings on held-out families (probe 106): a permutation null through the PSI's own binning for
categories (many levels, few rows), identifiers not compared, an empty serving frame refused, a constant column's
new values named."""
import numpy as np
import pandas as pd
import pytest

import trainbook as tb


def shifts(train, live, col="x"):
    return [f for f in tb.serving_findings(train, live) if f.kind == "distribution_shift" and f.column == col]


def zipf(n, seed, k=5000):
    p = 1 / np.arange(1, k + 1) ** 1.1
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": [f"L{i}" for i in rng.choice(k, n, p=p / p.sum())]})


@pytest.mark.parametrize("seed", [0, 3])
def test_many_levels_of_one_population_are_no_shift(seed):
    "5000 Zipf levels, 1000 + 1000 rows: the multinomial null missed the unseen bin's noise (an error, PSI 0.56)."
    assert shifts(zipf(1000, seed), zipf(1000, seed + 100)) == []


def test_few_rows_over_many_levels_are_no_shift():
    "30 + 30 rows over 300 codes: 11 of 40 pairs were an error; the permutation null allows one in 1000."
    alarms = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        a, b = (pd.DataFrame({"x": [f"z{v}" for v in rng.integers(0, 300, 30)]}) for _ in range(2))
        alarms += bool(shifts(a, b))
    assert alarms <= 1


def test_a_mild_move_of_many_levels_is_no_error():
    "Half the 300 codes lose 40% of their share (PSI 0.17 between the populations): it was an error, by noise."
    p = np.r_[np.full(150, 0.6), np.full(150, 1.4)] / 300
    severities = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        a = pd.DataFrame({"x": [f"z{v}" for v in rng.integers(0, 300, 1000)]})
        b = pd.DataFrame({"x": [f"z{v}" for v in rng.choice(300, 1000, p=p)]})
        severities += [f.severity for f in shifts(a, b)]
    assert "error" not in severities


def test_new_levels_at_serving_are_still_an_error():
    live = zipf(1000, 1)
    live.loc[live.index[:300], "x"] = [f"N{i % 5}" for i in range(300)]  # five new codes, 30% of rows
    found = shifts(zipf(1000, 0), live)
    assert [f.severity for f in found] == ["error"] and found[0].data["psi"] > found[0].data["noise"]


def frame(n, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"order_id": [f"o{v}" for v in rng.integers(0, 10**12, n)], "amount": rng.lognormal(3, 1, n),
                         "y": rng.integers(0, 2, n)})


def test_an_identifier_is_not_compared():
    "Fresh ids are new by nature: check_data called order_id an identifier, then an error shift for it."
    report = tb.check_data(frame(5000, 1), "y", serving=frame(1000, 2).drop(columns="y"), leak_check=False)
    assert [f.kind for f in report.findings if f.column == "order_id"] == ["id_like_column"]
    assert not [f for f in tb.serving_findings(frame(5000, 1), frame(1000, 2), "y") if f.column == "order_id"]


def test_an_empty_serving_frame_is_refused():
    "It gave every column an error shift, PSI 9.21, where check_data(serving=) refuses it."
    train = frame(100, 0)
    with pytest.raises(ValueError, match="serving is empty"):
        tb.serving_findings(train, train.iloc[:0])


def test_a_constant_column_with_new_values_is_named():
    "A fee of 0.0 in training, 5.0 at serving: one bin, so a PSI of 0 and no word."
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"fee": np.zeros(3000), "x": rng.normal(size=3000)})
    live = pd.DataFrame({"fee": np.full(1000, 5.0), "x": rng.normal(size=1000)})
    found = [f for f in tb.serving_findings(train, live) if f.column == "fee"]
    assert [(f.kind, f.severity) for f in found] == [("unseen_values", "warning")] and "5.0" in found[0].message
    assert not tb.serving_findings(train, train.sample(500, random_state=0))  # the same values: nothing


def test_unseen_categories_are_counted_by_text():
    train = pd.DataFrame({"c": ["a", "b", "c"] * 100, "x": np.arange(300.0)})
    live = pd.DataFrame({"c": ["a", "d", None, "e"] * 25, "x": np.arange(100.0)})
    found = [f for f in tb.serving_findings(train, live) if f.kind == "unseen_categories"]
    assert len(found) == 1 and found[0].data["categories"] == ["d", "e"] and found[0].data["share"] == 0.5
