"""check_data(serving=) on messy frames (probe 102): a PSI judged against the noise its sample sizes imply, dtype
verdicts by the rule FramePrep serves by (`serve_column`), date text compared as dates, lost values named."""
import numpy as np
import pandas as pd
import pytest

import trainbook as tb


def zips(n, seed, levels=300):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.normal(40, 10, n), "zip": [f"z{v}" for v in rng.integers(0, levels, n)],
                         "y": rng.integers(0, 2, n)})


def shifts(train, live, col):
    report = tb.check_data(train, "y", serving=live, leak_check=False)
    return [f for f in report.by_kind("distribution_shift") if f.column == col]


@pytest.mark.parametrize("levels", [300, 1000])
def test_sparse_levels_of_one_population_are_no_shift(levels):
    "300 zip codes in 500 serving rows leave ~60 codes unseen by chance: the old PSI said 1.12, an error."
    assert shifts(zips(2000, 0, levels), zips(500, 1, levels).drop(columns="y"), "zip") == []


def test_a_real_shift_of_sparse_levels_is_still_an_error():
    live = zips(500, 1).drop(columns="y")
    live["zip"] = np.where(live.index % 2 == 0, "z7", live["zip"])  # half the rows now from one code
    found = shifts(zips(2000, 0), live, "zip")
    assert [f.severity for f in found] == ["error"] and found[0].data["psi"] > found[0].data["noise"]


def test_the_noise_limit_grows_with_bins_per_row():
    from trainbook.serving import psi_counts, psi_noise
    e, a = psi_counts(zips(2000, 0)["zip"], zips(500, 1)["zip"])
    few_rows = psi_noise(e, a)
    assert few_rows > psi_noise(e * 10, a * 10) > 0  # ten times the rows: a tenth of the noise, about


def frames(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(size=n), "cnt": pd.array(rng.integers(0, 5, n), dtype="Int64"),
                         "flag": rng.integers(0, 2, n).astype(bool),
                         "when": pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 1000, n), unit="h"),
                         "y": rng.integers(0, 2, n)})


def test_a_time_zone_serving_refuses_is_an_error():
    live = frames(100, 1).drop(columns="y")
    live["when"] = live["when"].dt.tz_localize("UTC")
    found = [f for f in tb.check_data(frames(400), "y", serving=live, leak_check=False).findings
             if f.column == "when" and f.kind == "dtype_mismatch"]
    assert [f.severity for f in found] == ["error"] and "time zone" in found[0].message


def test_what_serving_parses_is_no_error():
    "Int64 as float (JSON), booleans and numbers as text, dates as ISO text: FramePrep serves each identically."
    live = frames(100, 1).drop(columns="y")
    sent = live.assign(cnt=live["cnt"].astype(float), flag=live["flag"].astype(str), x=live["x"].astype(str),
                       when=live["when"].dt.strftime("%Y-%m-%dT%H:%M:%S"))
    report = tb.check_data(frames(400), "y", serving=sent, leak_check=False)
    assert report.ok, [str(f) for f in report.findings if f.severity == "error"]
    assert not report.by_kind("distribution_shift")  # dates compared as dates, booleans as booleans
    assert {f.column for f in report.by_kind("dtype_mismatch")} == {"cnt", "flag", "x", "when"}  # info: said


def test_text_that_does_not_parse_is_an_error():
    live = frames(100, 1).drop(columns="y").assign(x="n/a")
    found = tb.check_data(frames(400), "y", serving=live, leak_check=False).by_kind("unparseable_values")
    assert [(f.column, f.severity) for f in found] == [("x", "error")]


@pytest.mark.parametrize("col", ["age", "city"])
def test_values_lost_at_serving_are_a_shift_that_says_so(col):
    rng = np.random.default_rng(0)
    def mk(n):
        return pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(["a", "b", "c"], n),
                             "y": rng.integers(0, 2, n)})
    live = mk(500).drop(columns="y")
    live.loc[live.index[:300], col] = np.nan  # a failed join
    found = shifts(mk(2000), live, col)
    assert len(found) == 1 and "missing on 60% of serving rows" in found[0].message
