"The audit of a split refuses a time column it cannot order, as make_splits does, with the same message."
import numpy as np
import pandas as pd
import pytest

import trainbook as tb


def days(n=20):
    return pd.DataFrame({"x": np.arange(n) * 1.0, "y": [0, 1] * (n // 2),
                         "t": pd.date_range("2021-01-01", periods=n)})


HONEST = {"train": np.arange(15), "valid": np.arange(15, 20)}


def refusals(df):
    "The errors of make_splits(time='t') and of audit_parts(time='t') on `df`: (type, message) each."
    out = []
    calls = (lambda: tb.make_splits(df, "y", time="t"), lambda: tb.audit_parts(df, HONEST, "y", time="t"))
    for call in calls:
        with pytest.raises((TypeError, ValueError)) as e: call()
        out.append((e.type, str(e.value)))
    return out


@pytest.mark.parametrize("missing", [pd.NaT, "nan"])
def test_the_time_audit_refuses_missing_times_rather_than_miss_a_leak(missing):
    "Probe 30: one NaT (or a float NaN) in train made every comparison False: a planted leak, no finding."
    df = days()
    if missing == "nan": df["t"] = np.arange(20.0)
    leaky = {"train": np.arange(1, 16), "valid": np.r_[0, 16:20]}  # the first time planted in valid
    assert "time_leak" in [f.kind for f in tb.audit_parts(df, leaky, "y", time="t")]
    df.loc[5, "t"] = pd.NaT if missing is pd.NaT else np.nan
    with pytest.raises(ValueError, match=r"time column 't' has 1 missing value\(s\).*dropna\(subset=\['t'\]"):
        tb.audit_parts(df, leaky, "y", time="t")
    (a, msg_split), (b, msg_audit) = refusals(df)
    assert a is b is ValueError and msg_split == msg_audit


def test_the_time_audit_refuses_dates_as_text_as_make_splits_does():
    "Probe 30: dates as text compared as text: an honest split was a time_leak error."
    df = days().assign(t=lambda d: d.t.dt.strftime("%Y-%-m-%-d"))
    (a, msg_split), (b, msg_audit) = refusals(df)
    assert a is b is TypeError and msg_split == msg_audit
    assert "time column 't'" in msg_audit and "sort as text" in msg_audit
    assert "pd.to_datetime(df['t'])" in msg_audit


def test_times_mixing_zones_are_refused_with_the_column_and_utc_true():
    "Probe 30: the audit raised pandas' 'Cannot compare tz-naive and tz-aware'; make_splits: 'sort as text'."
    t = pd.date_range("2021-01-01", periods=20)
    df = days().assign(t=list(t[:10].tz_localize("UTC")) + list(t[10:]))
    (a, msg_split), (b, msg_audit) = refusals(df)
    assert a is b is TypeError and msg_split == msg_audit
    assert "time column 't' holds timestamps that mix time zones" in msg_audit and "as text" not in msg_audit
    assert "pd.to_datetime(df['t'], utc=True)" in msg_audit
