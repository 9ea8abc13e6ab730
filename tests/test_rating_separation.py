"""Ratings that separate by latency get no rating threshold, and the report says why.

With three levels far apart (the quickstart's 200 / 1000 / 3000 ms) eight people often rate
every trial at 200 ms acceptable and none at 3000 ms: the logit's slope then has no finite
maximum, the fit steepens until the optimiser stops, every participant resample separates
the same way, and the "95% interval" was a sliver around 1000 ms that missed the truth
(simulated quickstart, seed 0: 902 ms [875, 931] against a true 556 ms).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.ratings import acceptable_separation, fit_mixed_acceptability
from analysis.report import ReportOptions, analyse
from analysis.report.ratings_part import rating_blocks
from analysis.report.render import render_markdown
from analysis.report.summary import plain_summary
from analysis.trial_table import load_trial_table


def separated_trials(stray_at_3000: bool = False) -> pd.DataFrame:
    """8 people x 5 ratings at 200 / 1000 / 3000 ms: all acceptable (4+) at 200 ms, none at
    3000 ms, one in ten at 1000 ms; `stray_at_3000`: one person once rates 3000 ms a 4."""
    rows = []
    for p in range(8):
        for rep in range(5):
            slow_ok = stray_at_3000 and p == 3 and rep == 0
            rows += [
                {"participant": f"P{p}", "ttft_ms": 200, "q_speed": 5 - rep % 2},
                {"participant": f"P{p}", "ttft_ms": 1000, "q_speed": 4 if rep == p % 2 == 0 else 2},
                {"participant": f"P{p}", "ttft_ms": 3000, "q_speed": 4 if slow_ok else 1},
            ]
    return pd.DataFrame(rows).assign(q_acceptable=lambda d: (d["q_speed"] >= 4).astype(int))


def test_separated_ratings_give_no_threshold_and_no_interval():
    fit = fit_mixed_acceptability(separated_trials(), "q_speed", "ttft_ms", 4, n_boot=50)
    assert fit.separation is not None
    assert fit.separation.levels == ((200.0, 0.0, 40), (1000.0, 0.9, 40), (3000.0, 1.0, 40))
    assert (fit.separation.all_acceptable_ms, fit.separation.none_acceptable_ms) == (200, 3000)
    table = fit.thresholds()
    assert table[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert table["n_participants"].tolist() == [8, 8, 8]
    assert math.isnan(fit.threshold_ms(0.5))
    text = fit.separation.describe(4, "ttft_ms")
    assert "every rating at or below 200 ms was 4 or better" in text
    assert "every rating at or above 3,000 ms was below 4" in text
    assert "only at 1,000 ms were both given (90% of 40 below 4)" in text
    assert "between 200 ms and 3,000 ms" in text


def test_one_overlapping_rating_keeps_the_threshold():
    """Acceptable and unacceptable ratings overlap in latency: the slope is finite."""
    fit = fit_mixed_acceptability(
        separated_trials(stray_at_3000=True), "q_speed", "ttft_ms", 4, n_boot=50
    )
    assert fit.separation is None
    table = fit.thresholds()
    assert np.isfinite(table[["estimate", "ci_low", "ci_high"]].to_numpy()).all()
    assert 200 < table["estimate"].iloc[1] < 3000


def test_separation_without_a_level_of_both_brackets_between_neighbours():
    sep = acceptable_separation([200, 200, 1000, 1000, 3000, 3000], [1, 1, 1, 1, 0, 0])
    assert sep is not None and (sep.all_acceptable_ms, sep.none_acceptable_ms) == (1000, 3000)
    assert "only at" not in sep.describe(4, "ttft_ms")
    lowest_mixed = acceptable_separation([200, 200, 1000, 3000], [1, 0, 0, 0])
    assert lowest_mixed is not None and lowest_mixed.all_acceptable_ms is None
    assert "below the fastest level" in lowest_mixed.describe(4, "ttft_ms")
    assert acceptable_separation([200, 1000, 1000, 3000], [1, 0, 1, 0]) is not None
    assert acceptable_separation([200, 1000, 3000, 3000], [1, 0, 1, 0]) is None
    rising = acceptable_separation([200, 200, 3000, 3000], [0, 0, 1, 1])
    assert rising is None  # not a falling curve: no threshold either way (b >= 0)


def test_the_report_says_the_ratings_separate_and_gives_no_rating_threshold(tmp_path: Path):
    csv = tmp_path / "separated.csv"
    separated_trials().to_csv(csv, index=False)
    data = analyse(
        load_trial_table(csv), ReportOptions(n_boot=20, per_participant=False, acceptable_at=4)
    )
    assert data.ratings is not None and data.ratings.separation is not None
    rows = data.thresholds[data.thresholds["measure"] == "rating"]
    assert len(rows) == 3 and rows[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert (rows["estimand"] == "population").all()
    summary = " ".join(plain_summary(data))
    assert "cannot be estimated: the ratings separate by ttft_ms" in summary
    assert "all 4 or better at 200 ms, none at 3.0 s" in summary
    page = render_markdown(rating_blocks(data), "t")
    assert "The ratings separate by ttft_ms" in page and "nan" not in page.lower()
