"""The interval of a median (`analysis.median_interval`) and where the report prints it: the
median of the sessions' own adaptive estimates, withheld after a staircase (measured there to
miss), and a small version of `benchmarks/adaptive_median_coverage.py`."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from analysis.median_interval import median_interval, sign_coverage
from analysis.report.adaptive_part import adaptive_blocks, adaptive_part
from analysis.report.render import render_markdown

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_sign_coverage_is_the_binomial_probability_between_two_order_statistics():
    assert sign_coverage(8, 1) == pytest.approx(1 - 2 / 256)
    assert sign_coverage(8, 2) == pytest.approx(1 - 2 * 9 / 256)


def test_eight_values_interpolate_between_the_extremes_and_their_neighbours():
    # d = 1 covers 0.992, d = 2 0.930: I = 0.675, weight = 7 I / (1 + 6 I) (Hettmansperger &
    # Sheather 1986)
    share = (sign_coverage(8, 1) - 0.95) / (sign_coverage(8, 1) - sign_coverage(8, 2))
    weight = 7 * share / (1 + 6 * share)
    low, high = median_interval(np.array([8.0, 3, 1, 5, 2, 7, 4, 6, np.nan]))  # any order
    assert low == pytest.approx(1 + weight) and high == pytest.approx(8 - weight)


def test_too_few_values_for_95_percent_give_no_interval():
    assert all(math.isnan(v) for v in median_interval(np.arange(5.0)))  # at best 0.9375
    assert not any(math.isnan(v) for v in median_interval(np.arange(6.0)))


def test_it_covers_the_median_about_95_percent_of_the_time_where_a_bootstrap_does_not():
    rng = np.random.default_rng(3)
    draws = rng.lognormal(0.0, 0.5, size=(3000, 8))  # true median 1
    sign = np.array([median_interval(d) for d in draws])
    boot = np.array(
        [np.percentile(np.median(rng.choice(d, (400, 8)), axis=1), [2.5, 97.5]) for d in draws]
    )
    cover_sign = np.mean((sign[:, 0] <= 1) & (sign[:, 1] >= 1))
    cover_boot = np.mean((boot[:, 0] <= 1) & (boot[:, 1] >= 1))
    assert 0.93 <= cover_sign <= 0.97
    assert cover_boot < 0.93


def _adaptive_section(procedure: str, estimates: list[float]):
    n = len(estimates)
    sessions = pd.DataFrame(
        {
            "participant": [f"p{i}" for i in range(n)],
            "adaptive_ttft_ms_estimate": estimates,
            "adaptive_ttft_ms_ci_low": [e / 2 for e in estimates],
            "adaptive_ttft_ms_ci_high": [e * 2 for e in estimates],
            "adaptive_ttft_ms_target": [0.5 if procedure == "quest" else 0.293] * n,
            "adaptive_ttft_ms_procedure": [procedure] * n,
            "adaptive_ttft_ms_n_trials": [40] * n,
        }
    )
    kept = pd.DataFrame({"participant": sessions["participant"], "ttft_ms": 100.0})
    kept.loc[0, "ttft_ms"] = 5_000.0
    data = SimpleNamespace(
        table=SimpleNamespace(sessions=sessions),
        kept=kept,
        options=SimpleNamespace(seed=0, n_boot=50),
        tested_range=(100.0, 5_000.0),
    )
    part = adaptive_part(data)
    return part, render_markdown(adaptive_blocks(part), "t")


ESTIMATES = [600.0, 700.0, 750.0, 800.0, 820.0, 900.0, 1_000.0, 1_300.0]


def test_the_adaptive_median_gets_the_sign_interval_on_ln_ms():
    part, md = _adaptive_section("quest", ESTIMATES)
    low, high = np.exp(median_interval(np.log(ESTIMATES)))
    row = part.medians.iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert f"810 ms [{low:,.0f}, {high:,.0f}" in md and "(95% interval of a median)" in md
    assert "Hettmansperger" in md and "0.93-0.96" in md


def test_after_a_staircase_the_median_is_printed_without_its_interval_and_says_why():
    part, md = _adaptive_section("staircase", ESTIMATES)
    assert math.isnan(part.medians.iloc[0]["ci_low"])
    assert "Median across 8 participants: 810 ms (no interval: after a 1-up/2-down" in md
    assert "0.88-0.90" in md


def test_the_coverage_benchmark_scores_both_intervals_on_the_same_studies(capsys):
    from adaptive_median_coverage import main

    argv = ["--studies", "150", "--people", "8", "--designs", "quest"]
    assert main([*argv, "--observers", "differing"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "| quest |" in line)
    cells = [c.strip() for c in row.split("|")]
    bootstrap, sign = float(cells[5]), float(cells[6])
    assert sign >= 0.9 and sign > bootstrap
