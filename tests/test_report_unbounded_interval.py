"""An interval end far past the tested levels (a small-sample jackknife-t reached 10^57 ms)
prints as not bounded by these data, in report.md, in the summary and on stdout; thresholds.csv
keeps the number and flags it in `ci_unbounded`; a normal interval prints unchanged."""

from __future__ import annotations

import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse
from analysis.report.blocks import NO_LOWER_BOUND, NO_UPPER_BOUND, ci_range
from analysis.report.console import summary_lines
from analysis.report.data import RatingPart
from analysis.report.interval_bounds import UNBOUNDED_FACTOR, unbounded_ends
from analysis.report.psychometric_blocks import psychometric_blocks
from analysis.report.render import render_markdown
from analysis.report.summary import plain_summary
from analysis.report.thresholds_csv import thresholds_table
from analysis.trial_table import load_trial_table

HUGE = 7.558212004762073e57  # the upper end the validation run printed


def test_ends_past_ten_times_the_tested_levels_are_flagged():
    assert UNBOUNDED_FACTOR == 10
    assert unbounded_ends(312.0, 4_800.0, 100.0, 5_000.0) == ""
    assert unbounded_ends(312.0, 50_000.0, 100.0, 5_000.0) == ""  # at the limit: printed
    assert unbounded_ends(312.0, 50_001.0, 100.0, 5_000.0) == "upper"
    assert unbounded_ends(312.0, float("inf"), 100.0, 5_000.0) == "upper"
    assert unbounded_ends(9.0, 4_800.0, 100.0, 5_000.0) == "lower"
    assert unbounded_ends(9.0, HUGE, 100.0, 5_000.0) == "both"
    assert unbounded_ends(float("nan"), float("nan"), 100.0, 5_000.0) == ""
    assert ci_range(312.0, HUGE, (100.0, 5_000.0)) == f"312 to {NO_UPPER_BOUND}"
    assert ci_range(9.0, 4_800.0, (100.0, 5_000.0)) == f"{NO_LOWER_BOUND} to 4,800"
    assert ci_range(312.0, 4_800.0, (100.0, 5_000.0)) == "312 to 4,800"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A small analysed study (tested 200 to 6,400 ms)."""
    trials = simulate_trial_table(n_participants=6, reps=2, seed=3, failing_participant=False)
    folder = write_export_folder(tmp_path_factory.mktemp("e"), trials)
    return analyse(load_trial_table(folder), ReportOptions(n_boot=20, per_participant=False))


def _with_upper_end(data, high: float):
    """`data` with the population 50% interval's upper end set to `high` (thresholds.csv
    recomputed from it)."""
    pop = data.psychometric.population
    mid = pop["level"] == 0.5
    pop.loc[mid, "ci_low"] = pop.loc[mid, "estimate"] * 0.5
    pop.loc[mid, "ci_high"] = high
    data.thresholds = thresholds_table(data)
    return data


def _pooled_row(data) -> pd.Series:
    t = data.thresholds
    return (
        t[(t.measure == "psychometric") & (t.group == "pooled") & (t.condition == "all")]
        .loc[lambda f: f.level == 0.5]
        .iloc[0]
    )


def test_a_huge_upper_end_prints_as_not_bounded(data):
    _with_upper_end(data, HUGE)
    assert data.tested_range == (200.0, 6_400.0)
    row = _pooled_row(data)
    assert row.ci_high == HUGE and row.ci_unbounded == "upper"  # the number stays, flagged
    md = render_markdown(psychometric_blocks(data), "t")
    assert "7,558,212" not in md and f"to {NO_UPPER_BOUND}" in md
    assert "above 64,000 ms or below 20 ms" in md  # the limit named once, under the table
    text = "\n".join(ln for ln in md.splitlines() if not ln.startswith(("![", "*")))
    assert text.count("10x the highest tested level") == 1
    # the pooled figure draws that interval (the one the table prints): its caption says
    # the bar runs to the edge
    caption = next(ln for ln in md.splitlines() if ln.startswith("*Pooled proportion"))
    assert "participant jackknife-t" in caption and "triangle at the axis edge" in caption
    summary = " ".join(plain_summary(data))
    assert "7,558" not in summary and "e+57" not in summary
    assert "no upper bound from these data (its computed upper end lies above 64,000" in summary
    line = next(x for x in summary_lines(data) if "psychometric" in x)
    assert "7558" not in line and "e+57" not in line
    assert f"{NO_UPPER_BOUND} (computed end above 64,000 ms = 10x the highest tested" in line


def test_a_normal_interval_prints_unchanged(data):
    _with_upper_end(data, 5_000.0)
    row = _pooled_row(data)
    low = row.ci_low
    assert pd.isna(row.ci_unbounded) or row.ci_unbounded == ""
    md = render_markdown(psychometric_blocks(data), "t")
    assert f"{low:,.0f} to 5,000" in md
    assert NO_UPPER_BOUND not in md and "not bounded" not in md
    line = next(x for x in summary_lines(data) if "psychometric" in x)
    assert f"[{low:.0f}, 5000]" in line


def test_a_rating_threshold_with_a_huge_upper_end_prints_as_not_bounded():
    from analysis.report.ratings_part import population_blocks

    kept = pd.DataFrame({"ttft_ms": [100.0, 5_000.0], "q": [5.0, 2.0]})
    population = pd.DataFrame(
        {"level": [0.5, 0.75], "estimate": [900.0, 2_000.0], "ci_low": [400.0, 1_000.0]}
    ).assign(ci_high=[HUGE, 4_000.0], n_trials=[40, 40])

    ratings = RatingPart("q", 5, 4.0, "the study file", pd.DataFrame(), None, None, population)
    data = type("Data", (), {"stimulus": "ttft_ms", "kept": kept})()
    md = render_markdown(population_blocks(data, ratings), "t")
    assert "7,558" not in md and NO_UPPER_BOUND in md and "4,000" in md
    assert "above 50,000 ms or below 10 ms" in md
